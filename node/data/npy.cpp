#include "node/data/npy.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "core/errors.hpp"
#include "node/data/file_bytes.hpp"

namespace qgossip {
namespace {

static_assert(std::endian::native == std::endian::little, "the .npy reader copies little-endian data as is");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::string_view kFloatDescrs[] = {"<f4", "<f8"};

// The file being read and what it should have held: every error names the one and says the other.
class npy_source {
 public:
  npy_source(const std::string& name, std::span<const std::string_view> accepted)
      : name_(name), accepted_(accepted) {}

  [[noreturn]] void fail(const std::string& what) const {
    std::string expected = " (expected a .npy file of ";
    for (std::size_t i = 0; i < accepted_.size(); ++i) {
      expected += i == 0 ? "" : i + 1 == accepted_.size() ? " or " : ", ";
      expected += "'" + std::string(accepted_[i]) + "'";
    }
    throw config_error(name_, 0, 0, what + expected + " values in C order)");
  }
  bool accepts(std::string_view descr) const {
    return std::find(accepted_.begin(), accepted_.end(), descr) != accepted_.end();
  }

 private:
  const std::string& name_;
  std::span<const std::string_view> accepted_;
};

// The header dict, parsed by a cursor over its text. Only the literal forms NumPy writes are accepted:
// quoted keys, a quoted descr, True/False, and a tuple of non-negative integers.
class header_parser {
 public:
  header_parser(std::string_view text, const npy_source& source) : text_(text), source_(source) {}

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
    source_.fail("header at character " + std::to_string(pos_) + ": " + what);
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
  const npy_source& source_;
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

// Where the data start and what they are, everything about them checked against the file's size.
struct npy_layout {
  std::string descr;
  std::vector<std::uint64_t> shape;
  std::size_t item_size = 0;
  std::uint64_t count = 0;
  std::size_t data_offset = 0;
};

// The header of a .npy file: the preamble, the dict, and the data section's exact length.
npy_layout parse_layout(std::span<const std::byte> bytes, const npy_source& source) {
  if (!has_npy_magic(bytes)) source.fail("bad magic: the file does not start with \\x93NUMPY");
  if (bytes.size() < 8) source.fail("truncated before the version");
  const auto major = std::to_integer<unsigned>(bytes[6]);
  const auto minor = std::to_integer<unsigned>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    source.fail("unsupported format version " + std::to_string(major) + "." + std::to_string(minor) +
                " (1.0, 2.0 and 3.0 are read)");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes) source.fail("truncated before the header length");
  const std::size_t header_len = read_le(bytes.subspan(8, len_bytes));
  npy_layout out;
  out.data_offset = 8 + len_bytes + header_len;
  if (bytes.size() < out.data_offset)
    source.fail("truncated header: it says " + std::to_string(header_len) + " bytes, the file has " +
                std::to_string(bytes.size() - 8 - len_bytes));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8 + len_bytes, header_len);

  header_parser header(text, source);
  header.parse();
  out.descr = header.descr();
  out.shape = header.shape();
  if (!source.accepts(out.descr))
    source.fail("dtype '" + out.descr + "' is not supported" + (out.descr.starts_with('>') ? " (big-endian)" : ""));
  QG_ENFORCE(std::find(std::begin(kNpyDescrs), std::end(kNpyDescrs), out.descr) != std::end(kNpyDescrs),
             "accepted dtype '" << out.descr << "' is not one of kNpyDescrs");
  out.item_size = static_cast<std::size_t>(out.descr[2] - '0');  // "<f4" -> 4, "|u1" -> 1
  if (header.fortran_order())
    source.fail("fortran_order is True; save a C-ordered array (numpy.ascontiguousarray)");

  out.count = 1;
  for (std::uint64_t d : out.shape) {
    if (d != 0 && out.count > std::numeric_limits<std::uint64_t>::max() / out.item_size / d)
      source.fail("shape " + npy_shape_text(out.shape) + " is too large");
    out.count *= d;
  }
  const std::uint64_t data_bytes = bytes.size() - out.data_offset;
  const std::uint64_t needed = out.count * out.item_size;
  if (data_bytes != needed)
    source.fail(std::string(data_bytes < needed ? "truncated" : "trailing bytes") + ": shape " +
                npy_shape_text(out.shape) + " of '" + out.descr + "' needs " + std::to_string(needed) +
                " data bytes, the file has " + std::to_string(data_bytes));
  return out;
}

}  // namespace

