#pragma once
// One node's checkpoint as bytes (docs/checkpoints.md): a fixed 40-byte little-endian header, the
// sections, and a CRC32C trailer over everything before it.
//
//   offset  size  field
//        0     4  magic "QGCK"
//        4     2  format version (kCheckpointVersion)
//        6     2  reserved, 0
//        8     8  run id (the hash of the resolved config, as on the wire)
//       16     4  rank
//       20     4  reserved, 0
//       24     8  round: the last round completed; training continues with round + 1
//       32     8  payload length P
//       40     P  payload: one state_io `bytes` field per section, named by the section
//     40+P     4  CRC32C of bytes [0, 40 + P)
//
// A section is one component's state_writer output ("algorithm", "compressor", "sampler", ...);
// what the sections are is the round loop's business, this file only frames them.
// Thread safety: pure functions and plain values.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/state_io.hpp"
#include "core/status.hpp"

namespace qgossip {

inline constexpr std::size_t kCheckpointHeaderBytes = 40;
inline constexpr std::size_t kCheckpointTrailerBytes = 4;
// Bump on ANY change to the header, the framing, or the meaning of a section's fields.
inline constexpr std::uint16_t kCheckpointVersion = 1;
inline constexpr std::byte kCheckpointMagic[4] = {std::byte{'Q'}, std::byte{'G'}, std::byte{'C'}, std::byte{'K'}};

struct checkpoint_section {
  std::string name;
  std::vector<std::byte> bytes;  // a state_writer's output
};

struct checkpoint {
  std::uint64_t run_id = 0;
  std::uint32_t rank = 0;
  std::uint64_t round = 0;  // the last completed round
  std::vector<checkpoint_section> sections;

  // Appends a section. REQUIRES: no section of that name yet (QG_ENFORCE).
  void add(std::string name, std::vector<std::byte> bytes);
  void add(std::string name, state_writer&& writer) { add(std::move(name), writer.take()); }
  // The named section, or nullptr.
  [[nodiscard]] const checkpoint_section* find(std::string_view name) const;
  // A reader over the named section whose errors start with "<origin>: section '<name>'".
  // Throws state_error naming origin when there is no such section.
  [[nodiscard]] state_reader reader(std::string_view name, const std::string& origin) const;
};

// The file's bytes.
[[nodiscard]] std::vector<std::byte> encode_checkpoint(const checkpoint& ck);

// Parses bytes made by encode_checkpoint into out. Returns errc::corrupt, saying what is wrong
// (too short, magic, version, reserved, length, checksum, section framing), for anything else; out
// is then unspecified. Never reads out of bounds.
status decode_checkpoint(std::span<const std::byte> bytes, checkpoint& out);

}  // namespace qgossip
