// qgossip: a peer node for decentralized, communication-compressed training.
// Exit codes: 0 success, 1 a run-time failure, 2 bad input (config, files, arguments),
// 3 the model diverged, 130 interrupted.
#include <cstdio>
#include <exception>
#include <new>

#include <CLI/CLI.hpp>

#include "core/errors.hpp"
#include "node/cli/commands.hpp"
#include "qgossip/build_config.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "qgossip " QGOSSIP_VERSION " - decentralized training with compressed gossip (D-PSGD, DCD-PSGD, ECD-PSGD)\n"
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
  qgossip::add_shards_command(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
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
