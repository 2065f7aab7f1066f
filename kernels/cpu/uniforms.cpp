#include "kernels/cpu/uniforms.hpp"

#include "core/errors.hpp"
#include "kernels/cpu/simd.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace qgossip::kernels {
namespace {

// Uniforms of whole blocks b0 .. b0+count-1 into out[0 .. 4*count), the portable way.
void fill_blocks_scalar(const philox_stream& s, std::uint64_t b0, std::size_t count, float* out) {
  for (std::size_t j = 0; j < count; ++j) {
    const philox_block w = s.block(b0 + j);
    for (int k = 0; k < 4; ++k) out[4 * j + k] = uniform24(w.w[k]);
  }
}

#if defined(__AVX2__)
// Eight Philox counters per register, structure-of-arrays: x_k holds word k of blocks b..b+7.
// GCC's auto-vectorization of the scalar loop reaches only ~40% of this (it shuffles 64-bit products
// poorly); the integer ops are exact, so this is bit-identical to the scalar path.
struct lanes8 {
  __m256i x0, x1, x2, x3;
};

inline void mulhilo(__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
  const __m256i even = _mm256_mul_epu32(a, m);                             // lanes 0,2,4,6 as 64-bit
  const __m256i odd = _mm256_mul_epu32(_mm256_shuffle_epi32(a, 0xF5), m);  // lanes 1,3,5,7
  hi = _mm256_blend_epi32(_mm256_shuffle_epi32(even, 0xF5), odd, 0xAA);
  lo = _mm256_blend_epi32(even, _mm256_shuffle_epi32(odd, 0xA0), 0xAA);
}

// One round on two independent groups (16 counters) to hide the multiply latency.
inline void round16(lanes8& a, lanes8& b, __m256i k0, __m256i k1) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kPhiloxM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kPhiloxM1));
  __m256i ahi0, alo0, ahi1, alo1, bhi0, blo0, bhi1, blo1;
  mulhilo(a.x0, m0, ahi0, alo0);
  mulhilo(a.x2, m1, ahi1, alo1);
  mulhilo(b.x0, m0, bhi0, blo0);
  mulhilo(b.x2, m1, bhi1, blo1);
  a.x0 = _mm256_xor_si256(_mm256_xor_si256(ahi1, a.x1), k0);
  a.x1 = alo1;
  a.x2 = _mm256_xor_si256(_mm256_xor_si256(ahi0, a.x3), k1);
  a.x3 = alo0;
  b.x0 = _mm256_xor_si256(_mm256_xor_si256(bhi1, b.x1), k0);
  b.x1 = blo1;
  b.x2 = _mm256_xor_si256(_mm256_xor_si256(bhi0, b.x3), k1);
  b.x3 = blo0;
}

inline __m256 to_unit(__m256i w) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w, 8)), _mm256_set1_ps(0x1p-24f));
}

// Transposes words (x0..x3 of blocks 0..7) into block order: out = b0w0 b0w1 b0w2 b0w3 b1w0 ...
inline void store_blocks(const lanes8& a, float* out) {
  const __m256 f0 = to_unit(a.x0), f1 = to_unit(a.x1), f2 = to_unit(a.x2), f3 = to_unit(a.x3);
  const __m256d t0 = _mm256_castps_pd(_mm256_unpacklo_ps(f0, f1));
  const __m256d t1 = _mm256_castps_pd(_mm256_unpackhi_ps(f0, f1));
  const __m256d t2 = _mm256_castps_pd(_mm256_unpacklo_ps(f2, f3));
  const __m256d t3 = _mm256_castps_pd(_mm256_unpackhi_ps(f2, f3));
  const __m256 r0 = _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t2));  // blocks 0 | 4
  const __m256 r1 = _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t2));  // blocks 1 | 5
  const __m256 r2 = _mm256_castpd_ps(_mm256_unpacklo_pd(t1, t3));  // blocks 2 | 6
  const __m256 r3 = _mm256_castpd_ps(_mm256_unpackhi_pd(t1, t3));  // blocks 3 | 7
  _mm256_storeu_ps(out + 0, _mm256_permute2f128_ps(r0, r1, 0x20));
  _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(r2, r3, 0x20));
  _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(r0, r1, 0x31));
  _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(r2, r3, 0x31));
}

