"""tst_interop's .npz check: python3 check_npz.py ARCHIVE.npz WEIGHTS.safetensors [--zip64]

numpy.load(ARCHIVE, allow_pickle=False) must hold every tensor of the safetensors file under
the same name, dtype and shape with the same bytes, nothing else but __metadata__, a 0-d
unicode array whose JSON object equals the file's __metadata__ string map. With --zip64 the
archive must carry the zip64 end records and each member a zip64 extra field (the writer's
forced mode); Python's zipfile must read every member with a good CRC either way.
Prints one line per failed check and exits 1, or "ok" and 0.
"""
import json
import struct
import sys
import zipfile

import numpy as np

DTYPES = {"F32": "<f4", "I32": "<i4", "F64": "<f8", "I64": "<i8", "U8": "|u1"}


def main():
    archive, weights = sys.argv[1:3]
    zip64 = "--zip64" in sys.argv[3:]
    errors = []
    with open(weights, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    buf = data[8 + n:]

    with np.load(archive, allow_pickle=False) as z:
        names = set(z.files)
        want = set(header) | {"__metadata__"}
        if names != want:
            errors.append(f"arrays {sorted(names)}, expected {sorted(want)}")
        for name, info in header.items():
            if name not in names:
                continue
            a = z[name]
            b, e = info["data_offsets"]
            if a.dtype != np.dtype(DTYPES[info["dtype"]]):
                errors.append(f"{name}: dtype {a.dtype.str}, expected {DTYPES[info['dtype']]}")
            if list(a.shape) != info["shape"]:
                errors.append(f"{name}: shape {list(a.shape)}, expected {info['shape']}")
            if a.tobytes() != buf[b:e]:
                errors.append(f"{name}: the bytes differ")
        if "__metadata__" in names:
            m = z["__metadata__"]
            if m.shape != () or m.dtype.kind != "U":
                errors.append(f"__metadata__: {m.dtype.str} {m.shape}, expected a 0-d unicode array")
            elif json.loads(str(m)) != meta:
                errors.append("__metadata__ differs from the safetensors metadata")

    with zipfile.ZipFile(archive) as zf:
        bad = zf.testzip()
        if bad is not None:
            errors.append(f"zipfile: bad CRC in {bad}")
        if zip64:
            with open(archive, "rb") as f:
                raw = f.read()
            if raw.find(b"PK\x06\x06") < 0 or raw.find(b"PK\x06\x07") < 0:
                errors.append("no zip64 end of central directory record and locator")
            for info in zf.infolist():
                if not info.extra.startswith(b"\x01\x00"):
                    errors.append(f"{info.filename}: no zip64 extra field")
    for e in errors:
        print(e)
    if errors:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
