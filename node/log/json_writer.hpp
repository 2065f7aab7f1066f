#pragma once
// A minimal streaming JSON writer for run.json, summary.json and the progress lines on stdout.
// Numbers are written with enough digits to round-trip doubles; non-finite numbers become null
// (JSON has no NaN), which is what a diverged loss looks like to scripts.
// Not thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qgossip {

class json_writer {
 public:
  explicit json_writer(bool pretty = false) : pretty_(pretty) {}

  json_writer& begin_object();
  json_writer& end_object();
  json_writer& begin_array();
  json_writer& end_array();
  json_writer& key(std::string_view k);
  json_writer& value(std::string_view s);
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(double v);
  json_writer& value(std::int64_t v);
  json_writer& value(std::uint64_t v);
  json_writer& value(int v) { return value(static_cast<std::int64_t>(v)); }
  json_writer& value(bool v);
  json_writer& null();
  // An absent value (a metric not measured) is null.
  json_writer& value(const std::optional<double>& v) { return v ? value(*v) : null(); }
  // key + value in one call.
  template <class T>
  json_writer& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  const std::string& str() const { return out_; }

 private:
  void before_value();
  void newline();
  bool pretty_;
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

std::string json_escape(std::string_view s);

}  // namespace qgossip
