#!/usr/bin/env bash
# Installs the Debian packages qgossip needs, only those missing. Idempotent; silent when nothing is missing.
# libtorch-dev is the libtorch model backend (LeNet-5, ResNet-20, TorchScript; CPU), with OpenBLAS as the
# BLAS it loads (libopenblas0-pthread takes the libblas.so.3 alternative); python3-torch writes the
# TorchScript files the tests train and is the peer baseline; pybind11-dev and python3-dev build the Python
# module (python/, docs/python.md), python3-pytest runs its tests, python3-venv, -pip, -setuptools and -wheel
# are `pip install .` into a venv (pyproject.toml, setup.py). slurm-wlm (slurmctld, slurmd, the client
# commands) and munge are the one-machine Slurm of scripts/slurm-local.sh and tests/integration/slurm_test.sh;
# where systemd runs, installing them starts a system munged, and Debian's slurmctld/slurmd units wait
# for an /etc/slurm/slurm.conf that nothing here writes (docs/slurm.md). bible-kjv (its `bible` command)
# and bible-kjv-text are the language models' corpus, the King James Version (examples/python/corpus.py).
# Usage: scripts/setup.sh            (as root, or with sudo available)
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libzmq3-dev cppzmq-dev libasio-dev libeigen3-dev libyaml-cpp-dev doctest-dev zlib1g-dev
      libcli11-dev libbenchmark-dev libsodium-dev nlohmann-json3-dev python3 python3-matplotlib python3-yaml dataset-fashion-mnist
      bible-kjv bible-kjv-text
      iproute2 iputils-ping
      libtorch-dev libopenblas0-pthread python3-torch
      pybind11-dev python3-dev python3-pytest python3-venv python3-pip python3-setuptools python3-wheel
      clang libclang-rt-14-dev
      slurm-wlm munge)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
echo "setup: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
