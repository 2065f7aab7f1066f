#pragma once
// Strict reading of one YAML mapping: the only place in qgossip that touches YAML (with config.cpp).
// yaml-cpp 0.7 silently accepts duplicate keys, gives no position for a missing key and parses
// `.nan` as a number; this reader rejects all three, and after finish() any key that was not read
// is an error "file:line:col: unknown key 'lr' in train (did you mean 'lr0'?)".
// Not thread-safe; one reader per mapping, used once.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/closest_match.hpp"
#include "core/errors.hpp"

namespace qgossip {

// A value that came from the command line rather than the file: one `--set KEY=VALUE`
// (apply_override). An error in it, or an unknown KEY, names the assignment instead of a position
// in the file, which never held it.
struct override_origin {
  std::string key;         // "train.epochs"
  std::string assignment;  // "train.epochs=two", as given
  YAML::Node value;        // the parsed value: it and every node under it came from the assignment
};
using override_origins = std::vector<override_origin>;

class yaml_reader {
 public:
  // REQUIRES: node is a mapping (else throws config_error at node's position). `path` names it in
  // messages ("train", "topology.nodes[3]"); empty for the document root. `origins`: the --set
  // assignments applied to the document (nested readers share them).
  yaml_reader(YAML::Node node, std::string file, std::string path,
              std::shared_ptr<const override_origins> origins = nullptr);
  // A reader for a nested mapping of parent's document, named `path`.
  yaml_reader(YAML::Node node, const yaml_reader& parent, std::string path);

  bool has(std::string_view key) const;
  // Typed getters mark the key as known. Wrong types, non-finite numbers and out-of-range values
  // throw config_error at the value's position.
  std::string get_string(std::string_view key, std::string default_value);
  std::string require_string(std::string_view key);
  double get_double(std::string_view key, double default_value);
  double require_double(std::string_view key);
  std::int64_t get_int(std::string_view key, std::int64_t default_value);
  std::int64_t require_int(std::string_view key);
  bool get_bool(std::string_view key, bool default_value);
  std::vector<std::int64_t> get_int_list(std::string_view key, std::vector<std::int64_t> default_value);
  // The raw child (marked known), or nullopt when absent.
  std::optional<YAML::Node> child(std::string_view key);
  // The key itself (for an error at the key rather than its value), or an undefined node when absent.
  YAML::Node key_node(std::string_view key) const;
  // A reader for a nested mapping (marked known); nullopt when absent.
  std::optional<yaml_reader> map(std::string_view key);

  // Throws for the first key never asked for, with the closest known key as a hint.
  void finish() const;

  // A config_error at `n`'s position (or the mapping's when n has none).
  [[nodiscard]] config_error error_at(const YAML::Node& n, const std::string& message) const;
  [[nodiscard]] config_error error(const std::string& message) const { return error_at(node_, message); }
  const std::string& file() const { return file_; }
  std::string key_path(std::string_view key) const;

  // Scalar conversions, exposed for list elements.
  double to_double(const YAML::Node& n, const std::string& what) const;
  std::int64_t to_int(const YAML::Node& n, const std::string& what) const;

 private:
  YAML::Node find(std::string_view key) const;
  YAML::Node require(std::string_view key);

  // The --set assignment that node n, or the key `key` of this mapping, came from; nullptr when
  // the file holds it.
  [[nodiscard]] const override_origin* origin_of(const YAML::Node& n, std::string_view key = {}) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::vector<std::string> known_;
  std::shared_ptr<const override_origins> origins_;
};

// Loads a YAML file, throwing config_error with the file and the parser's line/column on a syntax
// error, "cannot open FILE: reason" when it cannot be read, and "FILE is a directory, expected
// <expected>" for a directory (which would otherwise read as an empty file).
YAML::Node load_yaml_file(const std::string& file, const std::string& expected = "a YAML file");

// Applies `--set a.b.c=value` to a document: creates the path's mappings as needed; the value is
// parsed as YAML (so `--set model.hidden=[256,128]` works). Throws config_error on bad syntax.
// Returns where the value came from, for the readers' messages.
override_origin apply_override(YAML::Node& root, std::string_view assignment);
// The key a `--set KEY=VALUE` assignment sets ("" when it has no '=').
[[nodiscard]] std::string override_key(std::string_view assignment);

}  // namespace qgossip
