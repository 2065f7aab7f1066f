#pragma once
// qsgd: QSGD (Alistarh et al.) and its max-norm variant QSGDinf, with dense fixed-width coding or
// the paper's sparse Elias coding. codec_id::qsgd. Inline spec: "qsgd:levels=127,bucket=512,norm=l2"
// (the canonical describe(); ",coding=elias" is appended for the Elias coding only, so the dense
// form keeps the string and params_tag it had before the parameter existed).
//
// What the parameters mean, exactly:
//   levels = s >= 1: the number of NONZERO magnitude levels. Each value v of a bucket with scale S
//            becomes sign(v) * l * S / s with l in {0, 1, ..., s} chosen by unbiased stochastic rounding:
//            l = floor(s|v|/S + u), u ~ U[0,1). So s = 1 is ternary {-S, 0, S}; s = 127 has 255 values.
//   bits   = b: the code width, 1 sign bit + (b-1) magnitude bits, and the largest s that fits:
//            s = 2^(b-1) - 1 (bits=8 -> s=127, bits=4 -> s=7, bits=2 -> s=1). 2 <= b <= 16.
//            Give levels or bits; given both, bits must be the width levels needs
//            (1 + bit_width(s): levels=100,bits=8 is fine, levels=127,bits=4 is an error).
//            Neither: bits=8 (s=127).
//   bucket = d >= 0: values per scale (default 512); 0 = the whole vector is one bucket. The last
//            bucket may be shorter. Ignores layer boundaries (the vector is bucketed as one span).
//   norm   = l2 (QSGD: S = ||bucket||_2) or max (QSGDinf: S = ||bucket||_inf). Default l2.
//   coding = dense (default) or elias.
// Payload for n values (kernels/cpu/qsgd_format.hpp, docs/codecs.md): ceil(n/d) float32 scales, then
//   dense: n codes of b bits packed LSB-first, zero-padded to a byte: 4*ceil(n/d) + ceil(n*b/8) bytes
//          exactly (8 bits, d = 512: n + 4*ceil(n/512));
//   elias: one bit stream (bit_stream.hpp) holding each bucket's signed levels in the sparse coding of
//          sparse_elias.hpp (Elias gap, sign, Elias level per nonzero, then an end-of-bucket gap),
//          padded to a byte with 1-bits. Variable length; max_encoded_bytes is the worst case (every value
//          at level s). Same levels as dense for the same (v, ctx): both decode to the same floats.
//
// Randomness: Philox4x32-10 keyed by (ctx.seed, ctx.rank, ctx.iteration, ctx.stream), one word per
// element, so encode is reproducible and a GPU (kernels/cuda) produces the same bytes. Decode uses no
// randomness and gives the same floats on every machine.
// Error bound (alpha^2), per bucket of d' = min(d, n) values: E||Q(v)-v||^2 <= min(d'/(4s^2), sqrt(d')/s)
// ||v||^2 for both norms; see relative_error_bound() and docs/codecs.md for the derivation. Input must be
// finite (QG_ENFORCE in encode). Decode rejects a wrong size, a NaN/Inf/negative scale, an out-of-range
// level, "-0" codes and nonzero padding as errc::corrupt; for elias also a truncated or over-64-bit
// Elias code, a gap past a bucket's end, and trailing bytes. Thread safety: immutable; encode/decode
// may run concurrently.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "algorithms/compress/compressor.hpp"
#include "kernels/cpu/qsgd_format.hpp"

namespace qgossip {

enum class qsgd_coding : std::uint8_t {
  dense = 0,  // fixed-width codes (kernels/cpu/qsgd_format.hpp)
  elias = 1,  // the paper's sparse Elias coding (sparse_elias.hpp)
};

struct qsgd_options {
  std::uint32_t levels = 127;                        // s, 1 .. 32767
  std::size_t bucket = 512;                          // d; 0 = whole vector
  kernels::qsgd_norm norm = kernels::qsgd_norm::l2;  // l2 = QSGD, max = QSGDinf
  qsgd_coding coding = qsgd_coding::dense;
};

class qsgd_compressor final : public compressor {
 public:
  // REQUIRES: 1 <= options.levels <= 32767 (QG_ENFORCE); make_qsgd() validates user input.
  explicit qsgd_compressor(const qsgd_options& options);

  std::string_view name() const override { return "qsgd"; }
  codec_id id() const override { return codec_id::qsgd; }
  std::uint32_t params_tag() const override { return params_tag_; }
  std::string describe() const override;
  bool unbiased() const override { return true; }
  double relative_error_bound(std::size_t n) const override;
  std::size_t max_encoded_bytes(std::size_t n) const override;
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  // Dense coding encodes a difference bucket by bucket (kernels::qsgd_encode_difference) for buckets
  // of at most kQsgdMaxDifferenceBucket values; Elias and larger buckets through the default.
  bool encodes_difference(std::size_t n) const override;
  void encode_difference(std::span<const float> a, std::span<const float> b, const codec_context& ctx,
                         std::vector<std::byte>& out) const override;
  // Dense coding decodes straight into a sum (kernels::qsgd_validate, qsgd_decode_add); Elias through
  // the defaults.
  bool adds_decoded() const override { return options_.coding == qsgd_coding::dense; }
  status validate(std::span<const std::byte> in, const codec_context& ctx, std::size_t n) const override;
  void decode_add(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;
  // The entropy of the signed levels (-s..s), one symbol per value.
  double entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                const codec_context& ctx) const override;

  const qsgd_options& options() const { return options_; }
  std::uint32_t bits() const { return layout_.bits(); }

 private:
  void encode_elias(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const;
  status decode_elias(std::span<const std::byte> in, std::span<float> out) const;

  qsgd_options options_;
  kernels::qsgd_layout layout_;
  std::uint32_t params_tag_;
};

// The registry's factory for spec.name == "qsgd" (parameters above; config_error when invalid).
std::unique_ptr<compressor> make_qsgd(const codec_spec& spec, const layer_bounds& layers);

}  // namespace qgossip
