#include "node/data/data_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "core/hash.hpp"

namespace qgossip {
namespace {

namespace fs = std::filesystem;

// The files spec.dataset is decoded from, relative to spec.dir; empty for synthetic data.
std::vector<std::string> source_files(const data_spec& spec) {
  if (spec.dataset == dataset_kind::fashion_mnist)
    return {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
            "t10k-labels-idx1-ubyte.gz"};
  if (spec.dataset == dataset_kind::cifar10) {
    std::vector<std::string> files;
    for (int b = 1; b <= 5; ++b) files.push_back("data_batch_" + std::to_string(b) + ".bin");
    files.emplace_back("test_batch.bin");
    return files;
  }
  if (spec.dataset == dataset_kind::npy) return {"train_images.npy", "train_labels.npy", "test_images.npy", "test_labels.npy"};
  return {};
}

std::string absolute_dir(const std::string& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  return ec ? dir : p.string();
}

// Holds an exclusive flock on a lock file for its lifetime.
class file_lock {
 public:
  // Opens (creating) path and waits for the lock; error() says why when it could not.
  explicit file_lock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      error_ = path + ": cannot open: " + std::strerror(errno);
      return;
    }
    int rc = 0;
    while ((rc = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc != 0) error_ = path + ": cannot lock: " + std::strerror(errno);
  }
  ~file_lock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

whole_source decoded(const whole_decoder& decode, bool with_stats) {
  auto [train, test] = decode();
  channel_stats stats = with_stats ? measure_channels(train) : channel_stats{};
  return whole_source(std::move(train), std::move(test), std::move(stats));
}

void warn_uncached(const data_log& log, const std::string& why) {
  log("warning: data cache not used (" + why + "); decoding the data in memory");
}

}  // namespace

std::string data_cache_dir(const data_spec& spec) {
  if (!spec.cache_dir.empty()) return spec.cache_dir;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/qgossip";
  const char* home = std::getenv("HOME");
  if (home && home[0] != '\0') return std::string(home) + "/.cache/qgossip";
  return "";
}

std::optional<std::string> data_cache_key(const data_spec& spec) {
  const std::vector<std::string> files = source_files(spec);
  if (files.empty()) return std::nullopt;
  std::string key = "qgossip data cache format " + std::to_string(kDataCacheVersion) + "\ndataset " +
                    std::string(name_of(spec.dataset)) + "\ndir " + absolute_dir(spec.dir) + "\n";
  for (const std::string& name : files) {
    struct stat st {};
    if (::stat((spec.dir + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    key += "file " + name + " size " + std::to_string(st.st_size) + " mtime " + std::to_string(st.st_mtim.tv_sec) +
           "." + std::to_string(st.st_mtim.tv_nsec) + "\n";
  }
  return key;
}

std::string data_cache_path(const std::string& dir, const data_spec& spec) {
  const std::string hash = hex64(hash64(absolute_dir(spec.dir)));  // "0x" + 16 hex digits
  return dir + "/" + std::string(name_of(spec.dataset)) + "-" + hash.substr(2) + ".qgdata";
}

whole_source load_whole_cached(const data_spec& spec, const whole_decoder& decode, const data_log& log,
                               const std::optional<cache_distrust>& distrust) {
  const std::optional<std::string> key = data_cache_key(spec);
  if (!key) return decoded(decode, spec.standardize);  // a missing source file: the decoder names it
  const std::string dir = data_cache_dir(spec);
  if (dir.empty()) {
    warn_uncached(log, "neither data.cache names a directory nor $XDG_CACHE_HOME or $HOME is set");
    return decoded(decode, spec.standardize);
  }
  const std::string path = data_cache_path(dir, spec);
  // Most starts find a good file: map it without taking the lock (files are only ever renamed in).
  if (!distrust) {
    auto first = map_data_cache(path, *key);
    if (auto* m = std::get_if<0>(&first)) return whole_source(std::move(*m));
  }

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    warn_uncached(log, dir + ": cannot create: " + ec.message());
    return decoded(decode, spec.standardize);
  }
  const file_lock lock(path + ".lock");
  if (!lock.error().empty()) {
    warn_uncached(log, lock.error());
    return decoded(decode, spec.standardize);
  }
  // Another node may have built it while this one waited for the lock.
  auto second = map_data_cache(path, *key);
  std::string reason;
  if (auto* m = std::get_if<0>(&second)) {
    if (!distrust || (*m)->id() != distrust->file) return whole_source(std::move(*m));
    reason = distrust->reason;
  } else {
    reason = std::get<1>(second).reason;
  }
  log("data cache: building " + path + " (" + reason + ")");
  whole_source built = decoded(decode, true);
  if (std::string error = write_data_cache(path, *key, built.view()); !error.empty()) warn_uncached(log, error);
  return built;
}

}  // namespace qgossip
