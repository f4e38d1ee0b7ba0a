#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <ostream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "sys/atomic_file.h"

namespace ensemble {

// Tensor bytes are copied to and from memory as they are; the format is little-endian.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian machine");

namespace {

// ordered_json keeps the header's key order: tensors are written in the caller's order, and
// zero-sized tensors (which share offsets) are read back in the order they were written.
using Json = nlohmann::ordered_json;

// The reference implementation's limit; anything larger is corrupt or hostile.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";

std::optional<DType> parseDType(const std::string& name) {
    for (DType d : {DType::F32, DType::I32, DType::F64, DType::I64, DType::U8}) {
        if (name == dtypeName(d)) {
            return d;
        }
    }
    return std::nullopt;
}

std::string offsetsText(uint64_t begin, uint64_t end) {
    return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// A JSON value for an error message, cut short: a corrupt header can hold huge values.
std::string brief(const Json& value) {
    std::string text = value.dump();
    if (text.size() > 80) {
        text = text.substr(0, 77) + "...";
    }
    return text;
}

// Bytes needed by a tensor of this shape; nullopt if a dimension is negative or the size does
// not fit in int64 (a shape from a file can claim anything).
std::optional<int64_t> byteSize(const std::vector<int64_t>& shape, DType dtype) {
    if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; })) {
        return std::nullopt;
    }
    // Checked before multiplying: [0, huge, huge] is a valid empty tensor.
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
        return 0;
    }
    int64_t bytes = dtypeSize(dtype);
    for (int64_t d : shape) {
        if (bytes > std::numeric_limits<int64_t>::max() / d) {
            return std::nullopt;
        }
        bytes *= d;
    }
    return bytes;
}

std::optional<uint64_t> nonNegativeInt(const Json& value) {
    if (value.is_number_unsigned()) {
        return value.get<uint64_t>();
    }
    if (value.is_number_integer() && value.get<int64_t>() >= 0) {
        return static_cast<uint64_t>(value.get<int64_t>());  // "-0"
    }
    return std::nullopt;
}

template <typename T>
std::span<const T> view(const Tensor& t, DType want) {
    if (t.dtype != want) {
        throw DataError(ErrorKind::Weights, "tensor '" + t.name + "' is " + dtypeName(t.dtype) +
                                                ", expected " + dtypeName(want));
    }
    const std::optional<int64_t> bytes = byteSize(t.shape, t.dtype);
    if (!bytes || *bytes != static_cast<int64_t>(t.data.size())) {
        throw DataError(ErrorKind::Weights, "tensor '" + t.name +
                                                "': " + std::to_string(t.data.size()) +
                                                " bytes of data do not match shape " +
                                                shapeText(t.shape) + " of " + dtypeName(t.dtype));
    }
    if (t.data.empty()) {
        return {};
    }
    // The vector's storage comes from operator new, aligned for any fundamental type.
    return {reinterpret_cast<const T*>(t.data.data()), t.data.size() / sizeof(T)};
}

template <typename T>
Tensor build(std::string name, std::vector<int64_t> shape, std::span<const T> values, DType dtype) {
    const std::optional<int64_t> bytes = byteSize(shape, dtype);
    if (!bytes || *bytes != static_cast<int64_t>(values.size_bytes())) {
        throw RuntimeError("tensor '" + name + "': " + std::to_string(values.size()) +
                           " values do not match shape " + shapeText(shape));
    }
    Tensor t;
    t.name = std::move(name);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.data.resize(values.size_bytes());
    if (!values.empty()) {
        std::memcpy(t.data.data(), values.data(), values.size_bytes());
    }
    return t;
}

