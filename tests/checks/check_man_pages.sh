#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The man pages (packaging/man) against the programs' own help, so neither drifts from the
# other (CTest: tst_man_pages):
# - ensemble-cli.1 holds every command's synopsis and summary as `ensemble-cli COMMAND --help`
#   prints them, names every command, and names no flag the program lacks;
# - ensemble-lab.1 names every option of `ensemble-lab --help` with its value, and no other;
# - ensemble-fetch-mnist.1 has the script's usage line;
# - each page's .TH carries the project() version.
#   check_man_pages.sh ENSEMBLE_CLI ENSEMBLE_LAB|- FETCH_MNIST_SCRIPT MAN_DIR VERSION
# (No `producer | grep -q`: under pipefail the producer's SIGPIPE, when grep stops early,
# would fail the pipeline at random.)
set -euo pipefail
[ $# -eq 5 ] || { echo "usage: $0 CLI LAB|- FETCH MAN_DIR VERSION" >&2; exit 2; }
cli=$1 lab=$2 fetch=$3 mandir=$4 version=$5
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# A man page as the words a reader sees, on one line: comments and layout requests dropped,
# font macros (.B, .BR, .RI, ...) joined as troff joins them, escapes resolved, blanks
# collapsed.
visible() {
  awk '
    function args(s,    out, n, i, c, quoted, cur) {
      n = 0; cur = ""; quoted = 0
      for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "\"") { quoted = !quoted; continue }
        if (c == " " && !quoted) { if (cur != "") { words[++n] = cur; cur = "" } continue }
        cur = cur c
      }
      if (cur != "") words[++n] = cur
      return n
    }
    /^\.\\"/ { next }
    /^\.(B|I|SH|SS) / {
      n = args(substr($0, index($0, " ") + 1)); line = ""
      for (i = 1; i <= n; i++) line = line (i > 1 ? " " : "") words[i]
      print line; next
    }
    /^\.(BR|RB|BI|IB|IR|RI) / {
      n = args(substr($0, index($0, " ") + 1)); line = ""
      for (i = 1; i <= n; i++) line = line words[i]
      print line; next
    }
    /^\./ { next }
    { print }
  ' "$1" | sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/\\&//g' | tr -s ' \n\t' ' '
}

contains() {  # contains TEXT PIECE: whether PIECE (blanks collapsed) is in TEXT
  local piece
  piece=$(printf '%s' "$2" | tr -s ' \n\t' ' ' | sed -e 's/^ //' -e 's/ $//')
  [[ "$1" == *"$piece"* ]]
}

th_version() {
  [[ $(grep -m1 '^\.TH' "$1") == *"\"EnsembleLab $version\""* ]] ||
    fail "$(basename "$1"): .TH does not say \"EnsembleLab $version\" (the project() version)"
}

# --- ensemble-cli ---
page="$mandir/ensemble-cli.1"
text=$(visible "$page")
th_version "$page"
overview=$("$cli" --help)
commands=$(printf '%s\n' "$overview" | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$commands" ] || fail "ensemble-cli --help lists no commands"
all_help="$overview"
# check_usage NAME HELP: the page holds NAME's synopsis and summary as its --help prints them.
check_usage() {
  local name=$1 help=$2 synopsis summary
  # usage: ensemble-cli NAME SYNOPSIS...   (further synopsis lines indented), then the summary
  synopsis=$(printf '%s\n' "$help" | sed '$d' | sed -e "1s/^usage: ensemble-cli $name//")
  summary=$(printf '%s\n' "$help" | tail -n 1)
  if [ -n "$(printf '%s' "$synopsis" | tr -d ' \n')" ]; then
    contains "$text" "$synopsis" ||
      fail "ensemble-cli.1 lacks the synopsis of '$name' as --help prints it:$(printf '\n  %s' "$synopsis")"
  fi
  contains "$text" "$summary" || fail "ensemble-cli.1 lacks the summary of '$name': $summary"
}
for c in $commands; do
  help=$("$cli" "$c" --help)
  all_help+=$'\n'"$help"
  grep -q "^\.SS $c\$" "$page" || fail "ensemble-cli.1 has no '.SS $c'"
  if [[ $(head -n 1 <<<"$help") == *"<subcommand>"* ]]; then
    # A command of subcommands (runs): its summary, then each subcommand's usage.
    contains "$text" "$(tail -n 1 <<<"$help")" ||
      fail "ensemble-cli.1 lacks the summary of '$c': $(tail -n 1 <<<"$help")"
    for s in $(sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' <<<"$help"); do
      subhelp=$("$cli" "$c" "$s" --help)
      all_help+=$'\n'"$subhelp"
      check_usage "$c $s" "$subhelp"
    done
  else
    check_usage "$c" "$help"
  fi
done
for s in $(grep '^\.SS ' "$page" | cut -d' ' -f2); do
  grep -qx -- "$s" <<<"$commands" || fail "ensemble-cli.1 describes '$s', which is no command"
done
help_flags=$(printf '%s\n' "$all_help" | grep -oE -- '--[a-z][a-z-]*' | sort -u)
for f in $(printf '%s' "$text" | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
  grep -qx -- "$f" <<<"$help_flags" || fail "ensemble-cli.1 names $f, which ensemble-cli does not have"
done
"$cli" --version >/dev/null || fail "ensemble-cli --version failed"

# --- ensemble-lab ---
if [ "$lab" != "-" ]; then
  page="$mandir/ensemble-lab.1"
  text=$(visible "$page")
  th_version "$page"
  help=$(QT_QPA_PLATFORM=offscreen "$lab" --help)
  # "  -h, --help   ..." and "  --config <FILE|PRESET>   ..."
  options=$(printf '%s\n' "$help" | sed -n 's/^  \(-[a-zA-Z?], \)\{0,1\}\(--[a-z][a-z-]*\)\( <\([^>]*\)>\)\{0,1\}  .*/\2 \4/p')
  [ -n "$options" ] || fail "ensemble-lab --help lists no options"
  while read -r flag value; do
    contains "$text" "$flag${value:+ $value}" ||
      fail "ensemble-lab.1 does not name '$flag${value:+ $value}' as ensemble-lab --help does"
  done <<<"$options"
  for f in $(printf '%s' "$text" | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
    grep -qx -- "$f" <<<"$(cut -d' ' -f1 <<<"$options")" ||
      fail "ensemble-lab.1 names $f, which ensemble-lab does not have"
  done
fi

# --- ensemble-fetch-mnist ---
page="$mandir/ensemble-fetch-mnist.1"
text=$(visible "$page")
th_version "$page"
usage=$("$fetch" --help | sed -n 's/^usage: [^ ]* \(.*\)   (.*/\1/p')
[ -n "$usage" ] || fail "fetch-mnist.sh --help prints no usage line"
contains "$text" "ensemble-fetch-mnist $usage" ||
  fail "ensemble-fetch-mnist.1 lacks the synopsis 'ensemble-fetch-mnist $usage'"

if [ "$failures" -gt 0 ]; then
  echo "$failures difference(s) between the man pages in $mandir and the programs' help" >&2
  exit 1
fi
echo "man pages agree with the programs' help"
