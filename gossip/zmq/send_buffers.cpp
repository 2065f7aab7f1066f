#include "gossip/zmq/send_buffers.hpp"

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"

namespace qgossip {

void send_buffers::release(void* /*data*/, void* hint) {
  buffer& b = *static_cast<buffer*>(hint);
  send_buffers& pool = *b.pool;
  {
    std::lock_guard<std::mutex> lock(pool.released_lock_);
    pool.busy_bytes_.fetch_sub(b.capacity, std::memory_order_acq_rel);
    b.busy.store(false, std::memory_order_release);  // last: the sender may reuse or free it from here on
  }
  pool.released_.notify_all();
}

void send_buffers::release_adopted(void* /*data*/, void* hint) {
  std::unique_ptr<adopted> a(static_cast<adopted*>(hint));
  send_buffers& pool = *a->pool;
  {
    std::lock_guard<std::mutex> lock(pool.released_lock_);
    pool.busy_bytes_.fetch_sub(a->bytes, std::memory_order_acq_rel);
    a->owner.reset();  // the owner's last reference may go here: it may reuse the payload from now on
  }
  pool.released_.notify_all();
}

bool send_buffers::wait_held_at_most(std::uint64_t bytes, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(released_lock_);
  return released_.wait_until(lock, deadline, [&] { return busy_bytes() <= bytes; });
}

// Only free buffers go: a busy one is still ZeroMQ's, and once free ZeroMQ holds no frame over it.
void send_buffers::drop_idle() {
  std::erase_if(buffers_, [&](const std::unique_ptr<buffer>& b) {
    return !b->busy.load(std::memory_order_acquire) && messages_ - b->last_message > kIdleMessages;
  });
}

send_buffers::buffer& send_buffers::take(std::size_t n) {
  ++messages_;
  drop_idle();
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
    fit->pool = this;
  }
  fit->busy.store(true, std::memory_order_relaxed);
  fit->last_message = messages_;
  busy_bytes_.fetch_add(fit->capacity, std::memory_order_acq_rel);
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

send_buffers::frames send_buffers::adopt(std::span<const std::byte> header, std::span<const std::byte> payload,
                                         std::shared_ptr<const void> owner) {
  QG_ENFORCE(!payload.empty() && owner, "an adopted payload needs bytes and an owner");
  ++messages_;  // a message all the same: the pool's idle buffers age by it
  drop_idle();
  auto hint = std::make_unique<adopted>(adopted{this, payload.size(), std::move(owner)});
  // ZeroMQ's signature takes a mutable pointer; it never writes a message it sends.
  void* data = const_cast<std::byte*>(payload.data());
  frames f{zmq::message_t(header.data(), header.size()),
           zmq::message_t(data, payload.size(), &release_adopted, hint.get())};
  (void)hint.release();  // ZeroMQ's now: release_adopted deletes it, once f's frames are let go
  busy_bytes_.fetch_add(payload.size(), std::memory_order_acq_rel);
  return f;
}

std::size_t send_buffers::busy() const {
  return static_cast<std::size_t>(std::count_if(buffers_.begin(), buffers_.end(), [](const auto& b) {
    return b->busy.load(std::memory_order_acquire);
  }));
}

}  // namespace qgossip
