#include "node/data/idx_reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/errors.hpp"

namespace qgossip {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr std::size_t kFashionSide = 28;
constexpr std::size_t kFashionClasses = 10;
// The largest payload read_idx accepts (16 GiB: 300x Fashion-MNIST's training images), and the
// first step of the buffer that grows as the payload arrives.
constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{1} << 34;
constexpr std::size_t kReadChunk = std::size_t{1} << 20;

struct gz_closer {
  void operator()(gzFile f) const { gzclose(f); }
};
using gz_ptr = std::unique_ptr<gzFile_s, gz_closer>;

struct idx_file {
  std::vector<std::size_t> dims;
  std::vector<std::uint8_t> data;
};

class gz_reader {
 public:
  gz_reader(const std::string& path, const std::string& missing_hint) : path_(path) {
    errno = 0;
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) {
      const int err = errno;
      std::string msg = "cannot open " + path + ": " + (err != 0 ? std::strerror(err) : "gzopen failed");
      if (err == ENOENT && !missing_hint.empty()) msg += " \u2014 " + missing_hint;
      throw config_error(msg);
    }
    gzbuffer(file_.get(), 1u << 20);  // fewer, larger reads: 60000 images load in well under 1 s
  }

  // Reads up to n bytes; returns how many arrived (fewer only at end of file).
  std::size_t read(std::uint8_t* out, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = gzread(file_.get(), out + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* what = gzerror(file_.get(), &code);
        fail(std::string("corrupt gzip stream (") + (what ? what : "read error") + ")");
      }
      if (got == 0) {
        // zlib reports a stream cut short as end of file plus a Z_BUF_ERROR.
        int code = 0;
        const char* what = gzerror(file_.get(), &code);
        if (code != Z_OK) fail(std::string("corrupt gzip stream (") + (what ? what : "") + ")");
        break;
      }
      done += static_cast<std::size_t>(got);
    }
    return done;
  }

  [[noreturn]] void fail(const std::string& what) const { throw config_error(path_ + ": " + what); }

 private:
  std::string path_;
  gz_ptr file_;
};

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

std::string decimal(unsigned __int128 v) {
  std::string out;
  do {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return out;
}

std::string hex_magic(std::uint32_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", m);
  return buf;
}

// Reads an IDX file: checks the magic, returns the dimensions and the payload (checked to be
// exactly the product of the dimensions long). `missing_hint` is appended when the file is absent.
idx_file read_idx(const std::string& path, std::uint32_t magic, const std::string& missing_hint) {
  gz_reader in(path, missing_hint);
  const std::size_t rank = magic & 0xff;
  std::uint8_t header[4 + 4 * 3];
  const std::size_t header_bytes = 4 + 4 * rank;
  const std::size_t got_header = in.read(header, header_bytes);
  if (got_header < 4) in.fail("truncated: " + std::to_string(got_header) + " bytes, no IDX header");
  const std::uint32_t found = big_endian_u32(header);
  if (found != magic) {
    in.fail("bad magic " + hex_magic(found) + ", expected " + hex_magic(magic) + " (" +
            (magic == kImagesMagic ? "u8 images" : "u8 labels") + ")");
  }
  if (got_header < header_bytes) {
    in.fail("truncated header: " + std::to_string(got_header) + " of " + std::to_string(header_bytes) +
            " bytes");
  }
  idx_file out;
  // The payload size the header claims: a product of up to three 32-bit values, exact in 128 bits.
  unsigned __int128 claimed = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    const std::uint32_t d = big_endian_u32(header + 4 + 4 * k);
    if (d == 0) in.fail("dimension " + std::to_string(k) + " is 0");
    out.dims.push_back(d);
    claimed *= d;
  }
  // What the header claims, in words: "60000 images of 28x28 (47040000 bytes)".
  auto claim = [&] {
    const std::string bytes = " (" + decimal(claimed) + " bytes)";
    if (rank == 3)
      return std::to_string(out.dims[0]) + " images of " + std::to_string(out.dims[1]) + "x" +
             std::to_string(out.dims[2]) + bytes;
    return std::to_string(out.dims[0]) + " labels" + bytes;
  };
  // Never allocate from the header alone: the buffer grows with the bytes that actually arrive (a
  // plain file's size would bound it, but a gzip stream's decompressed size is known only by
  // reading it), so a header claiming 2^40 bytes costs a chunk, not a failed 1 TiB allocation.
  // A stream that really goes on past kMaxIdxBytes is refused there.
  const std::size_t want = static_cast<std::size_t>(std::min<unsigned __int128>(claimed, kMaxIdxBytes + 1));
  std::size_t got = 0;
  out.data.reserve(std::min(want, kReadChunk));
  while (got < want) {
    const std::size_t chunk = std::min(want - got, std::max(kReadChunk, got));  // the buffer doubles
    out.data.resize(got + chunk);
    const std::size_t arrived = in.read(out.data.data() + got, chunk);
    got += arrived;
    if (arrived < chunk) break;
  }
  out.data.resize(got);
  if (got < claimed) {
    if (got > kMaxIdxBytes)
      in.fail("header claims " + claim() + ", more than this reader accepts (" +
              std::to_string(kMaxIdxBytes) + " bytes)");
    in.fail("header claims " + claim() + " but the file holds only " + std::to_string(got) + " bytes of data");
  }
  const std::size_t total = got;
  std::uint8_t extra[64];
  const std::size_t trailing = in.read(extra, sizeof extra);
  if (trailing != 0) {
    in.fail(std::string("trailing data after the ") + std::to_string(total) + " bytes the header promises (" +
            (trailing == sizeof extra ? "at least " : "") + std::to_string(trailing) + " more)");
  }
  return out;
}

