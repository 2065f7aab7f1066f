// The IDX reader never allocates what a header claims before the bytes are there: a header claiming
// 2^40 bytes (or 2^96) is a message naming the file, what it claims and what it holds, not a
// std::bad_alloc from a 1 TiB buffer. Plain and gzip files alike (gzip's decompressed size is only
// known by reading).
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "node/data/idx_reader.hpp"
#include "tests/node/data/data_files.hpp"

using namespace qgossip;
using namespace qgossip::testing;

namespace {

std::string header(std::uint32_t magic, std::vector<std::uint32_t> dims, std::size_t payload) {
  std::string b;
  auto put = [&](std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) b += static_cast<char>(v >> shift);
  };
  put(magic);
  for (auto d : dims) put(d);
  return b + std::string(payload, '\x05');
}

std::string gz(const temp_dir& dir, const std::string& name, const std::string& content) {
  const std::string p = dir.file(name);
  gzFile f = gzopen(p.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, content.data(), static_cast<unsigned>(content.size())) == int(content.size()));
  REQUIRE(gzclose(f) == Z_OK);
  return p;
}

// Runs f with the address space capped at 2 GiB (restored after): an allocation from a header's
// numbers would fail here with std::bad_alloc, not with the reader's message.
// (Not under AddressSanitizer, whose shadow mappings already exceed such a cap.)
template <class F>
std::string error_with_capped_memory(F f) {
#if defined(__SANITIZE_ADDRESS__)
  return error_of(f);
#else
  rlimit before{};
  REQUIRE(getrlimit(RLIMIT_AS, &before) == 0);
  rlimit capped = before;
  capped.rlim_cur = std::min<rlim_t>(before.rlim_max, rlim_t{2} << 30);
  REQUIRE(setrlimit(RLIMIT_AS, &capped) == 0);
  std::string e;
  try {
    e = error_of(f);
  } catch (const std::bad_alloc&) {
    e = "std::bad_alloc";
  }
  setrlimit(RLIMIT_AS, &before);
  return e;
#endif
}

}  // namespace

TEST_CASE("a header claiming 2^40 bytes is checked against the bytes the file holds, before allocating") {
  temp_dir dir("idx_header");
  // 2^20 images of 1024x1024 = 2^40 bytes claimed; 100 bytes present.
  const std::string claims = header(0x803, {1u << 20, 1024, 1024}, 100);
  for (const std::string& p : {dir.write("huge.idx", claims), gz(dir, "huge.gz", claims)}) {
    CAPTURE(p);
    const std::string e = error_with_capped_memory([&] { (void)read_idx_images(p); });
    CHECK(starts_with(
        e, p + ": header claims 1048576 images of 1024x1024 (1099511627776 bytes) but the file holds "
               "only 100 bytes of data"));
  }
  // Three maximal dimensions: 2^96 bytes, exact (no 64-bit wrap to a small number).
  const std::string most = dir.write("most.idx", header(0x803, {0xffffffffu, 0xffffffffu, 0xffffffffu}, 7));
  CHECK(contains(
      error_with_capped_memory([&] { (void)read_idx_images(most); }),
      "header claims 4294967295 images of 4294967295x4294967295 (79228162458924105385300197375 bytes) "
      "but the file holds only 7 bytes of data"));
  // Labels likewise.
  const std::string labels = gz(dir, "labels.gz", header(0x801, {4000000000u}, 3));
  CHECK(contains(
      error_with_capped_memory([&] { (void)read_idx_labels(labels); }),
      labels +
          ": header claims 4000000000 labels (4000000000 bytes) but the file holds only 3 bytes of data"));
}

TEST_CASE("a truncated Fashion-MNIST file is named with what it claims, through load_fashion_mnist") {
  temp_dir dir("idx_fashion");
  gz(dir, "train-images-idx3-ubyte.gz", header(0x803, {60000, 28, 28}, 28 * 28 * 10));
  gz(dir, "train-labels-idx1-ubyte.gz", header(0x801, {60000}, 60000));
  const std::string e = error_with_capped_memory([&] { (void)load_fashion_mnist(dir.str()); });
  CHECK(
      e ==
      dir.file("train-images-idx3-ubyte.gz") +
          ": header claims 60000 images of 28x28 (47040000 bytes) but the file holds only 7840 bytes of data");
}

TEST_CASE("files of the claimed size still read whole, across the growing buffer's steps") {
  temp_dir dir("idx_whole");
  // 3 MiB + 5 bytes: more than one step of the buffer (1 MiB, then doubling).
  const std::uint32_t count = 3 * 1024 + 1;
  const std::string p = gz(dir, "img.gz", header(0x803, {count, 32, 32}, std::size_t{count} * 1024));
  const idx_images img = read_idx_images(p);
  CHECK(img.count == count);
  CHECK(img.pixels.size() == std::size_t{count} * 1024);
  CHECK(img.pixels.back() == 5);
}
