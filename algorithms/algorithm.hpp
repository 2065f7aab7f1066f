#pragma once
// An Algorithm is one node's optimizer state and update rule for decentralized training
// (docs/algorithms.md): D-PSGD, naive compressed D-PSGD, DCD-PSGD, ECD-PSGD, CHOCO-SGD. It owns the
// node's model x and any copies of its neighbours' state (DCD replicas, ECD estimates). It does no
// I/O and starts no threads; the node loop drives it, one synchronous round t = 1, 2, ... at a time:
//
//   v = outgoing(grad at model(), lr, t)     the vector to compress and send (x, z, ...)
//   absorb_own(D(C(v)), t)                   the node's own message as receivers will decode it
//   absorb(j, D(C(v_j)), t)                  once per neighbour j, in any order
//   finish(t)                                completes x_{t+1}
//
// Every update that combines several vectors does so in a fixed order (self, then neighbours by
// ascending rank), so a seeded run reproduces bit for bit. Not thread-safe.
//
// Checkpoints: between rounds (after finish(t), before outgoing(t + 1)) save_state writes
// everything that carries over to the next round (x, replicas, estimates, public copies); load_state
// into a FRESH object built with the same row, x0 size and options makes it continue bit for bit as
// the saved one would have. Per-round scratch (z, inboxes, the received flags) is not saved.
//
// Membership (issue 13, network.on_peer_failure: continue): when a neighbour leaves the run, the
// node loop calls remix() with the node's row over the surviving graph (metropolis.hpp builds one),
// and the algorithm forgets the leaver. The saved state records the row in use, so a node that
// lost a neighbour resumes from its checkpoint with the row it had.
//
// Optional abilities are interfaces of their own beside this one (algorithms/capabilities.hpp):
// asynchronous gossip (async_mixing), a message per edge (per_edge_messages) and rejoining
// (rejoinable); the node looks each up once, where it builds the part that uses it. Robust mixing's
// rule is looked up the same way (clip_rule_of, below). The decentralized algorithms share one base
// (algorithms/decentralized.hpp: the row, x, the receipts, the clip rule); the centralized ones
// (algorithms/centralized_sgd.hpp) implement this class alone.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/robust_mixing.hpp"
#include "core/aligned.hpp"
#include "core/names.hpp"
#include "core/state_io.hpp"

namespace qgossip {

// Node i's row of the mixing matrix W: W_ii and W_ij for j in N(i), neighbours ascending.
struct mixing_row {
  int rank = 0;
  double self_weight = 1.0;
  std::vector<int> neighbours;
  std::vector<double> weights;  // weights[k] = W_{rank, neighbours[k]}
};

// A copy of another node's state held here, by that node's rank (rank == own rank: the node's own
// estimate, as its neighbours hold it).
struct held_copy {
  int rank;
  std::span<const float> values;
  // A node's own copy kept per edge (CHOCO-SGD's public copy per edge): the neighbour that holds
  // the same copy; -1: every neighbour holding a copy of `rank` holds this one.
  int holder = -1;
};

// Whom a node's messages go to. The node loop builds the exchange and the mixing_row to match.
enum class communication {
  neighbours,      // the topology's graph: gossip
  all_to_all,      // every node sends its message to every other node (centralized all-gather)
  ring_allreduce,  // outgoing() vectors are summed by a ring all-reduce; the sum comes back via absorb_own()
};

class algorithm {
 public:
  virtual ~algorithm() = default;

  virtual std::string_view name() const = 0;
  // True when the algorithm's messages go through the configured compressor; false for the
  // full-precision reference (D-PSGD), which always sends raw floats.
  virtual bool compresses() const = 0;
  // Whom its messages go to, fixed when it is built: neighbours for the decentralized algorithms
  // (algorithms/decentralized.hpp), every node for the centralized ones (centralized_sgd.hpp).
  communication pattern() const { return pattern_; }
  // The node's model x_t, where the stochastic gradient is taken.
  virtual std::span<const float> model() const = 0;
  // The model, writable between rounds (after finish, before the next outgoing), where changing it
  // there breaks no invariant: the algorithm sends its model afresh or keeps it private (CHOCO's x
  // beside its public copy, D-PSGD, the centralized ones when every node makes the same change).
  // Empty where neighbours hold an exact copy of x built from past messages (DCD replicas, ECD).
  // The node's outer optimizer uses it (node/optim/outer_step.hpp).
  virtual std::span<float> adjustable_model() { return {}; }