idx_images to_images(idx_file f) {
  idx_images img;
  img.count = f.dims[0];
  img.rows = f.dims[1];
  img.cols = f.dims[2];
  img.pixels = std::move(f.data);
  return img;
}

}  // namespace

idx_images read_idx_images(const std::string& path) { return to_images(read_idx(path, kImagesMagic, "")); }

std::vector<std::uint8_t> read_idx_labels(const std::string& path) {
  return read_idx(path, kLabelsMagic, "").data;
}

bool is_packaged_fashion_mnist(const std::string& dir) {
  return std::filesystem::path(dir).lexically_normal() == std::filesystem::path(kFashionMnistDir);
}

std::array<std::string, 2> fashion_mnist_files(split which) {
  const std::string prefix = which == split::train ? "train" : "t10k";
  return {prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz"};
}

dataset load_fashion_mnist(const std::string& dir, split which) {
  // The Debian package is the answer only for the folder it installs; another data.dir is the user's.
  const std::string hint = is_packaged_fashion_mnist(dir)
                               ? "install the Debian package dataset-fashion-mnist (scripts/setup.sh does)"
                               : "data.dir is " + dir + " (read from the folder qgossip runs in when relative): "
                                 "it must hold {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz";
  const auto [images_name, labels_name] = fashion_mnist_files(which);
  const std::string images_path = dir + "/" + images_name;
  const std::string labels_path = dir + "/" + labels_name;
  const idx_images images = to_images(read_idx(images_path, kImagesMagic, hint));
  std::vector<std::uint8_t> labels = read_idx(labels_path, kLabelsMagic, hint).data;

  if (images.rows != kFashionSide || images.cols != kFashionSide) {
    throw config_error(images_path + ": images are " + std::to_string(images.rows) + "x" +
                       std::to_string(images.cols) + ", Fashion-MNIST's are 28x28");
  }
  if (labels.size() != images.count) {
    throw config_error(labels_path + ": " + std::to_string(labels.size()) + " labels but " + images_path +
                       " has " + std::to_string(images.count) + " images");
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= kFashionClasses) {
      throw config_error(labels_path + ": label " + std::to_string(labels[i]) + " of example " +
                         std::to_string(i) + " is not in 0..9");
    }
  }

  dataset d;
  d.size = images.count;
  d.dim = kFashionSide * kFashionSide;
  d.shape = {1, kFashionSide, kFashionSide};
  d.classes = kFashionClasses;
  d.labels = std::move(labels);
  d.features.resize(images.pixels.size());
  for (std::size_t i = 0; i < images.pixels.size(); ++i) {
    d.features[i] = static_cast<float>(images.pixels[i]) / 255.0f;  // exactly 0 and 1 at the ends
  }
  return d;
}

}  // namespace qgossip