// The 8-byte length prefix and the JSON header, padded with spaces so the data that follows
// starts 8-byte aligned (as the reference writer does). Checks everything that would make the
// file invalid; `where` starts the error messages.
std::string buildHeader(const SafetensorsFile& file, const std::string& where) {
    Json header = Json::object();
    if (!file.metadata.empty()) {
        Json metadata = Json::object();
        for (const auto& [key, value] : file.metadata) {
            metadata[key] = value;
        }
        header[kMetadataKey] = std::move(metadata);
    }
    std::set<std::string_view> names;
    uint64_t offset = 0;
    for (const Tensor& t : file.tensors) {
        const std::string what = where + ": cannot write tensor '" + t.name + "': ";
        if (t.name == kMetadataKey) {
            throw RuntimeError(what + "the name is reserved for metadata");
        }
        if (!names.insert(t.name).second) {
            throw RuntimeError(what + "duplicate name");
        }
        const std::optional<int64_t> bytes = byteSize(t.shape, t.dtype);
        if (!bytes) {
            throw RuntimeError(what + "invalid shape " + shapeText(t.shape));
        }
        if (*bytes != static_cast<int64_t>(t.data.size())) {
            throw RuntimeError(what + std::to_string(t.data.size()) +
                               " bytes of data do not match shape " + shapeText(t.shape) + " of " +
                               dtypeName(t.dtype) + " (" + std::to_string(*bytes) + " bytes)");
        }
        const uint64_t end = offset + static_cast<uint64_t>(*bytes);
        Json entry = Json::object();
        entry["dtype"] = dtypeName(t.dtype);
        entry["shape"] = t.shape;
        entry["data_offsets"] = Json::array({offset, end});
        header[t.name] = std::move(entry);
        offset = end;
    }

    std::string text;
    try {
        text = header.dump();
    } catch (const Json::exception& e) {
        throw RuntimeError(where + ": cannot write: a tensor name or metadata entry is not valid " +
                           "UTF-8 (" + e.what() + ")");
    }
    text.append((8 - text.size() % 8) % 8, ' ');

    std::string prefix(8, '\0');
    for (size_t i = 0; i < 8; ++i) {
        prefix[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
    }
    return prefix + text;
}

// Parses the header text, rejecting duplicate keys: a JSON parser would silently keep one of
// two tensors with the same name.
Json parseHeader(std::string_view text, const std::string& origin) {
    // nlohmann's lexer takes a NUL byte for the end of input and would ignore what follows;
    // valid JSON never holds one (control characters in strings must be escaped).
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
        throw DataError(
            ErrorKind::Weights,
            origin + ": header is not valid JSON: NUL byte at offset " + std::to_string(8 + nul));
    }
    std::vector<std::set<std::string>> openObjects;
    const auto rejectDuplicates = [&](int depth, Json::parse_event_t event, Json& parsed) {
        if (event == Json::parse_event_t::object_start) {
            openObjects.emplace_back();
        } else if (event == Json::parse_event_t::object_end) {
            openObjects.pop_back();
        } else if (event == Json::parse_event_t::key) {
            const auto& key = parsed.get_ref<const std::string&>();
            if (!openObjects.back().insert(key).second) {
                throw DataError(ErrorKind::Weights, origin + ": header: duplicate " +
                                                        (depth == 1 ? "tensor name '" : "key '") +
                                                        key + "'");
            }
        }
        return true;
    };
    try {
        return Json::parse(text.data(), text.data() + text.size(), rejectDuplicates);
    } catch (const Json::exception& e) {
        throw DataError(ErrorKind::Weights, origin + ": header is not valid JSON: " + e.what());
    }
}

}  // namespace

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        text += (i == 0 ? "" : ",") + std::to_string(shape[i]);
    }
    return text + "]";
}

const char* dtypeName(DType dtype) {
    switch (dtype) {
        case DType::F32:
            return "F32";
        case DType::I32:
            return "I32";
        case DType::F64:
            return "F64";
        case DType::I64:
            return "I64";
        case DType::U8:
            return "U8";
    }
    return "?";
}

int64_t dtypeSize(DType dtype) {
    switch (dtype) {
        case DType::F32:
        case DType::I32:
            return 4;
        case DType::F64:
        case DType::I64:
            return 8;
        case DType::U8:
            return 1;
    }
    return 1;
}

int64_t Tensor::elements() const {
    int64_t n = 1;
    for (int64_t d : shape) {
        n *= d;
    }
    return n;
}

std::span<const float> Tensor::f32() const {
    return view<float>(*this, DType::F32);
}
std::span<const int32_t> Tensor::i32() const {
    return view<int32_t>(*this, DType::I32);
}
std::span<const double> Tensor::f64() const {
    return view<double>(*this, DType::F64);
}
std::span<const int64_t> Tensor::i64() const {
    return view<int64_t>(*this, DType::I64);
}
std::span<const uint8_t> Tensor::u8() const {
    return view<uint8_t>(*this, DType::U8);
}

