#include "algorithms/compress/qsgd.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/compress/codec_params.hpp"
#include "algorithms/compress/entropy.hpp"
#include "algorithms/compress/sparse_elias.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/bitpack.hpp"
#include "kernels/cpu/finite.hpp"
#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/qsgd.hpp"

namespace qgossip {
namespace {

kernels::philox_stream stream_of(const codec_context& ctx) {
  return kernels::philox_stream::make(ctx.seed, ctx.rank, ctx.iteration, ctx.stream);
}

// Values per tile of the Elias paths: levels for one tile stay in L1.
constexpr std::size_t kTile = 1024;

// The Elias decoder's levels as the dense codes qsgd_dequantize_code takes (sign at bit 15).
constexpr std::uint32_t kSignShift = 15;
constexpr std::uint32_t kMagnitudeMask = (1u << kSignShift) - 1;

}  // namespace

qsgd_compressor::qsgd_compressor(const qsgd_options& options)
    : options_(options), layout_{options.levels, options.bucket, options.norm} {
  QG_ENFORCE(options.levels >= 1 && options.levels <= kernels::kQsgdMaxLevels, "levels=" << options.levels);
  params_tag_ = params_tag_of(describe());
}

std::string qsgd_compressor::describe() const {
  return "qsgd:levels=" + std::to_string(options_.levels) + ",bucket=" + std::to_string(options_.bucket) +
         ",norm=" + (options_.norm == kernels::qsgd_norm::l2 ? "l2" : "max") +
         (options_.coding == qsgd_coding::elias ? ",coding=elias" : "");
}

std::size_t qsgd_compressor::max_encoded_bytes(std::size_t n) const {
  if (options_.coding == qsgd_coding::dense) return layout_.encoded_bytes(n);
  // Every bucket at its longest (sparse_elias.hpp): n (2 + |Elias(s)|) + (one end marker bit) per bucket.
  const std::size_t buckets = layout_.bucket_count(n);
  const std::uint64_t bits = sparse_elias_max_bits(n, options_.levels) - 1 + buckets;
  return layout_.scale_bytes(n) + static_cast<std::size_t>((bits + 7) / 8);
}

double qsgd_compressor::relative_error_bound(std::size_t n) const {
  if (n == 0) return 0.0;
  // Per coordinate of a bucket with scale S, the error is (S/s)(B - p) with B ~ Bernoulli(p), p the
  // fractional part of s|v|/S: variance (S/s)^2 p(1-p), and p(1-p) <= min(1/4, p), p <= s|v|/S.
  // Summed over a bucket of d' values: <= min(d' S^2 / (4 s^2), (S/s) ||v_b||_1)
  //                                     <= min(d'/(4 s^2), sqrt(d')/s) ||v_b||_2^2,
  // using S <= ||v_b||_2 (equality for l2, max-abs for QSGDinf) and ||v_b||_1 <= sqrt(d') ||v_b||_2.
  // Summing over buckets (each d' <= d) gives the same factor for the whole vector. This is the
  // QSGD paper's min(d/s^2, sqrt(d)/s) with the 1/4 kept.
  const double d = static_cast<double>(layout_.bucket_size(n));
  const double s = options_.levels;
  return std::min(d / (4.0 * s * s), std::sqrt(d) / s);
}

void qsgd_compressor::encode(std::span<const float> v, const codec_context& ctx,
                             std::vector<std::byte>& out) const {
  if (options_.coding == qsgd_coding::elias) return encode_elias(v, ctx, out);
  const std::size_t old = out.size();
  out.resize(old + layout_.encoded_bytes(v.size()));
  if (!kernels::qsgd_encode(v, layout_, stream_of(ctx), std::span<std::byte>(out).subspan(old))) {
    out.resize(old);
    const std::size_t index = kernels::first_non_finite(v);
    QG_ENFORCE(false, "qsgd: non-finite input " << v[index] << " at index " << index);
  }
}

namespace {

// A dense decoder's fault as decode reports it.
status dense_status(const kernels::qsgd_decode_result& r, std::size_t bytes, std::size_t n,
                    const kernels::qsgd_layout& layout) {
  using kernels::qsgd_fault;
  switch (r.fault) {
    case qsgd_fault::none:
      return status::ok();
    case qsgd_fault::size:
      return status::error(errc::corrupt, "qsgd: payload of " + std::to_string(bytes) + " bytes, expected " +
                                              std::to_string(layout.encoded_bytes(n)) + " for " + std::to_string(n) +
                                              " values");
    case qsgd_fault::scale:
      return status::error(errc::corrupt, "qsgd: bucket " + std::to_string(r.index) +
                                              " has a NaN, infinite or negative scale");
    case qsgd_fault::code:
      return status::error(errc::corrupt, "qsgd: invalid level code for element " + std::to_string(r.index) +
                                              " (levels=" + std::to_string(layout.levels) + ")");
    case qsgd_fault::padding:
      return status::error(errc::corrupt, "qsgd: nonzero padding bits after the last code");
  }
  return status::error(errc::corrupt, "qsgd: unknown decode fault");
}

}  // namespace

bool qsgd_compressor::encodes_difference(std::size_t n) const {
  return options_.coding == qsgd_coding::dense && layout_.bucket_size(n) <= kernels::kQsgdMaxDifferenceBucket;
}

void qsgd_compressor::encode_difference(std::span<const float> a, std::span<const float> b,
                                        const codec_context& ctx, std::vector<std::byte>& out) const {
  if (!encodes_difference(a.size())) return compressor::encode_difference(a, b, ctx, out);
  QG_ENFORCE(a.size() == b.size(), a.size() << " vs " << b.size());
  const std::size_t old = out.size();
  out.resize(old + layout_.encoded_bytes(a.size()));
  if (!kernels::qsgd_encode_difference(a, b, layout_, stream_of(ctx), std::span<std::byte>(out).subspan(old))) {
    out.resize(old);
    QG_ENFORCE(false, "qsgd: the difference to encode is not finite (a " << a[kernels::first_non_finite(a)]
                          << " or b " << b[kernels::first_non_finite(b)] << " at their first non-finite index)");
  }
}

status qsgd_compressor::decode(std::span<const std::byte> in, const codec_context& ctx,
                               std::span<float> out) const {
  if (options_.coding == qsgd_coding::elias) return decode_elias(in, out);
  return dense_status(kernels::qsgd_decode(in, layout_, out), in.size(), out.size(), layout_);
}

status qsgd_compressor::validate(std::span<const std::byte> in, const codec_context& ctx, std::size_t n) const {
  if (options_.coding == qsgd_coding::elias) return compressor::validate(in, ctx, n);
  return dense_status(kernels::qsgd_validate(in, layout_, n), in.size(), n, layout_);
}

void qsgd_compressor::decode_add(std::span<const std::byte> in, const codec_context& ctx,
                                 std::span<float> out) const {
  if (options_.coding == qsgd_coding::elias) return compressor::decode_add(in, ctx, out);
  kernels::qsgd_decode_add(in, layout_, out);
}

void qsgd_compressor::encode_elias(std::span<const float> v, const codec_context& ctx,
                                   std::vector<std::byte>& out) const {
  const std::size_t n = v.size();
  const std::size_t d = layout_.bucket_size(n);
  const std::size_t buckets = layout_.bucket_count(n);
  const kernels::philox_stream rng = stream_of(ctx);
  const std::size_t old = out.size();
  out.resize(old + layout_.scale_bytes(n));
  sparse_elias_writer writer(out);
  std::int32_t levels[kTile];
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t start = b * d;
    const std::span<const float> bucket = v.subspan(start, std::min(d, n - start));
    bool finite = true;
    const float scale = kernels::qsgd_bucket_scale(bucket, options_.norm, finite);
    if (!finite) {
      out.resize(old);
      const std::size_t index = kernels::first_non_finite(v);
      QG_ENFORCE(false, "qsgd: non-finite input " << v[index] << " at index " << index);
    }
    std::memcpy(out.data() + old + 4 * b, &scale, 4);
    for (std::size_t t = 0; t < bucket.size(); t += kTile) {
      const std::size_t m = std::min(kTile, bucket.size() - t);
      kernels::qsgd_quantize_levels(bucket.subspan(t, m), start + t, scale, options_.levels, rng,
                                    std::span<std::int32_t>(levels, m));
      writer.put(std::span<const std::int32_t>(levels, m));
    }
    writer.end_bucket();
  }
  writer.finish();
}

