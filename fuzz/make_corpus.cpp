// Writes the fuzz targets' seed corpus: real payloads in their input formats (fuzz/inputs.hpp).
//   make_corpus DIR   ->  DIR/codec_decode/*  every spec of kSpecs encoding real vectors (several
//                          sizes and layer bounds; isgq: real factors at several batch sizes)
//                         DIR/wire_header/*   valid frames (the golden one of docs/wire.md, train
//                          and probe messages with codec payloads) and a few broken ones
//                         DIR/notice/*        notices as nodes send them (left, degree)
// Deterministic: the same files every run. scripts/fuzz.sh runs it before the fuzzers.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/isgq.hpp"
#include "node/membership/notice.hpp"
#include "fuzz/inputs.hpp"
#include "gossip/wire.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

std::mt19937 gen(20240611);

std::vector<float> gaussian(std::size_t n, bool zeros) {
  std::normal_distribution<float> normal(0.0f, 0.01f);
  std::vector<float> v(n);
  for (float& x : v) x = zeros ? 0.0f : (gen() % 8 == 0 ? 0.0f : normal(gen));
  return v;
}

void write(const fs::path& dir, int& count, const std::vector<std::uint8_t>& bytes) {
  char name[32];
  std::snprintf(name, sizeof name, "seed-%04d", count++);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::vector<std::uint8_t> prefix(std::size_t spec, std::array<std::uint8_t, 4> s, std::uint8_t ctx) {
  return {static_cast<std::uint8_t>(spec), s[0], s[1], s[2], s[3], ctx};
}

void append(std::vector<std::uint8_t>& out, const std::vector<std::byte>& bytes) {
  for (std::byte b : bytes) out.push_back(std::to_integer<std::uint8_t>(b));
}

// A seed that the target would reject is a make_corpus bug (the input format drifted): fail loudly.
void decodes(const status& st, std::size_t spec) {
  if (st) return;
  std::fprintf(stderr, "make_corpus: a seed of '%s' does not decode: %s\n", fuzz::kSpecs[spec], st.to_string().c_str());
  std::exit(1);
}

int codec_seeds(const fs::path& dir) {
  int count = 0;
  for (std::size_t spec = 0; spec < fuzz::kSpecCount; ++spec) {
    const codec_spec parsed = parse_codec_spec(fuzz::kSpecs[spec]);
    if (fuzz::is_isgq(spec)) {
      const auto codec = make_isgq(parsed);
      for (const std::array<std::uint8_t, 4> s : {std::array<std::uint8_t, 4>{0, 5, 3, 0}, {1, 20, 7, 4},
                                                  {0b1011, 2, 11, 9}, {0b0111, 23, 0, 11}})
        for (const std::size_t batch : {1u, 3u, 8u}) {
          const std::uint8_t ctx = static_cast<std::uint8_t>(count * 37);
          fuzz::codec_shape shape = fuzz::shape_of(spec, s.data());
          std::normal_distribution<float> normal(0.0f, 1.0f);
          for (fc_factors& f : shape.fc) {
            f.batch = batch;
            f.x.resize(f.in * batch);
            f.delta.resize(f.out * batch);
            for (float& x : f.x) x = gen() % 3 == 0 ? 0.0f : std::abs(normal(gen));  // ReLU outputs
            for (float& x : f.delta) x = 0.01f * normal(gen);
          }
          std::vector<std::byte> payload;
          codec->encode(shape.fc, fuzz::context_of(ctx), payload);
          std::vector<float> grad(shape.n);
          decodes(codec->decode(payload, fuzz::context_of(ctx), shape.fc, grad), spec);
          std::vector<std::uint8_t> seed = prefix(spec, s, ctx);
          append(seed, payload);
          write(dir, count, seed);
        }
      continue;
    }
    // Layer bounds matter to dither and mcgq only: the others get seeds without.
    const bool layered = parsed.name == "dither" || parsed.name == "mcgq";
    for (const std::size_t n : {0u, 1u, 5u, 64u, 333u, 1000u, 2048u})
      for (std::uint8_t mode = 0; mode < (layered && n >= 64 ? 4 : 1); ++mode)
        for (const bool zeros : {false, true}) {
          if (zeros && n != 64) continue;
          const std::array<std::uint8_t, 4> s{static_cast<std::uint8_t>(n & 0xff), static_cast<std::uint8_t>(n >> 8),
                                              mode, 150};
          const fuzz::codec_shape shape = fuzz::shape_of(spec, s.data());
          const std::uint8_t ctx = static_cast<std::uint8_t>(count * 37);
          std::vector<std::byte> payload;
          const auto codec = make_compressor(parsed, shape.layers);
          codec->encode(gaussian(n, zeros), fuzz::context_of(ctx), payload);
          std::vector<float> out(n);
          decodes(codec->decode(payload, fuzz::context_of(ctx), out), spec);
          std::vector<std::uint8_t> seed = prefix(spec, s, ctx);
          append(seed, payload);
          write(dir, count, seed);
        }
  }
  return count;
}

void frame(const fs::path& dir, int& count, std::uint8_t flags, const wire_header& h,
           const std::vector<std::byte>& payload, std::size_t keep = SIZE_MAX) {
  std::array<std::byte, kWireHeaderBytes> header;
  encode_header(h, payload, header);
  std::vector<std::uint8_t> seed{flags};
  append(seed, std::vector<std::byte>(header.begin(), header.end()));
  append(seed, payload);
  if (keep < seed.size()) seed.resize(keep);
  write(dir, count, seed);
}

int wire_seeds(const fs::path& dir) {
  int count = 0;
  // docs/wire.md's golden frame: rank 3, iteration 17, codec 2, tag 0xDEADBEEF, {1, -2, 0.5, 0}.
  const std::vector<float> golden{1.0f, -2.0f, 0.5f, 0.0f};
  std::vector<std::byte> raw(16);
  std::memcpy(raw.data(), golden.data(), 16);
  wire_header h{.kind = message_kind::train, .run_id = fuzz::kRunId, .sender = 3, .count = 4, .iteration = 17,
                .codec = fuzz::kTrain.codec, .codec_tag = fuzz::kTrain.codec_tag, .payload_bytes = 16};
  for (std::uint8_t flags = 0; flags < 4; ++flags) frame(dir, count, flags, h, raw);
  // Real payloads: train frames of a few codecs (the codec fields left to check_codec), probes.
  for (const char* spec : {"qsgd", "nuqsgd", "topk:ratio=0.5", "fp16"}) {
    const auto codec = make_compressor(parse_codec_spec(spec));
    std::vector<std::byte> payload;
    codec->encode(gaussian(4, false), codec_context{}, payload);
    wire_header t = h;
    t.sender = 7;
    t.codec = static_cast<std::uint16_t>(codec->id());
    t.codec_tag = codec->params_tag();
    t.payload_bytes = payload.size();
    frame(dir, count, 2, t, payload);
  }
  std::vector<std::byte> probe(4 * fuzz::kProbe.count);
  const std::vector<float> values = gaussian(fuzz::kProbe.count, false);
  std::memcpy(probe.data(), values.data(), probe.size());
  wire_header p{.kind = message_kind::probe, .run_id = fuzz::kRunId, .sender = 1, .count = fuzz::kProbe.count,
                .iteration = 99, .codec = fuzz::kProbe.codec, .codec_tag = fuzz::kProbe.codec_tag,
                .payload_bytes = probe.size()};
  frame(dir, count, 0, p, probe);
  // docs/wire.md's golden finished message: no codec, no payload.
  const wire_header done{.kind = message_kind::finished, .run_id = fuzz::kRunId, .sender = 3, .iteration = 17};
  frame(dir, count, 0, done, {});
  // docs/wire.md's golden finished_ack: no codec, no payload.
  const wire_header ack{.kind = message_kind::finished_ack, .run_id = fuzz::kRunId, .sender = 3, .iteration = 17};
  frame(dir, count, 0, ack, {});
  // docs/wire.md's golden join and join_state (rejoining): no codec, count = the model size.
  const std::string join_text = "join 41\n";
  const auto join_bytes = std::as_bytes(std::span(join_text.data(), join_text.size()));
  const std::vector<std::byte> join_payload(join_bytes.begin(), join_bytes.end());
  const wire_header join{.kind = message_kind::join, .run_id = fuzz::kRunId, .sender = 3, .count = fuzz::kProbe.count,
                         .iteration = 41, .payload_bytes = join_text.size()};
  frame(dir, count, 0, join, join_payload);
  const wire_header state{.kind = message_kind::join_state, .run_id = fuzz::kRunId, .sender = 3,
                          .count = fuzz::kProbe.count, .iteration = 17,
                          .payload_bytes = probe.size()};
  frame(dir, count, 0, state, probe);
  // Broken: a truncated header, a foreign sender, an empty payload.
  frame(dir, count, 0, h, raw, 1 + 20);
  wire_header stranger = h;
  stranger.sender = 4;
  frame(dir, count, 1, stranger, raw);
  wire_header empty = h;
  empty.payload_bytes = 0;
  frame(dir, count, 0, empty, {});
  return count;
}

int notice_seeds(const fs::path& dir) {
  int count = 0;
  const std::vector<std::vector<notice_item>> notices{
      {{.what = notice_item::kind::left, .rank = 3, .round = 237, .cause = "stopped: its link closed or it answered no heartbeat (tcp://127.0.0.1:29503)"},
       {.what = notice_item::kind::degree, .round = 239, .degree = 1}},
      {{.what = notice_item::kind::left, .rank = 5, .round = 12, .cause = "it stopped: round 12: diverged"},
       {.what = notice_item::kind::left, .rank = 2, .round = 12, .cause = "sent a train message for iteration 12 that does not decode"}},
      {{.what = notice_item::kind::join, .round = 41}},
      {{.what = notice_item::kind::offer, .round = 57, .degree = 2}, {.what = notice_item::kind::accept, .round = 60, .degree = 2}},
      {{.what = notice_item::kind::refuse, .cause = "join round 12 is past: this node is at round 57"},
       {.what = notice_item::kind::joined, .rank = 3, .round = 60}},
      {{.what = notice_item::kind::start, .size = 101770, .hash = 0xc305d3253e329acbULL}},
      {{.what = notice_item::kind::halt, .round = 4711}},
  };
  for (const auto& n : notices) {
    const std::string text = encode_notice(n);
    write(dir, count, std::vector<std::uint8_t>(text.begin(), text.end()));
  }
  return count;
}

// join_state_fuzz inputs: model size byte, count byte (high bit clear: the same), payload.
int join_state_seeds(const fs::path& dir) {
  int count = 0;
  for (std::uint8_t size : {4, 16}) {
    const std::vector<float> model = gaussian(size, false);
    for (int copies : {1, 2}) {
      std::vector<std::uint8_t> input{size, 0};
      for (int c = 0; c < copies; ++c) {
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(model.data());
        input.insert(input.end(), bytes, bytes + model.size() * sizeof(float));
      }
      write(dir, count, input);
    }
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus DIR\n");
    return 2;
  }
  const fs::path codec_dir = fs::path(argv[1]) / "codec_decode", wire_dir = fs::path(argv[1]) / "wire_header";
  fs::create_directories(codec_dir);
  fs::create_directories(wire_dir);
  const fs::path notice_dir = fs::path(argv[1]) / "notice";
  fs::create_directories(notice_dir);
  const fs::path join_state_dir = fs::path(argv[1]) / "join_state";
  fs::create_directories(join_state_dir);
  const int codecs = codec_seeds(codec_dir), frames = wire_seeds(wire_dir), notices = notice_seeds(notice_dir);
  const int states = join_state_seeds(join_state_dir);
  std::printf("make_corpus: %d codec_decode seeds, %d wire_header seeds, %d notice seeds, %d join_state seeds in %s\n",
              codecs, frames, notices, states, argv[1]);
  return 0;
}
