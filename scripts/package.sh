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
# dpkg-shlibdeps warns where it cannot map a library to a package; such a library would be
# missing from Depends without anything failing. scripts/check-package.sh checks Depends
# against every NEEDED entry as well.
if grep -E "dpkg-shlibdeps: (warning|error)" "$build/package.log" >&2; then
  echo "package: dpkg-shlibdeps could not place every library (above)" >&2
  exit 1
fi
deb=$(ls "$build"/package/ensemblelab_*.deb)
echo "$deb"
