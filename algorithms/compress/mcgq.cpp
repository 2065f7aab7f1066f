#include "algorithms/compress/mcgq.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

#include "algorithms/compress/bit_stream.hpp"
#include "algorithms/compress/codec_params.hpp"
#include "algorithms/compress/entropy.hpp"
#include "algorithms/compress/run_length.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/finite.hpp"
#include "kernels/cpu/mcgq.hpp"
#include "kernels/cpu/philox.hpp"

namespace qgossip {
namespace {

std::uint32_t float_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

status corrupt(std::size_t layer, const std::string& what) {
  return status::error(errc::corrupt, "mcgq: layer " + std::to_string(layer) + ": " + what);
}

// coding=dense: B_q in 32 bits, then every value as a B_q-bit sign-magnitude code (as run_length.hpp).
void dense_encode(std::span<const std::int32_t> q, bit_stream_writer& out) {
  const std::uint32_t value_bits = run_length_widths_of(q).value_bits;
  const std::uint64_t sign = std::uint64_t{1} << (value_bits - 1);
  out.put_bits(value_bits, 32);
  for (const std::int32_t x : q)
    out.put_bits(x < 0 ? sign | static_cast<std::uint32_t>(-x) : static_cast<std::uint32_t>(x), value_bits);
}

status dense_decode(bit_stream_reader& in, std::span<std::int32_t> out) {
  const auto corrupt = [](const std::string& what) { return status::error(errc::corrupt, "dense: " + what); };
  std::uint64_t value_bits = 0;
  if (!in.get_bits(32, value_bits)) return corrupt("truncated value width");
  if (value_bits < 1 || value_bits > kRunLengthMaxValueBits)
    return corrupt("value width B_q = " + std::to_string(value_bits) + " outside [1, 32]");
  const auto vb = static_cast<unsigned>(value_bits);
  const std::uint64_t sign = std::uint64_t{1} << (vb - 1);
  std::uint64_t largest = 0;
  for (std::size_t k = 0; k < out.size(); ++k) {
    std::uint64_t code = 0;
    if (!in.get_bits(vb, code)) return corrupt("truncated at value " + std::to_string(k));
    const std::uint64_t m = code & (sign - 1);
    if (code == sign) return corrupt("negative zero at value " + std::to_string(k));
    out[k] = (code & sign) != 0 ? -static_cast<std::int32_t>(m) : static_cast<std::int32_t>(m);
    largest = std::max(largest, m);
  }
  if (value_bits != 1 + static_cast<std::uint64_t>(std::bit_width(largest)))
    return corrupt("value width B_q = " + std::to_string(value_bits) + " is not the one the values need");
  return status::ok();
}

std::uint64_t dense_max_bits(std::size_t n, std::uint64_t max_magnitude) {
  return 32 + n * (1 + static_cast<std::uint64_t>(std::bit_width(max_magnitude)));
}

}  // namespace

mcgq_compressor::mcgq_compressor(const mcgq_options& options, layer_bounds layers)
    : options_(options), layers_(std::move(layers)) {
  QG_ENFORCE(options.k > 0.0 && options.k <= kMcgqMaxK, "K=" << options.k);
  QG_ENFORCE(options.dk >= 0.0 && std::isfinite(options.dk), "dk=" << options.dk);
  QG_ENFORCE(layers_.empty() || (layers_.size() >= 2 && layers_.front() == 0 &&
                                 std::is_sorted(layers_.begin(), layers_.end())),
             "invalid layer bounds (" << layers_.size() << " entries)");
  std::string text = describe() + "|layers";
  for (const std::size_t b : layers_) text += "," + std::to_string(b);  // the bytes depend on them
  params_tag_ = params_tag_of(text);
}

std::string mcgq_compressor::describe() const {
  std::string s = "mcgq:K=" + format_real(options_.k) +
                  ",coding=" + (options_.coding == mcgq_coding::rle ? "rle" : "dense") +
                  ",variant=" + (options_.variant == mcgq_variant::plain ? "plain" : "accumulate") +
                  ",dynamic=" + (options_.dynamic ? "true" : "false");
  if (options_.dynamic) s += ",dk=" + format_real(options_.dk);
  return s;
}

double mcgq_compressor::min_k() const {
  return options_.dynamic ? options_.k / kMcgqDynamicRange : options_.k;
}

double mcgq_compressor::max_k() const {
  return options_.dynamic ? std::min(options_.k * kMcgqDynamicRange, kMcgqMaxK) : options_.k;
}

std::vector<std::size_t> mcgq_compressor::bounds_for(std::size_t n) const {
  if (!layers_.empty() && layers_.back() == n) return layers_;
  return {0, n};
}

double mcgq_compressor::relative_error_bound(std::size_t n) const {
  if (n == 0) return 0.0;
  if (options_.variant == mcgq_variant::accumulate) return std::numeric_limits<double>::infinity();
  // Per layer of L values with T = ||g||_1 and N >= L K samples, element k's error is (T/N)(c - N p_k)
  // with c = floor or ceil of N p_k: variance (T/N)^2 f(1-f), f = frac(N p_k) <= N p_k, and
  // f(1-f) <= min(1/4, f). Summed: <= min(L T^2/(4 N^2), T^2/N) <= min(1/(4K^2), 1/K) ||g||_2^2, using
  // T^2 <= L ||g||_2^2. The layers sum to the same factor. Dynamic K never goes below min_k().
  const double k = min_k();
  return std::min(1.0 / (4.0 * k * k), 1.0 / k);
}

std::size_t mcgq_compressor::max_encoded_bytes(std::size_t n) const {
  const std::vector<std::size_t> bounds = bounds_for(n);
  std::uint64_t bits = 0;
  for (std::size_t l = 0; l + 1 < bounds.size(); ++l) {
    const std::size_t len = bounds[l + 1] - bounds[l];
    const std::uint64_t samples = std::min(kernels::mcgq_samples(len, max_k()), kernels::kMcgqMaxSamples);
    bits += 32;  // ||g||_1
    // sum |g_int| = N <= samples, which also bounds the number of nonzero values.
    bits += options_.coding == mcgq_coding::rle ? run_length_max_bits(len, samples)
                                                : dense_max_bits(len, samples);
  }
  return static_cast<std::size_t>((bits + 7) / 8);
}

void mcgq_compressor::reset_sender_state() {
  const std::lock_guard<std::mutex> lock(mutex_);
  states_.clear();
}

// Every stream in ascending order: its accumulator (accumulate) and per-layer K and last distance
// (dynamic), each possibly empty (a stream not yet encoded with). Doubles keep their bits, NaN too.
void mcgq_compressor::save_sender_state(state_writer& out) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  out.put_string("codec", describe());
  out.put_u64("params_tag", params_tag_);
  out.put_u64("streams", states_.size());
  for (const auto& [stream, state] : states_) {
    out.put_u64("stream", stream);
    out.put_floats("accumulator", state.accumulator);
    out.put_doubles("k", state.k);
    out.put_doubles("distance", state.distance);
  }
}

