// MNIST-format IDX files (LeCun et al., http://yann.lecun.com/exdb/mnist/): a big-endian
// header -- magic 0x000008NN (unsigned bytes, NN dimensions), then one uint32 per dimension --
// followed by the bytes, plain or gzip (zlib's inflate).
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
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

// The bytes of one IDX file, plain or gzip, from a file or from memory. Both go through the
// same code: only where the next piece of input comes from differs, so what the fuzz target
// reads in memory is what the file path reads. Like gzread, gzip members may follow each other
// and bytes after the last member that do not start another one are ignored.
class IdxInput {
  public:
    // A file, read in pieces of kPiece bytes.
    explicit IdxInput(const std::string& path)
        : m_origin(path), m_file(std::fopen(path.c_str(), "rb")) {
        if (!m_file) {
            throw DataError(ErrorKind::ImageData,
                            path + ": cannot open: " + std::generic_category().message(errno));
        }
        m_piece.resize(kPiece);
        start();
    }
    // Bytes in memory; `origin` names them in messages.
    IdxInput(std::string_view bytes, std::string origin)
        : m_origin(std::move(origin)),
          m_next(reinterpret_cast<const unsigned char*>(bytes.data())),
          m_available(bytes.size()) {
        start();
    }
    IdxInput(const IdxInput&) = delete;
    IdxInput& operator=(const IdxInput&) = delete;
    ~IdxInput() {
        if (m_gzip) {
            inflateEnd(&m_stream);
        }
    }

    bool gzip() const { return m_gzip; }

    // Reads up to `size` bytes; fewer only at the end of the data. Corrupt gzip is an error.
    std::size_t read(void* out, std::size_t size) {
        return m_gzip ? inflateInto(static_cast<unsigned char*>(out), size)
                      : copyInto(static_cast<unsigned char*>(out), size);
    }

  private:
    static constexpr std::size_t kPiece = std::size_t{1} << 17;

    // Looks at the first two bytes: gzip's magic 1f 8b starts an inflater, anything else is
    // read as it is.
    void start() {
        while (m_available < 2 && refill()) {
        }
        m_gzip = m_available >= 2 && m_next[0] == 0x1f && m_next[1] == 0x8b;
        if (m_gzip && inflateInit2(&m_stream, 16 + MAX_WBITS) != Z_OK) {
            m_gzip = false;
            throw DataError(ErrorKind::ImageData, m_origin + ": cannot start zlib");
        }
    }

    // Moves what is left of the current piece to the front and appends the file's next bytes.
    // False at the end of the input (always, for memory).
    bool refill() {
        if (!m_file) {
            return false;
        }
        if (m_available > 0 && m_next != m_piece.data()) {
            std::memmove(m_piece.data(), m_next, m_available);
        }
        const std::size_t got =
            std::fread(m_piece.data() + m_available, 1, m_piece.size() - m_available, m_file.get());
        if (got == 0 && std::ferror(m_file.get())) {
            throw DataError(ErrorKind::ImageData,
                            m_origin + ": cannot read: " + std::generic_category().message(errno));
        }
        m_next = m_piece.data();
        m_available += got;
        return got > 0;
    }

    std::size_t copyInto(unsigned char* out, std::size_t size) {
        std::size_t done = 0;
        while (done < size && (m_available > 0 || refill())) {
            const std::size_t n = std::min(size - done, m_available);
            std::memcpy(out + done, m_next, n);
            m_next += n;
            m_available -= n;
            done += n;
        }
        return done;
    }

    std::size_t inflateInto(unsigned char* out, std::size_t size) {
        std::size_t done = 0;
        while (done < size && !m_ended) {
            if (m_available == 0 && !refill()) {
                break;  // the stream is cut short: the caller says what was missing
            }
            const std::size_t want = std::min<std::size_t>(size - done, 1u << 30);
            const std::size_t have = std::min<std::size_t>(m_available, 1u << 30);
            m_stream.next_in = const_cast<unsigned char*>(m_next);
            m_stream.avail_in = static_cast<uInt>(have);
            m_stream.next_out = out + done;
            m_stream.avail_out = static_cast<uInt>(want);
            const int code = inflate(&m_stream, Z_NO_FLUSH);
            const std::size_t used = have - m_stream.avail_in;
            m_next += used;
            m_available -= used;
            const std::size_t produced = want - m_stream.avail_out;
            done += produced;
            if (code == Z_STREAM_END) {
                nextMember();
            } else if (code == Z_BUF_ERROR && used == 0 && produced == 0 && !refill()) {
                break;  // inflate needs input that is not there: cut short
            } else if (code != Z_OK && code != Z_BUF_ERROR) {
                throw DataError(ErrorKind::ImageData,
                                m_origin + ": corrupt or truncated gzip data (" +
                                    (m_stream.msg != nullptr ? m_stream.msg : zError(code)) + ")");
            }
        }
        return done;
    }

