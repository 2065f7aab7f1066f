// The model: section (node/config/sections.hpp).
#include <filesystem>

#include "node/config/config_fields.hpp"
#include "node/config/sections.hpp"

namespace qgossip {

namespace {

void read_hidden(yaml_reader& m, model_spec& spec) {
  std::vector<std::int64_t> def(spec.hidden.begin(), spec.hidden.end());
  if (spec.kind != model_kind::mlp) def.clear();
  const auto hidden = m.get_int_list("hidden", def);
  spec.hidden.clear();
  for (auto h : hidden) {
    if (h < 1 || h > (1 << 20)) throw m.error("model.hidden: layer widths must be in [1, 1048576]");
    spec.hidden.push_back(static_cast<std::size_t>(h));
  }
  const std::string kind(name_of(spec.kind));
  if (spec.kind == model_kind::softmax && !spec.hidden.empty())
    throw m.error("model.hidden: softmax regression has no hidden layers (use kind: mlp)");
  if (spec.kind == model_kind::mlp && spec.hidden.empty())
    throw m.error("model.hidden: an mlp needs at least one hidden layer (use kind: softmax for none)");
  if (spec.kind != model_kind::mlp && !spec.hidden.empty())
    throw m.error("model.hidden: only mlp has configurable hidden layers; " + kind + " has a fixed architecture");
}

void read_path(yaml_reader& m, model_spec& spec, const std::string& file) {
  spec.path = m.get_string("path", "");
  if (spec.kind == model_kind::torchscript && spec.path.empty())
    throw m.error("model.path: kind torchscript needs the file torch.jit.save wrote (docs/models.md)");
  if (spec.kind != model_kind::torchscript && !spec.path.empty())
    throw m.error("model.path: only kind torchscript reads a model file");
  namespace fs = std::filesystem;
  if (!spec.path.empty() && fs::path(spec.path).is_relative())
    spec.path = (fs::path(file).parent_path() / spec.path).lexically_normal().string();
}

}  // namespace

YAML::Node read_model(yaml_reader& r, run_config& c) {
  // Where a model too large is reported: model.hidden, else model. (reset: a YAML::Node assigned to
  // would have its referent overwritten.)
  YAML::Node size_at;
  if (auto node = r.child("model")) size_at.reset(*node);
  auto m = r.map("model");
  if (!m) return size_at;
  if (auto h = m->child("hidden")) size_at.reset(*h);
  model_spec& spec = c.model;
  spec.kind = get_choice(*m, "kind", spec.kind);
  read_hidden(*m, spec);
  read_path(*m, spec, c.file);
  const std::string kind(name_of(spec.kind));
  spec.init = get_choice(*m, "init", spec.init);
  if (spec.kind != model_kind::mlp && spec.kind != model_kind::softmax && m->has("init"))
    throw m->error("model.init is for the Eigen models (mlp, softmax); " + kind + " uses torch's own initialization");
  spec.threads = get_int_in(*m, "threads", spec.threads, 1, 256);
  spec.buffers = get_choice(*m, "buffers", spec.buffers);
  if (!is_torch(spec.kind) && (m->has("threads") || m->has("buffers")))
    throw m->error("model.threads and model.buffers are for the libtorch models (" + kind + " is Eigen)");
  spec.dtype = get_choice(*m, "dtype", spec.dtype);
  if (!is_torch(spec.kind) && spec.dtype != model_dtype::fp32)
    throw m->error("model.dtype " + std::string(name_of(spec.dtype)) + " is for the libtorch models (lenet5, "
                   "resnet20, torchscript); " + kind + " computes in fp32" +
                   (spec.kind == model_kind::external ? " here: a program's bf16 or fp16 parameters are its own "
                                                        "(attach takes them, docs/python.md)"
                                                      : ""));
  if (spec.dtype != model_dtype::fp32 && spec.buffers == buffers_kind::average)
    throw m->error("model.dtype " + std::string(name_of(spec.dtype)) + " with model.buffers: average: the "
                   "averaged running statistics' pseudo-gradient needs fp32 (use buffers: local)");
  m->finish();
  return size_at;
}

void emit_model(YAML::Emitter& y, const model_spec& m) {
  y << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << std::string(name_of(m.kind)) << YAML::Key << "hidden"
    << YAML::Value << YAML::Flow << m.hidden;
  if (!is_torch(m.kind)) y << YAML::Key << "init" << YAML::Value << std::string(name_of(m.init));
  if (is_torch(m.kind))
    y << YAML::Key << "path" << YAML::Value << m.path << YAML::Key << "threads" << YAML::Value << m.threads << YAML::Key
      << "buffers" << YAML::Value << std::string(name_of(m.buffers)) << YAML::Key << "dtype" << YAML::Value
      << std::string(name_of(m.dtype));
  y << YAML::EndMap;
}

}  // namespace qgossip
