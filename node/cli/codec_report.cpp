#include "node/cli/codec_report.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>

#include "core/closest_match.hpp"
#include "core/errors.hpp"
#include "core/json.hpp"
#include "node/models/model_factory.hpp"
#include "node/data/npy.hpp"
#include "core/portable_random.hpp"

namespace qgossip {
namespace {

// 2^31 values (8 GiB of float32) is far beyond any model here; a larger n is a typo.
constexpr std::size_t kMaxGenValues = std::size_t{1} << 31;
constexpr std::size_t kGradInputs = 784;
constexpr std::size_t kGradClasses = 10;
// The model whose gradient --gen grad measures: an mlp 784-128-10.
model_spec grad_model() {
  model_spec s;
  s.kind = model_kind::mlp;
  s.hidden = {128};
  return s;
}

std::optional<std::size_t> parse_size(std::string_view text) {
  std::size_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string kinds_list() {
  std::string s;
  for (std::string_view k : kGenKinds) s += (s.empty() ? "" : ", ") + std::string(k);
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t m = xs.size() / 2;
  return xs.size() % 2 == 1 ? xs[m] : 0.5 * (xs[m - 1] + xs[m]);
}

}  // namespace

gen_spec parse_gen_spec(std::string_view text) {
  const std::string original(text);
  auto fail = [&](const std::string& what) {
    throw config_error("--gen '" + original + "': " + what + " (expected KIND:n=N, KIND one of " +
                       kinds_list() + "; grad takes no n)");
  };
  gen_spec spec;
  const std::size_t colon = text.find(':');
  spec.kind = std::string(text.substr(0, colon));
  if (std::find(std::begin(kGenKinds), std::end(kGenKinds), spec.kind) == std::end(kGenKinds)) {
    const std::string hint =
        closest_match(spec.kind, std::vector<std::string>(std::begin(kGenKinds), std::end(kGenKinds)));
    fail("unknown kind '" + spec.kind + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  }
  if (colon == std::string_view::npos) {
    if (spec.kind != "grad") fail("missing n");
    return spec;
  }
  const std::string_view rest = text.substr(colon + 1);
  if (!rest.starts_with("n=")) fail("'" + std::string(rest) + "' is not n=N");
  const std::optional<std::size_t> n = parse_size(rest.substr(2));
  if (!n || *n == 0 || *n > kMaxGenValues)
    fail("n = '" + std::string(rest.substr(2)) + "': expected an integer in [1, " +
         std::to_string(kMaxGenValues) + "]");
  spec.n = *n;
  return spec;
}

layer_bounds grad_model_layers() { return make_model(grad_model(), kGradInputs, kGradClasses)->layer_bounds(); }

codec_input generate_input(const gen_spec& spec, std::uint64_t seed, const std::string& data_dir) {
  codec_input in;
  if (spec.kind == "grad") {
    const dataset train = load_fashion_mnist(data_dir, split::train);
    const std::unique_ptr<model> m = make_model(grad_model(), train.dim, train.classes);
    if (spec.n != 0 && spec.n != m->num_params())
      throw config_error("--gen grad: n = " + std::to_string(spec.n) + ", but the gradient of " +
                         m->describe() + " has " + std::to_string(m->num_params()) + " values (leave n out)");
    std::vector<float> params(m->num_params());
    m->init(params, seed);
    std::mt19937_64 rng(derive_seed(seed, 0x6772616431));
    std::vector<std::size_t> batch(kGradBatch);
    for (std::size_t& i : batch) i = static_cast<std::size_t>(uniform_below(rng, train.size));
    in.values.resize(m->num_params());
    (void)m->loss_and_grad(params, train, batch, in.values);
    in.layers = m->layer_bounds();
    in.source = "grad:n=" + std::to_string(in.values.size()) + " (" + m->describe() + ", " +
                std::to_string(kGradBatch) + " Fashion-MNIST examples)";
    return in;
  }
  QG_ENFORCE(spec.n >= 1, "gen " << spec.kind << " needs n");
  in.values.resize(spec.n);
  in.source = spec.kind + ":n=" + std::to_string(spec.n);
  // One stream per kind, so gaussian and laplace vectors from one seed are not built from the same bits.
  const auto kind_index = static_cast<std::uint64_t>(
      std::find(std::begin(kGenKinds), std::end(kGenKinds), spec.kind) - std::begin(kGenKinds));
  std::mt19937_64 rng(derive_seed(seed, kind_index));
  if (spec.kind == "gaussian") {
    fill_normal(in.values, 1.0, rng);
  } else if (spec.kind == "laplace") {
    // An exponential magnitude -ln(u), u in (0, 1], with a random sign.
    for (float& x : in.values) {
      const double u = static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53;
      const double magnitude = -std::log(u);
      x = static_cast<float>((rng() & 1) ? -magnitude : magnitude);
    }
  } else if (spec.kind == "uniform") {
    for (float& x : in.values) x = static_cast<float>(2.0 * uniform_01(rng) - 1.0);
  } else if (spec.kind == "one-hot") {
    in.values[static_cast<std::size_t>(uniform_below(rng, spec.n))] = 1.0f;
  } else {
    QG_ENFORCE(false, "unhandled gen kind " << spec.kind);
  }
  return in;
}

void require_finite(std::span<const float> values, const std::string& source) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw config_error(source + ": value " + std::to_string(i) + " is " + std::to_string(values[i]) +
                         "; codecs take finite vectors only");
}

codec_input read_input_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw config_error(path, 0, 0, std::string("cannot open: ") + std::strerror(errno));
  const std::vector<char> raw((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) throw config_error(path, 0, 0, "read error");
  const std::span<const std::byte> bytes = std::as_bytes(std::span<const char>(raw));
  codec_input in;
  in.source = path;
  if (has_npy_magic(bytes) || path.ends_with(".npy")) {
    in.values = parse_npy(bytes, path);
  } else {
    if (bytes.size() % 4 != 0)
      throw config_error(
          path, 0, 0,
          "size " + std::to_string(bytes.size()) +
              " bytes is not a multiple of 4 (expected raw little-endian float32 or a .npy file)");
    in.values.resize(bytes.size() / 4);
    if (!bytes.empty()) std::memcpy(in.values.data(), bytes.data(), bytes.size());
  }
  if (in.values.empty()) throw config_error(path, 0, 0, "holds no values");
  require_finite(in.values, path);
  return in;
}

layer_bounds parse_layer_sizes(std::string_view text, std::size_t n) {
  const std::string original(text);
  auto fail = [&](const std::string& what) {
    throw config_error(
        "--layers '" + original + "': " + what +
        " (expected comma-separated layer sizes, each >= 1, summing to n = " + std::to_string(n) + ")");
  };
  layer_bounds bounds{0};
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const std::optional<std::size_t> size = parse_size(item);
    if (!size || *size == 0) fail("'" + std::string(item) + "' is not a positive integer");
    if (*size > n - bounds.back()) fail("the sizes add up to more than n");
    bounds.push_back(bounds.back() + *size);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (bounds.back() != n) fail("the sizes add up to " + std::to_string(bounds.back()));
  return bounds;
}

codec_metrics measure_codec(const compressor& c, std::span<const float> v, std::size_t trials,
                            std::uint64_t seed) {
  QG_ENFORCE(!v.empty() && trials >= 1, "n=" << v.size() << " trials=" << trials);
  const std::size_t n = v.size();
  const std::size_t max_bytes = c.max_encoded_bytes(n);
  double norm2 = 0.0;
  for (float x : v) norm2 += static_cast<double>(x) * x;

  std::vector<std::byte> payload(max_bytes);  // touched once, so page faults stay out of the timings
  std::vector<float> decoded(n);
  std::vector<double> decoded_sum(n, 0.0);
  std::vector<double> encode_s, decode_s;
  double bits = 0.0, rel_mse = 0.0, nnz = 0.0, entropy = 0.0;
  for (std::size_t t = 0; t < trials; ++t) {
    const codec_context ctx{.seed = seed, .rank = 0, .iteration = t, .stream = 0};
    payload.clear();
    const auto t0 = std::chrono::steady_clock::now();
    c.encode(v, ctx, payload);
    encode_s.push_back(seconds_since(t0));
    QG_ENFORCE(payload.size() <= max_bytes, c.describe()
                                                << " wrote " << payload.size() << " bytes, max_encoded_bytes("
                                                << n << ") = " << max_bytes);
    const auto t1 = std::chrono::steady_clock::now();
    const status st = c.decode(payload, ctx, decoded);
    decode_s.push_back(seconds_since(t1));
    QG_ENFORCE(st.is_ok(), c.describe() << " cannot decode its own payload: " << st.to_string());

    double err2 = 0.0;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(decoded[i]) - v[i];
      err2 += d * d;
      decoded_sum[i] += decoded[i];
      nonzero += decoded[i] != 0.0f;
    }
    bits += 8.0 * static_cast<double>(payload.size());
    rel_mse += err2 / norm2;
    nnz += static_cast<double>(nonzero) / static_cast<double>(n);
    entropy += c.entropy_bits_per_value(payload, n, ctx);
  }

