#include "controller/run_files.h"

#include <QFile>

#include <cmath>
#include <exception>

#include "io/checkpoint.h"
#include "io/model_io.h"
#include "metrics/report.h"
#include "sys/atomic_file.h"
#include "train/trainer_report.h"

namespace ensemble::ui {

QStringList exportRun(Trainer& trainer, const QString& basePath, ExportFormat format) {
    const std::string base = QFile::encodeName(basePath).toStdString();
    // exportEnsemble picks the format from the extension (io/export_formats.h).
    const std::string weights = base + "." + exportFormatName(format);
    const std::string json = base + ".metrics.json";
    const std::string csv = base + ".metrics.csv";
    QStringList written;
    try {
        // The engine's report (the same as `ensemble-cli train --metrics`) of the ensemble as
        // the app shows it: the switched-on members only (the trainer holds the switches).
        const TrainerReport metrics = trainerReport(trainer);
        // The config with the steps trained, so the CLI replay of it gives these weights.
        exportEnsemble(weights, trainer, metrics.json,
                       {{"config", configAsTrained(trainer).dump()}});
        written << QString::fromStdString(weights);
        writeFileAtomic(json, metrics.json.dump(2) + "\n");
        written << QString::fromStdString(json);
        writeFileAtomic(csv, metrics.regression ? regressionMembersCsv(*metrics.regression)
                                                : membersCsv(metrics.report));
        written << QString::fromStdString(csv);
    } catch (const std::exception&) {
        // Each file is written atomically; remove the complete ones of this export too, so a
        // failed export leaves nothing of itself behind.
        for (const QString& f : written) {
            QFile::remove(f);
        }
        throw;
    }
    return written;
}

void writeRunCheckpoint(const QString& path, Trainer& trainer,
                        const std::vector<std::shared_ptr<const HistoryPoint>>& history,
                        int64_t storedSteps, const nlohmann::json& active, bool withReport,
                        bool untilPaused) {
    // The Curves view's points as the checkpoint's curves (measured on the rows the window
    // evaluates live).
    std::vector<Evaluation> curves;
    curves.reserve(history.size());
    for (const auto& point : history) {
        Evaluation e;
        e.step = point->step;
        e.epoch = point->epoch;
        e.ensembleTrain = point->ensembleTrain;
        e.ensembleTest = point->ensembleTest;
        for (std::size_t k = 0; k < point->memberTrain.size(); ++k) {
            MemberEvaluation m;
            m.train = point->memberTrain[k];
            m.test = k < point->memberTest.size() ? point->memberTest[k] : SplitMetrics{};
            m.diverged = !std::isfinite(m.train.loss);
            e.members.push_back(m);
        }
        curves.push_back(std::move(e));
    }
    writeCheckpoint(QFile::encodeName(path).toStdString(), trainer, curves,
                    withReport ? trainerReport(trainer).json : nlohmann::json(nullptr), storedSteps,
                    active, untilPaused);
}

}  // namespace ensemble::ui
