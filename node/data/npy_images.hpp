#pragma once
// Image data sets from NumPy arrays, for data that come in no other format: DIR/train_images.npy
// with DIR/train_labels.npy, and DIR/test_images.npy with DIR/test_labels.npy, as numpy.save
// writes them (read by node/data/npy.hpp).
//
// Images: dtype uint8 (|u1, scaled by 1/255) or float32 / float64 (<f4, <f8, taken as they are; NaN,
// Inf, and float64 beyond float32's range are refused), with shape
//   (N, H, W)     one channel;
//   (N, C, H, W)  C in 1..4, channel-major already;
//   (N, H, W, C)  C in 1, 3 or 4 and H, W > 4 (as image libraries store them), transposed to CHW.
// A rank-4 shape is read as (N, C, H, W) whenever its second dimension is 1..4.
// Labels: any integer dtype (|u1 |i1 <i2 <u2 <i4 <u4 <i8 <u8) of shape (N,), each in 0..255.
// The data set has classes = its largest label + 1, at least 2.
// Everything wrong (missing file, other dtypes, ranks or shapes, no images, a different N in the
// two files, a label outside 0..255) is a config_error whose message starts with the file's path.
#include <array>
#include <string>

#include "node/data/dataset.hpp"

namespace qgossip {

[[nodiscard]] dataset load_npy_images(const std::string& dir, split which);
// The two files load_npy_images reads for a split, by name: {images, labels}, e.g. train_images.npy
// and train_labels.npy.
[[nodiscard]] std::array<std::string, 2> npy_image_files(split which);

}  // namespace qgossip
