// Paints a report (core/report/reportmodel.h) into a PDF: a title page, a table of contents with page numbers,
// then the sections, with page numbers and the footer on every page. Text is text (searchable, its fonts
// embedded by QPdfWriter); curves and histograms are drawn by QCustomPlot as vectors; a heatmap is one image
// with a pixel per cell, under vector axes. Qt's PDF writer makes no outline, so the PDF is then rewritten
// with qpdf (libqpdf) adding a bookmark per section. Needs a QApplication (QCustomPlot's plots are widgets):
// the CLI makes one on the offscreen platform, so no display is needed.
#pragma once

#include "core/report/reportmodel.h"

#include <QFont>
#include <QPageSize>
#include <QStringList>

#include <functional>
#include <tuple>
#include <vector>

class QCustomPlot;
class QPaintDevice;

namespace fp8scope {

struct ReportRenderOptions {
    QPageSize::PageSizeId pageSize = QPageSize::A4;
};

// What was painted: the pages, and the page each section starts on (1-based), as the contents list them.
struct RenderedReport {
    int pages = 0;
    std::vector<std::pair<QString, int>> sections;
};

// "A4" or "Letter" (any case); nullopt for another.
std::optional<QPageSize::PageSizeId> reportPageSize(const QString &name);

// Writes `path` (replaced only once complete); false with *error. progress(page, pages) may return false to
// cancel.
// A curve figure as the report draws it, `size` plot pixels (at 96 dpi) large: its lines, bands, marks and
// departure, the legend placed off them (views/plotting/legendplacement.h).
void layOutCurveFigure(QCustomPlot &plot, const report::CurveFigure &figure, QSize size);

bool renderReport(const report::Document &document, const QString &path, const ReportRenderOptions &options,
    RenderedReport *rendered, QString *error, const std::function<bool(int, int)> &progress = {});

// renderReport in two parts, for a window that keeps its thread free: the painting (where QCustomPlot's plots can
// be made: the GUI thread) into a draft beside `path`, then the file work (qpdf's rewrite with the bookmarks, the
// file put in place), which any thread may do.
struct PaintedReport {
    QString draft;
    std::vector<std::tuple<QString, int, double>> bookmarks; // title, page, y (device pixels below the margin)
    double topPoints = 0; // the top margin
    int resolution = 300;
};
bool paintReport(const report::Document &document, const QString &path, const ReportRenderOptions &options,
    RenderedReport *rendered, PaintedReport *painted, QString *error,
    const std::function<bool(int, int)> &progress = {});
bool finishReport(const PaintedReport &painted, const QString &path, QString *error);

} // namespace fp8scope
