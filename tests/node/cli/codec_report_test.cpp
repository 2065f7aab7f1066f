// What `qgossip codec` measures (node/cli/codec_report.hpp): the generated vectors, the inputs it reads,
// and the metrics, checked against codecs whose answers are known exactly (identity, fixed-size QSGD,
// and test doubles that scale, zero or misbehave) and, for the statistical ones, against stated bounds.
#include "node/cli/codec_report.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<float> gaussian(std::size_t n, std::uint64_t seed = 1) {
  return generate_input(gen_spec{"gaussian", n}, seed).values;
}

// A test double: sends the values as raw float32 after mapping each through `f` (a deterministic,
// hence biased unless f is the identity, operator). The knobs make the tool's invariant checks fire.
class mapping_compressor final : public compressor {
 public:
  explicit mapping_compressor(float (*f)(float, std::size_t), std::size_t extra_bytes = 0,
                              bool fail_decode = false)
      : f_(f), extra_bytes_(extra_bytes), fail_decode_(fail_decode) {}
  std::string_view name() const override { return "mapping"; }
  codec_id id() const override { return codec_id::identity; }
  std::uint32_t params_tag() const override { return 0; }
  std::string describe() const override { return "mapping"; }
  bool unbiased() const override { return false; }
  double relative_error_bound(std::size_t) const override { return std::numeric_limits<double>::infinity(); }
  std::size_t max_encoded_bytes(std::size_t n) const override { return 4 * n; }
  void encode(std::span<const float> v, const codec_context&, std::vector<std::byte>& out) const override {
    for (std::size_t i = 0; i < v.size(); ++i) {
      const float y = f_(v[i], i);
      const auto* p = reinterpret_cast<const std::byte*>(&y);
      out.insert(out.end(), p, p + 4);
    }
    out.resize(out.size() + extra_bytes_);
  }
  status decode(std::span<const std::byte> in, const codec_context&, std::span<float> out) const override {
    if (fail_decode_) return status::error(errc::corrupt, "refusing on purpose");
    std::memcpy(out.data(), in.data(), 4 * out.size());
    return status::ok();
  }

 private:
  float (*f_)(float, std::size_t);
  std::size_t extra_bytes_;
  bool fail_decode_;
};

struct temp_file {
  explicit temp_file(const std::string& name, const std::string& bytes)
      : path(fs::temp_directory_path() / ("qgossip-codec-report-" + std::to_string(getpid()) + "-" + name)) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ~temp_file() { fs::remove(path); }
  fs::path path;
};

std::string float_bytes(std::initializer_list<float> values) {
  std::string s(4 * values.size(), '\0');
  std::memcpy(s.data(), std::data(values), s.size());
  return s;
}

}  // namespace

TEST_CASE("identity: zero error and bias, 32 bits per value, every value nonzero") {
  const std::vector<float> v = gaussian(1000);
  const auto c = make_compressor(parse_codec_spec("identity"));
  const codec_metrics m = measure_codec(*c, v, 3, 7);
  CHECK(m.codec == "identity");
  CHECK(m.n == 1000);
  CHECK(m.trials == 3);
  CHECK(m.seed == 7);
  CHECK(m.bits_per_value == 32.0);
  CHECK(m.compression_ratio == 1.0);
  CHECK(m.rel_mse == 0.0);
  CHECK(m.rel_bias == 0.0);
  CHECK(m.nnz_fraction == 1.0);
  CHECK(m.unbiased);
  CHECK(m.relative_error_bound == 0.0);
  // 1000 distinct floats: log2(1000) bits of entropy.
  CHECK(m.entropy_bits_per_value == doctest::Approx(std::log2(1000.0)).epsilon(1e-12));
  CHECK(m.encode_gbps > 0.0);
  CHECK(m.decode_gbps > 0.0);
  CHECK(std::isfinite(m.encode_gbps));
}

