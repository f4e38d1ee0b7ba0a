// Fuzzes parseSafetensors: the 8-byte length, the JSON header (dtypes, shapes, data_offsets,
// __metadata__) and the data buffer's coverage. A file that parses must also survive the typed
// views and, when it can be written back, read back the same.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_support.h"
#include "io/safetensors.h"

using namespace ensemble;

namespace {

void touchViews(const Tensor& t) {
    fuzz::check(static_cast<int64_t>(t.data.size()) == t.elements() * dtypeSize(t.dtype),
                "tensor data size matches its shape");
    std::size_t n = 0;
    switch (t.dtype) {
        case DType::F32:
            n = t.f32().size();
            break;
        case DType::I32:
            n = t.i32().size();
            break;
        case DType::F64:
            n = t.f64().size();
            break;
        case DType::I64:
            n = t.i64().size();
            break;
        case DType::U8:
            n = t.u8().size();
            break;
    }
    fuzz::check(static_cast<int64_t>(n) == t.elements(), "typed view has elements() values");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    SafetensorsFile file;
    try {
        file = parseSafetensors(bytes, "fuzz.safetensors");
    } catch (const Error&) {
        return 0;  // rejected with a message: what a bad file should get
    }
    for (const Tensor& t : file.tensors) {
        touchViews(t);
    }
    std::string written;
    try {
        written = serializeSafetensors(file);
    } catch (const Error&) {
        return 0;  // e.g. a name that is not valid UTF-8: the writer refuses it, by contract
    }
    const SafetensorsFile again = parseSafetensors(written, "fuzz-rewritten.safetensors");
    fuzz::check(again.metadata == file.metadata, "metadata round-trips");
    fuzz::check(again.tensors.size() == file.tensors.size(), "tensor count round-trips");
    for (std::size_t i = 0; i < file.tensors.size(); ++i) {
        const Tensor& a = file.tensors[i];
        const Tensor& b = again.tensors[i];
        fuzz::check(
            a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.data == b.data,
            "tensor round-trips");
    }
    return 0;
}
