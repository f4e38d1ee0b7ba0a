// MNIST-format IDX files (LeCun et al., http://yann.lecun.com/exdb/mnist/): a big-endian
// header -- magic 0x000008NN (unsigned bytes, NN dimensions), then one uint32 per dimension --
// followed by the bytes. gzopen/gzread read plain and gzip files alike.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "core/errors.h"
#include "data/dataset.h"

namespace ensemble {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
// Deflate cannot compress better than about 1032:1, so a gzip file of S bytes never holds
// more than this many times S: a bound that needs no trust in the header.
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr uint32_t kMaxImageSide = 4096;
constexpr std::size_t kChunk = std::size_t{16} << 20;

std::string hex(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "0x%08x", v);
    return buf;
}

uint32_t bigEndian(const unsigned char* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

class GzReader {
  public:
    explicit GzReader(const std::string& path) : m_path(path) {
        m_file = gzopen(path.c_str(), "rb");
        if (m_file == nullptr) {
            throw DataError(ErrorKind::ImageData,
                            path + ": cannot open: " + std::generic_category().message(errno));
        }
        gzbuffer(m_file, 1u << 17);
    }
    GzReader(const GzReader&) = delete;
    GzReader& operator=(const GzReader&) = delete;
    ~GzReader() { gzclose(m_file); }

    // Reads up to `size` bytes; fewer only at the end of the data. Corrupt gzip is an error.
    std::size_t read(void* out, std::size_t size) {
        std::size_t done = 0;
        while (done < size) {
            const unsigned want =
                static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
            const int n = gzread(m_file, static_cast<unsigned char*>(out) + done, want);
            if (n < 0) {
                int code = 0;
                const char* message = gzerror(m_file, &code);
                throw DataError(ErrorKind::ImageData,
                                m_path + ": corrupt or truncated gzip data (" + message + ")");
            }
            if (n == 0) {
                // zlib flags a gzip stream cut short as Z_BUF_ERROR ("unexpected end of file").
                int code = 0;
                const char* message = gzerror(m_file, &code);
                if (code == Z_BUF_ERROR) {
                    break;  // cut short: the caller says what was missing
                }
                if (code != Z_OK && code != Z_STREAM_END) {
                    throw DataError(ErrorKind::ImageData,
                                    m_path + ": corrupt or truncated gzip data (" + message + ")");
                }
                break;
            }
            done += static_cast<std::size_t>(n);
        }
        return done;
    }

  private:
    std::string m_path;
    gzFile m_file = nullptr;
};

struct IdxData {
    std::vector<uint32_t> dims;
    std::vector<unsigned char> bytes;
};

bool isGzip(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    unsigned char head[2] = {0, 0};
    in.read(reinterpret_cast<char*>(head), 2);
    return in.gcount() == 2 && head[0] == 0x1f && head[1] == 0x8b;
}

// Reads one IDX file of unsigned bytes with the expected magic. Nothing is allocated from the
// header's sizes until they are checked against the file's size.
IdxData readIdx(const std::string& path, uint32_t expectedMagic) {
    const bool images = expectedMagic == kImagesMagic;
    const char* kindName = images ? "images" : "labels";
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        throw DataError(ErrorKind::ImageData, path + ": no such file");
    }
    if (!std::filesystem::is_regular_file(path, ec)) {
        throw DataError(ErrorKind::ImageData, path + ": not a regular file, expected an IDX " +
                                                  std::string(kindName) + " file");
    }
    const uint64_t fileSize = std::filesystem::file_size(path, ec);
    if (ec) {
        throw DataError(ErrorKind::ImageData, path + ": cannot read its size: " + ec.message());
    }
    const bool gz = isGzip(path);

    GzReader in(path);
    unsigned char head[4];
    if (in.read(head, 4) < 4) {
        throw DataError(ErrorKind::ImageData,
                        path + ": truncated: shorter than the 4-byte IDX magic number");
    }
    const uint32_t magic = bigEndian(head);
    if (magic != expectedMagic) {
        std::string hint;
        if (magic == (images ? kLabelsMagic : kImagesMagic)) {
            hint = images ? " (this is a labels file)" : " (this is an images file)";
        }
        throw DataError(ErrorKind::ImageData,
                        path + ": bad magic number " + hex(magic) + ", expected " +
                            hex(expectedMagic) + " (IDX " + kindName + ": unsigned bytes, " +
                            std::to_string(expectedMagic & 0xff) + " dimension" +
                            ((expectedMagic & 0xff) > 1 ? "s" : "") + ")" + hint);
    }

    IdxData idx;
    const std::size_t ndims = expectedMagic & 0xff;
    std::vector<unsigned char> dimBytes(4 * ndims);
    if (in.read(dimBytes.data(), dimBytes.size()) < dimBytes.size()) {
        throw DataError(ErrorKind::ImageData, path + ": truncated: the header ends before its " +
                                                  std::to_string(ndims) + " dimension sizes");
    }
    for (std::size_t d = 0; d < ndims; ++d) {
        idx.dims.push_back(bigEndian(dimBytes.data() + 4 * d));
    }
    uint64_t itemSize = 1;
    if (images) {
        const uint32_t rows = idx.dims[1];
        const uint32_t cols = idx.dims[2];
        if (rows == 0 || cols == 0 || rows > kMaxImageSide || cols > kMaxImageSide) {
            throw DataError(ErrorKind::ImageData,
                            path + ": the header gives images of " + std::to_string(rows) + "x" +
                                std::to_string(cols) + " pixels, expected 1 to " +
                                std::to_string(kMaxImageSide) + " per side");
        }
        itemSize = uint64_t{rows} * cols;
    }
    const uint64_t count = idx.dims[0];
    const uint64_t payload = count * itemSize;  // < 2^32 * 2^24: no overflow
    const uint64_t headerSize = 4 + 4 * ndims;
    const std::string claim = "the header promises " + std::to_string(count) + " " +
                              (images ? "images of " + std::to_string(idx.dims[1]) + "x" +
                                            std::to_string(idx.dims[2]) + " pixels"
                                      : std::string("labels")) +
                              " (" + std::to_string(headerSize + payload) + " bytes)";
    if (!gz && fileSize != headerSize + payload) {
        throw DataError(ErrorKind::ImageData,
                        path + (fileSize < headerSize + payload ? ": truncated: " : ": ") + claim +
                            " but the file has " + std::to_string(fileSize) + " bytes");
    }
    if (gz && headerSize + payload > fileSize * kMaxDeflateRatio) {
        throw DataError(ErrorKind::ImageData, path + ": corrupt header: " + claim +
                                                  ", more than a gzip file of " +
                                                  std::to_string(fileSize) + " bytes can hold");
    }

    // Plain files were checked exactly; gzip data grows chunk by chunk as it really arrives.
    idx.bytes.reserve(static_cast<std::size_t>(gz ? std::min<uint64_t>(payload, kChunk) : payload));
    while (idx.bytes.size() < payload) {
        const std::size_t old = idx.bytes.size();
        const std::size_t want =
            static_cast<std::size_t>(std::min<uint64_t>(payload - old, kChunk));
        idx.bytes.resize(old + want);
        const std::size_t got = in.read(idx.bytes.data() + old, want);
        idx.bytes.resize(old + got);
        if (got < want) {
            throw DataError(ErrorKind::ImageData,
                            path + ": truncated: " + claim + " but the data ends after " +
                                std::to_string(headerSize + idx.bytes.size()) + " bytes" +
                                (gz ? " (uncompressed)" : ""));
        }
    }
    unsigned char extra = 0;
    if (in.read(&extra, 1) != 0) {
        throw DataError(ErrorKind::ImageData,
                        path + ": " + claim + " but the file holds more data after them");
    }
    return idx;
}

}  // namespace

