#include "node/log/program_metrics.hpp"

#include <algorithm>
#include <utility>

#include "core/errors.hpp"
#include "node/log/run_log.hpp"

namespace qgossip {

namespace {

bool is_identifier(const std::string& s) {
  const auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  return !s.empty() && s.size() <= 64 && alpha(s[0]) &&
         std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

}  // namespace

void program_metrics::add(const std::string& name, double value) {
  const auto at = std::find(names_.begin(), names_.end(), name);
  if (at != names_.end()) {
    sum& s = sums_[static_cast<std::size_t>(at - names_.begin())];
    s.total += value;
    ++s.count;
    return;
  }
  if (!is_identifier(name))
    throw config_error("log: metric name '" + name + "' must be letters, digits and _ (not first), at most 64");
  if (is_node_log_key(name))
    throw config_error("log: metric name '" + name + "' is one of the node's own columns or summary keys; " +
                       "name it otherwise (e.g. my_" + name + ")");
  if (fixed_)
    throw config_error("log: metric '" + name + "' was first logged after the node's CSV began (its columns " +
                       "are fixed at the first row); log every metric from the first round on");
  names_.push_back(name);
  sums_.push_back({value, 1});
  last_.emplace_back();
}

void program_metrics::resume(std::vector<std::string> names) {
  names_ = std::move(names);
  sums_.assign(names_.size(), {});
  last_.assign(names_.size(), std::nullopt);
  fixed_ = true;
}

void program_metrics::save_state(state_writer& out) const {
  out.put_u64("count", names_.size());
  for (std::size_t i = 0; i < names_.size(); ++i) {
    out.put_string("name", names_[i]);
    out.put_f64("total", sums_[i].total);
    out.put_u64("values", sums_[i].count);
    out.put_bool("last_set", last_[i].has_value());
    out.put_f64("last", last_[i].value_or(0.0));
  }
}

void program_metrics::load_state(state_reader& in) {
  const std::uint64_t count = in.get_u64("count");
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::string name = in.get_string("name");
    const auto i = static_cast<std::size_t>(std::find(names_.begin(), names_.end(), name) - names_.begin());
    if (i == names_.size()) {  // a name the CSV has no column for
      if (fixed_) in.fail("metric '" + name + "' is not a column of the node's CSV");
      names_.push_back(name);  // it had no row yet: the columns are still open
      sums_.emplace_back();
      last_.emplace_back();
    }
    sums_[i].total = in.get_f64("total");
    sums_[i].count = in.get_u64("values");
    const bool set = in.get_bool("last_set");
    const double last = in.get_f64("last");
    last_[i] = set ? std::optional(last) : std::nullopt;
  }
}

void program_metrics::take_means(std::vector<std::optional<double>>& means) {
  means.assign(names_.size(), std::nullopt);
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (sums_[i].count == 0) continue;
    means[i] = sums_[i].total / static_cast<double>(sums_[i].count);
    last_[i] = means[i];
    sums_[i] = {};
  }
}

}  // namespace qgossip
