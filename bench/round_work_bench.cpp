// The host work of one CHOCO-SGD round of a program's node (the Python module's path: the node's x
// is the program's parameters; a ring: two neighbours, 3-bit QSGD, no outer step), on
// a work_pool of each thread count given (node.threads, core/work_pool.hpp), beside a STREAM-like
// measure of this machine's memory bandwidth on the same thread counts, in ONE run, interleaved.
//
// The round calls what node/run/local_training.cpp, round_steps.cpp, gossip_round.cpp and the
// CHOCO-SGD algorithm call, in their order: outgoing (no step: the program's steps made x_{t+1/2});
// the divergence check of x; q = x - x^_i encoded as it is read, the wire's CRC32C, the own message
// decoded into x^_i; each neighbour's message checked (CRC32C, validate: in a node, while it waits for
// the others) and decoded into its copy; the mix into x. What it does not time: the network (the messages are in memory) and the
// program's own steps. The bytes a round touches are counted per pass (reads plus writes, in floats of 4 bytes; a
// message of E bytes as E), so the time can be set against bytes / bandwidth.
//
//   build/bench/round_work_bench --params 100000000 --threads 1,2 --repeats 5
// Prints one line per (threads, repeat) as measured and then the medians, ratios and the bound.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/choco_sgd.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/mixing.hpp"
#include "core/aligned.hpp"
#include "core/crc32c.hpp"
#include "core/work_pool.hpp"
#include "kernels/cpu/finite.hpp"

