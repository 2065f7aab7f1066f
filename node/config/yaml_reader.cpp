#include "node/config/yaml_reader.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace qgossip {

namespace {

std::string scalar_text(const YAML::Node& n) { return n.IsScalar() ? n.Scalar() : std::string("<non-scalar>"); }

// True when n is root or a node under it (keys included).
bool holds(const YAML::Node& root, const YAML::Node& n) {
  if (root.is(n)) return true;
  if (root.IsSequence())
    for (const YAML::Node& child : root)
      if (holds(child, n)) return true;
  if (root.IsMap())
    for (auto it = root.begin(); it != root.end(); ++it)
      if (holds(it->first, n) || holds(it->second, n)) return true;
  return false;
}

}  // namespace

yaml_reader::yaml_reader(YAML::Node node, const yaml_reader& parent, std::string path)
    : yaml_reader(std::move(node), parent.file_, std::move(path), parent.origins_) {}

yaml_reader::yaml_reader(YAML::Node node, std::string file, std::string path,
                         std::shared_ptr<const override_origins> origins)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), origins_(std::move(origins)) {
  if (!node_.IsMap()) {
    std::string where = path_.empty() ? "the document" : "'" + path_ + "'";
    throw error_at(node_, where + " must be a mapping of key: value");
  }
  // Duplicate keys: yaml-cpp keeps both and returns the first; we refuse.
  std::set<std::string> seen;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) throw error_at(it->first, "keys must be plain strings");
    const std::string& k = it->first.Scalar();
    if (!seen.insert(k).second) throw error_at(it->first, "duplicate key '" + key_path(k) + "'");
  }
}

std::string yaml_reader::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const override_origin* yaml_reader::origin_of(const YAML::Node& n, std::string_view key) const {
  if (!origins_) return nullptr;
  for (auto o = origins_->rbegin(); o != origins_->rend(); ++o) {  // the last assignment wins
    if (!key.empty() && o->key == key_path(key)) return &*o;
    if (n.IsDefined() && holds(o->value, n)) return &*o;
  }
  return nullptr;
}

config_error yaml_reader::error_at(const YAML::Node& n, const std::string& message) const {
  if (const override_origin* o = origin_of(n)) return config_error("--set " + o->assignment, 0, 0, message);
  YAML::Mark m = n.Mark();
  if (m.line < 0) m = node_.Mark();
  if (m.line < 0) return config_error(file_, 0, 0, message);
  return config_error(file_, m.line + 1, m.column + 1, message);
}

YAML::Node yaml_reader::find(std::string_view key) const {
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (it->first.Scalar() == key) return it->second;
  return YAML::Node(YAML::NodeType::Undefined);
}

YAML::Node yaml_reader::key_node(std::string_view key) const {
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (it->first.Scalar() == key) return it->first;
  return YAML::Node(YAML::NodeType::Undefined);
}

bool yaml_reader::has(std::string_view key) const { return find(key).IsDefined(); }

YAML::Node yaml_reader::require(std::string_view key) {
  known_.emplace_back(key);
  YAML::Node n = find(key);
  if (!n.IsDefined() || n.IsNull()) {
    std::string where = path_.empty() ? "" : " in '" + path_ + "'";
    throw error("missing required key '" + std::string(key) + "'" + where);
  }
  return n;
}

double yaml_reader::to_double(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) throw error_at(n, what + ": expected a number");
  const std::string& s = n.Scalar();
  // YAML spells NaN and infinities .nan, .inf, -.inf (yaml-cpp would happily convert them).
  std::string lower;
  for (char ch : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* special : {".nan", ".inf", "+.inf", "-.inf", "nan", "inf", "+inf", "-inf", "infinity"})
    if (lower == special) throw error_at(n, what + ": expected a finite number, got '" + s + "'");
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE)
    throw error_at(n, what + ": expected a number, got '" + s + "'");
  if (!std::isfinite(v)) throw error_at(n, what + ": expected a finite number, got '" + s + "'");
  return v;
}

std::int64_t yaml_reader::to_int(const YAML::Node& n, const std::string& what) const {
  if (!n.IsScalar()) throw error_at(n, what + ": expected an integer");
  const std::string& s = n.Scalar();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE)
    throw error_at(n, what + ": expected an integer, got '" + s + "'");
  return v;
}

std::string yaml_reader::get_string(std::string_view key, std::string default_value) {
  known_.emplace_back(key);
  YAML::Node n = find(key);
  if (!n.IsDefined() || n.IsNull()) return default_value;
  if (!n.IsScalar()) throw error_at(n, key_path(key) + ": expected a string");
  return n.Scalar();
}

std::string yaml_reader::require_string(std::string_view key) {
  YAML::Node n = require(key);
  if (!n.IsScalar()) throw error_at(n, key_path(key) + ": expected a string");
  return n.Scalar();
}

