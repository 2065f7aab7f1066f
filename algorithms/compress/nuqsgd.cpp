#include "algorithms/compress/nuqsgd.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/compress/codec_params.hpp"
#include "algorithms/compress/entropy.hpp"
#include "algorithms/compress/sparse_elias.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "kernels/cpu/finite.hpp"
#include "kernels/cpu/nuqsgd.hpp"
#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/qsgd.hpp"

namespace qgossip {
namespace {

constexpr std::size_t kTile = 1024;  // level indices of one tile stay in L1

std::size_t bucket_count(std::size_t n, std::size_t d) { return n == 0 ? 0 : (n + d - 1) / d; }

}  // namespace

nuqsgd_compressor::nuqsgd_compressor(const nuqsgd_options& options) : options_(options) {
  QG_ENFORCE(options.s >= 1 && options.s <= kernels::kNuqsgdMaxS, "s=" << options.s);
  params_tag_ = params_tag_of(describe());
}

std::string nuqsgd_compressor::describe() const {
  return "nuqsgd:s=" + std::to_string(options_.s) + ",bucket=" + std::to_string(options_.bucket);
}

double nuqsgd_compressor::relative_error_bound(std::size_t n) const {
  if (n == 0) return 0.0;
  // With r_i = |v_i|/S (S = ||v_b||_2, so sum r_i^2 = 1), coordinate i rounds between neighbouring
  // levels l_k <= r_i <= l_{k+1} with P(up) = p, an error of variance S^2 (l_{k+1} - l_k)^2 p(1-p)
  // (the paper's Lemma 1). Two cases:
  //   r_i in [a, 2a] with a = 2^-j >= 2^-s: r_i = a(1+p), variance/S^2 = a^2 p(1-p) <= r_i^2 / 8,
  //     since p(1-p)/(1+p)^2 peaks at 1/8 (p = 1/3); also <= a^2/4 <= 1/16 (a <= 1/2).
  //   r_i in [0, 2^-s]: p = r_i 2^s, variance/S^2 = r_i (2^-s - r_i) <= min(4^-s / 4, 2^-s r_i).
  // Summing over the d' values of a bucket, with sum r_i^2 = 1 and sum r_i <= sqrt(d'):
  //   E||Q(v_b) - v_b||^2 / ||v_b||^2 <= 1/8 + min(d' 4^-s / 4, sqrt(d') 2^-s),
  // and every coordinate's variance is <= 1/16 whichever case (so also <= d'/16). Buckets sum to
  // the same factor (each d' <= d). The paper's Theorem 2 has an O(s) term with no stated constant,
  // so its bound cannot be evaluated; its explicit d/3 (2^(1-2s) + 1) is looser than d'/16 here.
  // (The 2^-24 grid of the uniforms adds at most d' 2^-24 / 4.)
  const double d = static_cast<double>(bucket_size(n));
  const double two_s = std::ldexp(1.0, static_cast<int>(options_.s));
  return std::min(d / 16.0, 0.125 + std::min(d / (4.0 * two_s * two_s), std::sqrt(d) / two_s));
}

std::size_t nuqsgd_compressor::max_encoded_bytes(std::size_t n) const {
  const std::size_t buckets = bucket_count(n, bucket_size(n));
  // sparse_elias_max_bits per bucket: n (2 + |Elias(s+1)|) in all, plus one end-marker bit each.
  const std::uint64_t bits = sparse_elias_max_bits(n, options_.s + 1) - 1 + buckets;
  return 4 * buckets + static_cast<std::size_t>((bits + 7) / 8);
}

void nuqsgd_compressor::encode(std::span<const float> v, const codec_context& ctx,
                               std::vector<std::byte>& out) const {
  const std::size_t n = v.size();
  const std::size_t d = bucket_size(n);
  const std::size_t buckets = bucket_count(n, d);
  const kernels::philox_stream rng =
      kernels::philox_stream::make(ctx.seed, ctx.rank, ctx.iteration, ctx.stream);
  const std::size_t old = out.size();
  out.resize(old + 4 * buckets);
  sparse_elias_writer writer(out);
  std::int32_t indices[kTile];
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t start = b * d;
    const std::span<const float> bucket = v.subspan(start, std::min(d, n - start));
    bool finite = true;
    const float norm = kernels::qsgd_bucket_scale(bucket, kernels::qsgd_norm::l2, finite);
    if (!finite) {
      out.resize(old);
      const std::size_t index = kernels::first_non_finite(v);
      QG_ENFORCE(false, "nuqsgd: non-finite input " << v[index] << " at index " << index);
    }
    std::memcpy(out.data() + old + 4 * b, &norm, 4);
    for (std::size_t t = 0; t < bucket.size(); t += kTile) {
      const std::size_t m = std::min(kTile, bucket.size() - t);
      kernels::nuqsgd_quantize(bucket.subspan(t, m), start + t, norm, options_.s, rng,
                               std::span<std::int32_t>(indices, m));
      writer.put(std::span<const std::int32_t>(indices, m));
    }
    writer.end_bucket();
  }
  writer.finish();
}