  const double t_count = static_cast<double>(trials);
  double bias2 = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = decoded_sum[i] / t_count - v[i];
    bias2 += d * d;
  }
  codec_metrics m;
  m.codec = c.describe();
  m.n = n;
  m.trials = trials;
  m.seed = seed;
  m.bits_per_value = bits / t_count / static_cast<double>(n);
  m.compression_ratio = 32.0 / m.bits_per_value;
  m.entropy_bits_per_value = entropy / t_count;
  m.rel_mse = rel_mse / t_count;
  m.rel_bias = std::sqrt(bias2 / norm2);
  m.nnz_fraction = nnz / t_count;
  const double input_gb = 4.0 * static_cast<double>(n) / 1e9;
  m.encode_gbps = input_gb / median(encode_s);
  m.decode_gbps = input_gb / median(decode_s);
  m.unbiased = c.unbiased();
  m.relative_error_bound = c.relative_error_bound(n);
  return m;
}

std::string to_json(const codec_metrics& m) {
  return json_text({{"codec", m.codec},
                    {"input", m.input},
                    {"n", m.n},
                    {"trials", m.trials},
                    {"seed", m.seed},
                    {"bits_per_value", m.bits_per_value},
                    {"compression_ratio", m.compression_ratio},
                    {"entropy_bits_per_value", m.entropy_bits_per_value},
                    {"rel_mse", m.rel_mse},
                    {"rel_bias", m.rel_bias},
                    {"nnz_fraction", m.nnz_fraction},
                    {"encode_gbps", m.encode_gbps},
                    {"decode_gbps", m.decode_gbps},
                    {"unbiased", m.unbiased},
                    {"relative_error_bound", m.relative_error_bound}});
}

