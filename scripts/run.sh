#!/usr/bin/env bash
# Builds EnsembleLab and starts the desktop app on the two-spirals preset (README command one).
# Extra arguments go to the app, e.g. scripts/run.sh --config moons.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/configure.sh >/dev/null
cmake --build --preset default
if [ $# -eq 0 ]; then
  set -- --config spirals
fi
if [ -x build/app/ensemble-lab ]; then
  exec build/app/ensemble-lab "$@"
fi
echo "ensemble-lab was not built (ENSEMBLE_GUI=OFF?); training on the command line instead" >&2
exec build/app/ensemble-cli train "$@"
