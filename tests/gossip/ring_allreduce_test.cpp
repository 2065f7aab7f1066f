// Ring all-reduce on rings of threads over the in-process transport: every rank ends with the sum,
// and with the same bits as every other rank.
#include "gossip/ring_allreduce.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "core/hash.hpp"
#include "gossip/inproc/transport.hpp"
#include "tests/gossip/spawn.hpp"

using namespace qgossip;
using namespace std::chrono_literals;
using test::ring_neighbours;
using test::spawn;

namespace {

std::vector<float> data_of(int rank, std::size_t d) {
  std::mt19937 gen(static_cast<unsigned>(rank) * 7919u + 1u);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(d);
  for (float& x : v) x = normal(gen) * static_cast<float>(rank + 1);
  return v;
}

}  // namespace

TEST_CASE("ring all-reduce: every rank gets the same sum, for sizes that do and do not divide by n") {
  for (int n : {2, 3, 5, 8}) {
    for (std::size_t d : {std::size_t{1}, std::size_t{7}, std::size_t{40}, std::size_t{1001}}) {
      CAPTURE(n);
      CAPTURE(d);
      inproc_network net(n);
      std::vector<inproc_transport> ends;
      for (int r = 0; r < n; ++r) ends.push_back(net.endpoint(r));
      constexpr std::uint64_t kCalls = 3;
      auto results = spawn(n, [&](int rank) -> std::pair<std::string, std::vector<float>> {
        exchange_options o;
        o.rank = rank;
        o.neighbours = ring_neighbours(rank, n);
        o.run_id = 7;
        o.first_deadline = o.round_deadline = 10s;
        o.lookahead = static_cast<std::uint64_t>(n);
        exchange ex(ends[static_cast<std::size_t>(rank)], o);
        ring_allreduce ar(ex, rank, n);
        std::vector<float> v;
        for (std::uint64_t call = 0; call < kCalls; ++call) {  // back to back, as training rounds run
          v = data_of(rank, d);
          if (status s = ar.sum(v, 1 + call * ring_allreduce_steps(n)); !s) return {s.to_string(), v};
        }
        CHECK(ex.stats().rounds == kCalls * ring_allreduce_steps(n));
        CHECK(ex.stats().rejected_total() == 0);
        return {"", v};
      });
      std::vector<double> expected(d, 0.0);
      for (int r = 0; r < n; ++r) {
        auto v = data_of(r, d);
        for (std::size_t i = 0; i < d; ++i) expected[i] += v[i];
      }
      for (int r = 0; r < n; ++r) {
        CAPTURE(r);
        const auto& [error, v] = results[static_cast<std::size_t>(r)];
        REQUIRE(error == "");
        CHECK(hash64(std::span<const float>(v)) == hash64(std::span<const float>(results[0].second)));
        // float sums of n values of magnitude <= ~4n: relative error well under 1e-5
        for (std::size_t i = 0; i < d; ++i) CHECK(v[i] == doctest::Approx(expected[i]).epsilon(1e-5).scale(n));
      }
    }
  }
}

TEST_CASE("ring all-reduce: a rank that never joins is named by the ranks waiting for it") {
  const int n = 3;
  inproc_network net(n);
  std::vector<inproc_transport> ends;
  for (int r = 0; r < n; ++r) ends.push_back(net.endpoint(r));
  auto results = spawn(2, [&](int rank) -> std::string {  // rank 2 never runs
    exchange_options o;
    o.rank = rank;
    o.neighbours = ring_neighbours(rank, n);
    o.run_id = 7;
    o.first_deadline = o.round_deadline = 300ms;
    o.lookahead = n;
    exchange ex(ends[static_cast<std::size_t>(rank)], o);
    ring_allreduce ar(ex, rank, n);
    std::vector<float> v(10, 1.0f);
    return ar.sum(v, 1).to_string();
  });
  CHECK(results[0].find("no message from rank 2") != std::string::npos);  // rank 0's left is rank 2
}

