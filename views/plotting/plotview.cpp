#include "plotview.h"

#include "axisalign.h"
#include "qcp.h"
#include "textwrap.h"

#include <QFileDialog>
#include <QMenu>
#include <QMessageBox>
#include <QRegularExpression>
#include <QResizeEvent>
#include <QSaveFile>
#include <QScopeGuard>
#include <QSvgGenerator>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace fp8scope {

namespace {

// A plot laid out to nothing (a tab not in view, a dock collapsed, a window grabbed with hidden parts) keeps
// the size it had: QCustomPlot would otherwise replot into an empty buffer (an "inactive painter" warning
// a layer) and draw nothing worth keeping. It gets its real size with the next resize that has one.
class KeepSizeWhenEmpty : public QObject
{
public:
    using QObject::QObject;
    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (event->type() == QEvent::Resize && static_cast<QResizeEvent *>(event)->size().isEmpty())
            return true;
        return QObject::eventFilter(watched, event);
    }
};

} // namespace

PlotView::PlotView(const QString &name, QWidget *parent)
    : QWidget(parent)
    , m_controls(new QToolBar(this))
    , m_plot(new QCustomPlot(this))
{
    setObjectName(name);
    m_plot->setObjectName(name + QStringLiteral("Plot"));
    m_plot->setNoAntialiasingOnDrag(true);
    m_plot->installEventFilter(new KeepSizeWhenEmpty(m_plot));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->setSpacing(2);
    layout->addWidget(m_controls);
    layout->addWidget(m_plot, 1);
    m_controls->setObjectName(name + QStringLiteral("Controls"));
    m_controls->setMovable(false);
    m_controls->setFloatable(false);
    m_controls->setToolButtonStyle(Qt::ToolButtonTextOnly);
    m_controls->setContentsMargins(0, 0, 0, 0);

    auto *exportButton = new QToolButton(this);
    exportButton->setObjectName(name + QStringLiteral("Export"));
    exportButton->setText(tr("Export"));
    exportButton->setPopupMode(QToolButton::InstantPopup);
    auto *menu = new QMenu(exportButton);
    menu->addAction(tr("Plot as PNG, SVG or PDF..."), this, &PlotView::askExportPlot);
    menu->addAction(tr("Data as CSV..."), this, &PlotView::askExportCsv);
    exportButton->setMenu(menu);
    auto *spacer = new QWidget(this);
    spacer->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    m_spacerAction = m_controls->addWidget(spacer);
    m_controls->addWidget(exportButton);
    applyPalette();
}

PlotView::~PlotView()
{
    // Out of its axis group while the plot is whole (the group would align it as it is being destroyed).
    leaveXAxisGroup(m_plot);
}

QAction *PlotView::addControl(QWidget *widget, bool expanding)
{
    if (expanding) {
        // It takes the spare width, not the spacer beside Export.
        widget->setSizePolicy(QSizePolicy::Expanding, widget->sizePolicy().verticalPolicy());
        m_spacerAction->setVisible(false);
    }
    // Before the spacer that keeps Export at the right.
    const QList<QAction *> actions = m_controls->actions();
    return m_controls->insertWidget(actions.at(actions.size() - 2), widget);
}

QString PlotView::title() const
{
    return objectName();
}

QString PlotView::defaultFileName() const
{
    QString name = title().toLower();
    name.replace(QRegularExpression(QStringLiteral("[^a-z0-9.%_+]+")), QStringLiteral("-"));
    name.replace(QLatin1Char('%'), QStringLiteral("pct"));
    while (name.startsWith(QLatin1Char('-')))
        name.remove(0, 1);
    while (name.endsWith(QLatin1Char('-')))
        name.chop(1);
    return name.left(80).isEmpty() ? objectName() : name.left(80);
}

void PlotView::setAxesShown(bool shown)
{
    // Each element hidden keeps whether it was shown, so that showing again brings back only what was.
    static constexpr char kWas[] = "fp8scopeShownBeforeHidden";
    const auto apply = [shown](QCPLayerable *l) {
        if (!shown) {
            if (!l->property(kWas).isValid())
                l->setProperty(kWas, l->visible());
            l->setVisible(false);
        } else if (const QVariant was = l->property(kWas); was.isValid()) {
            l->setVisible(was.toBool());
            l->setProperty(kWas, QVariant());
        }
    };
    for (QCPAxisRect *rect : m_plot->axisRects()) {
        for (QCPAxis *axis : rect->axes()) {
            apply(axis);
            apply(axis->grid());
        }
    }
    for (QCPLayoutElement *e : m_plot->plotLayout()->elements(true)) {
        if (auto *scale = qobject_cast<QCPColorScale *>(e))
            apply(scale);
    }
}

