// libFuzzer target: parse_notice (node/membership/notice.hpp) on a hostile payload, as a neighbour
// could send it. A payload is refused with errc::corrupt and nothing kept, or accepted, and then
// encode_notice of what was parsed gives back the very same bytes.
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "node/membership/notice.hpp"

using namespace qgossip;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(data), size);
  std::vector<notice_item> items;
  const status s = parse_notice(payload, 16, items);
  if (!s) {
    if (s.code() != errc::corrupt || !items.empty()) std::abort();
    return 0;
  }
  const std::string again = encode_notice(items);
  if (again.size() != size || again.compare(0, size, reinterpret_cast<const char*>(data), size) != 0) std::abort();
  return 0;
}
