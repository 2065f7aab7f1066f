#include "node/run/start_check.hpp"

#include <string>

#include "core/hash.hpp"

namespace qgossip {

start_check::start_check(departures& news, notice_board& board) : news_(news) {
  board.handle(notice_channel::notice, notice_item::kind::start, *this);
}

void start_check::announce(std::span<const float> model, link_control& links) {
  start_ = notice_item{.what = notice_item::kind::start, .size = model.size(), .hash = hash64(model)};
  news_.tell(std::span(&*start_, 1), links);
}

status start_check::on_items(const notice_source& source, std::span<const notice_item> items, link_control&) {
  if (!start_) return status::ok();  // this node did not start afresh (resumed, rejoining): nothing to compare
  const std::string who = "rank " + std::to_string(source.from);
  for (const notice_item& i : items) {
    if (i.size != start_->size)
      return status::error(errc::refused, who + " starts from a model of " + std::to_string(i.size) +
                                              " values where this node's has " + std::to_string(start_->size));
    if (i.hash != start_->hash)
      return status::error(errc::refused, who + " starts from another model (hash " + hex64(i.hash) +
                                              "; this node's is " + hex64(start_->hash) +
                                              "): every node must start from the same values (seed the model's "
                                              "initialization the same on every node; the same model file on "
                                              "every host)");
  }
  return status::ok();
}

}  // namespace qgossip
