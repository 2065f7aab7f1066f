// The empirical entropy counter, and compressor::entropy_bits_per_value: the default (entropy of
// the decoded floats' bit patterns) and the QSGD / NUQSGD overrides (entropy of their levels).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/entropy.hpp"
#include "core/errors.hpp"

using namespace qgossip;

namespace {

std::vector<float> gaussian(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

}  // namespace

TEST_CASE("entropy of known distributions") {
  symbol_histogram empty;
  CHECK(empty.count() == 0);
  CHECK(empty.entropy_bits_per_symbol() == 0.0);

  symbol_histogram constant;
  for (int i = 0; i < 100; ++i) constant.add(7);
  CHECK(constant.count() == 100);
  CHECK(constant.distinct() == 1);
  CHECK(constant.entropy_bits_per_symbol() == 0.0);

  symbol_histogram coin;
  for (int i = 0; i < 50; ++i) coin.add(i % 2);
  CHECK(coin.entropy_bits_per_symbol() == doctest::Approx(1.0).epsilon(1e-12));

  symbol_histogram four;  // uniform on 4 symbols, some far outside the flat array
  for (std::int64_t s : {std::int64_t{-1}, std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::min(),
                         std::int64_t{3000}})
    four.add(s, 25);
  CHECK(four.count() == 100);
  CHECK(four.distinct() == 4);
  CHECK(four.entropy_bits_per_symbol() == doctest::Approx(2.0).epsilon(1e-12));

  symbol_histogram skewed;  // {a: 1/2, b: 1/4, c: 1/4} -> 1.5 bits
  skewed.add(0, 2);
  skewed.add(-5);
  skewed.add(5000);
  CHECK(skewed.entropy_bits_per_symbol() == doctest::Approx(1.5).epsilon(1e-12));

  symbol_histogram p_third;  // {1/3, 2/3}: H = log2(3) - 2/3
  p_third.add(1);
  p_third.add(2, 2);
  CHECK(p_third.entropy_bits_per_symbol() == doctest::Approx(std::log2(3.0) - 2.0 / 3.0).epsilon(1e-12));
}

TEST_CASE("add(symbol, times) is add() repeated, and symbols in and out of the flat range count alike") {
  std::mt19937 gen(5);
  symbol_histogram one_by_one, batched, shifted;
  for (int i = 0; i < 5000; ++i) {
    const std::int64_t s = static_cast<std::int64_t>(gen() % 37) - 18;
    one_by_one.add(s);
    batched.add(s, 1);
    shifted.add(s * 1000003);  // the same distribution, every symbol but 0 out of the flat range
  }
  CHECK(one_by_one.entropy_bits_per_symbol() == batched.entropy_bits_per_symbol());
  CHECK(one_by_one.entropy_bits_per_symbol() == doctest::Approx(shifted.entropy_bits_per_symbol()).epsilon(1e-12));
  CHECK(one_by_one.distinct() == shifted.distinct());
  CHECK(one_by_one.entropy_bits_per_symbol() <= std::log2(37.0));
  CHECK(one_by_one.entropy_bits_per_symbol() > std::log2(37.0) - 0.02);  // near uniform with 5000 draws
}

TEST_CASE("default entropy_bits_per_value: the decoded floats' bit patterns") {
  const auto id = make_compressor(parse_codec_spec("identity"));
  const std::vector<float> v = {1.0f, 2.0f, 3.0f, 4.0f, 1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<std::byte> bytes;
  id->encode(v, codec_context{}, bytes);
  CHECK(id->entropy_bits_per_value(bytes, v.size(), codec_context{}) == doctest::Approx(2.0));
  // +0 and -0 are different bit patterns.
  const std::vector<float> zeros = {0.0f, -0.0f, 0.0f, -0.0f};
  bytes.clear();
  id->encode(zeros, codec_context{}, bytes);
  CHECK(id->entropy_bits_per_value(bytes, zeros.size(), codec_context{}) == doctest::Approx(1.0));
  CHECK(id->entropy_bits_per_value({}, 0, codec_context{}) == 0.0);
  // A payload that does not decode is a broken invariant of the caller.
  bytes.pop_back();
  CHECK_THROWS_AS((void)id->entropy_bits_per_value(bytes, zeros.size(), codec_context{}), invariant_error);
}

TEST_CASE("QSGD and NUQSGD report the entropy of their levels") {
  // With one bucket, decoded floats and levels correspond one to one (value = sign * level * step),
  // so the codec's level entropy must equal the default bit-pattern entropy exactly. With many
  // buckets the same level decodes to different floats, so the default can only be larger.
  const std::vector<float> v = gaussian(5000, 17);
  const codec_context ctx{.seed = 4, .rank = 1, .iteration = 9, .stream = 0};
  for (const char* one_bucket : {"qsgd:levels=7,bucket=0", "qsgd:levels=7,bucket=0,coding=elias",
                                 "qsgd:levels=1,bucket=0,norm=max", "nuqsgd:s=3,bucket=0", "nuqsgd:s=6,bucket=0"}) {
    CAPTURE(one_bucket);
    const auto c = make_compressor(parse_codec_spec(one_bucket));
    std::vector<std::byte> bytes;
    c->encode(v, ctx, bytes);
    const double own = c->entropy_bits_per_value(bytes, v.size(), ctx);
    CHECK(own > 0.1);  // not degenerate (NUQSGD s=3 on a gaussian: ~0.48 bits)
    CHECK(own == doctest::Approx(c->compressor::entropy_bits_per_value(bytes, v.size(), ctx)).epsilon(1e-12));
  }
  for (const char* many : {"qsgd:levels=7,bucket=64", "qsgd:levels=7,bucket=64,coding=elias", "nuqsgd:s=3,bucket=64"}) {
    CAPTURE(many);
    const auto c = make_compressor(parse_codec_spec(many));
    std::vector<std::byte> bytes;
    c->encode(v, ctx, bytes);
    const double own = c->entropy_bits_per_value(bytes, v.size(), ctx);
    CHECK(own < c->compressor::entropy_bits_per_value(bytes, v.size(), ctx));
    // Levels -s..s (QSGD, s = 7) or -(s+1)..s+1 (NUQSGD, s = 3): at most log2(15) resp. log2(9).
    CHECK(own <= std::log2(c->name() == "qsgd" ? 15.0 : 9.0) + 1e-12);
  }
  // Dense and Elias QSGD code the same levels for the same (v, ctx): same entropy.
  const auto dense = make_compressor(parse_codec_spec("qsgd:levels=15,bucket=128"));
  const auto elias = make_compressor(parse_codec_spec("qsgd:levels=15,bucket=128,coding=elias"));
  std::vector<std::byte> a, b;
  dense->encode(v, ctx, a);
  elias->encode(v, ctx, b);
  CHECK(dense->entropy_bits_per_value(a, v.size(), ctx) == elias->entropy_bits_per_value(b, v.size(), ctx));
}
