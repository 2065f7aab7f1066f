// The train: section (node/config/sections.hpp).
#include <cmath>

#include "node/config/config_fields.hpp"
#include "node/config/sections.hpp"

namespace qgossip {

namespace {

void read_schedule(yaml_reader& s, lr_schedule_spec& sc, double epochs) {
  sc.total_epochs = epochs;  // cosine decays over the whole run
  sc.kind = get_choice(s, "kind", sc.kind);
  sc.gamma = get_positive_double(s, "gamma", sc.gamma, 1e-12, 1.0, "the decay factor");
  sc.step_epochs = get_positive_double(s, "step_epochs", sc.step_epochs, 1e-9, 1e6, "the step length in epochs");
  sc.warmup_epochs = get_double_in(s, "warmup_epochs", sc.warmup_epochs, 0.0, 1e6);
  sc.warmup_start = get_double_in(s, "warmup_start", sc.warmup_start, 0.0, 1.0);
  sc.final_factor = get_double_in(s, "final_factor", sc.final_factor, 0.0, 1.0);
  if (sc.kind != lr_kind::cosine && s.has("final_factor"))
    throw s.error("train.schedule.final_factor is only read by kind: cosine");
  if (auto ms = s.child("milestones")) {
    if (!ms->IsSequence()) throw s.error_at(*ms, "train.schedule.milestones: expected a list of epochs");
    for (std::size_t i = 0; i < ms->size(); ++i)
      sc.milestones.push_back(s.to_double((*ms)[i], "train.schedule.milestones[" + std::to_string(i) + "]"));
  }
  try {
    (void)lr_schedule(sc);  // the schedule's own checks (increasing milestones, ...), placed here
  } catch (const config_error& e) {
    throw s.error("train.schedule: " + e.message());
  }
  s.finish();
}

// train.checkpoint_every: a whole number of rounds. Minutes are refused with the reason: every node
// must checkpoint at the same round, and a round count measured from each node's clock is not the
// same on every node (docs/checkpoints.md, "When").
int read_checkpoint_every(yaml_reader& t, int def) {
  if (auto v = t.child("checkpoint_every"); v && v->IsScalar()) {
    const std::string text = v->Scalar();
    if (!text.empty() && (text.back() == 'm' || text.back() == 's' || text.find("min") != std::string::npos))
      throw t.error_at(*v, t.key_path("checkpoint_every") + ": '" + text +
                               "' is a time; give a number of rounds (every node must checkpoint at the same "
                               "round, which a time measured on each node does not give; a round takes about "
                               "wall_s / iteration of an earlier run's node-<rank>.csv)");
  }
  return get_int_in(t, "checkpoint_every", def, 0, 1 << 30);
}

// train.max_staleness: a whole number of rounds >= 0, or `unbounded`.
std::uint64_t read_max_staleness(yaml_reader& t, std::uint64_t def) {
  auto v = t.child("max_staleness");
  if (!v) return def;
  if (v->IsScalar() && v->Scalar() == "unbounded") return kUnboundedStaleness;
  const std::string what = t.key_path("max_staleness") + ": expected a whole number of rounds >= 0 or 'unbounded'";
  if (!v->IsScalar()) throw t.error_at(*v, what);
  const double x = t.to_double(*v, t.key_path("max_staleness"));
  if (x < 0 || x != std::floor(x) || x > 1e9) throw t.error_at(*v, what + ", got " + v->Scalar());
  return static_cast<std::uint64_t>(x);
}

void read_outer(yaml_reader& o, outer_spec& outer) {
  outer.lr = get_positive_double(o, "lr", outer.lr, 1e-12, 1e6, "the outer learning rate");
  outer.momentum = get_double_in(o, "momentum", outer.momentum, 0.0, 0.999999);
  outer.nesterov = o.get_bool("nesterov", outer.nesterov);
  o.finish();
}

}  // namespace

void read_train(yaml_reader& r, run_config& c) {
  auto t = r.map("train");
  if (!t) return;
  train_config& tr = c.train;
  tr.epochs = get_positive_double(*t, "epochs", tr.epochs, 1e-6, 1e6, "the number of epochs");
  tr.batch = get_int_in(*t, "batch", tr.batch, 1, 1 << 20);
  tr.lr.lr = get_positive_double(*t, "lr", tr.lr.lr, 1e-12, 1e6, "the learning rate");
  if (auto s = t->map("schedule")) read_schedule(*s, tr.lr, tr.epochs);
  tr.eval_every = get_double_in(*t, "eval_every", tr.eval_every, 0.0, 1e6);
  tr.eval_examples = get_int_in(*t, "eval_examples", tr.eval_examples, 0, 1 << 30);
  tr.log_every = get_int_in(*t, "log_every", tr.log_every, 1, 1 << 30);
  tr.diverge_loss = get_positive_double(*t, "diverge_loss", tr.diverge_loss, 1e-6, 1e300, "the divergence threshold");
  tr.momentum = get_double_in(*t, "momentum", tr.momentum, 0.0, 0.999999);
  tr.weight_decay = get_double_in(*t, "weight_decay", tr.weight_decay, 0.0, 1e6);
  tr.consensus_every = get_int_in(*t, "consensus_every", tr.consensus_every, 0, 1 << 30);
  tr.local_steps = get_int_in(*t, "local_steps", tr.local_steps, 1, 1 << 20);
  if (auto o = t->map("outer")) read_outer(*o, tr.outer);
  tr.checkpoint_every = read_checkpoint_every(*t, tr.checkpoint_every);
  tr.max_staleness = read_max_staleness(*t, tr.max_staleness);
  tr.overlap = t->get_bool("overlap", tr.overlap);
  t->finish();
}

void emit_train(YAML::Emitter& y, const train_config& tr) {
  y << YAML::BeginMap << YAML::Key << "epochs" << YAML::Value << tr.epochs << YAML::Key << "batch" << YAML::Value
    << tr.batch << YAML::Key << "lr" << YAML::Value << tr.lr.lr;
  y << YAML::Key << "schedule" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "kind" << YAML::Value
    << std::string(name_of(tr.lr.kind)) << YAML::Key << "gamma" << YAML::Value << tr.lr.gamma << YAML::Key
    << "step_epochs" << YAML::Value << tr.lr.step_epochs << YAML::Key << "milestones" << YAML::Value << YAML::Flow
    << tr.lr.milestones << YAML::Key << "warmup_epochs" << YAML::Value << tr.lr.warmup_epochs << YAML::Key
    << "warmup_start" << YAML::Value << tr.lr.warmup_start;
  if (tr.lr.kind == lr_kind::cosine) y << YAML::Key << "final_factor" << YAML::Value << tr.lr.final_factor;
  y << YAML::EndMap;
  y << YAML::Key << "eval_every" << YAML::Value << tr.eval_every << YAML::Key << "eval_examples" << YAML::Value
    << tr.eval_examples << YAML::Key << "log_every" << YAML::Value << tr.log_every << YAML::Key << "diverge_loss"
    << YAML::Value << tr.diverge_loss << YAML::Key << "momentum" << YAML::Value << tr.momentum << YAML::Key
    << "weight_decay" << YAML::Value << tr.weight_decay << YAML::Key << "consensus_every" << YAML::Value
    << tr.consensus_every << YAML::Key << "local_steps" << YAML::Value << tr.local_steps << YAML::Key << "outer"
    << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "lr" << YAML::Value << tr.outer.lr << YAML::Key
    << "momentum" << YAML::Value << tr.outer.momentum << YAML::Key << "nesterov" << YAML::Value << tr.outer.nesterov
    << YAML::EndMap;
  y << YAML::Key << "checkpoint_every" << YAML::Value << tr.checkpoint_every;
  // Only when asynchronous: a synchronous run's canonical text (and run id) is what it was before.
  if (tr.max_staleness == kUnboundedStaleness)
    y << YAML::Key << "max_staleness" << YAML::Value << "unbounded";
  else if (tr.max_staleness > 0)
    y << YAML::Key << "max_staleness" << YAML::Value << tr.max_staleness;
  if (tr.overlap) y << YAML::Key << "overlap" << YAML::Value << true;  // likewise: only when on
  y << YAML::EndMap;
}

}  // namespace qgossip
