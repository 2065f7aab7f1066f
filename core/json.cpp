#include "core/json.hpp"

namespace qgossip {

using json = nlohmann::ordered_json;

std::string json_text(const json& j, bool pretty) {
  return j.dump(pretty ? 2 : -1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

json json_or_null(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<json> parse_json_object(std::string_view text, std::string* error) {
  auto fail = [error](std::string what) -> std::optional<json> {
    if (error) *error = std::move(what);
    return std::nullopt;
  };
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, ..." without the library's tag.
    std::string what = e.what();
    if (const auto tag_end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos)
      what.erase(0, tag_end + 2);
    return fail(what);
  }
  if (!j.is_object()) return fail(std::string("expected a JSON object, got JSON ") + j.type_name());
  return j;
}

std::optional<double> json_number(const json& obj, std::string_view key) {
  if (!obj.is_object()) return std::nullopt;
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

const std::string* json_string(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

}  // namespace qgossip
