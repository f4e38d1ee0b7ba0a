#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <ostream>
#include <random>
#include <streambuf>
#include <system_error>
#include <vector>

#include "core/errors.h"

namespace ensemble {

namespace {

// std::strerror is not thread-safe; the generic category's message is.
std::string errorText(int err) {
    return std::generic_category().message(err);
}

[[noreturn]] void failWrite(const std::string& what, int err) {
    throw RuntimeError(ErrorKind::Io, what + ": " + errorText(err));
}

// Writes all of [data, data + size), retrying short writes and EINTR. Returns 0 or an errno.
int writeAll(int fd, const char* data, size_t size) {
    while (size > 0) {
        // Linux writes at most ~2 GiB per call anyway.
        const ssize_t n = ::write(fd, data, std::min<size_t>(size, size_t{1} << 30));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno;
        }
        if (n == 0) {
            return EIO;  // no progress and no error: do not spin
        }
        data += n;
        size -= static_cast<size_t>(n);
    }
    return 0;
}

// A buffered std::streambuf over a file descriptor that remembers the first errno, so the
// caller can report why a write failed (std::ofstream cannot say).
class FdStreambuf : public std::streambuf {
  public:
    explicit FdStreambuf(int fd) : m_fd(fd), m_buffer(size_t{1} << 18) { resetPut(); }

    int error() const { return m_error; }

  protected:
    int_type overflow(int_type ch) override {
        if (!flushBuffer()) {
            return traits_type::eof();
        }
        if (!traits_type::eq_int_type(ch, traits_type::eof())) {
            *pptr() = traits_type::to_char_type(ch);
            pbump(1);
        }
        return traits_type::not_eof(ch);
    }

    std::streamsize xsputn(const char* s, std::streamsize n) override {
        // Large blocks (tensor data) go straight to the file instead of through the buffer.
        if (n >= static_cast<std::streamsize>(m_buffer.size())) {
            if (!flushBuffer()) {
                return 0;
            }
            m_error = writeAll(m_fd, s, static_cast<size_t>(n));
            return m_error == 0 ? n : 0;
        }
        return std::streambuf::xsputn(s, n);
    }

    int sync() override { return flushBuffer() ? 0 : -1; }

  private:
    void resetPut() { setp(m_buffer.data(), m_buffer.data() + m_buffer.size()); }

    bool flushBuffer() {
        if (m_error != 0) {
            return false;
        }
        m_error = writeAll(m_fd, pbase(), static_cast<size_t>(pptr() - pbase()));
        resetPut();
        return m_error == 0;
    }

    int m_fd;
    std::vector<char> m_buffer;
    int m_error = 0;
};

// Owns the temporary file until it has been renamed into place: any early exit (error or an
// exception from the caller's writer) closes and removes it.
struct TempFile {
    std::string path;
    int fd = -1;
    bool committed = false;

    TempFile() = default;
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    ~TempFile() {
        if (fd >= 0) {
            ::close(fd);
        }
        if (!committed && !path.empty()) {
            ::unlink(path.c_str());
        }
    }
};

std::string randomSuffix() {
    static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uniform_int_distribution<size_t> pick(0, sizeof(kChars) - 2);
    std::string s(10, 'x');
    for (char& c : s) {
        c = kChars[pick(rng)];
    }
    return s;
}

// Makes the rename itself durable. Best effort: the new file is already in place, so a failure
// here must not be reported as if the write had not happened.
void syncDirectory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

}  // namespace

void writeFileAtomic(const std::string& path, std::string_view bytes) {
    writeFileAtomic(path, [bytes](std::ostream& out) {
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    });
}

void writeFileAtomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
    const std::filesystem::path target(path);
    const std::string name = target.filename().string();
    if (name.empty() || name == "." || name == "..") {
        throw RuntimeError(ErrorKind::Io, path + ": cannot write: not a file path");
    }
    // Same directory as the target, so rename() stays within one file system and is atomic.
    const std::filesystem::path dir = target.parent_path();
    const std::string dirText = dir.empty() ? std::string(".") : dir.string();

    TempFile tmp;
    // Long names are shortened so the temporary name stays within NAME_MAX.
    // (Built by appending: `"." + std::string` trips a GCC 12 -Wrestrict false positive.)
    std::string stem = ".";
    stem.append(name, 0, 200);
    stem += ".tmp-";
    for (int attempt = 0;; ++attempt) {
        tmp.path = (dir / (stem + randomSuffix())).string();
        // O_EXCL: never reuse someone else's file; 0666 lets the umask decide, as for any file.
        tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (tmp.fd >= 0) {
            break;
        }
        const int err = errno;
        if ((err == EEXIST || err == EINTR) && attempt < 100) {
            continue;
        }
        tmp.path.clear();  // nothing was created
        failWrite(path + ": cannot create a temporary file in '" + dirText + "'", err);
    }

    // Replacing a file keeps its permissions (a deliberately private 0600 file stays private).
    struct stat old {};
    if (::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
        ::fchmod(tmp.fd, old.st_mode & 07777);
    }

    {
        FdStreambuf buffer(tmp.fd);
        std::ostream out(&buffer);
        write(out);
        out.flush();
        if (buffer.error() != 0) {
            failWrite(path + ": cannot write '" + tmp.path + "'", buffer.error());
        }
        if (!out) {
            throw RuntimeError(ErrorKind::Io,
                               path + ": cannot write: the output stream was left failed");
        }
    }
    if (::fsync(tmp.fd) != 0) {
        failWrite(path + ": cannot flush '" + tmp.path + "' to disk", errno);
    }
    const int fd = tmp.fd;
    tmp.fd = -1;
    // close() can report a deferred write error (NFS, quota).
    if (::close(fd) != 0) {
        failWrite(path + ": cannot close '" + tmp.path + "'", errno);
    }
    if (::rename(tmp.path.c_str(), path.c_str()) != 0) {
        failWrite(path + ": cannot rename '" + tmp.path + "' over it", errno);
    }
    tmp.committed = true;
    syncDirectory(dirText);
}

std::string readFile(const std::string& path, ErrorKind kind) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        throw DataError(kind, path + ": cannot open: " + errorText(errno));
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};

    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        throw DataError(kind, path + ": cannot read: " + errorText(errno));
    }
    if (S_ISDIR(st.st_mode)) {
        throw DataError(kind, path + ": cannot read: it is a directory");
    }
    // The size is only a hint (pipes and /proc files report 0): read until end of file. One
    // byte more than the size lets a regular file finish in a single read.
    std::string bytes;
    bytes.resize(S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1
                                                       : size_t{1} << 16);
    size_t length = 0;
    for (;;) {
        if (length == bytes.size()) {
            bytes.resize(bytes.size() * 2);
        }
        const ssize_t n = ::read(fd, bytes.data() + length, bytes.size() - length);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw DataError(kind, path + ": cannot read: " + errorText(errno));
        }
        if (n == 0) {
            break;
        }
        length += static_cast<size_t>(n);
    }
    bytes.resize(length);
    return bytes;
}

}  // namespace ensemble
