// Philox4x32-10 against Random123's known-answer vectors (kat_vectors, philox4x32 10), the keyed
// stream's derivation, and the bulk generators against the scalar reference, path by path.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/uniforms.hpp"

using namespace qgossip::kernels;

namespace {

philox_block run(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3, std::uint32_t k0,
                 std::uint32_t k1) {
  return philox4x32_10(philox_block{{c0, c1, c2, c3}}, philox_key{k0, k1});
}

void check_block(const philox_block& got, std::uint32_t w0, std::uint32_t w1, std::uint32_t w2,
                 std::uint32_t w3) {
  CHECK(got.w[0] == w0);
  CHECK(got.w[1] == w1);
  CHECK(got.w[2] == w2);
  CHECK(got.w[3] == w3);
}

}  // namespace

TEST_CASE("philox4x32-10 matches the Random123 known-answer vectors") {
  // counter words, key words -> output words, as in Random123's kat_vectors file.
  check_block(run(0, 0, 0, 0, 0, 0), 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
  check_block(run(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), 0x408f276d,
              0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
  check_block(run(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0), 0xd16cfe09,
              0x94fdcceb, 0x5001e420, 0x24126ea1);
}

TEST_CASE("uniform24 maps words into [0, 1) with 24-bit resolution") {
  CHECK(uniform24(0) == 0.0f);
  CHECK(uniform24(0xff) == 0.0f);  // the low 8 bits are dropped
  CHECK(uniform24(0x100) == 0x1p-24f);
  CHECK(uniform24(0x80000000u) == 0.5f);
  CHECK(uniform24(0xffffffffu) == 1.0f - 0x1p-24f);
  CHECK(uniform24(0xffffffffu) < 1.0f);
}

TEST_CASE("the stream is indexed by element: word i % 4 of block i / 4, counter = (block, iteration)") {
  const philox_stream s = philox_stream::make(0x1234567890abcdefull, 3, 0x100000007ull, 2);
  const philox_block derived = run(3, 2, kKeyTag, 0, 0x90abcdef, 0x12345678);
  CHECK(s.key.k0 == derived.w[0]);
  CHECK(s.key.k1 == derived.w[1]);
  for (std::uint64_t block : {0ull, 1ull, 77ull, 0x1'0000'0002ull}) {
    const philox_block w = run(static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 7,
                               1, s.key.k0, s.key.k1);
    for (int k = 0; k < 4; ++k) CHECK(s.uniform(4 * block + k) == uniform24(w.w[k]));
  }
}

TEST_CASE("streams differ in every key field") {
  // The first 64 uniforms of each stream, as a fingerprint; all 5 must be distinct.
  auto fingerprint = [](const philox_stream& s) {
    std::vector<float> u(64);
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = s.uniform(i);
    return u;
  };
  std::set<std::vector<float>> seen;
  seen.insert(fingerprint(philox_stream::make(1, 0, 0, 0)));
  seen.insert(fingerprint(philox_stream::make(2, 0, 0, 0)));
  seen.insert(fingerprint(philox_stream::make(1, 1, 0, 0)));
  seen.insert(fingerprint(philox_stream::make(1, 0, 1, 0)));
  seen.insert(fingerprint(philox_stream::make(1, 0, 0, 1)));
  // Seeds that differ only in the high word, and rank/stream swapped, must differ too.
  seen.insert(fingerprint(philox_stream::make(1ull << 32, 0, 0, 0)));
  seen.insert(fingerprint(philox_stream::make(0, 1, 0, 0)));
  seen.insert(fingerprint(philox_stream::make(0, 0, 0, 1)));
  CHECK(seen.size() == 8);
}

TEST_CASE("bulk uniforms equal the scalar stream on every SIMD path, at any offset and length") {
  const philox_stream s = philox_stream::make(42, 5, 9, 1);
  for (simd_level simd : {simd_level::portable, simd_level::avx2, simd_level::avx512}) {
    if (!simd_supported(simd)) {
      MESSAGE("SIMD level " << to_string(simd) << " not available on this CPU/build; skipped");
      continue;
    }
    CAPTURE(to_string(simd));
    for (std::uint64_t first : {0ull, 1ull, 3ull, 4ull, 517ull, 4ull * 0xfffffff0ull}) {
      for (std::size_t len : {0u, 1u, 5u, 63u, 64u, 65u, 128u, 300u, 1024u}) {
        std::vector<float> got(len);
        philox_uniforms(simd, s, first, got);
        for (std::size_t k = 0; k < len; ++k) {
          if (got[k] != s.uniform(first + k)) {
            FAIL_CHECK("first=" << first << " len=" << len << " k=" << k);
            break;
          }
        }
      }
    }
  }
  // The default entry point uses the best path.
  std::vector<float> a(1000), b(1000);
  philox_uniforms(s, 11, a);
  philox_uniforms(simd_level::portable, s, 11, b);
  CHECK(a == b);
}

TEST_CASE("uniforms look uniform: mean and variance of 2^20 draws") {
  // Mean of N = 2^20 U[0,1) draws has sd 1/sqrt(12 N) = 2.8e-4, the sample variance sd
  // sqrt((1/80 - 1/144) / N) = 7.3e-5; the bounds 2e-3 and 5e-4 are 7 sd, so a correct generator fails
  // with probability < 1e-11 (and the seed is fixed anyway).
  const philox_stream s = philox_stream::make(7, 0, 0, 0);
  std::vector<float> u(1u << 20);
  philox_uniforms(s, 0, u);
  double sum = 0, sum2 = 0;
  float lo = 1, hi = 0;
  for (float x : u) {
    sum += x;
    sum2 += double(x) * x;
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  const double mean = sum / u.size();
  CHECK(std::abs(mean - 0.5) < 2e-3);
  CHECK(std::abs(sum2 / u.size() - mean * mean - 1.0 / 12) < 5e-4);
  CHECK(lo >= 0.0f);
  CHECK(hi < 1.0f);
}