std::string to_table(const codec_metrics& m) {
  std::string out;
  auto row = [&](const char* name, const std::string& value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%-24s", name);
    out += buf + value + "\n";
  };
  auto num = [](double x, const char* format = "%.6g") {
    if (!std::isfinite(x)) return std::string(std::isnan(x) ? "n/a" : "unbounded");
    char buf[64];
    std::snprintf(buf, sizeof buf, format, x);
    return std::string(buf);
  };
  row("codec", m.codec);
  row("input", m.input + ", seed " + std::to_string(m.seed));
  row("n", std::to_string(m.n));
  row("trials", std::to_string(m.trials));
  row("bits_per_value", num(m.bits_per_value));
  row("compression_ratio", num(m.compression_ratio, "%.4g") + "x");
  row("entropy_bits_per_value", num(m.entropy_bits_per_value));
  row("rel_mse", num(m.rel_mse));
  row("rel_bias", num(m.rel_bias));
  row("nnz_fraction", num(m.nnz_fraction));
  row("encode_gbps", num(m.encode_gbps, "%.3f") + " GB/s (median)");
  row("decode_gbps", num(m.decode_gbps, "%.3f") + " GB/s (median)");
  row("unbiased", m.unbiased ? "yes" : "no");
  row("relative_error_bound", num(m.relative_error_bound));
  return out;
}

}  // namespace qgossip
