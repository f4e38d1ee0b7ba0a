// What the runs store takes from its surroundings: where the file is, the file system's kind
// (the journal), the clock, and the identity of the recording process.

#include <sys/statfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "runs/run_db.h"

namespace ensemble::runs {

namespace {

std::string runsEnvironment(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::string(value) : std::string();
}

// statfs f_type values of file systems on which SQLite's WAL is unsafe: its shared-memory index
// (the -shm file, mmap'ed) is not coherent between hosts, and some lack the locks it needs.
// Values from linux/magic.h and the file systems' own sources.
constexpr std::int64_t kRunsNetworkFsTypes[] = {
    0x6969,      // NFS_SUPER_MAGIC
    0x517B,      // SMB_SUPER_MAGIC
    0xFF534D42,  // CIFS_MAGIC_NUMBER
    0xFE534D42,  // SMB2_MAGIC_NUMBER
    0x564C,      // NCP_SUPER_MAGIC
    0x5346414F,  // AFS_SUPER_MAGIC (OpenAFS)
    0x6B414653,  // AFS_FS_MAGIC (kAFS)
    0x73757245,  // CODA_SUPER_MAGIC
    0x00C36400,  // CEPH_SUPER_MAGIC
    0x0BD00BD0,  // Lustre
    0x47504653,  // GPFS
    0x01021997,  // V9FS_MAGIC (9p: VMs, WSL)
    0x65735546,  // FUSE_SUPER_MAGIC (sshfs and others: what lies behind is unknown)
    0x7461636F,  // OCFS2_SUPER_MAGIC
    0x01161970,  // GFS2_MAGIC
    0x20030528,  // PVFS2 / OrangeFS
    0x19830326,  // BeeGFS
    0xAAD7AAEA,  // PanFS
};

}  // namespace

std::filesystem::path defaultRunStorePath() {
    const std::string own = runsEnvironment(kRunsDbVariable);
    if (own == "off") {
        return {};
    }
    if (!own.empty()) {
        return own;
    }
    std::filesystem::path base;
    const std::string xdg = runsEnvironment("XDG_DATA_HOME");
    // The XDG spec: a relative XDG_DATA_HOME is invalid and ignored.
    if (!xdg.empty() && std::filesystem::path(xdg).is_absolute()) {
        base = xdg;
    } else {
        base = std::filesystem::path(runsEnvironment("HOME")) / ".local" / "share";
    }
    return base / "EnsembleLab" / "runs.sqlite";
}

bool recordingDisabledByEnvironment() {
    return runsEnvironment(kRunsDbVariable) == "off";
}

std::string isoUtc(double unixSeconds) {
    if (unixSeconds <= 0.0) {
        return {};
    }
    const auto seconds = static_cast<std::time_t>(unixSeconds);
    std::tm parts{};
    gmtime_r(&seconds, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

std::optional<double> parseIsoUtc(std::string_view text) {
    if (!text.empty() && text.back() == 'Z') {
        text.remove_suffix(1);
    }
    std::tm parts{};
    const std::string copy(text);
    // Each accepted form, longest first; the whole text must be consumed.
    static constexpr const char* kForms[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S",
                                             "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"};
    for (const char* form : kForms) {
        parts = std::tm{};
        const char* end = strptime(copy.c_str(), form, &parts);
        if (end != nullptr && *end == '\0') {
            return static_cast<double>(timegm(&parts));
        }
    }
    return std::nullopt;
}

JournalMode journalModeForFsType(std::int64_t statfsType) {
    // f_type is a signed word on some ABIs: compare its low 32 bits.
    const auto type = statfsType & 0xFFFFFFFF;
    for (const std::int64_t network : kRunsNetworkFsTypes) {
        if (type == network) {
            return JournalMode::Delete;
        }
    }
    return JournalMode::Wal;
}

JournalMode journalModeForFolder(const std::filesystem::path& folder) {
    struct statfs info {};
    const std::string path = folder.empty() ? std::string(".") : folder.string();
    if (statfs(path.c_str(), &info) != 0) {
        return JournalMode::Wal;
    }
    return journalModeForFsType(static_cast<std::int64_t>(info.f_type));
}

void fillFromConfig(RunEntry& entry) {
    const nlohmann::json& config = entry.config;
    if (!config.is_object()) {
        return;
    }
    const auto text = [&](const char* section, const char* key) -> std::string {
        const auto found = config.find(section);
        if (found == config.end() || !found->is_object()) {
            return {};
        }
        const auto value = found->find(key);
        return value != found->end() && value->is_string() ? value->get<std::string>()
                                                           : std::string();
    };
    const auto number = [&](const char* section, const char* key) -> const nlohmann::json* {
        const auto found = config.find(section);
        if (found == config.end() || !found->is_object()) {
            return nullptr;
        }
        const auto value = found->find(key);
        return value != found->end() && value->is_number_integer() ? &*value : nullptr;
    };
    if (entry.dataset.empty()) {
        entry.dataset = text("dataset", "kind");
    }
    if (entry.method.empty()) {
        entry.method = text("ensemble", "method");
        if (entry.method.empty()) {
            entry.method = "independent";
        }
    }
    if (entry.members == 0) {
        if (const auto* members = number("ensemble", "members")) {
            entry.members = members->get<std::int64_t>();
        }
    }
    if (entry.seed == 0) {
        if (const auto* seed = number("ensemble", "seed")) {
            entry.seed = seed->get<std::uint64_t>();
        }
    }
}

namespace detail {

double unixNow() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::int64_t processStartTime(std::int64_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!stat || !std::getline(stat, line)) {
        return 0;
    }
    // The command name (field 2) may hold blanks and parentheses: count from the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) {
        return 0;
    }
    std::istringstream fields(line.substr(close + 1));
    std::string field;
    // After ')': field 3 (state) onwards; starttime is field 22.
    for (int index = 3; index <= 22; ++index) {
        if (!(fields >> field)) {
            return 0;
        }
    }
    return std::strtoll(field.c_str(), nullptr, 10);
}

const ProcessIdentity& currentProcess() {
    // The pid changes in a forked child: the identity is read again there.
    static thread_local ProcessIdentity identity;
    const auto pid = static_cast<std::int64_t>(getpid());
    if (identity.pid != pid) {
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        identity.host = host;
        identity.pid = pid;
        identity.pidStart = processStartTime(pid);
        std::ifstream boot("/proc/sys/kernel/random/boot_id");
        identity.bootId.clear();
        std::getline(boot, identity.bootId);
    }
    return identity;
}

bool recorderAlive(const std::string& host, std::int64_t pid, std::int64_t pidStart,
                   const std::string& bootId) {
    const ProcessIdentity& self = currentProcess();
    if (host != self.host) {
        return true;
    }
    if (!bootId.empty() && !self.bootId.empty() && bootId != self.bootId) {
        return false;
    }
    if (pid <= 0) {
        return false;
    }
    const std::int64_t start = processStartTime(pid);
    if (start == 0) {
        return false;
    }
    return pidStart == 0 || start == pidStart;
}

}  // namespace detail

}  // namespace ensemble::runs
