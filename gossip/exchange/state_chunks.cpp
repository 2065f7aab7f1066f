#include "gossip/exchange/state_chunks.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/hash.hpp"
#include "core/little_endian.hpp"

namespace qgossip {

namespace {

struct chunk_header {
  std::uint64_t state_bytes = 0;
  std::uint64_t offset = 0;
  std::uint64_t state_hash = 0;
};

chunk_header read_header(std::span<const std::byte> payload) {
  const std::byte* p = payload.data();
  return {get_le<std::uint64_t>(p, 0), get_le<std::uint64_t>(p, 8), get_le<std::uint64_t>(p, 16)};
}

}  // namespace

std::size_t chunk_count(std::uint64_t state_bytes, std::size_t max_chunk_bytes) {
  return state_bytes == 0 ? 1 : static_cast<std::size_t>((state_bytes + max_chunk_bytes - 1) / max_chunk_bytes);
}

status send_chunks(std::span<const std::byte> state, std::size_t max_chunk_bytes,
                   function_ref<status(std::span<const std::byte>)> send) {
  const std::uint64_t hash = hash64(state);
  std::vector<std::byte> chunk(kChunkHeaderBytes + std::min(state.size(), max_chunk_bytes));
  std::uint64_t offset = 0;
  do {
    const std::size_t n = std::min<std::size_t>(state.size() - offset, max_chunk_bytes);
    put_le<std::uint64_t>(chunk.data(), 0, state.size());
    put_le<std::uint64_t>(chunk.data(), 8, offset);
    put_le<std::uint64_t>(chunk.data(), 16, hash);
    if (n > 0) std::memcpy(chunk.data() + kChunkHeaderBytes, state.data() + offset, n);
    if (status s = send(std::span(chunk).first(kChunkHeaderBytes + n)); !s) return s;
    offset += n;
  } while (offset < state.size());
  return status::ok();
}

status state_assembly::give_up(std::string why) {
  started_ = false;
  bytes_ = {};
  return status::error(errc::corrupt, std::move(why));
}

status state_assembly::add(std::uint64_t iteration, std::span<const std::byte> payload, std::uint64_t max_state_bytes) {
  if (payload.size() < kChunkHeaderBytes)
    return give_up("a state's chunk of " + std::to_string(payload.size()) + " bytes, shorter than its " +
                   std::to_string(kChunkHeaderBytes) + "-byte chunk header");
  const chunk_header h = read_header(payload);
  const std::uint64_t n = payload.size() - kChunkHeaderBytes;
  if (h.offset == 0) {
    if (h.state_bytes > max_state_bytes)
      return give_up("a state of " + std::to_string(h.state_bytes) + " bytes, expected at most " +
                     std::to_string(max_state_bytes));
    started_ = true;
    iteration_ = iteration;
    state_bytes_ = h.state_bytes;
    hash_ = h.state_hash;
    received_ = 0;
    bytes_.clear();
    bytes_.reserve(h.state_bytes);
  } else if (!started_ || iteration != iteration_ || h.state_bytes != state_bytes_ || h.state_hash != hash_ ||
             h.offset != received_) {
    return give_up("a chunk at byte " + std::to_string(h.offset) + " of a state of round " + std::to_string(iteration) +
                   (started_ ? ", expected byte " + std::to_string(received_) + " of round " + std::to_string(iteration_)
                             : ", with no state started"));
  }
  if (n > state_bytes_ - received_ || (n == 0 && state_bytes_ > 0))
    return give_up("a chunk of " + std::to_string(n) + " bytes at byte " + std::to_string(h.offset) +
                   " of a state of " + std::to_string(state_bytes_));
  bytes_.insert(bytes_.end(), payload.begin() + kChunkHeaderBytes, payload.end());
  received_ += n;
  if (received_ == state_bytes_ && hash64(std::span<const std::byte>(bytes_)) != hash_)
    return give_up("a state of " + std::to_string(state_bytes_) + " bytes whose hash is " +
                   hex64(hash64(std::span<const std::byte>(bytes_))) + ", its chunks announced " + hex64(hash_));
  return status::ok();
}

std::vector<std::byte> state_assembly::take() {
  started_ = false;
  return std::move(bytes_);
}

}  // namespace qgossip
