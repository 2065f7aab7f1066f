#pragma once
// The wire header: a fixed 56-byte little-endian record in front of every message's payload. The
// layout, the golden bytes and the rules for changing it are in docs/wire.md; tests/gossip/wire_test
// pins them. Any change to the layout or to the meaning of a field bumps kWireVersion.
//
// encode_header() writes a header (and its CRC32C over header + payload); parse_header() checks one
// against what the receiver expects and is the only way a header is read: nothing in a message may
// be used before parse_header() returned ok for it.
// Thread safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/status.hpp"

namespace qgossip {

inline constexpr std::size_t kWireHeaderBytes = 56;
// The crc32c field is the header's last 4 bytes.
inline constexpr std::size_t kWireCrcOffset = kWireHeaderBytes - 4;
// Bump on ANY change to the header layout or the meaning of a field (and update docs/wire.md).
// 2: notice; 3: finished; 4: finished_ack; 5: join, join_state; 6: skipped (was reserved);
// 7: join_state in chunks (gossip/exchange/state_chunks.hpp); 8: count and payload_bytes 64-bit
inline constexpr std::uint16_t kWireVersion = 8;
// The largest count a header may carry: a model of up to 2^40 parameters.
inline constexpr std::uint64_t kWireMaxCount = std::uint64_t{1} << 40;
// "QGSP" as it appears on the wire, byte for byte.
inline constexpr std::byte kWireMagic[4] = {std::byte{'Q'}, std::byte{'G'}, std::byte{'S'}, std::byte{'P'}};

// What a message is for. Frozen numbering: never renumber, only append (and bump kWireVersion).
enum class message_kind : std::uint16_t {
  train = 1,  // the algorithm's per-round message (z, q or x of docs/algorithms.md)
  probe = 2,  // measurements that ride the same links (e.g. consensus distance)
  notice = 3,  // membership news, outside the rounds: a peer left, a degree changed
               // (node/membership/notice.hpp); no codec, not sequenced by iteration
  finished = 4,  // the sender completed its last round, `iteration`, and sends nothing more but
                 // notices and acknowledgements (exchange::finish); no codec, no payload
  finished_ack = 5,  // the sender received the receiver's finished message of `iteration` (and so
                     // every message the receiver sent before it); no codec, no payload
  join = 6,  // rejoining (docs/failures.md): a request, an offer, an acceptance or a refusal, as
             // notice-format text (node/membership/notice.hpp); count = the sender's model size;
             // accepted from a neighbour that was dropped (it is how one comes back)
  join_state = 7,  // rejoining: one chunk (a chunk header, then bytes) of the sender's model, then
                   // its public state (rejoinable::public_state, when it has one), float32
                   // little-endian; count = the model size, iteration = the round the edge
                   // (re)starts at
};
// True for the kinds that are only a header (no payload): finished, finished_ack.
[[nodiscard]] constexpr bool header_only(message_kind kind) {
  return kind == message_kind::finished || kind == message_kind::finished_ack;
}
// True for the kinds that carry a codec (codec, codec_tag and count as the receiver expects); the
// others have codec and codec_tag 0, and count 0 but for the rejoining kinds (carries_model_size).
[[nodiscard]] constexpr bool carries_codec(message_kind kind) {
  return kind == message_kind::train || kind == message_kind::probe;
}
// True for the rejoining kinds, whose count is the sender's model size (checked by the node).
[[nodiscard]] constexpr bool carries_model_size(message_kind kind) {
  return kind == message_kind::join || kind == message_kind::join_state;
}
std::string_view to_string(message_kind kind);

struct wire_header {
  std::uint16_t version = kWireVersion;
  message_kind kind = message_kind::train;
  std::uint64_t run_id = 0;     // hash of the resolved config: ranks of one run agree on it
  std::uint32_t sender = 0;     // the sender's rank
  std::uint64_t count = 0;      // float elements encoded in the payload (at most kWireMaxCount)
  std::uint64_t iteration = 0;  // the round; per edge and kind it is the sequence number
  std::uint16_t codec = 0;      // codec id (algorithms/compress codec_id), opaque here
  // Train messages of asynchronous gossip: the sender's rounds since its previous train message
  // that sent none (a busy uplink: async_gossip_round), so iteration - skipped follows the previous
  // iteration on the edge. 0 on every other message.
  std::uint16_t skipped = 0;
  std::uint32_t codec_tag = 0;  // fingerprint of the codec's parameters
  std::uint64_t payload_bytes = 0;
  std::uint32_t crc32c = 0;  // set by parse_header; encode_header computes its own
};

// Writes h to out and computes the CRC32C of (out with the crc field zeroed) ++ payload.
// Every field is written as given (so tests can build wrong headers with a valid checksum) except
// the magic and the crc. REQUIRES: h.payload_bytes == payload.size().
void encode_header(const wire_header& h, std::span<const std::byte> payload,
                   std::span<std::byte, kWireHeaderBytes> out);

// What the receiver requires of a codec-carrying message of one kind.
struct codec_expectation {
  std::uint16_t codec = 0;
  std::uint32_t codec_tag = 0;
  std::uint64_t count = 0;
};

struct wire_expectations {
  std::uint64_t run_id = 0;
  // Ranks a message may come from (the neighbours), sorted ascending.
  std::span<const int> senders;
  // Largest payload accepted; a header announcing more is rejected before anything else is read.
  std::uint64_t max_payload_bytes = 0;
  // Codec, tag and count per kind; std::nullopt leaves that kind's codec fields to the caller
  // (check_codec), e.g. when what to expect is only known later.
  std::optional<codec_expectation> train;
  std::optional<codec_expectation> probe;
};

// Which check a header failed, in the order parse_header applies them (docs/wire.md).
enum class wire_check : std::uint8_t {
  ok = 0,
  truncated,  // header not exactly kWireHeaderBytes bytes
  magic,
  version,
  payload_size,  // payload_bytes above the maximum, or not the payload's actual size
  crc,
  kind,
  skipped,  // not 0 on a message other than train
  run_id,
  sender,
  codec,
  codec_tag,
  count,
};
std::string_view to_string(wire_check check);

// Validates header_bytes + payload against expect and decodes the header into out. Order: magic,
// version (so a node of another wire format is named as such), size, payload size, checksum, then the fields' values, so random corruption reports as
// a checksum failure and a well-formed but foreign message names the field that does not fit.
// Returns errc::corrupt with "<field>: expected <x>, received <y>" on the first failed check (and
// stores it in *failed when given); out is then unspecified, except after a run_id failure, when
// out.kind and out.run_id are the message's (its checksum held): a join of another run is answered
// with a refusal (docs/failures.md, "Rejoining").
status parse_header(std::span<const std::byte> header_bytes, std::span<const std::byte> payload,
                    const wire_expectations& expect, wire_header& out, wire_check* failed = nullptr);

// The codec part of the checks, for callers that learn the expectation after parsing.
status check_codec(const wire_header& h, const codec_expectation& expect, wire_check* failed = nullptr);

}  // namespace qgossip