status qsgd_compressor::decode_elias(std::span<const std::byte> in, std::span<float> out) const {
  const std::size_t n = out.size();
  const std::size_t d = layout_.bucket_size(n);
  const std::size_t buckets = layout_.bucket_count(n);
  const std::size_t scale_bytes = layout_.scale_bytes(n);
  if (in.size() < scale_bytes)
    return status::error(errc::corrupt, "qsgd: payload of " + std::to_string(in.size()) +
                                            " bytes cannot hold the " + std::to_string(buckets) +
                                            " bucket scales of " + std::to_string(n) + " values");
  const std::size_t body_offset = scale_bytes;
  sparse_elias_reader reader(in.subspan(body_offset), options_.levels);
  const float levels_f = static_cast<float>(options_.levels);
  std::int32_t levels[kTile];
  for (std::size_t b = 0; b < buckets; ++b) {
    std::uint32_t scale_bits;
    std::memcpy(&scale_bits, in.data() + 4 * b, 4);
    if (!kernels::qsgd_scale_valid(scale_bits))
      return status::error(errc::corrupt,
                           "qsgd: bucket " + std::to_string(b) + " has a NaN, infinite or negative scale");
    const float step = kernels::qg_fdiv(kernels::qg_bits_float(scale_bits), levels_f);
    const std::size_t start = b * d;
    const std::size_t len = std::min(d, n - start);
    sparse_elias_fault fault = reader.begin_bucket(len);
    for (std::size_t t = 0; t < len && fault == sparse_elias_fault::none; t += kTile) {
      const std::size_t m = std::min(kTile, len - t);
      fault = reader.get(std::span<std::int32_t>(levels, m));
      if (fault != sparse_elias_fault::none) break;
      for (std::size_t i = 0; i < m; ++i) {
        const std::int32_t l = levels[i];
        const std::uint32_t code = l < 0 ? static_cast<std::uint32_t>(-l) | (1u << kSignShift)
                                         : static_cast<std::uint32_t>(l);
        out[start + t + i] = kernels::qsgd_dequantize_code(code, step, kMagnitudeMask, kSignShift);
      }
    }
    if (fault != sparse_elias_fault::none)
      return status::error(errc::corrupt, "qsgd: " + to_string(fault, "a level above s") + " at element " +
                                              std::to_string(start + reader.position()) + " (bucket " +
                                              std::to_string(b) + ", levels=" +
                                              std::to_string(options_.levels) + ")");
  }
  if (!reader.at_end())
    return status::error(errc::corrupt, "qsgd: " + std::to_string(8 * (in.size() - body_offset) - reader.bits_read()) +
                                            " bits after the last bucket (trailing bytes, or padding that is not all 1s)");
  return status::ok();
}

