#include "core/status.hpp"
#include "core/errors.hpp"

#include <doctest/doctest.h>

using namespace qgossip;

TEST_CASE("status carries code and message") {
  status ok = status::ok();
  CHECK(ok.is_ok());
  CHECK(ok.to_string() == "ok");
  status e = status::error(errc::timeout, "no message from rank 3");
  CHECK_FALSE(e.is_ok());
  CHECK(e.code() == errc::timeout);
  CHECK(e.to_string() == "timeout: no message from rank 3");
}

TEST_CASE("every errc has its name") {
  CHECK(to_string(errc::peer_lost) == "peer_lost");
  CHECK(status::error(errc::peer_lost, "lost the link to rank 2").to_string() == "peer_lost: lost the link to rank 2");
  CHECK(to_string(errc::cancelled) == "cancelled");
}

TEST_CASE("config_error formats file:line:column") {
  config_error e("run.yaml", 4, 7, "unknown key 'lr'");
  CHECK(std::string(e.what()) == "run.yaml:4:7: unknown key 'lr'");
  config_error bare("levels must be >= 1");
  CHECK_FALSE(bare.has_position());
  CHECK(std::string(bare.at("x.yaml", 2, 3).what()) == "x.yaml:2:3: levels must be >= 1");
}

TEST_CASE("QG_ENFORCE names the expression and operands") {
  int a = 2, b = 3;
  try {
    QG_ENFORCE(a == b, "a=" << a << " b=" << b);
    FAIL("no throw");
  } catch (const invariant_error& e) {
    std::string w = e.what();
    CHECK(w.find("a == b") != std::string::npos);
    CHECK(w.find("a=2 b=3") != std::string::npos);
  }
  CHECK_NOTHROW(QG_ENFORCE(a < b));
}