std::uint64_t npy_array::count() const {
  std::uint64_t n = 1;
  for (const std::uint64_t d : shape) n *= d;
  return n;
}

std::string npy_shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

void write_npy(const std::string& path, std::string_view descr, const std::vector<std::uint64_t>& shape,
               std::span<const std::byte> data) {
  static_assert(std::endian::native == std::endian::little, "the data is written as it is in memory");
  QG_ENFORCE(std::find(std::begin(kNpyDescrs), std::end(kNpyDescrs), descr) != std::end(kNpyDescrs), descr);
  std::uint64_t count = 1;
  for (const std::uint64_t d : shape) count *= d;
  const auto item_size = static_cast<std::uint64_t>(descr[2] - '0');  // "<f4" -> 4
  QG_ENFORCE(count * item_size == data.size(), data.size() << " bytes for shape " << npy_shape_text(shape));
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " +
                       npy_shape_text(shape) + ", }";
  const std::size_t preamble = kMagic.size() + 4;  // magic, version (2 bytes), header length (2 bytes)
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');  // data starts 64-aligned
  header += '\n';
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw config_error(tmp + ": cannot create the file");
    const auto len = static_cast<std::uint16_t>(header.size());
    f.write(reinterpret_cast<const char*>(kMagic.data()), static_cast<std::streamsize>(kMagic.size()));
    const char version_and_length[4] = {1, 0, static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
    f.write(version_and_length, 4);
    f << header;
    f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!f.flush()) throw config_error(tmp + ": write failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw config_error(path + ": cannot move " + tmp + " into place: " + ec.message());
}

bool has_npy_magic(std::span<const std::byte> bytes) {
  return bytes.size() >= kMagic.size() && std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) == 0;
}

npy_array parse_npy_array(std::span<const std::byte> bytes, const std::string& name,
                          std::span<const std::string_view> accepted) {
  const npy_layout layout = parse_layout(bytes, npy_source(name, accepted));
  const std::span<const std::byte> data = bytes.subspan(layout.data_offset);
  return npy_array{layout.descr, layout.shape, layout.item_size, {data.begin(), data.end()}};
}

npy_array read_npy_array(const std::string& path, std::span<const std::string_view> accepted,
                         const std::string& missing_hint) {
  std::vector<std::byte> bytes = read_file_bytes(path, missing_hint);
  npy_layout layout = parse_layout(bytes, npy_source(path, accepted));
  // Drop the preamble in place: the data are never held twice.
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(layout.data_offset));
  return npy_array{std::move(layout.descr), std::move(layout.shape), layout.item_size, std::move(bytes)};
}

std::vector<float> parse_npy(std::span<const std::byte> bytes, const std::string& name) {
  const npy_source source(name, kFloatDescrs);
  const npy_layout layout = parse_layout(bytes, source);
  const std::size_t count = static_cast<std::size_t>(layout.count);
  const std::byte* data = bytes.data() + layout.data_offset;
  std::vector<float> values(count);
  if (layout.item_size == 4) {
    if (count > 0) std::memcpy(values.data(), data, count * 4);
    return values;
  }
  for (std::size_t i = 0; i < count; ++i) {
    double d;
    std::memcpy(&d, data + 8 * i, 8);
    // Converting a finite double beyond float's range is undefined behaviour, and silently making it
    // infinite would hide a unit mistake: say which value.
    if (std::isfinite(d) && std::fabs(d) > static_cast<double>(FLT_MAX))
      source.fail("value " + std::to_string(i) + " (" + std::to_string(d) + ") is outside float32's range");
    values[i] = static_cast<float>(d);
  }
  return values;
}

std::vector<float> read_npy(const std::string& path) { return parse_npy(read_file_bytes(path), path); }

}  // namespace qgossip
