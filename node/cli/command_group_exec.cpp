// `qgossip group-exec --size G -- PROGRAM...`: one node of `qgossip launch --exec` made of G processes
// (topology.group_size; node/launch/group_exec.hpp). The launcher starts it; it is hidden from --help's
// list of commands, but has its own --help.
#include <memory>
#include <string>
#include <vector>

#include "node/cli/commands.hpp"
#include "node/launch/group_exec.hpp"

namespace qgossip {

void add_group_exec_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("group-exec", "Run one node of `launch --exec` as a group of processes");
  cmd->group("");  // started by `qgossip launch` (topology.group_size > 1), not by hand
  cmd->footer(
      "Starts SIZE copies of PROGRAM with torchrun's variables for a world of their own (RANK and LOCAL_RANK\n"
      "0..SIZE-1, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK 0, MASTER_ADDR 127.0.0.1, a free MASTER_PORT) and\n"
      "QGOSSIP_GROUP_SIZE; copy 0 speaks for the group in the gossip (docs/python.md, \"Groups\"). Ends when\n"
      "all have ended; the first to fail stops the others, and group-exec ends as it did.");
  auto request = std::make_shared<group_request>();
  cmd->add_option("--size", request->size, "Processes in the group")->required()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--grace", request->grace_s, "Seconds the others have to stop after one fails (default 5)")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("PROGRAM", request->program, "The program and its arguments (after --)")->required();
  cmd->callback([request, exit_code] { *exit_code = run_group(*request); });
}

}  // namespace qgossip
