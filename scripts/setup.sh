#!/usr/bin/env bash
# Installs the Debian packages EnsembleLab needs to build and test. Idempotent: when every
# package is already installed it only runs `dpkg -s` and returns in well under a second.
set -euo pipefail
PKGS=(
  cmake g++ make pkg-config
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libxkbcommon-dev
  # Qt Svg: the views' pictures exported as SVG (QSvgGenerator) for papers and slides.
  qt6-svg-dev
  libeigen3-dev zlib1g-dev nlohmann-json3-dev
  # The runs store (engine/runs/): one SQLite database.
  libsqlite3-dev
  # The ONNX export's library; its headers include protobuf's, a package it does not pull in.
  libonnx-dev libprotobuf-dev
  libopenmpi-dev openmpi-bin
  # OpenBLAS (DYNAMIC_ARCH) for the CPU backend's large products: backend.gemm. The OpenMP
  # build too, so that tst_gemm_library tests both of Debian's builds (the pthread one stays
  # the selected alternative: priority 100 against 95).
  libopenblas-dev libopenblas0-openmp
  xvfb xauth fonts-dejavu-core
)
if dpkg -s "${PKGS[@]}" >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${PKGS[@]}" >/dev/null
