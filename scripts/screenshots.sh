#!/usr/bin/env bash
# Makes the pictures in docs/images/ (README and docs/app.md) with ensemble-lab's --screenshot
# mode, offscreen, at 900 x 600: the window size the README promises every view is readable at.
# The MNIST pictures need MNIST in the default folder (scripts/fetch-mnist.sh).
# Usage: scripts/screenshots.sh [NAME...]   (default: every picture; NAME as in docs/images)
set -euo pipefail
cd "$(dirname "$0")/.."
lab=build/app/ensemble-lab
out=docs/images
size=900x600
export QT_QPA_PLATFORM=offscreen

shoot() {
  local name=$1
  shift
  echo "== $name: ensemble-lab $*" >&2
  "$lab" --window-size "$size" "$@" --screenshot "$out/$name.png" >/dev/null
}

want() {
  [ ${#names[@]} -eq 0 ] || [[ " ${names[*]} " == *" $1 "* ]]
}

names=("$@")
want boundary && shoot boundary --config spirals --set ensemble.members=16 --train-steps 2000 \
  --hover 0.62,0.38
want epistemic && shoot epistemic --config spirals --train-steps 2000 --quantity epistemic
want members && shoot members --config spirals-bootstrap --train-steps 2000 --view members
want curves && shoot curves --config spirals --train-steps 2000 --view curves
want calibration && shoot calibration --config spirals --train-steps 2000 --view calibration
want sweep && shoot sweep --config spirals-bootstrap --train-steps 2000 --view sweep
want active && shoot active --config spirals --set dataset.n=500 --set active.per_round=8 \
  --train-steps 200 --view active --active-rounds 6
want regression && shoot regression --config cubic --train-steps 150 --view regression
want mnist && shoot mnist --config mnist-mlp --set ensemble.members=4 --train-steps 600 \
  --view images --demo-digit
want filters && shoot filters --config mnist-cnn --set backend.kind=cpu --train-steps 100 \
  --view filters --demo-digit
# The four methods' ensemble boundaries over their epistemic maps on one colour scale (the
# spirals preset's K, steps and seed; docs/methods.md): larger than the others to fit them.
want methods && "$lab" --window-size 1440x900 --config spirals --train-steps 0 --view methods \
  --compare-methods independent,mc_dropout,batchensemble,snapshot \
  --screenshot "$out/methods.png" >/dev/null
