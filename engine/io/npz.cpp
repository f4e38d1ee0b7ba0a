#include "io/npz.h"

#include <bit>
#include <limits>
#include <string_view>
#include <vector>

#include <zlib.h>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "sys/atomic_file.h"

namespace ensemble {

static_assert(std::endian::native == std::endian::little,
              "the .npy data is written as in memory: little-endian");

namespace {

// The zip fields that hold these values say "see the zip64 extra field" (APPNOTE 4.4).
constexpr uint32_t kZip64Marker32 = 0xFFFFFFFFu;
constexpr uint16_t kZip64Marker16 = 0xFFFFu;
// The highest value a 32-bit field holds without meaning "zip64".
constexpr uint64_t kMax32 = 0xFFFFFFFEu;
// Version needed to extract: 2.0 for stored entries, 4.5 once zip64 records are used.
constexpr uint16_t kVersionStored = 20;
constexpr uint16_t kVersionZip64 = 45;
// General purpose flag bit 11: the names are UTF-8.
constexpr uint16_t kFlagUtf8 = 0x0800;
// MS-DOS date of 1980-01-01 (the earliest), time 00:00: the archive does not depend on when
// it was written.
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;
constexpr uint16_t kDosTime = 0;

const char* npyDescr(DType dtype) {
    switch (dtype) {
        case DType::F32:
            return "<f4";
        case DType::I32:
            return "<i4";
        case DType::F64:
            return "<f8";
        case DType::I64:
            return "<i8";
        case DType::U8:
            return "|u1";
    }
    return "|u1";
}

class LittleEndian {
  public:
    void u16(uint16_t v) { put(v, 2); }
    void u32(uint32_t v) { put(v, 4); }
    void u64(uint64_t v) { put(v, 8); }
    void bytes(std::string_view s) { m_bytes += s; }
    const std::string& str() const { return m_bytes; }
    std::size_t size() const { return m_bytes.size(); }

  private:
    void put(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) {
            m_bytes += static_cast<char>((v >> (8 * i)) & 0xFF);
        }
    }
    std::string m_bytes;
};

// UTF-8 to UTF-32 code points (the .npy '<U' dtype). RuntimeError for invalid UTF-8.
std::u32string utf32(std::string_view text) {
    std::u32string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        const auto b0 = static_cast<unsigned char>(text[i]);
        int extra = 0;
        char32_t cp = 0;
        if (b0 < 0x80) {
            cp = b0;
        } else if ((b0 & 0xE0) == 0xC0) {
            extra = 1;
            cp = b0 & 0x1F;
        } else if ((b0 & 0xF0) == 0xE0) {
            extra = 2;
            cp = b0 & 0x0F;
        } else if ((b0 & 0xF8) == 0xF0) {
            extra = 3;
            cp = b0 & 0x07;
        } else {
            throw RuntimeError("npz: the metadata is not valid UTF-8 (byte " + std::to_string(i) +
                               ")");
        }
        if (i + static_cast<std::size_t>(extra) >= text.size()) {
            throw RuntimeError("npz: the metadata ends inside a UTF-8 sequence");
        }
        for (int j = 1; j <= extra; ++j) {
            const auto b = static_cast<unsigned char>(text[i + static_cast<std::size_t>(j)]);
            if ((b & 0xC0) != 0x80) {
                throw RuntimeError("npz: the metadata is not valid UTF-8 (byte " +
                                   std::to_string(i + static_cast<std::size_t>(j)) + ")");
            }
            cp = (cp << 6) | (b & 0x3F);
        }
        out += cp;
        i += static_cast<std::size_t>(extra) + 1;
    }
    return out;
}

// One archive member: its name and the .npy bytes as a header and a data span.
struct Entry {
    std::string name;
    std::string header;
    const char* data = nullptr;
    uint64_t dataSize = 0;
    uint32_t crc = 0;
    uint64_t offset = 0;  // of its local file header
    bool zip64 = false;
    uint64_t size() const { return header.size() + dataSize; }
};

