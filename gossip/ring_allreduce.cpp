#include "gossip/ring_allreduce.hpp"

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"

namespace qgossip {

ring_allreduce::ring_allreduce(exchange& ex, int rank, int n, const ring_codec* codec)
    : ex_(ex), rank_(rank), n_(n), left_((rank + n - 1) % n), right_((rank + 1) % n), codec_(codec) {
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
  return codec_ ? sum_coded(data, first_iteration) : sum_raw(data, first_iteration);
}

status ring_allreduce::step(std::uint64_t iteration, std::uint64_t count, std::span<const std::byte> payload) {
  const int to[1] = {right_}, from[1] = {left_};
  // n = 2: left and right are the same rank, to which the exchange sends once and from which it
  // receives once per step, as wanted.
  const outgoing_message msg{.codec = codec_ ? codec_->id() : std::uint16_t{1}, .codec_tag = codec_ ? codec_->tag() : 0u,
                             .count = count, .payload = payload};
  return ex_.round(message_kind::train, iteration, msg, in_, round_peers{to, from});
}

namespace {

// The chunks step s sends and receives. Reduce-scatter (s < n−1, k = s): send the partial sum of
// chunk rank−k, add into chunk rank−k−1. All-gather (k = s − (n−1)): send the full sum of chunk
// rank+1−k, take chunk rank−k. So rank r owns the full sum of chunk r+1 after the reduce-scatter.
struct ring_step {
  bool reducing;
  int send_chunk, recv_chunk;
};

ring_step step_of(int s, int rank, int n) {
  const bool reducing = s < n - 1;
  const int k = reducing ? s : s - (n - 1);
  return {reducing, ((reducing ? rank - k : rank + 1 - k) % n + n) % n, ((reducing ? rank - k - 1 : rank - k) % n + n) % n};
}

}  // namespace

status ring_allreduce::sum_raw(std::span<float> data, std::uint64_t first_iteration) {
  const std::size_t per = (data.size() + static_cast<std::size_t>(n_) - 1) / static_cast<std::size_t>(n_);
  payload_.assign(per * sizeof(float), std::byte{0});  // the last chunks may be short: zero-padded
  const int steps = static_cast<int>(ring_allreduce_steps(n_));
  for (int s = 0; s < steps; ++s) {
    const ring_step rs = step_of(s, rank_, n_);
    std::span<float> out = chunk(data, rs.send_chunk);
    std::memcpy(payload_.data(), out.data(), out.size_bytes());
    std::fill(payload_.begin() + static_cast<std::ptrdiff_t>(out.size_bytes()), payload_.end(), std::byte{0});
    if (status st = step(first_iteration + static_cast<std::uint64_t>(s), per, payload_); !st)
      return st;
    std::span<float> into = chunk(data, rs.recv_chunk);
    const auto& got = in_[0].payload;
    if (got.size() != per * sizeof(float))
      return status::error(errc::corrupt, "ring all-reduce: chunk of " + std::to_string(got.size()) +
                                              " bytes from rank " + std::to_string(left_) + ", expected " +
                                              std::to_string(per * sizeof(float)));
    const auto* values = reinterpret_cast<const float*>(got.data());
    if (rs.reducing) {
      for (std::size_t i = 0; i < into.size(); ++i) into[i] = values[i] + into[i];
    } else {
      std::memcpy(into.data(), values, into.size_bytes());
    }
  }
  return status::ok();
}

// As sum_raw with chunks in the codec's code (see the top of ring_allreduce.hpp). The code of a
// partial sum is decoded with its encoder's rank and step; the code of a full sum, made once by its
// owner (rank c − 1 for chunk c) at the first all-gather step, with the owner's.
status ring_allreduce::sum_coded(std::span<float> data, std::uint64_t first_iteration) {
  const std::size_t per = (data.size() + static_cast<std::size_t>(n_) - 1) / static_cast<std::size_t>(n_);
  padded_.assign(per, 0.0f);
  decoded_.assign(per, 0.0f);
  const std::uint64_t gather_start = first_iteration + static_cast<std::uint64_t>(n_ - 1);
  const int steps = static_cast<int>(ring_allreduce_steps(n_));
  received_bytes forwarded;  // the all-gather: the code received at the previous step, sent on as it is
  for (int s = 0; s < steps; ++s) {
    const ring_step rs = step_of(s, rank_, n_);
    const auto iteration = first_iteration + static_cast<std::uint64_t>(s);
    const auto send_c = static_cast<std::uint32_t>(rs.send_chunk), recv_c = static_cast<std::uint32_t>(rs.recv_chunk);
    std::span<float> out = chunk(data, rs.send_chunk);
    // A partial sum, or this rank's full sum: coded here; else the code received at the previous
    // step is sent on unchanged.
    const bool coded_here = rs.reducing || iteration == gather_start;
    if (coded_here) {
      std::copy(out.begin(), out.end(), padded_.begin());
      std::fill(padded_.begin() + static_cast<std::ptrdiff_t>(out.size()), padded_.end(), 0.0f);
      payload_.clear();
      codec_->encode(padded_, static_cast<std::uint32_t>(rank_), iteration, send_c, payload_);
      if (!rs.reducing) {  // the owner keeps what every other rank will decode
        if (status st = codec_->decode(payload_, static_cast<std::uint32_t>(rank_), iteration, send_c, decoded_); !st)
          return status::error(errc::invalid, "ring all-reduce: the codec cannot decode its own code: " + st.to_string());
        std::copy(decoded_.begin(), decoded_.begin() + static_cast<std::ptrdiff_t>(out.size()), out.begin());
      }
    }
    if (status st = step(iteration, per, coded_here ? std::span<const std::byte>(payload_) : forwarded.bytes()); !st)
      return st;
    const auto encoder = static_cast<std::uint32_t>(rs.reducing ? left_ : (rs.recv_chunk + n_ - 1) % n_);
    const std::uint64_t coded_at = rs.reducing ? iteration : gather_start;
    if (status st = codec_->decode(in_[0].payload, encoder, coded_at, recv_c, decoded_); !st)
      return status::error(errc::corrupt, "ring all-reduce: chunk " + std::to_string(recv_c) + " from rank " +
                                              std::to_string(left_) + ": " + st.to_string());
    std::span<float> into = chunk(data, rs.recv_chunk);
    for (std::size_t i = 0; i < into.size(); ++i) into[i] = rs.reducing ? decoded_[i] + into[i] : decoded_[i];
    if (!rs.reducing) forwarded = std::move(in_[0].payload);
  }
  return status::ok();
}

}  // namespace qgossip
