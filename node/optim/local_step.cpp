#include "node/optim/local_step.hpp"

#include <cmath>

#include "core/errors.hpp"

namespace qgossip {

local_step::local_step(std::size_t dim, double momentum, double weight_decay)
    : momentum_(static_cast<float>(momentum)), weight_decay_(static_cast<float>(weight_decay)),
      velocity_(momentum > 0 ? dim : 0, 0.0f) {
  QG_ENFORCE(momentum >= 0 && momentum < 1, "momentum=" << momentum);
  QG_ENFORCE(weight_decay >= 0, "weight_decay=" << weight_decay);
}

std::span<const float> local_step::apply(std::span<float> grad, std::span<const float> x) {
  QG_ENFORCE(grad.size() == x.size(), grad.size() << " vs " << x.size());
  if (weight_decay_ > 0)
    for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = std::fma(weight_decay_, x[i], grad[i]);
  if (momentum_ == 0) return grad;
  QG_ENFORCE(velocity_.size() == grad.size(), velocity_.size() << " vs " << grad.size());
  for (std::size_t i = 0; i < grad.size(); ++i) velocity_[i] = momentum_ * velocity_[i] + grad[i];
  return velocity_;
}

void local_step::descend(std::span<float> x, float lr, std::span<const float> direction) {
  QG_ENFORCE(x.size() == direction.size(), x.size() << " vs " << direction.size());
  float* __restrict out = x.data();
  const float* __restrict d = direction.data();
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = std::fma(-lr, d[i], out[i]);
}

void local_step::save_state(state_writer& out) const {
  out.put_f64("momentum", momentum_);
  out.put_f64("weight_decay", weight_decay_);
  out.put_floats("velocity", velocity_);
}

void local_step::load_state(state_reader& in) {
  const float momentum = static_cast<float>(in.get_f64("momentum"));
  const float weight_decay = static_cast<float>(in.get_f64("weight_decay"));
  if (momentum != momentum_ || weight_decay != weight_decay_)
    in.fail("saved momentum " + std::to_string(momentum) + " and weight decay " + std::to_string(weight_decay) +
            " differ from this run's " + std::to_string(momentum_) + " and " + std::to_string(weight_decay_));
  in.get_floats("velocity", velocity_);
}

}  // namespace qgossip
