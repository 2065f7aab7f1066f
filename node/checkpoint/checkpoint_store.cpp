#include "node/checkpoint/checkpoint_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <system_error>

#include "core/errors.hpp"
#include "core/hash.hpp"

namespace qgossip {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kComplete = ".bin";
constexpr std::string_view kTemporary = ".tmp";

status io_error(const fs::path& path, const std::string& what, int err) {
  return status::error(errc::io, path.string() + ": " + what + ": " + std::strerror(err));
}

// Closes fd on every path out of a function.
class fd_closer {
 public:
  explicit fd_closer(int fd) : fd_(fd) {}
  ~fd_closer() {
    if (fd_ >= 0) ::close(fd_);
  }
  fd_closer(const fd_closer&) = delete;
  fd_closer& operator=(const fd_closer&) = delete;
  // Closes now and reports close's own error (where a delayed write error can surface).
  int close_now() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

status write_synced(const fs::path& path, std::span<const std::byte> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path, "cannot create", errno);
  fd_closer closer(fd);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error(path, "write failed after " + std::to_string(done) + " bytes", errno);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return io_error(path, "fsync failed", errno);
  if (closer.close_now() != 0) return io_error(path, "close failed", errno);
  return status::ok();
}

status sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error(dir, "cannot open the directory to fsync it", errno);
  fd_closer closer(fd);
  if (::fsync(fd) != 0) return io_error(dir, "fsync of the directory failed", errno);
  return status::ok();
}

struct dir_entry {
  fs::path path;
  checkpoint_name name;
};

// Every ckpt-* file of dir whose name parses, in no particular order; empty when dir is missing.
std::vector<dir_entry> checkpoint_files(const fs::path& dir) {
  std::vector<dir_entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::optional<checkpoint_name> name = parse_checkpoint_name(it->path().filename().string());
    if (name) out.push_back({it->path(), *name});
  }
  return out;
}

// Deletes what step 4 of the header says. Failures are ignored: a file left over is harmless (a
// stale .tmp is never read, an extra old .bin only costs space) and the next write retries.
void prune(const fs::path& dir, std::uint64_t round, std::size_t keep) {
  std::vector<dir_entry> files = checkpoint_files(dir);
  std::set<std::uint64_t> older;
  for (const dir_entry& f : files)
    if (!f.name.temporary && f.name.round < round) older.insert(f.name.round);
  // Keep the newest keep - 1 rounds below `round`.
  std::set<std::uint64_t> kept;
  for (auto it = older.rbegin(); it != older.rend() && kept.size() + 1 < keep; ++it) kept.insert(*it);
  std::error_code ec;
  for (const dir_entry& f : files) {
    const bool keep_it = !f.name.temporary && (f.name.round == round || kept.count(f.name.round) != 0);
    if (!keep_it) fs::remove(f.path, ec);
  }
}

std::vector<std::byte> read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw state_error(file.string() + ": cannot open: " + std::strerror(errno));
  std::vector<std::byte> bytes;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    const auto* p = reinterpret_cast<const std::byte*>(buf);
    bytes.insert(bytes.end(), p, p + in.gcount());
  }
  if (in.bad()) throw state_error(file.string() + ": read failed");
  return bytes;
}

// Empty when ck matches what the file name and expect say, else the reason.
std::string mismatch(const checkpoint& ck, std::uint64_t named_round, const checkpoint_identity& expect) {
  if (ck.round != named_round)
    return "holds round " + std::to_string(ck.round) + " but is named for round " + std::to_string(named_round);
  if (expect.run_id && ck.run_id != *expect.run_id)
    return "belongs to run " + hex64(ck.run_id) + ", not to this run " + hex64(*expect.run_id) +
           " (another config or seed)";
  if (expect.rank && ck.rank != *expect.rank)
    return "belongs to rank " + std::to_string(ck.rank) + ", not " + std::to_string(*expect.rank);
  return {};
}

}  // namespace

fs::path checkpoint_path(const fs::path& dir, std::uint64_t round) {
  return dir / (std::string(kPrefix) + std::to_string(round) + std::string(kComplete));
}

