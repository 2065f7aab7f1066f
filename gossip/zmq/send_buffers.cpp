#include "gossip/zmq/send_buffers.hpp"

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"

namespace qgossip {

void send_buffers::release(void* /*data*/, void* hint) {
  static_cast<buffer*>(hint)->busy.store(false, std::memory_order_release);
}

send_buffers::buffer& send_buffers::take(std::size_t n) {
  buffer* fit = nullptr;
  buffer* small = nullptr;
  for (const auto& b : buffers_) {
    if (b->busy.load(std::memory_order_acquire)) continue;
    if (b->capacity >= n) {
      fit = b.get();
      break;
    }
    if (!small) small = b.get();
  }
  if (!fit && small) {  // a free one too small: grown (a message larger than any before)
    small->bytes = std::make_unique_for_overwrite<std::byte[]>(n);
    small->capacity = n;
    fit = small;
  }
  if (!fit) {
    buffers_.push_back(std::make_unique<buffer>());
    fit = buffers_.back().get();
    fit->bytes = std::make_unique_for_overwrite<std::byte[]>(n);
    fit->capacity = n;
  }
  fit->busy.store(true, std::memory_order_relaxed);
  return *fit;
}

send_buffers::frames send_buffers::message(std::span<const std::byte> header, std::span<const std::byte> payload) {
  QG_ENFORCE(!payload.empty(), "a header-only message is not sent from the pool");
  buffer& b = take(header.size() + payload.size());
  std::byte* at = b.bytes.get();
  std::memcpy(at, header.data(), header.size());
  std::memcpy(at + header.size(), payload.data(), payload.size());
  frames f{zmq::message_t(at, header.size(), nullptr), zmq::message_t(at + header.size(), payload.size(), &release, &b)};
  return f;
}

std::size_t send_buffers::busy() const {
  return static_cast<std::size_t>(std::count_if(buffers_.begin(), buffers_.end(), [](const auto& b) {
    return b->busy.load(std::memory_order_acquire);
  }));
}

}  // namespace qgossip
