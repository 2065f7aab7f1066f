#include "node/config/config_fields.hpp"

#include <cstdio>
#include <cstdlib>

namespace qgossip {

std::string number_text(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string number_text(std::int64_t v) { return std::to_string(v); }

YAML::Node value_node(yaml_reader& r, std::string_view key) {
  auto node = r.child(key);
  return node ? *node : YAML::Node();
}

int get_int_in(yaml_reader& r, std::string_view key, int def, int lo, int hi) {
  return static_cast<int>(in_range<std::int64_t>(r, key, r.get_int(key, def), lo, hi));
}

double get_double_in(yaml_reader& r, std::string_view key, double def, double lo, double hi) {
  return in_range<double>(r, key, r.get_double(key, def), lo, hi);
}

double get_positive_double(yaml_reader& r, std::string_view key, double def, double smallest, double hi,
                           const std::string& what) {
  const double v = r.get_double(key, def);
  const std::string say = r.key_path(key) + ": " + what;
  if (v <= 0) throw r.error_at(value_node(r, key), say + " must be > 0, got " + number_text(v));
  if (v < smallest)
    throw r.error_at(value_node(r, key), say + " must be at least " + number_text(smallest) + ", got " + number_text(v));
  if (v > hi) throw r.error_at(value_node(r, key), say + " must be at most " + number_text(hi) + ", got " + number_text(v));
  return v;
}

}  // namespace qgossip
