#include "node/data/data_cache_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "core/crc32c.hpp"

namespace qgossip {
namespace {

constexpr char kMagic[8] = {'Q', 'G', 'D', 'C', 'A', 'C', 'H', 'E'};
constexpr std::size_t kAlign = 64;
// Refused as absurd when read (a corrupt header must not overflow the size arithmetic).
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 40;

struct cache_header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t key_bytes;
  std::uint64_t train_size, test_size, dim, classes, channels, height, width, stat_channels;
  std::uint64_t payload_bytes;  // from the train features to the end of the file
  std::uint32_t meta_crc;       // CRC32C from the mean to the end (statistics, row CRCs, labels)
  std::uint32_t header_crc;  // CRC32C of the header (with this field 0), continued over the key text
  char reserved[32];
};
static_assert(sizeof(cache_header) == 128);

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Byte offsets of the sections; end is the file's size.
struct cache_layout {
  std::size_t train = 0, test = 0, mean = 0, stddev = 0, row_crc = 0, train_labels = 0, test_labels = 0, end = 0;
};

// The layout the header's sizes imply; nullopt when they are inconsistent or absurd.
std::optional<cache_layout> layout_of(const cache_header& h) {
  const bool counts_sane = h.train_size > 0 && h.test_size > 0 && h.dim > 0 && h.train_size < kMaxCount &&
                           h.test_size < kMaxCount && h.dim < kMaxCount && h.key_bytes < (1u << 20) &&
                           h.classes >= 1 && h.classes <= 256 && h.stat_channels >= 1 && h.stat_channels <= 4;
  if (!counts_sane) return std::nullopt;
  const bool image = h.channels > 0 && h.height > 0 && h.width > 0;
  if (image && (h.channels * h.height * h.width != h.dim || h.stat_channels != h.channels)) return std::nullopt;
  if (!image && (h.channels != 0 || h.height != 0 || h.width != 0 || h.stat_channels != 1)) return std::nullopt;
  // (train + test) · dim · 4 < 2^40 · 2^40 · 8 would overflow: bound the products first.
  if (h.train_size * h.dim >= kMaxCount || h.test_size * h.dim >= kMaxCount) return std::nullopt;
  cache_layout l;
  l.train = align_up(sizeof(cache_header) + h.key_bytes);
  l.test = align_up(l.train + h.train_size * h.dim * sizeof(float));
  l.mean = align_up(l.test + h.test_size * h.dim * sizeof(float));
  l.stddev = l.mean + h.stat_channels * sizeof(double);
  l.row_crc = l.stddev + h.stat_channels * sizeof(double);
  l.train_labels = l.row_crc + (h.train_size + h.test_size) * sizeof(std::uint32_t);
  l.test_labels = l.train_labels + h.train_size;
  l.end = l.test_labels + h.test_size;
  return l;
}

std::uint32_t header_crc(cache_header h, std::span<const std::byte> key) {
  h.header_crc = 0;
  return crc32c(key, crc32c(std::as_bytes(std::span(&h, 1))));
}

std::string errno_text(int e) { return std::strerror(e); }

// Closes a descriptor on scope exit.
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

// Checks the mapped file; "" when it is good.
std::string check(const std::byte* base, std::size_t size, const std::string& key, cache_header& h,
                  cache_layout& l) {
  if (size < sizeof(cache_header))
    return "truncated: " + std::to_string(size) + " bytes, shorter than the " +
           std::to_string(sizeof(cache_header)) + "-byte header";
  std::memcpy(&h, base, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return "not a qgossip data cache file (bad magic)";
  if (h.version != kDataCacheVersion)
    return "format version " + std::to_string(h.version) + ", this qgossip writes " +
           std::to_string(kDataCacheVersion);
  if (h.key_bytes > size - sizeof(cache_header)) return "truncated inside its key";
  const std::span<const std::byte> stored_key(base + sizeof(cache_header), h.key_bytes);
  if (header_crc(h, stored_key) != h.header_crc) return "header checksum mismatch";
  if (std::string_view(reinterpret_cast<const char*>(stored_key.data()), stored_key.size()) != key)
    return "made from other source files (a size, mtime, directory or the format changed)";
  const auto layout = layout_of(h);
  if (!layout || h.payload_bytes != layout->end - layout->train) return "inconsistent sizes in the header";
  l = *layout;
  if (size != l.end)
    return (size < l.end ? "truncated: " : "too long: ") + std::to_string(size) + " bytes, the header says " +
           std::to_string(l.end);
  if (crc32c(std::span(base + l.mean, l.end - l.mean)) != h.meta_crc)
    return "checksum mismatch in the statistics, row checksums or labels";
  const auto* labels = reinterpret_cast<const std::uint8_t*>(base + l.train_labels);
  if (std::any_of(labels, labels + h.train_size + h.test_size, [&](std::uint8_t y) { return y >= h.classes; }))
    return "a label >= its class count";
  return "";
}

// Writes everything it is given to fd, feeding the bytes marked `checked` to a running CRC32C.
class cache_writer {
 public:
  explicit cache_writer(int fd) : fd_(fd) {}
  bool put(std::span<const std::byte> bytes, bool checked) {
    if (checked) crc_ = crc32c(bytes, crc_);
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes = bytes.subspan(static_cast<std::size_t>(n));
      offset_ += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Zero bytes up to `offset`.
  bool pad_to(std::size_t offset) {
    static constexpr std::byte zeros[kAlign] = {};
    return offset >= offset_ && put(std::span(zeros, offset - offset_), false);
  }
  template <class T>
  bool put_values(std::span<const T> values, bool checked) {
    return put(std::as_bytes(values), checked);
  }
  [[nodiscard]] std::uint32_t crc() const { return crc_; }

 private:
  int fd_;
  std::size_t offset_ = 0;
  std::uint32_t crc_ = 0;
};

// The CRC32C of each row's features (rows of dim floats).
std::vector<std::uint32_t> row_crcs(std::span<const float> features, std::size_t dim, std::vector<std::uint32_t> out) {
  for (std::size_t i = 0; i + dim <= features.size(); i += dim) out.push_back(crc32c(std::as_bytes(features.subspan(i, dim))));
  return out;
}

bool write_sections(int fd, const cache_layout& l, const std::string& key, const whole_view& v,
                    std::uint32_t& meta_crc) {
  const std::vector<std::uint32_t> crcs = row_crcs(v.test_features, v.dim, row_crcs(v.train_features, v.dim, {}));
  cache_writer w(fd);
  const cache_header placeholder{};
  const bool ok = w.put(std::as_bytes(std::span(&placeholder, 1)), false) &&
                  w.put(std::as_bytes(std::span(key.data(), key.size())), false) && w.pad_to(l.train) &&
                  w.put_values(v.train_features, false) && w.pad_to(l.test) && w.put_values(v.test_features, false) &&
                  w.pad_to(l.mean) && w.put_values(std::span<const double>(v.stats.mean), true) &&
                  w.put_values(std::span<const double>(v.stats.stddev), true) &&
                  w.put_values(std::span<const std::uint32_t>(crcs), true) && w.put_values(v.train_labels, true) &&
                  w.put_values(v.test_labels, true);
  meta_crc = w.crc();
  return ok;
}

}  // namespace

mapped_data_cache::mapped_data_cache(void* base, std::size_t bytes, cache_file_id id, whole_view view)
    : base_(base), bytes_(bytes), id_(id), view_(std::move(view)) {}

mapped_data_cache::~mapped_data_cache() { ::munmap(base_, bytes_); }

std::variant<std::unique_ptr<mapped_data_cache>, cache_rejected> map_data_cache(const std::string& path,
                                                                                 const std::string& key) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return cache_rejected{errno == ENOENT ? "no cache file yet" : "cannot open: " + errno_text(errno)};
  const fd_guard guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return cache_rejected{"cannot stat: " + errno_text(errno)};
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return cache_rejected{"truncated: 0 bytes"};
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return cache_rejected{"cannot map: " + errno_text(errno)};
  const auto* bytes = static_cast<const std::byte*>(base);
  cache_header h{};
  cache_layout l;
  if (std::string why = check(bytes, size, key, h, l); !why.empty()) {
    ::munmap(base, size);
    return cache_rejected{why};
  }
  whole_view v;
  v.train_size = h.train_size;
  v.test_size = h.test_size;
  v.dim = h.dim;
  v.classes = h.classes;
  v.shape = {h.channels, h.height, h.width};
  v.train_features = {reinterpret_cast<const float*>(bytes + l.train), h.train_size * h.dim};
  v.test_features = {reinterpret_cast<const float*>(bytes + l.test), h.test_size * h.dim};
  v.train_labels = {reinterpret_cast<const std::uint8_t*>(bytes + l.train_labels), h.train_size};
  v.test_labels = {reinterpret_cast<const std::uint8_t*>(bytes + l.test_labels), h.test_size};
  const auto* crcs = reinterpret_cast<const std::uint32_t*>(bytes + l.row_crc);
  v.train_row_crc = {crcs, h.train_size};
  v.test_row_crc = {crcs + h.train_size, h.test_size};
  v.stats.mean.resize(h.stat_channels);
  v.stats.stddev.resize(h.stat_channels);
  std::memcpy(v.stats.mean.data(), bytes + l.mean, h.stat_channels * sizeof(double));
  std::memcpy(v.stats.stddev.data(), bytes + l.stddev, h.stat_channels * sizeof(double));
  const cache_file_id id{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  return std::make_unique<mapped_data_cache>(base, size, id, std::move(v));
}

std::string write_data_cache(const std::string& path, const std::string& key, const whole_view& v) {
  cache_header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kDataCacheVersion;
  h.key_bytes = static_cast<std::uint32_t>(key.size());
  h.train_size = v.train_size;
  h.test_size = v.test_size;
  h.dim = v.dim;
  h.classes = v.classes;
  h.channels = v.shape.channels;
  h.height = v.shape.height;
  h.width = v.shape.width;
  h.stat_channels = v.stats.mean.size();
  const auto l = layout_of(h);
  if (!l || v.stats.stddev.size() != h.stat_channels || v.train_features.size() != v.train_size * v.dim ||
      v.test_features.size() != v.test_size * v.dim || v.train_labels.size() != v.train_size ||
      v.test_labels.size() != v.test_size)
    return path + ": the data set's sizes do not fit the cache format";
  h.payload_bytes = l->end - l->train;

  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return temporary + ": cannot create: " + errno_text(errno);
  auto fail = [&](const std::string& what) {
    const std::string message = temporary + ": " + what + ": " + errno_text(errno);
    ::close(fd);
    ::unlink(temporary.c_str());
    return message;
  };
  if (!write_sections(fd, *l, key, v, h.meta_crc)) return fail("cannot write");
  h.header_crc = header_crc(h, std::as_bytes(std::span(key.data(), key.size())));
  if (::pwrite(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) return fail("cannot write the header");
  if (::fsync(fd) != 0) return fail("fsync failed");
  if (::close(fd) != 0) {
    ::unlink(temporary.c_str());
    return temporary + ": close failed: " + errno_text(errno);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string message = path + ": cannot rename " + temporary + " to it: " + errno_text(errno);
    ::unlink(temporary.c_str());
    return message;
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // the rename is durable once the directory is; a failure here loses nothing written
    ::fsync(dfd);
    ::close(dfd);
  }
  return "";
}

}  // namespace qgossip
