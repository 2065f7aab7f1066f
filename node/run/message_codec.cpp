#include "node/run/message_codec.hpp"

#include <algorithm>
#include <limits>

#include "algorithms/compress/isgq.hpp"
#include "core/errors.hpp"
#include "node/models/factored_model.hpp"

namespace qgossip {

namespace {

// A compressor on the outgoing vector.
class vector_codec final : public message_codec {
 public:
  vector_codec(std::unique_ptr<compressor> c, std::size_t params) : c_(std::move(c)), params_(params) {}
  std::uint16_t id() const override { return static_cast<std::uint16_t>(c_->id()); }
  std::uint32_t tag() const override { return c_->params_tag(); }
  std::size_t max_encoded_bytes() const override { return c_->max_encoded_bytes(params_); }
  std::string describe() const override { return c_->describe(); }
  double relative_error_bound() const override { return c_->relative_error_bound(params_); }
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) override {
    c_->encode(v, ctx, out);
  }
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override {
    return c_->decode(in, ctx, out);
  }
  bool encodes_difference() const override { return c_->encodes_difference(params_); }
  void encode_difference(std::span<const float> a, std::span<const float> b, const codec_context& ctx,
                         std::vector<std::byte>& out) override {
    c_->encode_difference(a, b, ctx, out);
  }
  bool adds_decoded() const override { return c_->adds_decoded(); }
  status validate(std::span<const std::byte> in, const codec_context& ctx, std::size_t n) const override {
    return c_->validate(in, ctx, n);
  }
  void decode_add(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override {
    c_->decode_add(in, ctx, out);
  }
  void save_state(state_writer& out) const override {
    if (c_->has_sender_state()) c_->save_sender_state(out);
  }
  void load_state(state_reader& in) override {
    if (c_->has_sender_state()) c_->load_sender_state(in);
  }

 private:
  std::unique_ptr<compressor> c_;
  std::size_t params_;
};

// ISGQ: the quantized factors of the step's gradient, rebuilt into the gradient by the receiver.
class factor_codec final : public message_codec, public pass_codec {
 public:
  factor_codec(std::unique_ptr<isgq_codec> c, const factored_model& m, std::size_t batch)
      : c_(std::move(c)), shapes_(m.fc_shapes()), batch_(batch) {}
  std::uint16_t id() const override { return static_cast<std::uint16_t>(c_->id()); }
  std::uint32_t tag() const override { return c_->params_tag(); }
  std::size_t max_encoded_bytes() const override { return c_->max_encoded_bytes(shapes_, batch_); }
  std::string describe() const override { return c_->describe(); }
  double relative_error_bound() const override { return std::numeric_limits<double>::infinity(); }
  double loss_and_grad(const model& m, std::span<const float> x, const dataset& d,
                       std::span<const std::size_t> batch, std::span<float> grad) override {
    const double loss = dynamic_cast<const factored_model&>(m).loss_and_factors(x, d, batch, factors_);
    gradient_from_factors(factors_, grad);  // the exact local gradient, for the node's checks
    return loss;
  }
  void encode(std::span<const float>, const codec_context& ctx, std::vector<std::byte>& out) override {
    c_->encode(factors_, ctx, out);
  }
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override {
    std::fill(out.begin(), out.end(), 0.0f);
    return c_->decode(in, ctx, shapes_, out);
  }
  void save_state(state_writer&) const override {}
  void load_state(state_reader&) override {}

 private:
  std::unique_ptr<isgq_codec> c_;
  std::vector<fc_factors> shapes_;
  std::size_t batch_;
  std::vector<fc_factors> factors_;  // of the last loss_and_grad
};

}  // namespace

void message_codec::encode_difference(std::span<const float>, std::span<const float>, const codec_context&,
                                      std::vector<std::byte>&) {
  QG_ENFORCE(false, describe() << " does not encode a difference");
}

status message_codec::validate(std::span<const std::byte>, const codec_context&, std::size_t) const {
  QG_ENFORCE(false, describe() << " does not decode into a sum");
  return status::ok();
}

void message_codec::decode_add(std::span<const std::byte>, const codec_context&, std::span<float>) const {
  QG_ENFORCE(false, describe() << " does not decode into a sum");
}

pass_codec* pass_codec_of(message_codec& codec) { return dynamic_cast<pass_codec*>(&codec); }

std::unique_ptr<message_codec> make_message_codec(const codec_spec& spec, const model& m, std::size_t batch,
                                                  bool chunks) {
  if (spec.name != "isgq")
    return std::make_unique<vector_codec>(make_compressor(spec, chunks ? layer_bounds{} : m.layer_bounds()),
                                          m.num_params());
  const auto* factored = dynamic_cast<const factored_model*>(&m);
  if (!factored)
    throw config_error("compressor: isgq needs the gradient factors of a fully connected Eigen model (mlp or "
                       "softmax); " + m.describe() + " has none");
  return std::make_unique<factor_codec>(make_isgq(spec), *factored, batch);
}

namespace {

// What receivers decode of the own message's bytes, added into sum. Not validated first: the codec
// made them, and one that could not decode them fails decode_add's own check (an invariant_error).
void add_own(message_codec& codec, const codec_context& ctx, const std::vector<std::byte>& bytes,
             std::span<float> sum) {
  codec.decode_add(bytes, ctx, sum);
}

codec_context own_context(std::uint64_t seed, int rank, std::uint64_t t) {
  return {.seed = seed, .rank = static_cast<std::uint32_t>(rank), .iteration = t, .stream = 0};
}

}  // namespace

void encode_own_difference_adding(message_codec& codec, std::span<const float> a, std::span<const float> b,
                                  std::uint64_t seed, int rank, std::uint64_t t, std::vector<std::byte>& bytes,
                                  std::span<float> sum) {
  const codec_context ctx = own_context(seed, rank, t);
  bytes.clear();
  codec.encode_difference(a, b, ctx, bytes);
  add_own(codec, ctx, bytes, sum);
}

void encode_own_message_adding(message_codec& codec, std::span<const float> v, std::uint64_t seed, int rank,
                               std::uint64_t t, std::vector<std::byte>& bytes, std::span<float> sum) {
  const codec_context ctx = own_context(seed, rank, t);
  bytes.clear();
  codec.encode(v, ctx, bytes);
  add_own(codec, ctx, bytes, sum);
}

void encode_own_message(message_codec& codec, std::span<const float> v, std::uint64_t seed, int rank,
                        std::uint64_t t, std::vector<std::byte>& bytes, std::span<float> decoded) {
  const codec_context ctx{
      .seed = seed, .rank = static_cast<std::uint32_t>(rank), .iteration = t, .stream = 0};
  bytes.clear();
  codec.encode(v, ctx, bytes);
  const status own = codec.decode(bytes, ctx, decoded);
  QG_ENFORCE(own.is_ok(), "the compressor cannot decode its own message: " << own.to_string());
}

}  // namespace qgossip