TEST_CASE("qsgd 8 bits: 8 bits per value plus one float32 scale per bucket, error within its bound") {
  const auto c = make_compressor(parse_codec_spec("qsgd:bits=8,bucket=512"));
  // 20 whole buckets: exactly 8 + 32/512 bits per value.
  const std::vector<float> whole = gaussian(20 * 512);
  const std::size_t trials = 10;
  const codec_metrics m = measure_codec(*c, whole, trials, 1);
  CHECK(m.bits_per_value == 8.0 + 32.0 / 512);
  CHECK(m.compression_ratio == doctest::Approx(32.0 / (8.0 + 32.0 / 512)));
  // A partial last bucket still carries a scale: (8 n + 32 ceil(n / 512)) / n.
  const codec_metrics partial = measure_codec(*c, gaussian(10000), 2, 1);
  CHECK(partial.bits_per_value == doctest::Approx((8.0 * 10000 + 32.0 * 20) / 10000).epsilon(1e-12));

  CHECK(m.unbiased);
  CHECK(m.rel_mse > 0.0);
  // E||Q(v)-v||^2 <= alpha^2 ||v||^2; the mean of 10 trials of a sum over 10240 independent
  // coordinates sits within a few percent of its expectation, which is far below the bound here.
  CHECK(m.rel_mse <= m.relative_error_bound);
  // Unbiased: E||mean_T Q(v) - v||^2 = E||Q(v)-v||^2 / T, and the same concentration argument keeps
  // the measured ratio within a few percent of 1; a factor 2 on the norm (4 on its square) cannot
  // flake, while a biased codec lands far outside it (next test).
  CHECK(m.rel_bias <= 2.0 * std::sqrt(m.rel_mse / static_cast<double>(trials)));
  CHECK(m.rel_bias >= 0.5 * std::sqrt(m.rel_mse / static_cast<double>(trials)));
  // 8-bit levels for N(0,1) values with a bucket's L2 norm (~22.6) as scale: |v| < 0.18 S rounds to
  // level 0 or 1, so some values decode to zero, most do not.
  CHECK(m.nnz_fraction > 0.5);
  CHECK(m.nnz_fraction < 1.0);
  // The entropy of at most 255 symbols.
  CHECK(m.entropy_bits_per_value > 1.0);
  CHECK(m.entropy_bits_per_value <= 8.0);
}

TEST_CASE("a deterministic biased operator: bias equals error, nnz counts the decoded zeros") {
  const std::vector<float> v = gaussian(4096);
  const mapping_compressor half([](float x, std::size_t i) { return i % 2 == 0 ? 0.5f * x : 0.0f; });
  const codec_metrics m = measure_codec(half, v, 4, 1);
  // Every trial gives the same C(v), so ||mean C(v) - v||^2 = ||C(v) - v||^2.
  CHECK(m.rel_bias == doctest::Approx(std::sqrt(m.rel_mse)).epsilon(1e-12));
  double even = 0, all = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    all += double(v[i]) * v[i];
    if (i % 2 == 0) even += double(v[i]) * v[i];
  }
  CHECK(m.rel_mse == doctest::Approx((0.25 * even + (all - even)) / all).epsilon(1e-12));
  CHECK(m.nnz_fraction == 0.5);
  CHECK(!m.unbiased);
  CHECK(std::isinf(m.relative_error_bound));
}

TEST_CASE("a codec that breaks its contract is reported as a bug, not measured") {
  const std::vector<float> v = gaussian(16);
  const auto same = [](float x, std::size_t) { return x; };
  CHECK(contains(error_of([&] { (void)measure_codec(mapping_compressor(same, 1), v, 1, 1); }),
                 "mapping wrote 65 bytes, max_encoded_bytes(16) = 64"));
  CHECK(contains(error_of([&] { (void)measure_codec(mapping_compressor(same, 0, true), v, 1, 1); }),
                 "mapping cannot decode its own payload: corrupt: refusing on purpose"));
}

TEST_CASE("JSON and table forms carry every metric; unbounded and undefined numbers are null") {
  codec_metrics m;
  m.codec = "qsgd:levels=127,bucket=512,norm=l2";
  m.input = "gaussian:n=10";
  m.n = 10;
  m.trials = 2;
  m.seed = 3;
  m.bits_per_value = 8.5;
  m.compression_ratio = 32 / 8.5;
  m.rel_mse = std::numeric_limits<double>::quiet_NaN();
  m.relative_error_bound = std::numeric_limits<double>::infinity();
  m.unbiased = true;
  const std::string json = to_json(m);
  CHECK(json.front() == '{');
  CHECK(json.back() == '}');
  for (const char* key : {"codec", "input", "n", "trials", "seed", "bits_per_value", "compression_ratio",
                          "entropy_bits_per_value", "rel_mse", "rel_bias", "nnz_fraction", "encode_gbps",
                          "decode_gbps", "unbiased", "relative_error_bound"}) {
    CAPTURE(key);
    CHECK(contains(json, "\"" + std::string(key) + "\":"));
  }
  CHECK(contains(json, "\"codec\":\"qsgd:levels=127,bucket=512,norm=l2\""));
  CHECK(contains(json, "\"bits_per_value\":8.5,"));
  CHECK(contains(json, "\"rel_mse\":null"));
  CHECK(contains(json, "\"relative_error_bound\":null"));
  CHECK(contains(json, "\"unbiased\":true"));
  const std::string table = to_table(m);
  CHECK(contains(table, "bits_per_value          8.5\n"));
  CHECK(contains(table, "rel_mse                 n/a\n"));
  CHECK(contains(table, "relative_error_bound    unbounded\n"));
}

