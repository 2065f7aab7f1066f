#pragma once
// Fixtures for the data-set readers' tests: a fresh temporary directory to write files into, a .npy
// file builder laid out the way numpy.save writes (magic, version 1.0, little-endian header length,
// the dict padded with spaces and '\n' to a multiple of 64 bytes, then the data), and the message
// of the config_error a call throws.
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace qgossip::testing {

// A new, empty directory removed (with its contents) at the end of the scope.
class temp_dir {
 public:
  explicit temp_dir(const std::string& tag) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("qgossip_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() { std::filesystem::remove_all(path_); }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  std::string str() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `content` to the file `name` in the directory and returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    const std::string p = file(name);
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out) throw std::runtime_error("cannot write " + p);
    return p;
  }

 private:
  std::filesystem::path path_;
};

// The bytes of values as stored in memory (little-endian on every platform qgossip builds for).
template <class T>
std::string bytes_of(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  if (!s.empty()) std::memcpy(s.data(), values.data(), s.size());
  return s;
}

// A version 1.0 .npy file of dtype `descr` and shape `shape` (Python tuple text, e.g. "(2, 3)").
inline std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string s = "\x93NUMPY\x01";
  s += '\0';
  s += static_cast<char>(header.size() & 0xff);
  s += static_cast<char>(header.size() >> 8);
  return s + header + data;
}

// The what() of the config_error that f() throws, or "(no error)".
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace qgossip::testing
