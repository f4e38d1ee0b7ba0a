#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `--version` on both programs (CTest: tst_version): one line, the program's name, the
# project() version and, for a build from a git checkout, `git describe` of the checkout's
# HEAD in parentheses; exit 0.
#   check_version.sh VERSION SOURCE_DIR PROGRAM...
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 VERSION SOURCE_DIR PROGRAM..." >&2; exit 2; }
version=$1 source_dir=$2
shift 2
failures=0
describe=""
# The build's rule (cmake/write_version.cmake): a checkout is a source folder with .git in it.
if command -v git >/dev/null 2>&1 && [ -e "$source_dir/.git" ]; then
  # Without -dirty: whether the tree was clean at the build is not known here.
  describe=$(git -C "$source_dir" describe --always --tags)
fi
for program in "$@"; do
  name=$(basename "$program")
  status=0
  out=$(QT_QPA_PLATFORM=offscreen "$program" --version 2>/dev/null) || status=$?
  if [ "$status" -ne 0 ]; then
    echo "FAIL: $name --version exited $status" >&2
    failures=$((failures + 1))
    continue
  fi
  if [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ]; then
    echo "FAIL: $name --version printed more than one line: $out" >&2
    failures=$((failures + 1))
    continue
  fi
  if [ -n "$describe" ]; then
    expected_re="^$name ${version//./\\.} \\(git ${describe}(-dirty)?\\)\$"
  else
    expected_re="^$name ${version//./\\.}\$"
  fi
  if [[ ! $out =~ $expected_re ]]; then
    echo "FAIL: $name --version printed '$out'; expected '$name $version${describe:+ (git $describe[-dirty])}' (rebuild after a commit)" >&2
    failures=$((failures + 1))
    continue
  fi
  echo "$out"
done
exit $((failures > 0))
