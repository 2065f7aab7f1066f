#include "node/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <utility>

#include "core/errors.hpp"

namespace qgossip {
namespace {

[[noreturn]] void bad(const char* field, const char* expected, double got) {
  std::ostringstream os;
  os << "lr_schedule." << field << " must be " << expected << ", got " << got;
  throw config_error(os.str());
}

}  // namespace

lr_schedule::lr_schedule(lr_schedule_spec spec) : spec_(std::move(spec)) {
  const lr_schedule_spec& s = spec_;
  if (!(s.lr > 0) || !std::isfinite(s.lr)) bad("lr", "> 0", s.lr);
  if (!(s.warmup_epochs >= 0) || !std::isfinite(s.warmup_epochs))
    bad("warmup_epochs", ">= 0", s.warmup_epochs);
  if (!(s.warmup_start >= 0 && s.warmup_start <= 1)) bad("warmup_start", "in [0, 1]", s.warmup_start);
  if (s.kind != lr_kind::constant && !(s.gamma > 0 && s.gamma <= 1)) bad("gamma", "in (0, 1]", s.gamma);
  if (s.kind == lr_kind::step && (!(s.step_epochs > 0) || !std::isfinite(s.step_epochs))) {
    bad("step_epochs", "> 0", s.step_epochs);
  }
  if (s.kind == lr_kind::cosine) {
    if (!(s.total_epochs > 0) || !std::isfinite(s.total_epochs)) bad("total_epochs", "> 0", s.total_epochs);
    if (!(s.final_factor >= 0 && s.final_factor <= 1)) bad("final_factor", "in [0, 1]", s.final_factor);
  }
  if (s.kind == lr_kind::multistep) {
    if (s.milestones.empty()) throw config_error("lr_schedule.milestones must not be empty for multistep");
    for (std::size_t i = 0; i < s.milestones.size(); ++i) {
      const double m = s.milestones[i];
      if (!(m >= 0) || !std::isfinite(m)) bad("milestones", "finite epochs >= 0", m);
      if (i > 0 && !(m > s.milestones[i - 1])) bad("milestones", "strictly increasing", m);
    }
  }
}

double lr_schedule::lr_at(double epoch) const {
  const lr_schedule_spec& s = spec_;
  epoch = std::max(epoch, 0.0);
  double lr = s.lr;
  switch (s.kind) {
    case lr_kind::constant:
      break;
    case lr_kind::step:
      lr *= std::pow(s.gamma, std::floor(epoch / s.step_epochs));
      break;
    case lr_kind::multistep: {
      const auto passed =
          std::upper_bound(s.milestones.begin(), s.milestones.end(), epoch) - s.milestones.begin();
      lr *= std::pow(s.gamma, static_cast<double>(passed));
      break;
    }
    case lr_kind::cosine: {
      const double progress = std::min(epoch, s.total_epochs) / s.total_epochs;
      lr *= s.final_factor + (1.0 - s.final_factor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
      break;
    }
  }
  if (epoch < s.warmup_epochs) {
    lr *= s.warmup_start + (1.0 - s.warmup_start) * (epoch / s.warmup_epochs);
  }
  return lr;
}

}  // namespace qgossip