  // True where the round reads the model only after its step, as x_{t+1/2} (CHOCO-SGD): setting
  // adjustable_model() to x_{t+1/2} and calling outgoing with an empty grad and lr 0 is then the
  // same round (local steps without an outer step: x_{t+1/2} is their result itself).
  [[nodiscard]] virtual bool half_step_only() const { return false; }

  // Round t (1-based). grad = a stochastic gradient at model(), lr = the step size gamma; where
  // half_step_only(), an empty grad with lr 0 once x is at x_{t+1/2} (moved by a program's steps,
  // algorithm_options::model_storage, or set to the local steps' result). Returns the vector to
  // compress and send; valid until the next call on this object.
  virtual std::span<const float> outgoing(std::span<const float> grad, float lr, std::uint64_t t) = 0;
  // The node's own message after encode+decode: what every receiver will apply.
  virtual void absorb_own(std::span<const float> decoded, std::uint64_t t) = 0;
  // Neighbour `from`'s decoded message, of its round t (synchronous: this round). REQUIRES: from is a
  // neighbour, called once per neighbour per round (asynchronous: in the neighbour's order).
  virtual void absorb(int from, std::span<const float> decoded, std::uint64_t t) = 0;
  virtual void finish(std::uint64_t t) = 0;

  // What "copies" means for this algorithm ("replica", "estimate") or "" when it holds none.
  virtual std::string_view copies_kind() const = 0;
  virtual std::vector<held_copy> held_copies() const = 0;

  // Membership change (a neighbour left the run, or the weights change after one did): row is this
  // node's new mixing row: same rank, neighbours a subset of the current ones (ascending), weights
  // for them and self_weight = 1 − Σ weights (within 1e-9). Copies held for neighbours no longer in
  // the row (replicas, estimates, public copies, inboxes) are dropped; every other copy and the
  // model are untouched, so the survivors' copies stay exact. Callable between rounds, or within
  // round t after absorb_own and before the first absorb (the node learns of a departure while
  // gathering): the round then finishes without the dropped neighbours' messages and with the new
  // weights wherever the rule uses them after that point (D-PSGD's and CHOCO's finish; DCD and ECD
  // used the old weights already in outgoing(t), with the leaver's last known state, which is
  // consistent). A remix after some absorbs keeps the surviving neighbours' received flags (their
  // messages count once), though the node loop should not rely on it. Throws invariant_error
  // (QG_ENFORCE) for another rank, a neighbour that is not a current one, neighbours not strictly
  // ascending, weights of the wrong length, negative or non-finite weights, a self weight outside
  // [0, 1] or a row that does not sum to 1; the centralized algorithms (allreduce, allgather) throw
  // invariant_error: every node must take part.
  virtual void remix(const mixing_row& row) = 0;
  // The row in use now: the one built with until the first remix (or a load_state that adopts a
  // saved row), the last remix's after.
  virtual const mixing_row& row() const = 0;

  // The state between rounds (see the top of this file). The saved state holds the row in use
  // (neighbours, weights, self weight). load_state into an object built with the topology's row
  // accepts a saved neighbour list that is a subset of the object's (a checkpoint taken after a
  // remix): the object then adopts the saved row and drops its other copies, as remix does. It
  // throws state_error when the saved state is of another algorithm, rank or model size, or lists a
  // neighbour the object's row does not. Checkpoints written before rows were saved (no weights)
  // load when their neighbour list equals the object's, which keeps its weights. The centralized
  // algorithms save no row (every node takes part). REQUIRES: called between rounds.
  virtual void save_state(state_writer& out) const = 0;
  virtual void load_state(state_reader& in) = 0;

 protected:
  explicit algorithm(communication pattern) : pattern_(pattern) {}

