#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/hash.hpp"
#include "node/cli/commands.hpp"
#include "node/cli/host_checks.hpp"
#include "node/config/churn_file.hpp"
#include "node/config/config.hpp"
#include "node/config/hostile_file.hpp"
#include "node/config/topology_builder.hpp"
#include "node/data/load.hpp"
#include "node/launch/launcher.hpp"
#include "node/launch/subprocess.hpp"
#include "node/log/run_dir.hpp"
#include "node/run/node_network.hpp"
#include "node/run/resume.hpp"

namespace qgossip {

namespace {

// The words of --exec-prefix or --exec (`option`) for one node: split at whitespace (no quoting),
// {rank} replaced.
std::vector<std::string> command_words(const std::string& option, const std::string& prefix, int rank) {
  std::vector<std::string> words;
  std::string word;
  auto finish = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    const char ch = prefix[i];
    if (ch == ' ' || ch == '\t' || ch == '\n') {
      finish();
    } else if (ch == '{') {
      const auto close = prefix.find('}', i);
      const std::string name = prefix.substr(i, close == std::string::npos ? std::string::npos : close - i + 1);
      if (name != "{rank}")
        throw config_error(option + " '" + prefix + "': unknown placeholder '" + name + "' (only {rank})");
      word += std::to_string(rank);
      i = close;
    } else {
      word += ch;
    }
  }
  finish();
  return words;
}

// Every node starts here: a host that is not this machine is refused (unless an exec prefix puts the
// nodes where their addresses are, as cluster.sh's namespaces do), and ports in the kernel's
// ephemeral range are warned about.
void check_hosts(const topology_config& t, const std::string& exec_prefix) {
  if (exec_prefix.empty())
    if (const auto foreign = foreign_host(t, is_local_host)) throw config_error(*foreign);
  if (const auto range = ephemeral_port_range_here())
    if (const auto warning = ephemeral_port_warning(t, *range)) std::fprintf(stderr, "%s\n", warning->c_str());
}

// The run's folder, made ready before any node starts: an earlier run of another config under the
// same name moved aside (not on --resume, which continues this run's own), and every node's CURVE
// keypair made (docs/security.md; existing keys are kept).
std::filesystem::path prepare_run_dir(const run_config& c, bool resume) {
  const std::filesystem::path dir = std::filesystem::path(c.output_dir) / c.name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw config_error("cannot create " + dir.string() + ": " + ec.message());
  if (!resume) {
    try {
      if (const auto moved = set_aside_earlier_run(dir, hex64(c.run_id)))
        std::fprintf(stderr, "%s/ held another run (another config named '%s'): moved it to %s/\n", dir.c_str(),
                     c.name.c_str(), moved->c_str());
    } catch (const std::exception& e) {
      throw config_error(dir.string() + " holds another run that cannot be moved aside (" + e.what() +
                         "); give this run another name (--set name=...) or move it yourself");
    }
  }
  if (c.network.security == security_kind::curve) {
    const std::filesystem::path keys = keys_directory(c);
    if (const int made = ensure_run_keys(keys, c.topology.n); made > 0)
      std::fprintf(stderr, "generated %d CURVE keypairs in %s/ (secret keys mode 0600)\n", made, keys.c_str());
  } else {
    std::fprintf(stderr, "warning: network.security is none: links are neither authenticated nor encrypted\n");
  }
  return dir;
}

}  // namespace

int print_replica_check(const std::string& run_dir);  // command_verify.cpp

