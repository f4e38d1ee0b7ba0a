#include "help_text.h"

#include <QAction>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QKeySequence>
#include <QMap>
#include <QMenu>
#include <QScreen>
#include <QTextBrowser>
#include <QTextDocument>
#include <QThread>
#include <QUrl>
#include <QVBoxLayout>
#include <QWidget>
#include <exception>

#include "backend/kernel_report.h"
#include "sys/cpu_identity.h"

#ifndef ENSEMBLE_VERSION
#define ENSEMBLE_VERSION "unknown"
#endif
#ifndef ENSEMBLE_BUILD_OPTIONS
#define ENSEMBLE_BUILD_OPTIONS ""
#endif
// ui/CMakeLists.txt: the installed documentation relative to the installed program, and the
// trees this program was built from and in.
#ifndef ENSEMBLE_DOCS_FROM_BINDIR
#define ENSEMBLE_DOCS_FROM_BINDIR "../share/doc/ensemblelab"
#endif
#ifndef ENSEMBLE_SOURCE_DIR
#define ENSEMBLE_SOURCE_DIR ""
#endif
#ifndef ENSEMBLE_BINARY_DIR
#define ENSEMBLE_BINARY_DIR ""
#endif

namespace ensemble::ui {

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("ensemble::ui::HelpText", text);
}

QString row(const QString& keys, const QString& what) {
    return QStringLiteral("<tr><td style='padding-right:16px'><b>%1</b></td><td>%2</td></tr>")
        .arg(keys.toHtmlEscaped(), what.toHtmlEscaped());
}

}  // namespace

QString shortcutsHtml(const QWidget* window) {
    // By shortcut text, so an action placed in a menu and a toolbar is listed once.
    QMap<QString, QString> byKey;
    QStringList order;
    for (const QAction* a : window->findChildren<QAction*>()) {
        if (a->shortcut().isEmpty()) {
            continue;
        }
        const QString keys = a->shortcut().toString(QKeySequence::NativeText);
        QString what = a->toolTip().section(QLatin1Char('\n'), 0, 0);
        if (what.isEmpty() || what == a->text()) {
            what = a->text();
        }
        what.remove(QLatin1Char('&'));
        if (!byKey.contains(keys)) {
            order << keys;
        }
        byKey.insert(keys, what);
    }
    QString html = QStringLiteral("<h3>%1</h3><table>").arg(tr("Keyboard"));
    for (const QString& keys : order) {
        html += row(keys, byKey.value(keys));
    }
    html += row(tr("Enter / Esc"),
                tr("in an Experiment field: leave it, so the one-key shortcuts work again"));
    html += row(tr("A / P / Esc"), tr("Active learning: acquire the ringed picks / play or pause "
                                      "rounds / cancel the round under way"));
    html += row(tr("Arrows, Home / Enter"),
                tr("Active learning picture: move the cursor over the pool by score / label the "
                   "row under it"));
    html += row(tr("Ctrl+Enter / Esc"),
                tr("Shift: run the shift / cancel it. Methods: compare the checked methods / "
                   "cancel (the finished ones stay). Reproduce: run the chosen reproduction / "
                   "cancel (the runs that finished stay, judged)"));
    html += QStringLiteral("</table><h3>%1</h3><table>").arg(tr("Mouse"));
    html += row(tr("Wheel over the panel"),
                tr("scrolls; a field changes with the wheel only once it has focus (click it)"));
    html += row(tr("Boundary, Regression, Active learning: wheel"),
                tr("zoom in or out at the pointer (clicked first: + and - at the centre)"));
    html +=
        row(tr("Curves: drag across a chart"), tr("zoom into those steps (right-click: zoom out)"));
    html += row(tr("Boundary, Regression, Active learning: drag"), tr("pan a zoomed picture"));
    html += row(tr("Boundary, Regression, Active learning: double-click or 0"),
                tr("back to the whole data"));
    html += row(tr("Active learning: click a grey point"),
                tr("label that pool row (its true label is revealed) and train a round"));
    html += row(tr("Boundary: hover"),
                tr("ensemble p(class), entropy, mutual information and member votes at the "
                   "pointer"));
    html += QStringLiteral("</table>");
    return html;
}

