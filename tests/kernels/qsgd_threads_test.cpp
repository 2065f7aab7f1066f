// The QSGD kernels split over a work_pool (core/work_pool.hpp): the bytes of an encode and the floats
// of a decode are the same on any number of threads, for layouts whose buckets end mid-byte, and a
// decoder's fault is the one the unsplit decoder reports (the first in the vector's order).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/work_pool.hpp"
#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/qsgd.hpp"

using namespace qgossip;
using namespace qgossip::kernels;

namespace {

std::vector<float> gaussian(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

std::vector<std::byte> encode_on(work_pool* pool, const std::vector<float>& v, const qsgd_layout& L) {
  const work_pool::use threads(pool);
  std::vector<std::byte> out(L.encoded_bytes(v.size()));
  REQUIRE(qsgd_encode(v, L, philox_stream::make(7, 3, 11, 0), out));
  return out;
}

qsgd_decode_result decode_on(work_pool* pool, const std::vector<std::byte>& in, const qsgd_layout& L,
                             std::vector<float>& out) {
  const work_pool::use threads(pool);
  return qsgd_decode(in, L, out);
}

// Several pieces of kElementGrain values, and a ragged end.
constexpr std::size_t kN = 3 * kElementGrain + 4321;

}  // namespace

TEST_CASE("an encode and a decode are the same bits on 1, 2, 3 and 8 threads") {
  work_pool one(1), two(2), three(3), eight(8);
  const std::vector<float> v = gaussian(kN, 5);
  for (std::uint32_t levels : {3u, 7u, 127u}) {
    // Buckets of 3 and 127 values with 3-bit codes end mid-byte: a piece is then 8 of them.
    for (std::size_t bucket : {1u, 3u, 127u, 128u, 512u, 0u}) {
      CAPTURE(levels);
      CAPTURE(bucket);
      const qsgd_layout L{levels, bucket, qsgd_norm::max};
      const std::vector<std::byte> want = encode_on(nullptr, v, L);
      std::vector<float> want_out(kN);
      REQUIRE(decode_on(nullptr, want, L, want_out).ok());
      for (work_pool* pool : {&one, &two, &three, &eight}) {
        CAPTURE(pool->threads());
        CHECK(encode_on(pool, v, L) == want);
        std::vector<float> out(kN, -1.0f);
        REQUIRE(decode_on(pool, want, L, out).ok());
        CHECK(std::memcmp(out.data(), want_out.data(), kN * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("split: a non-finite value in a later piece is refused") {
  work_pool pool(4);
  const qsgd_layout L{3, 128, qsgd_norm::l2};
  std::vector<float> v = gaussian(kN, 6);
  v[kN - 10] = std::numeric_limits<float>::infinity();
  const work_pool::use threads(&pool);
  std::vector<std::byte> out(L.encoded_bytes(kN));
  CHECK_FALSE(qsgd_encode(v, L, philox_stream::make(1, 0, 0, 0), out));
}

TEST_CASE("split: the first fault in the vector's order is reported, whichever piece ends first") {
  work_pool pool(4);
  const qsgd_layout L{100, 512, qsgd_norm::l2};  // 8-bit codes: element k's code is byte scales + k
  const std::vector<float> v = gaussian(kN, 7);
  const std::vector<std::byte> good = encode_on(&pool, v, L);
  const std::size_t scales = 4 * L.bucket_count(kN);
  const std::size_t late_bucket = 2 * kElementGrain / 512 + 3, early_element = kElementGrain + 17;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out(kN);

  std::vector<std::byte> b = good;
  std::memcpy(b.data() + 4 * late_bucket, &nan, 4);  // a scale in the third piece
  b[scales + early_element] = std::byte{0x80};       // the sign bit on level 0, in the second
  for (work_pool* p : {static_cast<work_pool*>(nullptr), &pool}) {
    const qsgd_decode_result r = decode_on(p, b, L, out);
    CHECK(r.fault == qsgd_fault::code);
    CHECK(r.index == early_element);
  }
  b = good;
  std::memcpy(b.data() + 4 * (early_element / 512), &nan, 4);  // the second piece's scale
  b[scales + 2 * kElementGrain + 5] = std::byte{0x80};         // a code of the third
  for (work_pool* p : {static_cast<work_pool*>(nullptr), &pool}) {
    const qsgd_decode_result r = decode_on(p, b, L, out);
    CHECK(r.fault == qsgd_fault::scale);
    CHECK(r.index == early_element / 512);
  }
  const qsgd_layout L3{3, 3, qsgd_norm::max};  // 3-bit codes, padding in the last byte
  b = encode_on(&pool, v, L3);
  b.back() |= std::byte{0x80};
  CHECK(decode_on(&pool, b, L3, out).fault == qsgd_fault::padding);
  CHECK(decode_on(nullptr, b, L3, out).fault == qsgd_fault::padding);
}

TEST_CASE("validate and decode_add, split: the same verdicts and the same sums as decode") {
  work_pool pool(3);
  const qsgd_layout L{3, 127, qsgd_norm::max};
  const std::vector<float> v = gaussian(kN, 8), base = gaussian(kN, 9);
  const std::vector<std::byte> bytes = encode_on(&pool, v, L);
  std::vector<float> decoded(kN);
  REQUIRE(decode_on(nullptr, bytes, L, decoded).ok());
  std::vector<float> want = base;
  for (std::size_t i = 0; i < kN; ++i) want[i] += decoded[i];
  for (work_pool* p : {static_cast<work_pool*>(nullptr), &pool}) {
    const work_pool::use threads(p);
    CHECK(qsgd_validate(bytes, L, kN).ok());
    std::vector<float> sum = base;
    qsgd_decode_add(bytes, L, sum);
    CHECK(std::memcmp(sum.data(), want.data(), kN * sizeof(float)) == 0);
    std::vector<std::byte> bad = bytes;
    bad.back() |= std::byte{0x80};  // padding
    CHECK(qsgd_validate(bad, L, kN).fault == qsgd_fault::padding);
    CHECK(qsgd_validate(std::span(bytes).first(bytes.size() - 1), L, kN).fault == qsgd_fault::size);
  }
}
