#include "sys/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <mutex>
#include <ostream>
#include <random>
#include <set>
#include <streambuf>
#include <string>
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

// Every temporary file in flight, so that a process ending on a signal can remove them
// (abandonTemporaryFiles). Creating one (open) and committing it (rename) happen under the
// mutex, so the set never misses a file that exists under a temporary name. Never destroyed:
// it must outlive static destruction, when a signal may still arrive.
struct TempRegistry {
    std::mutex mutex;
    std::set<std::string> paths;
};

TempRegistry& temps() {
    static auto* registry = new TempRegistry;
    return *registry;
}

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

bool allDigits(std::string_view s) {
    return !s.empty() && s.size() <= 9 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Removes the temporaries a killed process left for this name: ".<name>.tmp-<pid>-<random>"
// whose pid no longer runs. A live pid (this process, or another writing the same name) keeps
// its file. Best effort: a failure here must not stop the write.
void removeStaleTemporaries(const std::filesystem::path& dir, const std::string& stem) {
    std::error_code ec;
    std::filesystem::directory_iterator it(dir.empty() ? std::filesystem::path(".") : dir, ec);
    if (ec) {
        return;
    }
    for (const auto& entry : it) {
        const std::string name = entry.path().filename().string();
        if (name.compare(0, stem.size(), stem) != 0) {
            continue;
        }
        const auto dash = name.find('-', stem.size());
        if (dash == std::string::npos || !allDigits(name.substr(stem.size(), dash - stem.size()))) {
            continue;
        }
        const auto pid =
            static_cast<pid_t>(std::stol(name.substr(stem.size(), dash - stem.size())));
        if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) {
            ::unlink(entry.path().c_str());
        }
    }
}

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
            const std::lock_guard<std::mutex> lock(temps().mutex);
            ::unlink(path.c_str());
            temps().paths.erase(path);
        }
    }

    // Creates ".<name>.tmp-<pid>-<random>" in `dir` (O_EXCL: never someone else's file). Returns
    // 0 or an errno.
    int create(const std::filesystem::path& dir, const std::string& stem) {
        const std::lock_guard<std::mutex> lock(temps().mutex);
        removeStaleTemporaries(dir, stem);
        const std::string prefix = stem + std::to_string(::getpid()) + "-";
        for (int attempt = 0;; ++attempt) {
            path = (dir / (prefix + randomSuffix())).string();
            // 0666 lets the umask decide, as for any new file.
            fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd >= 0) {
                temps().paths.insert(path);
                return 0;
            }
            const int err = errno;
            if ((err == EEXIST || err == EINTR) && attempt < 100) {
                continue;
            }
            path.clear();  // nothing was created
            return err;
        }
    }

    // Renames the file over `target`. Returns 0 or an errno.
    int commit(const std::string& target) {
        const std::lock_guard<std::mutex> lock(temps().mutex);
        if (::rename(path.c_str(), target.c_str()) != 0) {
            return errno;
        }
        temps().paths.erase(path);
        committed = true;
        return 0;
    }
};

// Makes the rename itself durable. Best effort: the new file is already in place, so a failure
// here must not be reported as if the write had not happened.
void syncDirectory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

// Runs the caller's writer over `fd`; throws RuntimeError naming `what` on a failed write.
// `after` ends the message (what became of the file).
void writeThrough(int fd, const std::function<void(std::ostream&)>& write, const std::string& path,
                  const std::string& what, const std::string& after = {}) {
    FdStreambuf buffer(fd);
    std::ostream out(&buffer);
    write(out);
    out.flush();
    if (buffer.error() != 0) {
        throw RuntimeError(ErrorKind::Io, path + ": cannot write" +
                                              (what.empty() ? "" : " " + what) + ": " +
                                              errorText(buffer.error()) + after);
    }
    if (!out) {
        throw RuntimeError(ErrorKind::Io,
                           path + ": cannot write: the output stream was left failed" + after);
    }
}

// If `p` names a descriptor of a process through /proc (/proc/self/fd/N, /dev/fd/N, which is
// /proc/self/fd, /proc/thread-self/fd/N, /proc/PID/fd/N), sets `pid` and `fd` and returns true.
bool procDescriptor(const std::string& p, pid_t& pid, int& fd) {
    const std::filesystem::path path(p);
    const std::string name = path.filename().string();
    if (!allDigits(name)) {
        return false;
    }
    const std::string parent = path.parent_path().empty() ? "." : path.parent_path().string();
    char resolved[PATH_MAX];
    if (::realpath(parent.c_str(), resolved) == nullptr) {
        return false;
    }
    // /proc/PID/fd or /proc/PID/task/TID/fd.
    const std::string dir(resolved);
    if (dir.compare(0, 6, "/proc/") != 0 || dir.size() < 10 ||
        dir.compare(dir.size() - 3, 3, "/fd") != 0) {
        return false;
    }
    const std::string middle = dir.substr(6, dir.size() - 9);
    const auto slash = middle.find('/');
    const std::string pidText = middle.substr(0, slash);
    if (!allDigits(pidText)) {
        return false;
    }
    if (slash != std::string::npos) {
        const std::string task = middle.substr(slash + 1);
        if (task.compare(0, 5, "task/") != 0 || !allDigits(task.substr(5))) {
            return false;
        }
    }
    pid = static_cast<pid_t>(std::stol(pidText));
    fd = std::stoi(name);
    return true;
}

