"""The data a peer rank trains on: the whole Fashion-MNIST test set and its own shard of the training
set, with the batch order, exactly as a qgossip node of the same run (written by `qgossip shards`).

- Images are read from the IDX gzip files as qgossip's node/data/idx_reader.cpp reads them: uint8
  pixels -> float32 pixel / 255 (0 and 1 exactly at the ends).
- Standardization uses shards.json's channel_mean / channel_stddev (measured by qgossip on the whole
  training set, float64) and computes (x - mean) / stddev in float64, rounded to float32, as
  node/data/standardize.cpp does: the same numbers bit for bit.
- batches-<r>.npy holds the training-set indices of every step's batch, in the node's order.
- Only the rank's shard and the test set are kept (as a node keeps them).
"""
import gzip
import json
import os
import struct

import numpy as np


class DataError(Exception):
    """A missing or malformed input file; the message names it and what was expected."""


IDX_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


def read_idx(path):
    """An IDX file (gzip or raw) as a uint8 array of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise DataError(f"{path}: not an IDX file of unsigned bytes (magic 00 00 08 xx)")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataError(f"{path}: header cut short")
    shape = struct.unpack(">" + "I" * ndim, data[4:header])
    count = int(np.prod(shape)) if shape else 1
    if len(data) - header != count:
        raise DataError(f"{path}: {len(data) - header} data bytes, the header's shape {shape} says {count}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def load_split(directory, split, rows=None):
    """(features float32 [N, 784] in [0, 1], labels int64 [N]) of one Fashion-MNIST split, or of its
    examples `rows` only (in that order)."""
    images_file, labels_file = IDX_FILES[split]
    images = read_idx(os.path.join(directory, images_file))
    labels = read_idx(os.path.join(directory, labels_file))
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise DataError(f"{directory}: {split} images {images.shape} and labels {labels.shape} do not match")
    if rows is not None:
        if rows.size and (rows.min() < 0 or rows.max() >= images.shape[0]):
            raise DataError(f"{directory}: an example index outside 0..{images.shape[0] - 1}")
        images, labels = images[rows], labels[rows]
    features = images.reshape(images.shape[0], -1).astype(np.float32) / np.float32(255.0)
    return features, labels.astype(np.int64)


def standardize(features, mean, stddev):
    """Per-channel (x - mean) / stddev in float64, rounded to float32 (one channel here)."""
    divisor = stddev if stddev > 0 else 1.0
    return ((features.astype(np.float64) - mean) / divisor).astype(np.float32)


def read_shards_json(shards_dir):
    path = os.path.join(shards_dir, "shards.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror}); write it with `qgossip shards --config RUN.yaml "
                        f"--out {shards_dir}`") from None
    except ValueError as e:
        raise DataError(f"{path}: not JSON: {e}") from None
    for key in ("n", "seed", "batch", "steps_per_epoch", "steps_written", "dataset", "dir", "channel_mean",
                "channel_stddev"):
        if key not in meta:
            raise DataError(f"{path}: missing key '{key}' (written by an older qgossip?)")
    if meta["dataset"] != "fashion-mnist":
        raise DataError(f"{path}: dataset {meta['dataset']!r}: the peers read fashion-mnist only")
    if len(meta["channel_mean"]) != 1:
        raise DataError(f"{path}: {len(meta['channel_mean'])} channels; Fashion-MNIST has one")
    return meta


def load_npy(path, ndim):
    try:
        a = np.load(path)
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from None
    except ValueError as e:
        raise DataError(f"{path}: not a .npy file: {e}") from None
    if a.dtype != np.int64 or a.ndim != ndim:
        raise DataError(f"{path}: expected int64 with {ndim} dimension(s), got {a.dtype} {a.shape}")
    return a


def load_rank_data(shards_dir, rank, world, data_dir=None, standardized=True):
    """Everything rank trains and tests on, as a dict: meta (shards.json), train_x/train_y (its shard's
    examples, in the shard's ascending order), test_x/test_y (the whole test set), shard (the shard's
    training-set indices) and batches [steps, batch] (each step's examples as positions in train_x).
    Like a qgossip node, only the shard and the test set are kept and standardized."""
    meta = read_shards_json(shards_dir)
    if meta["n"] != world:
        raise DataError(f"{shards_dir}/shards.json: written for {meta['n']} ranks, this run has {world}")
    if not 0 <= rank < world:
        raise DataError(f"rank {rank} outside 0..{world - 1}")
    shard = load_npy(os.path.join(shards_dir, f"shard-{rank}.npy"), 1)
    batches = load_npy(os.path.join(shards_dir, f"batches-{rank}.npy"), 2)
    if batches.shape[1] != meta["batch"]:
        raise DataError(f"{shards_dir}/batches-{rank}.npy: batches of {batches.shape[1]}, shards.json says "
                        f"{meta['batch']}")
    if np.any(np.diff(shard) <= 0):
        raise DataError(f"{shards_dir}/shard-{rank}.npy: indices not strictly ascending")
    positions = np.searchsorted(shard, batches)
    if batches.size and (positions.max() >= shard.size or not np.array_equal(shard[positions], batches)):
        raise DataError(f"{shards_dir}/batches-{rank}.npy: a batch holds an example outside rank {rank}'s shard")
    directory = data_dir or meta["dir"]
    train_x, train_y = load_split(directory, "train", shard)
    test_x, test_y = load_split(directory, "test")
    if standardized:
        mean, sd = meta["channel_mean"][0], meta["channel_stddev"][0]
        train_x, test_x = standardize(train_x, mean, sd), standardize(test_x, mean, sd)
    return {"meta": meta, "train_x": train_x, "train_y": train_y, "test_x": test_x, "test_y": test_y,
            "shard": shard, "batches": positions}