namespace {

// A test ring_codec that checks the coding contexts: each value's bits are XORed with a mask of
// (encoder rank, iteration, chunk, index), and the low 8 mantissa bits cleared (lossy). Decoding with
// any other context than the encoder's gives garbage, so an exact-enough sum proves every code was
// decoded with its encoder's rank and step, the forwarded full sums with their owner's.
class masking_codec final : public ring_codec {
 public:
  std::uint16_t id() const override { return 99; }
  std::uint32_t tag() const override { return 0x5eedu; }
  void encode(std::span<const float> v, std::uint32_t rank, std::uint64_t iteration, std::uint32_t chunk,
              std::vector<std::byte>& out) const override {
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      bits = (bits & ~0xffu) ^ mask(rank, iteration, chunk, i);
      const auto* b = reinterpret_cast<const std::byte*>(&bits);
      out.insert(out.end(), b, b + 4);
    }
  }
  status decode(std::span<const std::byte> in, std::uint32_t rank, std::uint64_t iteration, std::uint32_t chunk,
                std::span<float> out) const override {
    if (in.size() != 4 * out.size()) return status::error(errc::corrupt, "size");
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, in.data() + 4 * i, 4);
      bits ^= mask(rank, iteration, chunk, i);
      std::memcpy(&out[i], &bits, 4);
    }
    return status::ok();
  }

 private:
  static std::uint32_t mask(std::uint32_t rank, std::uint64_t iteration, std::uint32_t chunk, std::size_t i) {
    const std::uint64_t h = hash64(std::to_string(rank) + "/" + std::to_string(iteration) + "/" +
                                   std::to_string(chunk) + "/" + std::to_string(i));
    return static_cast<std::uint32_t>(h) & 0x7f0000ffu;  // sign kept, exponent and low bits scrambled
  }
};

}  // namespace

TEST_CASE("quantized ring all-reduce: every rank the same bits, each code decoded with its encoder's context") {
  const masking_codec codec;
  for (int n : {2, 3, 5}) {
    for (std::size_t d : {std::size_t{7}, std::size_t{1001}}) {
      CAPTURE(n);
      CAPTURE(d);
      inproc_network net(n);
      std::vector<inproc_transport> ends;
      for (int r = 0; r < n; ++r) ends.push_back(net.endpoint(r));
      auto results = spawn(n, [&](int rank) -> std::pair<std::string, std::vector<float>> {
        exchange_options o;
        o.rank = rank;
        o.neighbours = ring_neighbours(rank, n);
        o.run_id = 7;
        o.first_deadline = o.round_deadline = 10s;
        o.lookahead = static_cast<std::uint64_t>(n);
        exchange ex(ends[static_cast<std::size_t>(rank)], o);
        ring_allreduce ar(ex, rank, n, &codec);
        std::vector<float> v;
        for (std::uint64_t call = 0; call < 2; ++call) {
          v = data_of(rank, d);
          if (status s = ar.sum(v, 1 + call * ring_allreduce_steps(n)); !s) return {s.to_string(), v};
        }
        return {"", v};
      });
      std::vector<double> expected(d, 0.0);
      for (int r = 0; r < n; ++r) {
        auto v = data_of(r, d);
        for (std::size_t i = 0; i < d; ++i) expected[i] += v[i];
      }
      for (int r = 0; r < n; ++r) {
        CAPTURE(r);
        const auto& [error, v] = results[static_cast<std::size_t>(r)];
        REQUIRE(error == "");
        CHECK(hash64(std::span<const float>(v)) == hash64(std::span<const float>(results[0].second)));
        // n codings, each dropping 8 of 23 mantissa bits: relative error below n · 2^-15 of the
        // magnitudes summed (each <= ~4n), so 1e-3 · n bounds it with room.
        for (std::size_t i = 0; i < d; ++i) CHECK(v[i] == doctest::Approx(expected[i]).epsilon(1e-3).scale(4.0 * n));
      }
    }
  }
}
