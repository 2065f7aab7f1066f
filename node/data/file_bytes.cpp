#include "node/data/file_bytes.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/errors.hpp"

namespace qgossip {

std::vector<std::byte> read_file_bytes(const std::string& path, const std::string& missing_hint) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    std::string what = std::string("cannot open: ") + (err != 0 ? std::strerror(err) : "open failed");
    if (err == ENOENT && !missing_hint.empty()) what += " \u2014 " + missing_hint;
    throw config_error(path, 0, 0, what);
  }
  // A directory opens fine on Linux and reports a meaningless size: refuse anything but a file.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw config_error(path, 0, 0, "not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw config_error(path, 0, 0, "cannot read: " + ec.message());

  std::vector<std::byte> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(in.gcount()) != size) {
    throw config_error(path, 0, 0, "cannot read: got " + std::to_string(in.gcount()) + " of " +
                                       std::to_string(size) + " bytes");
  }
  return bytes;
}

}  // namespace qgossip