double yaml_reader::get_double(std::string_view key, double default_value) {
  known_.emplace_back(key);
  YAML::Node n = find(key);
  if (!n.IsDefined() || n.IsNull()) return default_value;
  return to_double(n, key_path(key));
}

double yaml_reader::require_double(std::string_view key) { return to_double(require(key), key_path(key)); }

std::int64_t yaml_reader::get_int(std::string_view key, std::int64_t default_value) {
  known_.emplace_back(key);
  YAML::Node n = find(key);
  if (!n.IsDefined() || n.IsNull()) return default_value;
  return to_int(n, key_path(key));
}

std::int64_t yaml_reader::require_int(std::string_view key) { return to_int(require(key), key_path(key)); }

bool yaml_reader::get_bool(std::string_view key, bool default_value) {
  known_.emplace_back(key);
  YAML::Node n = find(key);
  if (!n.IsDefined() || n.IsNull()) return default_value;
  const std::string s = scalar_text(n);
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  throw error_at(n, key_path(key) + ": expected true or false, got '" + s + "'");
}

std::vector<std::int64_t> yaml_reader::get_int_list(std::string_view key, std::vector<std::int64_t> default_value) {
  known_.emplace_back(key);
  YAML::Node n = find(key);
  if (!n.IsDefined() || n.IsNull()) return default_value;
  if (n.IsScalar()) return {to_int(n, key_path(key))};
  if (!n.IsSequence()) throw error_at(n, key_path(key) + ": expected a list of integers");
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < n.size(); ++i)
    out.push_back(to_int(n[i], key_path(key) + "[" + std::to_string(i) + "]"));
  return out;
}

std::optional<YAML::Node> yaml_reader::child(std::string_view key) {
  known_.emplace_back(key);
  YAML::Node n = find(key);
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  return n;
}

std::optional<yaml_reader> yaml_reader::map(std::string_view key) {
  auto n = child(key);
  if (!n) return std::nullopt;
  return yaml_reader(*n, *this, key_path(key));
}

void yaml_reader::finish() const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string& k = it->first.Scalar();
    if (std::find(known_.begin(), known_.end(), k) != known_.end()) continue;
    std::string where = path_.empty() ? "" : " in '" + path_ + "'";
    std::string msg = "unknown key '" + k + "'" + where;
    std::string hint = closest_match(k, known_);
    if (!hint.empty()) msg += " (did you mean '" + hint + "'?)";
    else if (!known_.empty()) {
      msg += "; expected one of:";
      std::vector<std::string> sorted = known_;
      std::sort(sorted.begin(), sorted.end());
      sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      for (const auto& s : sorted) msg += " " + s;
    }
    if (const override_origin* o = origin_of(it->first, k)) throw config_error("--set " + o->assignment, 0, 0, msg);
    throw error_at(it->first, msg);
  }
}

YAML::Node load_yaml_file(const std::string& file, const std::string& expected) {
  // A directory opens as a stream on Linux and reads as nothing: say what it is instead.
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw config_error(file + " is a directory, expected " + expected);
  std::ifstream in(file);
  if (!in) throw config_error("cannot open " + file + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    YAML::Node root = YAML::Load(ss.str());
    if (!root.IsDefined() || root.IsNull()) throw config_error(file, 0, 0, "the file is empty");
    return root;
  } catch (const YAML::Exception& e) {
    throw config_error(file, e.mark.line + 1, e.mark.column + 1, "YAML syntax error: " + e.msg);
  }
}

std::string override_key(std::string_view assignment) {
  const auto eq = assignment.find('=');
  return eq == std::string_view::npos ? std::string() : std::string(assignment.substr(0, eq));
}

override_origin apply_override(YAML::Node& root, std::string_view assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw config_error("--set " + std::string(assignment) + ": expected key.path=value");
  std::string path(assignment.substr(0, eq));
  std::string value(assignment.substr(eq + 1));
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw config_error("--set " + path + ": cannot parse value '" + value + "': " + e.msg);
  }
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  // yaml-cpp nodes are handles: walk with reset() so we descend instead of assigning through.
  YAML::Node cur = root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i].empty()) throw config_error("--set " + path + ": empty key in path");
    YAML::Node next = cur[parts[i]];
    if (!next.IsDefined() || next.IsNull()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = cur[parts[i]];
    } else if (!next.IsMap()) {
      throw config_error("--set " + path + ": '" + parts[i] + "' is not a mapping");
    }
    cur.reset(next);
  }
  const YAML::Node set = parsed.IsNull() ? YAML::Node(value) : parsed;
  cur[parts.back()] = set;
  return {path, std::string(assignment), set};
}

}  // namespace qgossip
