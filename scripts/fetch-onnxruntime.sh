#!/usr/bin/env bash
# Installs ONNX Runtime for Node.js (npm package onnxruntime-node, CPU) for tst_interop, which
# runs exported ONNX models in it. ONNX Runtime is not packaged by Debian.
#
#   scripts/fetch-onnxruntime.sh FOLDER
#
# Installs into FOLDER/node_modules/onnxruntime-node. `--ignore-scripts`: the package ships its
# CPU binaries (bin/napi-v*/linux/x64); its install script would only try to download GPU
# binaries from a host outside the npm registry, and fail. Idempotent: exits at once when the
# package is already there.
set -euo pipefail

VERSION="1.20.1"
die() {
  echo "fetch-onnxruntime: $*" >&2
  exit 1
}
[ $# -eq 1 ] || { echo "usage: $0 FOLDER" >&2; exit 2; }
DEST="$1"
MODULE="$DEST/node_modules/onnxruntime-node"
if [ -f "$MODULE/package.json" ] && grep -q "\"version\": \"$VERSION\"" "$MODULE/package.json"; then
  echo "onnxruntime-node $VERSION is already in $DEST"
  exit 0
fi
command -v npm >/dev/null 2>&1 || die "npm is not installed (Debian: sudo apt install npm)"
command -v node >/dev/null 2>&1 || die "node is not installed (Debian: sudo apt install nodejs)"
mkdir -p "$DEST" || die "cannot create $DEST"
[ -f "$DEST/package.json" ] || echo '{"name": "ensemblelab-interop", "private": true}' >"$DEST/package.json"
echo "Installing onnxruntime-node $VERSION from the npm registry (about 40 MB)..."
if ! (cd "$DEST" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
  --fetch-retries=1 --fetch-timeout=120000 "onnxruntime-node@$VERSION") >"$DEST/npm.log" 2>&1; then
  grep -m 4 . "$DEST/npm.log" | sed 's/^/  /' >&2 || true
  die "could not install onnxruntime-node $VERSION from the npm registry ($(npm config get registry 2>/dev/null || echo '?'))"
fi
ls "$MODULE"/bin/napi-v*/linux/x64/libonnxruntime.so* >/dev/null 2>&1 ||
  die "onnxruntime-node $VERSION has no Linux x64 CPU binaries"
echo "onnxruntime-node $VERSION is in $DEST"
