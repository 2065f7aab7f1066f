// The contract of compressor.hpp, checked for every codec and a spread of parameters: deterministic
// encode, sizes, appending, deterministic decode, and a decoder that rejects truncated, oversized and
// damaged input without crashing (read like leveldb's log_test: one corruption per case).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "core/errors.hpp"

using namespace qgossip;

namespace {

const char* const kSpecs[] = {
    "identity",
    "qsgd",  // 8 bits, bucket 512, l2
    "qsgd:bits=4",
    "qsgd:bits=4,norm=max",
    "qsgd:levels=1,bucket=0",          // ternary, one bucket
    "qsgd:levels=100,bucket=7",        // 8-bit codes with unused values, odd buckets
    "qsgd:bits=5,bucket=33,norm=max",  // a general width
    "qsgd:bits=16,bucket=1000",
    "qsgd:levels=32,bucket=0,coding=elias",         // the paper's sparse coding, s = sqrt(1024)
    "qsgd:bits=4,bucket=33,norm=max,coding=elias",  // Elias-coded QSGDinf, odd buckets
    "nuqsgd",                                       // s = 3, bucket 8192
    "nuqsgd:s=1,bucket=0",
    "nuqsgd:s=8,bucket=33",
    "randsparse:p=0.1",               // Rice-coded positions
    "randsparse:p=0.7",               // bitmap positions
    "randk:ratio=0.01",               // positions from the context: only the values travel
    "randk:k=7,scaled=false",
    "topk:ratio=0.01",
    "topk:ratio=0.5",                 // bitmap positions
    "sign",                           // one scale for the vector
    "sign:bucket=100",
    "fp16",
    "bf16",
    "mcgq",                           // K = 1, run-length coded
    "mcgq:K=0.1",                     // sparse: long zero runs
    "mcgq:K=3,coding=dense",
    "dither:K=7",                     // one kappa for the vector
    "dither:K=1,bucket=512",
    "dither:K=300,bucket=100",        // 10-bit indices
};

std::vector<float> sample(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

std::vector<std::byte> encode(const compressor& c, const std::vector<float>& v, const codec_context& ctx) {
  std::vector<std::byte> out;
  c.encode(v, ctx, out);
  return out;
}

bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

TEST_CASE("encode is deterministic in (v, ctx) and sized by max_encoded_bytes") {
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    for (std::size_t n : {0u, 1u, 2u, 511u, 512u, 513u, 4097u}) {
      CAPTURE(n);
      const std::vector<float> v = sample(n, static_cast<std::uint32_t>(n));
      const codec_context ctx{.seed = 9, .rank = 2, .iteration = 40, .stream = 0};
      const std::vector<std::byte> a = encode(*c, v, ctx);
      CHECK(a == encode(*c, v, ctx));
      CHECK(a.size() <= c->max_encoded_bytes(n));  // exact for fixed-size codecs, a bound for variable-length ones
    }
  }
}

TEST_CASE("stochastic codecs draw fresh randomness per iteration, rank, seed and stream") {
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    const std::vector<float> v = sample(2048, 1);
    const codec_context base{.seed = 1, .rank = 0, .iteration = 5, .stream = 0};
    const std::vector<std::byte> a = encode(*c, v, base);
    codec_context it = base, rank = base, seed = base, stream = base;
    it.iteration = 6;
    rank.rank = 1;
    seed.seed = 2;
    stream.stream = 1;
    // Deterministic operators (identity, top-k, sign, the 16-bit casts) must ignore the context.
    const codec_id id = c->id();
    if (id == codec_id::identity || id == codec_id::topk || id == codec_id::sign || id == codec_id::fp16 ||
        id == codec_id::bf16) {
      CHECK(encode(*c, v, it) == a);
      CHECK(encode(*c, v, seed) == a);
    } else {
      CHECK(encode(*c, v, it) != a);
      CHECK(encode(*c, v, rank) != a);
      CHECK(encode(*c, v, seed) != a);
      CHECK(encode(*c, v, stream) != a);
    }
  }
}

TEST_CASE("encode appends and leaves earlier bytes alone") {
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    const std::vector<float> v = sample(1000, 3);
    const codec_context ctx{};
    const std::vector<std::byte> alone = encode(*c, v, ctx);
    std::vector<std::byte> out{std::byte{0xAA}, std::byte{0xBB}, std::byte{0xCC}};
    c->encode(v, ctx, out);
    REQUIRE(out.size() == 3 + alone.size());
    CHECK(out[0] == std::byte{0xAA});
    CHECK(out[2] == std::byte{0xCC});
    CHECK(std::equal(alone.begin(), alone.end(), out.begin() + 3));
  }
}

TEST_CASE("decode is deterministic: the same bytes give the same floats, bit for bit") {
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    const std::vector<float> v = sample(3000, 4);
    const codec_context ctx{.seed = 3, .rank = 1, .iteration = 2, .stream = 0};
    const std::vector<std::byte> bytes = encode(*c, v, ctx);
    std::vector<float> a(v.size()), b(v.size(), 123.0f);
    REQUIRE(c->decode(bytes, ctx, a).is_ok());
    REQUIRE(c->decode(bytes, ctx, b).is_ok());
    CHECK(std::memcmp(a.data(), b.data(), 4 * a.size()) == 0);
    // A receiver knows the sender's ctx from the header. Decoding must not depend on it, except where
    // shared randomness is regenerated from it (rand-k's positions, the dither).
    const bool shared_randomness = c->id() == codec_id::randk || c->id() == codec_id::dither;
    const codec_context other{.seed = 8, .rank = 7, .iteration = 6, .stream = 5};
    REQUIRE(c->decode(bytes, other, b).is_ok());
    CHECK((std::memcmp(a.data(), b.data(), 4 * a.size()) == 0) != shared_randomness);
  }
}

