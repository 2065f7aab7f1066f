// Codec throughput: encode and decode of a 16M-float vector on one thread, in bytes of float input
// per second, next to a memcpy of the same vector (the memory-bandwidth ceiling of this machine).
//   build-dir/bench/codec_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// The target of the QSGD issue: 8- and 4-bit, bucket 512, >= 1 GB/s for encode and for decode.
// Rates use wall time (UseRealTime); on a shared machine compare the CPU column too.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "kernels/cpu/qsgd.hpp"

namespace {

constexpr std::size_t kValues = std::size_t{16} << 20;

// Gradient-like input: Gaussian with a few heavy entries, fixed seed.
const std::vector<float>& input() {
  static const std::vector<float> v = [] {
    std::vector<float> x(kValues);
    std::mt19937 gen(12345);
    std::normal_distribution<float> normal(0.0f, 1e-3f);
    for (float& f : x) f = normal(gen);
    for (std::size_t i = 0; i < x.size(); i += 4099) x[i] *= 100.0f;
    return x;
  }();
  return v;
}

void set_throughput(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kValues * sizeof(float));
}

void bm_memcpy(benchmark::State& state) {
  const std::vector<float>& v = input();
  std::vector<float> out(v.size());
  for (auto _ : state) {
    std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_throughput(state);
}

void bm_encode(benchmark::State& state, const std::string& spec) {
  const auto codec = qgossip::make_compressor(qgossip::parse_codec_spec(spec));
  const std::vector<float>& v = input();
  std::vector<std::byte> out;
  out.reserve(codec->max_encoded_bytes(v.size()));
  qgossip::codec_context ctx{.seed = 1, .rank = 0, .iteration = 0, .stream = 0};
  for (auto _ : state) {
    out.clear();
    codec->encode(v, ctx, out);
    benchmark::DoNotOptimize(out.data());
    ++ctx.iteration;
  }
  set_throughput(state);
  state.counters["bytes_out"] = static_cast<double>(out.size());
}

void bm_decode(benchmark::State& state, const std::string& spec) {
  const auto codec = qgossip::make_compressor(qgossip::parse_codec_spec(spec));
  const std::vector<float>& v = input();
  std::vector<std::byte> bytes;
  const qgossip::codec_context ctx{.seed = 1, .rank = 0, .iteration = 0, .stream = 0};
  codec->encode(v, ctx, bytes);
  std::vector<float> out(v.size());
  for (auto _ : state) {
    const qgossip::status st = codec->decode(bytes, ctx, out);
    if (!st) state.SkipWithError(st.to_string().c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_throughput(state);
}

// The kernels alone at a forced SIMD level (AVX2 is what a CPU without AVX-512 runs).
void bm_kernel_encode(benchmark::State& state, std::uint32_t levels, qgossip::kernels::simd_level simd) {
  using namespace qgossip::kernels;
  if (!simd_supported(simd)) return state.SkipWithError("SIMD level not supported on this CPU");
  const std::vector<float>& v = input();
  const qsgd_layout layout{levels, 512, qsgd_norm::l2};
  std::vector<std::byte> out(layout.encoded_bytes(v.size()));
  const philox_stream rng = philox_stream::make(1, 0, 0, 0);
  for (auto _ : state) {
    if (!qsgd_encode(simd, v, layout, rng, out)) state.SkipWithError("non-finite input");
    benchmark::DoNotOptimize(out.data());
  }
  set_throughput(state);
}

void bm_kernel_decode(benchmark::State& state, std::uint32_t levels, qgossip::kernels::simd_level simd) {
  using namespace qgossip::kernels;
  if (!simd_supported(simd)) return state.SkipWithError("SIMD level not supported on this CPU");
  const std::vector<float>& v = input();
  const qsgd_layout layout{levels, 512, qsgd_norm::l2};
  std::vector<std::byte> bytes(layout.encoded_bytes(v.size()));
  if (!qsgd_encode(v, layout, philox_stream::make(1, 0, 0, 0), bytes))
    state.SkipWithError("non-finite input");
  std::vector<float> out(v.size());
  for (auto _ : state) {
    if (!qsgd_decode(simd, bytes, layout, out).ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_throughput(state);
}

}  // namespace

BENCHMARK(bm_memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(bm_encode, identity, std::string("identity"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(bm_decode, identity, std::string("identity"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(bm_encode, qsgd_8bit, std::string("qsgd:bits=8,bucket=512"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_decode, qsgd_8bit, std::string("qsgd:bits=8,bucket=512"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_encode, qsgd_4bit, std::string("qsgd:bits=4,bucket=512"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_decode, qsgd_4bit, std::string("qsgd:bits=4,bucket=512"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_encode, qsgdinf_8bit, std::string("qsgd:bits=8,bucket=512,norm=max"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_decode, qsgdinf_8bit, std::string("qsgd:bits=8,bucket=512,norm=max"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_encode, qsgd_5bit, std::string("qsgd:bits=5,bucket=512"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_decode, qsgd_5bit, std::string("qsgd:bits=5,bucket=512"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

using qgossip::kernels::simd_level;
BENCHMARK_CAPTURE(bm_kernel_encode, 8bit_avx2, 127, simd_level::avx2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_kernel_encode, 8bit_avx512, 127, simd_level::avx512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_kernel_decode, 8bit_avx2, 127, simd_level::avx2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_kernel_decode, 8bit_avx512, 127, simd_level::avx512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_kernel_encode, 4bit_avx2, 7, simd_level::avx2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_kernel_encode, 4bit_avx512, 7, simd_level::avx512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_kernel_decode, 4bit_avx2, 7, simd_level::avx2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_kernel_decode, 4bit_avx512, 7, simd_level::avx512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
