#pragma once
// identity: no compression. The payload is the n values as raw little-endian float32 (4n bytes),
// codec_id::identity, no parameters. Unbiased with zero error; the full-precision reference (D-PSGD).
// Like every codec here it refuses non-finite values: encode QG_ENFORCEs finite input, decode
// reports NaN/Inf in the payload as errc::corrupt.
// Thread safety: immutable; encode/decode may run concurrently.
#include <memory>

#include "algorithms/compress/compressor.hpp"

namespace qgossip {

class identity_compressor final : public compressor {
 public:
  std::string_view name() const override { return "identity"; }
  codec_id id() const override { return codec_id::identity; }
  std::uint32_t params_tag() const override;
  std::string describe() const override { return "identity"; }
  bool unbiased() const override { return true; }
  double relative_error_bound(std::size_t n) const override { return 0.0; }
  std::size_t max_encoded_bytes(std::size_t n) const override { return 4 * n; }
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;
  bool encodes_difference(std::size_t) const override { return true; }
  void encode_difference(std::span<const float> a, std::span<const float> b, const codec_context& ctx,
                         std::vector<std::byte>& out) const override;
  bool adds_decoded() const override { return true; }
  status validate(std::span<const std::byte> in, const codec_context& ctx, std::size_t n) const override;
  void decode_add(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;
};

// The registry's factory: spec.name == "identity", no parameters (config_error otherwise).
std::unique_ptr<compressor> make_identity(const codec_spec& spec, const layer_bounds& layers);

}  // namespace qgossip