Tensor Tensor::fromF32(std::string name, std::vector<int64_t> shape,
                       std::span<const float> values) {
    return build(std::move(name), std::move(shape), values, DType::F32);
}
Tensor Tensor::fromI32(std::string name, std::vector<int64_t> shape,
                       std::span<const int32_t> values) {
    return build(std::move(name), std::move(shape), values, DType::I32);
}
Tensor Tensor::fromF64(std::string name, std::vector<int64_t> shape,
                       std::span<const double> values) {
    return build(std::move(name), std::move(shape), values, DType::F64);
}
Tensor Tensor::fromI64(std::string name, std::vector<int64_t> shape,
                       std::span<const int64_t> values) {
    return build(std::move(name), std::move(shape), values, DType::I64);
}
Tensor Tensor::fromU8(std::string name, std::vector<int64_t> shape,
                      std::span<const uint8_t> values) {
    return build(std::move(name), std::move(shape), values, DType::U8);
}

const Tensor* SafetensorsFile::find(const std::string& name) const {
    for (const Tensor& t : tensors) {
        if (t.name == name) {
            return &t;
        }
    }
    return nullptr;
}

const Tensor& SafetensorsFile::get(const std::string& name) const {
    if (const Tensor* t = find(name)) {
        return *t;
    }
    throw DataError(ErrorKind::Weights, (origin.empty() ? std::string("safetensors") : origin) +
                                            ": no tensor named '" + name + "'");
}

std::string serializeSafetensors(const SafetensorsFile& file) {
    const std::string header = buildHeader(file, "safetensors");
    size_t total = header.size();
    for (const Tensor& t : file.tensors) {
        total += t.data.size();
    }
    std::string bytes;
    bytes.reserve(total);
    bytes += header;
    for (const Tensor& t : file.tensors) {
        bytes.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
    }
    return bytes;
}

void writeSafetensors(const std::string& path, const SafetensorsFile& file) {
    // Validated before the file is touched.
    const std::string header = buildHeader(file, path);
    writeFileAtomic(path, [&](std::ostream& out) {
        out.write(header.data(), static_cast<std::streamsize>(header.size()));
        for (const Tensor& t : file.tensors) {
            out.write(reinterpret_cast<const char*>(t.data.data()),
                      static_cast<std::streamsize>(t.data.size()));
        }
    });
}

