#pragma once
// Test helpers for the gossip layer: run n ranks as threads (gloo style), build payloads whose
// bytes say who sent them for which round, so a mix-up cannot go unnoticed, and read back the train
// messages a peer received.
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "gossip/transport.hpp"
#include "gossip/wire.hpp"

namespace qgossip::test {

// Runs fn(rank) for rank = 0..n-1, each on its own thread; returns their results by rank. An
// exception thrown by any rank is rethrown here after every thread has finished.
template <class Fn>
auto spawn(int n, Fn fn) {
  using result = std::invoke_result_t<Fn&, int>;
  std::vector<result> results(static_cast<std::size_t>(n));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        try {
          results[static_cast<std::size_t>(r)] = fn(r);
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return results;
}

// Neighbours of rank on a ring of n, sorted and unique (n = 2: one neighbour; n = 3: complete).
inline std::vector<int> ring_neighbours(int rank, int n) {
  std::vector<int> nb;
  for (int p : {(rank + n - 1) % n, (rank + 1) % n})
    if (p != rank && (nb.empty() || nb.back() != p)) nb.push_back(p);
  if (nb.size() == 2 && nb[0] > nb[1]) std::swap(nb[0], nb[1]);
  return nb;
}

// Bytes determined by (sender, iteration, kind) and position.
inline std::vector<std::byte> pattern(int sender, std::uint64_t iteration, message_kind kind,
                                      std::size_t size) {
  std::vector<std::byte> v(size);
  const std::uint64_t seed = static_cast<std::uint64_t>(sender) * 0x9E3779B97F4A7C15ull +
                             iteration * 0xBF58476D1CE4E5B9ull +
                             static_cast<std::uint64_t>(kind) * 0x94D049BB133111EBull;
  for (std::size_t i = 0; i < size; ++i)
    v[i] = std::byte(static_cast<unsigned char>((seed >> (8 * (i % 8))) + i / 8));
  return v;
}

// The (iteration, skipped) of each message from `sender` of run `run_id` that `t` receives until it
// has been silent for 100 ms, each required to be a valid train message (asynchronous rounds that
// skip busy links: docs/algorithms.md, "A busy uplink").
inline std::vector<std::pair<std::uint64_t, std::uint16_t>> received_train(transport& t, std::uint64_t run_id,
                                                                           int sender) {
  wire_expectations e;
  const int from[1] = {sender};
  e.run_id = run_id;
  e.senders = from;
  e.max_payload_bytes = 1 << 20;
  std::vector<std::pair<std::uint64_t, std::uint16_t>> got;
  inbound_frames in;
  while (t.receive(transport_clock::now() + std::chrono::milliseconds(100), in).is_ok()) {
    wire_header h;
    REQUIRE(parse_header(in.header, in.payload, e, h).is_ok());
    REQUIRE(h.kind == message_kind::train);
    got.emplace_back(h.iteration, h.skipped);
  }
  return got;
}

}  // namespace qgossip::test
