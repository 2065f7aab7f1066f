#include "node/membership/notice.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace qgossip {
namespace {

std::string printable(std::string_view s) {
  std::string out(s.substr(0, kMaxCauseBytes));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return out;
}

// Splits off the next space-separated word of line.
std::string_view next_word(std::string_view& line) {
  const auto end = line.find(' ');
  std::string_view word = line.substr(0, end);
  line = end == std::string_view::npos ? std::string_view() : line.substr(end + 1);
  return word;
}

template <class Int>
bool parse_int(std::string_view s, Int& out) {
  // Digits only, no leading zero: one spelling per number ("-0" and "+1" are refused).
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return false;
  if (!std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

status bad(std::size_t line, const std::string& what) {
  return status::error(errc::corrupt, "notice line " + std::to_string(line) + ": " + what);
}

status parse_line(std::string_view line, std::size_t number, int n, notice_item& item) {
  const bool trailing_space = !line.empty() && line.back() == ' ';
  const std::string_view word = next_word(line);
  if (trailing_space && word != "left") return bad(number, "a trailing space");  // one spelling per item
  if (word == "degree") {
    item.what = notice_item::kind::degree;
    if (!parse_int(next_word(line), item.degree) || item.degree < 0 || item.degree >= n)
      return bad(number, "expected 'degree <0.." + std::to_string(n - 1) + "> <round>'");
    if (!parse_int(next_word(line), item.round) || !line.empty()) return bad(number, "expected 'degree <d> <round>'");
    return status::ok();
  }
  if (word == "left") {
    item.what = notice_item::kind::left;
    if (!parse_int(next_word(line), item.rank) || item.rank < 0 || item.rank >= n)
      return bad(number, "expected 'left <rank 0.." + std::to_string(n - 1) + "> <round> <cause>'");
    if (!parse_int(next_word(line), item.round)) return bad(number, "expected 'left <rank> <round> <cause>'");
    if (line.empty()) return bad(number, "expected 'left <rank> <round> <cause>': the cause is missing");
    if (line.size() > kMaxCauseBytes) return bad(number, "the cause is longer than " + std::to_string(kMaxCauseBytes) + " bytes");
    item.cause = std::string(line);
    return status::ok();
  }
  return bad(number, "unknown item '" + printable(word.substr(0, 20)) + "' (expected left or degree)");
}

}  // namespace

std::string encode_notice(std::span<const notice_item> items) {
  std::string out;
  for (const notice_item& i : items) {
    switch (i.what) {
      case notice_item::kind::degree:
        out += "degree " + std::to_string(i.degree) + " " + std::to_string(i.round) + "\n";
        break;
      case notice_item::kind::left:
        out += "left " + std::to_string(i.rank) + " " + std::to_string(i.round) + " " +
               (i.cause.empty() ? std::string("(no cause given)") : printable(i.cause)) + "\n";
        break;
    }
  }
  return out;
}

status parse_notice(std::span<const std::byte> payload, int n, std::vector<notice_item>& out) {
  out.clear();
  if (payload.size() > kMaxNoticeBytes)
    return status::error(errc::corrupt, "notice of " + std::to_string(payload.size()) + " bytes (at most " +
                                            std::to_string(kMaxNoticeBytes) + ")");
  const std::string_view text(reinterpret_cast<const char*>(payload.data()), payload.size());
  if (text.empty() || text.back() != '\n') return status::error(errc::corrupt, "notice is empty or its last line has no newline");
  const auto bad_char = std::find_if(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return c != '\n' && (u < 0x20 || u > 0x7e);
  });
  if (bad_char != text.end())
    return status::error(errc::corrupt, "notice byte " + std::to_string(bad_char - text.begin()) + " is not printable ASCII");
  std::size_t start = 0, number = 1;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    notice_item item;
    if (status s = parse_line(text.substr(start, end - start), number, n, item); !s) {
      out.clear();  // refused whole
      return s;
    }
    out.push_back(std::move(item));
    start = end + 1;
    ++number;
  }
  return status::ok();
}

}  // namespace qgossip
