#include "node/membership/join_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace qgossip {

status parse_join_state(std::uint64_t count, std::span<const std::byte> payload, std::uint64_t model_size,
                        join_state& out) {
  out.model.clear();
  out.public_state.clear();
  const std::size_t bytes = std::size_t{model_size} * sizeof(float);
  if (count != model_size)
    return status::error(errc::corrupt, "a state for a model of " + std::to_string(count) + " values, this run's has " +
                                            std::to_string(model_size));
  if (payload.size() != bytes && payload.size() != 2 * bytes)
    return status::error(errc::corrupt, "a state of " + std::to_string(payload.size()) + " bytes, expected " +
                                            std::to_string(bytes) + " or " + std::to_string(2 * bytes));
  // Straight into the two vectors, no copy of the whole (at 1 B parameters a state is 8 GB).
  out.model.resize(model_size);
  out.public_state.resize(payload.size() == bytes ? 0 : model_size);
  if (bytes > 0) std::memcpy(out.model.data(), payload.data(), bytes);
  if (!out.public_state.empty()) std::memcpy(out.public_state.data(), payload.data() + bytes, bytes);
  auto first_bad = [](const std::vector<float>& v) {
    return static_cast<std::size_t>(std::find_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); }) - v.begin());
  };
  std::size_t bad = first_bad(out.model);
  if (bad == out.model.size()) bad += first_bad(out.public_state);
  if (bad < out.model.size() + out.public_state.size()) {
    out.model = {};
    out.public_state = {};
    return status::error(errc::corrupt, "value " + std::to_string(bad) + " of the state is not finite");
  }
  return status::ok();
}

}  // namespace qgossip
