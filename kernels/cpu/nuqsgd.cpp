#include "kernels/cpu/nuqsgd.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "kernels/cpu/uniforms.hpp"

namespace qgossip::kernels {

void nuqsgd_quantize(std::span<const float> v, std::uint64_t first, float scale, std::uint32_t s,
                     const philox_stream& rng, std::span<std::int32_t> out) {
  QG_ENFORCE(s >= 1 && s <= kNuqsgdMaxS, "s=" << s);
  QG_ENFORCE(out.size() == v.size(), "out=" << out.size() << " v=" << v.size());
  constexpr std::size_t kTile = 1024;  // uniforms for one tile stay in L1
  alignas(64) float u[kTile];
  const auto si = static_cast<std::int32_t>(s);
  for (std::size_t t = 0; t < v.size(); t += kTile) {
    const std::size_t m = std::min(kTile, v.size() - t);
    philox_uniforms(rng, first + t, std::span<float>(u, m));
    for (std::size_t i = 0; i < m; ++i) out[t + i] = nuqsgd_quantize_value(v[t + i], scale, si, u[i]);
  }
}

}  // namespace qgossip::kernels
