#!/usr/bin/env bash
# Builds everything (Release, CUDA backend too when nvcc is installed) and runs every test.
# This is README command two and what CI runs.
#   scripts/test.sh [extra ctest arguments, e.g. -L engine or -R tst_cli]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/configure.sh
cmake --build --preset default
# Tests run headless, on Qt's offscreen platform.
export QT_QPA_PLATFORM=offscreen
ctest --preset default "$@"
