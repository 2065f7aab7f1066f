#pragma once
// Ring all-reduce over the Exchange: the full-precision collective that centralized data-parallel
// training (C-PSGD; Horovod, DDP) runs every step. Ranks 0..n-1 form a ring; the vector is cut in n
// chunks; n−1 reduce-scatter steps (send a chunk to the right neighbour, add the one from the left)
// leave each rank with one chunk's full sum, and n−1 all-gather steps pass the sums round. Each
// rank sends 2(n−1)/n of the vector in all, in 2(n−1) sequential messages: cheap in bandwidth,
// costly in latency — the contrast Tang et al. Fig. 3 measures.
//
// Every rank ends with the SAME bits: chunk c is summed in one fixed order (rank c first, then
// c+1, ... round the ring) by the ranks on its path and then copied, never re-added, so the
// centralized baselines keep identical models on every node (tested by hash).
//
// Messages: kind train, count = the padded chunk size ceil(d/n) (the last chunks zero-padded), one
// per step; step s of a call uses iteration first_iteration + s. A rank can run at most n−1 steps
// ahead of its right neighbour, so the exchange needs lookahead >= n − 1. A chunk travels as raw
// little-endian float32 (codec 1, tag 0), or as a ring_codec's code (a quantized ring all-reduce,
// as PCCL's): each reduce-scatter hop sends the code of its partial sum, which the next rank decodes
// and adds its own chunk to; the owner of a chunk's full sum sends its code once, every rank (the
// owner too) decodes those same bytes, and they are forwarded unchanged round the ring. So every
// rank still ends with the same bits; the sum carries the codec's error of n quantizations.
// REQUIRES: the exchange's neighbours include (rank ± 1) mod n; n >= 2; every rank calls with the
// same data size and first_iteration.
#include <cstdint>
#include <span>
#include <vector>


#include "core/status.hpp"
#include "gossip/exchange.hpp"

namespace qgossip {

// Iterations one call uses: 2(n−1).
[[nodiscard]] constexpr std::uint64_t ring_allreduce_steps(int n) { return 2 * static_cast<std::uint64_t>(n - 1); }

// How a chunk is coded on the ring: deterministic in (values, encoder rank, iteration, chunk), as
// algorithms/compress/compressor.hpp's codecs are, so every decoder regenerates shared randomness.
class ring_codec {
 public:
  virtual ~ring_codec() = default;
  [[nodiscard]] virtual std::uint16_t id() const = 0;
  [[nodiscard]] virtual std::uint32_t tag() const = 0;
  // Appends the code of v to out.
  virtual void encode(std::span<const float> v, std::uint32_t rank, std::uint64_t iteration, std::uint32_t chunk,
                      std::vector<std::byte>& out) const = 0;
  // Decodes exactly out.size() values; errc::corrupt for bytes that are not one code.
  [[nodiscard]] virtual status decode(std::span<const std::byte> in, std::uint32_t rank, std::uint64_t iteration,
                                      std::uint32_t chunk, std::span<float> out) const = 0;
};

class ring_allreduce {
 public:
  // codec: how chunks travel (nullptr: raw float32); must outlive this.
  ring_allreduce(exchange& ex, int rank, int n, const ring_codec* codec = nullptr);

  // Replaces data with the sum of every rank's data. Errors: the exchange's (a silent neighbour
  // names itself), or errc::corrupt when a chunk's size is not the agreed one.
  status sum(std::span<float> data, std::uint64_t first_iteration);

 private:
  std::span<float> chunk(std::span<float> data, int c) const;
  [[nodiscard]] status sum_raw(std::span<float> data, std::uint64_t first_iteration);
  [[nodiscard]] status sum_coded(std::span<float> data, std::uint64_t first_iteration);
  // One step: sends payload to the right, receives the left's into in_[0].
  [[nodiscard]] status step(std::uint64_t iteration, std::uint64_t count, std::span<const std::byte> payload);

  exchange& ex_;
  int rank_, n_;
  int left_, right_;
  const ring_codec* codec_;
  std::vector<std::byte> payload_;
  std::vector<inbound_message> in_;
  std::vector<float> padded_, decoded_;  // coded: a chunk padded to ceil(d/n), a decoded one
};

}  // namespace qgossip