uint32_t crcOf(const Entry& e) {
    uLong crc = crc32_z(0L, Z_NULL, 0);
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(e.header.data()), e.header.size());
    if (e.dataSize > 0) {
        crc = crc32_z(crc, reinterpret_cast<const Bytef*>(e.data), e.dataSize);
    }
    return static_cast<uint32_t>(crc);
}

void write(std::ostream& out, std::string_view bytes) {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

std::string npyHeader(const std::string& descr, const std::vector<int64_t>& shape) {
    std::string shapeText = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        shapeText += (i ? ", " : "") + std::to_string(shape[i]);
    }
    shapeText += shape.size() == 1 ? ",)" : ")";
    std::string dict =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shapeText + ", }";
    // Version 1.0 stores the header length in 2 bytes, 2.0 in 4; the whole preamble is padded
    // with spaces to a multiple of 64 bytes, the last byte '\n' (NumPy's format spec).
    const bool v2 = dict.size() + 1 + 10 + 63 > 65535;
    const std::size_t preamble = v2 ? 12 : 10;
    const std::size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
    dict.append(total - preamble - dict.size() - 1, ' ');
    dict += '\n';
    LittleEndian h;
    h.bytes("\x93NUMPY");
    h.bytes(v2 ? std::string_view("\x02\x00", 2) : std::string_view("\x01\x00", 2));
    if (v2) {
        h.u32(static_cast<uint32_t>(dict.size()));
    } else {
        h.u16(static_cast<uint16_t>(dict.size()));
    }
    h.bytes(dict);
    return h.str();
}

