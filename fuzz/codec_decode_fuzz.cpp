// libFuzzer target: every codec's decoder on hostile bytes (input format: fuzz/inputs.hpp).
// Decode must return errc::corrupt (isgq: or errc::invalid), or fill exactly the values asked for
// with finite floats, deterministically, validate agreeing and decode_add adding the same values;
// anything else (a crash, a sanitizer report, an exception, a non-finite value) is a finding.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/isgq.hpp"
#include "fuzz/inputs.hpp"

using namespace qgossip;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

bool all_finite(std::span<const float> v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

// Compressors without layer bounds are built once; with bounds (only dither and mcgq read them)
// per input.
const compressor& codec(std::size_t spec, const layer_bounds& layers, std::unique_ptr<compressor>& own) {
  static std::unique_ptr<compressor> plain[fuzz::kSpecCount];
  if (!layers.empty()) return *(own = make_compressor(parse_codec_spec(fuzz::kSpecs[spec]), layers));
  if (!plain[spec]) plain[spec] = make_compressor(parse_codec_spec(fuzz::kSpecs[spec]));
  return *plain[spec];
}

void fuzz_isgq(std::size_t spec, const fuzz::codec_shape& shape, const codec_context& ctx,
               std::span<const std::byte> payload) {
  static std::unique_ptr<isgq_codec> codecs[fuzz::kSpecCount];
  if (!codecs[spec]) codecs[spec] = make_isgq(parse_codec_spec(fuzz::kSpecs[spec]));
  std::vector<float> grad(shape.n, 7.0f), again(shape.n, -1.0f);
  const status st = codecs[spec]->decode(payload, ctx, shape.fc, grad);
  if (!st) {
    require(st.code() == errc::corrupt);  // the shapes are valid: only the bytes can be wrong
    return;
  }
  require(all_finite(grad));
  require(codecs[spec]->decode(payload, ctx, shape.fc, again).is_ok());
  for (const fc_factors& f : shape.fc)  // the layers' ranges are rewritten identically
    require(std::memcmp(grad.data() + f.offset, again.data() + f.offset, 4 * f.out * (f.in + 1)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < fuzz::kCodecPrefixBytes) return 0;
  const std::size_t spec = data[0] % fuzz::kSpecCount;
  const fuzz::codec_shape shape = fuzz::shape_of(spec, data + 1);
  const codec_context ctx = fuzz::context_of(data[5]);
  const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(data) + fuzz::kCodecPrefixBytes,
                                           size - fuzz::kCodecPrefixBytes);
  if (fuzz::is_isgq(spec)) {
    fuzz_isgq(spec, shape, ctx, payload);
    return 0;
  }
  std::unique_ptr<compressor> own;
  const compressor& c = codec(spec, shape.layers, own);
  std::vector<float> out(shape.n), again(shape.n, 1.0f);
  const status st = c.decode(payload, ctx, out);
  // validate's verdict is decode's, without writing anything.
  require(c.validate(payload, ctx, shape.n).is_ok() == st.is_ok());
  if (!st) {
    require(st.code() == errc::corrupt);
    return 0;
  }
  require(payload.size() <= c.max_encoded_bytes(shape.n));
  require(all_finite(out));
  require(c.decode(payload, ctx, again).is_ok());
  require(out.empty() || std::memcmp(out.data(), again.data(), 4 * out.size()) == 0);
  // decode_add adds exactly what decode wrote.
  std::vector<float> sum(shape.n, 0.5f), want(shape.n);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = 0.5f + out[i];
  c.decode_add(payload, ctx, sum);
  require(sum.empty() || std::memcmp(sum.data(), want.data(), 4 * sum.size()) == 0);
  // The symbol counts re-read the payload (QSGD's levels, NUQSGD's exponents, MCGQ's samples).
  const double bits = c.entropy_bits_per_value(payload, shape.n, ctx);
  require(bits >= 0.0 && bits <= 64.0);
  return 0;
}
