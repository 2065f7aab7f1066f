#include "node/config/slurm_step.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/errors.hpp"

namespace qgossip {

namespace {

// A whole number of at most 18 digits (no sign, no spaces), or nullopt.
std::optional<std::int64_t> parse_count(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::int64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return std::nullopt;
    v = v * 10 + (ch - '0');
  }
  return v;
}

// Splits at the commas that are outside brackets.
std::vector<std::string_view> split_top_level(std::string_view list) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      out.push_back(list.substr(start, i - start));
      start = i + 1;
    } else if (list[i] == '[') {
      ++depth;
    } else if (list[i] == ']') {
      --depth;
    }
  }
  return out;
}

// The numbers of one bracket group ("01-03,07" -> 01 02 03 07), each padded to the width of its
// range's lower end.
std::vector<std::string> expand_group(std::string_view group, const std::string& bad) {
  std::vector<std::string> out;
  for (std::string_view range : split_top_level(group)) {
    const std::size_t dash = range.find('-');
    const std::string_view lo_text = range.substr(0, dash);
    const std::string_view hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
    const auto lo = parse_count(lo_text), hi = parse_count(hi_text);
    if (!lo || !hi) throw config_error(bad + "'[" + std::string(group) + "]' holds '" + std::string(range) +
                                       "', not a number or a range of numbers (lo-hi)");
    if (*hi < *lo) throw config_error(bad + "the range " + std::string(range) + " runs down");
    if (*hi - *lo >= kMaxSlurmHosts)
      throw config_error(bad + "the range " + std::string(range) + " has more than " +
                         std::to_string(kMaxSlurmHosts) + " numbers");
    for (std::int64_t v = *lo; v <= *hi; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < lo_text.size()) digits.insert(0, lo_text.size() - digits.size(), '0');
      out.push_back(std::move(digits));
    }
  }
  return out;
}

// One name of the list, with its bracket groups expanded (the first group varying slowest).
void expand_name(std::string_view name, const std::string& bad, std::vector<std::string>& out) {
  std::vector<std::string> names{""};
  std::size_t i = 0;
  while (i < name.size()) {
    const std::size_t open = name.find('[', i);
    const std::size_t close = name.find(']', i);
    if (close < open) throw config_error(bad + "a ']' closes no '['");
    for (auto& n : names) n += name.substr(i, open - i);
    if (open == std::string_view::npos) break;
    if (close == std::string_view::npos) throw config_error(bad + "a '[' is not closed");
    const std::string_view group = name.substr(open + 1, close - open - 1);
    if (group.find('[') != std::string_view::npos) throw config_error(bad + "brackets do not nest");
    const std::vector<std::string> numbers = expand_group(group, bad);
    if (static_cast<std::int64_t>(names.size() * numbers.size()) + static_cast<std::int64_t>(out.size()) >
        kMaxSlurmHosts)
      throw config_error(bad + "it names more than " + std::to_string(kMaxSlurmHosts) + " hosts");
    std::vector<std::string> longer;
    for (const auto& n : names)
      for (const auto& v : numbers) longer.push_back(n + v);
    names = std::move(longer);
    i = close + 1;
  }
  out.insert(out.end(), names.begin(), names.end());
}

// "SLURM_STEP_NODELIST" when it is set, else the fallback when that is; nullopt when neither is.
struct variable {
  std::string name;
  std::string value;
};
std::optional<variable> first_set(const env_lookup& env, const std::string& name, const std::string& fallback) {
  if (auto v = env(name)) return variable{name, *v};
  if (auto v = env(fallback)) return variable{fallback, *v};
  return std::nullopt;
}

// Block is what the placement assumes. Cyclic and plane place the same way on one node, or when no
// node runs two tasks (task t on node t). Anything else (arbitrary: a host file) is refused.
void check_distribution(const env_lookup& env, const std::vector<int>& tasks_per_node) {
  const auto dist = env("SLURM_DISTRIBUTION");
  if (!dist) return;  // srun's default: block when there are more tasks than nodes
  const std::string across_nodes = dist->substr(0, dist->find_first_of(":,"));
  if (across_nodes == "block") return;
  const bool same = tasks_per_node.size() == 1 ||
                    std::all_of(tasks_per_node.begin(), tasks_per_node.end(), [](int k) { return k <= 1; });
  if (same && (across_nodes == "cyclic" || across_nodes == "plane")) return;
  throw config_error("{from: slurm} places tasks in blocks (consecutive ranks on one node), but SLURM_DISTRIBUTION=" +
                     *dist + ": run srun with --distribution=block, or list the hosts under nodes");
}