void fill_blocks_avx2(const philox_stream& s, std::uint64_t b0, std::size_t count, float* out) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  std::size_t j = 0;
  for (; j + 16 <= count; j += 16) {
    const std::uint64_t b = b0 + j;
    // Counter word 0 is the low half of the block index; a group must not carry into word 1.
    if (static_cast<std::uint32_t>(b) > 0xffffffffu - 15) break;
    lanes8 a, c;
    a.x0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(b))), iota);
    c.x0 = _mm256_add_epi32(a.x0, _mm256_set1_epi32(8));
    a.x1 = c.x1 = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(b >> 32)));
    a.x2 = c.x2 = _mm256_set1_epi32(static_cast<int>(s.iter_lo));
    a.x3 = c.x3 = _mm256_set1_epi32(static_cast<int>(s.iter_hi));
    std::uint32_t k0 = s.key.k0, k1 = s.key.k1;
    for (int r = 0; r < 10; ++r) {
      round16(a, c, _mm256_set1_epi32(static_cast<int>(k0)), _mm256_set1_epi32(static_cast<int>(k1)));
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    store_blocks(a, out + 4 * j);
    store_blocks(c, out + 4 * j + 32);
  }
  fill_blocks_scalar(s, b0 + j, count - j, out + 4 * j);
}
#endif  // __AVX2__

#if defined(QG_HAVE_AVX512_CLONES)
// AVX-512 twin of the above, 16 counters per register, chosen at run time on CPUs that have it (the
// build targets x86-64-v3). Roughly twice the AVX2 rate: vpermt2d recombines the 64-bit products in
// one shuffle and vpternlogd does the three-way xor.
#define QG_AVX512 QG_TARGET_AVX512
// GCC 12 warns inside its own AVX-512 headers (the _mm512_undefined_* idiom; GCC bug 105593).
#pragma GCC diagnostic push
#if !defined(__clang__)  // clang has no such warning (and warns about the unknown group)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

struct lanes16 {
  __m512i x0, x1, x2, x3;
};

QG_AVX512 inline void mulhilo16(__m512i a, __m512i m, __m512i idx_hi, __m512i idx_lo, __m512i& hi,
                                __m512i& lo) {
  const __m512i even = _mm512_mul_epu32(a, m);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  hi = _mm512_permutex2var_epi32(even, idx_hi, odd);
  lo = _mm512_permutex2var_epi32(even, idx_lo, odd);
}

QG_AVX512 inline __m512 to_unit16(__m512i w) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w, 8)), _mm512_set1_ps(0x1p-24f));
}

QG_AVX512 inline void store_blocks16(const lanes16& a, float* out) {
  const __m512 f0 = to_unit16(a.x0), f1 = to_unit16(a.x1), f2 = to_unit16(a.x2), f3 = to_unit16(a.x3);
  const __m512d t0 = _mm512_castps_pd(_mm512_unpacklo_ps(f0, f1));
  const __m512d t1 = _mm512_castps_pd(_mm512_unpackhi_ps(f0, f1));
  const __m512d t2 = _mm512_castps_pd(_mm512_unpacklo_ps(f2, f3));
  const __m512d t3 = _mm512_castps_pd(_mm512_unpackhi_ps(f2, f3));
  // 128-bit lane k of r_j holds block 4k + j.
  const __m512 r0 = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
  const __m512 r1 = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
  const __m512 r2 = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
  const __m512 r3 = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  const __m512 a01 = _mm512_shuffle_f32x4(r0, r1, 0x88);             // blocks 0 8 1 9
  const __m512 a23 = _mm512_shuffle_f32x4(r2, r3, 0x88);             // blocks 2 10 3 11
  const __m512 c01 = _mm512_shuffle_f32x4(r0, r1, 0xDD);             // blocks 4 12 5 13
  const __m512 c23 = _mm512_shuffle_f32x4(r2, r3, 0xDD);             // blocks 6 14 7 15
  _mm512_storeu_ps(out + 0, _mm512_shuffle_f32x4(a01, a23, 0x88));   // blocks 0..3
  _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(c01, c23, 0x88));  // blocks 4..7
  _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(a01, a23, 0xDD));  // blocks 8..11
  _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(c01, c23, 0xDD));  // blocks 12..15
}