bool PlotView::axesShown() const
{
    return m_plot->xAxis && m_plot->xAxis->visible();
}

void PlotView::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
}

void PlotView::applyPalette()
{
    const QPalette pal = palette();
    m_plot->setBackground(pal.base());
    const QColor fg = pal.color(QPalette::Text);
    QList<QCPAxis *> axes;
    for (QCPAxisRect *rect : m_plot->axisRects())
        axes << rect->axes();
    for (QCPLayoutElement *e : m_plot->plotLayout()->elements(true)) {
        if (auto *scale = qobject_cast<QCPColorScale *>(e))
            axes << scale->axis();
    }
    for (QCPAxis *a : axes) {
        a->setBasePen(QPen(fg));
        a->setTickPen(QPen(fg));
        a->setSubTickPen(QPen(fg));
        a->setTickLabelColor(fg);
        a->setLabelColor(fg);
        QColor grid = fg;
        grid.setAlpha(40);
        a->grid()->setPen(QPen(grid, 0, Qt::DotLine));
    }
    if (m_plot->legend) {
        m_plot->legend->setBrush(pal.base());
        m_plot->legend->setTextColor(fg);
        m_plot->legend->setBorderPen(QPen(fg));
    }
    m_plot->replot();
}

QFont PlotView::titleFont() const
{
    return QFont(m_plot->font().family(), 11, QFont::Bold);
}

QStringList PlotView::titleLines(int width) const
{
    // Broken between words (a long run name between its '_' or '-' parts too), never cut.
    QStringList lines = wrapText(title(), titleFont(), std::max(40, width - 16), m_plot);
    for (QString &line : lines)
        line = line.trimmed();
    return lines;
}

bool PlotView::exportPlot(const QString &path, QString *error, QSize size) const
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    const int w = size.isValid() ? size.width() : std::max(m_plot->width(), 640);
    const int h = size.isValid() ? size.height() : std::max(m_plot->height(), 400);
    // A file read away from the window says what it shows: a title row above the plot while it is written.
    m_plot->plotLayout()->insertRow(0);
    auto *heading = new QCPTextElement(m_plot, titleLines(w).join(QLatin1Char('\n')), titleFont());
    heading->setTextColor(palette().color(QPalette::Text));
    m_plot->plotLayout()->addElement(0, 0, heading);
    const auto dropHeading = qScopeGuard([this, heading] {
        m_plot->plotLayout()->remove(heading);
        m_plot->plotLayout()->simplify();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    });
    bool ok = false;
    if (suffix == QLatin1String("png")) {
        // As sharp as on screen: at the screen's device pixel ratio unless a size was asked.
        ok = m_plot->savePng(path, w, h, size.isValid() ? 1.0 : std::max(1.0, devicePixelRatioF()));
    } else if (suffix == QLatin1String("pdf")) {
        ok = m_plot->savePdf(path, w, h);
    } else if (suffix == QLatin1String("svg")) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(QSize(w, h));
        svg.setViewBox(QRect(0, 0, w, h));
        svg.setTitle(title());
        QCPPainter painter;
        ok = painter.begin(&svg);
        if (ok) {
            m_plot->toPainter(&painter, w, h);
            ok = painter.end();
        }
    } else {
        *error = tr("%1: choose a .png, .svg or .pdf file name").arg(path);
        return false;
    }
    if (!ok)
        *error = tr("%1: could not be written").arg(path);
    return ok;
}

bool PlotView::exportCsv(const QString &path, QString *error) const
{
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Text) || f.write(csv().toUtf8()) < 0 || !f.commit()) {
        *error = tr("%1: %2").arg(path, f.errorString());
        return false;
    }
    return true;
}

void PlotView::askExportPlot()
{
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export plot"), defaultFileName() + QStringLiteral(".png"), tr("Images (*.png *.svg *.pdf)"));
    QString error;
    if (!path.isEmpty() && !exportPlot(path, &error))
        QMessageBox::warning(this, tr("Export plot"), error);
}

void PlotView::askExportCsv()
{
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export data"), defaultFileName() + QStringLiteral(".csv"), tr("CSV (*.csv)"));
    QString error;
    if (!path.isEmpty() && !exportCsv(path, &error))
        QMessageBox::warning(this, tr("Export data"), error);
}

} // namespace fp8scope
