// Convolutional members in the app: the Model section's kind switch and
// layer list editor (the schema's conditional keys, the parser's errors at the row and field
// they name), and a short CNN run on tiny MNIST-format files in a temporary folder: the Images
// view, draw-a-digit, the confusion matrix, calibration and the Filters view's kernels and
// feature maps; and both views' SVG export (File > Export picture), their images as drawn.
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "controller/engine_controller.h"
#include "file_actions.h"
#include "main_window.h"
#include "model/architecture.h"
#include "panels/experiment_panel.h"
#include "panels/layer_list_editor.h"
#include "support/gui_test_support.h"
#include "support/picture_checks.h"
#include "support/test_support.h"
#include "view_table.h"
#include "views/calibration_view.h"
#include "views/filters_view.h"
#include "views/images_view.h"

using ensemble::test::makeWindow;
using ensemble::test::waitFresh;
using ensemble::test::waitSnapshot;
using ensemble::ui::ExperimentPanel;
using ensemble::ui::LayerListEditor;
using nlohmann::json;

namespace {

json tinyCnnConfig(const QString& folder) {
    json c = ensemble::loadConfigJson("mnist-cnn");
    c["dataset"]["path"] = folder.toStdString();
    c["model"]["layers"] = json::array({{{"type", "conv"}, {"filters", 4}, {"kernel", 3}},
                                        {{"type", "pool"}, {"kind", "max"}, {"size", 2}},
                                        {{"type", "dense"}, {"units", 16}}});
    c["ensemble"]["members"] = 2;
    c["optimizer"]["lr"] = 0.05;
    c["training"]["batch_size"] = 20;
    c["training"]["epochs"] = 0;
    c["training"]["steps"] = 30;
    c["backend"]["kind"] = "cpu";
    c["backend"]["threads"] = 1;
    return c;
}

// Whether a tile of `image` (from renderTiles) at tile (r, c) of th x tw holds more than one
// colour.
bool tileVaries(const QImage& image, int r, int c, int th, int tw) {
    std::set<QRgb> colours;
    for (int y = 0; y < th; ++y) {
        for (int x = 0; x < tw; ++x) {
            colours.insert(image.pixel(c * (tw + ensemble::ui::kTileGap) + x,
                                       r * (th + ensemble::ui::kTileGap) + y));
        }
    }
    return colours.size() > 1;
}

// The rasters of `images` exactly `size` pixels large.
std::vector<QImage> imagesOfSize(const std::vector<ensemble::test::SvgImage>& images, QSize size) {
    std::vector<QImage> out;
    for (const ensemble::test::SvgImage& i : images) {
        if (i.image.size() == size) {
            out.push_back(i.image.convertToFormat(QImage::Format_RGB32));
        }
    }
    return out;
}

// The current view of `w` written as SVG through File > Export picture, and read back.
ensemble::test::SvgContent exportSvg(ensemble::ui::MainWindow& w, const QString& path) {
    for (int k = 0; k < 3; ++k) {
        QCoreApplication::processEvents();
    }
    QString error;
    if (!w.files()->exportPicture(path, &error)) {
        ensemble::test::SvgContent failed;
        failed.error = error;
        return failed;
    }
    return ensemble::test::readSvg(path);
}

bool sawOnlyGapColour(const QImage& image, int x) {
    for (int y = 0; y < image.height(); ++y) {
        if (image.pixel(x, y) != ensemble::ui::kTileBackground) {
            return false;
        }
    }
    return true;
}

}  // namespace