QG_AVX512 void fill_blocks_avx512(const philox_stream& s, std::uint64_t b0, std::size_t count, float* out) {
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i idx_hi = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  const __m512i idx_lo = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(kPhiloxM0));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(kPhiloxM1));
  std::size_t j = 0;
  for (; j + 32 <= count; j += 32) {
    const std::uint64_t b = b0 + j;
    if (static_cast<std::uint32_t>(b) > 0xffffffffu - 31) break;  // no carry into counter word 1
    lanes16 a, c;
    a.x0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(b))), iota);
    c.x0 = _mm512_add_epi32(a.x0, _mm512_set1_epi32(16));
    a.x1 = c.x1 = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(b >> 32)));
    a.x2 = c.x2 = _mm512_set1_epi32(static_cast<int>(s.iter_lo));
    a.x3 = c.x3 = _mm512_set1_epi32(static_cast<int>(s.iter_hi));
    std::uint32_t k0 = s.key.k0, k1 = s.key.k1;
    for (int r = 0; r < 10; ++r) {
      const __m512i vk0 = _mm512_set1_epi32(static_cast<int>(k0)),
                    vk1 = _mm512_set1_epi32(static_cast<int>(k1));
      __m512i ahi0, alo0, ahi1, alo1, chi0, clo0, chi1, clo1;
      mulhilo16(a.x0, m0, idx_hi, idx_lo, ahi0, alo0);
      mulhilo16(a.x2, m1, idx_hi, idx_lo, ahi1, alo1);
      mulhilo16(c.x0, m0, idx_hi, idx_lo, chi0, clo0);
      mulhilo16(c.x2, m1, idx_hi, idx_lo, chi1, clo1);
      a.x0 = _mm512_ternarylogic_epi32(ahi1, a.x1, vk0, 0x96);  // three-way xor
      a.x1 = alo1;
      a.x2 = _mm512_ternarylogic_epi32(ahi0, a.x3, vk1, 0x96);
      a.x3 = alo0;
      c.x0 = _mm512_ternarylogic_epi32(chi1, c.x1, vk0, 0x96);
      c.x1 = clo1;
      c.x2 = _mm512_ternarylogic_epi32(chi0, c.x3, vk1, 0x96);
      c.x3 = clo0;
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    store_blocks16(a, out + 4 * j);
    store_blocks16(c, out + 4 * j + 64);
  }
  fill_blocks_scalar(s, b0 + j, count - j, out + 4 * j);
}

#pragma GCC diagnostic pop
#endif

void fill_blocks(simd_level simd, const philox_stream& s, std::uint64_t b0, std::size_t count, float* out) {
  switch (simd) {
#if defined(QG_HAVE_AVX512_CLONES)
    case simd_level::avx512:
      return fill_blocks_avx512(s, b0, count, out);
#endif
#if defined(__AVX2__)
    case simd_level::avx2:
      return fill_blocks_avx2(s, b0, count, out);
#endif
    default:
      return fill_blocks_scalar(s, b0, count, out);
  }
}

}  // namespace

void philox_uniforms(const philox_stream& stream, std::uint64_t first, std::span<float> out) {
  static const simd_level best = best_simd();
  philox_uniforms(best, stream, first, out);
}

void philox_uniforms(simd_level simd, const philox_stream& stream, std::uint64_t first,
                     std::span<float> out) {
  QG_ENFORCE(simd_supported(simd), "SIMD level " << to_string(simd) << " is not supported here");
  std::size_t k = 0;
  const std::size_t n = out.size();
  // Head: up to the next block boundary.
  for (; k < n && (first + k) % 4 != 0; ++k) out[k] = stream.uniform(first + k);
  const std::size_t whole = (n - k) / 4;
  fill_blocks(simd, stream, (first + k) / 4, whole, out.data() + k);
  k += 4 * whole;
  for (; k < n; ++k) out[k] = stream.uniform(first + k);
}

}  // namespace qgossip::kernels
