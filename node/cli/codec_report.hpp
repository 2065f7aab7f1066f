#pragma once
// What `qgossip codec` measures, kept apart from the command line so tests can call it: the test
// vectors (generated or read from a file), the trials (encode + decode T times), and the metrics
// with their text and JSON forms.
//
// A trial t encodes v with codec_context{seed, rank 0, iteration t, stream 0} and decodes the
// payload; metrics over T trials:
//   bits_per_value          payload bits / n, mean over trials (payloads are whole bytes)
//   compression_ratio       32 n / (mean payload bits)
//   entropy_bits_per_value  the codec's entropy_bits_per_value(payload, n, ctx): the entropy of the
//                           symbols it sends (without side information), mean over trials
//   rel_mse                 mean over trials of ||C(v) - v||^2 / ||v||^2
//   rel_bias                ||mean_t C_t(v) - v|| / ||v||
//   nnz_fraction            nonzero decoded values / n, mean over trials
//   encode_gbps, decode_gbps  4n bytes / seconds, median over trials (wall clock, one thread)
//   unbiased, relative_error_bound  what the codec claims (alpha^2; +inf when unbounded)
// With ||v|| = 0 the relative metrics are NaN (JSON null).
// Errors: bad input (spec, file, sizes) is config_error; a codec that cannot decode its own
// payload, or writes more than max_encoded_bytes, is a bug: invariant_error.
// Thread-safety: plain functions; no shared state.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "node/data/idx_reader.hpp"

namespace qgossip {

// A vector to measure a codec on, with the layer bounds a layer-aware codec gets (empty = one layer).
struct codec_input {
  std::vector<float> values;
  layer_bounds layers;
  std::string source;  // how it was made: "gaussian:n=1000", "grad:mlp 784-128-10", a file path
};

// "KIND:n=N" with KIND one of kGenKinds; grad takes no n or the model's size (checked when generated).
struct gen_spec {
  std::string kind;
  std::size_t n = 0;  // 0 = not given (allowed for grad only)
};
inline constexpr std::string_view kGenKinds[] = {"gaussian", "laplace", "uniform", "one-hot", "grad"};
// The model `grad` differentiates and the batch size it uses.
inline constexpr std::size_t kGradBatch = 64;

// Throws config_error on an unknown kind (with a hint), a missing or bad n, n = 0 or n > 2^31.
[[nodiscard]] gen_spec parse_gen_spec(std::string_view text);

// A vector drawn from `seed` (the same on every platform: core/portable_random.hpp):
//   gaussian  N(0, 1)          laplace  Laplace(0, b = 1)        uniform  U[-1, 1)
//   one-hot   zeros but a single 1 at a seed-chosen position
//   grad      the gradient of the MLP 784-128-10 (initialized with seed) on a batch of kGradBatch
//             Fashion-MNIST training examples drawn with seed, read from data_dir; layers = the model's.
[[nodiscard]] codec_input generate_input(const gen_spec& spec, std::uint64_t seed,
                                         const std::string& data_dir = kFashionMnistDir);

// The layer bounds of the MLP that `grad` uses ({0, 100480, 101770}), without loading any data.
[[nodiscard]] layer_bounds grad_model_layers();

// A file of raw little-endian float32 values, or a .npy file (recognised by its magic; node/data/npy.hpp).
// Throws config_error naming the file when it cannot be read, is empty, is raw with a size that is
// not a multiple of 4, or holds a NaN or Inf (codecs take finite vectors only).
[[nodiscard]] codec_input read_input_file(const std::string& path);

// "--layers a,b,c": layer SIZES in order, each >= 1, summing to n; returns the bounds {0, a, a+b, n}.
// Throws config_error otherwise.
[[nodiscard]] layer_bounds parse_layer_sizes(std::string_view text, std::size_t n);

// Throws config_error naming the first NaN/Inf of values (from `source`).
void require_finite(std::span<const float> values, const std::string& source);

struct codec_metrics {
  std::string codec;  // describe()
  std::string input;  // codec_input::source; measure_codec leaves it empty for the caller to fill
  std::size_t n = 0;
  std::size_t trials = 0;
  std::uint64_t seed = 0;
  double bits_per_value = 0;
  double compression_ratio = 0;
  double entropy_bits_per_value = 0;
  double rel_mse = 0;
  double rel_bias = 0;
  double nnz_fraction = 0;
  double encode_gbps = 0;
  double decode_gbps = 0;
  bool unbiased = false;
  double relative_error_bound = 0;
};

// Runs `trials` encode/decode trials of c on v (see the top of this file).
// REQUIRES (invariant_error otherwise): v non-empty and finite, trials >= 1.
[[nodiscard]] codec_metrics measure_codec(const compressor& c, std::span<const float> v, std::size_t trials,
                                          std::uint64_t seed);

// One JSON object with every field of m (non-finite numbers as null), no trailing newline.
[[nodiscard]] std::string to_json(const codec_metrics& m);
// A two-column human-readable table, one metric per line.
[[nodiscard]] std::string to_table(const codec_metrics& m);

}  // namespace qgossip