class TestGuiCnn : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase() { ensemble::test::isolateSettings(); }

    void kindFollowsTheDataset() {
        ExperimentPanel panel;
        panel.setConfig(ensemble::loadConfigJson("spirals"));
        auto* kind = qobject_cast<QComboBox*>(panel.editor(QStringLiteral("model.kind")));
        QVERIFY(kind != nullptr);
        const int cnn = kind->findData(QStringLiteral("cnn"));
        auto* items = qobject_cast<QStandardItemModel*>(kind->model());
        QVERIFY(!items->item(cnn)->isEnabled());
        QVERIFY(kind->itemData(cnn, Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("image dataset")));
        QVERIFY(!panel.layerEditor()->isVisibleTo(&panel));
        QVERIFY(panel.editor(QStringLiteral("model.hidden"))->isVisibleTo(&panel));
        // The preset box offers the CNN preset; on MNIST the kind is free.
        QVERIFY(panel.presetCombo()->findData(QStringLiteral("mnist-cnn")) >= 0);
        auto* dataset = qobject_cast<QComboBox*>(panel.editor(QStringLiteral("dataset.kind")));
        dataset->setCurrentIndex(dataset->findData(QStringLiteral("mnist")));
        QVERIFY(items->item(cnn)->isEnabled());
        kind->setCurrentIndex(cnn);
        QVERIFY(panel.layerEditor()->isVisibleTo(&panel));
        QVERIFY(!panel.editor(QStringLiteral("model.hidden"))->isVisibleTo(&panel));
        // The recipe by default; the stored config holds layers, not hidden (the schema's rule).
        QCOMPARE(panel.layerEditor()->rowCount(), 5);
        json c = panel.config();
        QCOMPARE(c["model"]["layers"], ensemble::layersToJson(ensemble::recipeLayers()));
        QVERIFY(!c["model"].contains("hidden"));
        QVERIFY2(panel.isValid(), qPrintable(panel.errors().values().join(QStringLiteral("; "))));
        QCOMPARE(ensemble::parseConfig(c).model.layers, ensemble::recipeLayers());
        // Back to MLP: hidden again, no layers.
        kind->setCurrentIndex(kind->findData(QStringLiteral("mlp")));
        c = panel.config();
        QVERIFY(c["model"].contains("hidden"));
        QVERIFY(!c["model"].contains("layers"));
        QVERIFY(panel.isValid());
        // A cnn on a table is the parser's error, at the kind.
        json bad = tinyCnnConfig(QStringLiteral("/nonexistent"));
        bad["dataset"] = {{"kind", "moons"}};
        panel.setConfig(bad);
        QVERIFY(!panel.isValid());
        QVERIFY(
            panel.errors().value(QStringLiteral("model.kind")).contains(QStringLiteral("image")));
    }

    void layerListEdits() {
        ExperimentPanel panel;
        json c = ensemble::loadConfigJson("mnist-cnn");
        panel.setConfig(c, QStringLiteral("mnist-cnn"));
        LayerListEditor* layers = panel.layerEditor();
        QCOMPARE(layers->rowCount(), 5);
        QSignalSpy edited(&panel, &ExperimentPanel::edited);
        // A field edit goes into model.layers.
        qobject_cast<QSpinBox*>(layers->fieldEditor(0, QStringLiteral("filters")))->setValue(8);
        QCOMPARE(edited.count(), 1);
        QCOMPARE(panel.config()["model"]["layers"][0]["filters"].get<int>(), 8);
        QCOMPARE(panel.presetCombo()->currentData().toString(), QString());  // now Custom
        // Pools go after the last conv or pool: 28 -> 14 -> 7 -> 3 -> 1 -> 0 at the third.
        layers->addLayer(ensemble::LayerKind::Pool);
        layers->addLayer(ensemble::LayerKind::Pool);
        QVERIFY(panel.isValid());
        layers->addLayer(ensemble::LayerKind::Pool);
        QCOMPARE(layers->rowCount(), 8);
        QCOMPARE(layers->rowType(6), QStringLiteral("pool"));
        QCOMPARE(layers->rowType(7), QStringLiteral("dense"));
        QVERIFY(!panel.isValid());
        const QString error = panel.errors().value(QStringLiteral("model.layers"));
        QVERIFY2(error.startsWith(QStringLiteral("model.layers[6]")), qPrintable(error));
        // Shown at that row (and its field), not under the whole list.
        QVERIFY(layers->rowError(6)->isVisibleTo(&panel));
        QVERIFY(!layers->rowError(5)->isVisibleTo(&panel));
        QVERIFY(!panel.errorLabel(QStringLiteral("model.layers"))->isVisibleTo(&panel));
        QVERIFY(layers->fieldEditor(6, QStringLiteral("size"))->property("invalid").toBool());
        layers->removeLayer(6);
        QVERIFY(panel.isValid());
        QVERIFY(!layers->rowError(6)->isVisibleTo(&panel));
        // Reorder: a dense layer moved before a pool is the parser's error at that pool.
        layers->moveLayer(6, -1);
        QCOMPARE(layers->rowType(5), QStringLiteral("dense"));
        QCOMPARE(panel.config()["model"]["layers"][5]["type"], json("dense"));
        QVERIFY(!panel.isValid());
        layers->moveLayer(5, 1);
        QVERIFY(panel.isValid());
        // Switching a row's type shows that type's fields.
        auto* type = qobject_cast<QComboBox*>(layers->fieldEditor(1, QStringLiteral("type")));
        type->setCurrentIndex(type->findData(QStringLiteral("conv")));
        QCOMPARE(panel.config()["model"]["layers"][1]["type"], json("conv"));
        QVERIFY(panel.config()["model"]["layers"][1].contains("kernel"));
        layers->resetToRecipe();
        QCOMPARE(panel.config()["model"]["layers"],
                 ensemble::layersToJson(ensemble::recipeLayers()));

        // A hand-edited list the rows cannot show (a kernel of 0) stays as written, so the
        // parser's reason appears at its row and field.
        c["model"]["layers"] = json::array({{{"type", "conv"}, {"filters", 8}, {"kernel", 3}},
                                            {{"type", "conv"},
                                             {"filters", 8},
                                             {"kernel", 0},
                                             {"stride", 1},
                                             {"padding", "same"}}});
        panel.setConfig(c);
        QVERIFY(!panel.isValid());
        QVERIFY(panel.errors()
                    .value(QStringLiteral("model.layers"))
                    .startsWith(QStringLiteral("model.layers[1].kernel")));
        QVERIFY(layers->rowError(1)->isVisibleTo(&panel));
        QVERIFY(layers->rowError(1)->text().startsWith(QStringLiteral("kernel")));
        QVERIFY(layers->fieldEditor(1, QStringLiteral("kernel"))->property("invalid").toBool());
        // Any edit makes the rows the list (the spin box cannot hold 0).
        qobject_cast<QSpinBox*>(layers->fieldEditor(1, QStringLiteral("kernel")))->setValue(5);
        QVERIFY(panel.isValid());
        QCOMPARE(panel.config()["model"]["layers"][1]["kernel"].get<int>(), 5);
    }

    void layerListDropoutRows() {
        ExperimentPanel panel;
        panel.setConfig(ensemble::loadConfigJson("mnist-cnn"), QStringLiteral("mnist-cnn"));
        LayerListEditor* layers = panel.layerEditor();
        // "+ dropout" adds a row at the end, after the dense layer, at rate 0.5.
        layers->addLayer(ensemble::LayerKind::Dropout);
        QCOMPARE(layers->rowCount(), 6);
        QCOMPARE(layers->rowType(5), QStringLiteral("dropout"));
        QCOMPARE(panel.config()["model"]["layers"][5], json({{"type", "dropout"}, {"rate", 0.5}}));
        QVERIFY(panel.isValid());
        // Its rate edits model.layers.
        auto* rate = qobject_cast<QDoubleSpinBox*>(layers->fieldEditor(5, QStringLiteral("rate")));
        QVERIFY(rate != nullptr);
        rate->setValue(0.25);
        QCOMPARE(panel.config()["model"]["layers"][5]["rate"].get<double>(), 0.25);
        // A pool still goes after the last conv or pool, not after the dropout row.
        layers->addLayer(ensemble::LayerKind::Pool);
        QCOMPARE(layers->rowType(4), QStringLiteral("pool"));
        QCOMPARE(layers->rowType(6), QStringLiteral("dropout"));
        layers->removeLayer(4);
        // A pool row switched to dropout: a dropout after the conv, valid.
        auto* type = qobject_cast<QComboBox*>(layers->fieldEditor(1, QStringLiteral("type")));
        type->setCurrentIndex(type->findData(QStringLiteral("dropout")));
        QCOMPARE(panel.config()["model"]["layers"][1], json({{"type", "dropout"}, {"rate", 0.5}}));
        QVERIFY(panel.isValid());
        // Moved first, it is the parser's error at that row.
        layers->moveLayer(1, -1);
        QVERIFY(!panel.isValid());
        QVERIFY(panel.errors()
                    .value(QStringLiteral("model.layers"))
                    .startsWith(QStringLiteral("model.layers[0].type")));
        QVERIFY(layers->rowError(0)->isVisibleTo(&panel));
        // A hand-edited rate of 1 stays as written, and the parser names the rate.
        json c = panel.config();
        c["model"]["layers"] = json::array({{{"type", "conv"}, {"filters", 8}, {"kernel", 3}},
                                            {{"type", "dropout"}, {"rate", 1}}});
        panel.setConfig(c);
        QVERIFY(!panel.isValid());
        QVERIFY(panel.errors()
                    .value(QStringLiteral("model.layers"))
                    .startsWith(QStringLiteral("model.layers[1].rate")));
        QVERIFY(layers->fieldEditor(1, QStringLiteral("rate"))->property("invalid").toBool());
    }

    void cnnRunInTheViews() {
        QTemporaryDir dir;
        QVERIFY(ensemble::test::writeIdx(dir.path(), "train-images-idx3-ubyte",
                                         "train-labels-idx1-ubyte", 200, 1));
        QVERIFY(ensemble::test::writeIdx(dir.path(), "t10k-images-idx3-ubyte",
                                         "t10k-labels-idx1-ubyte", 60, 2));
        auto w = makeWindow({1400, 900});
        w->loadExperiment(tinyCnnConfig(dir.path()), QString());
        QVERIFY2(w->panel()->isValid(),
                 qPrintable(w->panel()->errors().values().join(QStringLiteral("; "))));
        QVERIFY(waitFresh(*w));
        QVERIFY(w->controller()->snapshot()->firstConv != nullptr);
        w->controller()->start();
        QVERIFY(waitSnapshot(
            *w, [](const auto& s) { return s.finished && !s.running; }, 60000));
        QCoreApplication::processEvents();
        const ensemble::ui::SnapshotPtr s = w->controller()->snapshot();
        QCOMPARE(s->run->members, 2);
        QVERIFY(s->run->isImage);

        // Images: the uncertain test images, the confusion matrix over every evaluated row,
        // calibration's bins.
        QVERIFY(w->setView(QStringLiteral("images")));
        QCoreApplication::processEvents();
        QVERIFY(!w->imagesView()->uncertain()->shownRows().empty());
        int64_t total = 0;
        for (int64_t n : s->confusion) {
            total += n;
        }
        QCOMPARE(total, s->run->evalTest.rows);
        QCOMPARE(s->confusion.size(), std::size_t{100});
        QVERIFY(s->ensembleMetrics.accuracy > 0.3);  // learnt something in 30 steps
        QCOMPARE(s->reliability.rows, s->run->evalTest.rows);
        QVERIFY(!s->reliability.bins.empty());
        QVERIFY(w->setView(QStringLiteral("calibration")));
        QCoreApplication::processEvents();
        QCOMPARE(w->calibrationView()->table()->rowCount(), 2 + 2);  // members, mean, ensemble

        // Draw-a-digit: every member's probabilities come back.
        QVERIFY(w->setView(QStringLiteral("images")));
        ensemble::ui::DigitCanvas* canvas = w->imagesView()->canvas();
        const double k = canvas->width() / 224.0;
        canvas->drawStroke({QPointF(40 * k, 100 * k), QPointF(180 * k, 104 * k)});
        QVERIFY(QTest::qWaitFor([&] { return w->imagesView()->bars()->ensemble().size() == 10; },
                                10000));

        // Filters: one row per member, one tile per filter, each kernel not uniform.
        QVERIFY(w->setView(QStringLiteral("filters")));
        QCoreApplication::processEvents();
        ensemble::ui::FiltersView* filters = w->filtersView();
        const QImage kernels = filters->kernels()->image();
        QCOMPARE(filters->kernels()->rows(), 2);
        QCOMPARE(filters->kernels()->cols(), 4);
        QCOMPARE(kernels.width(), 4 * (3 + 1) - 1);
        QCOMPARE(kernels.height(), 2 * (3 + 1) - 1);
        for (int r = 0; r < 2; ++r) {
            for (int c = 0; c < 4; ++c) {
                QVERIFY(tileVaries(kernels, r, c, 3, 3));
            }
        }
        QVERIFY(sawOnlyGapColour(kernels, 3));  // the gap between the first two tiles
        // The same weights the snapshot holds: the tiles of two different filters differ.
        QVERIFY(kernels.copy(0, 0, 3, 3) != kernels.copy(4, 0, 3, 3));

        // Feature maps of a digit drawn on the view's own canvas: [2 members] x [4 filters] of
        // 28 x 28 (same padding), varying where the stroke is.
        ensemble::ui::DigitCanvas* pen = filters->canvas();
        const double f = pen->width() / 224.0;
        pen->drawStroke({QPointF(60 * f, 60 * f), QPointF(160 * f, 170 * f)});
        QVERIFY(QTest::qWaitFor([&] { return filters->featureMaps()->rows() == 2; }, 10000));
        const QImage maps = filters->featureMaps()->image();
        QCOMPARE(filters->featureMaps()->cols(), 4);
        QCOMPARE(maps.width(), 4 * 29 - 1);
        QCOMPARE(maps.height(), 2 * 29 - 1);
        int varying = 0;
        for (int r = 0; r < 2; ++r) {
            for (int c = 0; c < 4; ++c) {
                varying += tileVaries(maps, r, c, 28, 28) ? 1 : 0;
            }
        }
        QVERIFY(varying >= 6);  // a ReLU map can be dead; most are not
        // On screen: the view paints the tiles, not a blank.
        const QImage shot = filters->kernels()->grab().toImage();
        std::set<QRgb> colours;
        for (int y = 0; y < shot.height(); y += 2) {
            for (int x = 0; x < shot.width(); x += 2) {
                colours.insert(shot.pixel(x, y));
            }
        }
        QVERIFY(colours.size() > 8);

        // An MLP run hides the Filters tab.
        json mlp = tinyCnnConfig(dir.path());
        mlp["model"] = {{"kind", "mlp"}, {"hidden", {16}}};
        w->loadExperiment(mlp, QString());
        QVERIFY(waitFresh(*w));
        QCoreApplication::processEvents();
        QVERIFY(w->controller()->snapshot()->firstConv == nullptr);
        QVERIFY(!w->setView(QStringLiteral("filters")));
    }

    // The Images and Filters views as SVG: every uncertain test image and every kernel tile is
    // an <image> holding exactly its pixels (Qt's SVG generator ignores a source rectangle:
    // the Filters view once drew its whole sheet into each tile).
    void imagesAndFiltersExportSvg() {
        using ensemble::ui::ViewId;
        QTemporaryDir dir;
        QVERIFY(ensemble::test::writeIdx(dir.path(), "train-images-idx3-ubyte",
                                         "train-labels-idx1-ubyte", 200, 1));
        QVERIFY(ensemble::test::writeIdx(dir.path(), "t10k-images-idx3-ubyte",
                                         "t10k-labels-idx1-ubyte", 60, 2));
        auto w = makeWindow({1400, 900});
        json c = tinyCnnConfig(dir.path());
        c["training"]["steps"] = 10;
        w->loadExperiment(c, QString());
        QVERIFY(waitFresh(*w));
        w->controller()->start();
        QVERIFY(waitSnapshot(
            *w, [](const auto& s) { return s.finished && !s.running; }, 60000));
        QCoreApplication::processEvents();
        const ensemble::ui::SnapshotPtr s = w->controller()->snapshot();
        const int iw = s->run->imageWidth;
        const int ih = s->run->imageHeight;

        QVERIFY(w->setView(QStringLiteral("images")));
        const QString imagesPath = dir.filePath(QStringLiteral("images.svg"));
        const ensemble::test::SvgContent images = exportSvg(*w, imagesPath);
        QVERIFY2(images.error.isEmpty(), qPrintable(images.error));
        QCOMPARE(images.title,
                 QStringLiteral("EnsembleLab: ") + ensemble::ui::viewTitle(ViewId::Images));
        QVERIFY2(images.drawing >= 100, qPrintable(QString::number(images.drawing)));  // 10 x 10
        const std::vector<QImage> digits =
            imagesOfSize(ensemble::test::svgImages(imagesPath), QSize(iw, ih));
        const std::vector<int64_t>& shown = w->imagesView()->uncertain()->shownRows();
        QVERIFY(!shown.empty());
        QCOMPARE(digits.size(), shown.size());
        // The first shown test row, as the view draws it (ink dark on white): in the SVG.
        QImage first(iw, ih, QImage::Format_RGB32);
        const float* px = s->run->evalTest.row(shown.front());
        for (int y = 0; y < ih; ++y) {
            for (int x = 0; x < iw; ++x) {
                const int v = 255 - static_cast<int>(std::clamp(px[y * iw + x], 0.0f, 255.0f));
                first.setPixel(x, y, qRgb(v, v, v));
            }
        }
        QVERIFY(std::find(digits.begin(), digits.end(), first) != digits.end());

        QVERIFY(w->setView(QStringLiteral("filters")));
        ensemble::ui::FiltersView* filters = w->filtersView();
        const QString filtersPath = dir.filePath(QStringLiteral("filters.svg"));
        const ensemble::test::SvgContent kernels = exportSvg(*w, filtersPath);
        QVERIFY2(kernels.error.isEmpty(), qPrintable(kernels.error));
        QCOMPARE(kernels.title,
                 QStringLiteral("EnsembleLab: ") + ensemble::ui::viewTitle(ViewId::Filters));
        const std::vector<ensemble::test::SvgImage> all = ensemble::test::svgImages(filtersPath);
        const std::vector<QImage> tiles = imagesOfSize(all, QSize(3, 3));
        QCOMPARE(tiles.size(), std::size_t{2 * 4});  // members x filters, one image each
        const QImage sheet = filters->kernels()->image().convertToFormat(QImage::Format_RGB32);
        QVERIFY(imagesOfSize(all, sheet.size()).empty());  // never the whole sheet
        for (int r = 0; r < 2; ++r) {
            for (int f = 0; f < 4; ++f) {
                const QImage tile = sheet.copy(f * (3 + ensemble::ui::kTileGap),
                                               r * (3 + ensemble::ui::kTileGap), 3, 3);
                QVERIFY2(std::find(tiles.begin(), tiles.end(), tile) != tiles.end(),
                         qPrintable(QStringLiteral("member %1, filter %2").arg(r).arg(f)));
            }
        }
        // Drawn as the screen shows them: square, scaled up from 3 x 3.
        for (const ensemble::test::SvgImage& i : all) {
            if (i.image.size() == QSize(3, 3)) {
                QCOMPARE(i.size.width(), i.size.height());
                QVERIFY(i.size.width() >= 3);
            }
        }
    }
};

QTEST_MAIN(TestGuiCnn)
#include "tst_gui_cnn.moc"
