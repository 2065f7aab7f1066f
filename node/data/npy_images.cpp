#include "node/data/npy_images.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/errors.hpp"
#include "node/data/npy.hpp"

namespace qgossip {
namespace {

constexpr std::string_view kImageDescrs[] = {"|u1", "<f4", "<f8"};
constexpr std::string_view kLabelDescrs[] = {"|u1", "|i1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"};
constexpr const char* kMissingHint =
    "the directory must hold train_images.npy, train_labels.npy, test_images.npy and test_labels.npy "
    "(written by numpy.save)";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw config_error(path, 0, 0, what);
}

// How the images lie in the array: how many, their CHW shape, and whether channels come last.
struct image_layout {
  std::size_t count = 0;
  image_shape shape;
  bool channels_last = false;
};

image_layout layout_of(const std::vector<std::uint64_t>& s, const std::string& path) {
  const std::string shape = "shape " + npy_shape_text(s);
  image_layout g;
  if (s.size() == 3) {
    g = {s[0], {1, s[1], s[2]}, false};
  } else if (s.size() == 4 && s[1] >= 1 && s[1] <= 4) {
    g = {s[0], {s[1], s[2], s[3]}, false};
  } else if (s.size() == 4 && (s[3] == 1 || s[3] == 3 || s[3] == 4) && s[1] > 4 && s[2] > 4) {
    g = {s[0], {s[3], s[1], s[2]}, true};
  } else if (s.size() == 4) {
    fail(path, "images of " + shape + " are neither (N, C, H, W) with C in 1..4 nor (N, H, W, C) with "
                                      "C 1, 3 or 4 and H, W > 4");
  } else {
    fail(path, "images of " + shape + " have rank " + std::to_string(s.size()) +
                   ", expected (N, H, W), (N, C, H, W) or (N, H, W, C)");
  }
  if (g.count == 0) fail(path, "no images (" + shape + ")");
  if (!g.shape.is_image()) fail(path, "images of " + shape + " have a zero height or width");
  return g;
}

float pixel(std::uint8_t v, std::size_t, const std::string&) { return static_cast<float>(v) / 255.0f; }

// A value as a message shows it, with 6 significant digits: "nan", "-inf", "1e+39".
std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

float pixel(double v, std::size_t i, const std::string& path) {
  if (!std::isfinite(v)) fail(path, "element " + std::to_string(i) + " is " + number_text(v));
  // Converting a finite double beyond float's range is undefined behaviour.
  if (std::fabs(v) > static_cast<double>(FLT_MAX)) {
    fail(path, "element " + std::to_string(i) + " (" + number_text(v) + ") is outside float32's range");
  }
  return static_cast<float>(v);
}

// Converts the array's elements of type T into CHW features, transposing from HWC when needed.
template <class T>
std::vector<float> to_chw(const npy_array& a, const image_layout& g, const std::string& path) {
  const std::size_t c_n = g.shape.channels, h_n = g.shape.height, w_n = g.shape.width;
  const std::size_t plane = h_n * w_n, dim = g.shape.size();
  std::vector<float> out(g.count * dim);
  const auto element = [&](std::size_t i) {
    T v;
    std::memcpy(&v, a.data.data() + i * sizeof(T), sizeof(T));
    return pixel(v, i, path);
  };
  if (!g.channels_last) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = element(i);
    return out;
  }
  std::size_t src = 0;
  for (std::size_t n = 0; n < g.count; ++n) {
    for (std::size_t y = 0; y < h_n; ++y) {
      for (std::size_t x = 0; x < w_n; ++x) {
        for (std::size_t c = 0; c < c_n; ++c) out[n * dim + c * plane + y * w_n + x] = element(src++);
      }
    }
  }
  return out;
}

// Labels of integer type T, checked to be in 0..255.
template <class T>
std::vector<std::uint8_t> labels_as(const npy_array& a, const std::string& path) {
  std::vector<std::uint8_t> out(a.data.size() / sizeof(T));
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, a.data.data() + i * sizeof(T), sizeof(T));
    const auto bad = [&](const char* what) {
      fail(path, "label " + std::to_string(v) + " of example " + std::to_string(i) + " is " + what +
                     " (labels must be in 0..255)");
    };
    if constexpr (std::is_signed_v<T>) {
      if (v < 0) bad("negative");
    }
    if (static_cast<std::uint64_t>(v) > 255) bad("too large");
    out[i] = static_cast<std::uint8_t>(v);
  }
  return out;
}

std::vector<std::uint8_t> read_labels(const std::string& path) {
  const npy_array a = read_npy_array(path, kLabelDescrs, kMissingHint);
  if (a.shape.size() != 1) fail(path, "labels of shape " + npy_shape_text(a.shape) + ", expected (N,)");
  const std::string& t = a.descr;
  if (t == "|u1") return labels_as<std::uint8_t>(a, path);
  if (t == "|i1") return labels_as<std::int8_t>(a, path);
  if (t == "<i2") return labels_as<std::int16_t>(a, path);
  if (t == "<u2") return labels_as<std::uint16_t>(a, path);
  if (t == "<i4") return labels_as<std::int32_t>(a, path);
  if (t == "<u4") return labels_as<std::uint32_t>(a, path);
  if (t == "<i8") return labels_as<std::int64_t>(a, path);
  return labels_as<std::uint64_t>(a, path);  // "<u8", the last of kLabelDescrs
}

}  // namespace

std::array<std::string, 2> npy_image_files(split which) {
  const std::string prefix = which == split::train ? "train" : "test";
  return {prefix + "_images.npy", prefix + "_labels.npy"};
}

dataset load_npy_images(const std::string& dir, split which) {
  const auto [images_name, labels_name] = npy_image_files(which);
  const std::string images_path = dir + "/" + images_name;
  const std::string labels_path = dir + "/" + labels_name;
  dataset d;
  {
    const npy_array images = read_npy_array(images_path, kImageDescrs, kMissingHint);
    const image_layout g = layout_of(images.shape, images_path);
    d.size = g.count;
    d.dim = g.shape.size();
    d.shape = g.shape;
    d.features = images.descr == "|u1"   ? to_chw<std::uint8_t>(images, g, images_path)
                 : images.descr == "<f4" ? to_chw<float>(images, g, images_path)
                                         : to_chw<double>(images, g, images_path);
  }
  d.labels = read_labels(labels_path);
  if (d.labels.size() != d.size) {
    fail(labels_path, std::to_string(d.labels.size()) + " labels but " + images_path + " has " +
                          std::to_string(d.size) + " images");
  }
  const std::uint8_t largest = *std::max_element(d.labels.begin(), d.labels.end());
  d.classes = std::max<std::size_t>(2, std::size_t{largest} + 1);
  return d;
}

}  // namespace qgossip
