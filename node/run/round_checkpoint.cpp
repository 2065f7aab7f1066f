// round_steps' checkpoint step and its inverse (docs/checkpoints.md, "A node's checkpoint"): the
// sections a node writes after round t and loads to continue with round t + 1.
#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "node/checkpoint/checkpoint_store.hpp"
#include "node/run/node_setup.hpp"
#include "node/run/resume.hpp"
#include "node/run/round_steps.hpp"

namespace qgossip {

namespace {

void put_optional(state_writer& out, std::string_view name, const std::optional<double>& v) {
  out.put_bool(std::string(name) + "_set", v.has_value());
  out.put_f64(name, v.value_or(0.0));
}

std::optional<double> get_optional(state_reader& in, std::string_view name) {
  const bool set = in.get_bool(std::string(name) + "_set");
  const double v = in.get_f64(name);
  return set ? std::optional(v) : std::nullopt;
}

std::int64_t ns(std::chrono::nanoseconds d) { return static_cast<std::int64_t>(d.count()); }

}  // namespace

// The loop's own counters: what the next CSV rows and the summary continue from. The exchange's
// and the model's counters are saved as totals (this process's plus those carried in).
void round_steps::save_round(state_writer& out) const {
  out.put_u64("completed", completed_);
  training_.save_counters(out);
  out.put_f64("compute_s", compute_s_);
  out.put_f64("codec_s", codec_s_);
  out.put_f64("wall_s", wall_s());
  out.put_u64("row_iteration", rec_.iteration);
  out.put_f64("row_epoch", rec_.epoch);
  out.put_f64("row_wall_s", rec_.wall_s);
  out.put_f64("row_lr", rec_.lr);
  out.put_f64("row_train_loss", rec_.train_loss);
  put_optional(out, "row_test_loss", rec_.test_loss);
  put_optional(out, "row_test_acc", rec_.test_acc);
  traffic().save_state(out);
  out.put_i64("probe_comm_ns", ns(probe_.comm_time() + carried_.probe_comm));
  const transfer_stats transfers = s_.learner.model->transfers();
  out.put_f64("transfer_s", transfers.seconds + carried_.transfers.seconds);
  out.put_u64("transfer_bytes", transfers.bytes + carried_.transfers.bytes);
}

void round_steps::load_round(state_reader& in) {
  completed_ = in.get_u64("completed");
  training_.load_counters(in);
  compute_s_ = in.get_f64("compute_s");
  codec_s_ = in.get_f64("codec_s");
  carried_.wall_s = in.get_f64("wall_s");
  rec_.iteration = in.get_u64("row_iteration");
  rec_.epoch = in.get_f64("row_epoch");
  rec_.wall_s = in.get_f64("row_wall_s");
  rec_.lr = in.get_f64("row_lr");
  rec_.train_loss = in.get_f64("row_train_loss");
  rec_.test_loss = get_optional(in, "row_test_loss");
  rec_.test_acc = get_optional(in, "row_test_acc");
  carried_.traffic.load_state(in);
  carried_.probe_comm = std::chrono::nanoseconds(in.get_i64("probe_comm_ns"));
  carried_.transfers.seconds = in.get_f64("transfer_s");
  carried_.transfers.bytes = in.get_u64("transfer_bytes");
}

namespace {

void add_section(qgossip::checkpoint& ck, std::string_view name, const std::function<void(state_writer&)>& save) {
  state_writer out;
  save(out);
  ck.add(std::string(name), std::move(out));
}

}  // namespace

qgossip::checkpoint round_steps::snapshot(std::uint64_t t) const {
  qgossip::checkpoint ck;
  ck.run_id = s_.config.run_id;
  ck.rank = static_cast<std::uint32_t>(s_.rank);
  ck.round = t;
  add_section(ck, "round", [&](state_writer& out) { save_round(out); });
  add_section(ck, "algorithm", [&](state_writer& out) { s_.learner.alg->save_state(out); });
  add_section(ck, "compressor", [&](state_writer& out) { s_.learner.codec->save_state(out); });
  if (s_.plan.sampler)  // none with a program's model: the program draws its own batches
    add_section(ck, "sampler", [&](state_writer& out) { s_.plan.sampler->save_state(out); });
  state_writer local, outer;
  training_.save_steps(local, outer);
  ck.add("local_step", std::move(local));
  ck.add("outer_step", std::move(outer));
  add_section(ck, "membership", [&](state_writer& out) { s_.links.membership->left.save_state(out); });
  if (!metrics_.names().empty())  // a program's own metrics (node.log(name=…))
    add_section(ck, "metrics", [&](state_writer& out) { metrics_.save_state(out); });
  add_csv_bytes(ck, s_.log->sync_csv());  // the rows so far are on the disk before the checkpoint is
  return ck;
}

step_end round_steps::checkpoint(std::uint64_t t) {
  if (!checkpoint_due(t)) return {};
  const auto start = clock::now();
  qgossip::checkpoint ck;
  try {
    ck = snapshot(t);
  } catch (const config_error& e) {
    return {node_exit::failed, "round " + std::to_string(t) + ": checkpoint: " + e.what()};
  }
  checkpoint_write_options options{.keep = s_.checkpoints.keep};
  if (s_.checkpoints.pause.count() > 0)
    options.after_stage_for_testing = [pause = s_.checkpoints.pause](checkpoint_write_stage stage) {
      if (stage == checkpoint_write_stage::temporary_synced) std::this_thread::sleep_for(pause);
    };
  if (status st = write_checkpoint(s_.checkpoints.dir, ck, options); !st)
    return {node_exit::failed, "round " + std::to_string(t) + ": checkpoint: " + st.to_string()};
  say(s_.rank, "checkpoint of round " + std::to_string(t) + " written (" +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start).count()) +
                   " ms)");
  return {};
}

std::uint64_t round_steps::restore(const qgossip::checkpoint& ck, const std::string& origin) {
  auto load = [&](std::string_view section, auto&& fn) {
    state_reader in = ck.reader(section, origin);
    fn(in);
    in.expect_end();
  };
  load("round", [&](state_reader& in) { load_round(in); });
  if (completed_ != ck.round)
    throw state_error(origin + ": section 'round' completed round " + std::to_string(completed_) +
                      ", the header says " + std::to_string(ck.round));
  row_iteration_ = completed_;  // the next row's round rate counts from here
  row_wall_s_ = carried_.wall_s;
  load("algorithm", [&](state_reader& in) { s_.learner.alg->load_state(in); });
  load("compressor", [&](state_reader& in) { s_.learner.codec->load_state(in); });
  if (s_.plan.sampler) load("sampler", [&](state_reader& in) { s_.plan.sampler->load_state(in); });
  if (ck.find("membership"))  // absent in checkpoints written before it existed
    load("membership", [&](state_reader& in) { s_.links.membership->left.load_state(in, *s_.links.ex); });
  if (ck.find("metrics")) load("metrics", [&](state_reader& in) { metrics_.load_state(in); });
  state_reader local = ck.reader("local_step", origin), outer = ck.reader("outer_step", origin);
  training_.load_steps(local, outer);
  local.expect_end();
  outer.expect_end();
  // Overlapped, the node's own parameters go on from the checkpoint's model (a program restores
  // its own, which may have moved since the round).
  if (training_.overlapped() && s_.learner.program.empty()) training_.reset_parameters();
  return ck.round;
}

}  // namespace qgossip
