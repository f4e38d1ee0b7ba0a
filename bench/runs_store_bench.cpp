// ensemble-runs-bench: the runs store at the scale issue 52 asks for. Fills a temporary store
// with N entries (default 100,000; each the full default config, four figures, a tag now and
// then, a note), then times what the CLI's `runs list` and the app's Runs view ask of it: a page
// sorted by a column, a figure and a config key, filters of each kind, the free-text search,
// count, a page deep in a sorted scroll by offset and by keyset. Prints the median of several
// runs of each, in milliseconds.
//   ensemble-runs-bench [--entries N] [--keep PATH]   (--keep: fill PATH once, reuse it later)

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "runs/run_store.h"
#include "runs_bench_entries.h"

using namespace ensemble::runs;
using ensemble::bench::benchEntries;

namespace {

double millisecondsOf(const std::function<void()>& work, int repeats) {
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        work();
        times.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    int entries = 100000;
    std::filesystem::path keep;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--entries") {
            entries = std::atoi(argv[i + 1]);
        } else if (flag == "--keep") {
            keep = argv[i + 1];
        }
    }
    std::string folder = (std::filesystem::temp_directory_path() / "runs-bench-XXXXXX").string();
    if (mkdtemp(folder.data()) == nullptr) {
        std::perror("mkdtemp");
        return 1;
    }
    const std::filesystem::path path =
        keep.empty() ? std::filesystem::path(folder) / "runs.sqlite" : keep;
    std::mt19937 rng(52);
    // --keep names a store to reuse: filled only when it is not there yet.
    if (!std::filesystem::exists(path)) {
        RunStore store = RunStore::open(path);
        const auto start = std::chrono::steady_clock::now();
        constexpr int kBatch = 5000;
        for (int done = 0; done < entries; done += kBatch) {
            store.insert(benchEntries(std::min(kBatch, entries - done), done, rng));
        }
        std::printf("filled %d entries in %.1f s (%.1f MB)\n", entries,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    static_cast<double>(std::filesystem::file_size(path)) / 1e6);
    }
    RunStore store = RunStore::open(path);
    struct Case {
        const char* what;
        const char* filter;
        const char* sort;
        std::int64_t limit;
    };
    const Case cases[] = {
        {"page of 100, newest first", "", "-started", 100},
        {"page of 100 by figure.test_nll", "", "figure.test_nll", 100},
        {"page of 100 by config.optimizer.lr", "", "-config.optimizer.lr", 100},
        {"page of 100 by wall", "", "-wall", 100},
        {"page of 100 by host (v4's index)", "", "host", 100},
        {"preset=spirals, page", "preset=spirals", "-started", 100},
        {"figure.test_nll<0.3, page", "figure.test_nll<0.3", "-started", 100},
        {"config.ensemble.members>=16, page", "config.ensemble.members>=16", "-started", 100},
        {"tag=sweep, page", "tag=sweep", "-started", 100},
        {"text 'diverged', page", "diverged", "-started", 100},
        {"three filters, by figure", "preset=spirals figure.test_nll<0.3 config.optimizer.lr<=0.01",
         "figure.test_ece", 100},
        {"offset 50,000 by started", "", "started", 100},
        {"all entries (no limit)", "", "-started", -1},
    };
    std::printf("%-40s %10s %10s %8s\n", "query", "list ms", "count ms", "matches");
    for (const Case& c : cases) {
        RunQuery query = parseFilter(c.filter);
        query.sort = parseSort(c.sort);
        query.limit = c.limit;
        if (std::string(c.what).rfind("offset", 0) == 0) {
            query.offset = entries / 2;
        }
        std::size_t listed = 0;
        const double list = millisecondsOf([&] { listed = store.list(query).size(); }, 5);
        std::int64_t matches = 0;
        const double count = millisecondsOf([&] { matches = store.count(query); }, 5);
        std::printf("%-40s %10.1f %10.1f %8lld\n", c.what, list, count,
                    static_cast<long long>(matches));
        (void)listed;
    }
    // A page deep in a sorted scroll: the page after row 90 % of the way down, read by its
    // offset (the way of a jump: SQLite steps over every row before it) and by keyset (the
    // way of scrolling: RunQuery::after the row before it, a seek through the sort's index).
    std::printf("\n%-40s %10s %10s\n", "page of 200 at row 90%", "offset ms", "keyset ms");
    for (const char* sort :
         {"-started", "figure.test_nll", "-figure.test_nll", "config.optimizer.lr",
          "-config.optimizer.lr", "-wall", "preset", "host"}) {
        RunQuery query;
        query.sort = parseSort(sort);
        query.limit = 1;
        query.offset = entries / 10 * 9 - 1;
        const std::vector<RunEntry> before = store.list(query);
        query.limit = 200;
        query.offset += 1;
        const double byOffset = millisecondsOf([&] { (void)store.list(query); }, 5);
        RunQuery seek = query;
        seek.after = before.empty() ? 0 : before.front().id;
        const double byKeyset = millisecondsOf([&] { (void)store.list(seek); }, 5);
        std::printf("%-40s %10.1f %10.1f\n", sort, byOffset, byKeyset);
    }
    if (keep.empty()) {
        std::filesystem::remove_all(folder);
    }
    return 0;
}
