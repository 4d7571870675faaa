#include "reportrenderer.h"

#include "views/plotting/heatgradient.h"
#include "views/plotting/legendplacement.h"
#include "views/plotting/textwrap.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFontMetricsF>
#include <QPdfWriter>

// qpdf 11: its headers ask which PointerHolder API a user wants (none: std::shared_ptr only).
#define POINTERHOLDER_TRANSITION 4
#include <qpdf/QPDF.hh>
#include <qpdf/QPDFObjectHandle.hh>
#include <qpdf/QPDFPageDocumentHelper.hh>
#include <qpdf/QPDFWriter.hh>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace fp8scope {

using namespace report;

namespace {

QColor colour(Rgb rgb)
{
    return QColor::fromRgb(QRgb(0xff000000u | rgb));
}

QCPColorGradient reportGradient()
{
    QCPColorGradient g = heatGradient();
    g.setLevelCount(256);
    return g;
}

// Plots are laid out at screen resolution (their fonts and pens in screen pixels) and scaled onto the page.
// Their fonts are given in pixels: a point size would be taken at the page's resolution and scaled again.
constexpr double kPlotDpi = 96.0;

QFont plotFont(int pixels, bool bold = false)
{
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPixelSize(pixels);
    f.setBold(bold);
    f.setStyleStrategy(QFont::PreferNoShaping); // no ligatures (searchable text)
    return f;
}

void pixelFonts(QCustomPlot &plot)
{
    for (QCPAxis *axis : plot.axisRect()->axes()) {
        axis->setLabelFont(plotFont(11));
        axis->setTickLabelFont(plotFont(10));
    }
    plot.legend->setFont(plotFont(9));
}

void curvePlot(QCustomPlot &plot, const CurveFigure &f)
{
    plot.xAxis->setLabel(f.xLabel);
    plot.yAxis->setLabel(f.yLabel);
    if (f.logY) {
        plot.yAxis->setScaleType(QCPAxis::stLogarithmic);
        plot.yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    }
    plot.legend->setVisible(true);
    plot.legend->setFont(plotFont(9));
    plot.axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    for (const CurveFigure::Band &b : f.bands) {
        QCPGraph *low = plot.addGraph();
        QCPGraph *high = plot.addGraph();
        low->setData(QVector<double>(b.x.begin(), b.x.end()), QVector<double>(b.low.begin(), b.low.end()), true);
        high->setData(QVector<double>(b.x.begin(), b.x.end()), QVector<double>(b.high.begin(), b.high.end()), true);
        QColor c = colour(b.colour);
        low->setPen(QPen(c, 0.5));
        high->setPen(QPen(c, 0.5));
        c.setAlpha(90);
        high->setBrush(c);
        high->setChannelFillGraph(low);
        high->setName(b.name);
        low->removeFromLegend();
    }
    for (const CurveFigure::Line &l : f.lines) {
        QCPGraph *g = plot.addGraph();
        g->setData(QVector<double>(l.x.begin(), l.x.end()), QVector<double>(l.y.begin(), l.y.end()),
            std::is_sorted(l.x.begin(), l.x.end()));
        QColor c = colour(l.colour);
        if (l.faint)
            c.setAlpha(110);
        g->setPen(QPen(c, l.faint ? 0.6 : 1.3, l.dashed ? Qt::DashLine : Qt::SolidLine));
        g->setName(l.name);
        if (!l.legend)
            g->removeFromLegend();
    }
    // Markers, one graph per shape and colour.
    std::map<std::pair<int, Rgb>, QCPGraph *> markers;
    for (const CurveFigure::Marker &m : f.markers) {
        QCPGraph *&g = markers[{int(m.shape), m.colour}];
        if (!g) {
            g = plot.addGraph();
            g->setLineStyle(QCPGraph::lsNone);
            const QCPScatterStyle::ScatterShape shape = m.shape == CurveFigure::Marker::Square
                ? QCPScatterStyle::ssSquare
                : m.shape == CurveFigure::Marker::Triangle ? QCPScatterStyle::ssTriangle
                : m.shape == CurveFigure::Marker::Cross    ? QCPScatterStyle::ssCross
                                                           : QCPScatterStyle::ssDiamond;
            g->setScatterStyle(QCPScatterStyle(shape, colour(m.colour), colour(m.colour), 5));
            g->removeFromLegend();
        }
        g->addData(m.x, m.y);
    }
    plot.rescaleAxes();
    if (f.marked) {
        auto *line = new QCPItemStraightLine(&plot);
        line->point1->setCoords(*f.marked, 0);
        line->point2->setCoords(*f.marked, 1);
        line->setPen(QPen(QColor(200, 30, 0), 1.2));
        line->setProperty(kKeepClearProperty, true);
    }
    if (f.markedSpan) {
        auto *span = new QCPItemRect(&plot);
        span->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
        span->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
        span->topLeft->setCoords(f.markedSpan->first, 0);
        span->bottomRight->setCoords(f.markedSpan->second, 1);
        span->setPen(Qt::NoPen);
        span->setBrush(QColor(200, 30, 0, 40));
        span->setProperty(kKeepClearProperty, true);
    }
    if (!f.markerLegend.isEmpty()) {
        auto *note = new QCPItemText(&plot);
        note->position->setType(QCPItemPosition::ptAxisRectRatio);
        note->position->setCoords(0.01, 0.99);
        note->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
        note->setFont(plotFont(9));
        note->setText(f.markerLegend.join(QLatin1Char('\n')));
        note->setProperty(kKeepClearProperty, true);
    }
}

void histogramPlot(QCustomPlot &plot, const HistogramFigure &f)
{
    auto *bars = new QCPBars(plot.xAxis, plot.yAxis);
    bars->setData(
        QVector<double>(f.log2Bins.begin(), f.log2Bins.end()), QVector<double>(f.counts.begin(), f.counts.end()));
    bars->setWidth(1.0);
    bars->setPen(QPen(QColor(40, 110, 170)));
    bars->setBrush(QColor(70, 140, 200, 180));
    plot.xAxis->setLabel(QStringLiteral("log2 |x| after scaling"));
    plot.yAxis->setLabel(QStringLiteral("elements"));
    double lo = f.minSubnormalLog2 - 4, hi = f.maxLog2 + 3;
    if (!f.log2Bins.empty()) {
        lo = std::min(lo, double(f.log2Bins.front()) - 1);
        hi = std::max(hi, double(f.log2Bins.back()) + 1);
    }
    plot.xAxis->setRange(lo, hi);
    const double top = f.counts.empty() ? 1.0 : *std::max_element(f.counts.begin(), f.counts.end()) * 1.15;
    plot.yAxis->setRange(0, top);
    const auto shade = [&](double a, double b, QColor c) {
        auto *r = new QCPItemRect(&plot);
        r->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
        r->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
        r->topLeft->setCoords(a, 0);
        r->bottomRight->setCoords(b, 1);
        r->setPen(Qt::NoPen);
        r->setBrush(c);
    };
    shade(lo, f.minSubnormalLog2, QColor(70, 130, 220, 45)); // flushed to zero
    shade(f.maxLog2, hi, QColor(220, 60, 40, 45)); // saturated
    const std::pair<double, QString> lines[]
        = {{f.minSubnormalLog2, QStringLiteral("min subnormal")}, {f.minNormalLog2, QStringLiteral("min normal")},
            {f.maxLog2, QStringLiteral("max %1").arg(std::exp2(f.maxLog2), 0, 'g', 4)}};
    for (const auto &[x, name] : lines) {
        auto *l = new QCPItemStraightLine(&plot);
        l->point1->setCoords(x, 0);
        l->point2->setCoords(x, 1);
        l->setPen(QPen(QColor(60, 60, 60), 0.8, Qt::DashLine));
        auto *t = new QCPItemText(&plot);
        t->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        t->position->setCoords(x, 0.02);
        t->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
        t->setRotation(-90);
        t->setFont(plotFont(9));
        t->setText(name);
    }
    auto *fmt = new QCPItemText(&plot);
    fmt->position->setType(QCPItemPosition::ptAxisRectRatio);
    fmt->position->setCoords(0.99, 0.02);
    fmt->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    fmt->setFont(plotFont(9));
    fmt->setText(f.format);
}

// The heatmap's axes (steps across, layers down, the flagged rows named and marked); the cells are drawn as
// one image into the axis rect afterwards.
void heatmapAxes(QCustomPlot &plot, const HeatmapFigure &f)
{
    const int n = int(f.layers.size());
    plot.xAxis->setLabel(QStringLiteral("step"));
    plot.xAxis->setRange(double(f.steps.front()), double(std::max(f.steps.back(), f.steps.front() + 1)));
    plot.yAxis->setRange(-0.5, n - 0.5);
    plot.yAxis->setRangeReversed(true);
    QSharedPointer<QCPAxisTickerText> ticks(new QCPAxisTickerText);
    const int every = std::max(1, n / 24);
    for (int i = 0; i < n; ++i) {
        const auto flag
            = std::find_if(f.flagged.begin(), f.flagged.end(), [&](const auto &fl) { return fl.first == f.layers[i]; });
        if (flag != f.flagged.end())
            ticks->addTick(i,
                QStringLiteral("▶ %1%2").arg(f.layers[i].section(QLatin1Char('.'), -4),
                    flag->second.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(flag->second)));
        else if (i % every == 0)
            ticks->addTick(i, f.layers[i].section(QLatin1Char('.'), -4));
    }
    plot.yAxis->setTicker(ticks);
    plot.yAxis->setTickLabelFont(plotFont(8));
    plot.yAxis->grid()->setVisible(false);
    plot.xAxis->grid()->setVisible(false);
}

// The cells, a pixel each, in the linear (or log) range of the finite values.
QImage heatmapImage(const HeatmapFigure &f, QCPRange *range)
{
    double lo = INFINITY, hi = -INFINITY;
    for (double v : f.values) {
        if (std::isfinite(v) && (!f.logColour || v > 0)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    if (!(lo <= hi))
        lo = 0, hi = 1;
    if (lo == hi)
        hi = lo + (lo == 0 ? 1 : std::abs(lo) * 0.01);
    *range = QCPRange(lo, hi);
    QCPColorGradient g = reportGradient();
    const int cols = int(f.steps.size()), rows = int(f.layers.size());
    QImage image(cols, rows, QImage::Format_ARGB32);
    for (int r = 0; r < rows; ++r) {
        auto *line = reinterpret_cast<QRgb *>(image.scanLine(r));
        for (int c = 0; c < cols; ++c) {
            const double v = f.values[size_t(r) * size_t(cols) + size_t(c)];
            line[c] = std::isfinite(v) && (!f.logColour || v > 0) ? g.color(v, *range, f.logColour)
                                                                  : qRgba(255, 255, 255, 0);
        }
    }
    return image;
}

} // namespace

void layOutCurveFigure(QCustomPlot &plot, const CurveFigure &figure, QSize size)
{
    pixelFonts(plot);
    curvePlot(plot, figure);
    // The legend where the curves and the departure are not, at the size it is drawn.
    plot.setViewport(QRect(QPoint(0, 0), size));
    placeLegend(&plot);
}

namespace {

// Lays out and paints a document: the same flow twice, first without a painter (to count the pages and find
// where each section starts), then painting with the totals known.
class Flow
{
public:
    Flow(QPdfWriter &writer, const Document &doc)
        : m_writer(writer)
        , m_doc(doc)
    {
        m_dpi = writer.resolution();
        const QRect paint = writer.pageLayout().paintRectPixels(m_dpi);
        m_width = paint.width();
        m_height = paint.height() - mm(8); // the footer's room
        const QString sans = QStringLiteral("DejaVu Sans");
        m_body = QFont(sans, 10);
        m_strong = QFont(sans, 10, QFont::Bold);
        m_note = QFont(sans, 8);
        m_note.setItalic(true);
        m_mono = QFont(QStringLiteral("DejaVu Sans Mono"), 8);
        m_mono.setStyleHint(QFont::Monospace);
        m_table = QFont(sans, 7);
        m_tableHead = QFont(sans, 7, QFont::Bold);
        m_h1 = QFont(sans, 15, QFont::Bold);
        m_title = QFont(sans, 20, QFont::Bold);
        // No ligatures: "fl" stays two letters, so a reader's search (and pdftotext) finds "underflow".
        for (QFont *f : {&m_body, &m_strong, &m_note, &m_mono, &m_table, &m_tableHead, &m_h1, &m_title})
            f->setStyleStrategy(QFont::PreferNoShaping);
    }

    double mm(double v) const { return v / 25.4 * m_dpi; }

    // One pass; painter nullptr: measure only. Returns false when cancelled.
    bool run(QCPPainter *painter, const std::function<bool(int, int)> &progress)
    {
        m_p = painter;
        m_progress = progress;
        m_page = 1;
        m_y = 0;
        m_sections.clear();
        m_bookmarks.clear();
        // Title page.
        text(m_doc.title, m_title, QColor(20, 20, 20));
        m_y += mm(1);
        text(m_doc.subtitle, m_note, QColor(90, 90, 90));
        m_y += mm(6);
        for (const Block &b : m_doc.titlePage)
            if (!block(b))
                return false;
        // Contents.
        if (!newPage())
            return false;
        heading(QStringLiteral("Contents"), false);
        const QFontMetricsF fm(m_body, &m_writer);
        for (size_t i = 0; i < m_doc.sections.size(); ++i) {
            ensure(fm.lineSpacing());
            if (m_p) {
                const QString title = m_doc.sections[i].title;
                const QString page = QString::number(i < m_pagesOfSections.size() ? m_pagesOfSections[i] : 0);
                m_p->setFont(m_body);
                m_p->setPen(QColor(20, 20, 20));
                m_p->drawText(QPointF(0, m_y + fm.ascent()), title);
                const double pw = fm.horizontalAdvance(page);
                m_p->drawText(QPointF(m_width - pw, m_y + fm.ascent()), page);
                // Dot leaders between them.
                const double from = fm.horizontalAdvance(title) + mm(2), to = m_width - pw - mm(2);
                const double dot = fm.horizontalAdvance(QStringLiteral(". "));
                QString dots;
                for (double x = from; x + dot < to; x += dot)
                    dots += QStringLiteral(". ");
                m_p->setPen(QColor(150, 150, 150));
                m_p->drawText(QPointF(from, m_y + fm.ascent()), dots);
            }
            m_y += fm.lineSpacing() * 1.2;
        }
        for (size_t i = 0; i < m_doc.sections.size(); ++i) {
            const Section &s = m_doc.sections[i];
            // The first after the contents, and one that would start low on a page, on a new page; else below.
            if (i == 0 || m_y > m_height * 0.55) {
                if (!newPage())
                    return false;
            } else {
                m_y += mm(8);
            }
            heading(s.title, true);
            for (const Block &b : s.blocks)
                if (!block(b))
                    return false;
        }
        footer();
        return true;
    }

    int pages() const { return m_page; }
    const std::vector<int> &sectionPages() const { return m_sections; }
    void setTotals(int pages, std::vector<int> sectionPages)
    {
        m_totalPages = pages;
        m_pagesOfSections = std::move(sectionPages);
    }
    // (section title, page index 0-based, y from the paint rect's top in device units)
    const std::vector<std::tuple<QString, int, double>> &bookmarks() const { return m_bookmarks; }

private:
    bool newPage()
    {
        footer();
        if (m_p && !m_writer.newPage())
            return false;
        ++m_page;
        m_y = 0;
        return !m_progress || m_progress(m_page, m_totalPages);
    }
    void ensure(double h)
    {
        if (m_y > 0 && m_y + h > m_height)
            newPage();
    }
    void footer()
    {
        if (!m_p)
            return;
        m_p->setFont(m_note);
        m_p->setPen(QColor(110, 110, 110));
        const QRectF r(0, m_height + mm(3), m_width, mm(5));
        m_p->drawText(r, Qt::AlignLeft | Qt::AlignVCenter, m_doc.footer);
        m_p->drawText(
            r, Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("page %1 of %2").arg(m_page).arg(m_totalPages));
    }
    void heading(const QString &title, bool bookmark)
    {
        const QFontMetricsF fm(m_h1, &m_writer);
        if (bookmark) {
            m_sections.push_back(m_page);
            m_bookmarks.emplace_back(title, m_page - 1, m_y);
        }
        if (m_p) {
            m_p->setFont(m_h1);
            m_p->setPen(QColor(20, 20, 20));
            m_p->drawText(QPointF(0, m_y + fm.ascent()), title);
            m_p->setPen(QPen(QColor(180, 180, 180), mm(0.2)));
            m_p->drawLine(QPointF(0, m_y + fm.height() + mm(1)), QPointF(m_width, m_y + fm.height() + mm(1)));
        }
        m_y += fm.height() + mm(4);
    }
    void text(const QString &s, const QFont &font, const QColor &c, double indent = 0, bool shaded = false)
    {
        const QFontMetricsF fm(font, &m_writer);
        const double pad = shaded ? mm(1.5) : 0;
        for (const QString &line : wrapText(s, font, m_width - indent - 2 * pad, &m_writer)) {
            ensure(fm.lineSpacing());
            if (m_p) {
                if (shaded)
                    m_p->fillRect(QRectF(indent, m_y, m_width - indent, fm.lineSpacing()), QColor(243, 243, 243));
                m_p->setFont(font);
                m_p->setPen(c);
                m_p->drawText(QPointF(indent + pad, m_y + fm.ascent()), line);
            }
            m_y += fm.lineSpacing();
        }
    }
    bool block(const Block &b)
    {
        if (const auto *p = std::get_if<Paragraph>(&b)) {
            switch (p->style) {
            case Paragraph::Body: text(p->text, m_body, QColor(20, 20, 20)); break;
            case Paragraph::Strong:
                ensure(mm(14)); // with what follows
                text(p->text, m_strong, QColor(20, 20, 20));
                break;
            case Paragraph::Note: text(p->text, m_note, QColor(90, 90, 90)); break;
            case Paragraph::Verbatim: text(p->text, m_mono, QColor(20, 20, 20), 0, true); break;
            }
            m_y += mm(2.5);
        } else if (const auto *t = std::get_if<Table>(&b)) {
            table(*t);
            m_y += mm(3);
        } else if (const auto *f = std::get_if<Figure>(&b)) {
            figure(*f);
            m_y += mm(3);
        }
        return !m_progress || m_progress(m_page, m_totalPages);
    }
    void table(const Table &t)
    {
        const int cols = int(t.headers.size());
        if (cols == 0)
            return;
        // Column widths: the given shares, else each column's natural width (capped), to the text width.
        std::vector<double> w(size_t(cols), 1.0);
        const QFontMetricsF fm(m_table, &m_writer), fh(m_tableHead, &m_writer);
        for (int c = 0; c < cols; ++c) {
            if (size_t(c) < t.widths.size()) {
                w[size_t(c)] = t.widths[size_t(c)];
            } else {
                double natural = fh.horizontalAdvance(t.headers[c]);
                for (const QStringList &r : t.rows)
                    natural = std::max(natural, fm.horizontalAdvance(r.value(c)));
                w[size_t(c)] = std::min(natural, m_width * 0.5) + mm(2);
            }
        }
        const double pad = mm(0.9);
        double sum = std::accumulate(w.begin(), w.end(), 0.0);
        for (double &x : w)
            x *= m_width / sum;
        // No header word broken: a column narrower than its longest header word takes the width from the others.
        std::vector<double> least(size_t(cols), 0.0);
        for (int c = 0; c < cols; ++c) {
            for (const QString &word : t.headers[c].split(QLatin1Char(' '), Qt::SkipEmptyParts))
                least[size_t(c)] = std::max(least[size_t(c)], fh.horizontalAdvance(word) + 2 * pad + mm(0.3));
        }
        for (int round = 0; round < 3; ++round) {
            double missing = 0, spare = 0;
            for (int c = 0; c < cols; ++c) {
                if (w[size_t(c)] < least[size_t(c)])
                    missing += least[size_t(c)] - w[size_t(c)];
                else
                    spare += w[size_t(c)] - least[size_t(c)];
            }
            if (missing <= 0 || spare <= 0)
                break;
            const double take = std::min(1.0, missing / spare);
            for (int c = 0; c < cols; ++c) {
                if (w[size_t(c)] < least[size_t(c)])
                    w[size_t(c)] = least[size_t(c)];
                else
                    w[size_t(c)] -= (w[size_t(c)] - least[size_t(c)]) * take;
            }
        }
        const auto rowHeight = [&](const QStringList &cells, const QFont &font) {
            const QFontMetricsF m(font, &m_writer);
            size_t lines = 1;
            for (int c = 0; c < cols; ++c)
                lines
                    = std::max<size_t>(lines, wrapText(cells.value(c), font, w[size_t(c)] - 2 * pad, &m_writer).size());
            return double(lines) * m.lineSpacing() + 2 * pad;
        };
        const auto drawRow = [&](const QStringList &cells, const QFont &font, double h, const QColor &ink, bool head) {
            if (!m_p)
                return;
            const QFontMetricsF m(font, &m_writer);
            if (head)
                m_p->fillRect(QRectF(0, m_y, m_width, h), QColor(232, 236, 242));
            double x = 0;
            m_p->setFont(font);
            m_p->setPen(ink);
            for (int c = 0; c < cols; ++c) {
                const bool right = size_t(c) < t.numeric.size() && t.numeric[size_t(c)] && !head;
                double ly = m_y + pad;
                for (const QString &line : wrapText(cells.value(c), font, w[size_t(c)] - 2 * pad, &m_writer)) {
                    const double lw = m.horizontalAdvance(line);
                    m_p->drawText(QPointF(right ? x + w[size_t(c)] - pad - lw : x + pad, ly + m.ascent()), line);
                    ly += m.lineSpacing();
                }
                x += w[size_t(c)];
            }
            m_p->setPen(QPen(QColor(205, 205, 205), mm(0.15)));
            m_p->drawLine(QPointF(0, m_y + h), QPointF(m_width, m_y + h));
            m_p->setPen(ink);
        };
        const double headH = rowHeight(t.headers, m_tableHead);
        ensure(headH + (t.rows.empty() ? 0 : rowHeight(t.rows.front(), m_table)));
        drawRow(t.headers, m_tableHead, headH, QColor(20, 20, 20), true);
        m_y += headH;
        for (size_t r = 0; r < t.rows.size(); ++r) {
            const double h = rowHeight(t.rows[r], m_table);
            if (m_y + h > m_height) {
                newPage();
                drawRow(t.headers, m_tableHead, headH, QColor(20, 20, 20), true); // the header again
                m_y += headH;
            }
            const bool alert = std::find(t.highlighted.begin(), t.highlighted.end(), r) != t.highlighted.end();
            drawRow(t.rows[r], m_table, h, alert ? QColor(190, 25, 0) : QColor(20, 20, 20), false);
            m_y += h;
        }
    }
    void figure(const Figure &f)
    {
        const QFontMetricsF fm(m_note, &m_writer);
        const double h = mm(f.heightMm);
        const QStringList caption = wrapText(f.caption, m_note, m_width, &m_writer);
        ensure(h + double(caption.size()) * fm.lineSpacing() + mm(2));
        if (m_p)
            paintFigure(f, QRectF(0, m_y, m_width, h));
        m_y += h + mm(1.5);
        text(f.caption, m_note, QColor(70, 70, 70));
    }
    void paintFigure(const Figure &f, const QRectF &target)
    {
        const double scale = m_dpi / kPlotDpi;
        const auto *heat = std::get_if<HeatmapFigure>(&f.content);
        // A heatmap leaves room at the right for its colour bar.
        const double legendW = heat ? mm(22) : 0;
        const int pxW = int((target.width() - legendW) / scale), pxH = int(target.height() / scale);
        QCustomPlot plot;
        plot.setAttribute(Qt::WA_DontShowOnScreen);
        plot.resize(pxW, pxH);
        QCPRange range;
        QImage image;
        if (const auto *c = std::get_if<CurveFigure>(&f.content)) {
            layOutCurveFigure(plot, *c, QSize(pxW, pxH));
        } else {
            pixelFonts(plot);
            if (const auto *hgm = std::get_if<HistogramFigure>(&f.content)) {
                histogramPlot(plot, *hgm);
            } else if (heat) {
                heatmapAxes(plot, *heat);
                image = heatmapImage(*heat, &range);
            }
        }
        m_p->save();
        m_p->translate(target.topLeft());
        m_p->scale(scale, scale);
        plot.toPainter(m_p, pxW, pxH);
        if (heat) {
            // The cells, one pixel each, stretched over the axis rect by the PDF viewer.
            const QRect ar = plot.axisRect()->rect();
            m_p->drawImage(QRectF(ar), image);
            // The flagged rows outlined.
            const double rowH = double(ar.height()) / double(heat->layers.size());
            m_p->setPen(QPen(QColor(230, 40, 20), 1.2));
            m_p->setBrush(Qt::NoBrush);
            for (const auto &[layer, note] : heat->flagged) {
                const int row = int(heat->layers.indexOf(layer));
                if (row >= 0)
                    m_p->drawRect(QRectF(ar.left(), ar.top() + rowH * row, ar.width(), rowH));
            }
            // The colour bar, in vector rectangles, with its range.
            const double barX = pxW + 6, barW = 10, barTop = ar.top(), barH = ar.height();
            QCPColorGradient g = reportGradient();
            const int steps = 48;
            for (int i = 0; i < steps; ++i) {
                const double v = range.lower + (range.upper - range.lower) * (1.0 - (i + 0.5) / steps);
                m_p->fillRect(QRectF(barX, barTop + barH * i / steps, barW, barH / steps + 0.3),
                    QColor::fromRgb(g.color(v, range, false)));
            }
            m_p->setPen(QColor(40, 40, 40));
            m_p->setFont(plotFont(8));
            m_p->drawText(QPointF(barX + barW + 2, barTop + 6), QString::number(range.upper, 'g', 4));
            m_p->drawText(QPointF(barX + barW + 2, barTop + barH), QString::number(range.lower, 'g', 4));
            m_p->save();
            m_p->translate(barX + barW + 16, barTop + barH / 2);
            m_p->rotate(-90);
            m_p->drawText(QRectF(-barH / 2, -6, barH, 12), Qt::AlignCenter, heat->scaleLabel);
            m_p->restore();
        }
        m_p->restore();
    }

    QPdfWriter &m_writer;
    const Document &m_doc;
    QCPPainter *m_p = nullptr;
    std::function<bool(int, int)> m_progress;
    int m_dpi = 300;
    double m_width = 0, m_height = 0, m_y = 0;
    int m_page = 1;
    int m_totalPages = 0;
    std::vector<int> m_sections;
    std::vector<int> m_pagesOfSections;
    std::vector<std::tuple<QString, int, double>> m_bookmarks;
    QFont m_body, m_strong, m_note, m_mono, m_table, m_tableHead, m_h1, m_title;
};

// Rewrites `from` into `to` with a bookmark per section (qpdf: Qt's PDF writer makes no outline).
bool addOutline(const QString &from, const QString &to, const std::vector<std::tuple<QString, int, double>> &marks,
    double topMarginPt, int dpi, QString *error)
{
    try {
        // The names outlive their use: QPDFWriter keeps the pointer it is given and opens the file in write().
        const QByteArray fromName = QFile::encodeName(from), toName = QFile::encodeName(to);
        QPDF pdf;
        pdf.processFile(fromName.constData());
        std::vector<QPDFPageObjectHelper> pages = QPDFPageDocumentHelper(pdf).getAllPages();
        QPDFObjectHandle outlines = pdf.makeIndirectObject(QPDFObjectHandle::parse("<< /Type /Outlines >>"));
        std::vector<QPDFObjectHandle> items;
        for (const auto &[title, page, y] : marks) {
            if (page < 0 || size_t(page) >= pages.size())
                continue;
            QPDFObjectHandle pageObject = pages[size_t(page)].getObjectHandle();
            const QPDFObjectHandle::Rectangle box = pageObject.getKey("/MediaBox").getArrayAsRectangle();
            const double top = box.ury - topMarginPt - y / dpi * 72.0;
            QPDFObjectHandle item = pdf.makeIndirectObject(QPDFObjectHandle::newDictionary());
            item.replaceKey("/Title", QPDFObjectHandle::newUnicodeString(title.toStdString()));
            item.replaceKey("/Parent", outlines);
            item.replaceKey("/Dest",
                QPDFObjectHandle::newArray({pageObject, QPDFObjectHandle::newName("/XYZ"), QPDFObjectHandle::newNull(),
                    QPDFObjectHandle::newReal(top, 2), QPDFObjectHandle::newNull()}));
            items.push_back(item);
        }
        for (size_t i = 0; i < items.size(); ++i) {
            if (i > 0)
                items[i].replaceKey("/Prev", items[i - 1]);
            if (i + 1 < items.size())
                items[i].replaceKey("/Next", items[i + 1]);
        }
        if (!items.empty()) {
            outlines.replaceKey("/First", items.front());
            outlines.replaceKey("/Last", items.back());
            outlines.replaceKey("/Count", QPDFObjectHandle::newInteger(int64_t(items.size())));
            pdf.getRoot().replaceKey("/Outlines", outlines);
            pdf.getRoot().replaceKey("/PageMode", QPDFObjectHandle::newName("/UseOutlines"));
        }
        QPDFWriter writer(pdf, toName.constData());
        writer.write();
    } catch (const std::exception &e) {
        *error = QStringLiteral("%1: adding the bookmarks failed: %2").arg(to, QString::fromLocal8Bit(e.what()));
        return false;
    }
    return true;
}

} // namespace

std::optional<QPageSize::PageSizeId> reportPageSize(const QString &name)
{
    if (name.compare(QLatin1String("A4"), Qt::CaseInsensitive) == 0)
        return QPageSize::A4;
    if (name.compare(QLatin1String("Letter"), Qt::CaseInsensitive) == 0)
        return QPageSize::Letter;
    return std::nullopt;
}

bool paintReport(const Document &document, const QString &path, const ReportRenderOptions &options,
    RenderedReport *rendered, PaintedReport *painted, QString *error, const std::function<bool(int, int)> &progress)
{
    const QString draft = path + QStringLiteral(".draft");
    const QMarginsF margins(18, 16, 18, 14); // mm
    QPdfWriter writer(draft);
    writer.setPageSize(QPageSize(options.pageSize));
    writer.setPageMargins(margins, QPageLayout::Millimeter);
    writer.setResolution(300);
    writer.setTitle(document.title);
    writer.setCreator(document.author);
    Flow flow(writer, document);
    // First the pages and where each section starts, then the painting with them.
    flow.run(nullptr, {});
    flow.setTotals(flow.pages(), flow.sectionPages());
    QCPPainter painter;
    if (!painter.begin(&writer)) {
        *error = QStringLiteral("%1: cannot write the PDF").arg(draft);
        QFile::remove(draft);
        return false;
    }
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    // The heatmaps' cells exactly: Qt would otherwise write large images as JPEG.
    painter.setRenderHint(QPainter::LosslessImageRendering);
    const bool done = flow.run(&painter, progress);
    painter.end();
    if (!done) {
        *error = QStringLiteral("cancelled");
        QFile::remove(draft);
        return false;
    }
    if (rendered) {
        rendered->pages = flow.pages();
        rendered->sections.clear();
        for (size_t i = 0; i < document.sections.size() && i < flow.sectionPages().size(); ++i)
            rendered->sections.emplace_back(document.sections[i].title, flow.sectionPages()[i]);
    }
    *painted = {draft, flow.bookmarks(), margins.top() / 25.4 * 72.0, writer.resolution()};
    return true;
}

bool finishReport(const PaintedReport &painted, const QString &path, QString *error)
{
    const QString outlined = path + QStringLiteral(".part");
    const auto cleanup = [&] {
        QFile::remove(painted.draft);
        QFile::remove(outlined);
    };
    if (!addOutline(painted.draft, outlined, painted.bookmarks, painted.topPoints, painted.resolution, error)) {
        cleanup();
        return false;
    }
    QFile::remove(painted.draft);
    if (QFileInfo::exists(path) && !QFile::remove(path)) {
        *error = QStringLiteral("%1: cannot replace the file").arg(path);
        cleanup();
        return false;
    }
    if (!QFile::rename(outlined, path)) {
        *error = QStringLiteral("%1: cannot write the file").arg(path);
        cleanup();
        return false;
    }
    return true;
}

bool renderReport(const Document &document, const QString &path, const ReportRenderOptions &options,
    RenderedReport *rendered, QString *error, const std::function<bool(int, int)> &progress)
{
    PaintedReport painted;
    return paintReport(document, path, options, rendered, &painted, error, progress)
        && finishReport(painted, path, error);
}

} // namespace fp8scope
