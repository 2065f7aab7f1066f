#pragma once
// A Compressor is a compression operator C(.) together with its bit coding: it turns a float vector
// into bytes and back. Modelled on leveldb's FilterPolicy: a stable name tied to the encoding, encode
// *appends* to a byte buffer, decode returns a status and never trusts its input.
//
// Contract (every implementation, checked by tests/compress):
//  - encode is deterministic in (v, ctx): its randomness comes only from the counter-based stream
//    keyed by ctx (kernels/cpu/philox.hpp), so a rerun reproduces the same bytes.
//  - decode is deterministic in (bytes, ctx) and is what *both* the sender and the receivers apply:
//    the sender decodes its own message, so DCD-PSGD replicas stay equal to their owners bit for bit.
//  - decode validates: truncated, oversized, random or bit-flipped input yields errc::corrupt; it
//    never reads or writes out of bounds and never aborts.
// Thread safety: a compressor is immutable after construction; encode/decode may run concurrently.
// The exception is sender-side state (MCGQ's accumulator and learnt K): a codec that has any says so
// (has_sender_state), keeps it behind its own lock, and saves and loads it for checkpoints.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/state_io.hpp"
#include "core/status.hpp"

namespace qgossip {

// The codec on the wire (header field `codec`). Frozen: never renumber, only append.
enum class codec_id : std::uint16_t {
  identity = 1,  // raw little-endian float32
  qsgd = 2,      // QSGD / QSGDinf: dense fixed-width packing, or the paper's Elias coding
  nuqsgd = 3,    // NUQSGD: exponential levels, Elias-coded
  mcgq = 4,      // Monte Carlo gradient quantization, run-length coded
  dither = 5,    // dithered quantization with a shared-seed dither
  randsparse = 6,  // keep each value with probability p, scaled by 1/p
  randk = 7,     // k values at shared-seed random positions
  topk = 8,      // the k largest magnitudes (biased)
  sign = 9,      // signs scaled by ||v||_1 / d (biased)
  fp16 = 10,     // IEEE half precision cast
  bf16 = 11,     // bfloat16 cast
  isgq = 12,     // indirect SG quantization of FC-layer factors (isgq_codec; not a compressor)
};

// Keys of the random stream for one encode, and what the decoder needs to regenerate shared
// randomness (dithered quantization). The receiver fills it from the wire header.
struct codec_context {
  std::uint64_t seed = 0;       // the run's seed
  std::uint32_t rank = 0;       // the sender's rank
  std::uint64_t iteration = 0;  // the round
  std::uint32_t stream = 0;     // tells apart several encodes by one sender in one round
};

class compressor {
 public:
  virtual ~compressor() = default;

  // Stable, human-readable, and tied to the encoding: "qsgd" for every parameter set. Change the
  // name (and codec_id) when the encoding changes.
  virtual std::string_view name() const = 0;
  virtual codec_id id() const = 0;
  // A 32-bit fingerprint of every parameter that shapes the bytes (levels, bucket, norm, ...).
  // It travels in the wire header; a receiver whose tag differs rejects the message.
  virtual std::uint32_t params_tag() const = 0;
  // The canonical inline spec, e.g. "qsgd:levels=127,bucket=512,norm=l2" (parse_codec_spec round-trips).
  virtual std::string describe() const = 0;

  // True when E[decode(encode(v))] = v.
  virtual bool unbiased() const = 0;
  // alpha^2 of docs/algorithms.md: an upper bound on E||C(v) - v||^2 / ||v||^2 for any v of n values
  // (+infinity when there is none). Used to report the DCD-PSGD convergence condition.
  virtual double relative_error_bound(std::size_t n) const = 0;
  // Most bytes encode() can append for n values, so buffers are sized once.
  virtual std::size_t max_encoded_bytes(std::size_t n) const = 0;

  // Appends the encoding of v to out.
  virtual void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const = 0;
  // Decodes exactly out.size() values from in, which must be exactly one encoding.
  virtual status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const = 0;