double qsgd_compressor::entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                               const codec_context& ctx) const {
  if (n == 0) return 0.0;
  std::vector<float> values(n);
  const status st = decode(encoded, ctx, values);  // validates, so the symbol walk below cannot fail
  QG_ENFORCE(st.is_ok(), "qsgd: entropy of a payload that does not decode: " << st.message());
  symbol_histogram h;
  const std::span<const std::byte> body = encoded.subspan(layout_.scale_bytes(n));
  if (options_.coding == qsgd_coding::dense) {
    const std::uint32_t sign_shift = layout_.bits() - 1;
    kernels::bit_reader reader(body);
    std::uint16_t codes[kTile];
    for (std::size_t t = 0; t < n; t += kTile) {
      const std::size_t m = std::min(kTile, n - t);
      reader.get(std::span<std::uint16_t>(codes, m), layout_.bits());
      for (std::size_t i = 0; i < m; ++i) {
        const std::int64_t l = codes[i] & ((1u << sign_shift) - 1);
        h.add((codes[i] >> sign_shift) ? -l : l);
      }
    }
  } else {
    sparse_elias_reader reader(body, options_.levels);
    const std::size_t d = layout_.bucket_size(n);
    std::int32_t levels[kTile];
    for (std::size_t start = 0; start < n; start += d) {
      const std::size_t len = std::min(d, n - start);
      QG_ENFORCE(reader.begin_bucket(len) == sparse_elias_fault::none, "validated above");
      for (std::size_t t = 0; t < len; t += kTile) {
        const std::size_t m = std::min(kTile, len - t);
        QG_ENFORCE(reader.get(std::span<std::int32_t>(levels, m)) == sparse_elias_fault::none, "validated above");
        for (std::size_t i = 0; i < m; ++i) h.add(levels[i]);
      }
    }
  }
  return h.entropy_bits_per_symbol();
}

std::unique_ptr<compressor> make_qsgd(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {"levels", "bits", "bucket", "norm", "coding"});
  qsgd_options options;
  const bool has_levels = params.has("levels");
  const bool has_bits = params.has("bits");
  const std::uint64_t bits = params.get_uint("bits", 8, 2, 16);
  if (has_levels) {
    options.levels = static_cast<std::uint32_t>(params.get_uint("levels", 127, 1, kernels::kQsgdMaxLevels));
    const std::uint32_t needed = kernels::qsgd_code_bits(options.levels);
    if (has_bits && needed != bits)
      params.fail("levels=" + std::to_string(options.levels) + " needs bits=" + std::to_string(needed) +
                  " (1 sign + " + std::to_string(needed - 1) + " magnitude bits), but bits=" +
                  std::to_string(bits) + " was given; give one of them, or matching values");
  } else {
    options.levels = (1u << (bits - 1)) - 1;
  }
  options.bucket = static_cast<std::size_t>(params.get_uint("bucket", 512, 0, std::uint64_t{1} << 40));
  options.norm = params.get_choice("norm", "l2", {"l2", "max"}) == "l2" ? kernels::qsgd_norm::l2
                                                                        : kernels::qsgd_norm::max;
  options.coding = params.get_choice("coding", "dense", {"dense", "elias"}) == "dense" ? qsgd_coding::dense
                                                                                       : qsgd_coding::elias;
  return std::make_unique<qsgd_compressor>(options);
}

}  // namespace qgossip
