#pragma once
// The learning rate as a function of the (fractional) epoch:
//   constant:  lr
//   step:      lr · gamma^floor(epoch / step_epochs)              (decay every step_epochs epochs)
//   multistep: lr · gamma^(number of milestones <= epoch)         (decay at the given epochs)
//   cosine:    lr · (f + (1 − f)·(1 + cos(π·min(epoch, E)/E))/2)   (E = total_epochs, f = final_factor)
// then, for epoch < warmup_epochs, scaled by a linear warm-up from warmup_start to 1:
//   factor = warmup_start + (1 − warmup_start) · epoch / warmup_epochs.
// Warm-up is in epochs like the rest; a warm-up of w rounds is w / batches_per_epoch epochs.
#include <span>
#include <string>

#include "core/names.hpp"
#include <vector>

namespace qgossip {

enum class lr_kind { constant, step, multistep, cosine };
inline constexpr named<lr_kind> kScheduleNames[] = {
    {lr_kind::constant, "constant"}, {lr_kind::step, "step"}, {lr_kind::multistep, "multistep"}, {lr_kind::cosine, "cosine"}};
constexpr std::span<const named<lr_kind>> names_of(lr_kind) { return kScheduleNames; }

struct lr_schedule_spec {
  lr_kind kind = lr_kind::constant;
  double lr = 0.1;                   // base learning rate, > 0
  double gamma = 0.1;                // decay factor for step/multistep, in (0, 1]
  double step_epochs = 1.0;          // step: decay period in epochs, > 0
  std::vector<double> milestones{};  // multistep: epochs, >= 0, strictly increasing, non-empty
  double total_epochs = 1.0;         // cosine: the epoch where the decay ends (the run's length), > 0
  double final_factor = 0.0;         // cosine: lr factor reached at total_epochs, in [0, 1]
  double warmup_epochs = 0.0;        // >= 0; 0 disables warm-up
  double warmup_start = 0.1;         // warm-up's initial factor, in [0, 1]
};

class lr_schedule {
 public:
  // Throws config_error naming the offending field (e.g. "lr_schedule.gamma must be in (0, 1],
  // got 1.5"); NaN and infinities are rejected everywhere.
  explicit lr_schedule(lr_schedule_spec spec);

  // REQUIRES: epoch >= 0 (negative epochs are treated as 0).
  [[nodiscard]] double lr_at(double epoch) const;
  [[nodiscard]] const lr_schedule_spec& spec() const { return spec_; }

 private:
  lr_schedule_spec spec_;
};

}  // namespace qgossip
