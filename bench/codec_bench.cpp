// Codec throughput: encode, decode and validate (a receiver's check) of a 16M-float vector on one
// thread, in bytes of float input per second, for EVERY registered codec (codec_names(), each with a
// representative spec below), next to a memcpy of the same vector in the same run (the
// memory-bandwidth ceiling of this machine).
//   build-dir/bench/codec_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   build-dir/bench/codec_bench --benchmark_filter='memcpy|/nuqsgd'   # one codec
// The target of the QSGD issue: 8- and 4-bit, bucket 512, >= 1 GB/s for encode and for decode.
// Rates use wall time (UseRealTime); on a shared machine compare the CPU column too.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "core/errors.hpp"
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

// The input encoded once by spec's codec: what the decoding benchmarks read.
struct encoded_input {
  explicit encoded_input(const std::string& spec)
      : codec(qgossip::make_compressor(qgossip::parse_codec_spec(spec))) {
    codec->encode(input(), ctx, bytes);
  }
  std::unique_ptr<qgossip::compressor> codec;
  const qgossip::codec_context ctx{.seed = 1, .rank = 0, .iteration = 0, .stream = 0};
  std::vector<std::byte> bytes;
};

void bm_decode(benchmark::State& state, const std::string& spec) {
  const encoded_input in(spec);
  std::vector<float> out(input().size());
  for (auto _ : state) {
    const qgossip::status st = in.codec->decode(in.bytes, in.ctx, out);
    if (!st) state.SkipWithError(st.to_string().c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_throughput(state);
}

// What a receiver does with each neighbour's message before it adds it: checks that it decodes.
void bm_validate(benchmark::State& state, const std::string& spec) {
  const encoded_input in(spec);
  for (auto _ : state) {
    const qgossip::status st = in.codec->validate(in.bytes, in.ctx, input().size());
    if (!st) state.SkipWithError(st.to_string().c_str());
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

namespace {

// Representative specs per codec name: the settings the papers and the demo use. A registered codec
// missing here is benchmarked with its defaults (its bare name), so a new codec is never left out.
const std::map<std::string, std::vector<std::string>> kRepresentative = {
    {"identity", {"identity"}},
    {"qsgd",
     {"qsgd:bits=8,bucket=512", "qsgd:bits=4,bucket=512", "qsgd:bits=8,bucket=512,norm=max",
      "qsgd:bits=5,bucket=512", "qsgd:levels=22,bucket=512,coding=elias", "qsgd:bits=3,bucket=128,norm=max"}},
    {"nuqsgd", {"nuqsgd:s=3,bucket=8192"}},
    {"mcgq", {"mcgq:K=1"}},
    {"dither", {"dither:K=7", "dither:K=127,bucket=512"}},
    {"randsparse", {"randsparse:p=0.1"}},
    {"randk", {"randk:ratio=0.01"}},
    {"topk", {"topk:ratio=0.01"}},
    {"sign", {"sign"}},
    {"fp16", {"fp16"}},
    {"bf16", {"bf16"}},
};

void register_codec(const std::string& spec) {
  const auto codec = qgossip::make_compressor(qgossip::parse_codec_spec(spec));  // fail early on a bad spec
  const std::string label = codec->describe();
  benchmark::RegisterBenchmark(("encode/" + label).c_str(), bm_encode, spec)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("decode/" + label).c_str(), bm_decode, spec)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("validate/" + label).c_str(), bm_validate, spec)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  for (const std::string& name : qgossip::codec_names()) {
    const auto it = kRepresentative.find(name);
    const std::vector<std::string> specs =
        it == kRepresentative.end() ? std::vector<std::string>{name} : it->second;
    for (const std::string& spec : specs) {
      try {
        register_codec(spec);
      } catch (const qgossip::config_error& e) {
        // A representative spec out of date with its codec's parameters: say so, keep the rest.
        std::fprintf(stderr, "codec_bench: skipping '%s': %s\n", spec.c_str(), e.what());
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
