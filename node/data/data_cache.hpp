#pragma once
// The data cache (docs/config.md, data.cache): the first node to start decodes the data set once,
// measures the whole training set's channel statistics and writes both to one file
// (node/data/data_cache_file.hpp); every node, then and later, maps that file read-only and copies
// only its shard and the test set out of it.
//   - Where: spec.cache_dir, else $XDG_CACHE_HOME/qgossip, else $HOME/.cache/qgossip; one file per
//     data set and directory, <dataset>-<hash of the directory>.qgdata.
//   - Key: the format version, the data set, the directory, and each source file's name, size and
//     mtime; a file made from other sources is rebuilt (the reason is logged).
//   - Concurrency: nodes starting together take an flock on <file>.lock; one builds while the
//     others wait and then map what it wrote. Writes go to a temporary file, fsync, rename.
//   - Failure: a corrupt or truncated file is rebuilt with the reason logged; a cache directory that
//     cannot be created or written falls back to decoding in memory with a one-line warning.
// Synthetic data are never cached (generating them is cheaper than reading a file).
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "node/data/data_cache_file.hpp"
#include "node/data/data_spec.hpp"
#include "node/data/dataset.hpp"
#include "node/data/whole_view.hpp"

namespace qgossip {

// One line for the node's log (the reason a cache is rebuilt, or a warning).
using data_log = std::function<void(const std::string&)>;

// The directory the cache goes in: spec.cache_dir, else $XDG_CACHE_HOME/qgossip (when set and
// absolute), else $HOME/.cache/qgossip; "" when none of them is known.
[[nodiscard]] std::string data_cache_dir(const data_spec& spec);

// The key text of spec's source files; nullopt when one cannot be stat'ed (the decoder then says
// what is missing) or spec.dataset has no files (synthetic).
[[nodiscard]] std::optional<std::string> data_cache_key(const data_spec& spec);

// The cache file for spec in directory dir.
[[nodiscard]] std::string data_cache_path(const std::string& dir, const data_spec& spec);

// The whole data set, mapped from the cache or decoded in this process.
class whole_source {
 public:
  explicit whole_source(std::unique_ptr<mapped_data_cache> mapped) : mapped_(std::move(mapped)) {}
  whole_source(dataset train, dataset test, channel_stats stats)
      : train_(std::move(train)), test_(std::move(test)), stats_(std::move(stats)) {}
  [[nodiscard]] bool mapped() const { return mapped_ != nullptr; }
  // The mapped file; all zero for data decoded here.
  [[nodiscard]] cache_file_id file() const { return mapped_ ? mapped_->id() : cache_file_id{}; }
  // Spans into this object: valid while it lives.
  [[nodiscard]] whole_view view() const { return mapped_ ? mapped_->view() : view_of(train_, test_, stats_); }

 private:
  std::unique_ptr<mapped_data_cache> mapped_;
  dataset train_, test_;
  channel_stats stats_;
};

// The decoded whole training and test sets of spec (unstandardized), as load_shard reads them.
using whole_decoder = std::function<std::pair<dataset, dataset>()>;

// A mapped cache file found damaged after it was mapped (a row failed its checksum), and why.
struct cache_distrust {
  cache_file_id file;
  std::string reason;
};

// Through the cache as described above (spec.cache must be on and spec.dataset not synthetic):
// maps a valid cache file, else builds it under the lock with decode(). With `distrust`, that file is
// rebuilt (for that reason) unless another node has replaced it meanwhile. When the cache cannot be
// used at all, the data are decoded here, with statistics only when spec.standardize.
[[nodiscard]] whole_source load_whole_cached(const data_spec& spec, const whole_decoder& decode, const data_log& log,
                                             const std::optional<cache_distrust>& distrust = std::nullopt);

}  // namespace qgossip