std::optional<checkpoint_name> parse_checkpoint_name(std::string_view filename) {
  if (!filename.starts_with(kPrefix)) return std::nullopt;
  filename.remove_prefix(kPrefix.size());
  checkpoint_name out;
  if (filename.ends_with(kComplete)) {
    filename.remove_suffix(kComplete.size());
  } else if (filename.ends_with(kTemporary)) {
    filename.remove_suffix(kTemporary.size());
    out.temporary = true;
  } else {
    return std::nullopt;
  }
  if (filename.empty() || (filename.size() > 1 && filename[0] == '0')) return std::nullopt;
  if (!std::all_of(filename.begin(), filename.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const auto [end, ec] = std::from_chars(filename.data(), filename.data() + filename.size(), out.round);
  if (ec != std::errc() || end != filename.data() + filename.size()) return std::nullopt;
  return out;
}

status write_checkpoint(const fs::path& dir, const checkpoint& ck, const checkpoint_write_options& options) {
  QG_ENFORCE(options.keep >= 1, "keep=" << options.keep);
  const auto stage = [&](checkpoint_write_stage s) {
    if (options.after_stage_for_testing) options.after_stage_for_testing(s);
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return status::error(errc::io, dir.string() + ": cannot create the checkpoint directory: " + ec.message());
  const fs::path final_path = checkpoint_path(dir, ck.round);
  fs::path temporary = final_path;
  temporary.replace_extension(kTemporary);
  if (status st = write_synced(temporary, encode_checkpoint(ck)); !st) return st;
  stage(checkpoint_write_stage::temporary_synced);
  if (::rename(temporary.c_str(), final_path.c_str()) != 0)
    return io_error(final_path, "cannot rename " + temporary.filename().string() + " to it", errno);
  stage(checkpoint_write_stage::renamed);
  if (status st = sync_directory(dir); !st) return st;
  stage(checkpoint_write_stage::directory_synced);
  prune(dir, ck.round, options.keep);
  return status::ok();
}

checkpoint read_checkpoint(const fs::path& file, const checkpoint_identity& expect) {
  const std::optional<checkpoint_name> name = parse_checkpoint_name(file.filename().string());
  if (!name || name->temporary)
    throw state_error(file.string() + ": not a complete checkpoint's name (expected ckpt-<round>.bin)");
  const std::vector<std::byte> bytes = read_file(file);
  checkpoint ck;
  if (const status st = decode_checkpoint(bytes, ck); !st) throw state_error(file.string() + ": " + st.message());
  if (const std::string why = mismatch(ck, name->round, expect); !why.empty())
    throw state_error(file.string() + ": " + why);
  return ck;
}

checkpoint_listing list_checkpoints(const fs::path& dir, const checkpoint_identity& expect) {
  checkpoint_listing out;
  std::vector<dir_entry> files = checkpoint_files(dir);
  std::sort(files.begin(), files.end(), [](const dir_entry& a, const dir_entry& b) { return a.path < b.path; });
  for (const dir_entry& f : files) {
    if (f.name.temporary) {
      out.skipped.push_back(f.path.string() + ": an unfinished write (temporary file), ignored");
      continue;
    }
    try {
      (void)read_checkpoint(f.path, expect);
      out.rounds.push_back(f.name.round);
    } catch (const state_error& e) {
      out.skipped.push_back(e.what());
    }
  }
  std::sort(out.rounds.begin(), out.rounds.end());
  return out;
}

std::optional<checkpoint> read_newest_checkpoint(const fs::path& dir, const checkpoint_identity& expect,
                                                 std::vector<std::string>* skipped) {
  std::vector<dir_entry> files = checkpoint_files(dir);
  for (const dir_entry& f : files)
    if (f.name.temporary && skipped) skipped->push_back(f.path.string() + ": an unfinished write (temporary file), ignored");
  std::erase_if(files, [](const dir_entry& f) { return f.name.temporary; });
  std::sort(files.begin(), files.end(),
            [](const dir_entry& a, const dir_entry& b) { return a.name.round > b.name.round; });
  for (const dir_entry& f : files) {
    try {
      return read_checkpoint(f.path, expect);
    } catch (const state_error& e) {
      if (skipped) skipped->push_back(e.what());
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> newest_common_round(std::span<const std::vector<std::uint64_t>> rounds) {
  if (rounds.empty()) return std::nullopt;
  std::optional<std::uint64_t> best;
  for (const std::uint64_t r : rounds.front()) {
    const bool everywhere = std::all_of(rounds.begin() + 1, rounds.end(), [&](const std::vector<std::uint64_t>& v) {
      return std::find(v.begin(), v.end(), r) != v.end();
    });
    if (everywhere && (!best || r > *best)) best = r;
  }
  return best;
}

}  // namespace qgossip
