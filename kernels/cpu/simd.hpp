#pragma once
// Which vector instructions the CPU kernels use. The build targets one ISA (-march, x86-64-v3 by
// default); on top of it a few hot loops have AVX-512 versions picked at run time when the CPU has
// AVX-512 F/DQ/BW/VL. Every level computes bit-identical results (integer ops and correctly rounded
// IEEE float ops only), so the choice changes speed, never bytes; tests run each level against the
// scalar reference.
namespace qgossip::kernels {

enum class simd_level {
  portable,  // plain C++ as compiled (auto-vectorized for the build's -march)
  avx2,      // hand-written AVX2 where it exists (Philox), else as portable
  avx512,    // hand-written or compiler-generated AVX-512 clones, run-time dispatched
};

// The fastest level this build and CPU support.
simd_level best_simd();
bool simd_supported(simd_level level);
const char* to_string(simd_level level);

}  // namespace qgossip::kernels

// Function attribute for the AVX-512 clones (GCC/Clang on x86-64 only; QG_HAVE_AVX512_CLONES says so).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QG_HAVE_AVX512_CLONES 1
#if defined(__clang__)
#define QG_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))
#else
// GCC tunes generic code for 256-bit vectors; the clones exist to use 512-bit ones.
#define QG_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,prefer-vector-width=512")))
#endif
#endif