Dataset readIdxPair(const std::string& imagesPath, const std::string& labelsPath, int& imageWidth,
                    int& imageHeight) {
    const IdxData images = readIdx(imagesPath, kImagesMagic);
    const IdxData labels = readIdx(labelsPath, kLabelsMagic);
    if (images.dims[0] != labels.dims[0]) {
        throw DataError(ErrorKind::ImageData,
                        imagesPath + " holds " + std::to_string(images.dims[0]) + " images but " +
                            labelsPath + " holds " + std::to_string(labels.dims[0]) +
                            " labels: expected one label per image");
    }
    imageHeight = static_cast<int>(images.dims[1]);
    imageWidth = static_cast<int>(images.dims[2]);

    Dataset data;
    data.rows = images.dims[0];
    data.features = imageWidth * imageHeight;
    data.x.assign(images.bytes.begin(), images.bytes.end());
    data.y.assign(labels.bytes.begin(), labels.bytes.end());
    data.featureNames.reserve(static_cast<std::size_t>(data.features));
    for (int f = 0; f < data.features; ++f) {
        std::string name = "x";  // not "x" + to_string: GCC 12 warns falsely (-Wrestrict)
        name += std::to_string(f);
        data.featureNames.push_back(std::move(name));
    }
    return data;
}

Dataset readIdxPair(const std::string& imagesPath, const std::string& labelsPath) {
    int width = 0;
    int height = 0;
    return readIdxPair(imagesPath, labelsPath, width, height);
}

}  // namespace ensemble
