#pragma once
// The buffers a ZeroMQ transport sends its messages from, reused round after round: a message's
// header and payload are copied into a free buffer and handed to ZeroMQ without a further copy
// (zmq_msg_init_data); the buffer is free again once ZeroMQ has let go of the last frame that
// uses it, which it says by calling back (on its I/O thread, or the sender's). So a node's sends
// stop allocating once its pool holds a buffer per message in flight: what is left per message is
// the 40-byte record ZeroMQ keeps for a frame it calls back for (libzmq's zmq_msg_init_data),
// where a copied 10 MB payload used to be allocated, faulted in and unmapped every round.
// The header frame points into the same buffer with no call-back: ZeroMQ writes a multipart
// message's frames in order and lets go of the header before the payload. A payload whose owner
// keeps it alive until ZeroMQ is done (adopt: a node's own train message) is sent with no copy and
// no buffer of the pool; what it allocates is small: the call-back's record, the header's frame
// (56 bytes, above ZeroMQ's inline 33) and ZeroMQ's record. An adopted message ages the pool's
// idle buffers as any other.
// A burst (a rejoining state's chunks, one buffer each: 0.8 GB per neighbour at 100 M parameters)
// would otherwise stay in the pool for the rest of the run: a free buffer that the last
// kIdleMessages messages did not use is let go when the next one is sent.
// The bytes ZeroMQ still holds (the busy buffers' sizes) let a sender of many large messages keep
// only a few in flight: wait_held_at_most blocks until ZeroMQ has let go of enough of them.
// Thread safety: message(), adopt() and wait_held_at_most() from one thread (the transport's); the
// call-backs from any.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include <zmq.hpp>

namespace qgossip {

class send_buffers {
 public:
  send_buffers() = default;
  send_buffers(const send_buffers&) = delete;
  send_buffers& operator=(const send_buffers&) = delete;

  // Frames over one buffer holding header then payload: `header` (no call-back) and `payload`
  // (which frees the buffer; copies of it, zmq::message_t::copy, share it). REQUIRES: a non-empty
  // payload (a header-only message has nothing to call back with).
  struct frames {
    zmq::message_t header, payload;
  };
  [[nodiscard]] frames message(std::span<const std::byte> header, std::span<const std::byte> payload);
  // Frames over a payload that `owner` keeps alive, adopted without a copy and without a buffer of
  // the pool (a node's own train message, which it encodes anew only once ZeroMQ has let go of the
  // last): the header is a small message of its own, and ZeroMQ lets go of owner once it is done
  // with the last frame over the payload. Counted in busy_bytes() until then.
  [[nodiscard]] frames adopt(std::span<const std::byte> header, std::span<const std::byte> payload,
                             std::shared_ptr<const void> owner);

  // Buffers held, free or not (for tests and the log).
  [[nodiscard]] std::size_t held() const { return buffers_.size(); }
  // Buffers ZeroMQ still holds (for tests).
  [[nodiscard]] std::size_t busy() const;
  // Bytes of the buffers ZeroMQ still holds (their sizes).
  [[nodiscard]] std::uint64_t busy_bytes() const { return busy_bytes_.load(std::memory_order_acquire); }
  // Waits until busy_bytes() <= bytes; false when the deadline came first.
  [[nodiscard]] bool wait_held_at_most(std::uint64_t bytes, std::chrono::steady_clock::time_point deadline);
  // A free buffer that this many messages since its last did not use is let go. Far above what a
  // round keeps in flight (a message or two per round, a few rounds ahead), so a steady run's
  // buffers stay and its sends allocate nothing.
  static constexpr std::uint64_t kIdleMessages = 64;

 private:
  struct buffer {
    std::unique_ptr<std::byte[]> bytes;
    std::size_t capacity = 0;
    std::atomic<bool> busy{false};
    std::uint64_t last_message = 0;  // messages_ when it was last taken
    send_buffers* pool = nullptr;    // the pool that made it, for release()
  };
  static void release(void* data, void* hint);
  struct adopted {  // adopt()'s call-back's hint
    send_buffers* pool;
    std::size_t bytes;
    std::shared_ptr<const void> owner;
  };
  static void release_adopted(void* data, void* hint);
  // A free buffer of at least n bytes: the first free one that is big enough, else a free one made
  // bigger, else a new one. Lets go of the free buffers idle for kIdleMessages.
  buffer& take(std::size_t n);
  void drop_idle();

  std::vector<std::unique_ptr<buffer>> buffers_;
  std::uint64_t messages_ = 0;  // messages made, this one included
  std::atomic<std::uint64_t> busy_bytes_{0};
  std::mutex released_lock_;  // with released_: wait_held_at_most's wake-up
  std::condition_variable released_;
};

}  // namespace qgossip
