#pragma once
// The `qgossip` subcommands. Each add_* registers its options on the app and a callback that
// stores its exit code in *exit_code. main() runs the parser and prints config_errors.
#include <CLI/CLI.hpp>

namespace qgossip {

void add_run_command(CLI::App& app, int* exit_code);       // one node
void add_launch_command(CLI::App& app, int* exit_code);    // all nodes of a topology on this host
void add_topology_command(CLI::App& app, int* exit_code);  // validate a topology and report rho
void add_plot_command(CLI::App& app, int* exit_code);      // PNG figures from run directories
void add_verify_command(CLI::App& app, int* exit_code);    // replicas/estimates equal their owners
void add_codec_command(CLI::App& app, int* exit_code);     // measure a codec; write/read its payload
void add_logs_command(CLI::App& app, int* exit_code);      // per-node table, spread and warnings of a run
void add_keys_command(CLI::App& app, int* exit_code);      // CURVE keypairs of a run's nodes
void add_shards_command(CLI::App& app, int* exit_code);    // every rank's shard and batch order as .npy
void add_checkpoints_command(CLI::App& app, int* exit_code);  // a rank's valid checkpoint rounds here
void add_group_exec_command(CLI::App& app, int* exit_code);  // one --exec node of several processes (hidden)

}  // namespace qgossip
