// CPUID and XGETBV read directly (GCC's <cpuid.h>); on other architectures an identity with
// no vendor and no features.
#include "sys/cpu_identity.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define ENSEMBLE_X86 1
#endif

namespace ensemble {

namespace {

#ifdef ENSEMBLE_X86

struct Registers {
    unsigned a = 0, b = 0, c = 0, d = 0;
};

Registers cpuid(unsigned leaf, unsigned subleaf = 0) {
    Registers r;
    if (__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d) == 0) {
        return {};
    }
    return r;
}

bool bit(unsigned value, int index) {
    return ((value >> index) & 1u) != 0;
}

// XCR0: which register states the OS saves on a context switch (and so lets programs use).
uint64_t enabledStates() {
    unsigned lo = 0;
    unsigned hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t{hi} << 32) | lo;
}

CpuIdentity readIdentity() {
    CpuIdentity id;
    const Registers zero = cpuid(0);
    char vendor[13] = {};
    std::memcpy(vendor, &zero.b, 4);
    std::memcpy(vendor + 4, &zero.d, 4);
    std::memcpy(vendor + 8, &zero.c, 4);
    id.vendor = vendor;
    const unsigned maxLeaf = zero.a;
    if (maxLeaf < 1) {
        return id;
    }
    const Registers one = cpuid(1);
    const int baseFamily = static_cast<int>((one.a >> 8) & 0xF);
    const int baseModel = static_cast<int>((one.a >> 4) & 0xF);
    id.family =
        baseFamily == 0xF ? baseFamily + static_cast<int>((one.a >> 20) & 0xFF) : baseFamily;
    id.model = baseFamily == 0x6 || baseFamily == 0xF
                   ? (static_cast<int>((one.a >> 16) & 0xF) << 4) + baseModel
                   : baseModel;
    id.stepping = static_cast<int>(one.a & 0xF);

    const bool osSaves = bit(one.c, 27);  // OSXSAVE: XGETBV may be asked
    const uint64_t states = osSaves ? enabledStates() : 0;
    const bool avxState = (states & 0x6) == 0x6;       // XMM and YMM
    const bool avx512State = (states & 0xE0) == 0xE0;  // opmask, ZMM_Hi256, Hi16_ZMM
    const Registers seven = maxLeaf >= 7 ? cpuid(7) : Registers{};
    const Registers sevenOne = maxLeaf >= 7 && seven.a >= 1 ? cpuid(7, 1) : Registers{};
    const auto add = [&](bool present, const char* name) {
        if (present) {
            id.isa.emplace_back(name);
        }
    };
    add(bit(one.c, 20), "sse4_2");
    add(avxState && bit(one.c, 28), "avx");
    add(avxState && bit(seven.b, 5), "avx2");
    add(avxState && bit(one.c, 12), "fma");
    add(avx512State && bit(seven.b, 16), "avx512f");
    add(avx512State && bit(seven.b, 17), "avx512dq");
    add(avx512State && bit(seven.b, 30), "avx512bw");
    add(avx512State && bit(seven.b, 31), "avx512vl");
    add(avx512State && bit(seven.c, 11), "avx512_vnni");
    add(avx512State && bit(sevenOne.a, 5), "avx512_bf16");

    if (cpuid(0x80000000).a >= 0x80000004) {
        char brand[49] = {};
        for (unsigned i = 0; i < 3; ++i) {
            const Registers r = cpuid(0x80000002 + i);
            std::memcpy(brand + 16 * i, &r.a, 4);
            std::memcpy(brand + 16 * i + 4, &r.b, 4);
            std::memcpy(brand + 16 * i + 8, &r.c, 4);
            std::memcpy(brand + 16 * i + 12, &r.d, 4);
        }
        id.brand = brand;
        const auto first = id.brand.find_first_not_of(' ');
        const auto last = id.brand.find_last_not_of(' ');
        id.brand =
            first == std::string::npos ? std::string() : id.brand.substr(first, last - first + 1);
    }
    return id;
}

#else

CpuIdentity readIdentity() {
    return {};
}

#endif

}  // namespace

bool CpuIdentity::has(const std::string& feature) const {
    return std::find(isa.begin(), isa.end(), feature) != isa.end();
}

int CpuIdentity::x86Level() const {
    if (has("avx512f") && has("avx512dq") && has("avx512bw") && has("avx512vl")) {
        return 4;
    }
    if (has("avx2") && has("fma")) {
        return 3;
    }
    return has("sse4_2") ? 2 : 1;
}

int CpuIdentity::vectorBits() const {
    if (has("avx512f")) {
        return 512;
    }
    return has("avx") ? 256 : 128;
}

std::string CpuIdentity::describe() const {
    std::string out = (vendor.empty() ? std::string("unknown vendor") : vendor) + " family " +
                      std::to_string(family) + " model " + std::to_string(model) + " stepping " +
                      std::to_string(stepping) + ", x86-64-v" + std::to_string(x86Level());
    std::string features;
    for (const std::string& f : isa) {
        features += (features.empty() ? "" : " ") + f;
    }
    return out + " (" + (features.empty() ? std::string("no vector extensions") : features) + ")";
}

const CpuIdentity& cpuIdentity() {
    static const CpuIdentity identity = readIdentity();
    return identity;
}

}  // namespace ensemble
