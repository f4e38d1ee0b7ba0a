#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# ensemble-cli's bash completion (packaging/ensemble-cli.bash-completion) against the program it
# completes for (CTest: tst_completion): commands, flags, fixed flag values, config keys and
# their values, preset names. Exits 77 (skipped) without the bash-completion package.
#   check_completion.sh ENSEMBLE_CLI COMPLETION_FILE
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 ENSEMBLE_CLI COMPLETION_FILE" >&2; exit 2; }
cli=$1 completion=$2
# File-name completions (--ood FILE.csv) offer what the working folder holds: run in an empty
# one, not in the build tree (whose fault_write_shim_autogen once matched "fa").
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
framework=/usr/share/bash-completion/bash_completion
if [ ! -r "$framework" ]; then
  echo "bash-completion is not installed ($framework): skipped"
  exit 77
fi
# shellcheck source=/dev/null
source "$framework"
# shellcheck source=/dev/null
source "$completion"

failures=0
# expect "LINE" EXPECTED...: completing LINE as typed (its first word stands for the program)
# offers exactly EXPECTED, or with -contains at least EXPECTED. The words are split as bash
# splits them for a completion function: at blanks, and around each '=' (COMP_WORDBREAKS).
expect() {
  local mode=exact
  if [ "$1" = -contains ]; then
    mode=contains
    shift
  fi
  local line=$1
  shift
  line="$cli ${line#* }"
  local typed
  read -r -a typed <<<"${line//=/ = }"
  COMP_WORDS=("${typed[@]}")
  [[ $line == *" " || $line == *"=" ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE=$line
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _ensemble_cli
  local got want
  got=$(printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort -u | tr '\n' ' ')
  want=$(printf '%s\n' "$@" | sort -u | tr '\n' ' ')
  if [ "$mode" = exact ] && [ "$got" != "$want" ]; then
    echo "FAIL: '${line#* }<TAB>' offers '$got', expected '$want'" >&2
    failures=$((failures + 1))
  elif [ "$mode" = contains ]; then
    local w
    for w in "$@"; do
      if [[ " $got" != *" $w "* ]]; then
        echo "FAIL: '${line#* }<TAB>' offers '$got', which lacks '$w'" >&2
        failures=$((failures + 1))
      fi
    done
  fi
}

commands=$("$cli" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
# shellcheck disable=SC2086
expect "x " $commands --help --version
expect "x tr" train
expect "x pre" predict presets
# A command of subcommands: its subcommands, then each one's flags.
expect "x runs " list show diff tag note rm export --help
expect "x runs d" diff
expect "x runs list --f" --format
expect "x runs list --format " table csv json
expect "x runs rm --" --files --store --help
expect "x reproduce w" whitney-2021
expect "x reproduce ga" gal-2017-active
expect "x train --con" --config
expect "x train --q" --quiet
expect "x train --check" --checkpoint --checkpoint-every
expect "x train --config spi" spirals spirals-bootstrap
expect "x train --config mnist-" mnist-active mnist-active-cnn mnist-cnn mnist-mlp
expect "x train --set optimizer.ki" optimizer.kind=
expect "x train --set optimizer.kind=ad" adam adamw
expect "x train --set model.activation=" relu tanh gelu
expect -contains "x bench --set dataset.kind=" spirals moons mnist fashion-mnist csv
expect "x export --format o" onnx
expect "x dataset --split t" test train
expect "x schema --format " markdown json
expect "x eval --ood fa" fashion-mnist
expect -contains "x eval --" --weights --ood --report --csv --help
expect "x active --acq" --acquisition
expect -contains "x active --" --config --seeds --rounds --labels --report --csv --help
# --acquisition completes active.acquisition's choices, item by item.
expect "x active --acquisition bald,bat" bald,batchbald
# An item already in the list is not offered again (bald,ba once offered bald,bald).
expect "x active --acquisition bald,ba" bald,batchbald
expect "x active --acquisition random,bald," random,bald,entropy random,bald,variation_ratios \
  random,bald,margin random,bald,batchbald
expect "x active --acquisition r" random
expect "x compare --me" --methods
expect -contains "x compare --" --config --set --methods --shift --level --report --csv --help
expect "x compare --shift t" translate
# --methods completes the registry's methods (ensemble.method's choices), item by item.
# The third column of schema's Markdown row: `independent`, `mc_dropout`, ...
methods=$("$cli" schema | awk -F' [|] ' '$1 == "| `ensemble.method`" { gsub(/[`,]/, "", $3); print $3 }')
[ -n "$methods" ] || { echo "FAIL: ensemble-cli schema has no ensemble.method row" >&2; failures=$((failures + 1)); }
# shellcheck disable=SC2086
expect "x compare --methods " $methods
expect "x compare --methods indep" independent
expect "x compare --methods snapshot,indep" snapshot,independent
expect "x compare --methods independent,snapshot,mc_dropout," independent,snapshot,mc_dropout,batchensemble

if [ "$failures" -gt 0 ]; then
  echo "$failures completion(s) differ" >&2
  exit 1
fi
echo "bash completion agrees with $cli"
