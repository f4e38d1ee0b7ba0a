#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rooms that fit: every C++ source of engine/, ui/ and app/, counted with its header (x.cpp
with x.h, or a header alone), is at most 900 lines, and one above 600 opens with a comment
that names the seam it keeps whole (checked here: a comment before any code; what it says is
the reviewer's). CTest: tst_rooms.   check_rooms.py SOURCE_DIR"""

import os
import re
import sys

LIMIT = 900
NEEDS_COMMENT = 600
FOLDERS = ("engine", "ui", "app")
SOURCE = re.compile(r"\.(h|hpp|cpp|cu|cuh)$")


def lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def opens_with_comment(text):
    """Whether the first lines that are not blank, #pragma once or an SPDX line are a comment.
    A .cpp may first include its own header (as clang-format keeps it), then comment."""
    own_header_seen = False
    for line in text:
        stripped = line.strip()
        if not stripped or stripped == "#pragma once" or "SPDX-License-Identifier" in stripped:
            continue
        if stripped.startswith("#include") and not own_header_seen:
            own_header_seen = True
            continue
        return stripped.startswith("//") or stripped.startswith("/*")
    return False


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_rooms.py SOURCE_DIR")
    root = os.path.abspath(sys.argv[1])
    rooms = {}
    for folder in FOLDERS:
        for top, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if SOURCE.search(name):
                    stem = os.path.join(top, os.path.splitext(name)[0])
                    rooms.setdefault(stem, []).append(os.path.join(top, name))
    failures = []
    for stem, paths in sorted(rooms.items()):
        counted = {p: lines(p) for p in paths}
        total = sum(len(t) for t in counted.values())
        rel = os.path.relpath(stem, root)
        if total > LIMIT:
            failures.append(f"{rel}: {total} lines with its header, above {LIMIT}: split it "
                            "along a seam it already has")
        elif total > NEEDS_COMMENT:
            if not any(opens_with_comment(text) for text in counted.values()):
                failures.append(f"{rel}: {total} lines with its header and no first comment "
                                "naming the seam it keeps whole")
    for failure in failures:
        print("FAIL:", failure, file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"check_rooms: {len(rooms)} rooms, none above {LIMIT} lines, every one above "
          f"{NEEDS_COMMENT} with a first comment")


if __name__ == "__main__":
    main()
