#include "algorithms/compress/qsgd.hpp"

#include <algorithm>
#include <cmath>

#include "algorithms/compress/codec_params.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/finite.hpp"
#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/qsgd.hpp"

namespace qgossip {
namespace {

kernels::philox_stream stream_of(const codec_context& ctx) {
  return kernels::philox_stream::make(ctx.seed, ctx.rank, ctx.iteration, ctx.stream);
}

}  // namespace

qsgd_compressor::qsgd_compressor(const qsgd_options& options)
    : options_(options), layout_{options.levels, options.bucket, options.norm} {
  QG_ENFORCE(options.levels >= 1 && options.levels <= kernels::kQsgdMaxLevels, "levels=" << options.levels);
  const std::uint64_t h = hash64(describe());
  params_tag_ = static_cast<std::uint32_t>(h ^ (h >> 32));
}

std::string qsgd_compressor::describe() const {
  return "qsgd:levels=" + std::to_string(options_.levels) + ",bucket=" + std::to_string(options_.bucket) +
         ",norm=" + (options_.norm == kernels::qsgd_norm::l2 ? "l2" : "max");
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
  const std::size_t old = out.size();
  out.resize(old + layout_.encoded_bytes(v.size()));
  if (!kernels::qsgd_encode(v, layout_, stream_of(ctx), std::span<std::byte>(out).subspan(old))) {
    out.resize(old);
    const std::size_t index = kernels::first_non_finite(v);
    QG_ENFORCE(false, "qsgd: non-finite input " << v[index] << " at index " << index);
  }
}

status qsgd_compressor::decode(std::span<const std::byte> in, const codec_context& ctx,
                               std::span<float> out) const {
  using kernels::qsgd_fault;
  const kernels::qsgd_decode_result r = kernels::qsgd_decode(in, layout_, out);
  switch (r.fault) {
    case qsgd_fault::none:
      return status::ok();
    case qsgd_fault::size:
      return status::error(errc::corrupt, "qsgd: payload of " + std::to_string(in.size()) +
                                              " bytes, expected " +
                                              std::to_string(layout_.encoded_bytes(out.size())) + " for " +
                                              std::to_string(out.size()) + " values");
    case qsgd_fault::scale:
      return status::error(errc::corrupt, "qsgd: bucket " + std::to_string(r.index) +
                                              " has a NaN, infinite or negative scale");
    case qsgd_fault::code:
      return status::error(errc::corrupt, "qsgd: invalid level code for element " + std::to_string(r.index) +
                                              " (levels=" + std::to_string(options_.levels) + ")");
    case qsgd_fault::padding:
      return status::error(errc::corrupt, "qsgd: nonzero padding bits after the last code");
  }
  return status::error(errc::corrupt, "qsgd: unknown decode fault");
}

std::unique_ptr<compressor> make_qsgd(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {"levels", "bits", "bucket", "norm"});
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
  return std::make_unique<qsgd_compressor>(options);
}

}  // namespace qgossip
