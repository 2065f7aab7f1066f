#pragma once
// nuqsgd: NUQSGD (Ramezani-Kebrya et al., "NUQSGD: provably communication-efficient data-parallel SGD
// via nonuniform quantization"), Elias-coded. codec_id::nuqsgd. Inline spec: "nuqsgd:s=3,bucket=8192"
// (the canonical describe()).
//
//   s      >= 1: levels 0, 2^-s, 2^-s+1, ..., 1/2, 1 of r = |v|/S, S = the bucket's L2 norm; s + 1
//            nonzero levels (s = 3: 1/8, 1/4, 1/2, 1). 1 <= s <= 126. Default 3.
//   bucket = d >= 0: values per norm (default 8192); 0 = the whole vector is one bucket. The last
//            bucket may be shorter. Ignores layer boundaries.
// Each r rounds to one of its two neighbouring levels, up with probability (r - l_k)/(l_{k+1} - l_k):
// unbiased. The exact arithmetic is kernels/cpu/nuqsgd.hpp.
//
// Payload for n values (docs/codecs.md): ceil(n/d) float32 norms (little-endian), then one bit stream
// (bit_stream.hpp) holding, bucket by bucket, the signed level indices t (level 2^(t-1-s), t = 1..s+1,
// the paper's Elias-coded exponent log2(2^(s+1) h)) in the sparse coding of sparse_elias.hpp: per
// nonzero Elias(gap), sign bit, Elias(t); an end-of-bucket gap; 1-bits to a byte boundary. Variable
// length; max_encoded_bytes is the worst case, every value at t = s + 1.
//
// Error bound (alpha^2; derivation in relative_error_bound()): per bucket of d' = min(d, n) values
//   E||Q(v)-v||^2 <= min(d'/16, 1/8 + min(d'/4^(s+1), sqrt(d')/2^s)) ||v||^2.
// Randomness: the Philox stream of ctx, one word per element (as qsgd). Input must be finite
// (QG_ENFORCE in encode). Decode rejects a short payload, a NaN/Inf/negative norm, a truncated or
// over-64-bit Elias code, a gap past a bucket's end, an index above s + 1, and trailing bytes or
// padding that is not all 1s as errc::corrupt. Thread safety: immutable; encode/decode may run concurrently.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "algorithms/compress/compressor.hpp"

namespace qgossip {

struct nuqsgd_options {
  std::uint32_t s = 3;        // 1 .. 126: levels 2^-s .. 1
  std::size_t bucket = 8192;  // d; 0 = whole vector
};

class nuqsgd_compressor final : public compressor {
 public:
  // REQUIRES: 1 <= options.s <= 126 (QG_ENFORCE); make_nuqsgd() validates user input.
  explicit nuqsgd_compressor(const nuqsgd_options& options);

  std::string_view name() const override { return "nuqsgd"; }
  codec_id id() const override { return codec_id::nuqsgd; }
  std::uint32_t params_tag() const override { return params_tag_; }
  std::string describe() const override;
  bool unbiased() const override { return true; }
  double relative_error_bound(std::size_t n) const override;
  std::size_t max_encoded_bytes(std::size_t n) const override;
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;
  // The entropy of the signed level indices (-(s+1)..s+1, 0 for zeros), one symbol per value.
  double entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                const codec_context& ctx) const override;

  const nuqsgd_options& options() const { return options_; }

 private:
  std::size_t bucket_size(std::size_t n) const {
    return (options_.bucket == 0 || options_.bucket > n) ? n : options_.bucket;
  }
  // Parses and validates a payload of n values, calling on_tile(norm, first, indices) for each tile
  // of signed level indices (first = index of indices[0] in the vector). The first fault is
  // returned as errc::corrupt (tiles before it have been delivered).
  template <typename OnTile>
  status walk(std::span<const std::byte> in, std::size_t n, OnTile&& on_tile) const;

  nuqsgd_options options_;
  std::uint32_t params_tag_;
};

// The registry's factory for spec.name == "nuqsgd" (parameters above; config_error when invalid).
std::unique_ptr<compressor> make_nuqsgd(const codec_spec& spec, const layer_bounds& layers);

}  // namespace qgossip
