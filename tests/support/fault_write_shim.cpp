// LD_PRELOAD shim for tst_faults: write(2) on regular files behaves like a full or slow disk,
// so the tests can fail or interrupt ensemble-cli's writes without mounting anything.
//   ENSEMBLE_FAULT_ENOSPC_AFTER=N   after N bytes written to regular files, every write to a
//                                   regular file fails with ENOSPC (the one that crosses N is
//                                   short, as on a real full disk)
//   ENSEMBLE_FAULT_WRITE_DELAY_US=U sleep U microseconds before each write to a regular file
// Only regular files are affected: stdout, stderr, pipes and devices are written as usual.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>

namespace {

using WriteFn = ssize_t (*)(int, const void*, size_t);

long long envNumber(const char* name) {
    const char* text = std::getenv(name);
    return text != nullptr && *text != '\0' ? std::atoll(text) : -1;
}

std::atomic<long long> g_written{0};

}  // namespace

extern "C" ssize_t write(int fd, const void* data, size_t size) {
    static const auto real = reinterpret_cast<WriteFn>(dlsym(RTLD_NEXT, "write"));
    static const long long budget = envNumber("ENSEMBLE_FAULT_ENOSPC_AFTER");
    static const long long delayUs = envNumber("ENSEMBLE_FAULT_WRITE_DELAY_US");
    struct stat st {};
    if (fd <= 2 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        return real(fd, data, size);
    }
    if (delayUs > 0) {
        ::usleep(static_cast<useconds_t>(delayUs));
    }
    if (budget < 0) {
        return real(fd, data, size);
    }
    const long long before = g_written.fetch_add(static_cast<long long>(size));
    const long long room = budget - before;
    if (room <= 0) {
        g_written.fetch_sub(static_cast<long long>(size));
        errno = ENOSPC;
        return -1;
    }
    if (static_cast<long long>(size) > room) {
        g_written.fetch_sub(static_cast<long long>(size) - room);
        return real(fd, data, static_cast<size_t>(room));
    }
    return real(fd, data, size);
}
