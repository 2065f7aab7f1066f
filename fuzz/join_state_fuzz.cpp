// libFuzzer target: parse_join_state (node/membership/join_state.hpp) on a hostile payload, as a
// neighbour that rejoins or admits one could send it. Input: one byte choosing the model size
// (0..63) and one the header's count (the same, or another), then the payload. A payload is refused
// with errc::corrupt and nothing kept, or accepted, and then its values are finite, the model has
// model_size of them, the public state none or as many, and together they are the payload's bytes.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "node/membership/join_state.hpp"

using namespace qgossip;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint64_t model_size = data[0] % 64;
  const std::uint64_t count = (data[1] & 0x80) ? data[1] % 64 : model_size;
  const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(data) + 2, size - 2);
  join_state out;
  const status s = parse_join_state(count, payload, model_size, out);
  if (!s) {
    if (s.code() != errc::corrupt || !out.model.empty() || !out.public_state.empty()) std::abort();
    return 0;
  }
  if (out.model.size() != model_size || (!out.public_state.empty() && out.public_state.size() != model_size)) std::abort();
  std::vector<float> all(out.model);
  all.insert(all.end(), out.public_state.begin(), out.public_state.end());
  if (all.size() * sizeof(float) != payload.size()) std::abort();
  if (!all.empty() && std::memcmp(all.data(), payload.data(), payload.size()) != 0) std::abort();
  for (float v : all)
    if (!std::isfinite(v)) std::abort();
  return 0;
}
