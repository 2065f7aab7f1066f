#pragma once
// What a run trains and tests on: the `data:` section of the run YAML as a plain struct (parsed by
// node/config, used by node/data/load.hpp). Every default is documented here and in docs/config.md.
#include <span>
#include <string>

#include "core/names.hpp"

namespace qgossip {

// fashion-mnist (IDX, gzip) | cifar10 (the binary distribution: data_batch_{1..5}.bin,
// test_batch.bin) | npy (train_images.npy, train_labels.npy, test_images.npy, test_labels.npy) |
// synthetic (Gaussian class clusters, generated)
enum class dataset_kind { fashion_mnist, cifar10, npy, synthetic };
inline constexpr named<dataset_kind> kDatasetNames[] = {
    {dataset_kind::fashion_mnist, "fashion-mnist"}, {dataset_kind::cifar10, "cifar10"},
    {dataset_kind::npy, "npy"},                     {dataset_kind::synthetic, "synthetic"}};
constexpr std::span<const named<dataset_kind>> names_of(dataset_kind) { return kDatasetNames; }

// How the training set is cut into shards: iid (a seeded shuffle) | label (sorted by label, with
// skew) | dirichlet (each class spread over the nodes by Dir(alpha) proportions).
enum class partition_kind { iid, label, dirichlet };
inline constexpr named<partition_kind> kPartitionNames[] = {
    {partition_kind::iid, "iid"}, {partition_kind::label, "label"}, {partition_kind::dirichlet, "dirichlet"}};
constexpr std::span<const named<partition_kind>> names_of(partition_kind) { return kPartitionNames; }

struct augment_spec {
  int crop_padding = 0;  // > 0: pad each image by this many zeros per side, then crop a random
                         // window of the original size (per example, per round)
  bool flip = false;     // mirror each image left-right with probability 1/2
};

struct data_spec {
  dataset_kind dataset = dataset_kind::fashion_mnist;
  std::string dir = "/usr/share/datasets/fashion-mnist";
  partition_kind partition = partition_kind::iid;
  double skew = 0.0;              // partition: label; 0 = iid .. 1 = label-sorted shards
  double alpha = 1.0;             // partition: dirichlet; small = few classes per node, large = iid
  // Subtract each channel's mean and divide by its standard deviation, both measured on the whole
  // training set (the same numbers on every node), train and test alike (as PyTorch users do; it
  // reaches 0.88 on Fashion-MNIST epochs sooner than pixels scaled to [0, 1]).
  bool standardize = true;
  augment_spec augment;           // images only, training batches only
  // Decode the data set once into a cache file every node maps read-only (node/data/data_cache.hpp);
  // false: every node decodes the sources itself. Synthetic data are never cached.
  bool cache = true;
  std::string cache_dir;  // "": $XDG_CACHE_HOME/qgossip, else $HOME/.cache/qgossip
  // dataset: synthetic (Gaussian class clusters)
  int synthetic_train = 8000, synthetic_test = 2000, synthetic_dim = 32, synthetic_classes = 4;
  double synthetic_noise = 1.0;
};

}  // namespace qgossip
