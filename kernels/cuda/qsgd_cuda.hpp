#pragma once
// QSGD / QSGDinf on an NVIDIA GPU: the same bytes and the same floats as the CPU kernels
// (kernels/cpu/qsgd.hpp, the oracle), computed by CUDA kernels. Plain host API over host memory
// (the data is copied to the device and back) with no CUDA types, so any C++ file may include it; link
// qgossip_kernels_cuda, which exists only in builds with CUDA (CMake: if(TARGET qgossip_kernels_cuda)).
//
// Errors: a failing CUDA runtime call (no device, out of memory, launch failure) throws
// std::runtime_error naming the call and CUDA's message. Check cuda_available() first.
// Thread safety: calls may run concurrently; each uses its own device buffers on the default stream.
#include <cstddef>
#include <span>
#include <string>

#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/qsgd.hpp"
#include "kernels/cpu/qsgd_format.hpp"

namespace qgossip::cuda {

// True iff the CUDA runtime loads and sees at least one device. Never throws.
bool cuda_available();
// "NVIDIA H100 80GB HBM3 (sm_90)", or why there is none ("no CUDA device: <reason>").
std::string cuda_device_description();

// Same contract and result as kernels::qsgd_encode: writes layout.encoded_bytes(v.size()) bytes,
// returns false iff v holds a NaN or an infinity.
[[nodiscard]] bool qsgd_encode(std::span<const float> v, const kernels::qsgd_layout& layout,
                               const kernels::philox_stream& rng, std::span<std::byte> out);

// Same contract and result (fault kind and index included) as kernels::qsgd_decode.
[[nodiscard]] kernels::qsgd_decode_result qsgd_decode(std::span<const std::byte> in,
                                                      const kernels::qsgd_layout& layout,
                                                      std::span<float> out);

}  // namespace qgossip::cuda