TEST_CASE("--gen specs") {
  const gen_spec g = parse_gen_spec("laplace:n=123");
  CHECK(g.kind == "laplace");
  CHECK(g.n == 123);
  CHECK(parse_gen_spec("grad").n == 0);
  CHECK(parse_gen_spec("grad:n=101770").n == 101770);
  CHECK(contains(error_of([] { (void)parse_gen_spec("gausian:n=5"); }),
                 "--gen 'gausian:n=5': unknown kind 'gausian' (did you mean 'gaussian'?)"));
  CHECK(contains(error_of([] { (void)parse_gen_spec("uniform"); }), "missing n"));
  CHECK(contains(error_of([] { (void)parse_gen_spec("uniform:m=5"); }), "'m=5' is not n=N"));
  CHECK(contains(error_of([] { (void)parse_gen_spec("uniform:n=0"); }),
                 "expected an integer in [1, 2147483648]"));
  CHECK(contains(error_of([] { (void)parse_gen_spec("uniform:n=1e6"); }), "n = '1e6'"));
  CHECK(contains(error_of([] { (void)parse_gen_spec("uniform:n=99999999999"); }), "expected an integer"));
}

TEST_CASE("generated vectors: deterministic in the seed, with the stated distributions") {
  const std::size_t n = 100000;
  auto moments = [](const std::vector<float>& v) {
    double s = 0, s2 = 0;
    for (float x : v) {
      s += x;
      s2 += double(x) * x;
    }
    const double mean = s / double(v.size());
    return std::pair{mean, s2 / double(v.size()) - mean * mean};
  };
  // Tolerances are >= 6 standard deviations of the sample moment at n = 1e5 (and the seeds are fixed):
  // mean sd = sigma/316; variance sd = sqrt((E x^4 - sigma^4)/n) = 0.0045 (gaussian), 0.014 (laplace,
  // var 2, E x^4 = 24), 0.00094 (uniform, var 1/3, E x^4 = 1/5).
  const auto [gm, gv] = moments(gaussian(n));
  CHECK(std::abs(gm) < 0.02);
  CHECK(gv == doctest::Approx(1.0).epsilon(0.03));
  const codec_input lap = generate_input(gen_spec{"laplace", n}, 1);
  const auto [lm, lv] = moments(lap.values);
  CHECK(std::abs(lm) < 0.03);
  CHECK(lv == doctest::Approx(2.0).epsilon(0.05));
  const codec_input uni = generate_input(gen_spec{"uniform", n}, 1);
  const auto [um, uv] = moments(uni.values);
  CHECK(std::abs(um) < 0.01);
  CHECK(uv == doctest::Approx(1.0 / 3).epsilon(0.03));
  for (float x : uni.values) REQUIRE((x >= -1.0f && x < 1.0f));

  const codec_input hot = generate_input(gen_spec{"one-hot", 1000}, 5);
  CHECK(hot.source == "one-hot:n=1000");
  CHECK(hot.layers.empty());
  std::size_t ones = 0, zeros = 0;
  for (float x : hot.values) {
    ones += x == 1.0f;
    zeros += x == 0.0f;
  }
  CHECK(ones == 1);
  CHECK(zeros == 999);

  CHECK(gaussian(1000, 3) == gaussian(1000, 3));
  CHECK(gaussian(1000, 3) != gaussian(1000, 4));
  CHECK(gaussian(1000, 3) != generate_input(gen_spec{"laplace", 1000}, 3).values);
}

