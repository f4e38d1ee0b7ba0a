#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine's folders stack (engine/floors.txt): every #include "folder/..." in engine/ names
a folder on a floor below the including file's own, or the file's own folder. Reports every
upward or sideways include with the file and line, and every folder of engine/ the table does
not place; and every include of a folder's private part (engine/floors.txt's @private lines,
the CPU and CUDA backends) from outside the folders allowed to see it. CTest: check_floors.   check_floors.py ENGINE_DIR"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE = re.compile(r"\.(h|hpp|cpp|cu|cuh)$")


def read_floors(path):
    """Returns {folder: floor} and {private part: folders that may include it}."""
    floors = {}
    private = {}
    with open(path, encoding="utf-8") as table:
        lines = [l.split("#", 1)[0].strip() for l in table]
    floor_lines = [l for l in lines if l and not l.startswith("@")]
    for level, line in enumerate(floor_lines):
        for folder in line.split():
            if folder in floors:
                sys.exit(f"{path}: {folder} is placed twice")
            floors[folder] = level
    for line in (l for l in lines if l.startswith("@private")):
        parts, _, readers = line[len("@private"):].partition(":")
        for part in parts.split():
            private[part] = set(readers.split()) | {part.split("/")[0]}
    return floors, private


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_floors.py ENGINE_DIR")
    engine = os.path.abspath(sys.argv[1])
    floors, private = read_floors(os.path.join(engine, "floors.txt"))
    failures = []
    folders = sorted(d for d in os.listdir(engine) if os.path.isdir(os.path.join(engine, d)))
    for folder in folders:
        if folder not in floors:
            failures.append(f"engine/{folder}/ is on no floor of engine/floors.txt")
    for folder in floors:
        if folder not in folders:
            failures.append(f"engine/floors.txt places {folder}, which engine/ does not have")
    for top, _, files in os.walk(engine):
        rel = os.path.relpath(top, engine)
        if rel == ".":
            continue
        own = rel.split(os.sep)[0]
        for name in sorted(f for f in files if SOURCE.search(f)):
            path = os.path.join(top, name)
            with open(path, encoding="utf-8", errors="replace") as source:
                for number, line in enumerate(source, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    target = match.group(1)
                    if not os.path.exists(os.path.join(engine, target)):
                        continue  # a header beside the file, or a generated one
                    for part, readers in private.items():
                        if target.startswith(part + "/") and own not in readers:
                            failures.append(
                                f"engine/{rel}/{name}:{number}: includes {target}, private to "
                                f"{', '.join(sorted(readers))} (engine/floors.txt)")
                    other = target.split("/")[0]
                    if other == own or other not in floors or own not in floors:
                        continue
                    if floors[other] >= floors[own]:
                        where = "beside" if floors[other] == floors[own] else "above"
                        failures.append(
                            f"engine/{rel}/{name}:{number}: includes {target}, on a floor "
                            f"{where} {own}/ (engine/floors.txt)")
    for failure in failures:
        print("FAIL:", failure, file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"check_floors: {len(floors)} folders on "
          f"{len(set(floors.values()))} floors, no include upwards or sideways")


if __name__ == "__main__":
    main()
