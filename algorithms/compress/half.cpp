#include "algorithms/compress/half.hpp"

#include "algorithms/compress/codec_params.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/finite.hpp"
#include "kernels/cpu/half.hpp"

namespace qgossip {

half_compressor::half_compressor(half_format format) : format_(format) {
  params_tag_ = params_tag_of(describe());
}

double half_compressor::relative_error_bound(std::size_t n) const {
  if (n == 0) return 0.0;
  // fp16: flushing to zero or saturating can cost a value all of itself (see the header).
  return format_ == half_format::fp16 ? 1.0 : 0x1p-16;
}

void half_compressor::encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const {
  const std::size_t bad = kernels::first_non_finite(v);
  QG_ENFORCE(bad == v.size(), name() << ": non-finite input " << v[bad] << " at index " << bad);
  const std::size_t old = out.size();
  out.resize(old + 2 * v.size());
  const std::span<std::byte> dest = std::span<std::byte>(out).subspan(old);
  if (format_ == half_format::fp16)
    kernels::floats_to_half(v, dest);
  else
    kernels::floats_to_bf16(v, dest);
}

status half_compressor::decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const {
  if (in.size() != 2 * out.size())
    return status::error(errc::corrupt, std::string(name()) + ": payload of " + std::to_string(in.size()) +
                                            " bytes, expected " + std::to_string(2 * out.size()) + " for " +
                                            std::to_string(out.size()) + " values");
  const std::size_t bad =
      format_ == half_format::fp16 ? kernels::half_to_floats(in, out) : kernels::bf16_to_floats(in, out);
  if (bad != out.size())
    return status::error(errc::corrupt,
                         std::string(name()) + ": NaN or infinite value at index " + std::to_string(bad));
  return status::ok();
}

std::unique_ptr<compressor> make_fp16(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {});
  return std::make_unique<half_compressor>(half_format::fp16);
}

std::unique_ptr<compressor> make_bf16(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {});
  return std::make_unique<half_compressor>(half_format::bf16);
}

}  // namespace qgossip
