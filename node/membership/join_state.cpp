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
  std::vector<float> values(payload.size() / sizeof(float));
  if (!values.empty()) std::memcpy(values.data(), payload.data(), payload.size());
  const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad != values.end())
    return status::error(errc::corrupt, "value " + std::to_string(bad - values.begin()) + " of the state is not finite");
  out.model.assign(values.begin(), values.begin() + model_size);
  out.public_state.assign(values.begin() + model_size, values.end());
  return status::ok();
}

}  // namespace qgossip