    // After a gzip member: another one follows, or the data ends here.
    void nextMember() {
        while (m_available < 2 && refill()) {
        }
        if (m_available >= 2 && m_next[0] == 0x1f && m_next[1] == 0x8b) {
            inflateReset(&m_stream);
        } else {
            m_ended = true;
        }
    }

    struct CloseFile {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };

    std::string m_origin;
    std::unique_ptr<std::FILE, CloseFile> m_file;  // null for bytes in memory
    std::vector<unsigned char> m_piece;            // the file's current piece
    const unsigned char* m_next = nullptr;
    std::size_t m_available = 0;  // unread input bytes from m_next on
    bool m_gzip = false;
    bool m_ended = false;
    z_stream m_stream{};
};

struct IdxData {
    std::vector<uint32_t> dims;
    std::vector<unsigned char> bytes;
};

// Reads one IDX file of unsigned bytes with the expected magic from `in`, whose input (the file
// or the bytes) is `fileSize` long. Nothing is allocated from the header's sizes until they are
// checked against that size.
IdxData readIdx(IdxInput& in, const std::string& path, uint64_t fileSize, uint32_t expectedMagic) {
    const bool images = expectedMagic == kImagesMagic;
    const char* kindName = images ? "images" : "labels";
    const bool gz = in.gzip();

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

// readIdx of a file: it exists and is a regular file, and its size bounds the header's claims.
IdxData readIdxFile(const std::string& path, uint32_t expectedMagic) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        throw DataError(ErrorKind::ImageData, path + ": no such file");
    }
    if (!std::filesystem::is_regular_file(path, ec)) {
        throw DataError(ErrorKind::ImageData,
                        path + ": not a regular file, expected an IDX " +
                            (expectedMagic == kImagesMagic ? "images" : "labels") + " file");
    }
    const uint64_t fileSize = std::filesystem::file_size(path, ec);
    if (ec) {
        throw DataError(ErrorKind::ImageData, path + ": cannot read its size: " + ec.message());
    }
    IdxInput in(path);
    return readIdx(in, path, fileSize, expectedMagic);
}

IdxData readIdxBytes(std::string_view bytes, const std::string& origin, uint32_t expectedMagic) {
    IdxInput in(bytes, origin);
    return readIdx(in, origin, bytes.size(), expectedMagic);
}

Dataset pairDataset(const IdxData& images, const IdxData& labels, const std::string& imagesOrigin,
                    const std::string& labelsOrigin, int& imageWidth, int& imageHeight) {
    if (images.dims[0] != labels.dims[0]) {
        throw DataError(ErrorKind::ImageData,
                        imagesOrigin + " holds " + std::to_string(images.dims[0]) + " images but " +
                            labelsOrigin + " holds " + std::to_string(labels.dims[0]) +
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

}  // namespace

Dataset readIdxPair(const std::string& imagesPath, const std::string& labelsPath, int& imageWidth,
                    int& imageHeight) {
    const IdxData images = readIdxFile(imagesPath, kImagesMagic);
    const IdxData labels = readIdxFile(labelsPath, kLabelsMagic);
    return pairDataset(images, labels, imagesPath, labelsPath, imageWidth, imageHeight);
}

Dataset readIdxPair(const std::string& imagesPath, const std::string& labelsPath) {
    int width = 0;
    int height = 0;
    return readIdxPair(imagesPath, labelsPath, width, height);
}

Dataset parseIdxPair(std::string_view images, std::string_view labels,
                     const std::string& imagesOrigin, const std::string& labelsOrigin,
                     int& imageWidth, int& imageHeight) {
    const IdxData imageData = readIdxBytes(images, imagesOrigin, kImagesMagic);
    const IdxData labelData = readIdxBytes(labels, labelsOrigin, kLabelsMagic);
    return pairDataset(imageData, labelData, imagesOrigin, labelsOrigin, imageWidth, imageHeight);
}

}  // namespace ensemble