void mcgq_compressor::load_sender_state(state_reader& in) {
  in.expect_string("codec", describe());
  in.expect_u64("params_tag", params_tag_);
  const std::uint64_t streams = in.get_u64("streams");
  std::map<std::uint32_t, sender_state> loaded;
  for (std::uint64_t i = 0; i < streams; ++i) {
    const std::uint64_t stream = in.get_u64("stream");
    if (stream > std::numeric_limits<std::uint32_t>::max() || loaded.count(static_cast<std::uint32_t>(stream)))
      in.fail("mcgq: stream " + std::to_string(stream) + " is out of range or repeated");
    sender_state state{in.get_floats("accumulator"), in.get_doubles("k"), in.get_doubles("distance")};
    if (kernels::first_non_finite(state.accumulator) != state.accumulator.size())
      in.fail("mcgq: stream " + std::to_string(stream) + ": a non-finite accumulator value");
    if (state.k.size() != state.distance.size())
      in.fail("mcgq: stream " + std::to_string(stream) + ": " + std::to_string(state.k.size()) + " K values but " +
              std::to_string(state.distance.size()) + " distances");
    for (const double k : state.k)
      if (!(k >= min_k() && k <= max_k()))
        in.fail("mcgq: stream " + std::to_string(stream) + ": K = " + std::to_string(k) + " outside [" +
                std::to_string(min_k()) + ", " + std::to_string(max_k()) + "]");
    loaded.emplace(static_cast<std::uint32_t>(stream), std::move(state));
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  states_ = std::move(loaded);
}

std::vector<double> mcgq_compressor::current_k_for_testing(std::uint32_t stream, std::size_t n) const {
  const std::size_t layers = bounds_for(n).size() - 1;
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = states_.find(stream);
  if (it == states_.end() || it->second.k.empty()) return std::vector<double>(layers, options_.k);
  return it->second.k;
}

void mcgq_compressor::encode(std::span<const float> v, const codec_context& ctx,
                             std::vector<std::byte>& out) const {
  const std::size_t n = v.size();
  QG_ENFORCE(layers_.empty() || n == layers_.back(),
             "mcgq: " << n << " values for a model of " << layers_.back() << " parameters");
  const std::size_t bad = kernels::first_non_finite(v);
  QG_ENFORCE(bad == n, "mcgq: non-finite input " << v[bad] << " at index " << bad);
  const std::vector<std::size_t> bounds = bounds_for(n);
  const std::size_t layers = bounds.size() - 1;
  std::size_t longest = 0;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::size_t len = bounds[l + 1] - bounds[l];
    longest = std::max(longest, len);
    QG_ENFORCE(
        kernels::mcgq_samples(len, max_k()) <= kernels::kMcgqMaxSamples,
        "mcgq: layer " << l << " of " << len << " values needs more than 2^31 - 1 samples at K=" << max_k());
  }

  // The stateless variant needs no lock; the stateful ones hold it for the whole encode.
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  sender_state* state = nullptr;
  std::span<float> acc;
  if (stateful()) {
    lock.lock();
    state = &states_[ctx.stream];
    if (options_.dynamic && state->k.size() != layers) {
      state->k.assign(layers, options_.k);
      state->distance.assign(layers, std::numeric_limits<double>::quiet_NaN());
    }
    if (options_.variant == mcgq_variant::accumulate) {
      if (state->accumulator.size() != n) state->accumulator.assign(n, 0.0f);
      acc = state->accumulator;
      kernels::mcgq_accumulate(acc, v);
      const std::size_t over = kernels::first_non_finite(acc);
      if (over != n) {
        state->accumulator.clear();
        QG_ENFORCE(false, "mcgq: the accumulator overflowed at index " << over);
      }
    }
  }
  const std::span<const float> source = acc.empty() ? v : std::span<const float>(acc);

  const kernels::philox_stream rng =
      kernels::philox_stream::make(ctx.seed, ctx.rank, ctx.iteration, ctx.stream);
  std::vector<std::int32_t> q(longest);
  bit_stream_writer writer(out);
  for (std::size_t l = 0; l < layers; ++l) {
    const std::size_t len = bounds[l + 1] - bounds[l];
    const std::span<const float> g = source.subspan(bounds[l], len);
    const std::span<std::int32_t> g_int(q.data(), len);
    const double k = options_.dynamic ? state->k[l] : options_.k;
    const double total =
        kernels::mcgq_quantize(g, kernels::mcgq_samples(len, k), kernels::mcgq_offset(rng, l), g_int);
    const float norm = total > double{std::numeric_limits<float>::max()} ? std::numeric_limits<float>::max()
                                                                         : static_cast<float>(total);
    writer.put_bits(float_bits(norm), 32);
    if (options_.coding == mcgq_coding::rle)
      run_length_encode(g_int, writer);
    else
      dense_encode(g_int, writer);
    if (options_.dynamic) {  // Alg. 3: K <- K + delta_K (d' - d), d' the previous distance
      const double d = kernels::mcgq_wasserstein(g, g_int);
      const double before = std::isnan(state->distance[l]) ? d : state->distance[l];
      state->k[l] = std::clamp(k + options_.dk * (before - d), min_k(), max_k());
      state->distance[l] = d;
    }
    if (!acc.empty()) kernels::mcgq_reset_sampled(acc.subspan(bounds[l], len), g_int);  // Alg. 4
  }
}

