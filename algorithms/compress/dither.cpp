#include "algorithms/compress/dither.hpp"

#include <algorithm>

#include "algorithms/compress/codec_params.hpp"
#include "algorithms/compress/entropy.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/bitpack.hpp"
#include "kernels/cpu/dither.hpp"
#include "kernels/cpu/finite.hpp"
#include "kernels/cpu/philox.hpp"

namespace qgossip {
namespace {

kernels::philox_stream stream_of(const codec_context& ctx) {
  return kernels::philox_stream::make(ctx.seed, ctx.rank, ctx.iteration, ctx.stream);
}

bool valid_layers(const layer_bounds& layers) {
  return layers.empty() ||
         (layers.size() >= 2 && layers.front() == 0 && std::is_sorted(layers.begin(), layers.end()));
}

}  // namespace

dither_compressor::dither_compressor(const dither_options& options, layer_bounds layers)
    : options_(options), layers_(std::move(layers)) {
  QG_ENFORCE(options.levels >= 1 && options.levels <= kernels::kDitherMaxLevels, "levels=" << options.levels);
  QG_ENFORCE(valid_layers(layers_), "invalid layer bounds (" << layers_.size() << " entries)");
  std::string text = describe() + "|layers";
  for (const std::size_t b : layers_) text += "," + std::to_string(b);  // the buckets depend on them
  params_tag_ = params_tag_of(text);
}

std::string dither_compressor::describe() const {
  return "dither:K=" + std::to_string(options_.levels) + ",bucket=" + std::to_string(options_.bucket);
}

std::uint32_t dither_compressor::bits() const { return kernels::dither_code_bits(options_.levels); }

std::vector<std::size_t> dither_compressor::bucket_bounds(std::size_t n) const {
  const layer_bounds one{0, n};
  const layer_bounds& layers = !layers_.empty() && layers_.back() == n ? layers_ : one;
  std::vector<std::size_t> bounds{0};
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    const std::size_t end = layers[l + 1];
    const std::size_t step = options_.bucket == 0 ? end - layers[l] : options_.bucket;
    for (std::size_t start = layers[l]; start < end; start += std::min(step, end - start))
      bounds.push_back(std::min(start + step, end));
  }
  return bounds;
}

double dither_compressor::relative_error_bound(std::size_t n) const {
  const std::vector<std::size_t> bounds = bucket_bounds(n);
  std::size_t longest = 0;
  for (std::size_t b = 0; b + 1 < bounds.size(); ++b) longest = std::max(longest, bounds[b + 1] - bounds[b]);
  // Each value's error is uniform on an interval of width kappa_b = max_b / K: variance kappa_b^2 / 12.
  // Summed over a bucket of d_b values: d_b max_b^2 / (12 K^2) <= d_b ||x_b||_2^2 / (12 K^2), and over
  // buckets <= longest / (12 K^2) ||x||^2. The factor 1 + 1e-6 covers the 2^-24 grid of the dither
  // and float rounding of x / kappa.
  const double k = options_.levels;
  return static_cast<double>(longest) / (12.0 * k * k) * (1.0 + 1e-6);
}

std::size_t dither_compressor::max_encoded_bytes(std::size_t n) const {
  return kernels::dither_encoded_bytes(n, bucket_bounds(n).size() - 1, options_.levels);
}

void dither_compressor::encode(std::span<const float> v, const codec_context& ctx,
                               std::vector<std::byte>& out) const {
  QG_ENFORCE(layers_.empty() || v.size() == layers_.back(),
             "dither: " << v.size() << " values for a model of " << layers_.back() << " parameters");
  const std::vector<std::size_t> bounds = bucket_bounds(v.size());
  const std::size_t old = out.size();
  out.resize(old + kernels::dither_encoded_bytes(v.size(), bounds.size() - 1, options_.levels));
  if (!kernels::dither_encode(v, bounds, options_.levels, stream_of(ctx),
                              std::span<std::byte>(out).subspan(old))) {
    out.resize(old);
    const std::size_t index = kernels::first_non_finite(v);
    QG_ENFORCE(false, "dither: non-finite input " << v[index] << " at index " << index);
  }
}

status dither_compressor::decode(std::span<const std::byte> in, const codec_context& ctx,
                                 std::span<float> out) const {
  using kernels::dither_fault;
  if (!layers_.empty() && out.size() != layers_.back())
    return status::error(errc::corrupt, "dither: asked for " + std::to_string(out.size()) +
                                            " values, the model has " + std::to_string(layers_.back()));
  const std::vector<std::size_t> bounds = bucket_bounds(out.size());
  const kernels::dither_decode_result r =
      kernels::dither_decode(in, bounds, options_.levels, stream_of(ctx), out);
  switch (r.fault) {
    case dither_fault::none:
      return status::ok();
    case dither_fault::size:
      return status::error(errc::corrupt, "dither: payload of " + std::to_string(in.size()) +
                                              " bytes, expected " +
                                              std::to_string(max_encoded_bytes(out.size())) + " for " +
                                              std::to_string(out.size()) + " values");
    case dither_fault::scale:
      return status::error(errc::corrupt, "dither: bucket " + std::to_string(r.index) +
                                              " has a NaN, infinite or negative scale");
    case dither_fault::code:
      return status::error(errc::corrupt, "dither: invalid index code for element " +
                                              std::to_string(r.index) +
                                              " (K=" + std::to_string(options_.levels) + ")");
    case dither_fault::padding:
      return status::error(errc::corrupt, "dither: nonzero padding bits after the last code");
  }
  return status::error(errc::corrupt, "dither: unknown decode fault");
}

double dither_compressor::entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                                 const codec_context& ctx) const {
  if (n == 0) return 0.0;
  std::vector<float> values(n);
  const status st = decode(encoded, ctx, values);  // validates, so the codes below are well formed
  QG_ENFORCE(st.is_ok(), "dither: entropy of a payload that does not decode: " << st.message());
  const std::size_t buckets = bucket_bounds(n).size() - 1;
  kernels::bit_reader reader(encoded.subspan(4 * buckets));
  symbol_histogram symbols;
  constexpr std::size_t kTile = 1024;
  std::uint16_t codes[kTile];
  for (std::size_t t = 0; t < n; t += kTile) {
    const std::size_t m = std::min(kTile, n - t);
    reader.get(std::span<std::uint16_t>(codes, m), bits());
    for (std::size_t i = 0; i < m; ++i) symbols.add(std::int64_t{codes[i]} - options_.levels);
  }
  return symbols.entropy_bits_per_symbol();
}

std::unique_ptr<compressor> make_dither(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {"K", "bucket"});
  dither_options options;
  options.levels = static_cast<std::uint32_t>(params.get_uint("K", 127, 1, kernels::kDitherMaxLevels));
  options.bucket = static_cast<std::size_t>(params.get_uint("bucket", 0, 0, std::uint64_t{1} << 40));
  if (!valid_layers(layers)) params.fail("layer bounds must be {0, ..., total} in non-decreasing order");
  return std::make_unique<dither_compressor>(options, layers);
}

}  // namespace qgossip
