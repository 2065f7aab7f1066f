#pragma once
// topk: the k largest magnitudes of v, exactly, and zeros elsewhere. codec_id::topk. Biased (a
// deterministic operator); meant for CHOCO-SGD and error-feedback schemes, not for DCD/ECD-PSGD.
// Inline spec "topk:ratio=0.01" or "topk:k=100" (canonical describe(); keep_count in sparsify.hpp:
// k = min(k, n), or round(ratio * n) clamped to [1, n]; default ratio 0.01).
//
// Selection: the k largest |v_i| (compared exactly, -0 = 0), ties broken towards the lower index, so
// the output is a function of v alone (the context is not used).
// Payload: [u32 n][u8 position coding tag][k float32 values, in ascending position order][positions],
// the positions coded as kernels/cpu/sparse.hpp says (bitmap or Rice-coded gaps, whichever is
// shorter); n makes a payload decode only into a vector of its own size. Variable size, at most
// 5 + 4k + ceil(n/8) bytes (max_encoded_bytes).
// Error: ||C(v) - v||^2 is the sum of the n - k smallest squares, at most (1 - k/n) ||v||^2 (equal for
// a constant-magnitude v): relative_error_bound(n) = 1 - k/n, exact, no rounding involved.
// Input must be finite (QG_ENFORCE in encode, out untouched). Decode rejects a wrong size, a bad
// position coding and NaN/Inf values as errc::corrupt. Thread safety: immutable; encode/decode may run
// concurrently.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/sparsify.hpp"

namespace qgossip {

struct topk_options {
  keep_count keep;  // default ratio 0.01
};

class topk_compressor final : public compressor {
 public:
  // REQUIRES: keep.k > 0 or 0 < keep.ratio <= 1 (QG_ENFORCE); make_topk() validates user input.
  explicit topk_compressor(const topk_options& options);

  std::string_view name() const override { return "topk"; }
  codec_id id() const override { return codec_id::topk; }
  std::uint32_t params_tag() const override { return params_tag_; }
  std::string describe() const override { return "topk:" + options_.keep.describe(); }
  bool unbiased() const override { return false; }
  static constexpr std::size_t kHeader = 5;  // n, tag
  double relative_error_bound(std::size_t n) const override;
  std::size_t max_encoded_bytes(std::size_t n) const override;
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;

 private:
  topk_options options_;
  std::uint32_t params_tag_;
};

// The registry's factory for spec.name == "topk" (config_error when invalid).
std::unique_ptr<compressor> make_topk(const codec_spec& spec, const layer_bounds& layers);

}  // namespace qgossip