template <typename OnTile>
status nuqsgd_compressor::walk(std::span<const std::byte> in, std::size_t n, OnTile&& on_tile) const {
  const std::size_t d = bucket_size(n);
  const std::size_t buckets = bucket_count(n, d);
  if (in.size() < 4 * buckets)
    return status::error(errc::corrupt, "nuqsgd: payload of " + std::to_string(in.size()) +
                                            " bytes cannot hold the " + std::to_string(buckets) +
                                            " bucket norms of " + std::to_string(n) + " values");
  const std::size_t body_offset = 4 * buckets;
  sparse_elias_reader reader(in.subspan(body_offset), options_.s + 1);
  std::int32_t indices[kTile];
  for (std::size_t b = 0; b < buckets; ++b) {
    std::uint32_t norm_bits;
    std::memcpy(&norm_bits, in.data() + 4 * b, 4);
    if (!kernels::qsgd_scale_valid(norm_bits))
      return status::error(errc::corrupt,
                           "nuqsgd: bucket " + std::to_string(b) + " has a NaN, infinite or negative norm");
    const float norm = kernels::qg_bits_float(norm_bits);
    const std::size_t start = b * d;
    const std::size_t len = std::min(d, n - start);
    sparse_elias_fault fault = reader.begin_bucket(len);
    for (std::size_t t = 0; t < len && fault == sparse_elias_fault::none; t += kTile) {
      const std::size_t m = std::min(kTile, len - t);
      fault = reader.get(std::span<std::int32_t>(indices, m));
      if (fault == sparse_elias_fault::none) on_tile(norm, start + t, std::span<const std::int32_t>(indices, m));
    }
    if (fault != sparse_elias_fault::none)
      return status::error(errc::corrupt, "nuqsgd: " + to_string(fault, "a level index above s + 1") + " at element " +
                                              std::to_string(start + reader.position()) + " (bucket " +
                                              std::to_string(b) + ", s=" + std::to_string(options_.s) + ")");
  }
  if (!reader.at_end())
    return status::error(errc::corrupt, "nuqsgd: " + std::to_string(8 * (in.size() - body_offset) - reader.bits_read()) +
                                            " bits after the last bucket (trailing bytes, or padding that is not all 1s)");
  return status::ok();
}

status nuqsgd_compressor::decode(std::span<const std::byte> in, const codec_context& /*ctx*/,
                                 std::span<float> out) const {
  const auto s = static_cast<std::int32_t>(options_.s);
  // levels[t] = 2^(t-1-s); index 0 unused (zeros are written directly).
  float levels[kernels::kNuqsgdMaxS + 2] = {};
  for (std::int32_t t = 1; t <= s + 1; ++t) levels[t] = kernels::nuqsgd_level(t, s);
  return walk(in, out.size(), [&](float norm, std::size_t first, std::span<const std::int32_t> indices) {
    for (std::size_t i = 0; i < indices.size(); ++i) {
      const std::int32_t t = indices[i];
      const float m = t == 0 ? 0.0f : kernels::qg_fmul(norm, levels[t < 0 ? -t : t]);
      out[first + i] = t < 0 ? -m : m;
    }
  });
}

double nuqsgd_compressor::entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                                 const codec_context& /*ctx*/) const {
  if (n == 0) return 0.0;
  symbol_histogram h;
  const status st = walk(encoded, n, [&](float, std::size_t, std::span<const std::int32_t> indices) {
    for (const std::int32_t t : indices) h.add(t);
  });
  QG_ENFORCE(st.is_ok(), "nuqsgd: entropy of a payload that does not decode: " << st.message());
  return h.entropy_bits_per_symbol();
}

std::unique_ptr<compressor> make_nuqsgd(const codec_spec& spec, const layer_bounds& /*layers*/) {
  const codec_params params(spec, {"s", "bucket"});
  nuqsgd_options options;
  options.s = static_cast<std::uint32_t>(params.get_uint("s", 3, 1, kernels::kNuqsgdMaxS));
  options.bucket = static_cast<std::size_t>(params.get_uint("bucket", 8192, 0, std::uint64_t{1} << 40));
  return std::make_unique<nuqsgd_compressor>(options);
}

}  // namespace qgossip
