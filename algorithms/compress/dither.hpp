#pragma once
// dither: dithered quantization with a shared-seed dither (Abdi & Fekri, ISGQ, §3), codec_id::dither.
// Inline spec: "dither:K=127,bucket=0" (the canonical describe()).
//
//   K       = levels >= 1 (default 127, at most 32767): per bucket kappa = ||x||_inf / K, and every value
//             becomes an index q = round(x / kappa + U) in {-K, ..., K}, U ~ U(-1/2, 1/2) i.i.d.;
//             bit_width(2K) bits per index (K = 1: 2 bits, K = 7: 4 bits, K = 127: 8 bits).
//   bucket  = d >= 0 (default 0): values per kappa. 0 = one kappa per layer (per tensor, as in the paper);
//             with d > 0 each layer is cut into buckets of d values (the last one shorter), and no bucket
//             crosses a layer boundary. Without layer bounds the vector is one layer.
//
// Only q and the float32 kappas travel: the receiver regenerates U from the same Philox stream, keyed
// by the codec_context the wire header gives it (sender rank, iteration, the run's seed), and forms
// kappa (q - U). So decode, unlike most codecs, NEEDS the sender's ctx: another ctx decodes to other
// (finite, wrong) values. The error is uniform on (-kappa/2, kappa/2] and independent of x; unbiased.
// Payload and exact arithmetic: kernels/cpu/dither.hpp, docs/codecs.md. Fixed size:
// 4 * buckets + ceil(n * bit_width(2K) / 8) bytes.
// Input must be finite (QG_ENFORCE in encode). Thread safety: immutable; encode/decode may run concurrently.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/compress/compressor.hpp"

namespace qgossip {

struct dither_options {
  std::uint32_t levels = 127;  // K, 1 .. 32767
  std::size_t bucket = 0;      // d; 0 = one bucket per layer
};

class dither_compressor final : public compressor {
 public:
  // REQUIRES: 1 <= options.levels <= 32767 and layers empty or {0, ..., total} non-decreasing
  // (QG_ENFORCE); make_dither() validates user input.
  dither_compressor(const dither_options& options, layer_bounds layers);

  std::string_view name() const override { return "dither"; }
  codec_id id() const override { return codec_id::dither; }
  std::uint32_t params_tag() const override { return params_tag_; }
  std::string describe() const override;
  bool unbiased() const override { return true; }
  double relative_error_bound(std::size_t n) const override;
  std::size_t max_encoded_bytes(std::size_t n) const override;
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;
  // Entropy of the indices q in {-K, ..., K}, one symbol per value (the kappas are side information).
  double entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                const codec_context& ctx) const override;

  const dither_options& options() const { return options_; }
  std::uint32_t bits() const;
  // The buckets of a vector of n values: {0, ..., n}, bucket b = [result[b], result[b+1]). Layers are
  // used when given and n equals their total; otherwise the vector is one layer.
  std::vector<std::size_t> bucket_bounds(std::size_t n) const;

 private:
  dither_options options_;
  layer_bounds layers_;
  std::uint32_t params_tag_;
};

// The registry's factory for spec.name == "dither" (parameters above; config_error when invalid).
std::unique_ptr<compressor> make_dither(const codec_spec& spec, const layer_bounds& layers);

}  // namespace qgossip
