// parse_codec_spec, the registry, and the config_error messages a user sees for a bad codec spec.
#include <doctest/doctest.h>

#include <algorithm>

#include <string>

#include "algorithms/compress/compressor.hpp"
#include "core/errors.hpp"

using namespace qgossip;

namespace {

// The message of the config_error that building spec throws ("" if none).
std::string error_of(const std::string& spec) {
  try {
    (void)make_compressor(parse_codec_spec(spec));
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("parse_codec_spec splits name and parameters in order") {
  const codec_spec s = parse_codec_spec("qsgd:levels=15,bucket=512,norm=l2");
  CHECK(s.name == "qsgd");
  REQUIRE(s.params.size() == 3);
  CHECK(s.params[0] == std::pair<std::string, std::string>{"levels", "15"});
  CHECK(s.params[1] == std::pair<std::string, std::string>{"bucket", "512"});
  CHECK(s.params[2] == std::pair<std::string, std::string>{"norm", "l2"});

  const codec_spec bare = parse_codec_spec("identity");
  CHECK(bare.name == "identity");
  CHECK(bare.params.empty());

  const codec_spec spaced = parse_codec_spec("  qsgd : bits = 4 , norm=max ");
  CHECK(spaced.name == "qsgd");
  REQUIRE(spaced.params.size() == 2);
  CHECK(spaced.params[0].first == "bits");
  CHECK(spaced.params[0].second == "4");
}

TEST_CASE("parse_codec_spec rejects malformed text") {
  for (const char* bad :
       {"", "   ", ":", ":levels=3", "qsgd:", "qsgd:levels", "qsgd:=3", "qsgd:levels=", "qsgd:levels=3,",
        "qsgd:levels=3,,bucket=2", "qsgd:levels=3,levels=4", "qs gd", "qsgd:lev els=3", "qsgd:levels=1=2"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)parse_codec_spec(bad), config_error);
  }
  try {
    (void)parse_codec_spec("qsgd:levels=3,levels=4");
  } catch (const config_error& e) {
    CHECK(contains(e.what(), "'levels' given twice"));
  }
}

TEST_CASE("describe() is canonical and parse_codec_spec round-trips it") {
  for (const char* spec : {"identity", "qsgd", "qsgd:bits=4", "qsgd:levels=100,norm=max", "qsgd:bucket=0",
                           "qsgd:bits=16,bucket=7,norm=l2", "qsgd:levels=1,bits=2"}) {
    CAPTURE(spec);
    const auto a = make_compressor(parse_codec_spec(spec));
    const std::string canonical = a->describe();
    const auto b = make_compressor(parse_codec_spec(canonical));
    CHECK(b->describe() == canonical);
    CHECK(b->params_tag() == a->params_tag());
    CHECK(b->id() == a->id());
  }
  CHECK(make_compressor(parse_codec_spec("qsgd"))->describe() == "qsgd:levels=127,bucket=512,norm=l2");
  CHECK(make_compressor(parse_codec_spec("qsgd:bits=4,norm=max"))->describe() ==
        "qsgd:levels=7,bucket=512,norm=max");
  CHECK(make_compressor(parse_codec_spec("identity"))->describe() == "identity");
}

TEST_CASE("params_tag tells parameter sets apart") {
  const auto tag = [](const char* spec) { return make_compressor(parse_codec_spec(spec))->params_tag(); };
  CHECK(tag("qsgd:bits=8") == tag("qsgd:levels=127,bucket=512,norm=l2"));
  CHECK(tag("qsgd:bits=8") != tag("qsgd:bits=4"));
  CHECK(tag("qsgd:bits=8") != tag("qsgd:levels=100"));
  CHECK(tag("qsgd:bits=8") != tag("qsgd:bits=8,bucket=256"));
  CHECK(tag("qsgd:bits=8") != tag("qsgd:bits=8,norm=max"));
  CHECK(tag("qsgd:bits=8") != tag("identity"));
}

TEST_CASE("codec_names lists the registry") {
  std::vector<std::string> names = codec_names();
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<std::string>{"bf16", "dither", "fp16", "identity", "mcgq", "nuqsgd", "qsgd", "randk",
                                           "randsparse", "sign", "topk"});
  for (const std::string& name : names) CHECK(make_compressor(parse_codec_spec(name))->name() == name);
}

TEST_CASE("an unknown codec names the valid ones and the closest") {
  const std::string e = error_of("qsdg:bits=4");
  CHECK(contains(e, "unknown codec 'qsdg'"));
  CHECK(contains(e, "did you mean 'qsgd'?"));
  CHECK(contains(e, "valid codecs: identity, qsgd"));
  const std::string far = error_of("zstd");
  CHECK(contains(far, "unknown codec 'zstd'"));
  CHECK_FALSE(contains(far, "did you mean"));
  CHECK(contains(far, "valid codecs: identity, qsgd"));
}

TEST_CASE("an unknown parameter names the valid ones and the closest") {
  const std::string e = error_of("qsgd:levles=3");
  CHECK(contains(e, "codec 'qsgd': unknown parameter 'levles'"));
  CHECK(contains(e, "did you mean 'levels'?"));
  CHECK(contains(e, "valid parameters: levels, bits, bucket, norm"));
  CHECK(contains(error_of("identity:bits=8"),
                 "codec 'identity': unknown parameter 'bits'; it takes no parameters"));
}

TEST_CASE("a bad value says what was expected") {
  CHECK(contains(error_of("qsgd:levels=0"), "parameter 'levels' = '0': expected an integer in [1, 32767]"));
  CHECK(contains(error_of("qsgd:levels=40000"), "expected an integer in [1, 32767]"));
  CHECK(contains(error_of("qsgd:levels=abc"), "parameter 'levels' = 'abc': expected an integer"));
  CHECK(contains(error_of("qsgd:levels=12x"), "expected an integer"));
  CHECK(contains(error_of("qsgd:levels=-3"), "expected an integer"));
  CHECK(contains(error_of("qsgd:bits=1"), "parameter 'bits' = '1': expected an integer in [2, 16]"));
  CHECK(contains(error_of("qsgd:bits=17"), "expected an integer in [2, 16]"));
  CHECK(contains(error_of("qsgd:bucket=-1"), "parameter 'bucket' = '-1': expected an integer in [0, "));
  CHECK(contains(error_of("qsgd:norm=l1"), "parameter 'norm' = 'l1': expected one of l2, max"));
  const std::string mismatch = error_of("qsgd:levels=127,bits=4");
  CHECK(contains(mismatch, "levels=127 needs bits=8"));
  CHECK(contains(mismatch, "but bits=4 was given"));
  CHECK(error_of("qsgd:levels=100,bits=8").empty());  // 100 levels need 8 bits: consistent
  CHECK(contains(error_of("qsgd:levels=7,bits=8"), "levels=7 needs bits=4"));
}

TEST_CASE("levels and bits mean what the header says") {
  auto levels_of = [](const char* spec) {
    const std::string d = make_compressor(parse_codec_spec(spec))->describe();
    const auto at = d.find("levels=") + 7;
    return std::stoi(d.substr(at, d.find(',', at) - at));
  };
  CHECK(levels_of("qsgd:bits=8") == 127);
  CHECK(levels_of("qsgd:bits=4") == 7);
  CHECK(levels_of("qsgd:bits=2") == 1);
  CHECK(levels_of("qsgd:bits=16") == 32767);
  CHECK(levels_of("qsgd") == 127);
  CHECK(levels_of("qsgd:levels=5") == 5);
}
