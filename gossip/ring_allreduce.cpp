#include "gossip/ring_allreduce.hpp"

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"

namespace qgossip {

ring_allreduce::ring_allreduce(exchange& ex, int rank, int n)
    : ex_(ex), rank_(rank), n_(n), left_((rank + n - 1) % n), right_((rank + 1) % n) {
  QG_ENFORCE(n >= 2 && rank >= 0 && rank < n, "rank " << rank << " of " << n);
  QG_ENFORCE(ex.options().lookahead + 1 >= static_cast<std::uint64_t>(n),
             "ring all-reduce of " << n << " ranks needs exchange lookahead >= " << n - 1);
}

std::span<float> ring_allreduce::chunk(std::span<float> data, int c) const {
  const std::size_t per = (data.size() + static_cast<std::size_t>(n_) - 1) / static_cast<std::size_t>(n_);
  const std::size_t begin = std::min(data.size(), per * static_cast<std::size_t>(c));
  return data.subspan(begin, std::min(per, data.size() - begin));
}

status ring_allreduce::sum(std::span<float> data, std::uint64_t first_iteration) {
  const std::size_t per = (data.size() + static_cast<std::size_t>(n_) - 1) / static_cast<std::size_t>(n_);
  payload_.assign(per * sizeof(float), std::byte{0});  // the last chunks may be short: zero-padded
  const int to[1] = {right_}, from[1] = {left_};
  // n = 2: left and right are the same rank, to which the exchange sends once and from which it
  // receives once per step, as wanted.
  const round_peers peers{to, from};
  const int steps = static_cast<int>(ring_allreduce_steps(n_));
  for (int s = 0; s < steps; ++s) {
    const bool reducing = s < n_ - 1;
    const int k = reducing ? s : s - (n_ - 1);
    // Reduce-scatter: send the partial sum of chunk rank−k, add into chunk rank−k−1.
    // All-gather: send the full sum of chunk rank+1−k, copy chunk rank−k.
    const int send_c = ((reducing ? rank_ - k : rank_ + 1 - k) % n_ + n_) % n_;
    const int recv_c = ((reducing ? rank_ - k - 1 : rank_ - k) % n_ + n_) % n_;
    std::span<float> out = chunk(data, send_c);
    std::memcpy(payload_.data(), out.data(), out.size_bytes());
    std::fill(payload_.begin() + static_cast<std::ptrdiff_t>(out.size_bytes()), payload_.end(), std::byte{0});
    const outgoing_message msg{.codec = 1, .codec_tag = 0, .count = static_cast<std::uint32_t>(per), .payload = payload_};
    if (status st = ex_.round(message_kind::train, first_iteration + static_cast<std::uint64_t>(s), msg, in_, peers); !st)
      return st;
    std::span<float> into = chunk(data, recv_c);
    const auto& got = in_[0].payload;
    if (got.size() != per * sizeof(float))
      return status::error(errc::corrupt, "ring all-reduce: chunk of " + std::to_string(got.size()) +
                                              " bytes from rank " + std::to_string(left_) + ", expected " +
                                              std::to_string(per * sizeof(float)));
    const auto* values = reinterpret_cast<const float*>(got.data());
    if (reducing) {
      for (std::size_t i = 0; i < into.size(); ++i) into[i] = values[i] + into[i];
    } else {
      std::memcpy(into.data(), values, into.size_bytes());
    }
  }
  return status::ok();
}

}  // namespace qgossip
