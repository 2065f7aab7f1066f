#include "node/membership/notice.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <iterator>
#include <string_view>

#include "core/hash.hpp"

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

// Each item: its word and its fields in order (a cause, the rest of the line, comes last).
enum class field { rank, round, degree, size, hash, cause };
struct item_grammar {
  notice_item::kind what;
  std::string_view word;
  std::initializer_list<field> fields;
  std::string_view usage;
};
const item_grammar kGrammar[] = {
    {notice_item::kind::left, "left", {field::rank, field::round, field::cause}, "left <rank> <round> <cause>"},
    {notice_item::kind::degree, "degree", {field::degree, field::round}, "degree <degree> <round>"},
    {notice_item::kind::joined, "joined", {field::rank, field::round}, "joined <rank> <round>"},
    {notice_item::kind::join, "join", {field::round}, "join <round>"},
    {notice_item::kind::offer, "offer", {field::round, field::degree}, "offer <round> <degree>"},
    {notice_item::kind::accept, "accept", {field::round, field::degree}, "accept <round> <degree>"},
    {notice_item::kind::refuse, "refuse", {field::cause}, "refuse <cause>"},
    {notice_item::kind::start, "start", {field::size, field::hash}, "start <size> <hash: 16 lowercase hex digits>"},
    {notice_item::kind::halt, "halt", {field::round}, "halt <round>"},
};

// Exactly 16 lowercase hex digits: one spelling per hash.
bool parse_hash(std::string_view s, std::uint64_t& out) {
  if (s.size() != 16 || !std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))
    return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && end == s.data() + s.size();
}

const item_grammar& grammar_of(notice_item::kind what) {
  return *std::find_if(std::begin(kGrammar), std::end(kGrammar), [&](const item_grammar& g) { return g.what == what; });
}

// One field of item from the front of line; false when it does not parse or is out of range.
bool parse_field(field f, std::string_view& line, int n, notice_item& item) {
  switch (f) {
    case field::rank:
      return parse_int(next_word(line), item.rank) && item.rank >= 0 && item.rank < n;
    case field::degree:
      return parse_int(next_word(line), item.degree) && item.degree >= 0 && item.degree < n;
    case field::round:
      return parse_int(next_word(line), item.round);
    case field::size:
      return parse_int(next_word(line), item.size);
    case field::hash:
      return parse_hash(next_word(line), item.hash);
    case field::cause:
      item.cause = std::string(line);
      line = {};
      return !item.cause.empty() && item.cause.size() <= kMaxCauseBytes;
  }
  return false;
}

status parse_line(std::string_view line, std::size_t number, int n, notice_item& item) {
  const bool trailing_space = !line.empty() && line.back() == ' ';
  const std::string_view word = next_word(line);
  const auto g = std::find_if(std::begin(kGrammar), std::end(kGrammar), [&](const item_grammar& x) { return x.word == word; });
  if (g == std::end(kGrammar))
    return bad(number, "unknown item '" + printable(word.substr(0, 20)) +
                           "' (expected left, degree, joined, join, offer, accept, refuse, start or halt)");
  const bool has_cause = *(g->fields.end() - 1) == field::cause;
  if (trailing_space && !has_cause) return bad(number, "a trailing space");  // one spelling per item
  item.what = g->what;
  for (field f : g->fields)
    if (!parse_field(f, line, n, item))
      return bad(number, "expected '" + std::string(g->usage) + "' (ranks and degrees 0.." + std::to_string(n - 1) +
                             ", a cause of 1.." + std::to_string(kMaxCauseBytes) + " bytes)");
  if (!line.empty()) return bad(number, "expected '" + std::string(g->usage) + "': more follows");
  return status::ok();
}

}  // namespace

std::string_view notice_word(notice_item::kind kind) {
  for (const item_grammar& g : kGrammar)
    if (g.what == kind) return g.word;
  return "?";
}

std::string encode_notice(std::span<const notice_item> items) {
  std::string out;
  for (const notice_item& i : items) {
    const item_grammar& g = grammar_of(i.what);
    out += g.word;
    for (field f : g.fields) {
      out += ' ';
      switch (f) {
        case field::rank: out += std::to_string(i.rank); break;
        case field::round: out += std::to_string(i.round); break;
        case field::degree: out += std::to_string(i.degree); break;
        case field::size: out += std::to_string(i.size); break;
        case field::hash: out += hex64(i.hash).substr(2); break;  // without hex64's "0x"
        case field::cause: out += i.cause.empty() ? std::string("(no cause given)") : printable(i.cause); break;
      }
    }
    out += '\n';
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
