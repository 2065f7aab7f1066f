// CUDA twins of kernels/cpu/qsgd.cpp. The per-value arithmetic is the shared QG_HOST_DEVICE code of
// kernels/cpu/qsgd_format.hpp; what is specific here is the parallel decomposition, chosen so that
// results do not depend on it:
//   scales    one warp per bucket, lane j accumulating elements j, j+32, ... then a shuffle tree:
//             exactly the canonical 32-lane order of the CPU (max is order-free anyway)
//   quantize  one thread per Philox block (4 elements), codes to a 16-bit scratch array
//   pack      one thread per output byte, gathering the code bits that land in it
//   decode    one thread per element; the first fault is found with atomicMin, then reported in the
//             order the CPU decoder would meet it
#include <cuda_runtime.h>

#include <cfloat>
#include <climits>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cuda/qsgd_cuda.hpp"

namespace qgossip::cuda {
namespace {

using kernels::philox_block;
using kernels::philox_stream;
using kernels::qsgd_layout;
using kernels::qsgd_norm;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(err));
}

// Owning device allocation (move-only).
template <typename T>
class device_array {
 public:
  explicit device_array(std::size_t count) : count_(count) {
    if (count > 0) check(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)), "cudaMalloc");
  }
  ~device_array() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

unsigned grid_for(std::size_t work_items) {
  return static_cast<unsigned>((work_items + kThreads - 1) / kThreads);
}

__global__ void scales_kernel(const float* v, std::size_t n, std::size_t d, std::size_t buckets,
                              qsgd_norm norm, float* scales, int* nonfinite) {
  const std::size_t b = std::size_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  if (b >= buckets) return;  // whole warps leave together: b is uniform within a warp
  const std::size_t start = b * d;
  const std::size_t len = (n - start) < d ? (n - start) : d;
  float scale;
  bool finite;
  if (norm == qsgd_norm::l2) {
    double acc = 0.0;
    for (std::size_t i = lane; i < len; i += 32) {
      const double x = v[start + i];
      acc = __dadd_rn(acc, __dmul_rn(x, x));
    }
    for (int off = 16; off > 0; off /= 2) acc = __dadd_rn(acc, __shfl_down_sync(kFullMask, acc, off));
    finite = acc <= DBL_MAX;
    const double r = sqrt(acc);  // correctly rounded in CUDA, as on the host
    scale = r > double{FLT_MAX} ? FLT_MAX : __double2float_rn(r);
  } else {
    std::uint32_t m = 0;
    for (std::size_t i = lane; i < len; i += 32) {
      const std::uint32_t u = __float_as_uint(v[start + i]) & 0x7fffffffu;
      m = u > m ? u : m;
    }
    for (int off = 16; off > 0; off /= 2) {
      const std::uint32_t o = __shfl_down_sync(kFullMask, m, off);
      m = o > m ? o : m;
    }
    finite = m < 0x7f800000u;
    scale = __uint_as_float(m);
  }
  if (lane == 0) {
    scales[b] = scale;
    if (!finite) atomicOr(nonfinite, 1);
  }
}

__global__ void quantize_kernel(const float* v, std::size_t n, std::size_t d, const float* scales,
                                philox_stream rng, std::uint32_t levels, std::uint16_t* codes) {
  const std::size_t block = std::size_t{blockIdx.x} * kThreads + threadIdx.x;
  if (block * 4 >= n) return;
  const philox_block w = rng.block(block);
  const float levels_f = static_cast<float>(levels);
  const auto sign_shift = static_cast<std::int32_t>(kernels::qsgd_code_bits(levels) - 1);
  for (int k = 0; k < 4; ++k) {
    const std::size_t i = block * 4 + k;
    if (i >= n) break;
    const float scale = scales[i / d];
    const float ratio = kernels::qsgd_ratio_form(scale) ? kernels::qsgd_ratio(scale, levels_f) : 0.0f;
    codes[i] = static_cast<std::uint16_t>(
        kernels::qsgd_quantize_value(v[i], scale, ratio, levels_f, static_cast<std::int32_t>(levels),
                                     sign_shift, kernels::uniform24(w.w[k])));
  }
}

