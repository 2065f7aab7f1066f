#pragma once
// The input formats of the fuzz targets, shared with fuzz/make_corpus.cpp (which writes real
// payloads in them as the seed corpus). docs/wire.md "Fuzzing" tells how to run them.
//
// codec_decode_fuzz:  [spec] [s0 s1 s2 s3] [ctx] [payload...]
//   spec   kSpecs[spec % size]: every registered codec, several parameter sets each, and isgq
//   s0..s3 the shape. Compressors: n = (s0 | s1 << 8) % (kMaxCount + 1) values; s2 % 4 picks the
//          layer bounds {} / {0, n} / {0, c, n} / {0, c/2, c, n} with c = s3 * n / 255.
//          isgq: 1 + (s0 & 1) layers, in0 = 1 + s1 % 24, out0 = 1 + s2 % 12, in1 = out0,
//          out1 = 1 + s3 % 12, (s0 >> 1) % 4 unused floats before and after each layer, and
//          s0 & 8 lists the layers in reverse order of their offsets.
//   ctx    the codec_context's seed (randk and dither regenerate their shared randomness from it)
// wire_header_fuzz:   [flags] [56 header bytes] [payload...] (fewer bytes: a truncated header)
//   flags & 1  rewrite the crc32c field to the checksum of the frame, so that the checks after the
//              checksum (reserved, kind, run_id, sender, codec, tag, count) are reached
//   flags & 2  leave the train codec fields to check_codec (wire_expectations::train unset)
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "core/fc_factors.hpp"
#include "gossip/wire.hpp"

namespace qgossip::fuzz {

inline constexpr const char* kSpecs[] = {
    "identity",
    "qsgd",  // dense 8-bit codes, bucket 512, l2
    "qsgd:levels=1,bucket=0",
    "qsgd:levels=100,bucket=7",
    "qsgd:bits=4,bucket=33,norm=max",  // QSGDinf (max norm)
    "qsgd:bits=16,bucket=1000",
    "qsgd:levels=32,bucket=0,coding=elias",
    "qsgd:bits=4,bucket=33,norm=max,coding=elias",
    "qsgd:levels=32767,bucket=1,coding=elias",  // the extremes: widest levels, one value per bucket
    "nuqsgd",
    "nuqsgd:s=1,bucket=0",
    "nuqsgd:s=8,bucket=33",
    "nuqsgd:s=126,bucket=1",
    "mcgq",  // run-length coded
    "mcgq:K=0.1",
    "mcgq:K=3,coding=dense",
    "mcgq:K=2,dynamic=true",  // the decoder accepts a range of sample counts
    "mcgq:K=1,coding=dense,variant=accumulate",
    "mcgq:K=64",
    "dither:K=7",
    "dither:K=1,bucket=512",
    "dither:K=300,bucket=100",
    "dither:K=32767,bucket=1",
    "randsparse:p=0.1",  // Rice-coded positions
    "randsparse:p=0.7",  // bitmap positions
    "randsparse:p=1",
    "randk:ratio=0.01",
    "randk:k=7,scaled=false",
    "topk:ratio=0.01",
    "topk:ratio=0.5",
    "topk:k=5",  // more than some vectors hold
    "sign",
    "sign:bucket=100",
    "sign:bucket=1",
    "fp16",
    "bf16",
    "isgq",
    "isgq:kx=3,kd=7,scale=column",
    "isgq:kx=200,kd=32767",
    "isgq:variant=mse,kx=2,kd=5,iterations=1",
};
inline constexpr std::size_t kSpecCount = std::size(kSpecs);
inline constexpr std::size_t kCodecPrefixBytes = 6;
inline constexpr std::size_t kMaxCount = 2048;

inline bool is_isgq(std::size_t spec) { return std::string_view(kSpecs[spec]).starts_with("isgq"); }

// What decode is asked to fill: n values (compressors, with layer bounds) or FC layers inside a
// gradient of grad values (isgq; fc_factors with offset, in, out only).
struct codec_shape {
  std::size_t n = 0;
  layer_bounds layers;
  std::vector<fc_factors> fc;
};

inline codec_shape shape_of(std::size_t spec, const std::uint8_t s[4]) {
  codec_shape sh;
  if (!is_isgq(spec)) {
    sh.n = (s[0] | std::size_t{s[1]} << 8) % (kMaxCount + 1);
    const std::size_t c = s[3] * sh.n / 255;
    switch (s[2] % 4) {
      case 1: sh.layers = {0, sh.n}; break;
      case 2: sh.layers = {0, c, sh.n}; break;
      case 3: sh.layers = {0, c / 2, c, sh.n}; break;
      default: break;
    }
    return sh;
  }
  const std::size_t gap = (s[0] >> 1) % 4, in0 = 1 + s[1] % 24, out0 = 1 + s[2] % 12;
  sh.fc.resize(1 + (s[0] & 1));
  sh.fc[0].in = in0;
  sh.fc[0].out = out0;
  if (sh.fc.size() == 2) {
    sh.fc[1].in = out0;
    sh.fc[1].out = 1 + s[3] % 12;
  }
  std::size_t at = gap;
  for (fc_factors& f : sh.fc) {
    f.offset = at;
    at += f.out * (f.in + 1) + gap;
  }
  sh.n = at;
  if (sh.fc.size() == 2 && (s[0] & 8)) std::swap(sh.fc[0], sh.fc[1]);  // list order != gradient order
  return sh;
}

inline codec_context context_of(std::uint8_t b) {
  return codec_context{.seed = b, .rank = 1u + b % 7u, .iteration = 17u + b, .stream = b % 3u};
}

// wire_header_fuzz's receiver: the golden frame of docs/wire.md passes it (with flags & 1 unset too).
inline constexpr std::uint64_t kRunId = 0x0123456789ABCDEFull;
inline constexpr int kSenders[] = {1, 3, 7};
inline constexpr std::uint64_t kMaxPayloadBytes = 1u << 16;
inline constexpr codec_expectation kTrain{.codec = 2, .codec_tag = 0xDEADBEEF, .count = 4};
inline constexpr codec_expectation kProbe{.codec = 1, .codec_tag = 0x12345678, .count = 16};

}  // namespace qgossip::fuzz
