#pragma once
// What a node's train messages are made of: the learner's codec (docs/design.md).
// Two kinds:
//  - a compressor (algorithms/compress/) applied to the algorithm's outgoing vector: every codec of
//    the `compressor:` section, identity included;
//  - ISGQ's factors (`compressor: {name: isgq}`, all-gather only): the quantized inputs X and deltas
//    Δ of each fully connected layer, from the same forward and backward pass as the step's
//    gradient; the receiver rebuilds the gradient from them.
// A factor codec needs the factors of exactly the step's pass, so it also takes the step's gradient
// (pass_codec, beside message_codec: looked up once by node/run/local_training.hpp; every other
// gradient comes from the model). The round pattern (node/run/round_pattern.hpp) asks it to encode
// and decode.
// Contract of encode/decode as algorithms/compress/compressor.hpp (deterministic in (input, ctx);
// decode validates and never trusts its input). Not thread-safe: one node's thread (a factor codec
// keeps the last pass's factors; MCGQ keeps sender state).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "core/state_io.hpp"
#include "core/status.hpp"
#include "node/data/dataset.hpp"
#include "node/models/model.hpp"

namespace qgossip {

class message_codec {
 public:
  virtual ~message_codec() = default;
  // The wire header's codec fields (gossip/wire.hpp) and the largest payload encode() can write.
  [[nodiscard]] virtual std::uint16_t id() const = 0;
  [[nodiscard]] virtual std::uint32_t tag() const = 0;
  [[nodiscard]] virtual std::size_t max_encoded_bytes() const = 0;
  // "qsgd:levels=7,bucket=128,norm=max", for logs and run.json.
  [[nodiscard]] virtual std::string describe() const = 0;
  // alpha^2 of docs/algorithms.md for the model's size (the DCD-PSGD condition in the start-up line).
  [[nodiscard]] virtual double relative_error_bound() const = 0;
  // Appends the message carrying v (the algorithm's outgoing vector; a factor codec sends the
  // factors of its last pass_codec::loss_and_grad instead) to out.
  virtual void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) = 0;
  // Decodes one message into out, every value written. errc::corrupt for bytes that are not one.
  [[nodiscard]] virtual status decode(std::span<const std::byte> in, const codec_context& ctx,
                                      std::span<float> out) const = 0;
  // A message that is a difference a - b (algorithms/capabilities.hpp difference_message;
  // compressor.hpp's encode_difference): encodes_difference() says whether the codec does it without a
  // vector of a - b for the model's size (false for a factor codec). REQUIRES: encodes_difference().
  [[nodiscard]] virtual bool encodes_difference() const { return false; }
  virtual void encode_difference(std::span<const float> a, std::span<const float> b, const codec_context& ctx,
                                 std::vector<std::byte>& out);
  // A message decoded straight into a sum (algorithms/capabilities.hpp additive_messages;
  // compressor.hpp's adds_decoded, validate, decode_add): validate checks what decode would, and
  // decode_add adds what decode would write into out. adds_decoded(): the codec does both without a
  // vector of the decoded values (false for a factor codec, whose receivers rebuild a gradient).
  // REQUIRES for both: adds_decoded(); for decode_add, validate ok (QG_ENFORCE).
  [[nodiscard]] virtual bool adds_decoded() const { return false; }
  [[nodiscard]] virtual status validate(std::span<const std::byte> in, const codec_context& ctx, std::size_t n) const;
  virtual void decode_add(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const;
  // Checkpoints: the encoder's state that carries over to the next encode (MCGQ's), written
  // whatever the codec (an empty section when there is none); load into a fresh codec of the same
  // spec. Throws state_error for state of another codec.
  virtual void save_state(state_writer& out) const = 0;
  virtual void load_state(state_reader& in) = 0;
};

// A codec whose message is made of the step's own forward and backward pass (ISGQ's factors): it
// takes the step's gradient itself, keeping that pass's factors for its next encode.
class pass_codec {
 public:
  virtual ~pass_codec() = default;
  // The mean loss at x on the batch, and its gradient into grad (the same as m.loss_and_grad's).
  [[nodiscard]] virtual double loss_and_grad(const model& m, std::span<const float> x, const dataset& d,
                                             std::span<const std::size_t> batch, std::span<float> grad) = 0;
};
// The codec's pass_codec, or nullptr where its message is made of the outgoing vector alone.
[[nodiscard]] pass_codec* pass_codec_of(message_codec& codec);

// The codec of `spec` for model m and batches of `batch` examples. chunks: the messages are chunks
// of the vector (the ring all-reduce, node/run/ring_round.hpp), so a layer-aware codec (dither) is
// built without the model's layers, which do not fall on chunk bounds. Throws config_error for a
// factor codec on a model without factors (a libtorch model; the config refuses it first).
[[nodiscard]] std::unique_ptr<message_codec> make_message_codec(const codec_spec& spec, const model& m,
                                                                std::size_t batch, bool chunks = false);

// Node `rank`'s own message of round t as its receivers will decode it (node/run/message_inbox.hpp:
// the context of the run's seed, the sender, round t, stream 0): v encoded into `bytes` (cleared
// first), then decoded into `decoded`. Throws invariant_error when the codec cannot decode it.
void encode_own_message(message_codec& codec, std::span<const float> v, std::uint64_t seed, int rank,
                        std::uint64_t t, std::vector<std::byte>& bytes, std::span<float> decoded);
// Node `rank`'s own message of round t when it is a - b (codec.encodes_difference(); the algorithm's
// difference_message), what the receivers will decode added into `sum` (codec.adds_decoded()).
void encode_own_difference_adding(message_codec& codec, std::span<const float> a, std::span<const float> b,
                                  std::uint64_t seed, int rank, std::uint64_t t, std::vector<std::byte>& bytes,
                                  std::span<float> sum);
// The same, what the receivers will decode added into `sum` (codec.adds_decoded(): no vector of the
// decoded values; the algorithm's additive_messages::own_sum).
void encode_own_message_adding(message_codec& codec, std::span<const float> v, std::uint64_t seed, int rank,
                               std::uint64_t t, std::vector<std::byte>& bytes, std::span<float> sum);

}  // namespace qgossip