namespace {

// What `qgossip launch` was asked for.
struct launch_request {
  std::string config;
  std::vector<std::string> sets;
  bool no_plot = false;
  bool plain = false;
  std::string exec_prefix;
  std::string exec;  // a program of the user's in place of `qgossip run` (model.kind external)
  bool resume = false;
  std::string churn;     // --churn: a scenario file, its churn: list only
  std::string scenario;  // --scenario: a scenario file, its churn: and hostile: lists
};

// The scenario file whose churn: list applies (--scenario or --churn; not both).
const std::string& churn_file(const launch_request& opt) {
  if (!opt.churn.empty() && !opt.scenario.empty())
    throw config_error(
        "launch: give --scenario FILE (its churn: and hostile: lists) or --churn FILE, not both");
  return opt.scenario.empty() ? opt.churn : opt.scenario;
}

// The churn's events, checked against the config: churn kills and stops nodes, which needs continue.
std::vector<churn_event> launch_churn(const launch_request& opt, const run_config& c) {
  const std::string& file = churn_file(opt);
  if (file.empty()) return {};
  std::vector<churn_event> churn = read_churn(file, c.topology.n);
  if (!churn.empty() && c.network.on_peer_failure != peer_failure_policy::train_on)
    throw config_error(
        file +
        ": churn kills and stops nodes, which needs network.on_peer_failure: continue "
        "(a node that leaves is trained around and rejoins); add --set network.on_peer_failure=continue");
  return churn;
}

// --scenario's hostile: list, checked against the config before any node starts; each node is then
// given the file and attacks only when its rank is listed (`qgossip run --scenario`).
std::vector<attack_spec> launch_hostile(const launch_request& opt, const run_config& c) {
  if (opt.scenario.empty()) return {};
  std::vector<attack_spec> hostile = read_hostile(opt.scenario, c.topology.n);
  check_hostile(c, hostile, opt.scenario);
  for (const attack_spec& a : hostile)
    std::fprintf(stderr, "hostile (scenario): rank %d attacks: %s\n", a.rank, describe(a).c_str());
  return hostile;
}

// --resume: one round for every node, chosen here from every node's checkpoint directory; the
// arguments that tell each node so.
std::vector<std::string> resume_arguments(const run_config& c) {
  if (c.train.checkpoint_every == 0)
    throw config_error(c.file + ": --resume: train.checkpoint_every is 0, so this run writes no checkpoints");
  std::error_code ec;
  for (int r = 0; r < c.topology.n; ++r) std::filesystem::create_directories(checkpoint_dir(c, r), ec);
  const std::uint64_t round =
      common_resume_round(c, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  std::fprintf(stderr, "resuming every node from round %llu%s\n", static_cast<unsigned long long>(round),
               round == 0 ? " (no round has a checkpoint on every node)" : "");
  return {"--resume", "--resume-round", std::to_string(round)};
}

// Where --exec's program finds the module that belongs to this qgossip, for its PYTHONPATH: the one
// built beside it (build/qgossip: build/python), or, for the qgossip a `pip install` put inside the
// package (site-packages/qgossip/bin/qgossip), that site-packages, ahead of any other. nullopt: none
// (the program finds whatever qgossip its Python has).
std::optional<std::string> module_beside_this_command() {
  namespace fs = std::filesystem;
  const fs::path here = fs::path(self_executable()).parent_path();
  std::error_code ec;
  if (fs::exists(here / "python" / "qgossip" / "__init__.py", ec)) return (here / "python").string();
  if (here.filename() == "bin" && fs::exists(here.parent_path() / "__init__.py", ec))
    return here.parent_path().parent_path().string();
  return std::nullopt;
}

// One `qgossip run` process per rank: behind the exec prefix, with the launch's --set options, one
// GPU each when there are GPUs, stderr into runs/<name>/node-<rank>.log.
std::vector<node_process> node_processes(const launch_request& opt, const run_config& c,
                                         const std::filesystem::path& dir,
                                         const std::vector<std::string>& resume_args, bool hostile) {
  const int gpus = count_local_gpus();
  std::vector<node_process> nodes;
  for (int r = 0; r < c.topology.n; ++r) {
    node_process p;
    p.rank = r;
    p.argv = command_words("--exec-prefix", opt.exec_prefix, r);
    if (opt.exec.empty()) {
      p.argv.insert(p.argv.end(), {self_executable(), "run", "--config", opt.config, "--rank", std::to_string(r)});
      for (const auto& s : opt.sets) p.argv.insert(p.argv.end(), {"--set", s});
      p.argv.insert(p.argv.end(), resume_args.begin(), resume_args.end());
      if (hostile)
        p.argv.insert(p.argv.end(), {"--scenario", std::filesystem::absolute(opt.scenario).string()});
    } else {  // the program's qgossip.Node reads these (docs/python.md)
      const std::vector<std::string> program = command_words("--exec", opt.exec, r);
      if (c.topology.group_size > 1)  // the node is a group: all of it behind the prefix (node/launch/group_exec.hpp)
        p.argv.insert(p.argv.end(), {self_executable(), "group-exec", "--size", std::to_string(c.topology.group_size), "--"});
      p.argv.insert(p.argv.end(), program.begin(), program.end());
      std::string sets;
      for (const auto& s : opt.sets) sets += (sets.empty() ? "" : "\n") + s;
      p.env.insert(p.env.end(), {{"QGOSSIP_RANK", std::to_string(r)},
                                 {"QGOSSIP_CONFIG", std::filesystem::absolute(opt.config).string()},
                                 {"QGOSSIP_SETS", sets},
                                 {"QGOSSIP_PROGRESS", "1"}});
      if (const auto module = module_beside_this_command()) {
        const char* path = std::getenv("PYTHONPATH");
        p.env.emplace_back("PYTHONPATH", path && *path ? *module + ":" + path : *module);
      }
    }
    const int gpu = c.topology.nodes[static_cast<std::size_t>(r)].gpu;
    if (gpus > 0) p.env.emplace_back("CUDA_VISIBLE_DEVICES", std::to_string(gpu >= 0 ? gpu : r % gpus));
    p.stderr_log = (dir / ("node-" + std::to_string(r) + ".log")).string();
    nodes.push_back(std::move(p));
  }
  return nodes;
}

// The launch: everything that can be checked before any process starts, the nodes, then the
// replicas checked (qgossip verify) and the figures drawn. Returns the exit code.
int launch_run(const launch_request& opt) {
  if (!opt.exec.empty()) {
    if (opt.resume)
      throw config_error("--resume: a program's run (--exec) goes on from the state its program saved "
                         "(node.state_dict(), docs/python.md), not from its nodes' checkpoints");
    if (command_words("--exec", opt.exec, 0).empty()) throw config_error("--exec: no program given");
  }
  std::vector<std::string> sets = opt.sets;
  if (!opt.exec.empty()) sets.push_back(kProgramModelSet);  // as the program's nodes will read it
  run_config c = load_run_config(opt.config, sets);
  (void)build_topology(c.topology);
  (void)command_words("--exec-prefix", opt.exec_prefix, 0);  // an unknown placeholder
  if (opt.exec.empty()) check_data_files(c.data);  // before any node starts, not once every node has
  if (const auto group = group_for_run_nodes(c); group && opt.exec.empty()) throw config_error(*group);
  if (c.network.transport == transport_kind::tcp) check_hosts(c.topology, opt.exec_prefix);
  const std::vector<churn_event> churn = launch_churn(opt, c);
  const std::vector<attack_spec> hostile = launch_hostile(opt, c);
  if (!hostile.empty() && !opt.exec.empty())
    throw config_error(opt.scenario +
                       ": a hostile: list is sent by `qgossip run` nodes; --exec runs your program");
  const std::filesystem::path dir = prepare_run_dir(c, opt.resume);
  const std::vector<node_process> nodes = node_processes(
      opt, c, dir, opt.resume ? resume_arguments(c) : std::vector<std::string>{}, !hostile.empty());
  const std::string each = c.topology.group_size > 1 ? " of " + std::to_string(c.topology.group_size) + " processes" : "";
  std::fprintf(stderr, "launching %d nodes%s: %s, %s; logs in %s/\n", c.topology.n, each.c_str(),
               to_text(c.algorithm).c_str(), c.compressor.name.c_str(), dir.c_str());
  // The plotter imports its libraries while the nodes train, and draws once they are done.
  std::unique_ptr<standby_process> plotter;
  const std::string plot_script = opt.no_plot ? std::string() : find_script("plot.py");
  if (!plot_script.empty())
    plotter = std::make_unique<standby_process>(
        std::vector<std::string>{"/usr/bin/python3", plot_script, "--when-told", dir.string()});
  launch_options lo;
  if (opt.plain) lo.live = false;
  lo.continue_on_failure = c.network.on_peer_failure == peer_failure_policy::train_on;
  lo.restart_limit = c.network.restart;
  lo.churn = churn;
  const launch_result result = launch(nodes, lo);
  for (const std::string& d : result.departures) std::fprintf(stderr, "qgossip launch: %s\n", d.c_str());
  if (result.exit_code != 0) {
    std::fprintf(stderr, "qgossip launch: %s (logs: %s/node-<rank>.log)\n", result.failure.c_str(), dir.c_str());
    return result.exit_code;
  }
  if (plotter) plotter->go();  // it draws while the copies are checked
  const int verified = print_replica_check(dir.string());
  int plotted = 0;
  if (!opt.no_plot) {
    plotted = plotter ? plotter->wait() : 1;
    if (plotted != 0) std::fprintf(stderr, "qgossip launch: plotting failed (exit %d)\n", plotted);
  }
  return verified != 0 ? 1 : plotted != 0 ? 1 : 0;
}

}  // namespace

void add_launch_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("launch", "Start every node of a run on this host and show their progress");
  cmd->footer(
      "Starts `qgossip run --config RUN.yaml --rank R` for each rank of the topology, one per GPU\n"
      "(CUDA_VISIBLE_DEVICES) when GPUs are present, shows one live progress line, forwards Ctrl-C, and if a\n"
      "node fails stops the others and names it. Then checks replicas (qgossip verify) and draws the plot.\n"
      "Node logs: runs/<name>/node-<rank>.log (stderr), node-<rank>.csv, node-<rank>.json, run.json.\n"
      "With network.security: curve (the default) it first generates the nodes' missing CURVE keypairs in\n"
      "network.keys_dir (runs/<name>/keys; docs/security.md).\n"
      "--resume continues a run with train.checkpoint_every from the newest round every node has a\n"
      "checkpoint of (docs/checkpoints.md); give the same RUN.yaml and --set options as before.\n"
      "For several hosts, start `qgossip run` on each (ssh or srun) instead: see the README.\n"
      "--exec-prefix runs each node's command line behind a prefix, split at spaces (no quoting) with\n"
      "{rank} replaced by the node's rank: --exec-prefix 'ip netns exec qg{rank}' starts node r in network\n"
      "namespace qg<r> (scripts/cluster.sh; docs/cluster.md), 'taskset -c {rank}' pins node r to core r.\n"
      "The prefix must exec the node (not fork and wait), so that signals and exit codes reach it.\n"
      "--exec 'python3 train.py ...' starts your own program for each rank instead of `qgossip run`, split\n"
      "at spaces with {rank} replaced; its qgossip.Node reads its rank, the run YAML and the --set options\n"
      "from QGOSSIP_RANK, QGOSSIP_CONFIG and QGOSSIP_SETS, and reports progress to the launcher\n"
      "(docs/python.md). The rest is as for `qgossip run` nodes: progress, failures, verify, figures.\n"
      "With topology.group_size G > 1 each node is G copies of the program, all behind the node's prefix,\n"
      "with torchrun's variables for a world of their own (docs/python.md, \"Groups\").");
  auto opt = std::make_shared<launch_request>();
  cmd->add_option("RUN_YAML", opt->config, "Run YAML (e.g. configs/demo.yaml)")->required();
  cmd->add_option("--set", opt->sets, "Override a config value for every node, e.g. --set train.epochs=1");
  cmd->add_flag("--no-plot", opt->no_plot, "Do not draw the PNG figures at the end");
  cmd->add_flag("--plain", opt->plain, "Plain progress lines instead of the live single-line display");
  cmd->add_flag("--resume", opt->resume,
                "Continue the run from the newest round of which every node has a checkpoint "
                "(train.checkpoint_every; the same config and --set options as the stopped launch)");
  cmd->add_option("--exec-prefix", opt->exec_prefix,
                  "Words to put before each node's command, {rank} replaced, e.g. 'ip netns exec qg{rank}'");
  cmd->add_option("--exec", opt->exec,
                  "Your program in place of `qgossip run` for each rank, e.g. 'python3 train.py' (a qgossip.Node "
                  "inside; docs/python.md)");
  cmd->add_option("--churn", opt->churn,
                  "A scenario file whose churn: list ({rank, at_s, down_s, how: kill|stop}) disturbs the nodes "
                  "while they run: killed and started again, or stopped and continued (docs/failures.md, "
                  "\"Churn\"); needs network.on_peer_failure: continue");
  cmd->add_option(
      "--scenario", opt->scenario,
      "A scenario file: its churn: list as --churn, and its hostile: list ({rank, attack, from_round, "
      "...}): those ranks send attacks instead of honest messages (docs/security.md, \"Attacks as "
      "experiment input\"); `qgossip logs` and the figures then report the honest nodes");
  cmd->callback([opt, exit_code] { *exit_code = launch_run(*opt); });
}

}  // namespace qgossip
