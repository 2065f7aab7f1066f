#include "algorithms/compress/topk.hpp"

#include <bit>
#include <cstring>

#include "algorithms/compress/codec_params.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/finite.hpp"
#include "kernels/cpu/sparse.hpp"

static_assert(std::endian::native == std::endian::little, "topk payloads are little-endian");

namespace qgossip {

topk_compressor::topk_compressor(const topk_options& options) : options_(options) {
  QG_ENFORCE(options.keep.k > 0 || (options.keep.ratio > 0.0 && options.keep.ratio <= 1.0),
             "k=" << options.keep.k << " ratio=" << options.keep.ratio);
  params_tag_ = params_tag_of(describe());
}

double topk_compressor::relative_error_bound(std::size_t n) const {
  // The n - k dropped squares are the smallest, so their mean is at most the mean of all n.
  return n == 0 ? 0.0 : 1.0 - static_cast<double>(options_.keep.of(n)) / static_cast<double>(n);
}

std::size_t topk_compressor::max_encoded_bytes(std::size_t n) const {
  return kHeader + 4 * options_.keep.of(n) + kernels::bitmap_bytes(n);
}

void topk_compressor::encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const {
  QG_ENFORCE(v.size() <= 0xffffffffu, "topk: " << v.size() << " values");
  const std::size_t bad = kernels::first_non_finite(v);
  QG_ENFORCE(bad == v.size(), "topk: non-finite input " << v[bad] << " at index " << bad);
  std::vector<std::uint32_t> positions;
  kernels::top_k_positions(v, options_.keep.of(v.size()), positions);
  const kernels::position_coding coding = kernels::choose_position_coding(positions, v.size());
  append_count(out, v.size());
  out.push_back(static_cast<std::byte>(coding.tag));
  const std::size_t at = out.size();
  out.resize(at + 4 * positions.size() + coding.bytes);
  std::vector<float> values(positions.size());
  kernels::gather(v, positions, 1.0f, values);
  if (!values.empty()) std::memcpy(out.data() + at, values.data(), 4 * values.size());  // memcpy from/to null is UB even for 0 bytes
  kernels::encode_positions(positions, v.size(), coding.tag,
                            std::span<std::byte>(out).subspan(at + 4 * positions.size()));
}

status topk_compressor::decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const {
  const std::size_t n = out.size();
  const std::size_t k = options_.keep.of(n);
  if (in.size() < kHeader + 4 * k || in.size() > max_encoded_bytes(n))
    return status::error(errc::corrupt, "topk: payload of " + std::to_string(in.size()) + " bytes for " +
                                            std::to_string(n) + " values (" + std::to_string(kHeader + 4 * k) +
                                            " to " + std::to_string(max_encoded_bytes(n)) + " expected)");
  if (status st = check_count("topk", in, n); !st.is_ok()) return st;
  const auto tag = std::to_integer<std::uint8_t>(in[4]);
  std::vector<float> values(k);
  if (!values.empty()) std::memcpy(values.data(), in.data() + kHeader, 4 * k);  // memcpy from/to null is UB even for 0 bytes
  const std::size_t bad = kernels::first_non_finite(values);
  if (bad != values.size())
    return status::error(errc::corrupt, "topk: kept value " + std::to_string(bad) + " is NaN or infinite");
  std::vector<std::uint32_t> positions(k);
  const kernels::position_fault fault = kernels::decode_positions(in.subspan(kHeader + 4 * k), n, tag, positions);
  if (fault != kernels::position_fault::none)
    return status::error(errc::corrupt, "topk: " + std::string(kernels::to_string(fault)) + " (coding tag " +
                                            std::to_string(tag) + ")");
  kernels::scatter(positions, values, out);
  return status::ok();
}

std::unique_ptr<compressor> make_topk(const codec_spec& spec, const layer_bounds& layers) {
  const codec_params params(spec, {"ratio", "k"});
  topk_options options;
  options.keep = parse_keep_count(spec, params, 0.01);
  return std::make_unique<topk_compressor>(options);
}

}  // namespace qgossip
