#pragma once
// first_non_finite: the index of the first NaN or infinity in v, or v.size() when every value is
// finite. Codecs use it to refuse non-finite input and payloads. Thread safety: pure function.
#include <cstddef>
#include <span>

namespace qgossip::kernels {

std::size_t first_non_finite(std::span<const float> v);

}  // namespace qgossip::kernels
