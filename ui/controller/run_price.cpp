#include "controller/run_price.h"

#include <QLocale>

#include <algorithm>
#include <cmath>

#include "controller/run_description.h"
#include "controller/snapshot.h"
#include "data/dataset_kinds.h"
#include "math/likelihood.h"
#include "metrics/curve_store.h"
#include "train/memory_estimate.h"

namespace ensemble::ui {

namespace {

// Snapshots alive at once: one being built on the engine thread, one in the mailbox, one
// the views hold.
constexpr std::size_t kSnapshotsAlive = 3;
// The MNIST-format sets this app reads (train, test): their files' fixed sizes.
constexpr int64_t kIdxTrainRows = 60'000;
constexpr int64_t kIdxTestRows = 10'000;
constexpr int kIdxSide = 28;
constexpr int kIdxClasses = 10;

std::size_t sz(int64_t v) {
    return static_cast<std::size_t>(std::max<int64_t>(v, 0));
}

}  // namespace

DataShape dataShapeOf(const DataSplit& data) {
    return {data.train.rows, data.test.rows, data.inputShape(), data.classes, data.planar()};
}

std::optional<DataShape> expectedDataShape(const ExperimentConfig& config) {
    const DatasetConfig& d = config.dataset;
    const DatasetKindInfo& kind = datasetKindInfo(d.kind);
    DataShape shape;
    switch (kind.source) {
        case DataSource::CsvFile:
        case DataSource::Bundled:
            return std::nullopt;
        case DataSource::IdxImages:
            shape.trainRows = kIdxTrainRows;
            shape.testRows = kIdxTestRows;
            shape.input = Shape{1, kIdxSide, kIdxSide};
            shape.classes = kIdxClasses;
            break;
        case DataSource::Generator: {
            // As splitTrainTest holds out round(n * test_fraction) rows, at least one each.
            const int64_t test =
                d.testFraction > 0.0
                    ? std::clamp<int64_t>(std::llround(static_cast<double>(d.n) * d.testFraction),
                                          1, std::max<int64_t>(d.n - 1, 1))
                    : 0;
            shape.trainRows = d.n - test;
            shape.testRows = test;
            const int features = d.kind == DatasetKind::Linear ? d.features : kind.planar ? 2 : 1;
            shape.input = Shape{features, 1, 1};
            shape.classes = kind.task == DataTask::Regression ? 0
                            : d.kind == DatasetKind::Blobs    ? d.classes
                                                              : 2;
            shape.planar = kind.planar;
            break;
        }
    }
    if (d.limit > 0) {
        shape.trainRows = std::min(shape.trainRows, d.limit);
    }
    return shape;
}

std::size_t windowBytes(int members, const DataShape& shape, Likelihood likelihood,
                        const WorkerTuning& tuning) {
    const std::size_t k = sz(members);
    const std::size_t outputs = sz(headOutputs(likelihood, shape.classes));
    const std::size_t f = sizeof(float);
    // The test rows every snapshot predicts (all of them for points in the plane).
    const int64_t evalRows =
        shape.planar ? shape.testRows : std::min(shape.testRows, tuning.maxEvalRows);
    std::size_t bytes = k * sz(evalRows) * outputs * f * kSnapshotsAlive;
    bytes += k * sz(std::min(shape.trainRows, tuning.maxTrainEvalRows)) * outputs * f;
    if (shape.planar) {
        const std::size_t side = sz(gridSizeFor(members, tuning));
        bytes += k * side * side * outputs * f * kSnapshotsAlive;  // each member's grid
        bytes += k * sz(shape.trainRows) * sizeof(int32_t);        // bootstrap counts
    }
    // Learning curves at their bounds: the history's per-member points, and each member's
    // four CurveStores (train/test x loss/second figure), full.
    bytes += k * 2 * sizeof(SplitMetrics) * sz(tuning.maxHistoryPoints);
    bytes += (k + 1) * 4 * (4 * sz(CurveStore::kDefaultCapacity) + sz(CurveStore::kDefaultLatest)) *
             sizeof(CurvePoint);
    return bytes;
}

RunPrice priceRun(const ExperimentConfig& config, const DataShape& shape,
                  const WorkerTuning& tuning, std::optional<std::size_t> availableBytes) {
    RunPrice price;
    price.trainerBytes =
        estimateRunBytes(config, shape.trainRows, shape.testRows, shape.input, shape.classes);
    price.windowBytes =
        windowBytes(config.ensemble.members, shape, config.model.likelihood, tuning);
    price.availableBytes = availableBytes ? *availableBytes : availableMemoryBytes();
    return price;
}

QString RunPrice::describe() const {
    QString text =
        QObject::tr("about %1 (the trainer %2, the live views %3)")
            .arg(bytesText(totalBytes()), bytesText(trainerBytes), bytesText(windowBytes));
    if (availableBytes > 0) {
        text += QObject::tr(" of the %1 available").arg(bytesText(availableBytes));
    }
    return text;
}

QString bytesText(std::size_t bytes) {
    const double mb = static_cast<double>(bytes) / 1e6;
    if (mb >= 1000.0) {
        return QObject::tr("%1 GB").arg(QLocale::c().toString(mb / 1000.0, 'f', 1));
    }
    return QObject::tr("%1 MB").arg(QLocale::c().toString(std::max(mb, 1.0), 'f', 0));
}

}  // namespace ensemble::ui
