// The checkpoint file format (node/checkpoint/checkpoint_file.hpp), read like leveldb's log_test:
// the layout, then one corruption per case. Every truncation and every damaged byte is refused.
#include "node/checkpoint/checkpoint_file.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/crc32c.hpp"

using namespace qgossip;

namespace {

checkpoint small_checkpoint() {
  checkpoint ck;
  ck.run_id = 0x1122334455667788ull;
  ck.rank = 3;
  ck.round = 250;
  state_writer a;
  a.put_string("algorithm", "dcd");
  a.put_floats("x", std::vector<float>{1.0f, 2.0f, -3.0f});
  ck.add("algorithm", std::move(a));
  state_writer s;
  s.put_u64("batches_drawn", 250);
  ck.add("sampler", std::move(s));
  return ck;
}

std::uint64_t le(const std::vector<std::byte>& b, std::size_t at, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = n; i-- > 0;) v = (v << 8) | std::to_integer<std::uint64_t>(b[at + i]);
  return v;
}

}  // namespace

TEST_CASE("checkpoint file: the header layout, the sections and the CRC32C trailer") {
  const std::vector<std::byte> bytes = encode_checkpoint(small_checkpoint());
  REQUIRE(bytes.size() > kCheckpointHeaderBytes + kCheckpointTrailerBytes);
  CHECK(std::string(reinterpret_cast<const char*>(bytes.data()), 4) == "QGCK");
  CHECK(le(bytes, 4, 2) == kCheckpointVersion);
  CHECK(le(bytes, 6, 2) == 0);
  CHECK(le(bytes, 8, 8) == 0x1122334455667788ull);
  CHECK(le(bytes, 16, 4) == 3);
  CHECK(le(bytes, 20, 4) == 0);
  CHECK(le(bytes, 24, 8) == 250);
  CHECK(le(bytes, 32, 8) == bytes.size() - kCheckpointHeaderBytes - kCheckpointTrailerBytes);
  const std::size_t body = bytes.size() - 4;
  CHECK(le(bytes, body, 4) == crc32c(std::span<const std::byte>(bytes.data(), body)));
  // The payload is a state_io stream of one bytes field per section, the first named "algorithm".
  CHECK(std::to_integer<int>(bytes[40]) == 9);
  CHECK(std::string(reinterpret_cast<const char*>(bytes.data() + 41), 9) == "algorithm");
}

TEST_CASE("checkpoint file: decode gives back the header fields and every section") {
  const checkpoint ck = small_checkpoint();
  checkpoint back;
  REQUIRE(decode_checkpoint(encode_checkpoint(ck), back).is_ok());
  CHECK(back.run_id == ck.run_id);
  CHECK(back.rank == ck.rank);
  CHECK(back.round == ck.round);
  REQUIRE(back.sections.size() == 2);
  CHECK(back.sections[0].name == "algorithm");
  CHECK(back.sections[0].bytes == ck.sections[0].bytes);
  CHECK(back.sections[1].name == "sampler");
  CHECK(back.sections[1].bytes == ck.sections[1].bytes);
  state_reader r = back.reader("sampler", "ckpt-250.bin");
  CHECK(r.get_u64("batches_drawn") == 250);
  CHECK_THROWS_WITH_AS((void)back.reader("compressor", "ckpt-250.bin"),
                       doctest::Contains("ckpt-250.bin: no section 'compressor' (it has: algorithm, sampler)"),
                       state_error);
}

TEST_CASE("checkpoint file: an empty checkpoint (no sections) round-trips") {
  checkpoint ck;
  ck.round = 1;
  checkpoint back;
  REQUIRE(decode_checkpoint(encode_checkpoint(ck), back).is_ok());
  CHECK(back.sections.empty());
  CHECK(back.round == 1);
}

TEST_CASE("checkpoint file: truncation at every byte offset is detected") {
  const std::vector<std::byte> bytes = encode_checkpoint(small_checkpoint());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    CAPTURE(size);
    checkpoint out;
    const status st = decode_checkpoint(std::span<const std::byte>(bytes.data(), size), out);
    CHECK(st.code() == errc::corrupt);
  }
}

TEST_CASE("checkpoint file: a damaged byte anywhere is detected") {
  const std::vector<std::byte> bytes = encode_checkpoint(small_checkpoint());
  for (std::size_t at = 0; at < bytes.size(); ++at)
    for (const std::byte flip : {std::byte{0x01}, std::byte{0x80}, std::byte{0xff}}) {
      CAPTURE(at);
      std::vector<std::byte> damaged = bytes;
      damaged[at] ^= flip;
      checkpoint out;
      CHECK(decode_checkpoint(damaged, out).code() == errc::corrupt);
    }
}

TEST_CASE("checkpoint file: each header check says what is wrong") {
  const std::vector<std::byte> good = encode_checkpoint(small_checkpoint());
  checkpoint out;
  std::vector<std::byte> magic = good;
  magic[0] = std::byte{'X'};
  CHECK(decode_checkpoint(magic, out).message().find("magic") != std::string::npos);
  std::vector<std::byte> version = good;
  version[4] = std::byte{9};
  CHECK(decode_checkpoint(version, out).message().find("format version 9") != std::string::npos);
  std::vector<std::byte> extended = good;
  extended.push_back(std::byte{0});
  CHECK(decode_checkpoint(extended, out).message().find("truncated or extended") != std::string::npos);
  std::vector<std::byte> flipped = good;
  flipped[50] ^= std::byte{1};
  CHECK(decode_checkpoint(flipped, out).message().find("checksum mismatch") != std::string::npos);
  CHECK(decode_checkpoint(std::span<const std::byte>(good.data(), 10), out).message().find("truncated") !=
        std::string::npos);
}
