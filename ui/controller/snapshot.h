#pragma once

// What the engine thread hands to the GUI: immutable values, shared by pointer. A Snapshot is
// built on the worker thread (including its colour-mapped QImages) and never modified after it
// is published, so any number of views may read it at once without locks.

#include <QImage>
#include <QPolygonF>
#include <QString>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/dataset.h"
#include "metrics/calibration.h"
#include "metrics/grid.h"
#include "metrics/metrics.h"
#include "metrics/point_statistics.h"
#include "metrics/regression.h"
#include "metrics/size_curve.h"
#include "model/feature_maps.h"
#include "train/trainer.h"

namespace ensemble::ui {

class LearningCurves;

// The heatmap quantities of the Boundary view (per grid point; see metrics/metrics.h).
enum class HeatQuantity { Probability, Total, Aleatoric, Epistemic, MemberStd, Disagreement };
constexpr int kHeatQuantityCount = 6;

QString quantityLabel(HeatQuantity quantity);  // "Total uncertainty H[p]"
// Regression grids reuse the first four slots: mean, total, aleatoric and epistemic std.
QString regressionQuantityLabel(HeatQuantity quantity);  // "Total std σ"
bool regressionHasQuantity(HeatQuantity quantity);
QString quantityKey(HeatQuantity quantity);   // "total"
QString quantityUnit(HeatQuantity quantity);  // "nats", "" ...

// One run: what stays fixed from configure() to the next configure(). Shared by every
// snapshot of the run.
struct RunInfo {
    uint64_t runId = 0;
    ExperimentConfig config;
    std::string datasetName;
    std::string backendName;
    std::string notice;  // the backend's fallback message, if any
    int members = 0;
    int classes = 0;
    int features = 0;
    bool isImage = false;
    int imageWidth = 0;
    int imageHeight = 0;
    int64_t totalSteps = 0;  // the configured length (training.steps or epochs)
    int64_t trainRows = 0;
    int64_t testRows = 0;
    // 2-D data: every train and test row (raw units) for the scatter. Image data: only the
    // evaluated test rows (the first `evalTest.rows`), for the image grid.
    Dataset train;
    Dataset evalTest;  // the test rows every snapshot evaluates (all of them for 2-D data)
    // Each member's multiplicity of every train row, K x N (2-D data only; all 1 for none).
    std::vector<int32_t> counts;
    // The heatmap grid (2-D data only).
    bool hasGrid = false;
    GridBounds bounds;
    int gridSize = 0;
    // Regression (model.likelihood gaussian or mse): train.target / evalTest.target hold the
    // targets (raw units), `classes` is 0.
    bool regression = false;
    Likelihood likelihood = Likelihood::Categorical;
    double targetMean = 0.0;
    double targetStd = 1.0;
    // 1-D regression: the Regression view's curve, the predictive at `curveX` (raw units, the
    // train range [trainMin, trainMax] widened by half its span on each side, so the band
    // can be seen to widen away from the data). `train` holds every train row.
    bool hasCurve = false;
    std::vector<float> curveX;
    double trainMin = 0.0;
    double trainMax = 0.0;
    // Opened without its data (EngineWorker::open when the dataset cannot be loaded here):
    // what the loader said is missing; empty for every run that has its data. Such a run has
    // no trainer: its snapshot holds the file's members, stored curves and filters only.
    std::string missingData;
    // An opened file trained on an MPI mesh (its metadata's mesh, member_ranks and
    // member_devices): "2 × 1 ranks" and per member "rank 1 · cuda:0"; empty otherwise.
    std::string mesh;
    std::vector<std::string> memberOrigins;
    // Per-member hyperparameters, in member order.
    std::vector<double> lr;
    std::vector<double> momentum;
    std::vector<double> weightDecay;
};

// One point of the learning curves: the ensemble (included members) and every member on the
// evaluated train and test rows.
struct HistoryPoint {
    int64_t step = 0;
    double epoch = 0.0;
    SplitMetrics ensembleTrain;
    SplitMetrics ensembleTest;
    std::vector<SplitMetrics> memberTrain;
    std::vector<SplitMetrics> memberTest;
};

// A heatmap of one quantity over the grid, colour-mapped, with the range the colour bar shows.
struct HeatImage {
    QImage image;  // G x G, row 0 at the top (largest y)
    double low = 0.0;
    double high = 1.0;
    double dataMin = 0.0;  // the quantity's actual range over the grid
    double dataMax = 0.0;
};

struct Snapshot {
    std::shared_ptr<const RunInfo> run;
    uint64_t serial = 0;  // increases with every snapshot of any run

