#include "kernels/cpu/simd.hpp"

namespace qgossip::kernels {
namespace {

bool cpu_has_avx512() {
#if defined(QG_HAVE_AVX512_CLONES)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return has;
#else
  return false;
#endif
}

}  // namespace

simd_level best_simd() {
  if (cpu_has_avx512()) return simd_level::avx512;
#if defined(__AVX2__)
  return simd_level::avx2;
#else
  return simd_level::portable;
#endif
}

bool simd_supported(simd_level level) {
  switch (level) {
    case simd_level::portable:
      return true;
    case simd_level::avx2:
#if defined(__AVX2__)
      return true;
#else
      return false;
#endif
    case simd_level::avx512:
      return cpu_has_avx512();
  }
  return false;
}

const char* to_string(simd_level level) {
  switch (level) {
    case simd_level::portable:
      return "portable";
    case simd_level::avx2:
      return "avx2";
    case simd_level::avx512:
      return "avx512";
  }
  return "?";
}

}  // namespace qgossip::kernels