TEST_CASE("non-finite input is a broken invariant, and out is left as it was") {
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      std::vector<float> v = sample(600, 5);
      v[555] = bad;
      std::vector<std::byte> out{std::byte{1}};
      CHECK_THROWS_AS(c->encode(v, codec_context{}, out), invariant_error);
      CHECK(out.size() == 1);
    }
  }
}

TEST_CASE("decode rejects truncated and oversized payloads") {
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    const std::vector<float> v = sample(700, 6);
    const std::vector<std::byte> bytes = encode(*c, v, codec_context{});
    std::vector<float> out(v.size());
    for (std::size_t len = 0; len < bytes.size(); len += 1 + len / 8) {
      CAPTURE(len);
      const status st = c->decode(std::span(bytes).first(len), codec_context{}, out);
      CHECK(st.code() == errc::corrupt);
    }
    for (std::size_t extra : {1u, 3u, 4u, 100u}) {
      std::vector<std::byte> longer = bytes;
      longer.resize(bytes.size() + extra);
      CHECK(c->decode(longer, codec_context{}, out).code() == errc::corrupt);
    }
    // The right bytes for the wrong count.
    std::vector<float> fewer(v.size() - 1), more(v.size() + 1);
    CHECK(c->decode(bytes, codec_context{}, fewer).code() == errc::corrupt);
    CHECK(c->decode(bytes, codec_context{}, more).code() == errc::corrupt);
  }
}

TEST_CASE("random payloads: corrupt or finite, never a crash") {
  std::mt19937 gen(31337);
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    for (std::size_t n : {1u, 10u, 1000u}) {
      std::vector<float> out(n);
      for (int trial = 0; trial < 200; ++trial) {
        // Mostly exactly-sized payloads (they get past the size check), some of random size.
        std::size_t size = c->max_encoded_bytes(n);
        if (trial % 4 == 3) size = gen() % (2 * size + 8);
        std::vector<std::byte> junk(size);
        for (std::byte& b : junk) b = static_cast<std::byte>(gen());
        const status st = c->decode(junk, codec_context{}, out);
        if (st.is_ok()) {
          CHECK(size <= c->max_encoded_bytes(n));
          CHECK(all_finite(out));
        } else {
          CHECK(st.code() == errc::corrupt);
        }
      }
    }
  }
}

TEST_CASE("single bit flips: corrupt, or a finite decode") {
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    const std::vector<float> v = sample(100, 8);
    const std::vector<std::byte> bytes = encode(*c, v, codec_context{});
    std::vector<float> out(v.size());
    int rejected = 0;
    for (std::size_t bit = 0; bit < 8 * bytes.size(); ++bit) {
      std::vector<std::byte> flipped = bytes;
      flipped[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
      const status st = c->decode(flipped, codec_context{}, out);
      if (st.is_ok()) {
        CHECK(all_finite(out));
      } else {
        CHECK(st.code() == errc::corrupt);
        ++rejected;
      }
    }
    // A QSGD scale with its sign bit flipped is invalid, so some flips must be caught. (Identity's
    // small values cannot reach NaN/Inf with one flip: every flip is a valid, different float.)
    if (c->id() == codec_id::qsgd) CHECK(rejected > 0);
  }
}

TEST_CASE("validate says what decode says, and decode_add adds what decode writes, bit for bit") {
  std::mt19937 gen(4242);
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    const codec_context ctx{3, 1, 9, 0};
    const std::vector<float> v = sample(1000, 12);
    const std::vector<std::byte> bytes = encode(*c, v, ctx);
    std::vector<float> decoded(v.size());
    REQUIRE(c->decode(bytes, ctx, decoded).is_ok());
    CHECK(c->validate(bytes, ctx, v.size()).is_ok());
    std::vector<float> sum = sample(1000, 13), want = sum;
    for (std::size_t i = 0; i < want.size(); ++i) want[i] += decoded[i];
    c->decode_add(bytes, ctx, sum);
    CHECK(std::memcmp(sum.data(), want.data(), 4 * sum.size()) == 0);
    // Damaged payloads: the same verdict (and message) as decode's.
    for (int trial = 0; trial < 100; ++trial) {
      std::vector<std::byte> bad = bytes;
      if (trial % 5 == 4) bad.resize(gen() % (bytes.size() + 8));
      for (int k = 0; k < 3 && !bad.empty(); ++k) bad[gen() % bad.size()] = static_cast<std::byte>(gen());
      const status d = c->decode(bad, ctx, decoded), val = c->validate(bad, ctx, v.size());
      CHECK(d.is_ok() == val.is_ok());
      if (!d.is_ok()) CHECK(d.message() == val.message());
    }
  }
}

TEST_CASE("encode_difference gives encode(a - b)'s bytes") {
  for (const char* spec : kSpecs) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    const codec_context ctx{5, 2, 4, 0};
    const std::vector<float> a = sample(3001, 21), b = sample(3001, 22);
    std::vector<float> v(a.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = a[i] - b[i];
    std::vector<std::byte> out{std::byte{7}};  // it appends
    c->encode_difference(a, b, ctx, out);
    std::vector<std::byte> want{std::byte{7}};
    make_compressor(parse_codec_spec(spec))->encode(v, ctx, want);  // a fresh one: MCGQ keeps sender state
    CHECK(out == want);
  }
}
