#!/usr/bin/env bash
# Builds everything (Release, CUDA backend too when nvcc is installed) and runs every test.
# This is README command two and what CI runs.
#   scripts/test.sh [extra ctest arguments, e.g. -L engine or -R tst_cli]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cuda_args=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
cmake --preset default "${cuda_args[@]}"
cmake --build --preset default
# Tests run headless: Qt's offscreen platform, MPI on loopback only.
export QT_QPA_PLATFORM=offscreen
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_oob_tcp_if_include=lo
ctest --preset default "$@"
