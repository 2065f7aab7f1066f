#pragma once
// The buffers a ZeroMQ transport sends its messages from, reused round after round: a message's
// header and payload are copied into a free buffer and handed to ZeroMQ without a further copy
// (zmq_msg_init_data); the buffer is free again once ZeroMQ has let go of the last frame that
// uses it, which it says by calling back (on its I/O thread, or the sender's). So a node's sends
// stop allocating once its pool holds a buffer per message in flight: what is left per message is
// the 40-byte record ZeroMQ keeps for a frame it calls back for (libzmq's zmq_msg_init_data),
// where a copied 10 MB payload used to be allocated, faulted in and unmapped every round.
// The header frame points into the same buffer with no call-back: ZeroMQ writes a multipart
// message's frames in order and lets go of the header before the payload.
// Thread safety: message() from one thread (the transport's); the call-backs from any.
#include <atomic>
#include <cstddef>
#include <memory>
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

  // Buffers held, free or not (for tests and the log).
  [[nodiscard]] std::size_t held() const { return buffers_.size(); }
  // Buffers ZeroMQ still holds (for tests).
  [[nodiscard]] std::size_t busy() const;

 private:
  struct buffer {
    std::unique_ptr<std::byte[]> bytes;
    std::size_t capacity = 0;
    std::atomic<bool> busy{false};
  };
  static void release(void* data, void* hint);
  // A free buffer of at least n bytes: the first free one that is big enough, else a free one made
  // bigger, else a new one.
  buffer& take(std::size_t n);

  std::vector<std::unique_ptr<buffer>> buffers_;
};

}  // namespace qgossip
