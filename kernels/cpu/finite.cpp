#include "kernels/cpu/finite.hpp"

#include <cstdint>
#include <atomic>
#include <cstring>

#include "core/work_pool.hpp"

namespace qgossip::kernels {

std::size_t first_non_finite(std::span<const float> v) {
  // A branch-free scan per block (max of |v| as bits: >= 0x7f800000 iff Inf or NaN; vectorizes), and a
  // scalar search only inside a bad block.
  constexpr std::size_t kBlock = 256;
  for (std::size_t start = 0; start < v.size(); start += kBlock) {
    const std::size_t end = start + kBlock < v.size() ? start + kBlock : v.size();
    std::uint32_t worst = 0;
    for (std::size_t i = start; i < end; ++i) {
      std::uint32_t u;
      std::memcpy(&u, &v[i], 4);
      u &= 0x7fffffffu;
      worst = u > worst ? u : worst;
    }
    if (worst < 0x7f800000u) continue;
    for (std::size_t i = start; i < end; ++i) {
      std::uint32_t u;
      std::memcpy(&u, &v[i], 4);
      if ((u & 0x7fffffffu) >= 0x7f800000u) return i;
    }
  }
  return v.size();
}

bool all_finite(std::span<const float> v) {
  std::atomic<bool> finite{true};
  parallel_ranges(v.size(), kElementGrain, [&](std::size_t begin, std::size_t end) {
    if (first_non_finite(v.subspan(begin, end - begin)) != end - begin) finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}

}  // namespace qgossip::kernels
