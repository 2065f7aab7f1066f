#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based RNG. Output block = bijection(counter; key), so the i-th random number of a stream is
// computed directly from i, in any order, on any device. That is what lets the CPU and a GPU quantize
// a vector identically: both ask for the word of element i and get the same bits.
//
// Streams used by the codecs (frozen: changing any of this changes every encoding):
//   key     = words 0,1 of philox4x32_10({rank, stream, kKeyTag, 0}, {seed lo, seed hi})
//   counter = {block lo, block hi, iteration lo, iteration hi},   block = element / 4
//   element i uses word i % 4 of its block; uniform(i) = (word >> 8) * 2^-24, in [0, 1).
// Deriving the key through Philox itself keeps distinct (seed, rank, stream) triples from sharing a
// stream (no xor collisions), and leaves the fast-varying element index alone in counter word 0.
//
// Header-only and usable from CUDA device code (QG_HOST_DEVICE); everything is integer arithmetic
// plus one exact int->float conversion, so results are bit-identical everywhere.
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define QG_HOST_DEVICE __host__ __device__
#else
#define QG_HOST_DEVICE
#endif

namespace qgossip::kernels {

struct philox_key {
  std::uint32_t k0 = 0, k1 = 0;
};

struct philox_block {
  std::uint32_t w[4] = {0, 0, 0, 0};
};

inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
inline constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1
inline constexpr std::uint32_t kKeyTag = 0x71676f73u;    // "sogq": separates key derivation from use

// One Philox4x32 round on (x0..x3) with key (k0, k1). Plain scalars so loops over many counters
// vectorize (the 32x32->64 products map to vpmuludq).
QG_HOST_DEVICE inline void philox_round(std::uint32_t& x0, std::uint32_t& x1, std::uint32_t& x2,
                                        std::uint32_t& x3, std::uint32_t k0, std::uint32_t k1) {
  const std::uint64_t p0 = std::uint64_t{kPhiloxM0} * x0;
  const std::uint64_t p1 = std::uint64_t{kPhiloxM1} * x2;
  const std::uint32_t y0 = static_cast<std::uint32_t>(p1 >> 32) ^ x1 ^ k0;
  const std::uint32_t y1 = static_cast<std::uint32_t>(p1);
  const std::uint32_t y2 = static_cast<std::uint32_t>(p0 >> 32) ^ x3 ^ k1;
  const std::uint32_t y3 = static_cast<std::uint32_t>(p0);
  x0 = y0;
  x1 = y1;
  x2 = y2;
  x3 = y3;
}

// Philox4x32 with 10 rounds, exactly as Random123's philox4x32(ctr, key) (known-answer tested).
QG_HOST_DEVICE inline void philox4x32_10(std::uint32_t& x0, std::uint32_t& x1, std::uint32_t& x2,
                                         std::uint32_t& x3, philox_key key) {
  std::uint32_t k0 = key.k0, k1 = key.k1;
#if defined(__CUDACC__)
#pragma unroll
#else
#pragma GCC unroll 10
#endif
  for (int r = 0; r < 10; ++r) {
    philox_round(x0, x1, x2, x3, k0, k1);
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
}

QG_HOST_DEVICE inline philox_block philox4x32_10(philox_block ctr, philox_key key) {
  philox4x32_10(ctr.w[0], ctr.w[1], ctr.w[2], ctr.w[3], key);
  return ctr;
}

// A uniform float in [0, 1) from the top 24 bits of a word; exact (24-bit integer times 2^-24).
QG_HOST_DEVICE inline float uniform24(std::uint32_t word) { return static_cast<float>(word >> 8) * 0x1p-24f; }

// The random stream of one encode, keyed by (seed, rank, iteration, stream) and indexed by element.
struct philox_stream {
  philox_key key;
  std::uint32_t iter_lo = 0, iter_hi = 0;

  QG_HOST_DEVICE static philox_stream make(std::uint64_t seed, std::uint32_t rank, std::uint64_t iteration,
                                           std::uint32_t stream) {
    philox_block derive{{rank, stream, kKeyTag, 0u}};
    derive = philox4x32_10(
        derive, philox_key{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
    philox_stream s;
    s.key = philox_key{derive.w[0], derive.w[1]};
    s.iter_lo = static_cast<std::uint32_t>(iteration);
    s.iter_hi = static_cast<std::uint32_t>(iteration >> 32);
    return s;
  }

  // The four words of block b (elements 4b .. 4b+3).
  QG_HOST_DEVICE philox_block block(std::uint64_t b) const {
    return philox4x32_10(
        philox_block{{static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b >> 32), iter_lo, iter_hi}},
        key);
  }

  // The uniform of element i (scalar reference; bulk code uses philox_uniforms()).
  QG_HOST_DEVICE float uniform(std::uint64_t i) const { return uniform24(block(i / 4).w[i % 4]); }
};

}  // namespace qgossip::kernels
