#!/usr/bin/env bash
# Builds only the tests a ctest selection needs, under a sanitizer preset, and runs them.
#   scripts/sanitize.sh asan [ctest selection]   default: labels engine and data but tst_mnist
#                                                (ASan + UBSan, Debug; tst_mnist trains a real
#                                                MNIST epoch, far too slow sanitized)
#   scripts/sanitize.sh tsan [ctest selection]   default: tst_gui_controller and tst_trainer
#                                                (ThreadSanitizer: clang, libomp and Archer)
# The presets set ASAN_OPTIONS / UBSAN_OPTIONS / TSAN_OPTIONS so that a report fails its test.
# The tsan preset builds with clang so that OpenMP is LLVM's libomp, whose Archer tool
# (OMP_TOOL_LIBRARIES=libarcher.so) tells TSan about OpenMP's barriers and tasks: with GCC's
# uninstrumented libgomp every parallel region is reported falsely (tst_trainer runs 2 and 3
# threads on purpose). Qt's own queue locks are described by ui/controller/thread_handoff.h;
# tests/tsan.supp says why each remaining suppression is a false positive.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:?usage: scripts/sanitize.sh asan|tsan [ctest selection]}"
shift
selection=("$@")
if [ ${#selection[@]} -eq 0 ]; then
  case "$preset" in
    asan) selection=(-L 'engine|data' -E '^tst_mnist$') ;;
    tsan) selection=(-R '^(tst_gui_controller|tst_trainer)$') ;;
    *) echo "sanitize.sh: unknown preset '$preset' (asan, tsan)" >&2; exit 2 ;;
  esac
fi

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake --preset "$preset" "${launcher[@]}" >/dev/null
# The tests' names are their targets' names; build just those (tst_cli pulls in ensemble-cli),
# not the whole tree with the app.
mapfile -t tests < <(ctest --preset "$preset" -N "${selection[@]}" |
                     sed -n 's/^ *Test *#[0-9]*: *\([A-Za-z0-9_]*\)$/\1/p')
if [ ${#tests[@]} -eq 0 ]; then
  echo "sanitize.sh: no test matches ${selection[*]}" >&2
  exit 2
fi
echo "sanitize.sh: $preset: ${tests[*]}"
cmake --build --preset "$preset" --target "${tests[@]}"
export QT_QPA_PLATFORM=offscreen
ctest --preset "$preset" "${selection[@]}"
