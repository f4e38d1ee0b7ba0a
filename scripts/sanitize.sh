#!/usr/bin/env bash
# Builds only the tests a ctest selection needs, under a sanitizer preset, in one build tree
# (one configure, one build of what the tests share), and runs them.
#   scripts/sanitize.sh asan [ctest selection]   default: every suite but label gpu and tst_mnist
#                                                (ASan + UBSan, Debug at -O1; tst_mnist trains real
#                                                MNIST epochs to accuracy targets, far too slow
#                                                sanitized; its reader is fuzz_idx's and tst_data's)
#   scripts/sanitize.sh tsan [ctest selection]   default: tst_gui_controller and tst_trainer
#                                                (ThreadSanitizer: clang, libomp and Archer);
#                                                `-L ui` for every window suite
# The presets set ASAN_OPTIONS / UBSAN_OPTIONS / TSAN_OPTIONS so that a report fails its test.
# The tsan preset builds with clang so that OpenMP is LLVM's libomp, whose Archer tool
# (OMP_TOOL_LIBRARIES=libarcher.so) tells TSan about OpenMP's barriers and tasks: with GCC's
# uninstrumented libgomp every parallel region is reported falsely (tst_trainer runs 2 and 3
# threads on purpose). Qt's own queue locks are described by ui/controller/thread_handoff.h;
# tests/sanitizers/tsan.supp says why each remaining suppression is a false positive.
# ccache is used when installed (never required; scripts/ccache_args.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:?usage: scripts/sanitize.sh asan|tsan [ctest selection]}"
shift
case "$preset" in
  asan | tsan) ;;
  *) echo "sanitize.sh: unknown preset '$preset' (asan, tsan)" >&2; exit 2 ;;
esac

source scripts/ccache_args.sh
ccache_args CXX
cmake --preset "$preset" "${ccache_args[@]}" >/dev/null

names() {
  ctest --preset "$preset" -N "$@" | sed -n 's/^ *Test *#[0-9]*: *\([A-Za-z0-9_]*\)$/\1/p'
}
selection=("$@")
if [ ${#selection[@]} -eq 0 ]; then
  case "$preset" in
    asan) selection=(-LE gpu -E '^tst_mnist$') ;;
    tsan) selection=(-R '^(tst_gui_controller|tst_trainer)$') ;;
  esac
fi
# The tests' names are their targets' names (tst_gui_screenshot's builds ensemble-lab); build
# just those, not the whole tree, in one invocation so that what they share is built once.
mapfile -t tests < <(names "${selection[@]}")
if [ ${#tests[@]} -eq 0 ]; then
  echo "sanitize.sh: no test matches ${selection[*]}" >&2
  exit 2
fi
echo "sanitize.sh: $preset: ${tests[*]}"
# One target over the selection (tests/CMakeLists.txt's selected_suites), so that the build runs
# its jobs across suites rather than one suite after another.
selection_list="$(IFS=';'; echo "${tests[*]}")"
cmake --preset "$preset" "${ccache_args[@]}" -DENSEMBLE_SUITE_SELECTION="$selection_list" >/dev/null
nice -n 10 cmake --build --preset "$preset" --target selected_suites
export QT_QPA_PLATFORM=offscreen
# One suite per core: most suites use one (the window's, a CLI process's), and the few that
# time themselves measure what they compare against on the same loaded machine (the monkey's
# stall is lateness less the time its thread waited for a CPU).
export CTEST_PARALLEL_LEVEL="${CTEST_PARALLEL_LEVEL:-$(nproc)}"
# OpenMP threads that find their core taken sleep at a barrier rather than spin: two suites'
# teams (and tst_mpi's ranks) on the same cores spin against each other otherwise, a run of
# several seconds then taking ten times as long (seen here with a Release ensemble-cli beside a
# second one). Nothing here measures speed.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
ctest --preset "$preset" "${selection[@]}"
