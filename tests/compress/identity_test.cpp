// identity: raw little-endian float32, exact round trip.
#include <doctest/doctest.h>

#include <cfloat>
#include <cstring>
#include <limits>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/identity.hpp"

using namespace qgossip;

TEST_CASE("identity round-trips every finite float exactly, -0 and subnormals included") {
  const auto c = make_compressor(parse_codec_spec("identity"));
  CHECK(c->id() == codec_id::identity);
  CHECK(c->unbiased());
  CHECK(c->relative_error_bound(1000) == 0.0);
  const std::vector<float> v{0.0f, -0.0f, 1.0f, -1.5f, FLT_MAX, -FLT_MAX, FLT_MIN, 1e-45f, -3e-41f, 0.1f};
  std::vector<std::byte> bytes;
  c->encode(v, codec_context{}, bytes);
  REQUIRE(bytes.size() == 4 * v.size());
  CHECK(std::memcmp(bytes.data(), v.data(), bytes.size()) == 0);  // raw float32 (little-endian host)
  std::vector<float> out(v.size());
  REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
  CHECK(std::memcmp(out.data(), v.data(), 4 * v.size()) == 0);
}

TEST_CASE("identity golden bytes: little-endian IEEE single precision") {
  const auto c = make_compressor(parse_codec_spec("identity"));
  std::vector<std::byte> bytes;
  c->encode(std::vector<float>{1.0f, -2.0f}, codec_context{}, bytes);
  const std::vector<std::byte> want{std::byte{0x00}, std::byte{0x00}, std::byte{0x80}, std::byte{0x3f},
                                    std::byte{0x00}, std::byte{0x00}, std::byte{0x00}, std::byte{0xc0}};
  CHECK(bytes == want);
}

TEST_CASE("identity decode rejects NaN and Inf in the payload, naming the index") {
  const auto c = make_compressor(parse_codec_spec("identity"));
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> v(1000, 0.5f);
    v[777] = bad;
    std::vector<std::byte> bytes(4 * v.size());
    std::memcpy(bytes.data(), v.data(), bytes.size());
    std::vector<float> out(v.size());
    const status st = c->decode(bytes, codec_context{}, out);
    CHECK(st.code() == errc::corrupt);
    CHECK(st.message().find("index 777") != std::string::npos);
  }
}
