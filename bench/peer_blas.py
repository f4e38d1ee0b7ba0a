"""Which BLAS the peer (PyTorch) actually runs on, and which CPU the figures come from
(issue 53). Imports nothing but the standard library, so that run_bench.py and the test
(tests/checks/check_peer_blas.py) use it without PyTorch.

Debian's PyTorch links libblas.so.3, which Debian's alternatives resolve to the reference BLAS
(/usr/lib/x86_64-linux-gnu/blas/libblas.so.3, 4-5 times slower) unless OpenBLAS, BLIS or MKL
is installed: a ratio against that is not a comparison, so run_bench.py refuses to print one.
What a process loaded is read from /proc/self/maps, which lists each mapped library by its real
path (the alternatives' symlinks already followed)."""

import os
import subprocess

REFERENCE = "reference"
ALTERNATIVE = "libblas.so.3-x86_64-linux-gnu"
FIX = ("install OpenBLAS and make it the system BLAS: apt install libopenblas0 (it registers "
       "itself with Debian's alternatives at a higher priority than the reference BLAS), or "
       "update-alternatives --config " + ALTERNATIVE + " to pick it where the alternative was "
       "set by hand")


def sgemm_provider(caller=None):
    """The real path of the library whose sgemm_ this process's global lookup finds (what
    PyTorch calls), by dlsym and dladdr; "" where that cannot be told. Two BLAS libraries can
    be mapped at once (LD_LIBRARY_PATH, a LAPACK from another alternative): this says which.
    caller: the library that calls sgemm_ (libtorch_cpu), whose own lookup order is searched;
    Python loads extensions locally, so the process's global scope may not hold it."""
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]

    try:
        process = ctypes.CDLL(None)
        address = ctypes.cast(ctypes.CDLL(caller).sgemm_ if caller else process.sgemm_,
                              ctypes.c_void_p)
        info = DlInfo()
        if process.dladdr(address, ctypes.byref(info)) == 0 or not info.dli_fname:
            return ""
        return os.path.realpath(info.dli_fname.decode())
    except (OSError, AttributeError):
        return ""


def blas_from_maps(maps_text, sgemm_from=""):
    """The BLAS a process mapped, from the text of its /proc/<pid>/maps: {"kind": openblas,
    blis, mkl, reference or unknown, "libraries": the BLAS libraries' real paths}. sgemm_from,
    the library sgemm_ resolves to (sgemm_provider()), decides where more than one is mapped."""
    libraries = []
    for line in maps_text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6:
            continue
        path = fields[5].strip()
        name = os.path.basename(path)
        if path in libraries:
            continue
        if (name.startswith(("libopenblas", "libblis", "libmkl_", "libblas.so"))
                or "/openblas" in path or "/blis" in path):
            libraries.append(path)
    joined = " ".join([sgemm_from] if sgemm_from else libraries)
    if "openblas" in joined:
        kind = "openblas"
    elif "blis" in joined:
        kind = "blis"
    elif "libmkl_" in joined:
        kind = "mkl"
    elif any(os.path.basename(p).startswith("libblas.so") for p in joined.split()):
        # libblas.so.3 that is none of the above: Debian's netlib build lives in .../blas/.
        kind = REFERENCE
    else:
        kind = "unknown"
    found = {"kind": kind, "libraries": libraries}
    if sgemm_from:
        found["sgemm_from"] = sgemm_from
    return found


def alternative_value(run=subprocess.run):
    """What Debian's alternatives point libblas.so.3 at ("" where there are none)."""
    try:
        out = run(["update-alternatives", "--query", ALTERNATIVE], capture_output=True,
                  text=True).stdout
    except OSError:
        return ""
    for line in out.splitlines():
        if line.startswith("Value:"):
            return line.split(":", 1)[1].strip()
    return ""


def refusal(blas, alternative=""):
    """None when the peer's BLAS is one a comparison may be made against; otherwise the reason,
    what was found and how to fix it."""
    if blas.get("kind") != REFERENCE:
        return None
    found = (f"sgemm_ from {blas['sgemm_from']}" if blas.get("sgemm_from")
             else ", ".join(blas.get("libraries", [])) or "libblas.so.3")
    text = (f"PyTorch runs on the reference BLAS ({found}"
            + (f"; update-alternatives: {ALTERNATIVE} -> {alternative}" if alternative else "")
            + "), 4-5 times slower than OpenBLAS: no ratio against it is printed. Fix: " + FIX)
    return text


def cpu_identity(cpuinfo_text=None):
    """The CPU by vendor, family, model and vector flags (/proc/cpuinfo's first processor),
    and the widest vector registers its flags offer, in bits."""
    if cpuinfo_text is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo_text = f.read()
        except OSError:
            cpuinfo_text = ""
    fields = {}
    for line in cpuinfo_text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    flags = set(fields.get("flags", "").split())
    isa = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw",
                       "avx512vl", "avx512_vnni", "avx512_bf16") if f in flags]
    bits = 512 if "avx512f" in flags else 256 if "avx" in flags else 128
    return {"vendor": fields.get("vendor_id", ""), "family": fields.get("cpu family", ""),
            "model": fields.get("model", ""), "stepping": fields.get("stepping", ""),
            "model_name": fields.get("model name", ""), "isa": isa, "vector_bits": bits}


def describe_cpu(cpu):
    """One line: "GenuineIntel family 6 model 106, 512-bit vectors (sse4_2 avx ... )"."""
    return (f"{cpu.get('vendor') or 'unknown vendor'} family {cpu.get('family')} model "
            f"{cpu.get('model')}, {cpu.get('vector_bits')}-bit vectors "
            f"({' '.join(cpu.get('isa', [])) or 'no vector extensions'})")