status mcgq_compressor::decode(std::span<const std::byte> in, const codec_context& ctx,
                               std::span<float> out) const {
  return decode_counting(in, out, nullptr);
}

double mcgq_compressor::entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                               const codec_context& ctx) const {
  if (n == 0) return 0.0;
  std::vector<float> values(n);
  symbol_histogram symbols;
  const status st = decode_counting(encoded, values, &symbols);
  QG_ENFORCE(st.is_ok(), "mcgq: entropy of a payload that does not decode: " << st.message());
  return symbols.entropy_bits_per_symbol();
}

status mcgq_compressor::decode_counting(std::span<const std::byte> in, std::span<float> out,
                                        symbol_histogram* symbols) const {
  const std::size_t n = out.size();
  if (!layers_.empty() && n != layers_.back())
    return status::error(errc::corrupt, "mcgq: asked for " + std::to_string(n) + " values, the model has " +
                                            std::to_string(layers_.back()));
  const std::vector<std::size_t> bounds = bounds_for(n);
  std::size_t longest = 0;
  for (std::size_t l = 0; l + 1 < bounds.size(); ++l) longest = std::max(longest, bounds[l + 1] - bounds[l]);
  bit_stream_reader reader(in);
  std::vector<std::int32_t> q(longest);
  for (std::size_t l = 0; l + 1 < bounds.size(); ++l) {
    const std::size_t len = bounds[l + 1] - bounds[l];
    std::uint64_t norm_bits = 0;
    if (!reader.get_bits(32, norm_bits)) return corrupt(l, "truncated norm");
    if (norm_bits >= 0x7f800000u) return corrupt(l, "the norm is NaN, infinite or negative");
    const std::span<std::int32_t> g_int(q.data(), len);
    const status st =
        options_.coding == mcgq_coding::rle ? run_length_decode(reader, g_int) : dense_decode(reader, g_int);
    if (!st.is_ok()) return corrupt(l, st.message());
    std::uint64_t samples = 0;
    for (const std::int32_t x : g_int) samples += static_cast<std::uint64_t>(x < 0 ? -std::int64_t{x} : x);
    const double norm = std::bit_cast<float>(static_cast<std::uint32_t>(norm_bits));
    if (norm == 0.0) {
      if (samples != 0) return corrupt(l, "nonzero values with a zero norm");
    } else {
      const std::uint64_t lo = kernels::mcgq_samples(len, min_k()), hi = kernels::mcgq_samples(len, max_k());
      if (samples == 0 || samples < lo || samples > hi)
        return corrupt(l, std::to_string(samples) + " samples, expected " +
                              (lo == hi ? std::to_string(lo)
                                        : "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]") +
                              " for " + std::to_string(len) + " values");
    }
    if (symbols != nullptr)
      for (const std::int32_t x : g_int) symbols->add(x);
    kernels::mcgq_dequantize(g_int, samples == 0 ? 0.0 : norm / static_cast<double>(samples),
                             out.subspan(bounds[l], len));
  }
  if (!reader.at_padding())
    return status::error(errc::corrupt, "mcgq: " + std::to_string(reader.bits_left()) +
                                            " bits after the last layer (must be < 8 zero bits)");
  return status::ok();
}

std::unique_ptr<compressor> make_mcgq(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {"K", "coding", "variant", "dynamic", "dk"});
  mcgq_options options;
  options.k = params.get_real("K", 1.0, 0.0, kMcgqMaxK, true);
  options.coding =
      params.get_choice("coding", "rle", {"rle", "dense"}) == "rle" ? mcgq_coding::rle : mcgq_coding::dense;
  options.variant = params.get_choice("variant", "plain", {"plain", "accumulate"}) == "plain"
                        ? mcgq_variant::plain
                        : mcgq_variant::accumulate;
  options.dynamic = params.get_choice("dynamic", "false", {"false", "true"}) == "true";
  if (params.has("dk") && !options.dynamic) params.fail("parameter 'dk' needs dynamic=true");
  options.dk = params.get_real("dk", 1.0, 0.0, 1e9, false);
  if (!layers.empty() &&
      (layers.size() < 2 || layers.front() != 0 || !std::is_sorted(layers.begin(), layers.end())))
    params.fail("layer bounds must be {0, ..., total} in non-decreasing order");
  return std::make_unique<mcgq_compressor>(options, layers);
}

}  // namespace qgossip
