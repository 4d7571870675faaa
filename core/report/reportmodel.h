// A report as data: a title page, then sections of paragraphs, tables and figures, each figure described
// by what it plots (its lines, bands, markers; a heatmap's matrix; a histogram's bins and the format's range)
// rather than drawn. core/report/triagereport fills one from the triage engine and the query layer; a
// renderer (views/report) paints it, so what the report says is testable without painting it, and the
// painting knows nothing of triage.
#pragma once

#include <QMetaType>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

namespace fp8scope::report {

// Colours as 0xRRGGBB, so that core needs no QtGui.
using Rgb = uint32_t;

struct Paragraph {
    enum Style { Body, Strong, Note, Verbatim }; // Verbatim: monospaced, whitespace kept (configs, commands)
    QString text;
    Style style = Body;
};

struct Table {
    QStringList headers;
    std::vector<QStringList> rows;
    std::vector<bool> numeric; // per column: right-aligned (missing: false)
    std::vector<size_t> highlighted; // rows drawn in the alert colour (significant gaps, suspects)
    // Relative column widths (missing: from the content).
    std::vector<double> widths;
};

struct CurveFigure {
    struct Line {
        QString name;
        Rgb colour = 0x1f77b4;
        std::vector<double> x, y;
        bool dashed = false;
        bool faint = false; // thin and light: context behind the lines that matter
        bool legend = true;
    };
    struct Band { // filled between low and high
        QString name;
        Rgb colour = 0x999999;
        std::vector<double> x, low, high;
    };
    struct Marker {
        enum Shape { Diamond, Square, Triangle, Cross }; // Cross: a point that is not a number
        double x = 0, y = 0;
        Shape shape = Diamond;
        Rgb colour = 0;
    };
    QString xLabel, yLabel;
    bool logY = false;
    std::vector<Band> bands;
    std::vector<Line> lines;
    std::vector<Marker> markers;
    QStringList markerLegend; // what the marker shapes stand for, one line ("diamond: spike")
    std::optional<double> marked; // a vertical line (the departure)
    std::optional<std::pair<double, double>> markedSpan; // and its interval, shaded
};

struct HeatmapFigure {
    QStringList layers; // rows, depth order (layer 0 on top)
    std::vector<int64_t> steps; // columns
    std::vector<double> values; // layers x steps, row-major, NaN where absent
    QString scaleLabel;
    bool logColour = false;
    std::vector<std::pair<QString, QString>> flagged; // layer, note ("onset 1375"): marked rows
};

struct HistogramFigure {
    std::vector<int> log2Bins; // floor(log2 |x|) of each bar
    std::vector<double> counts;
    QString format; // "E4M3"
    double minSubnormalLog2 = 0, minNormalLog2 = 0, maxLog2 = 0; // the format's range, drawn as lines
    QString note; // "underflow 0.02 %, saturation 0 %"
};

struct Figure {
    QString caption;
    std::variant<CurveFigure, HeatmapFigure, HistogramFigure> content;
    double heightMm = 70; // drawn the text width wide
};

using Block = std::variant<Paragraph, Table, Figure>;

struct Section {
    QString title; // a bookmark and a line of the table of contents
    std::vector<Block> blocks;
};

struct Document {
    QString title;
    QString subtitle;
    std::vector<Block> titlePage; // under the title, before the table of contents
    std::vector<Section> sections;
    QString footer; // on every page beside its number ("fp8scope 0.9 — 2026-12-01")
    QString author; // the PDF's metadata
};

// Every text of a document in reading order (titles, paragraphs, table cells, captions): what a reader
// searching the PDF can find; tests check the model with it.
QStringList documentText(const Document &d);

} // namespace fp8scope::report

Q_DECLARE_METATYPE(fp8scope::report::Document)