QString buildOptions() {
    QString options = QString::fromUtf8(ENSEMBLE_BUILD_OPTIONS);
    options += (options.isEmpty() ? QString() : QStringLiteral(", ")) +
               QStringLiteral("Qt %1 (built with %2)")
                   .arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR));
    return options;
}

namespace {

// The CPU by vendor, family, model and vector flags (CPUID), the brand string after it for
// people: the brand alone ("AMD EPYC") names machines whose vector units differ.
QString cpuHtml() {
    const CpuIdentity& cpu = cpuIdentity();
    QString text = QString::fromStdString(cpu.describe());
    if (!cpu.brand.empty()) {
        text += QStringLiteral("; ") + QString::fromStdString(cpu.brand);
    }
    return text.toHtmlEscaped();
}

}  // namespace

QString aboutHtml(const SnapshotPtr& snapshot, const QString& documentation) {
    QString backend = tr("no run yet");
    QString threads = QString::number(QThread::idealThreadCount());
    if (snapshot) {
        const RunInfo& run = *snapshot->run;
        backend = QString::fromStdString(run.backendName);
        const int configured = run.config.backend.threads;
        threads = configured > 0 ? QString::number(configured)
                                 : tr("%1 (all cores)").arg(QThread::idealThreadCount());
        if (!run.notice.empty()) {
            backend += QStringLiteral("<br><small>%1</small>")
                           .arg(QString::fromStdString(run.notice).toHtmlEscaped());
        }
    }
    // The program sets the application version to what `ensemble-lab --version` prints (with
    // git describe); a test that builds the window alone has only project()'s version.
    QString version = QCoreApplication::applicationVersion();
    if (version.isEmpty()) {
        version = QStringLiteral(ENSEMBLE_VERSION);
    }
    const QString docs =
        documentation.isEmpty()
            ? tr("not found")
            : QStringLiteral("%1 (%2)").arg(QDir::toNativeSeparators(documentation).toHtmlEscaped(),
                                            tr("Help &gt; Documentation"));
    // A bad ENSEMBLE_CPU_ISA makes the kernels' report throw; the box says why instead.
    QString kernels;
    try {
        kernels = QString::fromStdString(cpuKernels().describe());
    } catch (const std::exception& e) {
        kernels = tr("unknown: %1").arg(QString::fromUtf8(e.what()));
    }
    return tr("<b>EnsembleLab %1</b><br>Train K small networks at once as one batched "
              "computation, and watch each member, the ensemble and its uncertainty live."
              "<table style='margin-top:8px'>"
              "<tr><td style='padding-right:12px'>Backend and device</td><td>%2</td></tr>"
              "<tr><td style='padding-right:12px'>CPU threads</td><td>%3</td></tr>"
              "<tr><td style='padding-right:12px'>CPU</td><td>%6</td></tr>"
              "<tr><td style='padding-right:12px'>CPU kernels</td><td>%7</td></tr>"
              "<tr><td style='padding-right:12px'>Build</td><td>%4</td></tr>"
              "<tr><td style='padding-right:12px'>Documentation</td><td>%5</td></tr>"
              "<tr><td style='padding-right:12px'>Licence</td><td>GPL-3.0-or-later</td></tr>"
              "</table>")
        .arg(version.toHtmlEscaped(), backend, threads, buildOptions().toHtmlEscaped(), docs,
             cpuHtml(), kernels.toHtmlEscaped());
}

QStringList documentationFolderCandidates(const QString& programDir) {
    QStringList candidates{
        QDir::cleanPath(QDir(programDir).filePath(QStringLiteral(ENSEMBLE_DOCS_FROM_BINDIR)))};
    // The source tree only for a program of this build tree: an installed program never
    // reads the tree it was built from (which its user does not have).
    const QString source = QString::fromUtf8(ENSEMBLE_SOURCE_DIR);
    const QString build = QFileInfo(QString::fromUtf8(ENSEMBLE_BINARY_DIR)).canonicalFilePath();
    const QString program = QFileInfo(programDir).canonicalFilePath();
    if (!source.isEmpty() && !build.isEmpty() && !program.isEmpty() &&
        (program == build || program.startsWith(build + QLatin1Char('/')))) {
        candidates << QDir::cleanPath(source);
    }
    candidates.removeDuplicates();
    return candidates;
}

