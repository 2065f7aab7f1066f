// Sender-side codec state through a checkpoint (compressor.hpp): for every registered codec and the
// stateful parameter sets, an encoder A encodes k vectors, saves its state and encodes m more; a
// FRESH encoder B loads A's state and encodes the same m vectors. The bytes must be equal. And a
// codec's has_sender_state() is checked against what it does: a fresh encoder WITHOUT the state
// must produce A's bytes exactly when the codec says it has none. So a codec that keeps state but
// forgets to declare or save it fails here.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/mcgq.hpp"
#include "core/state_io.hpp"

using namespace qgossip;

namespace {

// Besides every codec's defaults (codec_names()): the parameter sets that hold state, and a few others.
const char* const kExtraSpecs[] = {
    "mcgq:variant=accumulate",
    "mcgq:dynamic=true",
    "mcgq:variant=accumulate,dynamic=true,dk=4",
    "mcgq:K=0.2,variant=accumulate,coding=dense",
    "qsgd:bits=4,norm=max,coding=elias",
    "topk:ratio=0.1",
    "randk:ratio=0.1",
    "dither:K=3,bucket=16",
};

const layer_bounds kLayers = {0, 40, 100, 128};

std::vector<float> vector_for(std::uint64_t t) {
  std::mt19937 gen(static_cast<std::uint32_t>(t));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(kLayers.back());
  for (float& x : v) x = normal(gen);
  return v;
}

// Encodes rounds [first, last] on streams 0 and 1, all bytes concatenated.
std::vector<std::byte> encode_rounds(const compressor& c, std::uint64_t first, std::uint64_t last) {
  std::vector<std::byte> out;
  for (std::uint64_t t = first; t <= last; ++t)
    for (std::uint32_t stream = 0; stream < 2; ++stream) {
      const codec_context ctx{11, 3, t, stream};
      c.encode(vector_for(t * 2 + stream), ctx, out);
    }
  return out;
}

std::vector<std::string> all_specs() {
  std::vector<std::string> specs = codec_names();
  specs.insert(specs.end(), std::begin(kExtraSpecs), std::end(kExtraSpecs));
  return specs;
}

}  // namespace

TEST_CASE("every codec's next encodes after a save/load into a fresh instance equal the original's") {
  for (const std::string& spec : all_specs()) {
    CAPTURE(spec);
    const auto a = make_compressor(parse_codec_spec(spec), kLayers);
    (void)encode_rounds(*a, 1, 5);
    state_writer w;
    a->save_sender_state(w);
    const std::vector<std::byte> saved = w.take();
    const std::vector<std::byte> continued = encode_rounds(*a, 6, 9);

    const auto b = make_compressor(parse_codec_spec(spec), kLayers);
    state_reader r(saved, spec);
    b->load_sender_state(r);
    r.expect_end();
    CHECK(encode_rounds(*b, 6, 9) == continued);

    // Without the state: equal exactly for the codecs that declare none.
    const auto fresh = make_compressor(parse_codec_spec(spec), kLayers);
    CHECK((encode_rounds(*fresh, 6, 9) == continued) == !a->has_sender_state());
  }
}

TEST_CASE("MCGQ's stateful variants declare state; its plain variant and the other codecs do not") {
  CHECK(make_compressor(parse_codec_spec("mcgq:variant=accumulate"))->has_sender_state());
  CHECK(make_compressor(parse_codec_spec("mcgq:dynamic=true"))->has_sender_state());
  CHECK_FALSE(make_compressor(parse_codec_spec("mcgq"))->has_sender_state());
  for (const std::string& name : codec_names())
    if (name != "mcgq") CHECK_FALSE(make_compressor(parse_codec_spec(name))->has_sender_state());
}

TEST_CASE("MCGQ refuses sender state of another parameter set or with values out of range") {
  const auto accumulate = make_compressor(parse_codec_spec("mcgq:variant=accumulate"), kLayers);
  (void)encode_rounds(*accumulate, 1, 2);
  state_writer w;
  accumulate->save_sender_state(w);
  const std::vector<std::byte> saved = w.take();
  const auto dynamic = make_compressor(parse_codec_spec("mcgq:dynamic=true"), kLayers);
  state_reader r1(saved, "ckpt");
  CHECK_THROWS_WITH_AS(dynamic->load_sender_state(r1), doctest::Contains("field 'codec' is"), state_error);
  const auto other_layers = make_compressor(parse_codec_spec("mcgq:variant=accumulate"), {0, 128});
  state_reader r2(saved, "ckpt");
  CHECK_THROWS_WITH_AS(other_layers->load_sender_state(r2), doctest::Contains("field 'params_tag'"), state_error);

  // A K outside the clamp range (hand-made state).
  state_writer bad;
  bad.put_string("codec", dynamic->describe());
  bad.put_u64("params_tag", dynamic->params_tag());
  bad.put_u64("streams", 1);
  bad.put_u64("stream", 0);
  bad.put_floats("accumulator", std::vector<float>{});
  bad.put_doubles("k", std::vector<double>{1.0, 1e9, 1.0});
  bad.put_doubles("distance", std::vector<double>{0.1, 0.1, 0.1});
  const std::vector<std::byte> bad_bytes = bad.take();
  state_reader r3(bad_bytes, "ckpt");
  CHECK_THROWS_WITH_AS(dynamic->load_sender_state(r3), doctest::Contains("outside"), state_error);
}
