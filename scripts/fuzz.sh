#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang, ASan + UBSan, engine only) and runs each
# for SECONDS (default 20; CI runs 10) over a copy of its checked-in seed corpus.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 600 fuzz_csv
# Needs clang and libclang-rt-14-dev (libFuzzer) and libomp-14-dev (clang's OpenMP); see
# shared TOOLCHAIN.md. Exits non-zero on the first finding, leaving the crashing input in
# build-fuzz/findings/<target>/ (crash-*, leak-*, oom-*, timeout-*) to turn into a test.
# Each target's executions and seconds go to build-fuzz/findings/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(fuzz_safetensors fuzz_model_io fuzz_csv fuzz_idx fuzz_config fuzz_runs_filter)
fi

source scripts/ccache_args.sh
ccache_args CXX
cmake --preset fuzz "${ccache_args[@]}" >/dev/null
nice -n 10 cmake --build --preset fuzz

# Leaks are findings too; a UBSan report stops the run (the build also compiles UBSan with
# -fno-sanitize-recover).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
# The readers run on one thread: what is fuzzed is parsing, and libgomp's pool would only add
# noise to leak checks.
export OMP_NUM_THREADS=1

out=build-fuzz/findings
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
status=0
for t in "${targets[@]}"; do
  work="$out/$t"
  mkdir -p "$work/corpus"
  # New inputs go to a scratch corpus; the checked-in seeds are read, never rewritten.
  log="$work/log.txt"
  echo "== $t: ${seconds}s"
  start=$(date +%s)
  if ! (cd "$work" && "../../fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
          -malloc_limit_mb=1024 -print_final_stats=1 corpus "../../../fuzz/corpus/${t#fuzz_}" \
          >"log.txt" 2>&1); then
    status=1
    tail -n 60 "$log"
    echo "!! $t: finding; the input is in $work (crash-*/leak-*/oom-*/timeout-*)" >&2
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  echo "$t: ${runs:-?} executions in $(($(date +%s) - start)) s" | tee -a "$summary"
  if [ $status -ne 0 ]; then
    break
  fi
done
exit $status
