// The data: section (node/config/sections.hpp).
#include "node/config/config_fields.hpp"
#include "node/config/sections.hpp"

namespace qgossip {

namespace {

// data.cache: true | false | a directory (node/data/data_cache.hpp); results never depend on it.
void read_cache(yaml_reader& d, data_spec& spec) {
  const std::string cache = d.get_string("cache", "true");
  if (cache == "false" || cache == "no" || cache == "off")
    spec.cache = false;
  else if (cache.empty())
    throw d.error("data.cache: expected true, false or a directory, got an empty string");
  else if (cache != "true" && cache != "yes" && cache != "on")
    spec.cache_dir = cache;
}

void read_synthetic(yaml_reader& s, data_spec& spec) {
  spec.synthetic_train = get_int_in(s, "train", spec.synthetic_train, 1, 10'000'000);
  spec.synthetic_test = get_int_in(s, "test", spec.synthetic_test, 1, 10'000'000);
  spec.synthetic_dim = get_int_in(s, "dim", spec.synthetic_dim, 1, 1 << 20);
  spec.synthetic_classes = get_int_in(s, "classes", spec.synthetic_classes, 2, 1 << 16);
  spec.synthetic_noise = get_double_in(s, "noise", spec.synthetic_noise, 0.0, 1e6);
  s.finish();
}

}  // namespace

void read_data(yaml_reader& r, run_config& c) {
  auto d = r.map("data");
  if (!d) return;
  data_spec& spec = c.data;
  spec.dataset = get_choice(*d, "dataset", spec.dataset);
  spec.dir = d->get_string("dir", spec.dir);
  spec.partition = get_choice(*d, "partition", spec.partition);
  spec.skew = get_double_in(*d, "skew", spec.skew, 0.0, 1.0);
  if (d->has("alpha") && spec.partition != partition_kind::dirichlet)
    throw d->error("data.alpha is only read by partition: dirichlet");
  spec.alpha = get_double_in(*d, "alpha", spec.alpha, 1e-3, 1e6);
  spec.standardize = d->get_bool("standardize", spec.standardize);
  read_cache(*d, spec);
  if (auto a = d->map("augment")) {
    spec.augment.crop_padding = get_int_in(*a, "crop_padding", spec.augment.crop_padding, 0, 64);
    spec.augment.flip = a->get_bool("flip", spec.augment.flip);
    a->finish();
  }
  if (spec.dataset == dataset_kind::synthetic && (spec.augment.crop_padding > 0 || spec.augment.flip))
    throw d->error("data.augment: crops and flips are for images; synthetic data are feature vectors");
  if (auto s = d->map("synthetic")) read_synthetic(*s, spec);
  d->finish();
}

void emit_data(YAML::Emitter& y, const data_spec& d) {
  y << YAML::BeginMap << YAML::Key << "dataset" << YAML::Value << std::string(name_of(d.dataset)) << YAML::Key
    << "dir" << YAML::Value << d.dir << YAML::Key << "partition" << YAML::Value
    << std::string(name_of(d.partition)) << YAML::Key << "skew" << YAML::Value << d.skew;
  if (d.partition == partition_kind::dirichlet) y << YAML::Key << "alpha" << YAML::Value << d.alpha;
  y << YAML::Key << "standardize" << YAML::Value << d.standardize << YAML::Key << "augment" << YAML::Value
    << YAML::Flow << YAML::BeginMap << YAML::Key << "crop_padding" << YAML::Value << d.augment.crop_padding
    << YAML::Key << "flip" << YAML::Value << d.augment.flip << YAML::EndMap;
  if (d.dataset == dataset_kind::synthetic)
    y << YAML::Key << "synthetic" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "train" << YAML::Value
      << d.synthetic_train << YAML::Key << "test" << YAML::Value << d.synthetic_test << YAML::Key << "dim"
      << YAML::Value << d.synthetic_dim << YAML::Key << "classes" << YAML::Value << d.synthetic_classes << YAML::Key
      << "noise" << YAML::Value << d.synthetic_noise << YAML::EndMap;
  y << YAML::EndMap;
}

}  // namespace qgossip
