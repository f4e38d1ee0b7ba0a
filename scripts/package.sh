#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the Debian package, build-folder/package/ensemblelab_VERSION_ARCH.deb, with CPack
# (docs/install.md); scripts/check-package.sh then installs, runs and removes it.
#
#   scripts/package.sh            # configures the `package` preset (build-package/: Release
#                                 # for any x86-64 CPU, no tests), builds the two programs
#   scripts/package.sh BUILD_DIR  # packages an existing build as it is configured (CI passes
#                                 # build/, which scripts/test.sh has just built: -march=native,
#                                 # so that package is for this machine's CPU)
#
# The .deb's path is the last line printed.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

# CPack's DEB generator runs dpkg-shlibdeps (dpkg-dev) on what `file` says is an ELF object.
tools=()
for p in dpkg-dev file; do
  dpkg -s "$p" >/dev/null 2>&1 || tools+=("$p")
done
if [ ${#tools[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
fi

if [ $# -eq 0 ]; then
  scripts/setup.sh
  cuda_args=()
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  fi
  cmake --preset package "${cuda_args[@]}" >/dev/null
  cmake --build --preset package
  build=build-package
elif [ $# -eq 1 ] && [ -f "$1/CMakeCache.txt" ]; then
  build="$1"
  # Only what the package holds; a tree that scripts/test.sh built is already up to date.
  cmake --build "$build" --target ensemble-cli ensemble-lab
else
  echo "usage: scripts/package.sh [BUILD_DIR]   (BUILD_DIR: a configured build folder)" >&2
  exit 2
fi

build="$(cd "$build" && pwd)"
rm -rf "$build/package"
# cpack installs the project into a staging folder (after building what is out of date) and
# packs it; dpkg-shlibdeps computes Depends from the programs' libraries.
(cd "$build" && cpack -G DEB -B "$build/package" >"$build/package.log" 2>&1) || {
  tail -n 40 "$build/package.log" >&2
  echo "package: cpack failed (the whole log: $build/package.log)" >&2
  exit 1
}
deb=$(ls "$build"/package/ensemblelab_*.deb)

# CPack runs dpkg-shlibdeps with --ignore-missing-info and discards what it prints, so a
# library it could not map to a package would be missing from Depends without a word. Run it
# again here on the packaged programs, without that flag: any warning or error fails, and every
# dependency it computes must be in the package's Depends. (scripts/check-package.sh also checks
# each NEEDED library's package against Depends.)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# The layout dpkg-shlibdeps expects: debian/control, the files under debian/PACKAGE/.
mkdir -p "$stage/debian/ensemblelab/DEBIAN"
: >"$stage/debian/control"
dpkg-deb -x "$deb" "$stage/debian/ensemblelab"
programs=()
for f in "$stage"/debian/ensemblelab/usr/bin/*; do
  if [[ $(file -b "$f") == ELF* ]]; then programs+=("debian/ensemblelab/usr/bin/${f##*/}"); fi
done
if ! shlibdeps=$(cd "$stage" && dpkg-shlibdeps -O "${programs[@]}" 2>"$stage/shlibdeps.err"); then
  cat "$stage/shlibdeps.err" >&2
  echo "package: dpkg-shlibdeps failed on ${programs[*]}" >&2
  exit 1
fi
if [ -s "$stage/shlibdeps.err" ]; then
  cat "$stage/shlibdeps.err" >&2
  echo "package: dpkg-shlibdeps could not place every library (above)" >&2
  exit 1
fi
depends=$(dpkg-deb -f "$deb" Depends)
IFS=',' read -r -a computed <<<"${shlibdeps#shlibs:Depends=}"
for dep in "${computed[@]}"; do
  dep=$(echo "$dep" | sed 's/^ *//; s/ *$//')
  [[ ", $depends," == *", $dep,"* ]] || {
    echo "package: dpkg-shlibdeps computes '$dep', which Depends ($depends) lacks" >&2
    exit 1
  }
done
echo "package: Depends: $depends"
echo "$deb"
