// ensemble-runs-view-bench: the app's Runs view over a store of N entries (default 100,000, the
// scale issue 52 asks for): open, count and first page; a sort by a figure; a filter; a
// screenful at a time through the first 10,000 rows, each frame painted; a jump 90 % of the way
// down the sort by a figure and a screenful at a time through the 2,000 rows after it; a refresh
// (F5) and the poll that finds nothing new. tst_gui_runs checks what the view shows; this measures
// how long it takes, which a test cannot bound without failing on a busy machine.
//
// Usage: ensemble-runs-view-bench [--entries N] [--keep PATH]   (--keep: fill PATH once, reuse)
// Prints one line per measurement:
//   RESULT what=<...> ms=<...> [rows=<...>] [worst_frame_ms=<...>]
// Offscreen unless QT_QPA_PLATFORM says otherwise.
#include <unistd.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QScrollBar>
#include <QTableView>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "runs/run_store.h"
#include "runs_bench_entries.h"
#include "views/runs_model.h"
#include "views/runs_view.h"

namespace {

using ensemble::runs::RunStore;
using ensemble::ui::RunsModel;
using ensemble::ui::RunsView;

int columnOf(const RunsModel& model, const std::string& field) {
    const auto& c = model.columns();
    const auto it = std::find(c.begin(), c.end(), field);
    return it == c.end() ? -1 : static_cast<int>(it - c.begin());
}

void result(const char* what, qint64 ms, const std::string& more = {}) {
    std::printf("RESULT what=%s ms=%lld%s\n", what, static_cast<long long>(ms), more.c_str());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    int entries = 100000;
    std::filesystem::path keep;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--entries") {
            entries = std::max(1, std::atoi(argv[i + 1]));
        } else if (flag == "--keep") {
            keep = argv[i + 1];
        } else {
            std::fprintf(stderr, "usage: ensemble-runs-view-bench [--entries N] [--keep PATH]\n");
            return 2;
        }
    }
    // The view opens the person's store when first shown, before the bench opens its own: with
    // recording off it opens none (it created an empty one in ~/.local/share).
    qputenv(ensemble::runs::kRunsDbVariable, "off");
    QApplication app(argc, argv);
    std::string folder =
        (std::filesystem::temp_directory_path() / "runs-view-bench-XXXXXX").string();
    if (mkdtemp(folder.data()) == nullptr) {
        std::perror("mkdtemp");
        return 1;
    }
    const std::filesystem::path path =
        keep.empty() ? std::filesystem::path(folder) / "runs.sqlite" : keep;
    QElapsedTimer clock;
    if (!std::filesystem::exists(path)) {
        clock.start();
        std::mt19937 rng(52);
        RunStore store = RunStore::open(path);
        constexpr int kBatch = 5000;
        for (int done = 0; done < entries; done += kBatch) {
            store.insert(
                ensemble::bench::benchEntries(std::min(kBatch, entries - done), done, rng));
        }
        result("fill", clock.elapsed(), " rows=" + std::to_string(entries));
    }
    {
        RunsView view;
        view.resize(900, 600);
        view.show();
        clock.start();
        if (!view.openStore(QString::fromStdString(path.string()))) {
            std::fprintf(stderr, "ensemble-runs-view-bench: %s\n", qPrintable(view.storeMessage()));
            return 1;
        }
        (void)view.model()->index(0, 0).data();
        result("open_count_first_page", clock.restart(),
               " rows=" + std::to_string(view.model()->total()));
        view.setColumns({QStringLiteral("id"), QStringLiteral("started"), QStringLiteral("preset"),
                         QStringLiteral("members"), QStringLiteral("figure.test_accuracy"),
                         QStringLiteral("figure.test_nll"), QStringLiteral("tag")});
        clock.restart();
        view.table()->horizontalHeader()->setSortIndicator(
            columnOf(*view.model(), "figure.test_nll"), Qt::AscendingOrder);
        (void)view.model()->index(0, 0).data();
        result("sort_figure_test_nll", clock.restart());
        (void)view.applyFilter(QStringLiteral("preset=moons figure.test_nll<0.5"));
        (void)view.model()->index(0, 0).data();
        result("filter_preset_and_figure", clock.restart(),
               " rows=" + std::to_string(view.model()->total()));
        (void)view.applyFilter(QString());
        (void)view.grab();
        // A screenful a frame through 10,000 rows (fewer when the store has fewer).
        QScrollBar* bar = view.table()->verticalScrollBar();
        const int step = std::max(1, bar->pageStep());
        const int target = std::min(entries, 10000);
        int frames = 0;
        qint64 worst = 0;
        QElapsedTimer frame;
        clock.restart();
        // (The table fetches more rows itself at the bottom: the scroll stops by its row.)
        while (bar->value() + step < target) {
            frame.start();
            if (bar->value() >= bar->maximum()) {
                if (!view.model()->canFetchMore({})) {
                    break;
                }
                view.model()->fetchMore({});
            }
            bar->setValue(bar->value() + step);
            view.table()->viewport()->repaint();
            QCoreApplication::processEvents();
            worst = std::max(worst, frame.elapsed());
            ++frames;
        }
        result("scroll", clock.elapsed(),
               " rows=" + std::to_string(view.model()->rowCount()) + " frames=" +
                   std::to_string(frames) + " worst_frame_ms=" + std::to_string(worst));
        // Deep in the order by figure.test_nll: the rows made known to the whole store (the
        // table's fetchMore, which reads nothing), the scroll bar dragged to 90 % of the way
        // down (a jump: the page there is read by offset), then a screenful a frame through the
        // next 2,000 rows (each new page is next to one held: read by keyset).
        while (view.model()->canFetchMore({})) {
            view.model()->fetchMore({});
        }
        QCoreApplication::processEvents();  // the table lays the rows out: the bar's new range
        const int deepRow = view.model()->rowCount() * 9 / 10;
        clock.restart();
        bar->setValue(deepRow);
        view.table()->viewport()->repaint();
        QCoreApplication::processEvents();
        result("jump_deep", clock.restart(), " row=" + std::to_string(bar->value()));
        const int deepEnd = std::min(bar->maximum(), bar->value() + 2000);
        frames = 0;
        worst = 0;
        while (bar->value() < deepEnd) {
            frame.start();
            bar->setValue(bar->value() + step);
            view.table()->viewport()->repaint();
            QCoreApplication::processEvents();
            worst = std::max(worst, frame.elapsed());
            ++frames;
        }
        result("scroll_deep", clock.elapsed(),
               " rows_to=" + std::to_string(bar->value()) + " frames=" + std::to_string(frames) +
                   " worst_frame_ms=" + std::to_string(worst));
        clock.restart();
        view.refresh();
        result("refresh", clock.restart());
        (void)view.model()->refreshIfChanged();
        result("poll_unchanged", clock.restart());
    }
    if (keep.empty()) {
        std::filesystem::remove_all(folder);
    }
    return 0;
}
