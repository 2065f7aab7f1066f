// `qgossip codec` as a user meets it: the JSON report, the payload written and read back, the
// errors, and a --help that lists every registered codec with every parameter its factory accepts.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "core/errors.hpp"
#include "tests/integration/process.hpp"

using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The parameters make_compressor accepts for `name`, from the error that an unknown one produces
// ("...; valid parameters: a, b, c" or "...; it takes no parameters", docs/codecs.md).
std::vector<std::string> valid_parameters(const std::string& name) {
  try {
    (void)qgossip::make_compressor(qgossip::parse_codec_spec(name + ":qgossip_no_such_parameter=1"));
  } catch (const qgossip::config_error& e) {
    const std::string what = e.what();
    const std::string marker = "valid parameters: ";
    const std::size_t at = what.find(marker);
    if (at == std::string::npos) return {};
    std::vector<std::string> params;
    std::string rest = what.substr(at + marker.size());
    while (!rest.empty()) {
      const std::size_t comma = rest.find(", ");
      params.push_back(rest.substr(0, comma));
      rest = comma == std::string::npos ? "" : rest.substr(comma + 2);
    }
    return params;
  }
  FAIL("codec " << name << " accepted an unknown parameter");
  return {};
}

}  // namespace

TEST_CASE("codec --json prints one valid JSON object with the required keys") {
  temp_dir tmp;
  process_result r = run_qgossip({"codec", "--codec", "qsgd", "--gen", "gaussian:n=1000", "--json"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const fs::path out = tmp.path / "report.json";
  write_file(out, r.output);
  // Python's json module is the judge of validity (python3 is a dependency of the plot script).
  const std::string check =
      "/usr/bin/python3 -c \"import json,sys; d=json.load(open(sys.argv[1])); "
      "keys=['codec','n','bits_per_value','compression_ratio','entropy_bits_per_value','rel_mse','rel_bias',"
      "'nnz_fraction','encode_gbps','decode_gbps','unbiased','relative_error_bound']; "
      "missing=[k for k in keys if k not in d]; assert not missing, missing; "
      "assert d['codec']=='qsgd:levels=127,bucket=512,norm=l2', d['codec']; assert d['n']==1000; "
      "assert abs(d['bits_per_value'] - (8*1000+32*2)/1000) < 1e-9; assert d['unbiased'] is True; "
      "assert 0 < d['rel_mse'] <= d['relative_error_bound']\" '" +
      out.string() + "'";
  CHECK(std::system(check.c_str()) == 0);
}

TEST_CASE("codec prints a table by default, and --encode / --decode round-trip the real payload") {
  temp_dir tmp;
  const fs::path payload = tmp.path / "p.bin";
  const fs::path decoded = tmp.path / "d.f32";
  process_result r = run_qgossip({"codec", "--codec", "qsgd:bits=4,bucket=64", "--gen", "laplace:n=1000",
                                  "--trials", "3", "--seed", "5", "--encode", payload.string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "codec                   qsgd:levels=7,bucket=64,norm=l2\n"));
  CHECK(contains(r.output, "input                   laplace:n=1000, seed 5\n"));
  CHECK(contains(r.output, "trials                  3\n"));
  // 16 scales of 4 bytes, 1000 codes of 4 bits.
  CHECK(fs::file_size(payload) == 16 * 4 + 500);

  r = run_qgossip({"codec", "--codec", "qsgd:bits=4,bucket=64", "--n", "1000", "--seed", "5", "--decode",
                   payload.string(), "--out", decoded.string()});
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "decoded 1000 values (564 payload bytes, qsgd:levels=7,bucket=64,norm=l2)"));
  CHECK(fs::file_size(decoded) == 4000);

  // The same payload read as 2000 values, or damaged, is the decoder's error and exit 1.
  r = run_qgossip({"codec", "--codec", "qsgd:bits=4,bucket=64", "--n", "2000", "--decode", payload.string(),
                   "--out", decoded.string()});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "does not decode as 2000 values: corrupt:"));
  std::string bytes = read_all(payload);
  bytes[3] = '\xff';  // the first scale becomes a NaN
  write_file(payload, bytes);
  r = run_qgossip({"codec", "--codec", "qsgd:bits=4,bucket=64", "--gen", "laplace:n=1000", "--decode",
                   payload.string(), "--out", decoded.string()});
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "corrupt"));
}

TEST_CASE("codec: bad input is exit 2 with a message") {
  process_result r = run_qgossip({"codec", "--codec", "qsdg", "--gen", "gaussian:n=10"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "unknown codec 'qsdg' (did you mean 'qsgd'?)"));
  r = run_qgossip({"codec", "--codec", "qsgd"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "give the vector with --input FILE or --gen KIND:n=N"));
  r = run_qgossip({"codec", "--codec", "qsgd", "--gen", "normal:n=10"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "unknown kind 'normal'"));
  r = run_qgossip({"codec", "--codec", "qsgd", "--gen", "gaussian:n=10", "--layers", "3,3"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "the sizes add up to 6"));
  r = run_qgossip({"codec", "--codec", "qsgd", "--decode", "x.bin"});
  CHECK(r.exit_code == 2);  // --decode needs --out (CLI11)
  r = run_qgossip(
      {"codec", "--codec", "qsgd", "--decode", "/nonexistent/x.bin", "--out", "/tmp/x", "--n", "5"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "/nonexistent/x.bin: cannot open"));
}

TEST_CASE("codec --help documents every option and every registered codec with all its parameters") {
  process_result r = run_qgossip({"codec", "--help"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* option : {"--codec", "--input", "--gen", "--trials", "--seed", "--json", "--encode",
                             "--decode", "--out", "--n", "--layers", "--data"})
    CHECK(contains(r.output, option));
  const std::size_t codecs_at = r.output.find("Codecs (");
  REQUIRE(codecs_at != std::string::npos);
  const std::string help = r.output.substr(codecs_at);
  for (const std::string& name : qgossip::codec_names()) {
    CAPTURE(name);
    // A codec's block runs from its "  name  " line to the next line indented by exactly two spaces.
    const std::size_t start = help.find("\n  " + name + " ");
    REQUIRE(start != std::string::npos);
    std::size_t end = start + 1;
    do {
      end = help.find("\n", end + 1);
    } while (end != std::string::npos && help.compare(end, 4, "\n   ") == 0);
    const std::string block = help.substr(start, end - start);
    CHECK(!contains(block, "see docs/codecs.md"));  // a codec with no help entry
    for (const std::string& p : valid_parameters(name)) {
      CAPTURE(p);
      CHECK(contains(block, p + "="));
    }
  }
}
