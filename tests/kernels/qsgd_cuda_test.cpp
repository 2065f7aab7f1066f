// The CUDA QSGD kernels against the CPU oracle: identical bytes from encode, identical floats (bit for
// bit) and identical faults from decode. Without a CUDA device the program prints why and exits 77,
// which CTest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/qsgd.hpp"
#include "kernels/cuda/qsgd_cuda.hpp"

using namespace qgossip::kernels;

namespace {

std::vector<float> sample(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1.0f);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = (i % 7 == 0) ? cauchy(gen) : normal(gen);
  for (std::size_t i = 0; i < n; i += 97) v[i] = 0.0f;
  return v;
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<std::uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), 4 * v.size());
  return b;
}

}  // namespace

TEST_CASE("GPU encode and decode equal the CPU oracle") {
  const philox_stream rng = philox_stream::make(2024, 3, 77, 1);
  for (std::uint32_t levels : {1u, 7u, 15u, 127u, 1000u, kQsgdMaxLevels}) {
    for (std::size_t bucket : {0u, 1u, 33u, 512u, 5000u}) {
      for (qsgd_norm norm : {qsgd_norm::l2, qsgd_norm::max}) {
        for (std::size_t n : {1u, 5u, 1000u, 100003u}) {
          CAPTURE(levels);
          CAPTURE(bucket);
          CAPTURE(static_cast<int>(norm));
          CAPTURE(n);
          const qsgd_layout L{levels, bucket, norm};
          const std::vector<float> v = sample(n, levels ^ static_cast<std::uint32_t>(n));
          std::vector<std::byte> cpu(L.encoded_bytes(n)), gpu(L.encoded_bytes(n));
          REQUIRE(qsgd_encode(v, L, rng, cpu));
          REQUIRE(qgossip::cuda::qsgd_encode(v, L, rng, gpu));
          REQUIRE(cpu == gpu);
          std::vector<float> out_cpu(n), out_gpu(n);
          REQUIRE(qsgd_decode(cpu, L, out_cpu).ok());
          REQUIRE(qgossip::cuda::qsgd_decode(cpu, L, out_gpu).ok());
          REQUIRE(bits_of(out_cpu) == bits_of(out_gpu));
        }
      }
    }
  }
}

TEST_CASE("a 16M-value single bucket: the warp reduction order matches the CPU") {
  const qsgd_layout L{127, 0, qsgd_norm::l2};
  const std::vector<float> v = sample(std::size_t{1} << 24, 5);
  const philox_stream rng = philox_stream::make(1, 0, 0, 0);
  std::vector<std::byte> cpu(L.encoded_bytes(v.size())), gpu(L.encoded_bytes(v.size()));
  REQUIRE(qsgd_encode(v, L, rng, cpu));
  REQUIRE(qgossip::cuda::qsgd_encode(v, L, rng, gpu));
  CHECK(cpu == gpu);
}

TEST_CASE("GPU refuses non-finite input like the CPU") {
  const qsgd_layout L{127, 512, qsgd_norm::l2};
  std::vector<float> v = sample(3000, 1);
  v[2047] = std::numeric_limits<float>::infinity();
  std::vector<std::byte> out(L.encoded_bytes(v.size()));
  const philox_stream rng = philox_stream::make(1, 0, 0, 0);
  CHECK_FALSE(qsgd_encode(v, L, rng, out));
  CHECK_FALSE(qgossip::cuda::qsgd_encode(v, L, rng, out));
}

TEST_CASE("GPU decode reports the same fault as the CPU on corrupted payloads") {
  std::mt19937 gen(77);
  for (std::uint32_t levels : {5u, 100u, 127u}) {
    const qsgd_layout L{levels, 64, qsgd_norm::l2};
    const std::vector<float> v = sample(1000, levels);
    std::vector<std::byte> good(L.encoded_bytes(v.size()));
    REQUIRE(qsgd_encode(v, L, philox_stream::make(1, 0, 0, 0), good));
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<std::byte> bad = good;
      for (int flips = 1 + trial % 4; flips > 0; --flips) {
        const std::size_t bit = gen() % (8 * bad.size());
        bad[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
      }
      std::vector<float> a(v.size()), b(v.size());
      const qsgd_decode_result rc = qsgd_decode(bad, L, a);
      const qsgd_decode_result rg = qgossip::cuda::qsgd_decode(bad, L, b);
      CAPTURE(trial);
      REQUIRE(static_cast<int>(rc.fault) == static_cast<int>(rg.fault));
      REQUIRE(rc.index == rg.index);
      if (rc.ok()) REQUIRE(bits_of(a) == bits_of(b));
    }
  }
}

int main(int argc, char** argv) {
  if (!qgossip::cuda::cuda_available()) {
    std::printf("SKIPPED: %s; the GPU-versus-CPU comparison needs a CUDA device\n",
                qgossip::cuda::cuda_device_description().c_str());
    return 77;
  }
  std::printf("CUDA device: %s\n", qgossip::cuda::cuda_device_description().c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
