// `qgossip checkpoints`: the rounds of which one rank has a valid checkpoint on this host
// (docs/checkpoints.md). On several hosts with no shared file system a job cannot read every rank's
// checkpoint folder; configs/slurm/train.sbatch runs this in every task and resumes from the newest
// round all of them list (`qgossip run --resume --resume-round R`).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/checkpoint/checkpoint_store.hpp"
#include "node/cli/commands.hpp"
#include "node/config/config.hpp"
#include "node/config/slurm_step.hpp"
#include "node/run/resume.hpp"

namespace qgossip {

void add_checkpoints_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("checkpoints", "List the rounds of which a rank has a valid checkpoint here");
  cmd->footer(
      "Prints one line, '<rank>: <round> <round> ...' (ascending; nothing after the colon when there is none),\n"
      "for the checkpoints of this run and rank in runs/<name>/checkpoints/node-<rank> that read back whole\n"
      "(the others are named on stderr). The rank comes from --rank, else SLURM_PROCID: under srun every task\n"
      "prints its own, and the newest round on every line is where the run can resume\n"
      "(`qgossip run --resume --resume-round R`). Example: srun qgossip checkpoints --config RUN.yaml");
  struct options {
    std::string config;
    std::vector<std::string> sets;
    int rank = -1;
  };
  auto opt = std::make_shared<options>();
  cmd->add_option("--config", opt->config, "Run YAML")->required();
  cmd->add_option("--set", opt->sets, "Override a config value, as the run does");
  cmd->add_option("--rank", opt->rank, "The rank (default: SLURM_PROCID)")->check(CLI::NonNegativeNumber);
  cmd->callback([opt, exit_code] {
    const run_config c = load_run_config(opt->config, opt->sets);
    long long rank = opt->rank;
    if (rank < 0) {
      const std::optional<long long> slurm = slurm_procid(process_environment());
      if (!slurm) throw config_error("no rank: give --rank, or run it under srun (SLURM_PROCID)");
      rank = *slurm;
    }
    if (rank < 0 || rank >= c.topology.n)
      throw config_error("rank " + std::to_string(rank) + ": the topology's ranks are 0.." + std::to_string(c.topology.n - 1));
    const checkpoint_listing found = list_checkpoints(
        checkpoint_dir(c, rank), {.run_id = c.run_id, .rank = static_cast<std::uint32_t>(rank)});
    for (const std::string& skipped : found.skipped) std::fprintf(stderr, "skipped: %s\n", skipped.c_str());
    std::printf("%lld:", rank);
    for (const std::uint64_t round : found.rounds) std::printf(" %llu", static_cast<unsigned long long>(round));
    std::printf("\n");
    *exit_code = 0;
  });
}

}  // namespace qgossip
