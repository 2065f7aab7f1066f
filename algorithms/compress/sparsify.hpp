#pragma once
// Random sparsifiers: randsparse (Wangni et al.: keep each value with probability p, scaled by 1/p;
// codec_id::randsparse) and rand-k (k values at shared-seed random positions; codec_id::randk), plus
// keep_count, the "how many values" parameter rand-k shares with top-k (topk.hpp).
//
// randsparse, inline spec "randsparse:p=0.1" (canonical describe()):
//   p in [2^-24, 1] (default 0.1). Value i is kept iff its Philox uniform u_i < p', where
//   p' = round(p * 2^24) / 2^24 is p on the 2^-24 grid of u (p = 0.1 -> p' = 0.10000002), and a kept
//   value is sent as fl(v_i * fl(1/p')). Unbiased (up to that float rounding, relative 2^-24);
//   E||C(v) - v||^2 = (1/p' - 1) ||v||^2 exactly, which is relative_error_bound().
//   Payload: [u32 n][u32 m, the number kept][u8 position coding tag][m float32 values][positions],
//   the positions coded as kernels/cpu/sparse.hpp says (bitmap or Rice-coded gaps, whichever is
//   shorter: within 2% of the entropy of the kept set, measured for p = 0.001 .. 0.5). Variable size, at most
//   9 + 4n + ceil(n/8) bytes.
//
// randk, inline spec "randk:ratio=0.01,scaled=true" or "randk:k=100,scaled=true":
//   k (see keep_count) positions drawn uniformly without replacement from the codec_context's Philox
//   stream (Floyd's algorithm, kernels/cpu/sparse.hpp). The receiver draws the same positions from the
//   same context (the wire header carries it), so only the k values travel: [u32 n][k float32 values,
//   in ascending position order], 4 + 4k bytes exactly.
//   scaled=true (default): values times fl(n/k): unbiased, E||C(v) - v||^2 = (n/k - 1) ||v||^2.
//   scaled=false: the values as they are (CHOCO-SGD's rand-k): biased, E||C(v) - v||^2 = (1 - k/n) ||v||^2.
//   Decoding depends on the context: the positions are a function of (seed, rank, iteration, stream).
//
// Both payloads open with the element count n (u32, little-endian), so that a payload decodes only
// into a vector of the size it was made for (the wire header's count is checked against the bytes).
// Both: input must be finite (QG_ENFORCE in encode, out untouched), and so must the scaled values
// (|v_i| / p' or |v_i| n/k above FLT_MAX is refused the same way). Decode rejects a wrong size, a
// count above n, a bad position coding and NaN/Inf values as errc::corrupt. Thread safety: immutable;
// encode/decode may run concurrently.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/compress/compressor.hpp"

namespace qgossip {

class codec_params;

// How many values a k-sparsifier keeps out of n: a fixed count k (min(k, n)), or a fraction:
// round(ratio * n) clamped to [1, n] (0 for n = 0).
struct keep_count {
  std::uint64_t k = 0;  // > 0: a fixed count; 0: use ratio
  double ratio = 0.01;  // in (0, 1]

  std::size_t of(std::size_t n) const;
  // "k=100" or "ratio=0.01" (the shortest decimal that reads back as the same double).
  std::string describe() const;
};

// Reads `ratio` or `k` (not both) from a codec's parameters; default: ratio = default_ratio.
// Throws config_error through params.fail(). Internal to algorithms/compress.
keep_count parse_keep_count(const codec_spec& spec, const codec_params& params, double default_ratio);

// The u32 element count that opens the randsparse, randk and topk payloads. Internal.
void append_count(std::vector<std::byte>& out, std::size_t n);
// ok iff in opens with the count n; errc::corrupt naming codec otherwise. Internal.
status check_count(std::string_view codec, std::span<const std::byte> in, std::size_t n);

struct randsparse_options {
  double p = 0.1;  // keep probability, [2^-24, 1]
};

class randsparse_compressor final : public compressor {
 public:
  // REQUIRES: 2^-24 <= options.p <= 1 (QG_ENFORCE); make_randsparse() validates user input.
  explicit randsparse_compressor(const randsparse_options& options);

  std::string_view name() const override { return "randsparse"; }
  codec_id id() const override { return codec_id::randsparse; }
  std::uint32_t params_tag() const override { return params_tag_; }
  std::string describe() const override;
  bool unbiased() const override { return true; }
  static constexpr std::size_t kHeader = 9;  // n, m, tag
  double relative_error_bound(std::size_t n) const override;
  std::size_t max_encoded_bytes(std::size_t n) const override;
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;

  // p' = threshold / 2^24, the probability actually used.
  double effective_p() const { return static_cast<double>(threshold_) * 0x1p-24; }

 private:
  randsparse_options options_;
  std::uint32_t threshold_;  // round(p * 2^24)
  float scale_;              // fl(1 / p')
  std::uint32_t params_tag_;
};

struct randk_options {
  keep_count keep;     // default ratio 0.01
  bool scaled = true;  // multiply by n/k (unbiased) or not (CHOCO-SGD's biased rand-k)
};

class randk_compressor final : public compressor {
 public:
  // REQUIRES: keep.k > 0 or 0 < keep.ratio <= 1 (QG_ENFORCE); make_randk() validates user input.
  explicit randk_compressor(const randk_options& options);

  std::string_view name() const override { return "randk"; }
  codec_id id() const override { return codec_id::randk; }
  std::uint32_t params_tag() const override { return params_tag_; }
  std::string describe() const override;
  bool unbiased() const override { return options_.scaled; }
  double relative_error_bound(std::size_t n) const override;
  std::size_t max_encoded_bytes(std::size_t n) const override { return 4 + 4 * options_.keep.of(n); }
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;

  // The positions an encode with ctx keeps out of n (ascending): what decode regenerates.
  std::vector<std::uint32_t> positions(std::size_t n, const codec_context& ctx) const;

 private:
  randk_options options_;
  std::uint32_t params_tag_;
};

// The registry's factories for spec.name == "randsparse" / "randk" (config_error when invalid).
std::unique_ptr<compressor> make_randsparse(const codec_spec& spec, const layer_bounds& layers);
std::unique_ptr<compressor> make_randk(const codec_spec& spec, const layer_bounds& layers);

}  // namespace qgossip
