// qgossip: a peer node for decentralized, communication-compressed training.
// Exit codes: 0 success, 1 a run-time failure, 2 bad input (config, files, arguments),
// 3 the model diverged, 130 interrupted.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/closest_match.hpp"
#include "core/errors.hpp"
#include "node/cli/commands.hpp"
#include "node/config/config.hpp"
#include "qgossip/build_config.hpp"

namespace {

// `qgossip lauch`: CLI11 would say only "A subcommand is required". Prints what the word is not and
// what it may have meant; false when argv[1] is a command or an option.
bool unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), argv[1]) != names.end()) return false;
  const std::string hint = qgossip::closest_match(argv[1], names);
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "qgossip: error: unknown command '%s'%s; the commands: %s (qgossip --help)\n", argv[1],
               hint.empty() ? "" : (" (did you mean '" + hint + "'?)").c_str(), all.c_str());
  return true;
}

// After CLI11's own message: an option that names a config key (`--epochs 2`) is what --set is for.
void hint_set_for_config_keys(int argc, char** argv) {
  const std::vector<std::string> keys = qgossip::config_key_paths();
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i], value = "VALUE";
    if (!name.starts_with("--") || name.size() < 3) continue;
    name.erase(0, 2);
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.erase(eq);
    } else if (i + 1 < argc && argv[i + 1][0] != '-') {
      value = argv[i + 1];
    }
    std::replace(name.begin(), name.end(), '-', '_');
    for (const std::string& key : keys)
      if (key == name || key.ends_with("." + name)) {
        std::fprintf(stderr, "qgossip: '--%s' is a config key, not an option: set it with --set %s=%s\n",
                     argv[i] + 2, key.c_str(), value.c_str());
        return;
      }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "qgossip " QGOSSIP_VERSION " - decentralized training with compressed gossip (D-PSGD, DCD-PSGD, ECD-PSGD,\n"
      "CHOCO-SGD; the centralized all-reduce and all-gather baselines)\n"
      "over ZeroMQ. Start with: qgossip launch configs/demo.yaml"};
  app.require_subcommand(1);
  app.set_version_flag("--version", QGOSSIP_VERSION);
  int exit_code = 0;
  qgossip::add_run_command(app, &exit_code);
  qgossip::add_launch_command(app, &exit_code);
  qgossip::add_topology_command(app, &exit_code);
  qgossip::add_plot_command(app, &exit_code);
  qgossip::add_verify_command(app, &exit_code);
  qgossip::add_codec_command(app, &exit_code);
  qgossip::add_logs_command(app, &exit_code);
  qgossip::add_keys_command(app, &exit_code);
  qgossip::add_checkpoints_command(app, &exit_code);
  qgossip::add_shards_command(app, &exit_code);
  qgossip::add_group_exec_command(app, &exit_code);
  if (unknown_command(app, argc, argv)) return 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    if (code != 0) hint_set_for_config_keys(argc, argv);
    return code == 0 ? 0 : 2;
  } catch (const qgossip::config_error& e) {
    std::fprintf(stderr, "qgossip: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // The node's start-up names what it was allocating (node/run/node_setup.cpp); anything else
    // still says what happened rather than a bare "std::bad_alloc".
    std::fprintf(stderr, "qgossip: error: out of memory (an allocation failed; %s)\n",
                 "a model, data set or topology larger than this host can hold?");
    return 1;
  } catch (const qgossip::invariant_error& e) {
    std::fprintf(stderr, "qgossip: internal error (a bug, please report it): %s\n", e.what());
    return 70;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qgossip: error: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
