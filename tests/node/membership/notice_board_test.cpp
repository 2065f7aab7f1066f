// The notice board (node/membership/notice_board.hpp): items go to the part registered for their kind
// on their channel, each run of one part's consecutive items together and in order; stale news is
// left out before dispatch; an item no part answers refuses the payload whole.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "node/membership/notice_board.hpp"
#include "tests/node/run/recording_links.hpp"
#include "topology/graph.hpp"
#include "topology/topology.hpp"

using namespace qgossip;

namespace {

// Records each run it is handed: (channel, sender, model size, the items' words).
struct recording_part final : notice_part {
  std::vector<std::string> runs;
  status answer = status::ok();
  status on_items(const notice_source& source, std::span<const notice_item> items, link_control&) override {
    std::string run = std::string(source.channel == notice_channel::notice ? "notice" : "join") + " from " +
                      std::to_string(source.from) + " size " + std::to_string(source.model_size) + ":";
    for (const notice_item& i : items) run += " " + std::string(notice_word(i.what));
    runs.push_back(run);
    return answer;
  }
};

struct board_of_ring {
  topology topo = make_topology(qgossip::ring(8), weight_kind::uniform);
  membership members{topo, 4, true};
  notice_board board{4, 8, members};
  qgossip::testing::recording_links links;

  status notice(int from, const std::vector<notice_item>& items) {
    const std::string text = encode_notice(items);
    return board.notice(from, std::as_bytes(std::span(text.data(), text.size())), links);
  }
};

notice_item left_item(int rank, std::uint64_t round) {
  return {.what = notice_item::kind::left, .rank = rank, .round = round, .cause = "its link closed"};
}

}  // namespace

TEST_CASE("notice board: each run of one part's items goes to it together, in the payload's order") {
  board_of_ring b;
  recording_part departures, halts;
  b.board.handle(notice_channel::notice, notice_item::kind::left, departures);
  b.board.handle(notice_channel::notice, notice_item::kind::degree, departures);
  b.board.handle(notice_channel::notice, notice_item::kind::halt, halts);
  REQUIRE(b.notice(3, {left_item(6, 9), {.what = notice_item::kind::degree, .round = 11, .degree = 1},
                       {.what = notice_item::kind::halt, .round = 40}, left_item(7, 9)})
              .is_ok());
  CHECK(departures.runs == std::vector<std::string>{"notice from 3 size 0: left degree", "notice from 3 size 0: left"});
  CHECK(halts.runs == std::vector<std::string>{"notice from 3 size 0: halt"});
}

TEST_CASE("notice board: join messages go to the parts of their own channel, with the sender's model size") {
  board_of_ring b;
  recording_part returns, departures;
  b.board.handle(notice_channel::notice, notice_item::kind::left, departures);
  b.board.handle(notice_channel::join, notice_item::kind::offer, returns);
  b.board.handle(notice_channel::join, notice_item::kind::left, returns);
  const std::string text = encode_notice(std::vector<notice_item>{{.what = notice_item::kind::offer, .round = 5, .degree = 2},
                                                                  left_item(6, 1)});
  REQUIRE(b.board.join_message(3, 101, std::as_bytes(std::span(text.data(), text.size())), b.links).is_ok());
  CHECK(returns.runs == std::vector<std::string>{"join from 3 size 101: offer left"});
  CHECK(departures.runs.empty());  // an offer's left items are the returns part's
}

TEST_CASE("notice board: a left item older than this node's return, or than the sender's, is stale") {
  board_of_ring b;
  recording_part departures;
  b.board.handle(notice_channel::notice, notice_item::kind::left, departures);
  const std::uint64_t margin = b.members.stale_margin();
  b.board.returned(1000);
  REQUIRE(b.notice(3, {left_item(6, 1000 - margin - 1), left_item(6, 1000 - margin)}).is_ok());
  CHECK(departures.runs == std::vector<std::string>{"notice from 3 size 0: left"});
  // The sender's word that it dropped this node, older than the sender's own return.
  b.members.record_departure({.rank = 3, .round = 1500, .cause = "x", .reported_by = 4}, 1502);
  b.members.record_join(3, 2000);
  departures.runs.clear();
  REQUIRE(b.notice(3, {left_item(4, 2000 - margin - 1)}).is_ok());
  CHECK(departures.runs.empty());
  REQUIRE(b.notice(3, {left_item(4, 2000 - margin)}).is_ok());
  CHECK(departures.runs.size() == 1);
}

TEST_CASE("notice board: an item no part answers, or a payload that does not parse, is refused whole") {
  board_of_ring b;
  recording_part departures;
  b.board.handle(notice_channel::notice, notice_item::kind::left, departures);
  const status s = b.notice(3, {left_item(6, 9), {.what = notice_item::kind::join, .round = 2}});
  CHECK(s.code() == errc::corrupt);
  CHECK(s.message() == "a 'join' item in a notice from rank 3, where it has no meaning");
  CHECK(departures.runs.empty());
  const std::string garbage = "left 6 nine its link closed\n";
  CHECK(b.board.notice(3, std::as_bytes(std::span(garbage.data(), garbage.size())), b.links).code() == errc::corrupt);
  CHECK(departures.runs.empty());
}

TEST_CASE("notice board: a part's error ends the dispatch; a kind has one part per channel") {
  board_of_ring b;
  recording_part first, second;
  first.answer = status::error(errc::refused, "no");
  b.board.handle(notice_channel::notice, notice_item::kind::start, first);
  b.board.handle(notice_channel::notice, notice_item::kind::halt, second);
  CHECK(b.notice(3, {{.what = notice_item::kind::start, .size = 1, .hash = 2}, {.what = notice_item::kind::halt, .round = 4}})
            .code() == errc::refused);
  CHECK(second.runs.empty());
  CHECK_THROWS_AS(b.board.handle(notice_channel::notice, notice_item::kind::start, second), invariant_error);
  b.board.handle(notice_channel::join, notice_item::kind::start, second);  // another channel: fine
}
