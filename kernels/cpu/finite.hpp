#pragma once
// first_non_finite: the index of the first NaN or infinity in v, or v.size() when every value is
// finite. Codecs use it to refuse non-finite input and payloads. all_finite: whether every value is
// finite, the vector split over the calling thread's work_pool (core/work_pool.hpp).
// Thread safety: pure functions.
#include <cstddef>
#include <span>

namespace qgossip::kernels {

std::size_t first_non_finite(std::span<const float> v);
bool all_finite(std::span<const float> v);

}  // namespace qgossip::kernels
