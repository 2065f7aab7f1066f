#pragma once
// Helpers shared by the topology tests.
#include <string>

#include <doctest/doctest.h>

#include "core/errors.hpp"

namespace qgossip::test {

// The message of the config_error that `f` throws; fails the test when it throws none.
template <typename F>
std::string config_error_of(F&& f) {
  try {
    f();
  } catch (const config_error& e) {
    CHECK_FALSE(e.has_position());  // positions are the loader's job
    return e.what();
  }
  FAIL("expected a config_error");
  return {};
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace qgossip::test
