#!/usr/bin/env python3
"""bench/peer_blas.py's refusal, fed made-up /proc/self/maps and /proc/cpuinfo texts: a
PyTorch on Debian's reference BLAS gets no ratio (with what was found and the fix), one on
OpenBLAS, BLIS or MKL does; the CPU is named by vendor, family, model and vector flags (issue
53). No PyTorch needed. Usage: check_peer_blas.py SOURCE_DIR"""

import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "bench"))
import peer_blas  # noqa: E402

LIB = "/usr/lib/x86_64-linux-gnu"


def maps(*paths):
    return "".join(f"7f0000{i:04x}000-7f0000{i:04x}fff r-xp 00000000 08:01 {100 + i} {p}\n"
                   for i, p in enumerate(paths)) + "7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]\n"


failures = []


def check(name, got, want):
    if got != want:
        failures.append(f"{name}: got {got!r}, want {want!r}")


torch_libs = (f"{LIB}/libtorch_cpu.so.1.13", f"{LIB}/libgomp.so.1")
reference = peer_blas.blas_from_maps(maps(*torch_libs, f"{LIB}/blas/libblas.so.3",
                                          f"{LIB}/lapack/liblapack.so.3"))
check("reference kind", reference["kind"], "reference")
check("reference libraries", reference["libraries"], [f"{LIB}/blas/libblas.so.3"])
reason = peer_blas.refusal(reference, f"{LIB}/blas/libblas.so.3")
check("reference refused", reason is not None, True)
for needle in ("reference BLAS", f"{LIB}/blas/libblas.so.3", "apt install libopenblas0",
               "update-alternatives", "no ratio"):
    check(f"refusal names {needle!r}", needle in (reason or ""), True)

openblas = peer_blas.blas_from_maps(maps(*torch_libs, f"{LIB}/openblas-pthread/libblas.so.3",
                                         f"{LIB}/openblas-pthread/libopenblas.so.0"))
check("openblas kind", openblas["kind"], "openblas")
check("openblas allowed", peer_blas.refusal(openblas), None)
check("openblas library listed once", len(openblas["libraries"]), 2)
for path, kind in ((f"{LIB}/blis-openmp/libblas.so.3", "blis"),
                   ("/opt/intel/mkl/lib/libmkl_rt.so.2", "mkl")):
    found = peer_blas.blas_from_maps(maps(*torch_libs, path))
    check(f"{kind} kind", found["kind"], kind)
    check(f"{kind} allowed", peer_blas.refusal(found), None)
# Both mapped (LD_LIBRARY_PATH put the reference libblas.so.3 first, OpenBLAS came in through
# LAPACK): the library sgemm_ resolves to decides.
both = maps(*torch_libs, f"{LIB}/openblas-pthread/libopenblasp-r0.3.21.so",
            f"{LIB}/blas/libblas.so.3.11.0")
check("both, sgemm from reference",
      peer_blas.blas_from_maps(both, f"{LIB}/blas/libblas.so.3.11.0")["kind"], "reference")
check("both, sgemm from openblas", peer_blas.blas_from_maps(
    both, f"{LIB}/openblas-pthread/libopenblasp-r0.3.21.so")["kind"], "openblas")
# No BLAS mapped at all (a static build): unknown, not refused.
check("none kind", peer_blas.blas_from_maps(maps(*torch_libs))["kind"], "unknown")
check("none allowed", peer_blas.refusal(peer_blas.blas_from_maps(maps(*torch_libs))), None)


def fake_query(argv, capture_output, text):
    class Done:
        stdout = ("Name: libblas.so.3-x86_64-linux-gnu\nLink: /usr/lib/x86_64-linux-gnu/"
                  "libblas.so.3\nStatus: auto\nValue: /usr/lib/x86_64-linux-gnu/openblas-"
                  "pthread/libblas.so.3\n\nAlternative: /usr/lib/x86_64-linux-gnu/blas/"
                  "libblas.so.3\nPriority: 10\n")
    return Done()


check("alternative value", peer_blas.alternative_value(fake_query),
      f"{LIB}/openblas-pthread/libblas.so.3")

cpuinfo = ("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\n"
           "model name\t: Intel(R) Xeon(R) Processor @ 2.80GHz\nstepping\t: 6\n"
           "flags\t\t: fpu sse2 sse4_2 avx avx2 fma avx512f avx512dq avx512bw avx512vl "
           "avx512_vnni\n\nprocessor\t: 1\nvendor_id\t: OtherVendor\n")
cpu = peer_blas.cpu_identity(cpuinfo)
check("cpu vendor", cpu["vendor"], "GenuineIntel")
check("cpu family/model", (cpu["family"], cpu["model"]), ("6", "106"))
check("cpu isa", cpu["isa"], ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw",
                              "avx512vl", "avx512_vnni"])
check("cpu vector bits", cpu["vector_bits"], 512)
check("cpu line", peer_blas.describe_cpu(cpu).startswith(
    "GenuineIntel family 6 model 106, 512-bit vectors (sse4_2 avx avx2"), True)
check("avx2 only", peer_blas.cpu_identity("vendor_id : AuthenticAMD\nflags : sse4_2 avx avx2 fma\n")
      ["vector_bits"], 256)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("peer_blas: refusal, libraries and CPU identity as expected")