    int64_t step = 0;
    double epoch = 0.0;
    bool running = false;
    bool finished = false;
    int64_t totalSteps = 0;    // where the run stops now (Stop after, raised by Continue)
    bool untilPaused = false;  // no end: trains until paused
    nlohmann::json schedule;   // training.schedule so far: the run's live edits, by step
    double stepsPerSecond = 0.0;
    double memberStepsPerSecond = 0.0;
    double meanLoss = 0.0;            // mean last batch loss of the active members
    std::vector<float> lastLosses;    // per member
    std::vector<uint8_t> diverged;    // per member
    std::vector<uint8_t> switchedOn;  // per member, the user's on/off switches
    std::vector<uint8_t> included;    // switched on and not diverged: the ensemble
    int includedCount = 0;

    // Learning curves up to this step (shared, immutable points): at most
    // WorkerTuning::maxHistoryPoints of them (thinned in halves as the run grows), for the
    // checkpoint and the latest figures.
    std::vector<std::shared_ptr<const HistoryPoint>> history;
    // Every curve point in bounded memory (min/max decimation keeping extremes and the latest
    // points): what the Curves view draws. Shared by the snapshots of the same curve points.
    std::shared_ptr<const LearningCurves> curves;

    // The evaluated test rows at this step (run->evalTest), for the included members: `test`
    // and `memberPredicted` per row. The figures (memberMetrics, meanMember, ensembleMetrics,
    // reliability, confusion, sizeCurve) are measured on `testRowsMeasured` rows: the live
    // subset (run->evalTest) while training, the whole test split once the run stops, so a
    // stopped run shows the figures `ensemble-cli eval` and the export's report give.
    int64_t testRowsMeasured = 0;
    // Stopped, with the figures still on the live subset: the whole test split is being
    // measured at this step, and a snapshot with its figures follows.
    bool evaluating = false;
    // Whether the figures come from the live subset only (fewer rows than the test split).
    bool figuresOnSubset() const { return run && testRowsMeasured < run->testRows; }
    bool hasEnsemble = false;  // false when no member is included
    PointStatistics test;
    std::vector<ClassificationMetrics> memberMetrics;  // per member
    ClassificationMetrics meanMember;                  // mean over included members
    ClassificationMetrics ensembleMetrics;
    Calibration reliability;                // ensemble, top label
    std::vector<SizeCurvePoint> sizeCurve;  // measured at sizeCurveStep (it costs the most)
    int64_t sizeCurveStep = -1;
    std::vector<int32_t> memberPredicted;  // K x rows, each member's argmax
    std::vector<int64_t> confusion;        // C x C, [true * C + predicted]

    // Regression (run->regression): the test measurements of the included members (members'
    // figures for every member), when hasEnsemble; and every member's Gaussian and the
    // mixture of the included ones along run->curveX (1-D) or over the grid (2-D, then also
    // in heat[0..3]: mean, total, aleatoric and epistemic std).
    RegressionReport regression;
    MemberGaussians curveMembers;
    RegressionPoints curve;  // rows 0 when no member is included
    RegressionPoints gridRegression;

    // The grid (2-D data only).
    bool hasGrid = false;
    GridEvaluation grid;
    std::array<HeatImage, kHeatQuantityCount> heat;
    std::vector<QImage> memberImages;  // per member, G x G
    // Decision boundaries as polylines in grid units (0..G, row 0 at the top).
    std::vector<QPolygonF> ensembleContour;
    std::vector<std::vector<QPolygonF>> memberContours;  // per member

    // CNN members: every member's first conv layer at this step (the Filters view); null for
    // an MLP. Shared between snapshots of the same step.
    std::shared_ptr<const FirstConv> firstConv;
};

using SnapshotPtr = std::shared_ptr<const Snapshot>;

// "live: 2,000 test images" when `rows` is fewer than the run's test rows, else empty: the
// label of every figure measured on the live subset.
QString liveSubsetNote(const RunInfo& run, int64_t rows);

}  // namespace ensemble::ui
