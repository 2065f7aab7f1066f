#include "node/data/npy.hpp"

#include <bit>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>

#include "core/errors.hpp"

namespace qgossip {
namespace {

static_assert(std::endian::native == std::endian::little, "the .npy reader copies little-endian data as is");

constexpr std::string_view kMagic = "\x93NUMPY";

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw config_error(name, 0, 0, what + " (expected a .npy file of '<f4' or '<f8' values in C order)");
}

// The header dict, parsed by a cursor over its text. Only the literal forms NumPy writes are accepted:
// quoted keys, a quoted descr, True/False, and a tuple of non-negative integers.
class header_parser {
 public:
  header_parser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  void parse() {
    skip_space();
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = quoted();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        set_once(descr_.has_value(), key);
        descr_ = quoted();
      } else if (key == "fortran_order") {
        set_once(fortran_order_.has_value(), key);
        fortran_order_ = boolean();
      } else if (key == "shape") {
        set_once(shape_.has_value(), key);
        shape_ = tuple();
      } else {
        bad("unknown key '" + key + "' in the header (expected descr, fortran_order, shape)");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') bad("expected ',' or '}' after the value of '" + key + "'");
    }
    ++pos_;  // '}'
    skip_space();
    if (pos_ != text_.size()) bad("unexpected text after the header dict");
    if (!descr_) bad("the header has no 'descr'");
    if (!fortran_order_) bad("the header has no 'fortran_order'");
    if (!shape_) bad("the header has no 'shape'");
  }

  const std::string& descr() const { return *descr_; }
  bool fortran_order() const { return *fortran_order_; }
  const std::vector<std::uint64_t>& shape() const { return *shape_; }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(name_, "header at character " + std::to_string(pos_) + ": " + what);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  void set_once(bool already, const std::string& key) const {
    if (already) bad("key '" + key + "' given twice");
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    const std::size_t end = text_.find(q, pos_ + 1);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    bad("expected True or False");
  }
  std::vector<std::uint64_t> tuple() {
    expect('(');
    std::vector<std::uint64_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') bad("expected a non-negative integer in the shape");
      std::uint64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        const std::uint64_t digit = static_cast<std::uint64_t>(peek() - '0');
        if (d > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) bad("shape dimension too large");
        d = d * 10 + digit;
        ++pos_;
      }
      dims.push_back(d);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') bad("expected ',' or ')' in the shape");
    }
    ++pos_;  // ')'
    return dims;
  }

  std::string_view text_;
  const std::string& name_;
  std::size_t pos_ = 0;
  std::optional<std::string> descr_;
  std::optional<bool> fortran_order_;
  std::optional<std::vector<std::uint64_t>> shape_;
};

std::uint32_t read_le(std::span<const std::byte> bytes) {
  std::uint32_t v = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) v = (v << 8) | std::to_integer<std::uint32_t>(bytes[i]);
  return v;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

bool has_npy_magic(std::span<const std::byte> bytes) {
  return bytes.size() >= kMagic.size() && std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) == 0;
}

std::vector<float> parse_npy(std::span<const std::byte> bytes, const std::string& name) {
  if (!has_npy_magic(bytes)) fail(name, "bad magic: the file does not start with \\x93NUMPY");
  if (bytes.size() < 8) fail(name, "truncated before the version");
  const auto major = std::to_integer<unsigned>(bytes[6]);
  const auto minor = std::to_integer<unsigned>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(name, "unsupported format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (1.0, 2.0 and 3.0 are read)");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes) fail(name, "truncated before the header length");
  const std::size_t header_len = read_le(bytes.subspan(8, len_bytes));
  const std::size_t data_offset = 8 + len_bytes + header_len;
  if (bytes.size() < data_offset)
    fail(name, "truncated header: it says " + std::to_string(header_len) + " bytes, the file has " +
                   std::to_string(bytes.size() - 8 - len_bytes));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8 + len_bytes, header_len);

  header_parser header(text, name);
  header.parse();
  std::size_t item = 0;
  if (header.descr() == "<f4") {
    item = 4;
  } else if (header.descr() == "<f8") {
    item = 8;
  } else {
    fail(name, "dtype '" + header.descr() + "' is not supported" +
                   (header.descr().starts_with('>') ? " (big-endian)" : ""));
  }
  if (header.fortran_order())
    fail(name, "fortran_order is True; save a C-ordered array (numpy.ascontiguousarray)");

  std::uint64_t count = 1;
  for (std::uint64_t d : header.shape()) {
    if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / item / d)
      fail(name, "shape " + shape_text(header.shape()) + " is too large");
    count *= d;
  }
  const std::uint64_t data_bytes = bytes.size() - data_offset;
  if (data_bytes != count * item)
    fail(name, std::string(data_bytes < count * item ? "truncated" : "trailing bytes") + ": shape " +
                   shape_text(header.shape()) + " of '" + header.descr() + "' needs " +
                   std::to_string(count * item) + " data bytes, the file has " + std::to_string(data_bytes));

  std::vector<float> values(count);
  const std::byte* data = bytes.data() + data_offset;
  if (item == 4) {
    if (count > 0) std::memcpy(values.data(), data, count * 4);
    return values;
  }
  for (std::size_t i = 0; i < count; ++i) {
    double d;
    std::memcpy(&d, data + 8 * i, 8);
    // Converting a finite double beyond float's range is undefined behaviour, and silently making it
    // infinite would hide a unit mistake: say which value.
    if (std::isfinite(d) && std::fabs(d) > static_cast<double>(FLT_MAX))
      fail(name, "value " + std::to_string(i) + " (" + std::to_string(d) + ") is outside float32's range");
    values[i] = static_cast<float>(d);
  }
  return values;
}

std::vector<float> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(path, 0, 0, std::string("cannot open: ") + std::strerror(errno));
  const std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw config_error(path, 0, 0, "read error");
  return parse_npy(std::as_bytes(std::span<const char>(raw)), path);
}

}  // namespace qgossip