__global__ void pack_kernel(const std::uint16_t* codes, std::size_t n, unsigned bits, std::size_t bytes,
                            std::uint8_t* out) {
  const std::size_t p = std::size_t{blockIdx.x} * kThreads + threadIdx.x;
  if (p >= bytes) return;
  const std::size_t first_bit = 8 * p;
  std::size_t k = first_bit / bits;
  const std::size_t last = (first_bit + 7) / bits;
  std::uint32_t byte = 0;
  for (; k <= last && k < n; ++k) {
    const long long shift = static_cast<long long>(k * bits) - static_cast<long long>(first_bit);
    const std::uint32_t c = codes[k];
    byte |= shift >= 0 ? (c << shift) : (c >> -shift);
  }
  out[p] = static_cast<std::uint8_t>(byte & 0xffu);
}

struct decode_faults {
  unsigned long long scale_bucket;  // first bucket with an invalid scale, or ULLONG_MAX
  unsigned long long code_index;    // first element with an invalid code, or ULLONG_MAX
};

__global__ void decode_kernel(const std::uint8_t* in, std::size_t n, std::size_t d, std::size_t scale_bytes,
                              std::size_t packed_bytes, std::uint32_t levels, float* out,
                              decode_faults* faults) {
  const std::size_t i = std::size_t{blockIdx.x} * kThreads + threadIdx.x;
  if (i >= n) return;
  const std::size_t b = i / d;
  std::uint32_t scale_bits = 0;
  for (int k = 0; k < 4; ++k) scale_bits |= std::uint32_t{in[4 * b + k]} << (8 * k);
  if (!kernels::qsgd_scale_valid(scale_bits)) {
    atomicMin(&faults->scale_bucket, static_cast<unsigned long long>(b));
    return;
  }
  const unsigned bits = kernels::qsgd_code_bits(levels);
  const std::uint8_t* packed = in + scale_bytes;
  const std::size_t bit = i * bits;
  const std::size_t p = bit / 8;
  std::uint32_t window = 0;
  for (std::size_t k = 0; k < 3 && p + k < packed_bytes; ++k)
    window |= std::uint32_t{packed[p + k]} << (8 * k);
  const std::uint32_t code = (window >> (bit % 8)) & ((1u << bits) - 1);
  const std::uint32_t sign_shift = bits - 1;
  const std::uint32_t sign_bit = 1u << sign_shift;
  if (kernels::qsgd_code_invalid(code, levels, sign_bit)) {
    atomicMin(&faults->code_index, static_cast<unsigned long long>(i));
    return;
  }
  const float step = kernels::qg_fdiv(__uint_as_float(scale_bits), static_cast<float>(levels));
  out[i] = kernels::qsgd_dequantize_code(code, step, sign_bit - 1, sign_shift);
}

}  // namespace

