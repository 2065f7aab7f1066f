// A state cut into chunks and put together again (gossip/exchange/state_chunks.hpp): every size
// against every chunk size comes back byte for byte, each chunk within its bound; a chunk damaged
// under its own framing, lost, repeated, out of order, of another round or past a bound refuses
// the state, naming why.
#include "gossip/exchange/state_chunks.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace qgossip;

namespace {

std::vector<std::byte> state_of(std::size_t n) {
  std::vector<std::byte> s(n);
  for (std::size_t i = 0; i < n; ++i) s[i] = std::byte(static_cast<unsigned char>(i * 131 + 7));
  return s;
}

std::vector<std::vector<std::byte>> chunks_of(const std::vector<std::byte>& state, std::size_t max_chunk) {
  std::vector<std::vector<std::byte>> out;
  const status s = send_chunks(state, max_chunk, [&](std::span<const std::byte> p) {
    out.emplace_back(p.begin(), p.end());
    return status::ok();
  });
  REQUIRE(s.is_ok());
  return out;
}

status add_all(state_assembly& a, const std::vector<std::vector<std::byte>>& chunks, std::uint64_t iteration = 5) {
  for (const auto& c : chunks)
    if (status s = a.add(iteration, c, 1 << 20); !s) return s;
  return status::ok();
}

}  // namespace

TEST_CASE("state chunks: every size against every chunk size comes back byte for byte") {
  for (std::size_t n : {0, 1, 7, 8, 24, 100, 1000}) {
    for (std::size_t max_chunk : {1, 3, 8, 100, 4096}) {
      CAPTURE(n);
      CAPTURE(max_chunk);
      const auto state = state_of(n);
      const auto chunks = chunks_of(state, max_chunk);
      CHECK(chunks.size() == chunk_count(n, max_chunk));
      for (const auto& c : chunks) CHECK(c.size() <= kChunkHeaderBytes + max_chunk);
      state_assembly a;
      for (std::size_t i = 0; i < chunks.size(); ++i) {
        CHECK_FALSE(a.complete());
        REQUIRE(a.add(9, chunks[i], 1 << 20).is_ok());
      }
      REQUIRE(a.complete());
      CHECK(a.take() == state);
      CHECK_FALSE(a.complete());
    }
  }
}

TEST_CASE("state chunks: a damaged, lost, repeated or foreign chunk refuses the state") {
  const auto state = state_of(100);
  const auto chunks = chunks_of(state, 30);  // 4 chunks
  REQUIRE(chunks.size() == 4);
  state_assembly a;
  SUBCASE("a byte of the state changed (its own checksum would hold): the hash at the end") {
    auto bad = chunks;
    bad[2][kChunkHeaderBytes + 5] ^= std::byte{0x01};
    const status s = add_all(a, bad);
    CHECK(s.code() == errc::corrupt);
    CHECK(s.message().find("whose hash is") != std::string::npos);
    CHECK_FALSE(a.complete());
  }
  SUBCASE("a chunk lost") {
    auto lost = chunks;
    lost.erase(lost.begin() + 1);
    const status s = add_all(a, lost);
    CHECK(s.message().find("a chunk at byte 60 of a state of round 5, expected byte 30") != std::string::npos);
  }
  SUBCASE("a chunk repeated") {
    auto twice = chunks;
    twice.insert(twice.begin() + 2, chunks[1]);
    CHECK(add_all(a, twice).code() == errc::corrupt);
  }
  SUBCASE("a chunk of another round") {
    REQUIRE(a.add(5, chunks[0], 1 << 20).is_ok());
    CHECK(a.add(6, chunks[1], 1 << 20).code() == errc::corrupt);
  }
  SUBCASE("no state started") {
    const status s = a.add(5, chunks[1], 1 << 20);
    CHECK(s.message().find("with no state started") != std::string::npos);
  }
  SUBCASE("a state above the bound, a payload shorter than the chunk header") {
    CHECK(a.add(5, chunks[0], 99).message().find("a state of 100 bytes, expected at most 99") != std::string::npos);
    CHECK(a.add(5, std::span(chunks[0]).first(23), 1 << 20).code() == errc::corrupt);
  }
  SUBCASE("a chunk past the state's end") {
    auto longer = chunks;
    longer[3].push_back(std::byte{0});
    CHECK(add_all(a, longer).message().find("a chunk of 11 bytes at byte 90 of a state of 100") != std::string::npos);
  }
  SUBCASE("a new state from byte 0 gives up the unfinished one, and completes") {
    REQUIRE(a.add(5, chunks[0], 1 << 20).is_ok());
    REQUIRE(add_all(a, chunks, 6).is_ok());
    REQUIRE(a.complete());
    CHECK(a.take() == state);
  }
  // After a refusal the assembly takes a whole state again.
  REQUIRE(add_all(a, chunks).is_ok());
  CHECK(a.take() == state);
}
