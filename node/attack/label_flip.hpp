#pragma once
// The label_flip attack (node/attack/attack_kind.hpp): the hostile node trains on label
// classes − 1 − y in place of y, from the attack's round on, and sends honest messages about that
// poisoned training.
#include "node/data/dataset.hpp"

namespace qgossip {

// Every label y of d becomes d.classes − 1 − y (applying it twice restores d).
void flip_labels(dataset& d);

}  // namespace qgossip
