#include "node/optim/outer_step.hpp"

#include "core/errors.hpp"
#include "core/work_pool.hpp"

namespace qgossip {

outer_step::outer_step(std::size_t dim, const outer_spec& spec, bool in_place)
    : lr_(static_cast<float>(spec.lr)), momentum_(static_cast<float>(spec.momentum)), nesterov_(spec.nesterov),
      step_(in_place ? 0 : dim, 0.0f), velocity_(spec.momentum > 0 ? dim : 0, 0.0f) {
  QG_ENFORCE(spec.lr > 0, "outer lr=" << spec.lr);
  QG_ENFORCE(spec.momentum >= 0 && spec.momentum < 1, "outer momentum=" << spec.momentum);
}

std::span<const float> outer_step::apply(std::span<const float> start, std::span<const float> end) {
  QG_ENFORCE(start.size() == step_.size() && end.size() == step_.size(),
             start.size() << ", " << end.size() << " vs " << step_.size());
  // Element by element, split over the calling thread's work_pool (the same bits on any number).
  parallel_ranges(step_.size(), kElementGrain, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      const float delta = start[i] - end[i];
      if (momentum_ == 0) {
        step_[i] = lr_ * delta;
        continue;
      }
      velocity_[i] = momentum_ * velocity_[i] + delta;
      step_[i] = lr_ * (nesterov_ ? delta + momentum_ * velocity_[i] : velocity_[i]);
    }
  });
  return step_;
}

void outer_step::step_in_place(std::span<const float> start, std::span<float> x) {
  QG_ENFORCE(start.size() == x.size() && (velocity_.empty() || velocity_.size() == x.size()),
             start.size() << ", " << x.size() << " vs " << velocity_.size());
  parallel_ranges(x.size(), kElementGrain, [&](std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      const float delta = start[i] - x[i];
      float step;
      if (momentum_ == 0) {
        step = lr_ * delta;
      } else {
        velocity_[i] = momentum_ * velocity_[i] + delta;
        step = lr_ * (nesterov_ ? delta + momentum_ * velocity_[i] : velocity_[i]);
      }
      x[i] = start[i] - step;
    }
  });
}

void outer_step::save_state(state_writer& out) const {
  out.put_f64("lr", lr_);
  out.put_f64("momentum", momentum_);
  out.put_bool("nesterov", nesterov_);
  out.put_floats("velocity", velocity_);
}

void outer_step::load_state(state_reader& in) {
  const auto lr = static_cast<float>(in.get_f64("lr"));
  const auto momentum = static_cast<float>(in.get_f64("momentum"));
  const bool nesterov = in.get_bool("nesterov");
  if (lr != lr_ || momentum != momentum_ || nesterov != nesterov_)
    in.fail("saved outer step (lr " + std::to_string(lr) + ", momentum " + std::to_string(momentum) +
            (nesterov ? ", Nesterov" : ", heavy ball") + ") differs from this run's (lr " + std::to_string(lr_) +
            ", momentum " + std::to_string(momentum_) + (nesterov_ ? ", Nesterov)" : ", heavy ball)"));
  in.get_floats("velocity", velocity_);
}

}  // namespace qgossip
