#pragma once
// A node's checkpoint directory (docs/checkpoints.md): complete checkpoints are `ckpt-<round>.bin`,
// one being written is `ckpt-<round>.tmp`. write_checkpoint is atomic against a kill at any moment:
//
//   1. write ckpt-<round>.tmp, fsync it      a kill here leaves a .tmp, which every reader ignores
//   2. rename it to ckpt-<round>.bin          atomic: the .bin is either absent or complete
//   3. fsync the directory                    the rename survives a power cut
//   4. delete older checkpoints but the `keep - 1` newest, every .bin of a LATER round (left by a
//      run that was resumed from an earlier one) and every other .tmp
//
// so the previous checkpoint stays until the new one is complete. Reading trusts nothing: a file is
// valid when its name, header (run id, rank, round = the name's) and CRC32C agree; anything else is
// skipped with its path and reason. The launcher resumes from the newest round that every node has
// (newest_common_round over each node's list_checkpoints), so `keep` must cover how far apart the
// nodes' newest checkpoints can be (see docs/checkpoints.md).
// Thread safety: none; one writer per directory (each node has its own).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "node/checkpoint/checkpoint_file.hpp"

namespace qgossip {

// dir / "ckpt-<round>.bin".
[[nodiscard]] std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::uint64_t round);

// The round in a checkpoint file name: "ckpt-12.bin" -> 12 (temporary = false), "ckpt-12.tmp" -> 12
// (temporary = true); nullopt for any other name (leading zeros, signs and overflow included).
struct checkpoint_name {
  std::uint64_t round = 0;
  bool temporary = false;
};
[[nodiscard]] std::optional<checkpoint_name> parse_checkpoint_name(std::string_view filename);

enum class checkpoint_write_stage {
  temporary_synced,  // step 1 done: ckpt-<round>.tmp written and fsynced
  renamed,           // step 2 done
  directory_synced,  // step 3 done; pruning follows
};

struct checkpoint_write_options {
  // Complete checkpoints left after a write, the new one included; >= 1 (QG_ENFORCE). 2 keeps the
  // previous one, which the launcher needs when a node died while others finished the same round.
  std::size_t keep = 2;
  // Test knob: called after each stage; a test throws from it to stop a write there.
  std::function<void(checkpoint_write_stage)> after_stage_for_testing = {};
};

// Writes ck into dir (created if missing) as above. Returns errc::io naming the path and the
// system's reason (disk full, permissions) when a step fails; a failed write leaves the earlier
// checkpoints as they were (and at most a .tmp, ignored by readers and removed by the next write).
status write_checkpoint(const std::filesystem::path& dir, const checkpoint& ck,
                        const checkpoint_write_options& options = {});

// What a checkpoint must match to be loaded by this node (nullopt: anything).
struct checkpoint_identity {
  std::optional<std::uint64_t> run_id;
  std::optional<std::uint32_t> rank;
};

struct checkpoint_listing {
  std::vector<std::uint64_t> rounds;  // rounds with a valid checkpoint, ascending
  std::vector<std::string> skipped;   // "<path>: <reason>" for every other ckpt-* file, .tmp included
};

// Reads and validates every ckpt-* file of dir. A missing directory lists nothing.
[[nodiscard]] checkpoint_listing list_checkpoints(const std::filesystem::path& dir, const checkpoint_identity& expect);

// Reads and validates one file. Throws state_error "<file>: <what is wrong>" (unreadable, corrupt,
// another run or rank, a round other than its name's).
[[nodiscard]] checkpoint read_checkpoint(const std::filesystem::path& file, const checkpoint_identity& expect);

// The newest valid checkpoint of dir, or nullopt when there is none. Files skipped on the way
// (newer but invalid) are appended to *skipped as "<path>: <reason>" when skipped is not null.
[[nodiscard]] std::optional<checkpoint> read_newest_checkpoint(const std::filesystem::path& dir,
                                                               const checkpoint_identity& expect,
                                                               std::vector<std::string>* skipped = nullptr);

// The newest round present in every node's list (each ascending or not), or nullopt when the
// lists share none (or there are no lists).
[[nodiscard]] std::optional<std::uint64_t> newest_common_round(std::span<const std::vector<std::uint64_t>> rounds);

}  // namespace qgossip
