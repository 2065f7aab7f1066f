// `qgossip codec`: measure one codec on one vector (node/cli/codec_report.hpp), and write or read its
// actual wire payload.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "core/errors.hpp"
#include "node/cli/codec_report.hpp"
#include "node/cli/commands.hpp"

namespace qgossip {
namespace {

// The parameters of every codec, for --help. Keep in sync with docs/codecs.md (the byte-level spec);
// tests/integration/codec_cli_test.cpp checks that every registered codec is listed here with every
// parameter its factory accepts.
struct codec_help {
  std::string_view name;
  std::string_view text;  // first line: what it is; then one line per parameter
};

constexpr codec_help kCodecHelp[] = {
    {"identity", "raw float32, no compression; no parameters\n"},
    {"qsgd",
     "QSGD / QSGDinf: per bucket a float32 scale, per value a sign and a level 0..s; unbiased\n"
     "levels=S      nonzero levels s, 1..32767 (default 127)\n"
     "bits=B        code width incl. sign, 2..16: s = 2^(B-1)-1 (bits=8 -> s=127); give levels or bits\n"
     "bucket=D      values per scale, 0 = whole vector (default 512)\n"
     "norm=l2|max   scale: L2 norm (QSGD) or max-abs (QSGDinf) (default l2)\n"
     "coding=dense|elias  fixed-width codes, or the paper's Elias-coded gaps/signs/levels (default dense)\n"},
    {"nuqsgd",
     "NUQSGD: levels 0, 2^-s, ..., 1/2, 1 of |v|/||bucket||_2, Elias-coded exponents; unbiased\n"
     "s=S           1..126 (default 3)\n"
     "bucket=D      values per norm, 0 = whole vector (default 8192)\n"},
    {"mcgq",
     "Monte Carlo gradient quantization: ceil(len*K) stratified samples per layer, run-length coded;\n"
     "unbiased (plain variant); layer-aware\n"
     "K=X           sampling amount, 0 < K <= 64 (default 1)\n"
     "coding=rle|dense  the paper's run-length code, or fixed-width values (default rle)\n"
     "variant=plain|accumulate  sample g, or an accumulator of the gradients (biased) (default plain)\n"
     "dynamic=false|true  per-layer K from the Wasserstein-1 distance (default false)\n"
     "dk=X          step of the dynamic K, >= 0 (default 1; only with dynamic=true)\n"},
    {"dither",
     "dithered quantization: q = round(x/kappa + U), kappa = ||bucket||_inf/K, shared-seed dither U;\n"
     "unbiased; decoding needs the sender's context; layer-aware\n"
     "K=K           levels, indices in -K..K, 1..32767 (default 127)\n"
     "bucket=D      values per kappa within a layer, 0 = one per layer (default 0)\n"},
    {"randsparse",
     "random sparsification: keep each value with probability p, scaled by 1/p; unbiased\n"
     "p=P           keep probability, 2^-24..1 (default 0.1)\n"},
    {"randk",
     "k values at shared-seed random positions; decoding needs the sender's context\n"
     "k=K | ratio=R  how many: a count, or a fraction of n (default ratio=0.01)\n"
     "scaled=true|false  times n/k: unbiased; false: biased (CHOCO-SGD's rand-k) (default true)\n"},
    {"topk",
     "the k largest magnitudes, zeros elsewhere; biased (alpha^2 = 1 - k/n)\n"
     "k=K | ratio=R  how many: a count, or a fraction of n (default ratio=0.01)\n"},
    {"sign",
     "scaled sign: each value becomes sign(v) ||bucket||_1 / d, 1 bit per value; biased\n"
     "bucket=D      values per scale, 0 = whole vector (default 0)\n"},
    {"fp16", "IEEE half precision cast (saturating), 16 bits per value; biased; no parameters\n"},
    {"bf16", "bfloat16 cast (the top 16 bits of a float32, rounded); biased; no parameters\n"},
};

std::string indent(std::string_view text, std::string_view first, std::string_view rest) {
  std::string out;
  bool first_line = true;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    out += std::string(first_line ? first : rest) + std::string(text.substr(0, nl)) + "\n";
    first_line = false;
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return out;
}

std::string codecs_footer() {
  std::string out =
      "Codecs (SPEC = NAME or NAME:key=value,...; `describe()` of each run prints its canonical form;\n"
      "byte layouts in docs/codecs.md):\n";
  for (const std::string& name : codec_names()) {
    const codec_help* help = nullptr;
    for (const codec_help& h : kCodecHelp)
      if (h.name == name) help = &h;
    char head[32];
    std::snprintf(head, sizeof head, "  %-12s", name.c_str());
    out += indent(help ? help->text : "(parameters: see docs/codecs.md)\n", head, "                ");
  }
  out +=
      "\n"
      "Input: --input FILE (raw little-endian float32, or .npy '<f4'/'<f8' in C order) or --gen KIND:n=N:\n"
      "  gaussian N(0,1), laplace Laplace(0,1), uniform U[-1,1), one-hot (a single 1), all drawn from "
      "--seed;\n"
      "  grad = the gradient of the MLP 784-128-10 (initialized from --seed) on 64 Fashion-MNIST training\n"
      "  examples; its n is the model size (leave n out) and layer-aware codecs get the model's layers.\n"
      "Trial t (0..T-1) encodes and decodes with context {seed, rank 0, iteration t, stream 0}. Reported:\n"
      "  bits_per_value (payload bits / n, mean), compression_ratio (32 n / bits), entropy_bits_per_value\n"
      "  (entropy of the codec's symbols), rel_mse (mean ||C(v)-v||^2/||v||^2), rel_bias\n"
      "  (||mean C(v) - v||/||v||), nnz_fraction (decoded), encode_gbps / decode_gbps (4n bytes / s, "
      "median,\n"
      "  one thread), unbiased and relative_error_bound (the codec's alpha^2; JSON null = unbounded).\n"
      "--encode OUT writes trial 0's payload; --decode IN --out FILE decodes a payload with context\n"
      "{seed, rank 0, iteration 0, stream 0} and writes raw float32 (n from --input, --gen or --n).\n"
      "Exit: 0 ok, 1 the payload does not decode (the decoder's message is printed), 2 bad input.";
  return out;
}

std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(path, 0, 0, std::string("cannot open: ") + std::strerror(errno));
  const std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw config_error(path, 0, 0, "read error");
  const auto bytes = std::as_bytes(std::span<const char>(raw));
  return std::vector<std::byte>(bytes.begin(), bytes.end());
}

void write_bytes(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw config_error(path, 0, 0, std::string("cannot write: ") + std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw config_error(path, 0, 0, "write failed");
}

struct codec_options {
  std::string codec;
  std::string input;
  std::string gen;
  std::size_t trials = 10;
  std::uint64_t seed = 1;
  bool json = false;
  std::string encode_out;
  std::string decode_in;
  std::string out;
  std::size_t n = 0;
  std::string layers;
  std::string data_dir = kFashionMnistDir;
};

int run_codec(const codec_options& o) {
  const bool decode_only = !o.decode_in.empty();
  if (o.input.empty() && o.gen.empty() && !(decode_only && o.n > 0))
    throw config_error(decode_only ? "codec --decode: give the number of values with --n N, --input or --gen"
                                   : "codec: give the vector with --input FILE or --gen KIND:n=N");

  // The vector (or, for --decode, only its size and layers).
  codec_input in;
  std::size_t n = o.n;
  if (!o.gen.empty()) {
    const gen_spec g = parse_gen_spec(o.gen);
    if (g.kind == "grad" && !o.layers.empty())
      throw config_error(
          "codec: --layers cannot be combined with --gen grad (the model gives the layer bounds)");
    if (!decode_only) {
      in = generate_input(g, o.seed, o.data_dir);
    } else if (g.kind == "grad") {
      in.layers = grad_model_layers();  // no need to load the data set to decode
      if (g.n != 0 && g.n != in.layers.back())
        throw config_error("--gen grad: n = " + std::to_string(g.n) + ", but the gradient has " +
                           std::to_string(in.layers.back()) + " values (leave n out)");
      n = in.layers.back();
    } else {
      n = g.n;
    }
  } else if (!o.input.empty()) {
    in = read_input_file(o.input);
  }
  if (!in.values.empty()) n = in.values.size();
  if (!o.layers.empty()) in.layers = parse_layer_sizes(o.layers, n);

  const std::unique_ptr<compressor> codec = make_compressor(parse_codec_spec(o.codec), in.layers);
  const codec_context ctx0{.seed = o.seed, .rank = 0, .iteration = 0, .stream = 0};

  if (decode_only) {
    const std::vector<std::byte> payload = read_bytes(o.decode_in);
    std::vector<float> decoded(n);
    const status st = codec->decode(payload, ctx0, decoded);
    if (!st) {
      std::fprintf(stderr, "qgossip: error: %s: %s does not decode as %zu values: %s\n", o.decode_in.c_str(),
                   codec->describe().c_str(), n, st.to_string().c_str());
      return 1;
    }
    write_bytes(o.out, std::as_bytes(std::span<const float>(decoded)));
    std::printf("decoded %zu values (%zu payload bytes, %s) to %s\n", n, payload.size(),
                codec->describe().c_str(), o.out.c_str());
    return 0;
  }

  if (!o.encode_out.empty()) {
    // Encode is deterministic in (v, ctx): these are exactly trial 0's bytes.
    std::vector<std::byte> payload;
    codec->encode(in.values, ctx0, payload);
    write_bytes(o.encode_out, payload);
    std::fprintf(stderr, "codec: wrote %zu payload bytes (%s, %zu values, iteration 0) to %s\n",
                 payload.size(), codec->describe().c_str(), in.values.size(), o.encode_out.c_str());
  }
  codec_metrics m = measure_codec(*codec, in.values, o.trials, o.seed);
  m.input = in.source;
  const std::string text = o.json ? to_json(m) + "\n" : to_table(m);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

void add_codec_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "codec",
      "Measure a codec on a vector (bits, error, bias, entropy, throughput); write or read its payload");
  cmd->footer(codecs_footer);
  auto o = std::make_shared<codec_options>();
  cmd->add_option("--codec", o->codec, "Codec SPEC, e.g. qsgd:bits=4,bucket=512 (codecs below)")->required();
  auto* input = cmd->add_option("--input", o->input,
                                "The vector: raw little-endian float32 file, or .npy (<f4/<f8, C order)");
  auto* gen = cmd->add_option("--gen", o->gen,
                              "Generate the vector: KIND:n=N, KIND = gaussian|laplace|uniform|one-hot, "
                              "or grad (an MLP gradient)");
  input->excludes(gen);
  cmd->add_option("--trials", o->trials, "Encode/decode trials T (iterations 0..T-1)")
      ->default_val(10)
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--seed", o->seed, "Seed of the codec context and of --gen")->default_val(1);
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  auto* enc = cmd->add_option("--encode", o->encode_out, "Also write trial 0's payload (iteration 0) to OUT");
  auto* dec = cmd->add_option("--decode", o->decode_in,
                              "Decode the payload in IN (iteration 0) instead of measuring; needs --out");
  auto* out =
      cmd->add_option("--out", o->out, "With --decode: write the decoded values here (raw float32 LE)");
  enc->excludes(dec);
  dec->needs(out);
  out->needs(dec);
  auto* n = cmd->add_option("--n", o->n, "With --decode and no --input/--gen: the number of values")
                ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 31));
  n->needs(dec)->excludes(input)->excludes(gen);
  cmd->add_option("--layers", o->layers,
                  "Layer sizes a,b,c (summing to n) for layer-aware codecs; --gen grad uses the model's");
  cmd->add_option("--data", o->data_dir, "Fashion-MNIST directory for --gen grad")
      ->default_val(kFashionMnistDir);
  cmd->callback([o, exit_code] { *exit_code = run_codec(*o); });
}

}  // namespace qgossip
