#pragma once
// A small binary format for training state (checkpoints, docs/checkpoints.md): a sequence of named,
// typed, length-prefixed fields, little-endian on every platform. A field is
//
//   name length (u8, 1..255) | name (bytes) | type (u8, state_type) | payload length (u64) | payload
//
// state_writer appends fields; state_reader reads them back IN THE SAME ORDER and checks each one's
// name, type and length before touching its payload: a wrong name, a wrong type, a length that does
// not fit the element size or the bytes left, or reading past the end throws state_error naming
// the reader's context (file and section), the byte offset, and what was expected and found. A
// reader never reads out of bounds and never allocates more than the bytes left in its input.
//
// Components write their state as fields (an algorithm: its name, rank, then its vectors) and
// read them back with the same calls; get_* of a fixed size (a span to fill) also checks the count,
// so a checkpoint from a model of another size is an error, never a silent partial load.
// Thread safety: none; one writer or reader per thread.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.hpp"

namespace qgossip {

// Frozen numbering (it is in checkpoint files): never renumber, only append.
enum class state_type : std::uint8_t {
  u64 = 1,        // 8 bytes
  f64 = 2,        // 8 bytes, the double's bit pattern (NaN payloads kept)
  bytes = 3,      // any length: strings, nested state
  f32_array = 4,  // 4 bytes per element, the floats' bit patterns
  f64_array = 5,  // 8 bytes per element
  u64_array = 6,  // 8 bytes per element
};
std::string_view to_string(state_type type);

// Bad saved state (a truncated or foreign checkpoint section, or one from another configuration):
// an input error, like a bad config file, so the CLI reports it and exits 2.
class state_error : public config_error {
 public:
  explicit state_error(const std::string& what) : config_error(what) {}
};

class state_writer {
 public:
  void put_u64(std::string_view name, std::uint64_t value);
  void put_i64(std::string_view name, std::int64_t value) { put_u64(name, static_cast<std::uint64_t>(value)); }
  void put_bool(std::string_view name, bool value) { put_u64(name, value ? 1 : 0); }
  void put_f64(std::string_view name, double value);
  void put_string(std::string_view name, std::string_view text);
  void put_bytes(std::string_view name, std::span<const std::byte> bytes);
  void put_floats(std::string_view name, std::span<const float> values);
  void put_doubles(std::string_view name, std::span<const double> values);
  void put_u64s(std::string_view name, std::span<const std::uint64_t> values);

  [[nodiscard]] const std::vector<std::byte>& bytes() const { return out_; }
  [[nodiscard]] std::vector<std::byte> take() { return std::move(out_); }

 private:
  // Writes the field's name, type and length; the caller appends `length` payload bytes.
  void begin(std::string_view name, state_type type, std::uint64_t length);

  std::vector<std::byte> out_;
};

class state_reader {
 public:
  // `in` must outlive the reader (get_bytes returns views into it). context starts every error
  // message: "runs/x/checkpoints/node-0/ckpt-10.bin: section 'algorithm'".
  state_reader(std::span<const std::byte> in, std::string context);

  [[nodiscard]] std::uint64_t get_u64(std::string_view name);
  [[nodiscard]] std::int64_t get_i64(std::string_view name) { return static_cast<std::int64_t>(get_u64(name)); }
  [[nodiscard]] bool get_bool(std::string_view name);  // 0 or 1, anything else is an error
  [[nodiscard]] double get_f64(std::string_view name);
  // max_length: a longer string is an error (names and descriptions are short).
  [[nodiscard]] std::string get_string(std::string_view name, std::size_t max_length = 4096);
  // A view into the input, valid while the input is.
  [[nodiscard]] std::span<const std::byte> get_bytes(std::string_view name);
  // Exactly out.size() values, else an error naming both counts.
  void get_floats(std::string_view name, std::span<float> out);
  void get_doubles(std::string_view name, std::span<double> out);
  // Any count (bounded by the bytes left).
  [[nodiscard]] std::vector<float> get_floats(std::string_view name);
  [[nodiscard]] std::vector<double> get_doubles(std::string_view name);
  [[nodiscard]] std::vector<std::uint64_t> get_u64s(std::string_view name);

  // Reads a field and throws unless it equals `expected` (a checkpoint of another run, rank, model...).
  void expect_u64(std::string_view name, std::uint64_t expected);
  void expect_string(std::string_view name, std::string_view expected);

  [[nodiscard]] bool at_end() const { return pos_ == in_.size(); }
  // The name of the next field, without reading it ("" at the end or before a malformed header): for
  // sections whose layout changed, to tell the old form from the new.
  [[nodiscard]] std::string_view next_name() const;
  // Throws unless every byte was read: a section with fields nobody read is from another version.
  void expect_end() const;
  [[nodiscard]] std::size_t offset() const { return pos_; }
  [[nodiscard]] const std::string& context() const { return context_; }
  // Throws state_error with the context and the current offset in front of `what`.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  // Reads the next field's header, checks name and type, and returns its payload; for arrays,
  // element_size must divide the length.
  std::span<const std::byte> field(std::string_view name, state_type type, std::size_t element_size);

  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
  std::string context_;
};

}  // namespace qgossip
