#pragma once

// Which CPU this is, from the processor itself (CPUID and XGETBV), not /proc/cpuinfo's model
// name: "AMD EPYC" names a Zen 3, a Zen 4 and a Zen 5 alike, while their vector units differ
// (AVX2 only; AVX-512 as two 256-bit halves; full-width AVX-512). The calibration cache of
// backend.kind=auto keys on it, and speed figures are stated beside it.

#include <string>
#include <vector>

namespace ensemble {

struct CpuIdentity {
    std::string vendor;  // CPUID's vendor string: "AuthenticAMD", "GenuineIntel"; "" elsewhere
    int family = 0;      // the display family (base + extended), as /proc/cpuinfo's "cpu family"
    int model = 0;       // the display model (with the extended model where it applies)
    int stepping = 0;
    std::string brand;  // the brand string, for people ("AMD EPYC 7B13 64-Core Processor")
    // The vector features the OS lets programs use (XGETBV agrees), in this order where
    // present: sse4_2 avx avx2 fma avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16,
    // spelled as /proc/cpuinfo's flags.
    std::vector<std::string> isa;

    bool has(const std::string& feature) const;
    // The x86-64 micro-architecture level the features reach: 1 (baseline), 2, 3 (AVX2, FMA) or
    // 4 (AVX-512 F, BW, DQ, VL).
    int x86Level() const;
    // The widest vector registers the features offer, in bits: 512 (AVX-512 F), 256 (AVX) or
    // 128. (A Zen 4 runs its 512-bit registers on 256-bit units: family 25 says so, not this.)
    int vectorBits() const;
    // "AuthenticAMD family 25 model 1 stepping 1, x86-64-v3 (sse4_2 avx avx2 fma)": one line
    // that tells two machines apart where the brand string does not.
    std::string describe() const;
};

// This CPU, read once.
const CpuIdentity& cpuIdentity();

}  // namespace ensemble
