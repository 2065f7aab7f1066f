#pragma once
// MCGQ (Mordido, "Monte Carlo Gradient Quantization", CVPR-W 2020, Alg. 1) on the CPU: stratified
// importance sampling of one layer, proportional to |g|, in a single pass over the CDF.
//
// With T = ||g||_1 and N samples x_i = (xi + i)/N, i = 0..N-1, sample i lands in interval k iff
// P_{k-1} <= x_i < P_k (P the CDF of |g|/T). The number of samples in [0, P_k) is
//     m(P_k) = #{i : (xi + i)/N < P_k} = ceil(N P_k - xi)        (clamped to [0, N]),
// so counting them needs no loop over samples: count_k = m(P_k) - m(P_{k-1}) and
// g_int[k] = sign(g_k) * count_k. This is exactly Alg. 1's loop (same hits, same counts) in O(len),
// whatever N is. E[count_k] = N p_k for xi ~ U[0,1), and count_k is floor(N p_k) or ceil(N p_k).
//
// Exact arithmetic (frozen: it decides the bytes): S_k = |g_0| + ... + |g_k| summed left to right in
// double, T = S_{len-1}; m_k = N when S_k == T, else clamp(ceil(S_k * fl(N / T) - xi), 0, N). S is
// non-decreasing, so counts are >= 0, and the last nonzero element reaches S == T: sum |g_int| = N
// exactly whenever T > 0 (all zero when T == 0).
// Thread safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/philox.hpp"

namespace qgossip::kernels {

// Largest N per layer: every |g_int[k]| <= N must fit the 32-bit sign-magnitude code of the
// run-length coding (1 sign bit + 31 magnitude bits).
inline constexpr std::uint64_t kMcgqMaxSamples = (std::uint64_t{1} << 31) - 1;

// N = ceil(len * K) (at least 1 for len >= 1 and K > 0), computed once here so that encoder and
// decoder agree. REQUIRES: K > 0 and finite.
std::uint64_t mcgq_samples(std::size_t len, double k);

// The layer's stratification offset xi in [0, 1): 53 bits from words 0 and 1 of block `layer` of
// the stream, ((w0 >> 5) * 2^26 + (w1 >> 6)) * 2^-53.
double mcgq_offset(const philox_stream& rng, std::uint64_t layer);

// Samples g into g_int (Alg. 1) and returns T = ||g||_1 in double. REQUIRES: g finite (a NaN or Inf
// makes T non-finite and g_int unspecified), g_int.size() == g.size(), samples <= kMcgqMaxSamples,
// 0 <= xi < 1 (QG_ENFORCEd).
double mcgq_quantize(std::span<const float> g, std::uint64_t samples, double xi,
                     std::span<std::int32_t> g_int);

// Wasserstein-1 distance between the sampling distribution p_k = |g_k| / ||g||_1 and the empirical
// distribution of the samples q_k = |g_int[k]| / sum|g_int| over the positions 0..len-1 (unit spacing):
// sum_k |P_k - Q_k| with P, Q the CDFs. Stratified sampling keeps every |P_k - Q_k| below 1/N, so the
// distance is below len/N (about 1/K). 0 when either vector is all zero. REQUIRES: equal sizes.
double mcgq_wasserstein(std::span<const float> g, std::span<const std::int32_t> g_int);

// out[k] = float(step * g_int[k]), the product in double, clamped to +-FLT_MAX. REQUIRES: equal sizes.
void mcgq_dequantize(std::span<const std::int32_t> g_int, double step, std::span<float> out);

// The accumulated-gradient variant (Alg. 4): acc[k] = fl(acc[k] + g[k]) ...
void mcgq_accumulate(std::span<float> acc, std::span<const float> g);
// ... and, after sampling acc, acc[k] = 0 wherever g_int[k] != 0. REQUIRES: equal sizes.
void mcgq_reset_sampled(std::span<float> acc, std::span<const std::int32_t> g_int);

}  // namespace qgossip::kernels
