#pragma once
// Where a node's checkpoints live, how many it keeps, and which round a resumed run continues from
// (docs/checkpoints.md). node_setup and the launcher use these; the round loop writes the
// checkpoints (round_steps::checkpoint) and loads one (round_steps::restore).
// Thread safety: plain functions over the file system; one caller per checkpoint directory.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "node/checkpoint/checkpoint_file.hpp"
#include "node/config/config.hpp"

namespace qgossip {

class topology;

// <output_dir>/<name>/checkpoints/node-<rank>.
[[nodiscard]] std::filesystem::path checkpoint_dir(const run_config& c, int rank);

// Checkpoints a node keeps so that the newest round every node has survives any kill: nodes whose
// rounds can differ by `rounds_apart` (the graph diameter; 1 for the centralized algorithms, whose
// every round waits for every node) checkpointing every `every` rounds need 1 + ceil(rounds_apart /
// every); at least 2. REQUIRES: every >= 1.
[[nodiscard]] std::size_t checkpoint_keep(std::uint64_t rounds_apart, std::uint64_t every);

// The newest round of which every rank 0..n-1 has a valid checkpoint of this run in its directory
// (all on this file system, as under `qgossip launch`), or 0 when there is none (the run starts
// afresh). Throws config_error when a rank's directory does not exist (it is on another host: give
// the round with --resume-round) or holds only checkpoints of another run (another config).
// Files skipped on the way (unfinished writes, damaged files) are passed to note, one per line.
[[nodiscard]] std::uint64_t common_resume_round(const run_config& c,
                                                const std::function<void(const std::string&)>& note);

// Deletes dir's checkpoint files (complete or not) of rounds after `round`: a resumed run starts
// its CSV again from the checkpoint of `round`, so later checkpoints would record CSV lengths of
// rows that no longer exist. round 0: every one (a run started afresh). Returns how many it
// deleted; throws config_error when one cannot be deleted.
std::size_t discard_checkpoints_after(const std::filesystem::path& dir, std::uint64_t round);

// The "log" section of a checkpoint: the length of node-<rank>.csv when it was written.
[[nodiscard]] std::uint64_t checkpoint_csv_bytes(const checkpoint& ck, const std::string& origin);
void add_csv_bytes(checkpoint& ck, std::uint64_t csv_bytes);

}  // namespace qgossip
