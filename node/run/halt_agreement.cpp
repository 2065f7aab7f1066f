#include "node/run/halt_agreement.hpp"

#include <string>

#include "node/run/run_control.hpp"  // say()

namespace qgossip {

halt_agreement::halt_agreement(int rank, const membership& members, departures& news, notice_board& board)
    : rank_(rank), members_(members), news_(news) {
  board.handle(notice_channel::notice, notice_item::kind::halt, *this);
}

status halt_agreement::on_items(const notice_source& source, std::span<const notice_item> items, link_control& links) {
  for (const notice_item& i : items) take(i.round, source.from, links);
  return status::ok();
}

void halt_agreement::signal(std::uint64_t t, std::uint64_t margin, link_control& links) {
  int proposer = 0;  // the lowest live rank (departed() is false past the last rank)
  while (members_.departed(proposer)) ++proposer;
  if (proposer != rank_ || halt_round_) return;
  take(t + margin, rank_, links);
}

void halt_agreement::take(std::uint64_t round, int told_by, link_control& links) {
  if (halt_round_ && round <= *halt_round_) return;
  halt_round_ = round;
  const notice_item halt{.what = notice_item::kind::halt, .round = round};
  news_.tell(std::span(&halt, 1), links, {told_by});
  say(rank_, "stopping after round " + std::to_string(round) + " with a checkpoint, for a time limit (" +
                 (told_by == rank_ ? std::string("SIGUSR1 here") : "as rank " + std::to_string(told_by) + " says") +
                 ")");
}

}  // namespace qgossip
