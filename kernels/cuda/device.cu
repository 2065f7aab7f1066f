// Runtime detection of a usable CUDA device.
#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/qsgd_cuda.hpp"

namespace qgossip::cuda {

bool cuda_available() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error so later probes start clean
    return false;
  }
  return count > 0;
}

std::string cuda_device_description() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(err);
  }
  if (count == 0) return "no CUDA device: none visible";
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
    return "CUDA device (properties unavailable)";
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

}  // namespace qgossip::cuda