void writeNpzTo(std::ostream& out, const SafetensorsFile& file, const NpzOptions& options) {
    // The metadata array's content: one JSON object of the string map (std::map: sorted keys),
    // as UTF-32 code points.
    std::string metadataJson;
    try {
        metadataJson = nlohmann::json(file.metadata).dump();
    } catch (const nlohmann::json::exception& e) {
        throw RuntimeError(std::string("npz: the metadata cannot be written as JSON: ") + e.what());
    }
    const std::u32string metadataText = utf32(metadataJson);
    std::vector<Entry> entries;
    entries.reserve(file.tensors.size() + 1);
    for (const Tensor& t : file.tensors) {
        if (t.name == "__metadata__") {
            throw RuntimeError("npz: a tensor may not be called __metadata__");
        }
        Entry e;
        e.name = t.name + ".npy";
        e.header = npyHeader(npyDescr(t.dtype), t.shape);
        e.data = reinterpret_cast<const char*>(t.data.data());
        e.dataSize = t.data.size();
        entries.push_back(std::move(e));
    }
    {
        Entry e;
        e.name = "__metadata__.npy";
        e.header = npyHeader("<U" + std::to_string(metadataText.size()), {});
        e.data = reinterpret_cast<const char*>(metadataText.data());
        e.dataSize = metadataText.size() * sizeof(char32_t);
        entries.push_back(std::move(e));
    }

    uint64_t offset = 0;
    for (Entry& e : entries) {
        if (e.name.size() > 0xFFFF) {
            throw RuntimeError("npz: the tensor name '" + e.name.substr(0, 60) +
                               "...' is longer than a zip entry name can be");
        }
        e.crc = crcOf(e);
        e.offset = offset;
        e.zip64 = options.forceZip64 || e.size() > kMax32 || e.offset > kMax32;
        LittleEndian h;
        h.u32(0x04034b50);  // local file header
        h.u16(e.zip64 ? kVersionZip64 : kVersionStored);
        h.u16(kFlagUtf8);
        h.u16(0);  // stored
        h.u16(kDosTime);
        h.u16(kDosDate);
        h.u32(e.crc);
        h.u32(e.zip64 ? kZip64Marker32 : static_cast<uint32_t>(e.size()));  // compressed
        h.u32(e.zip64 ? kZip64Marker32 : static_cast<uint32_t>(e.size()));  // uncompressed
        h.u16(static_cast<uint16_t>(e.name.size()));
        h.u16(e.zip64 ? 20 : 0);
        h.bytes(e.name);
        if (e.zip64) {
            // The local header's zip64 extra holds both sizes (APPNOTE 4.5.3).
            h.u16(0x0001);
            h.u16(16);
            h.u64(e.size());  // uncompressed
            h.u64(e.size());  // compressed
        }
        write(out, h.str());
        write(out, e.header);
        if (e.dataSize > 0) {
            out.write(e.data, static_cast<std::streamsize>(e.dataSize));
        }
        offset += h.size() + e.size();
    }

    const uint64_t directoryOffset = offset;
    LittleEndian dir;
    for (const Entry& e : entries) {
        dir.u32(0x02014b50);  // central directory file header
        dir.u16(static_cast<uint16_t>((3 << 8) | (e.zip64 ? kVersionZip64 : kVersionStored)));
        dir.u16(e.zip64 ? kVersionZip64 : kVersionStored);
        dir.u16(kFlagUtf8);
        dir.u16(0);
        dir.u16(kDosTime);
        dir.u16(kDosDate);
        dir.u32(e.crc);
        dir.u32(e.zip64 ? kZip64Marker32 : static_cast<uint32_t>(e.size()));
        dir.u32(e.zip64 ? kZip64Marker32 : static_cast<uint32_t>(e.size()));
        dir.u16(static_cast<uint16_t>(e.name.size()));
        dir.u16(e.zip64 ? 28 : 0);
        dir.u16(0);               // comment
        dir.u16(0);               // disk number start
        dir.u16(0);               // internal attributes
        dir.u32(0100644u << 16);  // external attributes: a regular file, rw-r--r--
        dir.u32(e.zip64 ? kZip64Marker32 : static_cast<uint32_t>(e.offset));
        dir.bytes(e.name);
        if (e.zip64) {
            // The values whose fields above say 0xFFFFFFFF, in this order (APPNOTE 4.5.3).
            dir.u16(0x0001);
            dir.u16(24);
            dir.u64(e.size());
            dir.u64(e.size());
            dir.u64(e.offset);
        }
    }
    const uint64_t directorySize = dir.size();
    const uint64_t count = entries.size();
    const bool zip64 = options.forceZip64 || count >= kZip64Marker16 || directorySize > kMax32 ||
                       directoryOffset > kMax32;
    if (zip64) {
        const uint64_t recordOffset = directoryOffset + directorySize;
        dir.u32(0x06064b50);  // zip64 end of central directory record
        dir.u64(44);          // its size after this field
        dir.u16((3 << 8) | kVersionZip64);
        dir.u16(kVersionZip64);
        dir.u32(0);  // this disk
        dir.u32(0);  // the disk where the directory starts
        dir.u64(count);
        dir.u64(count);
        dir.u64(directorySize);
        dir.u64(directoryOffset);
        dir.u32(0x07064b50);  // zip64 end of central directory locator
        dir.u32(0);
        dir.u64(recordOffset);
        dir.u32(1);  // disks
    }
    dir.u32(0x06054b50);  // end of central directory record
    dir.u16(0);
    dir.u16(0);
    dir.u16(zip64 ? kZip64Marker16 : static_cast<uint16_t>(count));
    dir.u16(zip64 ? kZip64Marker16 : static_cast<uint16_t>(count));
    dir.u32(zip64 ? kZip64Marker32 : static_cast<uint32_t>(directorySize));
    dir.u32(zip64 ? kZip64Marker32 : static_cast<uint32_t>(directoryOffset));
    dir.u16(0);  // comment
    write(out, dir.str());
}

void writeNpz(const std::string& path, const SafetensorsFile& file, const NpzOptions& options) {
    writeFileAtomic(path, [&](std::ostream& out) { writeNpzTo(out, file, options); });
}

}  // namespace ensemble
