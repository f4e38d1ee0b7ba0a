#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ensemble {

// Reading and writing safetensors files (https://github.com/huggingface/safetensors):
//   8 bytes   N, little-endian u64: the header length
//   N bytes   UTF-8 JSON object {"<name>": {"dtype": "F32", "shape": [..],
//             "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "string", ...}}
//   the rest  the data buffer; offsets are relative to its start, and the tensors cover it
//             exactly, without holes or overlaps.
// Tensor data is row-major and little-endian, as in memory on the machines we support.

enum class DType { F32, I32, F64, I64, U8 };

// "F32", "I32", "F64", "I64", "U8": the names the format uses.
const char* dtypeName(DType dtype);
// Bytes per element.
int64_t dtypeSize(DType dtype);
// A tensor's shape as the messages write it: "[784,256]".
std::string shapeText(const std::vector<int64_t>& shape);

struct Tensor {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;   // [] is a scalar (one element)
    std::vector<std::byte> data;  // elements() * dtypeSize(dtype) bytes, row-major

    // Product of the shape (1 for a scalar, 0 if any dimension is 0).
    int64_t elements() const;

    // Views of the data as its element type. DataError (naming the tensor) if the dtype differs
    // or the data size does not match the shape.
    std::span<const float> f32() const;
    std::span<const int32_t> i32() const;
    std::span<const double> f64() const;
    std::span<const int64_t> i64() const;
    std::span<const uint8_t> u8() const;

    // Builders: copy `values` (row-major, product(shape) of them) into a new tensor.
    // RuntimeError if a dimension is negative or the count does not match the shape.
    static Tensor fromF32(std::string name, std::vector<int64_t> shape,
                          std::span<const float> values);
    static Tensor fromI32(std::string name, std::vector<int64_t> shape,
                          std::span<const int32_t> values);
    static Tensor fromF64(std::string name, std::vector<int64_t> shape,
                          std::span<const double> values);
    static Tensor fromI64(std::string name, std::vector<int64_t> shape,
                          std::span<const int64_t> values);
    static Tensor fromU8(std::string name, std::vector<int64_t> shape,
                         std::span<const uint8_t> values);
};

struct SafetensorsFile {
    std::vector<Tensor> tensors;  // written in this order; read back in data-offset order
    std::map<std::string, std::string> metadata;  // the "__metadata__" entry
    std::string origin;  // where it was read from, for error messages; not written

    // nullptr if there is no tensor of that name.
    const Tensor* find(const std::string& name) const;
    // DataError naming the file and the tensor if there is none.
    const Tensor& get(const std::string& name) const;
};

// The file's bytes: tensors in the given order, contiguous, the header padded with spaces so
// the data starts 8-byte aligned. RuntimeError if the content cannot be written as given:
// duplicate or reserved ("__metadata__") names, data sizes that do not match shapes, or names
// or metadata that are not valid UTF-8.
std::string serializeSafetensors(const SafetensorsFile& file);

// Writes serializeSafetensors(file) to `path` atomically (see writeFileAtomic), streaming the
// tensor data instead of building the whole file in memory. RuntimeError on failure.
void writeSafetensors(const std::string& path, const SafetensorsFile& file);

// Parses and validates a whole file; every problem is a DataError starting with
// `originForErrors` (the file name) and saying what is wrong where.
SafetensorsFile parseSafetensors(std::string_view bytes, const std::string& originForErrors);

// readFile + parseSafetensors. DataError if the file is missing, unreadable or invalid.
SafetensorsFile readSafetensors(const std::string& path);

}  // namespace ensemble
