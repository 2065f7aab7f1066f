#include "gossip/zmq/curve_keys.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"

namespace qgossip {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kZ85KeyChars = 40;

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Writes text to path with exactly `mode`, through a temporary file renamed over path.
void write_file_atomically(const fs::path& path, const std::string& text, mode_t mode) {
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return config_error("cannot write " + path.string() + ": " + what + ": " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode & 0600);
  if (fd < 0) throw fail("open");
  // The umask may have taken bits away; set exactly the mode asked for before anything is written.
  bool ok = ::fchmod(fd, mode) == 0;
  std::size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  errno = err;
  if (!ok) throw fail("write");
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("rename");
}

void make_keys_dir(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  fs::create_directories(dir, ec);
  if (ec) throw config_error("cannot create the keys directory " + dir.string() + ": " + ec.message());
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);  // 0700
}

// The one key line of a key file (comment lines start with '#').
std::string read_key(const fs::path& file, const char* what) {
  std::ifstream in(file);
  if (!in) {
    const int err = errno;
    throw config_error("cannot read the CURVE " + std::string(what) + " " + file.string() + ": " +
                       std::strerror(err) +
                       " (generate the run's keys with `qgossip keys --config RUN.yaml`, which `qgossip launch` "
                       "does by itself, or set network.security: none; see docs/security.md)");
  }
  std::string line, key;
  int keys = 0;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    std::size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    key = line.substr(start);
    ++keys;
  }
  if (keys != 1 || !is_curve_key(key))
    throw config_error("the CURVE " + std::string(what) + " " + file.string() + " is malformed: expected one line of " +
                       std::to_string(kZ85KeyChars) + " Z85 characters (as `qgossip keys` writes)" +
                       (keys == 0 ? ", found none" : keys > 1 ? ", found " + std::to_string(keys) + " lines" : ""));
  return key;
}

}  // namespace

bool curve_available() { return zmq_has("curve") == 1; }

curve_keypair generate_curve_keypair() {
  std::array<char, kZ85KeyChars + 1> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0)
    throw config_error(std::string("cannot generate a CURVE keypair: ") + zmq_strerror(zmq_errno()) +
                       (curve_available() ? "" : " (this libzmq was built without CURVE: install one built with libsodium, "
                                                 "or set network.security: none)"));
  return {std::string(pub.data()), std::string(sec.data())};
}

std::string curve_public_key(const std::string& secret_key) {
  std::array<char, kZ85KeyChars + 1> pub{};
  if (!is_curve_key(secret_key) || zmq_curve_public(pub.data(), secret_key.c_str()) != 0)
    throw config_error("cannot derive a CURVE public key: the secret key is malformed or CURVE is unavailable");
  return std::string(pub.data());
}

bool is_curve_key(std::string_view z85) {
  if (z85.size() != kZ85KeyChars) return false;
  static constexpr std::string_view kAlphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  for (char ch : z85)
    if (kAlphabet.find(ch) == std::string_view::npos) return false;
  std::array<std::uint8_t, 32> raw{};
  return zmq_z85_decode(raw.data(), std::string(z85).c_str()) != nullptr;
}

fs::path secret_key_path(const fs::path& dir, int rank) { return dir / ("node-" + std::to_string(rank) + ".key"); }
fs::path public_key_path(const fs::path& dir, int rank) { return dir / ("node-" + std::to_string(rank) + ".pub"); }

void write_curve_public_key(const fs::path& dir, int rank, const std::string& public_key) {
  make_keys_dir(dir);
  write_file_atomically(public_key_path(dir, rank),
                        "# qgossip CURVE public key of rank " + std::to_string(rank) + " (every host needs it)\n" +
                            public_key + "\n",
                        0644);
}

void write_curve_keypair(const fs::path& dir, int rank, const curve_keypair& keys) {
  make_keys_dir(dir);
  write_file_atomically(secret_key_path(dir, rank),
                        "# qgossip CURVE secret key of rank " + std::to_string(rank) +
                            ": keep it private (mode 0600), on rank " + std::to_string(rank) + "'s host only\n" +
                            keys.secret_key + "\n",
                        0600);
  write_curve_public_key(dir, rank, keys.public_key);
}

std::string read_curve_secret_key(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    throw config_error("the CURVE secret key " + file.string() + " may be read or written by group or others (mode " +
                       octal_mode(st.st_mode) + "): run `chmod 600 " + file.string() + "`");
  return read_key(file, "secret key");
}

std::string read_curve_public_key(const fs::path& file) { return read_key(file, "public key"); }

}  // namespace qgossip
