#pragma once
// Vector families shared by the codec tests: dense, heavy-tailed and sparse inputs drawn from one
// seeded generator, so each test appends the edge cases it needs after them.
#include <random>
#include <string>
#include <vector>

namespace qgossip::testing {

struct named_vector {
  std::string name;
  std::vector<float> v;
};

// Appends gaussian, laplace (the stand-in for a gradient in unit tests: heavy-tailed like real SGD
// gradients' coordinates; `qgossip codec --gen grad` measures a real one), cauchy and 5%-sparse
// vectors of n values, drawing from gen.
inline void append_random_family(std::vector<named_vector>& out, std::size_t n, std::mt19937& gen) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::exponential_distribution<float> expo(1.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  out.push_back({"gaussian", v});
  for (float& x : v) x = (gen() % 2 ? 1.0f : -1.0f) * expo(gen);
  out.push_back({"laplace", v});
  for (float& x : v) x = cauchy(gen);
  out.push_back({"cauchy", v});
  for (float& x : v) x = gen() % 20 == 0 ? normal(gen) : 0.0f;
  out.push_back({"sparse 5%", v});
}

}  // namespace qgossip::testing
