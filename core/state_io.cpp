#include "core/state_io.hpp"

#include <bit>
#include <cstring>

namespace qgossip {
namespace {

constexpr std::size_t kMaxName = 255;
// name length (1) + type (1) + payload length (8), besides the name itself.
constexpr std::size_t kFieldOverhead = 10;

template <class T>
void put_le(std::vector<std::byte>& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(std::byte(static_cast<unsigned char>(v >> (8 * i))));
}

template <class T>
T get_le(const std::byte* in) {
  T v = 0;
  for (std::size_t i = sizeof(T); i-- > 0;) v = static_cast<T>((v << 8) | std::to_integer<T>(in[i]));
  return v;
}

// Appends values as little-endian words of their bit patterns (W: the unsigned type of T's size).
template <class W, class T>
void put_words(std::vector<std::byte>& out, std::span<const T> values) {
  static_assert(sizeof(W) == sizeof(T));
  if constexpr (std::endian::native == std::endian::little) {
    const std::size_t at = out.size();
    out.resize(at + values.size_bytes());
    if (!values.empty()) std::memcpy(out.data() + at, values.data(), values.size_bytes());
  } else {
    for (const T v : values) put_le<W>(out, std::bit_cast<W>(v));
  }
}

template <class W, class T>
void get_words(std::span<const std::byte> in, std::span<T> out) {
  static_assert(sizeof(W) == sizeof(T));
  if constexpr (std::endian::native == std::endian::little) {
    if (!out.empty()) std::memcpy(out.data(), in.data(), out.size_bytes());
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::bit_cast<T>(get_le<W>(in.data() + i * sizeof(W)));
  }
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

std::string_view to_string(state_type type) {
  switch (type) {
    case state_type::u64: return "u64";
    case state_type::f64: return "f64";
    case state_type::bytes: return "bytes";
    case state_type::f32_array: return "f32 array";
    case state_type::f64_array: return "f64 array";
    case state_type::u64_array: return "u64 array";
  }
  return "unknown type";
}

void state_writer::begin(std::string_view name, state_type type, std::uint64_t length) {
  QG_ENFORCE(!name.empty() && name.size() <= kMaxName, "field name " << quoted(name));
  out_.push_back(std::byte(static_cast<unsigned char>(name.size())));
  const auto* p = reinterpret_cast<const std::byte*>(name.data());
  out_.insert(out_.end(), p, p + name.size());
  out_.push_back(std::byte(static_cast<std::uint8_t>(type)));
  put_le<std::uint64_t>(out_, length);
}

void state_writer::put_u64(std::string_view name, std::uint64_t value) {
  begin(name, state_type::u64, 8);
  put_le<std::uint64_t>(out_, value);
}

void state_writer::put_f64(std::string_view name, double value) {
  begin(name, state_type::f64, 8);
  put_le<std::uint64_t>(out_, std::bit_cast<std::uint64_t>(value));
}

void state_writer::put_string(std::string_view name, std::string_view text) {
  put_bytes(name, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void state_writer::put_bytes(std::string_view name, std::span<const std::byte> bytes) {
  begin(name, state_type::bytes, bytes.size());
  out_.insert(out_.end(), bytes.begin(), bytes.end());
}

void state_writer::put_floats(std::string_view name, std::span<const float> values) {
  begin(name, state_type::f32_array, values.size_bytes());
  put_words<std::uint32_t>(out_, values);
}

void state_writer::put_doubles(std::string_view name, std::span<const double> values) {
  begin(name, state_type::f64_array, values.size_bytes());
  put_words<std::uint64_t>(out_, values);
}

void state_writer::put_u64s(std::string_view name, std::span<const std::uint64_t> values) {
  begin(name, state_type::u64_array, values.size_bytes());
  put_words<std::uint64_t>(out_, values);
}

state_reader::state_reader(std::span<const std::byte> in, std::string context)
    : in_(in), context_(std::move(context)) {}

void state_reader::fail(const std::string& what) const {
  throw state_error(context_ + ": at byte " + std::to_string(pos_) + ": " + what);
}

std::string_view state_reader::next_name() const {
  const std::size_t left = in_.size() - pos_;
  if (left == 0) return {};
  const std::size_t name_length = std::to_integer<std::size_t>(in_[pos_]);
  if (name_length == 0 || left < name_length + kFieldOverhead) return {};
  return {reinterpret_cast<const char*>(in_.data() + pos_ + 1), name_length};
}

std::span<const std::byte> state_reader::field(std::string_view name, state_type type, std::size_t element_size) {
  const std::string want = "field " + quoted(name) + " (" + std::string(to_string(type)) + ")";
  const std::size_t left = in_.size() - pos_;
  if (left == 0) fail("expected " + want + ", found the end of the data");
  const std::size_t name_length = std::to_integer<std::size_t>(in_[pos_]);
  if (name_length == 0 || left < name_length + kFieldOverhead)
    fail("expected " + want + ", found a truncated field header (" + std::to_string(left) + " bytes left)");
  const std::string_view found(reinterpret_cast<const char*>(in_.data() + pos_ + 1), name_length);
  if (found != name) fail("expected " + want + ", found field " + quoted(found));
  const std::byte* p = in_.data() + pos_ + 1 + name_length;
  const auto found_type = static_cast<state_type>(std::to_integer<std::uint8_t>(p[0]));
  if (found_type != type)
    fail("expected " + want + ", found it as " + std::string(to_string(found_type)) + " (type " +
         std::to_string(static_cast<unsigned>(found_type)) + ")");
  const std::uint64_t length = get_le<std::uint64_t>(p + 1);
  const std::size_t payload_at = pos_ + name_length + kFieldOverhead;
  if (length > in_.size() - payload_at)
    fail(want + " claims " + std::to_string(length) + " bytes but only " + std::to_string(in_.size() - payload_at) +
         " are left");
  if (length % element_size != 0)
    fail(want + " has " + std::to_string(length) + " bytes, not a multiple of " + std::to_string(element_size));
  if ((type == state_type::u64 || type == state_type::f64) && length != 8)
    fail(want + " has " + std::to_string(length) + " bytes, expected 8");
  pos_ = payload_at + static_cast<std::size_t>(length);
  return in_.subspan(payload_at, static_cast<std::size_t>(length));
}

std::uint64_t state_reader::get_u64(std::string_view name) {
  return get_le<std::uint64_t>(field(name, state_type::u64, 1).data());
}

bool state_reader::get_bool(std::string_view name) {
  const std::uint64_t v = get_u64(name);
  if (v > 1) fail("field " + quoted(name) + " is " + std::to_string(v) + ", expected 0 or 1");
  return v == 1;
}

double state_reader::get_f64(std::string_view name) {
  return std::bit_cast<double>(get_le<std::uint64_t>(field(name, state_type::f64, 1).data()));
}

std::string state_reader::get_string(std::string_view name, std::size_t max_length) {
  const std::span<const std::byte> b = field(name, state_type::bytes, 1);
  if (b.size() > max_length)
    fail("field " + quoted(name) + " is " + std::to_string(b.size()) + " bytes long, at most " +
         std::to_string(max_length) + " expected");
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::span<const std::byte> state_reader::get_bytes(std::string_view name) {
  return field(name, state_type::bytes, 1);
}

void state_reader::get_floats(std::string_view name, std::span<float> out) {
  const std::span<const std::byte> b = field(name, state_type::f32_array, 4);
  if (b.size() / 4 != out.size())
    fail("field " + quoted(name) + " holds " + std::to_string(b.size() / 4) + " floats, expected " +
         std::to_string(out.size()));
  get_words<std::uint32_t>(b, out);
}

void state_reader::get_doubles(std::string_view name, std::span<double> out) {
  const std::span<const std::byte> b = field(name, state_type::f64_array, 8);
  if (b.size() / 8 != out.size())
    fail("field " + quoted(name) + " holds " + std::to_string(b.size() / 8) + " doubles, expected " +
         std::to_string(out.size()));
  get_words<std::uint64_t>(b, out);
}

std::vector<float> state_reader::get_floats(std::string_view name) {
  const std::span<const std::byte> b = field(name, state_type::f32_array, 4);
  std::vector<float> out(b.size() / 4);
  get_words<std::uint32_t>(b, std::span<float>(out));
  return out;
}

std::vector<double> state_reader::get_doubles(std::string_view name) {
  const std::span<const std::byte> b = field(name, state_type::f64_array, 8);
  std::vector<double> out(b.size() / 8);
  get_words<std::uint64_t>(b, std::span<double>(out));
  return out;
}

std::vector<std::uint64_t> state_reader::get_u64s(std::string_view name) {
  const std::span<const std::byte> b = field(name, state_type::u64_array, 8);
  std::vector<std::uint64_t> out(b.size() / 8);
  get_words<std::uint64_t>(b, std::span<std::uint64_t>(out));
  return out;
}

void state_reader::expect_u64(std::string_view name, std::uint64_t expected) {
  const std::size_t at = pos_;
  const std::uint64_t v = get_u64(name);
  if (v != expected) {
    pos_ = at;
    fail("field " + quoted(name) + " is " + std::to_string(v) + ", expected " + std::to_string(expected));
  }
}

void state_reader::expect_string(std::string_view name, std::string_view expected) {
  const std::size_t at = pos_;
  const std::string v = get_string(name);
  if (v != expected) {
    pos_ = at;
    fail("field " + quoted(name) + " is " + quoted(v) + ", expected " + quoted(expected));
  }
}

void state_reader::expect_end() const {
  if (!at_end()) fail(std::to_string(in_.size() - pos_) + " bytes left over after the last field");
}

}  // namespace qgossip
