#include "algorithms/compress/sign.hpp"

#include <cmath>
#include <vector>

#include "algorithms/compress/codec_params.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/finite.hpp"

namespace qgossip {

sign_compressor::sign_compressor(const sign_options& options) : options_(options), layout_{options.bucket} {
  params_tag_ = params_tag_of(describe());
}

double sign_compressor::relative_error_bound(std::size_t n) const {
  if (n == 0) return 0.0;
  // Per bucket the error is ||v_b||^2 - (||v_b||_1^2 / d_b)(1 - delta^2) with m_b's relative rounding
  // |delta| <= 2^-20 (double sum, division, float rounding; normal m_b), and ||v_b||_1^2 >= ||v_b||^2.
  const double d = static_cast<double>(layout_.bucket_size(n));
  return d == 1.0 ? 0.0 : 1.0 - (1.0 - 0x1p-40) / d;
}

void sign_compressor::encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const {
  const std::size_t bad = kernels::first_non_finite(v);
  QG_ENFORCE(bad == v.size(), "sign: non-finite input " << v[bad] << " at index " << bad);
  const std::size_t old = out.size();
  out.resize(old + layout_.encoded_bytes(v.size()));
  kernels::sign_encode(v, layout_, std::span<std::byte>(out).subspan(old));
}

status sign_compressor::decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const {
  using kernels::sign_fault;
  const kernels::sign_decode_result r = kernels::sign_decode(in, layout_, out);
  switch (r.fault) {
    case sign_fault::none:
      return status::ok();
    case sign_fault::size:
      return status::error(errc::corrupt, "sign: payload of " + std::to_string(in.size()) + " bytes, expected " +
                                              std::to_string(layout_.encoded_bytes(out.size())) + " for " +
                                              std::to_string(out.size()) + " values");
    case sign_fault::count:
      return status::error(errc::corrupt, "sign: payload made for " + std::to_string(r.index) +
                                              " values, decoded as " + std::to_string(out.size()));
    case sign_fault::scale:
      return status::error(errc::corrupt,
                           "sign: bucket " + std::to_string(r.index) + " has a NaN, infinite or negative scale");
    case sign_fault::padding:
      return status::error(errc::corrupt, "sign: nonzero padding bits after the last sign bit");
  }
  return status::error(errc::corrupt, "sign: unknown decode fault");
}

double sign_compressor::entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                               const codec_context& ctx) const {
  if (n == 0) return 0.0;
  std::vector<float> values(n);
  const status st = decode(encoded, ctx, values);
  QG_ENFORCE(st.is_ok(), "sign: entropy of a payload that does not decode: " << st.message());
  // A decoded value carries its sign bit unchanged.
  std::size_t negative = 0;
  for (float x : values) negative += std::signbit(x) ? 1 : 0;
  const double q = static_cast<double>(negative) / static_cast<double>(n);
  return (q == 0.0 || q == 1.0) ? 0.0 : -q * std::log2(q) - (1 - q) * std::log2(1 - q);
}

std::unique_ptr<compressor> make_sign(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {"bucket"});
  sign_options options;
  options.bucket = static_cast<std::size_t>(params.get_uint("bucket", 0, 0, std::uint64_t{1} << 40));
  return std::make_unique<sign_compressor>(options);
}

}  // namespace qgossip
