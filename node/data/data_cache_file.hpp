#pragma once
// The data cache file: a whole decoded data set (node/data/whole_view.hpp) in one file that every
// node maps read-only, instead of each decoding the sources (docs/config.md, data.cache).
//
// Layout (little-endian, native float32/float64):
//   header (cache_header, 128 bytes) | key text | pad to 64 | train features (float32) | pad |
//   test features | pad | stats mean (float64 × stat_channels) | stddev | CRC32C of each train row's
//   features, then of each test row's (u32) | train labels (u8) | test labels (u8)
// The header carries the format version, the sizes (which fix the file's exact length), the key text's
// length, a CRC32C of the sections from the mean to the end, and one of the header itself with the key
// text: all checked when the file is mapped. The features are checked row by row as a node copies
// them (whole_view's row CRCs): a node reads 1/n of the training set, so it checksums only that.
// The key text (format version, data set, directory, each source file's size and mtime) must equal the
// caller's exactly: a changed source file makes the cache stale.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include "node/data/whole_view.hpp"

namespace qgossip {

inline constexpr std::uint32_t kDataCacheVersion = 2;

// Which file (device and inode): a rebuilt cache file is a new inode under the same name.
struct cache_file_id {
  std::uint64_t device = 0, inode = 0;
  bool operator==(const cache_file_id&) const = default;
};

// A cache file mapped read-only; view() points into the mapping, valid while this lives.
class mapped_data_cache {
 public:
  mapped_data_cache(void* base, std::size_t bytes, cache_file_id id, whole_view view);
  ~mapped_data_cache();
  mapped_data_cache(const mapped_data_cache&) = delete;
  mapped_data_cache& operator=(const mapped_data_cache&) = delete;
  [[nodiscard]] const whole_view& view() const { return view_; }
  [[nodiscard]] cache_file_id id() const { return id_; }

 private:
  void* base_;
  std::size_t bytes_;
  cache_file_id id_;
  whole_view view_;
};

// Why a cache file could not be used (one line, for the log): "no cache file yet", "truncated: ...",
// "checksum mismatch ...", "made from other source files", ...
struct cache_rejected {
  std::string reason;
};

// Maps the cache file at path and checks it: header, version, key text equal to `key`, exact size,
// the header and metadata checksums, labels < classes (the features: row by row, when copied). Never throws for a bad or missing file: the reason comes back.
[[nodiscard]] std::variant<std::unique_ptr<mapped_data_cache>, cache_rejected> map_data_cache(
    const std::string& path, const std::string& key);

// Writes v under key to path atomically: into path + ".tmp", fsync, rename over path, fsync of the
// directory (a crash leaves the old file or none, never half a file). Returns "" on success, else
// what failed ("PATH: cannot write: No space left on device"); the temporary file is then removed.
[[nodiscard]] std::string write_data_cache(const std::string& path, const std::string& key, const whole_view& v);

}  // namespace qgossip