 private:
  communication pattern_;
};

// Parameters some algorithms take (the run YAML's `algorithm:` mapping).
struct algorithm_options {
  double consensus_step = 1.0;  // CHOCO-SGD's gamma_c, in (0, 1]
  // Asynchronous gossip (train.max_staleness > 0; the decentralized algorithms): absorb() may come
  // any number of times per neighbour per round, each with the iteration of that neighbour's message
  // (its own round), in that neighbour's order, and a round may finish without one: the algorithm
  // mixes with the newest copy it holds of each neighbour that sent something since its last mix,
  // and leaves a silent neighbour's weight with itself (algorithms/receipts.hpp).
  bool asynchronous = false;
  // Asynchronous gossip whose rounds may skip a busy link (train.max_staleness: unbounded):
  // CHOCO-SGD keeps its own public copy per edge, so that a link can fall behind alone
  // (per_edge_messages; docs/algorithms.md, "A busy uplink"). The others ignore it.
  bool per_edge_copies = false;
  // Robust mixing (algorithms/robust_mixing.hpp): the decentralized algorithms clip each
  // neighbour's term. Off: as without it, bit for bit.
  robust_options robust{};
  // Where CHOCO-SGD keeps its model x: a program's parameters (node/run/learner.cpp), which the
  // program's steps then move as x itself, x_{t+1/2} being all a round of CHOCO-SGD reads (no copy of
  // the program's parameters, docs/design.md "Memory and size"). Empty: a vector of its own. The
  // other algorithms read x_t beside x_{t+1/2} and are never given one.
  std::span<float> model_storage{};
  // CHOCO-SGD with one public copy: its message q = x_{t+1/2} - x^_i is left for the round to encode
  // as it reads x and x^_i (capabilities.hpp difference_message), with no vector of q. Set where the
  // codec encodes a difference without one (node/run/learner.cpp); the others ignore it.
  bool difference_messages = false;
};

// Robust mixing's rule in alg (options.robust on, a decentralized algorithm: the base of
// algorithms/decentralized.hpp holds it), to tell it of neighbours removed as proven hostile
// (clip_rule::set_removed_hostile) or give it the loss screen (clip_rule::set_screen); nullptr where
// alg mixes without clipping (robust off, or allreduce and allgather). clip_stats_of: the rule's
// last round (the radius, the fractions clipped and screened, the largest distance), for the CSV.
// Declared here, beside the options that turn it on, rather than in capabilities.hpp: the rule is
// state the decentralized base keeps, not an interface an algorithm implements.
[[nodiscard]] clip_rule* clip_rule_of(algorithm& alg);
[[nodiscard]] const clip_stats* clip_stats_of(const algorithm& alg);

// The row of a node that talks to every other node with equal weight 1/n: the centralized
// algorithms' row, whatever the topology.
mixing_row complete_mixing_row(int rank, int n);

// The algorithms (the run YAML's `algorithm:`), and their names.
enum class algorithm_kind { dpsgd, naive, dcd, ecd, choco, allreduce, allgather };
inline constexpr named<algorithm_kind> kAlgorithmNames[] = {
    {algorithm_kind::dpsgd, "dpsgd"}, {algorithm_kind::naive, "naive"},         {algorithm_kind::dcd, "dcd"},
    {algorithm_kind::ecd, "ecd"},     {algorithm_kind::choco, "choco"},         {algorithm_kind::allreduce, "allreduce"},
    {algorithm_kind::allgather, "allgather"},
};
constexpr std::span<const named<algorithm_kind>> names_of(algorithm_kind) { return kAlgorithmNames; }

// Builds the algorithm for node row.rank, starting at x0 (the same on every node). Throws
// config_error for a bad option. For the centralized ones (is_centralized), row must list every
// other rank. The second form takes the algorithm's name (config_error for an unknown one).
std::unique_ptr<algorithm> make_algorithm(algorithm_kind kind, const mixing_row& row, std::span<const float> x0,
                                          const algorithm_options& options = {});
std::unique_ptr<algorithm> make_algorithm(std::string_view name, const mixing_row& row, std::span<const float> x0,
                                          const algorithm_options& options = {});

// True for allreduce and allgather: every node talks to every other, whatever the topology.
bool is_centralized(algorithm_kind kind);

}  // namespace qgossip
