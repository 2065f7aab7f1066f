#include "node/config/churn_file.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "node/config/scenario_list.hpp"

namespace qgossip {

namespace {

churn_event read_event(yaml_reader& e, int n) {
  churn_event ev;
  ev.rank = require_rank(e, n);
  ev.at_s = e.require_double("at_s");
  if (ev.at_s < 0) throw e.error_at(*e.child("at_s"), e.key_path("at_s") + ": expected seconds >= 0 from the launch");
  ev.down_s = e.require_double("down_s");
  if (ev.down_s <= 0) throw e.error_at(*e.child("down_s"), e.key_path("down_s") + ": expected seconds > 0");
  const std::string how = e.get_string("how", "kill");
  if (how != "kill" && how != "stop")
    throw e.error_at(*e.child("how"), e.key_path("how") + ": expected kill or stop, received '" + how + "'");
  ev.how = how == "kill" ? churn_event::kind::kill : churn_event::kind::stop;
  e.finish();
  return ev;
}

}  // namespace

std::vector<churn_event> read_churn(const std::string& path, int n) {
  std::vector<churn_event> out;
  read_scenario_list(path, "churn", "{rank, at_s, down_s, how}", [&](yaml_reader& e, std::size_t i) {
    out.push_back(read_event(e, n));
    for (std::size_t j = 0; j + 1 < out.size(); ++j) {
      const churn_event& a = out[j];
      const churn_event& b = out.back();
      if (a.rank == b.rank && a.at_s < b.at_s + b.down_s && b.at_s < a.at_s + a.down_s)
        throw e.error("churn[" + std::to_string(i) + "]: rank " + std::to_string(b.rank) + " is already down then (churn[" +
                      std::to_string(j) + "])");
    }
  });
  std::stable_sort(out.begin(), out.end(), [](const churn_event& a, const churn_event& b) { return a.at_s < b.at_s; });
  return out;
}

}  // namespace qgossip
