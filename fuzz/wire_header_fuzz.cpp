// libFuzzer target: parse_header (and check_codec) on a hostile frame, header + payload (input
// format: fuzz/inputs.hpp). A frame is rejected with errc::corrupt and the check that failed, or
// accepted, and then encode_header of what was parsed gives back the very header bytes. The frame's
// checksum is also computed both ways (hardware and portable CRC32C) and must agree.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz/inputs.hpp"
#include "core/crc32c.hpp"
#include "gossip/wire.hpp"

using namespace qgossip;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t flags = data[0];
  const auto* frame = reinterpret_cast<const std::byte*>(data) + 1;
  const std::size_t header_size = std::min(size - 1, kWireHeaderBytes);
  std::vector<std::byte> header(frame, frame + header_size);
  const std::span<const std::byte> payload(frame + header_size, size - 1 - header_size);

  require(crc32c(payload, data[0]) == crc32c_portable(payload, data[0]));
  if ((flags & 1) && header_size == kWireHeaderBytes) {  // a valid checksum, whatever the fields say
    std::array<std::byte, kWireHeaderBytes> zeroed;
    std::memcpy(zeroed.data(), header.data(), kWireHeaderBytes);
    std::memset(zeroed.data() + kWireCrcOffset, 0, 4);
    const std::uint32_t crc = crc32c(payload, crc32c(zeroed));
    for (int i = 0; i < 4; ++i) header[kWireCrcOffset + i] = std::byte(static_cast<unsigned char>(crc >> (8 * i)));
  }

  wire_expectations expect{.run_id = fuzz::kRunId, .senders = fuzz::kSenders,
                           .max_payload_bytes = fuzz::kMaxPayloadBytes, .train = fuzz::kTrain,
                           .probe = fuzz::kProbe};
  if (flags & 2) expect.train.reset();
  wire_header h;
  wire_check failed = wire_check::ok;
  const status st = parse_header(header, payload, expect, h, &failed);
  if (!st) {
    require(st.code() == errc::corrupt && failed != wire_check::ok && !st.message().empty());
    require(!to_string(failed).empty());
    return 0;
  }
  require(failed == wire_check::ok && header_size == kWireHeaderBytes);
  require(h.payload_bytes == payload.size() && (h.skipped == 0 || h.kind == message_kind::train));
  // What was accepted is exactly what the sender wrote.
  std::array<std::byte, kWireHeaderBytes> again;
  encode_header(h, payload, again);
  require(std::memcmp(again.data(), header.data(), kWireHeaderBytes) == 0);
  if (flags & 2 && h.kind == message_kind::train) {
    const status codec = check_codec(h, fuzz::kTrain, &failed);
    require(codec.is_ok() == (failed == wire_check::ok));
    require(codec.is_ok() || codec.code() == errc::corrupt);
  }
  require(to_string(h.kind) != "unknown");
  return 0;
}