bool qsgd_encode(std::span<const float> v, const qsgd_layout& layout, const philox_stream& rng,
                 std::span<std::byte> out) {
  if (layout.levels < 1 || layout.levels > kernels::kQsgdMaxLevels)
    throw std::invalid_argument("qsgd_encode: levels=" + std::to_string(layout.levels));
  const std::size_t n = v.size();
  if (out.size() != layout.encoded_bytes(n))
    throw std::invalid_argument("qsgd_encode: out=" + std::to_string(out.size()) +
                                " expected=" + std::to_string(layout.encoded_bytes(n)));
  if (n == 0) return true;
  const std::size_t d = layout.bucket_size(n);
  const std::size_t buckets = layout.bucket_count(n);
  const std::size_t packed = layout.packed_bytes(n);

  device_array<float> dv(n), dscales(buckets);
  device_array<std::uint16_t> dcodes(n);
  device_array<std::uint8_t> dpacked(packed);
  device_array<int> dflag(1);
  check(cudaMemcpy(dv.get(), v.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy v");
  check(cudaMemset(dflag.get(), 0, sizeof(int)), "cudaMemset");

  scales_kernel<<<static_cast<unsigned>((buckets + kWarpsPerBlock - 1) / kWarpsPerBlock), kThreads>>>(
      dv.get(), n, d, buckets, layout.norm, dscales.get(), dflag.get());
  check(cudaGetLastError(), "scales_kernel");
  quantize_kernel<<<grid_for((n + 3) / 4), kThreads>>>(dv.get(), n, d, dscales.get(), rng, layout.levels,
                                                       dcodes.get());
  check(cudaGetLastError(), "quantize_kernel");
  pack_kernel<<<grid_for(packed), kThreads>>>(dcodes.get(), n, layout.bits(), packed, dpacked.get());
  check(cudaGetLastError(), "pack_kernel");

  int nonfinite = 0;
  check(cudaMemcpy(&nonfinite, dflag.get(), sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy flag");
  if (nonfinite != 0) return false;
  check(cudaMemcpy(out.data(), dscales.get(), 4 * buckets, cudaMemcpyDeviceToHost), "cudaMemcpy scales");
  check(cudaMemcpy(out.data() + 4 * buckets, dpacked.get(), packed, cudaMemcpyDeviceToHost),
        "cudaMemcpy codes");
  return true;
}

kernels::qsgd_decode_result qsgd_decode(std::span<const std::byte> in, const qsgd_layout& layout,
                                        std::span<float> out) {
  using kernels::qsgd_fault;
  if (layout.levels < 1 || layout.levels > kernels::kQsgdMaxLevels)
    throw std::invalid_argument("qsgd_decode: levels=" + std::to_string(layout.levels));
  const std::size_t n = out.size();
  if (in.size() != layout.encoded_bytes(n)) return {qsgd_fault::size, in.size()};
  if (n == 0) return {};
  const std::size_t d = layout.bucket_size(n);
  const std::size_t scale_bytes = layout.scale_bytes(n);
  const std::size_t packed = layout.packed_bytes(n);

  device_array<std::uint8_t> din(in.size());
  device_array<float> dout(n);
  device_array<decode_faults> dfaults(1);
  const decode_faults none{ULLONG_MAX, ULLONG_MAX};
  check(cudaMemcpy(din.get(), in.data(), in.size(), cudaMemcpyHostToDevice), "cudaMemcpy in");
  check(cudaMemcpy(dfaults.get(), &none, sizeof none, cudaMemcpyHostToDevice), "cudaMemcpy faults");
  decode_kernel<<<grid_for(n), kThreads>>>(din.get(), n, d, scale_bytes, packed, layout.levels, dout.get(),
                                           dfaults.get());
  check(cudaGetLastError(), "decode_kernel");
  decode_faults faults{};
  check(cudaMemcpy(&faults, dfaults.get(), sizeof faults, cudaMemcpyDeviceToHost), "cudaMemcpy faults");

  // The CPU decoder walks bucket by bucket, checking the scale before the bucket's codes.
  if (faults.scale_bucket != ULLONG_MAX &&
      (faults.code_index == ULLONG_MAX || faults.scale_bucket <= faults.code_index / d))
    return {qsgd_fault::scale, static_cast<std::size_t>(faults.scale_bucket)};
  if (faults.code_index != ULLONG_MAX) return {qsgd_fault::code, static_cast<std::size_t>(faults.code_index)};
  // Padding: the bits after the last code, in the last byte only (sizes are exact).
  const std::size_t used_bits = n * layout.bits();
  if (used_bits % 8 != 0 && (std::to_integer<unsigned>(in[in.size() - 1]) >> (used_bits % 8)) != 0)
    return {qsgd_fault::padding, n};
  check(cudaMemcpy(out.data(), dout.get(), n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy out");
  return {};
}

}  // namespace qgossip::cuda
