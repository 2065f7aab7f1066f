#pragma once
// A state larger than one message (a rejoining node's model and public state, 8 bytes a parameter)
// travels as a series of join_state messages, each carrying at most max_chunk_bytes of it
// (network.max_message_mib) behind a 24-byte chunk header (docs/wire.md, "Chunked states"): the
// whole state's size, the chunk's offset in it and the whole state's hash64. The chunks of one
// state go in order on one link; each message has the wire header's own CRC32C, and the hash is
// checked once the last chunk is in, so a chunk damaged under a valid checksum, lost, repeated or
// out of order refuses the state rather than installing a wrong one.
//
//   state_assembly a;
//   for each join_state payload p of the link:  if (!a.add(iteration, p, max_state_bytes)) refuse
//   if (a.complete()) use(a.take());
//
// Thread safety: none; one assembly per neighbour, fed in the order the link delivers.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/function_ref.hpp"
#include "core/status.hpp"

namespace qgossip {

inline constexpr std::size_t kChunkHeaderBytes = 24;

// Sends `state` as chunk payloads of at most kChunkHeaderBytes + max_chunk_bytes each, in order,
// through send (one chunk with no bytes for an empty state); stops at the first error.
// REQUIRES: max_chunk_bytes > 0.
status send_chunks(std::span<const std::byte> state, std::size_t max_chunk_bytes,
                   function_ref<status(std::span<const std::byte>)> send);

// How many chunks send_chunks makes of a state of state_bytes.
[[nodiscard]] std::size_t chunk_count(std::uint64_t state_bytes, std::size_t max_chunk_bytes);

class state_assembly {
 public:
  // Adds one join_state payload of round `iteration`. A chunk at offset 0 starts a new state (an
  // unfinished one is given up); any other must continue the state in progress: same round, size
  // and hash, at the next byte. Returns errc::corrupt naming what does not fit (the state in
  // progress is then given up): a payload shorter than the chunk header, a state above
  // max_state_bytes, a chunk out of order, past the state's end or empty, or, at the last chunk,
  // the bytes' hash not the announced one.
  status add(std::uint64_t iteration, std::span<const std::byte> payload, std::uint64_t max_state_bytes);
  // True once the state's last chunk was added and its hash held.
  [[nodiscard]] bool complete() const { return started_ && received_ == state_bytes_; }
  // The completed state; the assembly is empty again. REQUIRES: complete().
  std::vector<std::byte> take();

 private:
  status give_up(std::string why);

  bool started_ = false;
  std::uint64_t iteration_ = 0;
  std::uint64_t state_bytes_ = 0;
  std::uint64_t hash_ = 0;
  std::uint64_t received_ = 0;
  std::vector<std::byte> bytes_;
};

}  // namespace qgossip
