#!/usr/bin/env bash
# Installs the build dependencies and configures the Release build in build/ (the CUDA backend
# too when the toolkit is installed). Used by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cuda_args=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
source scripts/ccache_args.sh
if [ -x /usr/local/cuda/bin/nvcc ]; then
  ccache_args CXX CUDA
else
  ccache_args CXX
fi
cmake --preset default "${cuda_args[@]}" "${ccache_args[@]}" "$@"
