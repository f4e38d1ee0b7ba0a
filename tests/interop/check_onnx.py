"""tst_interop's ONNX check: python3 check_onnx.py MODEL.onnx WEIGHTS.safetensors VERSION

Runs onnx.checker (full_check: shape inference too) on the model and checks the contract
against the safetensors export it came from: IR version 8, opset 17, input x float32 [N, D],
the outputs predict's columns call for, metadata_props equal to the export's __metadata__
plus ensemblelab_version, and each initializer named after an export tensor holding its bytes.
Prints one line per failed check and exits 1, or "ok" and 0.
"""
import json
import struct
import sys

import onnx
from onnx import numpy_helper


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    buf = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"], buf[b:e])
    return tensors, meta


def dims(value_info):
    out = []
    for d in value_info.type.tensor_type.shape.dim:
        out.append(d.dim_param if d.HasField("dim_param") else d.dim_value)
    return out


def main():
    model_path, weights_path, version = sys.argv[1:4]
    errors = []
    model = onnx.load(model_path)
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # the checker's own exception types differ across versions
        errors.append(f"onnx.checker: {e}")
    if model.ir_version != 8:
        errors.append(f"ir_version {model.ir_version}, expected 8")
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets != {"": 17}:
        errors.append(f"opset_import {opsets}, expected {{'': 17}}")

    tensors, meta = read_safetensors(weights_path)
    config = json.loads(meta["config"])
    likelihood = config.get("model", {}).get("likelihood", "categorical")
    k = config["ensemble"]["members"]
    d = tensors["normalization.mean"][1][0]
    inputs = [(i.name, i.type.tensor_type.elem_type, dims(i)) for i in model.graph.input]
    if inputs != [("x", onnx.TensorProto.FLOAT, ["N", d])]:
        errors.append(f"inputs {inputs}, expected x float32 [N, {d}]")
    outputs = {o.name: (o.type.tensor_type.elem_type, dims(o)) for o in model.graph.output}
    if likelihood == "categorical":
        c = int(meta["classes"])
        expected = {"ens_probs": ["N", c], "member_probs": [k, "N", c]}
    else:
        expected = {n: ["N"] for n in
                     ("ens_mean", "ens_std", "ens_aleatoric_std", "ens_epistemic_std")}
        expected.update({"member_mean": [k, "N"], "member_std": [k, "N"]})
    expected = {n: (onnx.TensorProto.FLOAT, s) for n, s in expected.items()}
    if outputs != expected:
        errors.append(f"outputs {outputs}, expected {expected}")

    props = {p.key: p.value for p in model.metadata_props}
    if len(props) != len(model.metadata_props):
        errors.append("metadata_props has a key twice")
    want = dict(meta)
    want["ensemblelab_version"] = version
    if props != want:
        missing = sorted(set(want) - set(props))
        extra = sorted(set(props) - set(want))
        differ = sorted(key for key in set(want) & set(props) if want[key] != props[key])
        errors.append(f"metadata_props: missing {missing}, extra {extra}, different {differ}")

    # Initializers named after export tensors hold exactly their bytes.
    seen = 0
    for init in model.graph.initializer:
        if init.name in tensors:
            seen += 1
            dtype, shape, raw = tensors[init.name]
            array = numpy_helper.to_array(init)
            if list(array.shape) != shape or array.tobytes() != raw:
                errors.append(f"initializer {init.name} differs from the export's tensor")
    layers = sum(1 for n in tensors if n.startswith("layers."))
    if seen < layers + 2:
        errors.append(f"only {seen} initializers carry export tensors ({layers} layer tensors)")

    for e in errors:
        print(e)
    if errors:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
