#pragma once
// mcgq: Monte Carlo gradient quantization (Mordido, CVPR-W 2020), codec_id::mcgq. Per layer, N =
// ceil(len * K) stratified samples proportional to |g| count hits per element (kernels/cpu/mcgq.hpp);
// the receiver gets g_int and ||g||_1 and forms (||g||_1 / N) * g_int, an unbiased estimate of g.
// Inline spec: "mcgq:K=1,coding=rle,variant=plain,dynamic=false" (the canonical describe()).
//
//   K        sampling amount, 0 < K <= 64 (default 1): N = ceil(len * K) samples per layer.
//   coding   rle (default): the paper's §3.4 run-length code (algorithms/compress/run_length.hpp);
//            dense: B_q (32 bits) then every value as a B_q-bit sign-magnitude code.
//   variant  plain (default): sample g itself (Alg. 1/2), unbiased.
//            accumulate: sample the accumulator a += g and zero its sampled entries (Alg. 4). The
//            decoded vector estimates a = g + the mass not yet sent, NOT the current input alone:
//            unbiased() is false and relative_error_bound() is +inf for this variant.
//   dynamic  false (default) | true: per-layer K learnt from the Wasserstein-1 distance (Alg. 3):
//            after encoding layer l with K_l, d = W1(|g|/||g||_1, |g_int|/N) over positions, and
//            K_l <- clamp(K_l + dk * (d_prev - d), K/16, min(16 K, 64)); the first encode keeps K.
//   dk       the step delta_K of Alg. 3, >= 0 (default 1); only with dynamic=true.
//
// Layers come from make_compressor's `layers` (empty = one layer); the vector must then have exactly
// layers.back() values. Payload: one bit stream (bit_stream.hpp: fields MSB first, bits LSB-first in
// bytes, zero-padded to a byte); per layer: ||g||_1 as the 32 bits of a float32, then the coding of
// g_int. N is not sent: sum |g_int| == N whenever ||g||_1 > 0, so the decoder reads it off the values
// (and checks it against ceil(len * K) when K is static). Variable size; max_encoded_bytes is the
// worst case. See docs/codecs.md for the bytes and the error bound.
//
// Randomness: one offset xi per layer from Philox block `layer` of the ctx stream. Decode uses no
// randomness. Input must be finite (QG_ENFORCE). Decode rejects anything but a canonical encoding.
//
// Thread safety: decode is pure. Encode of the stateful variants (accumulate, dynamic) keeps the
// sender's state (accumulator, per-layer K and last distance) inside the compressor, one state per
// ctx.stream, behind a mutex: concurrent calls are safe, and encode is deterministic in (v, ctx, and
// the earlier encodes of that stream since construction or reset_sender_state()). A compressor
// instance belongs to one sender (one node); save_sender_state / load_sender_state carry every
// stream's state through a checkpoint.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "algorithms/compress/compressor.hpp"

namespace qgossip {

class symbol_histogram;

enum class mcgq_coding : std::uint8_t { rle, dense };
enum class mcgq_variant : std::uint8_t { plain, accumulate };

inline constexpr double kMcgqMaxK = 64.0;
// Dynamic K stays within [K / kMcgqDynamicRange, min(K * kMcgqDynamicRange, kMcgqMaxK)].
inline constexpr double kMcgqDynamicRange = 16.0;

struct mcgq_options {
  double k = 1.0;  // K, 0 < K <= kMcgqMaxK; the initial K when dynamic
  mcgq_coding coding = mcgq_coding::rle;
  mcgq_variant variant = mcgq_variant::plain;
  bool dynamic = false;
  double dk = 1.0;  // delta_K of Alg. 3, >= 0
};

class mcgq_compressor final : public compressor {
 public:
  // REQUIRES: options in range and layers empty or {0, ..., total} non-decreasing (QG_ENFORCE);
  // make_mcgq() validates user input.
  mcgq_compressor(const mcgq_options& options, layer_bounds layers);

  std::string_view name() const override { return "mcgq"; }
  codec_id id() const override { return codec_id::mcgq; }
  std::uint32_t params_tag() const override { return params_tag_; }
  std::string describe() const override;
  bool unbiased() const override { return options_.variant == mcgq_variant::plain; }
  double relative_error_bound(std::size_t n) const override;
  std::size_t max_encoded_bytes(std::size_t n) const override;
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;
  // Entropy of the signed sample counts g_int[k], one symbol per value (the norms are side information).
  double entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                const codec_context& ctx) const override;

  const mcgq_options& options() const { return options_; }
  // The range dynamic K is clamped to (both equal K when not dynamic).
  double min_k() const;
  double max_k() const;
  bool has_sender_state() const override { return stateful(); }
  void save_sender_state(state_writer& out) const override;
  void load_sender_state(state_reader& in) override;

  // Forgets the sender state of every stream (accumulators, learnt K): the next encode starts afresh.
  void reset_sender_state();
  // Test knob: the K each layer of `stream` will use next (options().k everywhere before any encode).
  std::vector<double> current_k_for_testing(std::uint32_t stream, std::size_t n) const;

 private:
  struct sender_state {
    std::vector<float> accumulator;  // variant=accumulate: the unsent mass, one per element
    std::vector<double> k;           // dynamic: K per layer
    std::vector<double> distance;    // dynamic: W1 of the previous encode per layer (NaN: none yet)
  };

  // Layer boundaries for a vector of n values: layers_ when given (and n matches), else {0, n}.
  std::vector<std::size_t> bounds_for(std::size_t n) const;
  // decode, also counting every g_int[k] in symbols when it is not null.
  status decode_counting(std::span<const std::byte> in, std::span<float> out,
                         symbol_histogram* symbols) const;
  bool stateful() const { return options_.variant == mcgq_variant::accumulate || options_.dynamic; }

  mcgq_options options_;
  layer_bounds layers_;
  std::uint32_t params_tag_;
  // The sender's state, per ctx.stream. Mutable because the compressor interface is const (encode of
  // the stateless variants is pure); mutex_ makes concurrent encodes safe.
  mutable std::mutex mutex_;
  mutable std::map<std::uint32_t, sender_state> states_;  // guarded by mutex_
};

// The registry's factory for spec.name == "mcgq" (parameters above; config_error when invalid).
std::unique_ptr<compressor> make_mcgq(const codec_spec& spec, const layer_bounds& layers);

}  // namespace qgossip
