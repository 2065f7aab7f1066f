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
// Messages: kind train, raw little-endian float32 (codec 1, tag 0), count = the padded chunk size
// ceil(d/n), one per step; step s of a call uses iteration first_iteration + s. A rank can run at
// most n−1 steps ahead of its right neighbour, so the exchange needs lookahead >= n − 1.
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

class ring_allreduce {
 public:
  ring_allreduce(exchange& ex, int rank, int n);

  // Replaces data with the sum of every rank's data. Errors: the exchange's (a silent neighbour
  // names itself), or errc::corrupt when a chunk's size is not the agreed one.
  status sum(std::span<float> data, std::uint64_t first_iteration);

 private:
  std::span<float> chunk(std::span<float> data, int c) const;

  exchange& ex_;
  int rank_, n_;
  int left_, right_;
  std::vector<std::byte> payload_;
  std::vector<inbound_message> in_;
};

}  // namespace qgossip
