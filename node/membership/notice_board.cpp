#include "node/membership/notice_board.hpp"

#include <string>

#include "core/errors.hpp"

namespace qgossip {

namespace {

constexpr std::size_t kChannels = 2;
constexpr std::size_t kKinds = static_cast<std::size_t>(notice_item::kind::halt) + 1;

std::size_t index(notice_channel c) { return static_cast<std::size_t>(c); }
std::size_t index(notice_item::kind k) { return static_cast<std::size_t>(k); }

const char* channel_name(notice_channel c) { return c == notice_channel::notice ? "a notice" : "a join message"; }

}  // namespace

notice_board::notice_board(int rank, int n, const membership& members)
    : rank_(rank), n_(n), members_(members), parts_(kChannels, std::vector<notice_part*>(kKinds, nullptr)) {}

void notice_board::handle(notice_channel channel, notice_item::kind kind, notice_part& part) {
  notice_part*& slot = parts_[index(channel)][index(kind)];
  QG_ENFORCE(slot == nullptr, "two parts answer '" << notice_word(kind) << "' items in " << channel_name(channel));
  slot = &part;
}

notice_part* notice_board::part_for(notice_channel channel, notice_item::kind kind) const {
  return parts_[index(channel)][index(kind)];
}

bool notice_board::stale(int from, const notice_item& i) const {
  if (i.what != notice_item::kind::left) return false;
  const std::uint64_t margin = members_.stale_margin();
  return i.round + margin < returned_at_ || (i.rank == rank_ && i.round + margin < members_.joined_from(from));
}

status notice_board::notice(int from, std::span<const std::byte> payload, link_control& links) {
  return dispatch({.from = from, .channel = notice_channel::notice}, payload, links);
}

status notice_board::join_message(int from, std::uint64_t model_size, std::span<const std::byte> payload,
                                  link_control& links) {
  return dispatch({.from = from, .channel = notice_channel::join, .model_size = model_size}, payload, links);
}

// Parses, checks that every item has a part, leaves stale news out, then hands each run of
// consecutive items of one part over, in order.
status notice_board::dispatch(const notice_source& source, std::span<const std::byte> payload, link_control& links) {
  std::vector<notice_item> items;
  if (status s = parse_notice(payload, n_, items); !s) return s;
  for (const notice_item& i : items)
    if (part_for(source.channel, i.what) == nullptr)
      return status::error(errc::corrupt, std::string("a '") + std::string(notice_word(i.what)) + "' item in " +
                                              channel_name(source.channel) + " from rank " +
                                              std::to_string(source.from) + ", where it has no meaning");
  if (source.channel == notice_channel::notice)
    std::erase_if(items, [&](const notice_item& i) { return stale(source.from, i); });
  for (std::size_t begin = 0; begin < items.size();) {
    notice_part* part = part_for(source.channel, items[begin].what);
    std::size_t end = begin + 1;
    while (end < items.size() && part_for(source.channel, items[end].what) == part) ++end;
    if (status s = part->on_items(source, std::span(items).subspan(begin, end - begin), links); !s) return s;
    begin = end;
  }
  return status::ok();
}

}  // namespace qgossip
