#pragma once
// One reader and one emitter per section of the run YAML (docs/config.md), and the checks across
// sections. load_run_config (node/config/config.cpp) calls the readers in file order, then
// check_combinations; canonical_yaml calls the emitters: the canonical text run.json records and
// the run id hashes (so a key that changes results must be emitted, and nothing host-local is).
// Readers throw config_error at the value's file:line:col; every key they do not know is an error.
#include <yaml-cpp/yaml.h>

#include "node/config/config.hpp"
#include "node/config/yaml_reader.hpp"

namespace qgossip {

// topology: (inline, or a topology YAML file: node/config/topology_section.cpp). `env` is where
// nodes: {from: slurm} finds the Slurm step's variables.
topology_config read_topology(yaml_reader& r, const env_lookup& env);
// How emit_topology writes nodes taken from Slurm: resolved (every node's host and port, after a
// comment naming the variables they came from: run.json) or as_given ({from: slurm, base_port: P}:
// the run id, the same on every host the job may run on). Listed nodes are written alike by both.
enum class node_hosts { resolved, as_given };
void emit_topology(YAML::Emitter& y, const topology_config& t, node_hosts hosts);

// algorithm:, compressor:, device: (node/config/algorithm_section.cpp)
void read_algorithm(yaml_reader& root, run_config& c);
void emit_algorithm(YAML::Emitter& y, const run_config& c);

// model: (node/config/model_section.cpp). Returns where a model too large is to be reported.
YAML::Node read_model(yaml_reader& root, run_config& c);
void emit_model(YAML::Emitter& y, const model_spec& m);

// data: (node/config/data_section.cpp)
void read_data(yaml_reader& root, run_config& c);
void emit_data(YAML::Emitter& y, const data_spec& d);

// train: (node/config/train_section.cpp)
void read_train(yaml_reader& root, run_config& c);
void emit_train(YAML::Emitter& y, const train_config& t);

// network:, output: and node: (node/config/network_section.cpp)
void read_network(yaml_reader& root, run_config& c);
void emit_network(YAML::Emitter& y, const network_config& n);

// The rules that span sections (node/config/combinations.cpp): a codec the algorithm cannot use,
// a libtorch model on feature vectors, continue with an algorithm that needs every node, a model
// too large (reported at model_at)... config_error at the root mapping or model_at.
void check_combinations(yaml_reader& root, const run_config& c, const YAML::Node& model_at);

}  // namespace qgossip
