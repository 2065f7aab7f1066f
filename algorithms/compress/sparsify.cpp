#include "algorithms/compress/sparsify.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "algorithms/compress/codec_params.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/finite.hpp"
#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/sparse.hpp"

static_assert(std::endian::native == std::endian::little, "sparse payloads are little-endian");

namespace qgossip {
namespace {

kernels::philox_stream stream_of(const codec_context& ctx) {
  return kernels::philox_stream::make(ctx.seed, ctx.rank, ctx.iteration, ctx.stream);
}

const std::string* find_param(const codec_spec& spec, std::string_view key) {
  for (const auto& [k, v] : spec.params)
    if (k == key) return &v;
  return nullptr;
}

constexpr std::size_t kMaxElements = std::size_t{0xffffffffu};  // the wire's 32-bit element count

// Refuses input that is non-finite, or whose kept values overflow once scaled; out is left as it was.
void enforce_finite(std::string_view codec, std::span<const float> v, std::span<const float> values,
                    std::span<const std::uint32_t> positions, std::vector<std::byte>& out, std::size_t old) {
  const std::size_t bad = kernels::first_non_finite(values);
  if (bad == values.size()) return;
  out.resize(old);
  QG_ENFORCE(false, codec << ": value " << v[positions[bad]] << " at index " << positions[bad]
                          << " is non-finite or overflows float32 once scaled");
}

void append_u32(std::vector<std::byte>& out, std::uint32_t x) {
  const auto bytes = std::bit_cast<std::array<std::byte, 4>>(x);
  out.insert(out.end(), bytes.begin(), bytes.end());
}

}  // namespace

// --- shared pieces ---------------------------------------------------------------------------------

void append_count(std::vector<std::byte>& out, std::size_t n) {
  QG_ENFORCE(n <= kMaxElements, n << " values");
  append_u32(out, static_cast<std::uint32_t>(n));
}

status check_count(std::string_view codec, std::span<const std::byte> in, std::size_t n) {
  if (in.size() < 4)
    return status::error(errc::corrupt, std::string(codec) + ": payload of " + std::to_string(in.size()) +
                                            " bytes, too short for its element count");
  std::uint32_t count = 0;
  std::memcpy(&count, in.data(), 4);
  if (count != n)
    return status::error(errc::corrupt, std::string(codec) + ": payload made for " + std::to_string(count) +
                                            " values, decoded as " + std::to_string(n));
  return status::ok();
}

// --- keep_count ----------------------------------------------------------------------------------

std::size_t keep_count::of(std::size_t n) const {
  if (n == 0) return 0;
  if (k > 0) return static_cast<std::size_t>(std::min<std::uint64_t>(k, n));
  // One correctly rounded product, so every machine agrees; then round half away from zero.
  const auto r = static_cast<std::size_t>(std::llround(ratio * static_cast<double>(n)));
  return std::clamp<std::size_t>(r, 1, n);
}

std::string keep_count::describe() const {
  return k > 0 ? "k=" + std::to_string(k) : "ratio=" + format_real(ratio);
}

keep_count parse_keep_count(const codec_spec& spec, const codec_params& params, double default_ratio) {
  keep_count keep;
  keep.ratio = default_ratio;
  if (params.has("k") && params.has("ratio"))
    params.fail("give either 'k' (a count) or 'ratio' (a fraction of the vector), not both");
  if (params.has("k")) {
    keep.k = params.get_uint("k", 1, 1, kMaxElements);
  } else {
    keep.ratio = params.get_real("ratio", default_ratio, 0.0, 1.0);
    if (!(keep.ratio > 0.0))
      params.fail("parameter 'ratio' = '" + *find_param(spec, "ratio") + "': expected a fraction in (0, 1]");
  }
  return keep;
}

// --- randsparse ----------------------------------------------------------------------------------

randsparse_compressor::randsparse_compressor(const randsparse_options& options) : options_(options) {
  QG_ENFORCE(options.p >= 0x1p-24 && options.p <= 1.0, "p=" << options.p);
  threshold_ = static_cast<std::uint32_t>(std::llround(options.p * 0x1p24));
  scale_ = static_cast<float>(0x1p24 / static_cast<double>(threshold_));
  params_tag_ = params_tag_of(describe());
}

std::string randsparse_compressor::describe() const { return "randsparse:p=" + format_real(options_.p); }

double randsparse_compressor::relative_error_bound(std::size_t n) const {
  // Each value is v/p' with probability p', else 0: E(C_i - v_i)^2 = v_i^2 (1/p' - 1).
  return n == 0 ? 0.0 : 1.0 / effective_p() - 1.0;
}

std::size_t randsparse_compressor::max_encoded_bytes(std::size_t n) const {
  // Every value kept, and a position coding never longer than the bitmap.
  return kHeader + 4 * n + kernels::bitmap_bytes(n);
}

void randsparse_compressor::encode(std::span<const float> v, const codec_context& ctx,
                                   std::vector<std::byte>& out) const {
  QG_ENFORCE(v.size() <= kMaxElements, "randsparse: " << v.size() << " values");
  const std::size_t bad = kernels::first_non_finite(v);
  QG_ENFORCE(bad == v.size(), "randsparse: non-finite input " << v[bad] << " at index " << bad);
  std::vector<std::uint32_t> positions;
  std::vector<float> values;
  kernels::bernoulli_select(v, stream_of(ctx), threshold_, scale_, positions, values);
  const std::size_t old = out.size();
  enforce_finite("randsparse", v, values, positions, out, old);
  const kernels::position_coding coding = kernels::choose_position_coding(positions, v.size());
  append_count(out, v.size());
  append_u32(out, static_cast<std::uint32_t>(positions.size()));
  out.push_back(static_cast<std::byte>(coding.tag));
  const auto value_bytes = std::as_bytes(std::span<const float>(values));
  out.insert(out.end(), value_bytes.begin(), value_bytes.end());
  const std::size_t at = out.size();
  out.resize(at + coding.bytes);
  kernels::encode_positions(positions, v.size(), coding.tag, std::span<std::byte>(out).subspan(at));
}

status randsparse_compressor::decode(std::span<const std::byte> in, const codec_context& ctx,
                                     std::span<float> out) const {
  const std::size_t n = out.size();
  if (in.size() < kHeader || in.size() > max_encoded_bytes(n))
    return status::error(errc::corrupt, "randsparse: payload of " + std::to_string(in.size()) + " bytes for " +
                                            std::to_string(n) + " values (" + std::to_string(kHeader) + " to " +
                                            std::to_string(max_encoded_bytes(n)) + " expected)");
  if (status st = check_count("randsparse", in, n); !st.is_ok()) return st;
  std::uint32_t m = 0;
  std::memcpy(&m, in.data() + 4, 4);
  const auto tag = std::to_integer<std::uint8_t>(in[8]);
  if (m > n || in.size() - kHeader < 4 * std::size_t{m})
    return status::error(errc::corrupt, "randsparse: " + std::to_string(m) + " kept values announced for " +
                                            std::to_string(n) + " values in " + std::to_string(in.size()) +
                                            " bytes");
  std::vector<float> values(m);
  if (!values.empty()) std::memcpy(values.data(), in.data() + kHeader, 4 * std::size_t{m});  // memcpy from/to null is UB even for 0 bytes
  const std::size_t bad = kernels::first_non_finite(values);
  if (bad != values.size())
    return status::error(errc::corrupt, "randsparse: kept value " + std::to_string(bad) + " is NaN or infinite");
  std::vector<std::uint32_t> positions(m);
  const kernels::position_fault fault =
      kernels::decode_positions(in.subspan(kHeader + 4 * std::size_t{m}), n, tag, positions);
  if (fault != kernels::position_fault::none)
    return status::error(errc::corrupt, "randsparse: " + std::string(kernels::to_string(fault)) +
                                            " (coding tag " + std::to_string(tag) + ")");
  kernels::scatter(positions, values, out);
  return status::ok();
}

// --- randk ---------------------------------------------------------------------------------------

randk_compressor::randk_compressor(const randk_options& options) : options_(options) {
  QG_ENFORCE(options.keep.k > 0 || (options.keep.ratio > 0.0 && options.keep.ratio <= 1.0),
             "k=" << options.keep.k << " ratio=" << options.keep.ratio);
  params_tag_ = params_tag_of(describe());
}

std::string randk_compressor::describe() const {
  return "randk:" + options_.keep.describe() + ",scaled=" + (options_.scaled ? "true" : "false");
}

double randk_compressor::relative_error_bound(std::size_t n) const {
  if (n == 0) return 0.0;
  // Each value is kept with probability k/n (as v n/k when scaled, else v), else 0:
  // scaled E(C_i - v_i)^2 = v_i^2 (n/k - 1); unscaled v_i^2 (1 - k/n).
  const double k = static_cast<double>(options_.keep.of(n));
  const double d = static_cast<double>(n);
  return options_.scaled ? d / k - 1.0 : 1.0 - k / d;
}

std::vector<std::uint32_t> randk_compressor::positions(std::size_t n, const codec_context& ctx) const {
  QG_ENFORCE(n <= kMaxElements, "randk: " << n << " values");
  std::vector<std::uint32_t> positions;
  kernels::sample_positions(stream_of(ctx), n, options_.keep.of(n), positions);
  return positions;
}

void randk_compressor::encode(std::span<const float> v, const codec_context& ctx,
                              std::vector<std::byte>& out) const {
  const std::size_t bad = kernels::first_non_finite(v);
  QG_ENFORCE(bad == v.size(), "randk: non-finite input " << v[bad] << " at index " << bad);
  const std::vector<std::uint32_t> kept = positions(v.size(), ctx);
  const float scale =
      options_.scaled && !kept.empty() ? static_cast<float>(static_cast<double>(v.size()) / kept.size()) : 1.0f;
  std::vector<float> values(kept.size());
  kernels::gather(v, kept, scale, values);
  const std::size_t old = out.size();
  enforce_finite("randk", v, values, kept, out, old);
  append_count(out, v.size());
  const auto bytes = std::as_bytes(std::span<const float>(values));
  out.insert(out.end(), bytes.begin(), bytes.end());
}

status randk_compressor::decode(std::span<const std::byte> in, const codec_context& ctx,
                                std::span<float> out) const {
  const std::size_t n = out.size();
  if (n > kMaxElements || in.size() != max_encoded_bytes(n))
    return status::error(errc::corrupt, "randk: payload of " + std::to_string(in.size()) + " bytes, expected " +
                                            std::to_string(max_encoded_bytes(n)) + " for " + std::to_string(n) +
                                            " values");
  if (status st = check_count("randk", in, n); !st.is_ok()) return st;
  std::vector<float> values(in.size() / 4 - 1);
  if (!values.empty()) std::memcpy(values.data(), in.data() + 4, 4 * values.size());  // memcpy from/to null is UB even for 0 bytes
  const std::size_t bad = kernels::first_non_finite(values);
  if (bad != values.size())
    return status::error(errc::corrupt, "randk: kept value " + std::to_string(bad) + " is NaN or infinite");
  kernels::scatter(positions(n, ctx), values, out);
  return status::ok();
}

// --- factories -----------------------------------------------------------------------------------

std::unique_ptr<compressor> make_randsparse(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {"p"});
  randsparse_options options;
  options.p = params.get_real("p", options.p, 0x1p-24, 1.0);
  return std::make_unique<randsparse_compressor>(options);
}

std::unique_ptr<compressor> make_randk(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {"ratio", "k", "scaled"});
  randk_options options;
  options.keep = parse_keep_count(spec, params, 0.01);
  options.scaled = params.get_choice("scaled", "true", {"true", "false"}) == "true";
  return std::make_unique<randk_compressor>(options);
}

}  // namespace qgossip