[[noreturn]] void refuse(const std::string& path, const std::string& file, const char* what) {
    throw RuntimeError(ErrorKind::Io, path + (file == path ? "" : " (-> " + file + ")") +
                                          ": cannot write: it is " + what +
                                          " (an output must be a file, a new name, a character "
                                          "device or a FIFO)");
}

}  // namespace

OutputTarget resolveOutputPath(const std::string& path) {
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.empty() || name == "." || name == "..") {
        throw RuntimeError(ErrorKind::Io, path + ": cannot write: not a file path");
    }
    std::string p = path;
    for (int hops = 0;; ++hops) {
        if (hops > 40) {
            failWrite(path + ": cannot resolve", ELOOP);
        }
        pid_t pid = 0;
        int fd = -1;
        if (procDescriptor(p, pid, fd)) {
            OutputTarget target;
            if (pid == ::getpid()) {
                target.kind = OutputTarget::Kind::Descriptor;
                target.fd = fd;
            } else {
                // Another process's descriptor: opening the /proc entry reaches what it holds.
                target.kind = OutputTarget::Kind::Direct;
                target.file = p;
            }
            return target;
        }
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0) {
            const int err = errno;
            if (err == ENOENT) {
                return OutputTarget{OutputTarget::Kind::Atomic, p, -1};  // a new name
            }
            failWrite(path + (p == path ? "" : " (-> " + p + ")") + ": cannot write", err);
        }
        if (S_ISLNK(st.st_mode)) {
            std::string link(PATH_MAX, '\0');
            const ssize_t n = ::readlink(p.c_str(), link.data(), link.size());
            if (n < 0) {
                failWrite(path + ": cannot read the symbolic link '" + p + "'", errno);
            }
            link.resize(static_cast<size_t>(n));
            const std::filesystem::path parent = std::filesystem::path(p).parent_path();
            p = (link.front() == '/' || parent.empty()) ? link : (parent / link).string();
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            return OutputTarget{OutputTarget::Kind::Atomic, p, -1};
        }
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
            return OutputTarget{OutputTarget::Kind::Direct, p, -1};
        }
        if (S_ISDIR(st.st_mode)) {
            refuse(path, p, "a directory");
        }
        if (S_ISSOCK(st.st_mode)) {
            refuse(path, p, "a socket");
        }
        if (S_ISBLK(st.st_mode)) {
            refuse(path, p, "a block device");
        }
        refuse(path, p, "not a file");
    }
}

int abandonTemporaryFiles() {
    // Locked for good: the process ends on this thread's signal, and no writer may create or
    // commit a temporary file until then.
    temps().mutex.lock();
    int removed = 0;
    for (const std::string& path : temps().paths) {
        removed += ::unlink(path.c_str()) == 0 ? 1 : 0;
    }
    return removed;
}

void writeFileAtomic(const std::string& path, std::string_view bytes) {
    writeFileAtomic(path, [bytes](std::ostream& out) {
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    });
}

void writeFileAtomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
    const OutputTarget target = resolveOutputPath(path);
    if (target.kind == OutputTarget::Kind::Descriptor) {
        // Through the descriptor as it is (its offset, O_APPEND); not ours to close or sync.
        writeThrough(target.fd, write, path, "through descriptor " + std::to_string(target.fd));
        return;
    }
    if (target.kind == OutputTarget::Kind::Direct) {
        // No O_CREAT: the node exists and stays; no O_TRUNC: devices and FIFOs have no length.
        const int fd = ::open(target.file.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            failWrite(path + ": cannot open '" + target.file + "' for writing", errno);
        }
        struct Closer {
            int fd;
            ~Closer() { ::close(fd); }
        } closer{fd};
        writeThrough(fd, write, path, target.file == path ? "" : "'" + target.file + "'");
        return;
    }

    // Same directory as the file written (a symlink's target), so the rename stays within one
    // file system and is atomic.
    const std::filesystem::path file(target.file);
    const std::filesystem::path dir = file.parent_path();
    const std::string dirText = dir.empty() ? std::string(".") : dir.string();
    // Long names are shortened so the temporary name stays within NAME_MAX.
    // (Built by appending: `"." + std::string` trips a GCC 12 -Wrestrict false positive.)
    std::string stem = ".";
    stem.append(file.filename().string(), 0, 200);
    stem += ".tmp-";
    TempFile tmp;
    if (const int err = tmp.create(dir, stem); err != 0) {
        failWrite(path + ": cannot create a temporary file in '" + dirText + "'", err);
    }

    // Replacing a file keeps its permissions (a deliberately private 0600 file stays private).
    struct stat old {};
    if (::stat(target.file.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
        ::fchmod(tmp.fd, old.st_mode & 07777);
    }

    const std::string unchanged =
        "; the temporary file was removed and '" + target.file + "' left as it was";
    writeThrough(tmp.fd, write, path, "'" + tmp.path + "'", unchanged);
    if (::fsync(tmp.fd) != 0) {
        failWrite(path + ": cannot flush '" + tmp.path + "' to disk" + unchanged, errno);
    }
    const int fd = tmp.fd;
    tmp.fd = -1;
    // close() can report a deferred write error (NFS, quota).
    if (::close(fd) != 0) {
        failWrite(path + ": cannot close '" + tmp.path + "'", errno);
    }
    if (const int err = tmp.commit(target.file); err != 0) {
        failWrite(path + ": cannot rename '" + tmp.path + "' over it", err);
    }
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