using namespace qgossip;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct options {
  std::size_t params = 100'000'000;
  std::vector<unsigned> threads{1, 2};
  int repeats = 5;
  std::string codec = "qsgd:levels=3,bucket=128,norm=max";
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--help" || !v) {
      std::printf("usage: round_work_bench [--params N] [--threads 1,2] [--repeats R] [--codec SPEC]\n");
      std::exit(a == "--help" ? 0 : 2);
    }
    ++i;
    if (a == "--params") o.params = std::stoull(v);
    else if (a == "--repeats") o.repeats = std::stoi(v);
    else if (a == "--codec") o.codec = v;
    else if (a == "--threads") {
      o.threads.clear();
      std::stringstream in(v);
      for (std::string t; std::getline(in, t, ',');) o.threads.push_back(static_cast<unsigned>(std::stoul(t)));
    } else {
      std::fprintf(stderr, "round_work_bench: unknown option %s (--help)\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

float_vector gaussian(std::size_t n, std::uint32_t seed, float sigma) {
  float_vector v(n);
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  for (float& x : v) x = normal(gen);
  return v;
}

// One node of a ring of 8 (rank 1: neighbours 0 and 2, Metropolis weights 1/3) whose model is a
// program's parameters (learner.cpp model_in_program: CHOCO-SGD's x is p), its messages left to the
// round as x - x^_i (difference_message) and decoded straight into the copies they add to
// (additive_messages): the node's round as node/run runs it for a program's CHOCO-SGD node.
struct node_round {
  node_round(const options& o, const compressor& c)
      : codec(c), p(gaussian(o.params, 1, 0.05f)),
        alg(mixing_row{1, 1.0 / 3, {0, 2}, {1.0 / 3, 1.0 / 3}}, p, choco_options(p)) {
    if (!codec.encodes_difference(o.params) || !codec.adds_decoded()) {
      std::fprintf(stderr, "round_work_bench: %s does not encode differences and add decoded values in place\n",
                   codec.describe().c_str());
      std::exit(2);
    }
    // The neighbours' messages of this round, encoded once (their own changes).
    for (int k = 0; k < 2; ++k) {
      const float_vector change = gaussian(o.params, 10 + k, 1e-3f);
      codec.encode(change, codec_context{1, k == 0 ? 0u : 2u, 1, 0}, messages[k]);
    }
  }

  static algorithm_options choco_options(float_vector& p) {
    algorithm_options a{0.5};
    a.model_storage = p;
    a.difference_messages = true;
    return a;
  }

  // The round's host work; returns the bytes it touched.
  double run(std::uint64_t t) {
    const double n = static_cast<double>(p.size()) * 4;
    for (float& x : std::span(p).first(std::min<std::size_t>(p.size(), 1024))) x += 1e-4f;  // the program's steps
    if (!alg.outgoing({}, 0.0f, t).empty()) std::abort();                        // nothing: x is p
    if (!kernels::all_finite(alg.minuend())) std::abort();                       // n
    bytes.clear();
    codec.encode_difference(alg.minuend(), alg.subtrahend(), codec_context{1, 1, t, 0}, bytes);  // 2n + E
    const double e = static_cast<double>(bytes.size());
    crc += crc32c(bytes);                                                        // E
    codec.decode_add(bytes, codec_context{1, 1, t, 0}, alg.own_sum());          // E + 2n
    alg.absorbed_own(t);
    for (int k = 0; k < 2; ++k) {
      const int from = k == 0 ? 0 : 2;
      const codec_context ctx{1, static_cast<std::uint32_t>(from), 1, 0};
      crc += crc32c(messages[k]);                                                // E
      if (!codec.validate(messages[k], ctx, p.size()).ok()) std::abort();        // E
      codec.decode_add(messages[k], ctx, alg.sum_of(from));                      // E + 2n
      alg.absorbed(from, t);
    }
    alg.finish(t);  // x, and the two copies and x^_i read once a range: 5n (mixing::add_scaled)
    return n * (1 + 2 + 2 + 2 * 2 + 5) + e * (1 + 1 + 1 + 2 * 3);
  }

  const compressor& codec;
  float_vector p;
  choco_sgd alg;
  std::vector<std::byte> messages[2];
  std::vector<std::byte> bytes;
  std::uint32_t crc = 0;
};

// STREAM's copy (a = b: 2 arrays) and triad (a = b + s c: 3 arrays), and a read of one array (the
// divergence check's scan), split as the mix is.
struct stream_bench {
  explicit stream_bench(std::size_t n) : a(n, 1.0f), b(n, 2.0f), c(n, 0.5f) {}
  double copy() {
    const auto t0 = clock_type::now();
    mixing::copy(a, b);
    return 2.0 * 4 * static_cast<double>(a.size()) / seconds_since(t0);
  }
  double read() {
    const auto t0 = clock_type::now();
    if (!kernels::all_finite(b)) std::abort();
    return 4 * static_cast<double>(b.size()) / seconds_since(t0);
  }
  double triad() {
    const auto t0 = clock_type::now();
    float* __restrict ap = a.data();
    const float* __restrict bp = b.data();
    const float* __restrict cp = c.data();
    parallel_ranges(a.size(), kElementGrain, [&](std::size_t first, std::size_t last) {
      for (std::size_t i = first; i < last; ++i) ap[i] = bp[i] + 0.5f * cp[i];
    });
    return 3.0 * 4 * static_cast<double>(a.size()) / seconds_since(t0);
  }
  float_vector a, b, c;
};

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  const auto codec = make_compressor(parse_codec_spec(o.codec));
  std::printf("round_work_bench: %zu parameters, %s, threads", o.params, codec->describe().c_str());
  for (unsigned t : o.threads) std::printf(" %u", t);
  std::printf(", %d repeats, usable cores %u\n", o.repeats, usable_cores());
  node_round node(o, *codec);
  stream_bench stream(o.params);
  std::vector<std::unique_ptr<work_pool>> pools;
  for (unsigned t : o.threads) pools.push_back(std::make_unique<work_pool>(t));
  std::vector<std::vector<double>> round_s(o.threads.size()), copy_bw(o.threads.size()), triad_bw(o.threads.size()),
      read_bw(o.threads.size());
  double touched = 0;
  std::uint64_t t = 1;
  for (int r = 0; r < o.repeats + 1; ++r) {  // the first repeat warms up (pages touched, caches), not kept
    for (std::size_t i = 0; i < o.threads.size(); ++i) {
      const work_pool::use threads(pools[i].get());
      const auto t0 = clock_type::now();
      touched = node.run(t++);
      const double s = seconds_since(t0);
      const double copy = stream.copy(), triad = stream.triad(), read = stream.read();
      std::printf("repeat %d threads %u: round %.3f s, copy %.2f GB/s, triad %.2f GB/s, read %.2f GB/s\n", r,
                  o.threads[i], s, copy / 1e9, triad / 1e9, read / 1e9);
      if (r == 0) continue;
      round_s[i].push_back(s);
      copy_bw[i].push_back(copy);
      triad_bw[i].push_back(triad);
      read_bw[i].push_back(read);
    }
  }
  std::printf("\nbytes touched per round: %.2f GB (%.1f per parameter)\n", touched / 1e9,
              touched / static_cast<double>(o.params));
  std::printf("%-8s %9s %8s %10s %11s %10s %15s %8s\n", "threads", "round s", "x first", "copy GB/s",
              "triad GB/s", "read GB/s", "bound s (read)", "x bound");
  const double first = median(round_s[0]);
  for (std::size_t i = 0; i < o.threads.size(); ++i) {
    const double s = median(round_s[i]), read = median(read_bw[i]);
    std::printf("%-8u %9.3f %8.2f %10.2f %11.2f %10.2f %15.3f %8.2f\n", o.threads[i], s, first / s,
                median(copy_bw[i]) / 1e9, median(triad_bw[i]) / 1e9, read / 1e9, touched / read,
                s / (touched / read));
  }
  std::printf("(crc %08x)\n", node.crc);
  return 0;
}
