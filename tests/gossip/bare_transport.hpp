#pragma once
// A transport with fewer of gossip/transport.hpp's interfaces than the one it wraps: a backend that
// lacks them, for tests of what the exchange and the decorators do without them. Everything else is
// forwarded (gossip/transport_wrapper.hpp).
#include "gossip/transport_wrapper.hpp"

namespace qgossip::testing {

// Which of the inner transport's interfaces the bare transport still offers.
struct bare_offers {
  bool liveness = false;
  bool queues = false;
  bool admission = false;
};

class bare_transport final : public transport_wrapper {
 public:
  bare_transport(transport& inner, bare_offers offers) : transport_wrapper(inner), offers_(offers) {}

  transport_liveness* liveness() override { return offers_.liveness ? transport_wrapper::liveness() : nullptr; }
  transport_queues* queues() override { return offers_.queues ? transport_wrapper::queues() : nullptr; }
  transport_admission* admission() override {
    return offers_.admission ? transport_wrapper::admission() : nullptr;
  }

 private:
  bare_offers offers_;
};

}  // namespace qgossip::testing