TEST_CASE("grad: a real MLP gradient on Fashion-MNIST with the model's layer bounds") {
  const layer_bounds expected{0, 100480, 101770};
  CHECK(grad_model_layers() == expected);
  CHECK(contains(error_of([] {
                   (void)generate_input(gen_spec{"grad", 0}, 1, "/nonexistent/fmnist");
                 }),
                 "cannot open /nonexistent/fmnist/train-images-idx3-ubyte.gz"));
  if (!fs::exists(kFashionMnistDir)) {
    MESSAGE("skipped: " << kFashionMnistDir << " not installed");
    return;
  }
  const codec_input g = generate_input(gen_spec{"grad", 0}, 1);
  CHECK(g.values.size() == 101770);
  CHECK(g.layers == expected);
  CHECK(contains(g.source, "grad:n=101770 (mlp 784-128-10"));
  double norm2 = 0;
  for (float x : g.values) {
    REQUIRE(std::isfinite(x));
    norm2 += double(x) * x;
  }
  CHECK(norm2 > 0.0);
  // Same seed, same gradient, up to float rounding: the MLP's Eigen products sum in an order that
  // depends on the alignment of the parameter and gradient buffers (a few values differ in the last
  // bits when the heap hands out differently aligned memory), so compare with a tolerance.
  const std::vector<float> again = generate_input(gen_spec{"grad", 101770}, 1).values;
  REQUIRE(again.size() == g.values.size());
  double diff2 = 0;
  for (std::size_t i = 0; i < again.size(); ++i) diff2 += std::pow(double(again[i]) - g.values[i], 2);
  CHECK(std::sqrt(diff2 / norm2) < 1e-5);
  CHECK(contains(error_of([] {
                   (void)generate_input(gen_spec{"grad", 1000}, 1);
                 }),
                 "--gen grad: n = 1000, but the gradient of mlp 784-128-10 has 101770 values"));
}

TEST_CASE("--layers sizes become layer bounds") {
  CHECK(parse_layer_sizes("7", 7) == layer_bounds{0, 7});
  CHECK(parse_layer_sizes("3,4", 7) == layer_bounds{0, 3, 7});
  CHECK(contains(error_of([] { (void)parse_layer_sizes("3,5", 7); }), "the sizes add up to more than n"));
  CHECK(contains(error_of([] { (void)parse_layer_sizes("3,3", 7); }), "the sizes add up to 6"));
  CHECK(contains(error_of([] { (void)parse_layer_sizes("0,7", 7); }), "'0' is not a positive integer"));
  CHECK(contains(error_of([] { (void)parse_layer_sizes("7,", 7); }), "'' is not a positive integer"));
  CHECK(contains(error_of([] { (void)parse_layer_sizes("", 7); }), "summing to n = 7"));
}

TEST_CASE("input files: raw float32 or .npy, non-empty and finite") {
  const temp_file raw("raw.f32", float_bytes({1.0f, -2.5f, 3.0f}));
  const codec_input in = read_input_file(raw.path.string());
  CHECK(in.values == std::vector<float>{1.0f, -2.5f, 3.0f});
  CHECK(in.source == raw.path.string());

  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  const std::string npy = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() + 1) + '\0' +
                          header + '\n' + float_bytes({4.0f, 5.0f});
  const temp_file numpy("v.npy", npy);
  CHECK(read_input_file(numpy.path.string()).values == std::vector<float>{4.0f, 5.0f});
  // The magic decides, whatever the name; a .npy name without the magic is an .npy error.
  const temp_file npy_named_raw("v.bin", npy);
  CHECK(read_input_file(npy_named_raw.path.string()).values == std::vector<float>{4.0f, 5.0f});
  const temp_file raw_named_npy("w.npy", float_bytes({1.0f}));
  CHECK(contains(error_of([&] { (void)read_input_file(raw_named_npy.path.string()); }), "bad magic"));

  const temp_file odd("odd.f32", "123456");
  CHECK(contains(error_of([&] { (void)read_input_file(odd.path.string()); }),
                 "odd.f32: size 6 bytes is not a multiple of 4"));
  const temp_file empty("empty.f32", "");
  CHECK(
      contains(error_of([&] { (void)read_input_file(empty.path.string()); }), "empty.f32: holds no values"));
  const temp_file nan("nan.f32", float_bytes({1.0f, std::numeric_limits<float>::quiet_NaN()}));
  CHECK(contains(error_of([&] { (void)read_input_file(nan.path.string()); }),
                 "nan.f32: value 1 is nan; codecs take finite vectors only"));
  CHECK(contains(error_of([] { (void)read_input_file("/nonexistent/v.f32"); }),
                 "/nonexistent/v.f32: cannot open: No such file or directory"));
}
