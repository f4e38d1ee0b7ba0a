#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Checks the Debian package that scripts/package.sh made, as a user would meet it (CI runs it;
# run it as root on a Debian 12 machine, on which it installs and then purges the package):
#   scripts/check-package.sh BUILD_DIR/package/ensemblelab_VERSION_ARCH.deb
# 1. lintian: no errors; Depends names the package of every library the programs need
#    (dpkg-shlibdeps cannot drop one silently).
# 2. apt-get install ./the.deb; every library the installed programs load resolves, with
#    /usr/local/cuda off the library path, to a file a Debian package owns (ldd, dpkg -S).
# 3. From a folder outside the checkout, the installed programs: --version, `ensemble-cli train
#    --config spirals` (on the CPU, saying so once, where there is no GPU), `ensemble-lab
#    --config spirals --train-steps 10 --screenshot` (offscreen), and an .ensemble.json file
#    opened as the desktop entry opens it.
# 4. The desktop entry, icons, metainfo, MIME type, man pages and bash completion are where a
#    desktop looks for them, valid, and registered by the system's triggers; the documentation
#    that Help opens is in /usr/share/doc/ensemblelab with every picture its pages show.
# 5. apt-get purge: no file of the package is left, the MIME type is gone.
set -euo pipefail
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 ensemblelab_VERSION_ARCH.deb" >&2; exit 2; }
deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/.."
checkout=$(pwd)
[ "$(id -u)" -eq 0 ] || { echo "check-package: run as root (it installs the package)" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
app_id=org.ensemblelab.EnsembleLab
mime=application/x-ensemblelab-experiment

fail() {
  echo "check-package: FAIL: $*" >&2
  exit 1
}
say() { echo "check-package [$SECONDS s]: $*"; }

# The checking tools (not the package's dependencies: apt brings those).
tools=()
for p in lintian desktop-file-utils appstream shared-mime-info bash-completion man-db \
  libglib2.0-bin hicolor-icon-theme file; do
  dpkg -s "$p" >/dev/null 2>&1 || tools+=("$p")
done
if [ ${#tools[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
fi
if dpkg -s ensemblelab >/dev/null 2>&1; then
  fail "ensemblelab is installed already; apt-get purge ensemblelab first"
fi

# --- 1. the .deb itself ---
lintian --fail-on error "$deb" ||
  fail "lintian reports errors (above)"
say "lintian: no errors"
staged=$(mktemp -d)
trap 'rm -rf "$staged"' EXIT
dpkg-deb -x "$deb" "$staged"
depends=$(dpkg-deb -f "$deb" Depends)
# Which package owns a library file: one `dpkg -S` for all of them (each call reads dpkg's
# whole database). /lib and /usr/lib are one folder (merged /usr), so each file is also asked
# for by its real path with and without /usr.
declare -A owner_of
candidates() {
  local real
  real=$(readlink -f "$1")
  printf '%s\n' "$1" "$real" "${real#/usr}" "/usr$real"
}
learn_owners() {
  local line pkgs
  mapfile -t paths < <(for p in "$@"; do candidates "$p"; done | sort -u)
  [ ${#paths[@]} -gt 0 ] || return 0
  while IFS= read -r line; do
    [[ $line == diversion* ]] && continue
    pkgs=${line%: *}
    pkgs=${pkgs%%,*}
    owner_of[${line##*: }]=${pkgs%%:*}
  done < <(dpkg -S "${paths[@]}" 2>/dev/null)
}
owner() {
  local c
  while IFS= read -r c; do
    if [ -n "${owner_of[$c]:-}" ]; then
      echo "${owner_of[$c]}"
      return 0
    fi
  done < <(candidates "$1")
  return 1
}
needed=()  # PROGRAM LIBRARY PATH, one a line
# The loader's cache, read once. (Not `ldconfig -p | awk '... exit'`: under pipefail, awk
# leaving early gives ldconfig a SIGPIPE and the script exit 141, as one CI run did.)
ld_cache=$(ldconfig -p)
for program in "$staged"/usr/bin/*; do
  [[ $(file -b "$program") == ELF* ]] || continue
  for lib in $(readelf -d "$program" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(awk -v l="$lib" '$1 == l && /x86-64/ && !found { print $NF; found = 1 }' <<<"$ld_cache")
    [ -n "$path" ] || fail "$(basename "$program") needs $lib, which the system's loader does not know"
    needed+=("$(basename "$program") $lib $path")
  done
done
# A library behind Debian's alternatives (libopenblas.so.0: libopenblas0-pthread or -openmp)
# is named through the package shlibdeps gives for it (libopenblas0), whose own Depends list
# the owner as one of the alternatives.
named_through_meta() {
  local dep
  for dep in $(sed 's/([^)]*)//g; s/[,|]/ /g' <<<"$depends"); do
    dpkg-query -W -f='${Depends}\n' "$dep" 2>/dev/null | tr ',|' '\n\n' |
      sed 's/(.*//; s/[[:space:]]//g; s/:.*//' | grep -qx "$1" && return 0
  done
  return 1
}
learn_owners $(printf '%s\n' "${needed[@]}" | cut -d' ' -f3)
for entry in "${needed[@]}"; do
  read -r program lib path <<<"$entry"
  pkg=$(owner "$path") || fail "$program needs $path, which no Debian package owns"
  [[ ", $depends," == *", $pkg "* || ", $depends," == *", $pkg,"* ]] || named_through_meta "$pkg" ||
    fail "$program needs $lib from $pkg, which Depends ($depends) does not name"
done
say "Depends names the package of every library the programs need: $depends"

# --- 2. install ---
apt-get install -y -qq "$deb" >/dev/null || fail "apt-get install $deb failed"
mapfile -t files < <(dpkg -L ensemblelab | while read -r f; do [ -d "$f" ] || echo "$f"; done)
say "installed ${#files[@]} files"
loaded=()  # PROGRAM PATH, one a line
for program in /usr/bin/ensemble-cli /usr/bin/ensemble-lab; do
  [ -x "$program" ] || fail "$program is not installed"
  while read -r line; do
    case "$line" in
      *"not found"*) fail "$program: $line" ;;
      linux-vdso*) continue ;;
    esac
    path=$(printf '%s\n' "$line" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; t; s/^\(\/[^ ]*\) (.*/\1/p')
    [ -n "$path" ] || continue
    case "$path" in /usr/local/*) fail "$program loads $path from /usr/local" ;; esac
    loaded+=("$program $path")
  done < <(env -u LD_LIBRARY_PATH ldd "$program")
done
learn_owners $(printf '%s\n' "${loaded[@]}" | cut -d' ' -f2)
for entry in "${loaded[@]}"; do
  read -r program path <<<"$entry"
  owner "$path" >/dev/null || fail "$program loads $path, which no Debian package owns"
done
say "every library the installed programs load belongs to a Debian package"

# --- 3. run, outside the checkout, without the CUDA toolkit on the library path ---
work=$(mktemp -d)
trap 'rm -rf "$staged" "$work"' EXIT
cd "$work"
run() { env -u LD_LIBRARY_PATH HOME="$work/home" XDG_DATA_HOME= QT_QPA_PLATFORM=offscreen "$@"; }
mkdir -p "$work/home"
version=$(dpkg-deb -f "$deb" Version)
for program in ensemble-cli ensemble-lab; do
  out=$(run "/usr/bin/$program" --version) || fail "$program --version failed"
  [[ $out == "$program $version"* ]] || fail "$program --version printed '$out'"
  say "$out"
done
grep -qx spirals <<<"$(run /usr/bin/ensemble-cli presets)" || fail "ensemble-cli presets does not list spirals"
run /usr/bin/ensemble-cli train --config spirals --export spirals.safetensors \
  >train.out 2>train.err || { cat train.err >&2; fail "ensemble-cli train --config spirals failed"; }
tail -n 2 train.out
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; then
  # No GPU or driver: the CPU, said once.
  [ "$(grep -c 'using the CPU' train.err)" -eq 1 ] ||
    fail "without a GPU, ensemble-cli train should say once that it uses the CPU; stderr was: $(cat train.err)"
fi
[ -s spirals.safetensors ] || fail "ensemble-cli train wrote no export"
# The CPU backend at every x86-64 level this CPU runs (the package's level objects,
# ENSEMBLE_ISA_DISPATCH; ld.so names the levels the CPU supports) and with each GEMM library
# (backend.gemm): each trains and says so in the kernels' report.
# Without level objects only `auto` (the built-in backend) runs.
levels=(auto)
if dpkg -L ensemblelab | grep -q '/libensemble_cpu_x86-64-v[234]\.so$'; then
  mapfile -t levels < <(/lib64/ld-linux-x86-64.so.2 --help |
    sed -n 's/^ *\(x86-64-v[234]\) (supported.*/\1/p')
fi
for isa in "${levels[@]}"; do
  for gemm in eigen openblas; do
    ENSEMBLE_CPU_ISA=$isa ENSEMBLE_GEMM=$gemm run /usr/bin/ensemble-cli bench --config spirals \
      --steps 5 --warmup 1 --repeat 1 >bench.out 2>&1 ||
      { cat bench.out >&2; fail "ENSEMBLE_CPU_ISA=$isa ENSEMBLE_GEMM=$gemm ensemble-cli bench failed"; }
    kernels=$(grep '^kernels' bench.out)
    [[ $kernels == "kernels: GEMM $gemm: "* ]] ||
      fail "ENSEMBLE_GEMM=$gemm: the kernels' report does not name it: $kernels"
    [[ $isa == auto || $kernels == *"($isa, "* ]] ||
      fail "ENSEMBLE_CPU_ISA=$isa: the kernels' report names another level: $kernels"
  done
done
say "${levels[*]} x eigen, openblas: $kernels"
run /usr/bin/ensemble-lab --config spirals --train-steps 10 --screenshot spirals.png >lab.out 2>&1 ||
  { cat lab.out >&2; fail "ensemble-lab --config spirals --train-steps 10 --screenshot failed"; }
[[ $(file -b spirals.png) == "PNG image data"* ]] || fail "ensemble-lab wrote no PNG"
say "ensemble-lab: $(grep -m1 'saved' lab.out)"
# An experiment file, opened as the desktop entry's Exec line opens it (%f: the file).
run /usr/bin/ensemble-cli config --config moons >experiment.ensemble.json
exec_line=$(sed -n 's/^Exec=//p' "/usr/share/applications/$app_id.desktop")
[ "$exec_line" = "ensemble-lab %f" ] || fail "unexpected Exec line: $exec_line"
run /usr/bin/ensemble-lab experiment.ensemble.json --train-steps 10 --screenshot experiment.png \
  >open.out 2>&1 || { cat open.out >&2; fail "ensemble-lab experiment.ensemble.json failed"; }
cp experiment.ensemble.json experiment.json
run /usr/bin/ensemble-lab experiment.json --train-steps 10 --screenshot experiment2.png \
  >open.out 2>&1 || { cat open.out >&2; fail "ensemble-lab experiment.json failed"; }
say "ensemble-lab opens .ensemble.json and .json experiments"
# Where there is no MNIST, messages name the installed fetch command, not the source script.
run /usr/bin/ensemble-cli train --config mnist-mlp >mnist.out 2>&1 && fail "mnist-mlp trained without MNIST?"
grep -q '`ensemble-fetch-mnist`' mnist.out || fail "the missing-MNIST error does not name ensemble-fetch-mnist: $(cat mnist.out)"
grep -q 'scripts/fetch-mnist.sh' mnist.out && fail "the missing-MNIST error names the source tree's script"
grep -q '^usage: ensemble-fetch-mnist' <<<"$(run /usr/bin/ensemble-fetch-mnist --help)" ||
  fail "ensemble-fetch-mnist --help"
cd "$checkout"

# --- 4. what a desktop reads ---
desktop=/usr/share/applications/$app_id.desktop
desktop-file-validate "$desktop" || fail "desktop-file-validate $desktop"
appstreamcli validate --no-net "/usr/share/metainfo/$app_id.metainfo.xml" ||
  fail "appstreamcli validate /usr/share/metainfo/$app_id.metainfo.xml"
for icon in scalable/apps/$app_id.svg 48x48/apps/$app_id.png 128x128/apps/$app_id.png \
  256x256/apps/$app_id.png; do
  [ -s "/usr/share/icons/hicolor/$icon" ] || fail "no icon /usr/share/icons/hicolor/$icon"
done
for size in 48 128 256; do
  [[ $(file -b "/usr/share/icons/hicolor/${size}x${size}/apps/$app_id.png") == *"$size x $size"* ]] ||
    fail "the ${size}x${size} icon is not $size px"
done
# The MIME type, registered by shared-mime-info's trigger; the desktop entry handles it.
[ -f "/usr/share/mime/$mime.xml" ] || fail "update-mime-database did not register $mime"
[ "$(cd "$work" && gio info -a standard::content-type experiment.ensemble.json |
  sed -n 's/.*standard::content-type: //p')" = "$mime" ] ||
  fail "experiment.ensemble.json is not $mime"
[ "$(cd "$work" && gio info -a standard::content-type experiment.json |
  sed -n 's/.*standard::content-type: //p')" = "application/json" ] ||
  fail "a plain .json file is no longer application/json"
grep -q "$app_id.desktop" <<<"$(gio mime "$mime")" || fail "no application handles $mime: $(gio mime "$mime")"
say "$mime: *.ensemble.json, opened by $app_id.desktop"
for page in ensemble-cli ensemble-lab ensemble-fetch-mnist; do
  [ "$(man -w "$page")" = "/usr/share/man/man1/$page.1.gz" ] || fail "man -w $page: $(man -w "$page" 2>&1)"
  warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "/usr/share/man/man1/$page.1.gz" 2>&1 >/dev/null)
  [ -z "$warnings" ] || fail "man $page: $warnings"
done
# The installed pages against the installed programs' help, as tst_man_pages checks the sources.
mandir=$(mktemp -d)
for page in ensemble-cli ensemble-lab ensemble-fetch-mnist; do
  gzip -dc "/usr/share/man/man1/$page.1.gz" >"$mandir/$page.1"
done
bash tests/checks/check_man_pages.sh /usr/bin/ensemble-cli /usr/bin/ensemble-lab /usr/bin/ensemble-fetch-mnist \
  "$mandir" "$version" || fail "the installed man pages differ from the installed programs' help"
rm -rf "$mandir"
[ -f /usr/share/bash-completion/completions/ensemble-cli ] || fail "no bash completion"
bash tests/checks/check_completion.sh /usr/bin/ensemble-cli /usr/share/bash-completion/completions/ensemble-cli ||
  fail "the installed bash completion"
# bash-completion loads it on demand, by the command's name.
grep -q _ensemble_cli <<<"$(bash -c 'source /usr/share/bash-completion/bash_completion
  __load_completion ensemble-cli && complete -p ensemble-cli')" || fail "bash-completion does not load ensemble-cli's completion"
say "desktop entry, metainfo, icons, MIME type, man pages and completion are in place"
# The documentation Help opens (ui/help_text.h): README.md beside docs/, as in the source tree,
# so that each picture a page shows (![...](relative path)) is found; no file executable.
doc=/usr/share/doc/ensemblelab
for page in README.md docs/README.md docs/app.md docs/install.md; do
  [ -s "$doc/$page" ] || fail "the documentation lacks $doc/$page"
done
pictures=0
while IFS= read -r page; do
  while IFS= read -r link; do
    [ -s "$(dirname "$page")/$link" ] || fail "$page shows $link, which is not installed"
    pictures=$((pictures + 1))
  done < <(grep -oE '!\[[^]]*\]\([^)#:]+\)' "$page" | sed 's/.*](\(.*\))$/\1/')
done < <(find "$doc" -name '*.md')
executable=$(find "$doc" -type f -perm /111)
[ -z "$executable" ] || fail "executable documentation files: $executable"
say "documentation: $doc/README.md and docs/ ($(du -sh "$doc" | cut -f1)), $pictures pictures in place"

# --- 5. purge ---
apt-get purge -y -qq ensemblelab >/dev/null || fail "apt-get purge ensemblelab failed"
dpkg -s ensemblelab >/dev/null 2>&1 && fail "ensemblelab is still installed"
for f in "${files[@]}"; do
  [ ! -e "$f" ] || fail "$f is left after the purge"
done
[ ! -e "/usr/share/mime/$mime.xml" ] || fail "the MIME type $mime is still registered"
! grep -qs "$app_id" /usr/share/applications/mimeinfo.cache || fail "mimeinfo.cache still names $app_id"
[ ! -e /usr/share/doc/ensemblelab ] || fail "/usr/share/doc/ensemblelab is left"
say "purged: none of its ${#files[@]} files is left"
