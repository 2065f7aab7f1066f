#include "algorithms/compress/identity.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "algorithms/compress/codec_params.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/finite.hpp"

static_assert(std::endian::native == std::endian::little, "identity payloads are little-endian float32");

namespace qgossip {

std::uint32_t identity_compressor::params_tag() const {
  return params_tag_of(describe());
}

// Both directions work in blocks that stay in L1 between the copy and the finiteness scan, so the
// vector is streamed through memory once.
constexpr std::size_t kBlock = 2048;

void identity_compressor::encode(std::span<const float> v, const codec_context& ctx,
                                 std::vector<std::byte>& out) const {
  const std::size_t old = out.size();
  out.reserve(old + 4 * v.size());
  for (std::size_t start = 0; start < v.size(); start += kBlock) {
    const std::span<const float> block = v.subspan(start, std::min(kBlock, v.size() - start));
    const std::size_t bad = kernels::first_non_finite(block);
    if (bad != block.size()) {
      out.resize(old);
      QG_ENFORCE(false, "identity: non-finite input " << block[bad] << " at index " << start + bad);
    }
    const auto bytes = std::as_bytes(block);
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
}

status identity_compressor::decode(std::span<const std::byte> in, const codec_context& ctx,
                                   std::span<float> out) const {
  if (in.size() != 4 * out.size())
    return status::error(errc::corrupt, "identity: payload of " + std::to_string(in.size()) +
                                            " bytes, expected " + std::to_string(4 * out.size()) + " for " +
                                            std::to_string(out.size()) + " values");
  for (std::size_t start = 0; start < out.size(); start += kBlock) {
    const std::span<float> block = out.subspan(start, std::min(kBlock, out.size() - start));
    std::memcpy(block.data(), in.data() + 4 * start, 4 * block.size());
    const std::size_t bad = kernels::first_non_finite(block);
    if (bad != block.size())
      return status::error(errc::corrupt,
                           "identity: non-finite value at index " + std::to_string(start + bad));
  }
  return status::ok();
}

void identity_compressor::encode_difference(std::span<const float> a, std::span<const float> b,
                                            const codec_context& ctx, std::vector<std::byte>& out) const {
  QG_ENFORCE(a.size() == b.size(), a.size() << " vs " << b.size());
  float block[kBlock];
  out.reserve(out.size() + 4 * a.size());
  for (std::size_t start = 0; start < a.size(); start += kBlock) {
    const std::size_t m = std::min(kBlock, a.size() - start);
    for (std::size_t i = 0; i < m; ++i) block[i] = a[start + i] - b[start + i];
    encode(std::span<const float>(block, m), ctx, out);  // appends; refuses a non-finite value
  }
}

status identity_compressor::validate(std::span<const std::byte> in, const codec_context&, std::size_t n) const {
  if (in.size() != 4 * n)
    return status::error(errc::corrupt, "identity: payload of " + std::to_string(in.size()) + " bytes, expected " +
                                            std::to_string(4 * n) + " for " + std::to_string(n) + " values");
  float block[kBlock];
  for (std::size_t start = 0; start < n; start += kBlock) {
    const std::size_t m = std::min(kBlock, n - start);
    std::memcpy(block, in.data() + 4 * start, 4 * m);
    const std::size_t bad = kernels::first_non_finite(std::span<const float>(block, m));
    if (bad != m)
      return status::error(errc::corrupt, "identity: non-finite value at index " + std::to_string(start + bad));
  }
  return status::ok();
}

void identity_compressor::decode_add(std::span<const std::byte> in, const codec_context&, std::span<float> out) const {
  QG_ENFORCE(in.size() == 4 * out.size(), "identity: decode_add of " << in.size() << " bytes for " << out.size());
  float block[kBlock];
  for (std::size_t start = 0; start < out.size(); start += kBlock) {
    const std::size_t m = std::min(kBlock, out.size() - start);
    std::memcpy(block, in.data() + 4 * start, 4 * m);
    for (std::size_t i = 0; i < m; ++i) out[start + i] += block[i];
  }
}

std::unique_ptr<compressor> make_identity(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {});
  return std::make_unique<identity_compressor>();
}

}  // namespace qgossip
