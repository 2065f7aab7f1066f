#include "node/checkpoint/checkpoint_file.hpp"

#include <cstring>

#include "core/errors.hpp"
#include "core/crc32c.hpp"

namespace qgossip {
namespace {

// Byte offsets of the header fields (the table in checkpoint_file.hpp).
constexpr std::size_t kOffMagic = 0, kOffVersion = 4, kOffReserved16 = 6, kOffRunId = 8, kOffRank = 16,
                      kOffReserved32 = 20, kOffRound = 24, kOffPayload = 32;
static_assert(kOffPayload + 8 == kCheckpointHeaderBytes);

template <class T>
void put(std::byte* out, std::size_t off, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out[off + i] = std::byte(static_cast<unsigned char>(v >> (8 * i)));
}
template <class T>
T get(const std::byte* in, std::size_t off) {
  T v = 0;
  for (std::size_t i = sizeof(T); i-- > 0;) v = static_cast<T>((v << 8) | std::to_integer<T>(in[off + i]));
  return v;
}

status corrupt(const std::string& what) { return status::error(errc::corrupt, what); }

}  // namespace

void checkpoint::add(std::string name, std::vector<std::byte> bytes) {
  QG_ENFORCE(find(name) == nullptr, "two checkpoint sections named '" << name << "'");
  sections.push_back({std::move(name), std::move(bytes)});
}

const checkpoint_section* checkpoint::find(std::string_view name) const {
  for (const checkpoint_section& s : sections)
    if (s.name == name) return &s;
  return nullptr;
}

state_reader checkpoint::reader(std::string_view name, const std::string& origin) const {
  const checkpoint_section* s = find(name);
  if (s == nullptr) {
    std::string have;
    for (const checkpoint_section& x : sections) have += (have.empty() ? "" : ", ") + x.name;
    throw state_error(origin + ": no section '" + std::string(name) + "' (it has: " +
                      (have.empty() ? "none" : have) + ")");
  }
  return state_reader(s->bytes, origin + ": section '" + std::string(name) + "'");
}

std::vector<std::byte> encode_checkpoint(const checkpoint& ck) {
  state_writer payload;
  for (const checkpoint_section& s : ck.sections) payload.put_bytes(s.name, s.bytes);
  const std::vector<std::byte>& p = payload.bytes();
  std::vector<std::byte> out(kCheckpointHeaderBytes + p.size() + kCheckpointTrailerBytes);
  std::memcpy(out.data() + kOffMagic, kCheckpointMagic, 4);
  put<std::uint16_t>(out.data(), kOffVersion, kCheckpointVersion);
  put<std::uint16_t>(out.data(), kOffReserved16, 0);
  put<std::uint64_t>(out.data(), kOffRunId, ck.run_id);
  put<std::uint32_t>(out.data(), kOffRank, ck.rank);
  put<std::uint32_t>(out.data(), kOffReserved32, 0);
  put<std::uint64_t>(out.data(), kOffRound, ck.round);
  put<std::uint64_t>(out.data(), kOffPayload, p.size());
  if (!p.empty()) std::memcpy(out.data() + kCheckpointHeaderBytes, p.data(), p.size());
  const std::size_t body = kCheckpointHeaderBytes + p.size();
  put<std::uint32_t>(out.data(), body, crc32c(std::span<const std::byte>(out.data(), body)));
  return out;
}

status decode_checkpoint(std::span<const std::byte> bytes, checkpoint& out) {
  const std::size_t framing = kCheckpointHeaderBytes + kCheckpointTrailerBytes;
  if (bytes.size() < framing)
    return corrupt("truncated: " + std::to_string(bytes.size()) + " bytes, a checkpoint has at least " +
                   std::to_string(framing));
  const std::byte* p = bytes.data();
  if (std::memcmp(p + kOffMagic, kCheckpointMagic, 4) != 0) return corrupt("not a checkpoint (magic is not \"QGCK\")");
  const auto version = get<std::uint16_t>(p, kOffVersion);
  if (version != kCheckpointVersion)
    return corrupt("format version " + std::to_string(version) + ", this build reads version " +
                   std::to_string(kCheckpointVersion));
  const std::uint64_t payload = get<std::uint64_t>(p, kOffPayload);
  if (payload != bytes.size() - framing)
    return corrupt("the header announces " + std::to_string(payload) + " payload bytes, the file holds " +
                   std::to_string(bytes.size() - framing) + " (truncated or extended)");
  const std::size_t body = bytes.size() - kCheckpointTrailerBytes;
  const std::uint32_t stored = get<std::uint32_t>(p, body);
  const std::uint32_t actual = crc32c(bytes.first(body));
  if (stored != actual) return corrupt("checksum mismatch (damaged or partly written)");
  if (get<std::uint16_t>(p, kOffReserved16) != 0 || get<std::uint32_t>(p, kOffReserved32) != 0)
    return corrupt("reserved header fields are not 0");
  out.run_id = get<std::uint64_t>(p, kOffRunId);
  out.rank = get<std::uint32_t>(p, kOffRank);
  out.round = get<std::uint64_t>(p, kOffRound);
  out.sections.clear();
  // The framing of the sections is checked like any other state; the checksum makes a failure here
  // a writer bug rather than damage, but it is still reported as a value.
  const std::span<const std::byte> sections = bytes.subspan(kCheckpointHeaderBytes, payload);
  std::size_t at = 0;
  while (at < sections.size()) {
    const std::size_t name_length = std::to_integer<std::size_t>(sections[at]);
    if (name_length == 0 || sections.size() - at < 1 + name_length)
      return corrupt("section framing broken at payload byte " + std::to_string(at));
    std::string name(reinterpret_cast<const char*>(sections.data() + at + 1), name_length);
    try {
      state_reader r(sections.subspan(at), "section framing");
      const std::span<const std::byte> b = r.get_bytes(name);
      if (out.find(name) != nullptr) return corrupt("two sections named '" + name + "'");
      out.sections.push_back({std::move(name), std::vector<std::byte>(b.begin(), b.end())});
      at += r.offset();
    } catch (const state_error& e) {
      return corrupt(e.what());
    }
  }
  return status::ok();
}

}  // namespace qgossip