  // A sender whose message is the difference of two vectors it keeps (CHOCO-SGD's x_{t+1/2} - x^_i:
  // the algorithms' difference_message): appends the encoding of v = a - b (a[i] - b[i] in float),
  // the same bytes as encode(v). encodes_difference(n): done as it reads a and b, without a vector
  // of v, for n values (the default, in compressor.cpp, builds v). REQUIRES: a.size() == b.size().
  virtual bool encodes_difference(std::size_t n) const { return false; }
  virtual void encode_difference(std::span<const float> a, std::span<const float> b, const codec_context& ctx,
                                 std::vector<std::byte>& out) const;

  // Receivers that add what they decode into a sum (a public copy, a replica: the algorithms'
  // additive_messages, node/run/message_inbox.hpp): validate checks every byte decode would, writing
  // nothing, with decode's errors; decode_add adds the values decode would write into out (out[i] +=
  // v[i]: the same bits as decoding into a vector and adding it). adds_decoded(): the two run without
  // a vector of the decoded values (the defaults, in compressor.cpp, decode into one they allocate).
  // REQUIRES for decode_add: validate(in, ctx, out.size()) ok (QG_ENFORCE otherwise, out partly added).
  virtual bool adds_decoded() const { return false; }
  virtual status validate(std::span<const std::byte> in, const codec_context& ctx, std::size_t n) const;
  virtual void decode_add(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const;

  // Shannon entropy, in bits per value, of the empirical distribution of the symbols that `encoded`
  // (one encoding of n values, made with ctx) carries: what an ideal entropy coder of those symbols
  // would need, to set against the bits the codec spends. Side information (scales, norms) is not
  // counted. The default (compressor.cpp) decodes and takes the entropy of the decoded floats' 32-bit
  // patterns: exact but coarse (values of different buckets are different symbols); codecs override
  // it with their own symbols (QSGD: signed levels, NUQSGD: signed exponent indices).
  // REQUIRES: encoded decodes (QG_ENFORCE). 0 for n = 0.
  virtual double entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                        const codec_context& ctx) const;

  // Checkpoints. A codec whose encode depends on its earlier encodes (accumulated error, learnt
  // parameters) keeps "sender state": it overrides all three, and load_sender_state into a fresh
  // instance of the same spec makes the next encodes produce the same bytes as the saved instance
  // would have (tests/compress/sender_state_test checks this for every registered codec). The
  // defaults are for stateless codecs, whose encode depends on (v, ctx) alone: nothing to save.
  virtual bool has_sender_state() const { return false; }
  virtual void save_sender_state(state_writer&) const {}
  // Throws state_error for state of another codec or parameter set.
  virtual void load_sender_state(state_reader&) {}
};

// A codec named with its parameters, as the run YAML (`compressor: {name: qsgd, levels: 127}`) and
// the inline form (`qsgd:levels=127,bucket=512`) both produce. Values stay strings until the
// factory parses them, so one factory serves the config loader and the `codec` command.
struct codec_spec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;  // in the order given
};

// "qsgd:levels=15,bucket=512,norm=l2" -> {qsgd, {{levels,15},{bucket,512},{norm,l2}}}.
// Throws config_error on a malformed string.
codec_spec parse_codec_spec(std::string_view text);

// What a layer-aware codec needs from the model: offsets of layer starts in the flat parameter
// vector plus the total at the end ({0, 7850} for softmax regression on 784x10). Empty = one layer.
using layer_bounds = std::vector<std::size_t>;

// Builds the compressor for spec. Throws config_error naming the codec and parameter for an unknown
// name, an unknown parameter (with the list of valid ones), or a value out of range.
std::unique_ptr<compressor> make_compressor(const codec_spec& spec, const layer_bounds& layers = {});

// Names of every registered codec, for --help and error hints.
std::vector<std::string> codec_names();

}  // namespace qgossip