SafetensorsFile parseSafetensors(std::string_view bytes, const std::string& originForErrors) {
    const std::string& origin = originForErrors;
    const auto fail = [&](const std::string& what) {
        return DataError(ErrorKind::Weights, origin + ": " + what);
    };

    if (bytes.size() < 8) {
        throw fail("file too short for a safetensors header (" + std::to_string(bytes.size()) +
                   " bytes, need at least 8)");
    }
    uint64_t headerLength = 0;
    for (size_t i = 0; i < 8; ++i) {
        headerLength |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
    }
    // Both checks come before anything is sized from the length: a corrupt length must not
    // turn into a huge allocation.
    if (headerLength > kMaxHeaderBytes) {
        throw fail("header length " + std::to_string(headerLength) +
                   " exceeds the 100 MB limit (not a safetensors file?)");
    }
    if (headerLength > bytes.size() - 8) {
        throw fail("header length " + std::to_string(headerLength) +
                   " is larger than the rest of the file (" + std::to_string(bytes.size() - 8) +
                   " bytes)");
    }
    const std::string_view buffer = bytes.substr(8 + headerLength);
    const Json header = parseHeader(bytes.substr(8, headerLength), origin);
    if (!header.is_object()) {
        throw fail("header is not a JSON object");
    }

    SafetensorsFile file;
    file.origin = origin;
    struct Entry {
        std::string name;
        DType dtype;
        std::vector<int64_t> shape;
        uint64_t begin;
        uint64_t end;
    };
    std::vector<Entry> entries;
    for (const auto& [name, value] : header.items()) {
        if (name == kMetadataKey) {
            if (!value.is_object()) {
                throw fail("__metadata__ is not an object: " + brief(value));
            }
            for (const auto& [key, text] : value.items()) {
                if (!text.is_string()) {
                    throw fail("__metadata__ value for '" + key +
                               "' is not a string: " + brief(text));
                }
                file.metadata[key] = text.get<std::string>();
            }
            continue;
        }

        const std::string where = "tensor '" + name + "': ";
        if (!value.is_object()) {
            throw fail(where + "expected an object with dtype, shape and data_offsets, got " +
                       brief(value));
        }
        // Other keys are ignored, as the reference reader does.
        for (const char* key : {"dtype", "shape", "data_offsets"}) {
            if (!value.contains(key)) {
                throw fail(where + "missing '" + key + "'");
            }
        }

        const Json& dtypeJson = value["dtype"];
        if (!dtypeJson.is_string()) {
            throw fail(where + "dtype is not a string: " + brief(dtypeJson));
        }
        const std::optional<DType> dtype = parseDType(dtypeJson.get<std::string>());
        if (!dtype) {
            throw fail(where + "unknown dtype '" + dtypeJson.get<std::string>() +
                       "' (supported: F32, I32, F64, I64, U8)");
        }

        const Json& shapeJson = value["shape"];
        std::vector<int64_t> shape;
        const auto badShape = [&] {
            return fail(where + "shape " + brief(shapeJson) +
                        " is not a list of non-negative integers");
        };
        if (!shapeJson.is_array()) {
            throw badShape();
        }
        for (const Json& d : shapeJson) {
            const std::optional<uint64_t> dim = nonNegativeInt(d);
            if (!dim || *dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                throw badShape();
            }
            shape.push_back(static_cast<int64_t>(*dim));
        }

        const Json& offsets = value["data_offsets"];
        std::optional<uint64_t> begin;
        std::optional<uint64_t> end;
        if (offsets.is_array() && offsets.size() == 2) {
            begin = nonNegativeInt(offsets[0]);
            end = nonNegativeInt(offsets[1]);
        }
        if (!begin || !end) {
            throw fail(where + "data_offsets " + brief(offsets) +
                       " is not [begin, end] with non-negative integers");
        }
        if (*begin > *end) {
            throw fail(where + "data_offsets " + offsetsText(*begin, *end) +
                       " end before they begin");
        }
        if (*end > buffer.size()) {
            throw fail(where + "data_offsets " + offsetsText(*begin, *end) +
                       " reach past the end of the data buffer (" + std::to_string(buffer.size()) +
                       " bytes)");
        }
        const std::optional<int64_t> bytesNeeded = byteSize(shape, *dtype);
        if (!bytesNeeded || static_cast<uint64_t>(*bytesNeeded) != *end - *begin) {
            throw fail(where + "data_offsets " + offsetsText(*begin, *end) +
                       " do not match shape " + shapeText(shape) + " of " + dtypeName(*dtype) +
                       " (" +
                       (bytesNeeded ? std::to_string(*bytesNeeded) + " bytes"
                                    : std::string("more than 2^63 bytes")) +
                       ")");
        }
        entries.push_back({name, *dtype, std::move(shape), *begin, *end});
    }

    // The tensors must tile the buffer exactly: sorted by offset, each starts where the previous
    // ended, and the last ends at the end of the file. Stable, so zero-sized tensors at the same
    // offset keep the header's order.
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t covered = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
        const Entry& e = entries[i];
        if (e.begin < covered) {
            const Entry& prev = entries[i - 1];
            throw fail("tensor '" + e.name + "': data_offsets " + offsetsText(e.begin, e.end) +
                       " overlap tensor '" + prev.name + "' " + offsetsText(prev.begin, prev.end));
        }
        if (e.begin > covered) {
            throw fail("bytes [" + std::to_string(covered) + ", " + std::to_string(e.begin) +
                       ") of the data buffer are not covered by any tensor");
        }
        covered = e.end;
    }
    if (covered != buffer.size()) {
        throw fail("bytes [" + std::to_string(covered) + ", " + std::to_string(buffer.size()) +
                   ") of the data buffer are not covered by any tensor");
    }

    file.tensors.reserve(entries.size());
    for (Entry& e : entries) {
        Tensor t;
        t.name = std::move(e.name);
        t.dtype = e.dtype;
        t.shape = std::move(e.shape);
        const auto* first = reinterpret_cast<const std::byte*>(buffer.data() + e.begin);
        t.data.assign(first, first + (e.end - e.begin));
        file.tensors.push_back(std::move(t));
    }
    return file;
}

SafetensorsFile readSafetensors(const std::string& path) {
    return parseSafetensors(readFile(path, ErrorKind::Weights), path);
}

}  // namespace ensemble
