// The factory's libtorch kinds in either build: with libtorch they are models, without it each is a
// configuration error that says how to get the backend. Built in every configuration.
#include <doctest/doctest.h>

#include <string>

#include "core/errors.hpp"
#include "node/models/model_factory.hpp"

using namespace qgossip;

TEST_CASE("model kinds lenet5, resnet20 and torchscript need the libtorch backend") {
  for (const char* kind : {"lenet5", "resnet20", "torchscript"}) {
    CAPTURE(kind);
    model_spec spec;
    spec.kind = *parse_name<model_kind>(kind);
    spec.path = "/nonexistent/model.pt";
    if (have_torch()) {
      // Built with libtorch: the kinds are known; here each refuses its input for its own reason.
      CHECK_THROWS_AS((void)make_model(spec, 20, 10), config_error);
    } else {
      CHECK_THROWS_WITH_AS(
          (void)make_model(spec, 3072, 10, {3, 32, 32}),
          ("model kind " + std::string(kind) +
           " needs the libtorch backend: install libtorch-dev (scripts/setup.sh does) and rebuild")
              .c_str(),
          config_error);
    }
  }
}

TEST_CASE("set_step_size is a no-op for the Eigen models") {
  model_spec spec;
  spec.kind = model_kind::softmax;
  spec.hidden.clear();
  const auto m = make_model(spec, 4, 3);
  m->set_step_size(0.5);  // the default: nothing to do
  CHECK(m->num_params() == 15);
}
