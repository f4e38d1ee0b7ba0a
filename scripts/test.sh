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
# One suite per core, the longest first (tests/CMakeLists.txt's COST): most suites use one core
# (the window's thread, a CLI process), and none measures speed (the benchmarks do). OpenMP
# threads that find their core taken sleep rather than spin, as under scripts/sanitize.sh: two
# suites' teams spinning on the same cores make a run of seconds take ten times as long.
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$(nproc)}"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
ctest --preset default "$@"