// The step's task count, which must be the sum of its tasks per node and the topology's n.
void check_task_count(const env_lookup& env, std::int64_t placed, const variable& counts, int n, int group_size) {
  const auto count = first_set(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS");
  const std::string named = count ? count->name + "=" + count->value : counts.name + "=" + counts.value;
  std::int64_t tasks = placed;
  if (count) {
    const auto parsed = parse_count(count->value);
    if (!parsed) throw config_error(count->name + "='" + count->value + "' is not a number of tasks");
    if (*parsed != placed)
      throw config_error(named + " but " + counts.name + "=" + counts.value + " places " + std::to_string(placed) +
                         " tasks");
    tasks = *parsed;
  }
  const std::int64_t wanted = std::int64_t{n} * group_size;
  if (tasks == wanted) return;
  const std::string runs = "the step runs " + std::to_string(tasks) + " tasks (" + named +
                           ") but the topology has n = " + std::to_string(n) + " nodes";
  if (group_size == 1)
    throw config_error(runs + "; {from: slurm} needs one task per rank: srun -n " + std::to_string(n));
  throw config_error(runs + " of topology.group_size = " + std::to_string(group_size) +
                     " tasks; {from: slurm} needs srun -n " + std::to_string(wanted));
}

}  // namespace

env_lookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::optional<long long> slurm_procid(const env_lookup& env) {
  const std::optional<std::string> text = env("SLURM_PROCID");
  if (!text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long rank = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno == ERANGE)
    throw config_error("SLURM_PROCID='" + *text + "' is not a rank (a whole number)");
  return rank;
}

std::vector<std::string> expand_hostlist(std::string_view list) {
  const std::string bad = "host list '" + std::string(list) + "': ";
  std::vector<std::string> out;
  for (std::string_view name : split_top_level(list)) {
    if (name.empty()) throw config_error(bad + "an empty host name");
    expand_name(name, bad, out);
  }
  return out;
}

std::vector<int> expand_tasks_per_node(std::string_view counts) {
  std::vector<int> out;
  for (std::string_view entry : split_top_level(counts)) {
    const std::string bad = "tasks per node '" + std::string(counts) + "': '" + std::string(entry) +
                            "' is not a count (2) or a repeated count (2(x3))";
    const std::size_t paren = entry.find("(x");
    const auto count = parse_count(entry.substr(0, paren));
    std::optional<std::int64_t> times = 1;
    if (paren != std::string_view::npos)
      times = entry.back() == ')' ? parse_count(entry.substr(paren + 2, entry.size() - paren - 3)) : std::nullopt;
    if (!count || !times || *count < 1 || *times < 1) throw config_error(bad);
    if (*count > kMaxSlurmHosts || *times > kMaxSlurmHosts - static_cast<std::int64_t>(out.size()))
      throw config_error("tasks per node '" + std::string(counts) + "': more than " + std::to_string(kMaxSlurmHosts) +
                         " nodes or tasks");
    out.insert(out.end(), static_cast<std::size_t>(*times), static_cast<int>(*count));
  }
  return out;
}

std::vector<std::string> block_task_hosts(const std::vector<std::string>& hosts, const std::vector<int>& tasks_per_node) {
  if (hosts.size() != tasks_per_node.size())
    throw config_error("the node list names " + std::to_string(hosts.size()) + " hosts but the tasks per node count " +
                       std::to_string(tasks_per_node.size()));
  std::vector<std::string> out;
  for (std::size_t h = 0; h < hosts.size(); ++h) out.insert(out.end(), static_cast<std::size_t>(tasks_per_node[h]), hosts[h]);
  return out;
}

slurm_placement slurm_step_placement(const env_lookup& env, int n, int group_size) {
  auto missing = [](const std::string& name, const std::string& fallback) {
    return config_error("{from: slurm} needs " + name + ", which is not set: run under srun (or in a job, which sets " +
                        fallback + ")");
  };
  const auto list = first_set(env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST");
  if (!list) throw missing("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST");
  const auto counts = first_set(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE");
  if (!counts) throw missing("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE");
  const std::vector<std::string> hosts = expand_hostlist(list->value);
  const std::vector<int> per_node = expand_tasks_per_node(counts->value);
  if (hosts.size() != per_node.size())
    throw config_error(list->name + "=" + list->value + " names " + std::to_string(hosts.size()) + " hosts but " +
                       counts->name + "=" + counts->value + " counts the tasks of " + std::to_string(per_node.size()));
  check_distribution(env, per_node);
  slurm_placement p;
  p.task_hosts = block_task_hosts(hosts, per_node);
  check_task_count(env, static_cast<std::int64_t>(p.task_hosts.size()), *counts, n, group_size);
  p.source = list->name + "=" + list->value + ", " + counts->name + "=" + counts->value;
  return p;
}

}  // namespace qgossip