QString documentationFolder(const QStringList& candidates) {
    for (const QString& folder : candidates) {
        const QDir dir(folder);
        if (QFileInfo(dir.filePath(QStringLiteral("README.md"))).isFile() &&
            QFileInfo(dir.filePath(QStringLiteral("docs/app.md"))).isFile()) {
            return dir.absolutePath();
        }
    }
    return {};
}

QList<DocumentationPage> documentationPages() {
    return {
        {tr("Getting started"),
         tr("The README: what EnsembleLab is, its two programs and a five-minute tour"),
         QStringLiteral("README.md")},
        {tr("The desktop app"),
         tr("This app's views, keys, live edits, files and exports (docs/app.md)"),
         QStringLiteral("docs/app.md")},
        {tr("Documentation"),
         tr("Every page of the documentation, by topic: the CLI, configuration, methods, "
            "formats, performance (docs/README.md)"),
         QStringLiteral("docs/README.md")},
    };
}

QString documentationMissing(const QString& folder, const QStringList& candidates,
                             const QString& page) {
    if (folder.isEmpty()) {
        QStringList shown;
        for (const QString& c : candidates) {
            shown << QDir::toNativeSeparators(c);
        }
        return tr("no documentation found (looked in %1)")
            .arg(shown.isEmpty() ? tr("no folder") : shown.join(tr(" and ")));
    }
    if (!QFileInfo(QDir(folder).filePath(page)).isFile()) {
        return tr("%1 is missing from %2").arg(page, QDir::toNativeSeparators(folder));
    }
    return {};
}

QString addDocumentationActions(QMenu* help, const QStringList& folders, const UrlOpener& open,
                                const ErrorShower& showError) {
    const QStringList looked =
        folders.isEmpty() ? documentationFolderCandidates(QCoreApplication::applicationDirPath())
                          : folders;
    const QString docs = documentationFolder(looked);
    help->setToolTipsVisible(true);  // a page's file, or why it cannot be opened
    for (const DocumentationPage& page : documentationPages()) {
        QAction* action = help->addAction(page.title);
        const QString path = QDir(docs).filePath(page.file);
        const QString missing = documentationMissing(docs, looked, page.file);
        action->setToolTip(QStringLiteral("%1\n%2").arg(
            page.toolTip, missing.isEmpty() ? QDir::toNativeSeparators(path) : missing));
        // Enabled even without the documentation: a grey entry would not say where it looked,
        // and the error box does (a system that leaves out /usr/share/doc, say).
        QObject::connect(action, &QAction::triggered, action, [=] {
            if (!missing.isEmpty()) {
                showError(tr("No documentation"), tr("Cannot open %1: %2.").arg(page.file, missing),
                          tr("The package installs the documentation in /usr/share/doc/"
                             "ensemblelab unless dpkg is set to leave it out (path-exclude); "
                             "the source tree has the same pages, README.md and docs/."));
                return;
            }
            const QUrl url = QUrl::fromLocalFile(path);
            if (!(open ? open(url) : QDesktopServices::openUrl(url))) {
                showError(tr("Could not open the documentation"),
                          tr("No program opened %1.").arg(QDir::toNativeSeparators(path)),
                          tr("Open it with a text editor or a Markdown viewer."));
            }
        });
    }
    return docs;
}

void openHelpDialog(QWidget* parent, const QString& name, const QString& title,
                    const QString& html) {
    // A dialog whose text scrolls, no taller than the screen: the key list is longer than an
    // 800-px screen, and a message box would put its end and Close button off-screen.
    auto* box = new QDialog(parent);
    box->setWindowTitle(title);
    box->setObjectName(name);
    box->setAttribute(Qt::WA_DeleteOnClose);
    auto* text = new QTextBrowser(box);
    text->setObjectName(QStringLiteral("HelpText"));
    text->setOpenExternalLinks(true);
    text->setHtml(html);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, box);
    QObject::connect(buttons, &QDialogButtonBox::rejected, box, &QDialog::reject);
    auto* layout = new QVBoxLayout(box);
    layout->addWidget(text);
    layout->addWidget(buttons);
    const QRect screen = parent->screen()->availableGeometry();
    const int width = std::min(640, screen.width() * 9 / 10);
    text->document()->setTextWidth(width - 40);
    const int wanted = static_cast<int>(text->document()->size().height()) + 100;
    box->resize(width, std::min(wanted, screen.height() * 85 / 100));
    box->open();
}

}  // namespace ensemble::ui
