#pragma once
// The bytes of a received frame, owned, and handed on by moving rather than copying: from the
// transport to the exchange, to a round that buffers an early message, to the node's inbox, which
// keeps a train message encoded until it decodes it into the copy it adds to. Either a vector of
// its own, or a buffer of the transport's adopted as it is (the ZeroMQ transport's received
// message: no copy of a 40 MB frame, and none of it kept once the last holder lets go).
// Movable, not copyable; a moved-from value is empty. As a vector, it assigns a copy (assign) and
// reads as a contiguous range (data, size, begin, end), so a std::span takes it as it is.
// Its bytes start on a kReceivedAlignment boundary (a vector's do; a transport adopts only a buffer
// that does, and copies any other), so a reader may take them as floats or doubles.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace qgossip {

inline constexpr std::size_t kReceivedAlignment = 8;

class received_bytes {
 public:
  received_bytes() = default;
  explicit received_bytes(std::vector<std::byte> own) : own_(std::move(own)), view_(own_) {}
  // Bytes that `owner` keeps alive (a messaging library's buffer), adopted without a copy.
  // REQUIRES: view.data() on a kReceivedAlignment boundary (aligned()).
  received_bytes(std::span<const std::byte> view, std::shared_ptr<const void> owner)
      : owner_(std::move(owner)), view_(view) {}

  received_bytes(received_bytes&& o) noexcept
      : own_(std::move(o.own_)), owner_(std::move(o.owner_)), view_(std::exchange(o.view_, {})) {}
  received_bytes& operator=(received_bytes&& o) noexcept {
    if (this == &o) return *this;
    own_ = std::move(o.own_);
    owner_ = std::move(o.owner_);
    view_ = std::exchange(o.view_, {});
    return *this;
  }
  received_bytes(const received_bytes&) = delete;
  received_bytes& operator=(const received_bytes&) = delete;

  // A copy of [first, last), in a vector of its own (an adopted buffer is let go).
  template <class It>
  void assign(It first, It last) {
    std::vector<std::byte> copy(first, last);  // before letting go: the range may be these bytes
    owner_.reset();
    own_ = std::move(copy);
    view_ = own_;
  }
  // Lets go of the bytes, the memory too.
  void clear() {
    owner_.reset();
    std::vector<std::byte>().swap(own_);
    view_ = {};
  }

  [[nodiscard]] const std::byte* data() const { return view_.data(); }
  [[nodiscard]] std::size_t size() const { return view_.size(); }
  [[nodiscard]] bool empty() const { return view_.empty(); }
  [[nodiscard]] const std::byte* begin() const { return view_.data(); }
  [[nodiscard]] const std::byte* end() const { return view_.data() + view_.size(); }
  [[nodiscard]] std::span<const std::byte> bytes() const { return view_; }
  // Whether bytes at p may be adopted: on a kReceivedAlignment boundary.
  [[nodiscard]] static bool aligned(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p) % kReceivedAlignment == 0;
  }
  [[nodiscard]] const std::byte& operator[](std::size_t i) const { return view_[i]; }
  // The same bytes (a vector's, a span's).
  friend bool operator==(const received_bytes& a, std::span<const std::byte> b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::vector<std::byte> own_;
  std::shared_ptr<const void> owner_;
  std::span<const std::byte> view_;  // into own_, or into owner_'s buffer
};

}  // namespace qgossip
