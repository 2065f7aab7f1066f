#include "gossip/wire.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/errors.hpp"
#include "core/crc32c.hpp"
#include "core/little_endian.hpp"

namespace qgossip {
namespace {

// Byte offsets of the fields (docs/wire.md). The layout keeps every field naturally aligned.
constexpr std::size_t kOffMagic = 0, kOffVersion = 4, kOffKind = 6, kOffRunId = 8, kOffSender = 16,
                      kOffCodec = 20, kOffSkipped = 22, kOffCount = 24, kOffIteration = 32,
                      kOffPayloadBytes = 40, kOffCodecTag = 48, kOffCrc = 52;
// Magic and version come first in every version, so a header of another version is named as one.
constexpr std::size_t kVersionEnd = kOffVersion + 2;
static_assert(kOffCrc + 4 == kWireHeaderBytes && kOffCrc == kWireCrcOffset);

std::string hex(std::uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

// The magic as text when printable ("QGSP"), else as hex bytes: foreign traffic is often binary.
std::string magic_text(const std::byte* p) {
  bool printable =
      std::all_of(p, p + 4, [](std::byte b) { return b >= std::byte{0x20} && b < std::byte{0x7f}; });
  if (printable) return "\"" + std::string(reinterpret_cast<const char*>(p), 4) + "\"";
  std::string s;
  for (int i = 0; i < 4; ++i) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", std::to_integer<unsigned>(p[i]));
    s += buf;
  }
  return "bytes " + s;
}

status fail(wire_check check, wire_check* failed, std::string message) {
  if (failed) *failed = check;
  return status::error(errc::corrupt, std::move(message));
}

std::uint32_t checksum(const std::byte* header, std::span<const std::byte> payload) {
  std::array<std::byte, kWireHeaderBytes> zeroed;
  std::memcpy(zeroed.data(), header, kWireHeaderBytes);
  put_le<std::uint32_t>(zeroed.data(), kOffCrc, 0);
  return crc32c(payload, crc32c(zeroed));
}

}  // namespace

std::string_view to_string(message_kind kind) {
  switch (kind) {
    case message_kind::train:
      return "train";
    case message_kind::probe:
      return "probe";
    case message_kind::notice:
      return "notice";
    case message_kind::finished:
      return "finished";
    case message_kind::finished_ack:
      return "finished_ack";
    case message_kind::join:
      return "join";
    case message_kind::join_state:
      return "join_state";
  }
  return "unknown";
}

std::string_view to_string(wire_check check) {
  switch (check) {
    case wire_check::ok:
      return "ok";
    case wire_check::truncated:
      return "truncated";
    case wire_check::magic:
      return "magic";
    case wire_check::version:
      return "version";
    case wire_check::payload_size:
      return "payload_size";
    case wire_check::crc:
      return "crc";
    case wire_check::kind:
      return "kind";
    case wire_check::skipped:
      return "skipped";
    case wire_check::run_id:
      return "run_id";
    case wire_check::sender:
      return "sender";
    case wire_check::codec:
      return "codec";
    case wire_check::codec_tag:
      return "codec_tag";
    case wire_check::count:
      return "count";
  }
  return "unknown";
}

void encode_header(const wire_header& h, std::span<const std::byte> payload,
                   std::span<std::byte, kWireHeaderBytes> out) {
  QG_ENFORCE(h.payload_bytes == payload.size(), "header payload_bytes=" << h.payload_bytes
                                                                        << " but the payload has "
                                                                        << payload.size() << " bytes");
  std::byte* o = out.data();
  std::memcpy(o + kOffMagic, kWireMagic, 4);
  put_le<std::uint16_t>(o, kOffVersion, h.version);
  put_le<std::uint16_t>(o, kOffKind, static_cast<std::uint16_t>(h.kind));
  put_le<std::uint64_t>(o, kOffRunId, h.run_id);
  put_le<std::uint32_t>(o, kOffSender, h.sender);
  put_le<std::uint64_t>(o, kOffCount, h.count);
  put_le<std::uint64_t>(o, kOffIteration, h.iteration);
  put_le<std::uint16_t>(o, kOffCodec, h.codec);
  put_le<std::uint16_t>(o, kOffSkipped, h.skipped);
  put_le<std::uint32_t>(o, kOffCodecTag, h.codec_tag);
  put_le<std::uint64_t>(o, kOffPayloadBytes, h.payload_bytes);
  put_le<std::uint32_t>(o, kOffCrc, checksum(o, payload));
}

status check_codec(const wire_header& h, const codec_expectation& expect, wire_check* failed) {
  if (h.codec != expect.codec)
    return fail(wire_check::codec, failed,
                "codec: expected " + std::to_string(expect.codec) + ", received " + std::to_string(h.codec));
  if (h.codec_tag != expect.codec_tag)
    return fail(wire_check::codec_tag, failed,
                "codec_tag: expected " + hex(expect.codec_tag, 8) + ", received " + hex(h.codec_tag, 8));
  if (h.count != expect.count)
    return fail(wire_check::count, failed,
                "count: expected " + std::to_string(expect.count) + ", received " + std::to_string(h.count));
  if (failed) *failed = wire_check::ok;
  return status::ok();
}

namespace {

// The header's sender is one of the expected neighbours.
status check_sender(const wire_header& out, const wire_expectations& expect, wire_check* failed) {
  if (std::binary_search(expect.senders.begin(), expect.senders.end(), static_cast<std::int64_t>(out.sender),
                         [](auto a, auto b) { return static_cast<std::int64_t>(a) < static_cast<std::int64_t>(b); }))
    return status::ok();
  std::string list;
  for (int s : expect.senders) list += (list.empty() ? "" : ", ") + std::to_string(s);
  return fail(wire_check::sender, failed,
              "sender: expected a neighbour (one of " + (list.empty() ? std::string("none") : list) +
                  "), received " + std::to_string(out.sender));
}

// A message of a kind without a codec: codec fields 0 (count too, but for the kinds that carry the
// model's size), and no payload for the header-only kinds.
status check_no_codec(const wire_header& out, wire_check* failed) {
  if (out.codec != 0 || out.codec_tag != 0 || (out.count != 0 && !carries_model_size(out.kind)))
    return fail(wire_check::codec, failed,
                "a " + std::string(to_string(out.kind)) + " message carries no codec: " +
                    (carries_model_size(out.kind) ? "codec and codec_tag" : "codec, codec_tag and count") +
                    " must be 0");
  if (header_only(out.kind) && out.payload_bytes != 0)
    return fail(wire_check::payload_size, failed,
                "payload_bytes: expected 0 (a " + std::string(to_string(out.kind)) + " message has no payload), received " +
                    std::to_string(out.payload_bytes));
  if (failed) *failed = wire_check::ok;
  return status::ok();
}

}  // namespace

status parse_header(std::span<const std::byte> header_bytes, std::span<const std::byte> payload,
                    const wire_expectations& expect, wire_header& out, wire_check* failed) {
  const auto truncated = [&] {
    return fail(wire_check::truncated, failed,
                "header: expected " + std::to_string(kWireHeaderBytes) + " bytes, received " +
                    std::to_string(header_bytes.size()));
  };
  if (header_bytes.size() < kVersionEnd) return truncated();
  const std::byte* p = header_bytes.data();
  if (std::memcmp(p + kOffMagic, kWireMagic, 4) != 0)
    return fail(wire_check::magic, failed, "magic: expected \"QGSP\", received " + magic_text(p));

  out.version = get_le<std::uint16_t>(p, kOffVersion);
  if (out.version != kWireVersion)
    return fail(wire_check::version, failed,
                "version: expected " + std::to_string(kWireVersion) + ", received " + std::to_string(out.version) +
                    " (a node of another qgossip wire format: every node of a run must run the same qgossip)");
  if (header_bytes.size() != kWireHeaderBytes) return truncated();

  out.payload_bytes = get_le<std::uint64_t>(p, kOffPayloadBytes);
  if (out.payload_bytes > expect.max_payload_bytes)
    return fail(wire_check::payload_size, failed,
                "payload_bytes: expected at most " + std::to_string(expect.max_payload_bytes) +
                    ", received " + std::to_string(out.payload_bytes));
  if (out.payload_bytes != payload.size())
    return fail(wire_check::payload_size, failed,
                "payload: expected " + std::to_string(out.payload_bytes) +
                    " bytes (the header's payload_bytes), received " + std::to_string(payload.size()));

  out.crc32c = get_le<std::uint32_t>(p, kOffCrc);
  const std::uint32_t computed = checksum(p, payload);
  if (out.crc32c != computed)
    return fail(wire_check::crc, failed,
                "crc32c: expected " + hex(computed, 8) + " (computed), received " + hex(out.crc32c, 8));

  const auto kind = get_le<std::uint16_t>(p, kOffKind);
  if (kind < static_cast<std::uint16_t>(message_kind::train) || kind > static_cast<std::uint16_t>(message_kind::join_state))
    return fail(wire_check::kind, failed,
                "kind: expected 1 (train), 2 (probe), 3 (notice), 4 (finished), 5 (finished_ack), 6 (join) or "
                "7 (join_state), received " +
                    std::to_string(kind));
  out.kind = static_cast<message_kind>(kind);
  out.skipped = get_le<std::uint16_t>(p, kOffSkipped);
  if (out.skipped != 0 && out.kind != message_kind::train)
    return fail(wire_check::skipped, failed,
                "skipped: expected 0 on a message of kind " + std::to_string(kind) + ", received " +
                    std::to_string(out.skipped));

  out.run_id = get_le<std::uint64_t>(p, kOffRunId);
  if (out.run_id != expect.run_id)
    return fail(wire_check::run_id, failed,
                "run_id: expected " + hex(expect.run_id, 16) + ", received " + hex(out.run_id, 16) +
                    " (a node of another run or config?)");

  out.sender = get_le<std::uint32_t>(p, kOffSender);
  if (status s = check_sender(out, expect, failed); !s) return s;

  out.count = get_le<std::uint64_t>(p, kOffCount);
  if (out.count > kWireMaxCount)
    return fail(wire_check::count, failed,
                "count: expected at most 2^40 (" + std::to_string(kWireMaxCount) + "), received " +
                    std::to_string(out.count));
  out.iteration = get_le<std::uint64_t>(p, kOffIteration);
  out.codec = get_le<std::uint16_t>(p, kOffCodec);
  out.codec_tag = get_le<std::uint32_t>(p, kOffCodecTag);

  if (!carries_codec(out.kind)) return check_no_codec(out, failed);  // notice, finished, ..., join_state
  const auto& codec = out.kind == message_kind::train ? expect.train : expect.probe;
  if (codec) return check_codec(out, *codec, failed);
  if (failed) *failed = wire_check::ok;
  return status::ok();
}

}  // namespace qgossip
