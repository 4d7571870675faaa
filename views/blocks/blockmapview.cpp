#include "blockmapview.h"

#include "views/models/tableexport.h"
#include "views/plotting/heatgradient.h"
#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include "core/formats/fp8math.h"
#include "core/numerics/blockcensus.h"
#include "core/query/statnames.h"
#include "core/tensors/tensorreader.h"

#include <QComboBox>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QMouseEvent>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>

#include <cmath>

Q_DECLARE_METATYPE(std::shared_ptr<fp8scope::BlockMapResult>)

namespace fp8scope {

namespace {

constexpr int kListed = 200; // the worst blocks the list shows

// The value a cell is coloured by: log2 of a scale or amax (0 and non-finite: NaN, drawn as the lowest
// colour), a percentage, an error.
double shown(const BlockMap &m, BlockField f, int64_t i)
{
    const double v = m.value(f, i);
    if (f == BlockField::Scale || f == BlockField::Amax)
        return v > 0 && std::isfinite(v) ? std::log2(v) : std::numeric_limits<double>::quiet_NaN();
    return v;
}

QString num(double v)
{
    return QString::number(v, 'g', 4);
}

bool isTeDumpFile(const Dump &d)
{
    return d.path.endsWith(QLatin1String(".pt")) || d.path.endsWith(QLatin1String(".pth"));
}

} // namespace

BlockMapView::BlockMapView(Workspace *workspace, Selection *selection, QWidget *parent)
    : PlotView(QStringLiteral("blocks"), parent)
    , m_workspace(workspace)
    , m_selection(selection)
    , m_recipeBox(new QComboBox(this))
    , m_fieldBox(new QComboBox(this))
    , m_sourceBox(new QComboBox(this))
    , m_status(new QLabel(this))
    , m_tabs(new QTabWidget(this))
    , m_table(newTableView(QStringLiteral("blocksTable"), this))
    , m_model(new QStandardItemModel(this))
    , m_blockPlot(new QCustomPlot(this))
    , m_blockBars(new QCPBars(m_blockPlot->xAxis, m_blockPlot->yAxis))
    , m_scalePlot(new QCustomPlot(this))
    , m_scaleBars(new QCPBars(m_scalePlot->xAxis, m_scalePlot->yAxis))
    , m_colorMap(new QCPColorMap(plot()->xAxis, plot()->yAxis))
    , m_colorScale(new QCPColorScale(plot()))
    , m_mark(new QCPItemRect(plot()))
    , m_slot(Workspace::newSlot(QStringLiteral("blocks")))
{
    m_recipeBox->setObjectName(QStringLiteral("blocksRecipe"));
    m_fieldBox->setObjectName(QStringLiteral("blocksField"));
    m_sourceBox->setObjectName(QStringLiteral("blocksSource"));
    m_status->setObjectName(QStringLiteral("blocksStatus"));
    m_tabs->setObjectName(QStringLiteral("blocksTabs"));
    m_blockPlot->setObjectName(QStringLiteral("blockValuesPlot"));
    m_scalePlot->setObjectName(QStringLiteral("blockScalesPlot"));
    for (const char *name : {"mxfp8", "mxfp8-ocp", "mxfp8-col", "nvfp4", "block1x128", "block128x128",
             "block1x128-fp32", "block128x128-fp32", "current", "delayed"})
        m_recipeBox->addItem(QString::fromLatin1(name));
    m_recipeBox->setToolTip(tr("The block recipe the tensor's blocks are scaled under (a per-tensor recipe is one "
                               "block, for comparison)"));
    for (BlockField f :
        {BlockField::RelError, BlockField::Underflow, BlockField::Saturated, BlockField::Scale, BlockField::Amax})
        m_fieldBox->addItem(blockFieldTitle(f), int(f));
    m_fieldBox->setToolTip(tr("What the blocks are coloured by"));
    m_sourceBox->setToolTip(tr("The recipe recomputed from the tensor, or what Transformer Engine made of it (a "
                               "DumpTensors file's quantized copies)"));
    addControl(m_recipeBox);
    addControl(m_fieldBox);
    QAction *sourceAction = addControl(m_sourceBox);
    sourceAction->setVisible(false);

    plot()->xAxis->setLabel(tr("block column"));
    plot()->yAxis->setLabel(tr("block row"));
    plot()->yAxis->setRangeReversed(true);
    plot()->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot()->plotLayout()->addElement(0, 1, m_colorScale);
    m_colorScale->setType(QCPAxis::atRight);
    m_colorMap->setColorScale(m_colorScale);
    m_colorMap->setGradient(heatGradient());
    m_colorMap->setInterpolate(false);
    // Each cell drawn whole, from -0.5 to N - 0.5 in block units (a tight boundary halves the edge cells).
    m_colorMap->setTightBoundary(false);
    for (QCPAxis *axis : {plot()->xAxis, plot()->yAxis}) {
        QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        axis->setTicker(ticker);
    }
    plot()->setToolTip(tr("Wheel: zoom; drag: pan; double-click: the whole tensor; click a block to select it"));
    m_mark->setPen(QPen(QColor(230, 30, 30), 2));
    m_mark->setBrush(Qt::NoBrush);
    m_mark->setVisible(false);
    plot()->installEventFilter(this);
    m_empty = new QCPItemText(plot());
    m_empty->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_empty->position->setCoords(0.5, 0.5);
    m_empty->setClipToAxisRect(false);
    m_empty->setColor(palette().color(QPalette::Text));
    plot()->setMouseTracking(true);

    // Below the map: the worst blocks, the selected block's values, the scales.
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_tabs->addTab(m_status, tr("Summary"));
    m_tabs->addTab(m_table, tr("Worst blocks"));
    m_tabs->addTab(m_blockPlot, tr("Selected block"));
    m_tabs->addTab(m_scalePlot, tr("Block scales"));
    for (QCustomPlot *p : {m_blockPlot, m_scalePlot}) {
        p->setMinimumHeight(120);
        p->yAxis->setLabel(tr("blocks"));
    }
    m_blockPlot->xAxis->setLabel(tr("log2 |x × block scale| (the value cast)"));
    m_blockPlot->plotLayout()->insertRow(0);
    m_blockTitle = new QCPTextElement(m_blockPlot, tr("Click a block on the map, or a row of the list"));
    m_blockPlot->plotLayout()->addElement(0, 0, m_blockTitle);
    m_blockPlot->yAxis->setLabel(tr("elements"));
    m_scalePlot->xAxis->setLabel(tr("log2 scale_inv"));
    for (QCPBars *b : {m_blockBars, m_scaleBars}) {
        b->setWidth(1.0);
        QColor fill = palette().color(QPalette::Highlight);
        b->setPen(QPen(fill.darker(130)));
        fill.setAlpha(170);
        b->setBrush(fill);
    }
    m_status->setWordWrap(true);
    m_status->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_status->setMargin(6);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *box = static_cast<QVBoxLayout *>(layout());
    box->addWidget(m_tabs, 1);
    box->setStretchFactor(plot(), 1);

    connect(m_recipeBox, &QComboBox::currentIndexChanged, this, &BlockMapView::request);
    connect(m_fieldBox, &QComboBox::currentIndexChanged, this, [this] {
        updateScaleLabel();
        rebuildCells();
        plot()->replot();
    });
    connect(m_sourceBox, &QComboBox::currentIndexChanged, this, [this] {
        m_selected = -1;
        m_recipeBox->setEnabled(m_sourceBox->currentIndex() <= 0);
        redraw();
        Q_EMIT mapChanged();
    });
    // The cells follow the axes' size in pixels: rebuilt when a layout changes it (before the plot draws).
    connect(plot(), &QCustomPlot::afterLayout, this, [this] {
        if (!m_rebuilding && plot()->axisRect()->rect().size() != m_cellArea)
            rebuildCells();
    });
    connect(plot()->xAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this, [this] {
        if (!m_rebuilding)
            rebuildCells();
    });
    connect(plot()->yAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this, [this] {
        if (!m_rebuilding)
            rebuildCells();
    });
    connect(
        m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex &current) {
            if (!current.isValid())
                return;
            const QVariant block = m_model->item(current.row(), 0)->data(Qt::UserRole);
            if (block.isValid() && block.toLongLong() != m_selected)
                selectBlock(block.toLongLong());
        });
    connect(workspace, &Workspace::changed, this, [this](Workspace::Parts parts) {
        if (parts & (Workspace::Loaded | Workspace::Closed))
            reloadDumps();
    });
    connect(selection, &Selection::changed, this, &BlockMapView::selectionChanged);
    reloadDumps();
}

BlockMapView::~BlockMapView()
{
    if (m_ticket)
        m_workspace->jobs().cancel(m_ticket);
}

void BlockMapView::setRecipe(const QString &recipe, const QString &format)
{
    // The element format where the recipe takes one (a gradient's E5M2); NVFP4 and BF16 keep their own.
    m_format = format.isEmpty() ? std::nullopt : formatFromName(format.toLower());
    const int i = m_recipeBox->findText(recipe.section(QLatin1Char(':'), 0, 0));
    if (i >= 0 && i != m_recipeBox->currentIndex())
        m_recipeBox->setCurrentIndex(i);
    else
        request();
}

void BlockMapView::setField(BlockField field)
{
    m_fieldBox->setCurrentIndex(std::max(0, m_fieldBox->findData(int(field))));
}

BlockField BlockMapView::field() const
{
    return BlockField(m_fieldBox->currentData().toInt());
}

QStringList BlockMapView::sources() const
{
    QStringList out;
    for (int i = 0; i < m_sourceBox->count(); ++i)
        out << m_sourceBox->itemData(i).toString();
    return out;
}

void BlockMapView::setSource(const QString &source)
{
    m_sourceBox->setCurrentIndex(std::max(0, m_sourceBox->findData(source)));
}

const BlockMap *BlockMapView::shownMap() const
{
    if (!m_result)
        return nullptr;
    const QString source = m_sourceBox->currentData().toString();
    if (m_result->te && source != QLatin1String("recipe")) {
        for (const TeCopyCheck &c : m_result->te->copies) {
            if (c.copy == source)
                return &c.map;
        }
    }
    return &m_result->map;
}

void BlockMapView::reloadDumps()
{
    m_dumps.clear();
    m_recipeRun = {};
    for (const WorkspaceRun &r : m_workspace->runs())
        m_dumps[r.run.ref] = m_workspace->catalog().dumps(r.run.ref);
    selectionChanged();
}

void BlockMapView::selectionChanged()
{
    const RunRef r = m_selection->run();
    // The recipe follows the run's own where it scales by blocks; a pick in the box holds for the run.
    if (r != m_recipeRun) {
        m_recipeRun = r;
        m_format.reset();
        if (const WorkspaceRun *run = m_workspace->run(r)) {
            const QString name
                = tensorRecipe(run->run.recipe, m_selection->tensor()).section(QLatin1Char(':'), 0, 0).trimmed();
            QString error;
            const std::optional<Recipe> recipe = Recipe::parse(name, std::nullopt, &error);
            const int i = recipe && hasBlockScales(*recipe) ? m_recipeBox->findText(name) : -1;
            if (i >= 0 && i != m_recipeBox->currentIndex()) {
                const QSignalBlocker block(m_recipeBox);
                m_recipeBox->setCurrentIndex(i);
            }
        }
    }
    std::optional<Dump> pick;
    if (const auto dumps = m_dumps.find(r); dumps != m_dumps.end())
        pick = Workspace::dumpNearest(dumps->second, m_selection->layer(), m_selection->tensor(), m_selection->step());
    const bool same = pick && m_dump && pick->run == m_dump->run && pick->file == m_dump->file
        && pick->record.dataset == m_dump->record.dataset;
    if (same && (m_result || m_ticket))
        return;
    // A DumpTensors file: the recipe TE quantized it under, as the CLI takes it.
    if (pick && isTeDumpFile(*pick)) {
        const QString dataset = pick->record.dataset;
        const QString base = dataset.left(dataset.lastIndexOf(QLatin1Char('.')) + 1);
        Problem problem;
        for (const QString &q : teQuantizedEntries(pick->path, &problem)) {
            if (q.left(q.lastIndexOf(QLatin1Char('.')) + 1) != base)
                continue;
            if (const std::optional<Recipe> r = teRecipe(pick->path, q, &problem)) {
                m_format = r->format;
                const int i = m_recipeBox->findText(r->name());
                if (i >= 0 && i != m_recipeBox->currentIndex()) {
                    const QSignalBlocker block(m_recipeBox);
                    m_recipeBox->setCurrentIndex(i);
                }
            }
            break;
        }
    }
    m_dump = pick;
    request();
}

void BlockMapView::showEvent(QShowEvent *event)
{
    PlotView::showEvent(event);
    if (m_requestPending)
        request();
}

void BlockMapView::request()
{
    if (m_ticket)
        m_workspace->jobs().cancel(m_ticket);
    m_ticket = 0;
    if (!isVisible()) {
        m_requestPending = true; // a hidden map costs nothing; it is computed when shown
        return;
    }
    m_requestPending = false;
    m_result.reset();
    m_selected = -1;
    m_error.clear();
    QString error;
    const QString name = m_recipeBox->currentText();
    const bool ownFormat = name == QLatin1String("nvfp4") || name == QLatin1String("bf16");
    const std::optional<Recipe> recipe = Recipe::parse(name, ownFormat ? std::nullopt : m_format, &error);
    if (!m_dump || !recipe) {
        redraw();
        Q_EMIT mapChanged();
        return;
    }
    const Dump dump = *m_dump;
    const Recipe r = *recipe;
    const QString key = QStringLiteral("blocks|") + dump.spec() + QLatin1Char('|') + r.name();
    m_ticket = m_workspace->jobs().submit(
        {key, m_slot,
            [dump, r](JobContext &ctx) -> QVariant {
                Problem problem;
                auto reader = openTensor(dump.spec(), &problem);
                if (!reader) {
                    ctx.setError(problem.toString());
                    return {};
                }
                const auto progress = [&ctx, &dump](int64_t done, int64_t total) {
                    ctx.setProgress(done, total, QObject::tr("Mapping the blocks of %1").arg(dump.record.layer));
                    return !ctx.isCancelled();
                };
                auto result = std::make_shared<BlockMapResult>();
                std::optional<BlockMap> map = computeBlockMap(*reader, r, &problem, 0, progress);
                if (!map) {
                    ctx.setError(problem.toString());
                    return {};
                }
                result->map = std::move(*map);
                if (const std::optional<Recipe> fp32 = fp32ScaledCounterpart(r)) {
                    if (std::optional<BlockMap> m = computeBlockMap(*reader, *fp32, &problem, 0, progress))
                        result->fp32 = std::move(*m);
                }
                // A DumpTensors file: TE's quantization of this tensor, compared.
                if (isTeDumpFile(dump)) {
                    const QString dataset = dump.record.dataset;
                    const QString base = dataset.left(dataset.lastIndexOf(QLatin1Char('.')) + 1);
                    Problem p;
                    for (const QString &q : teQuantizedEntries(dump.path, &p)) {
                        if (q.left(q.lastIndexOf(QLatin1Char('.')) + 1) != base)
                            continue;
                        result->te = checkTeQuantized(dump.path, q, &p);
                        if (!result->te)
                            result->teError = p.message;
                        break;
                    }
                }
                return QVariant::fromValue(result);
            }},
        this, [this](const JobResult &r) {
            m_ticket = 0;
            if (!r.error.isEmpty() || !r.value.isValid()) {
                m_error = r.error.isEmpty() ? tr("cancelled") : r.error;
                redraw();
                Q_EMIT mapChanged();
                return;
            }
            computed(r.value.value<std::shared_ptr<BlockMapResult>>());
        });
    redraw();
}

void BlockMapView::computed(std::shared_ptr<BlockMapResult> result)
{
    m_result = std::move(result);
    const QString previous = m_sourceBox->currentData().toString();
    {
        const QSignalBlocker block(m_sourceBox);
        m_sourceBox->clear();
        m_sourceBox->addItem(tr("Recomputed: %1").arg(m_result->map.recipe.name()), QStringLiteral("recipe"));
        if (m_result->te) {
            for (const TeCopyCheck &c : m_result->te->copies)
                m_sourceBox->addItem(tr("As TE quantized it: %1").arg(c.copy), c.copy);
        }
        m_sourceBox->setCurrentIndex(std::max(0, m_sourceBox->findData(previous)));
    }
    for (QAction *a : controlBar()->actions()) {
        if (controlBar()->widgetForAction(a) == m_sourceBox)
            a->setVisible(m_sourceBox->count() > 1);
    }
    m_recipeBox->setEnabled(m_sourceBox->currentIndex() <= 0);
    redraw();
    Q_EMIT mapChanged();
}

QString BlockMapView::recipeShown() const
{
    const BlockMap *m = shownMap();
    return m ? m->recipe.name() : m_recipeBox->currentText();
}

QSize BlockMapView::cellCount() const
{
    return {m_colorMap->data()->keySize(), m_colorMap->data()->valueSize()};
}

void BlockMapView::rebuildCells()
{
    const BlockMap *m = shownMap();
    if (!m || m->blocks() == 0) {
        m_colorMap->data()->clear();
        return;
    }
    const QCPRange xr = plot()->xAxis->range();
    const QCPRange yr = plot()->yAxis->range();
    const int64_t c0 = std::clamp<int64_t>(int64_t(std::floor(xr.lower + 0.5)), 0, m->gridCols - 1);
    const int64_t c1 = std::clamp<int64_t>(int64_t(std::ceil(xr.upper + 0.5)), c0 + 1, m->gridCols);
    const int64_t r0 = std::clamp<int64_t>(int64_t(std::floor(yr.lower + 0.5)), 0, m->gridRows - 1);
    const int64_t r1 = std::clamp<int64_t>(int64_t(std::ceil(yr.upper + 0.5)), r0 + 1, m->gridRows);
    // At most a cell per pixel of the axes: each cell the largest value of the blocks it covers, so that an
    // outlier block stays visible at any zoom.
    const QRect area = plot()->axisRect()->rect();
    m_cellArea = area.size();
    // At least two cells a dimension (QCustomPlot draws a single one with no width): one block then spans two.
    const int nx = int(std::max<int64_t>(2, std::min<int64_t>(c1 - c0, std::max(area.width(), 16))));
    const int ny = int(std::max<int64_t>(2, std::min<int64_t>(r1 - r0, std::max(area.height(), 16))));
    const BlockField f = field();
    std::vector<double> cells(size_t(nx) * size_t(ny), std::numeric_limits<double>::quiet_NaN());
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t cy = (r - r0) * ny / (r1 - r0);
        for (int64_t c = c0; c < c1; ++c) {
            const int64_t cx = (c - c0) * nx / (c1 - c0);
            double &cell = cells[size_t(cy * nx + cx)];
            const double v = shown(*m, f, r * m->gridCols + c);
            if (std::isnan(cell) || v > cell)
                cell = v;
        }
    }
    // Cells finer than the blocks (a dimension of one block) take the block at their centre.
    for (int y = 0; y < ny; ++y) {
        for (int x = 0; x < nx; ++x) {
            double &cell = cells[size_t(y) * size_t(nx) + size_t(x)];
            if (!std::isnan(cell))
                continue;
            const int64_t c = c0 + int64_t((x + 0.5) * double(c1 - c0) / nx);
            const int64_t r = r0 + int64_t((y + 0.5) * double(r1 - r0) / ny);
            cell = shown(*m, f, std::min(r, r1 - 1) * m->gridCols + std::min(c, c1 - 1));
        }
    }
    m_rebuilding = true;
    QCPColorMapData *data = m_colorMap->data();
    data->setSize(nx, ny);
    const double cw = double(c1 - c0) / nx;
    const double ch = double(r1 - r0) / ny;
    data->setRange(QCPRange(double(c0) - 0.5 + cw / 2, double(c1) - 0.5 - cw / 2),
        QCPRange(double(r0) - 0.5 + ch / 2, double(r1) - 0.5 - ch / 2));
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int64_t i = 0; i < m->blocks(); ++i) {
        const double v = shown(*m, f, i);
        if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    if (!std::isfinite(lo))
        lo = hi = 0;
    if (f == BlockField::Underflow || f == BlockField::Saturated) {
        lo = 0;
        hi = 100;
    }
    if (hi <= lo)
        hi = lo + 1;
    for (int y = 0; y < ny; ++y) {
        for (int x = 0; x < nx; ++x) {
            const double v = cells[size_t(y * nx + x)];
            data->setCell(x, y, std::isnan(v) ? lo : v);
        }
    }
    m_colorMap->setDataRange(QCPRange(lo, hi));
    m_rebuilding = false;
}

void BlockMapView::redraw()
{
    const BlockMap *m = shownMap();
    setAxesShown(m != nullptr);
    m_mark->setVisible(false);
    if (m) {
        m_rebuilding = true;
        plot()->xAxis->setRange(-0.5, double(m->gridCols) - 0.5);
        plot()->yAxis->setRange(-0.5, double(m->gridRows) - 0.5);
        m_rebuilding = false;
        const BlockField f = field();
        m_colorScale->axis()->setLabel(f == BlockField::Scale ? tr("log2 scale_inv")
                : f == BlockField::Amax                       ? tr("log2 amax")
                                                              : blockFieldTitle(f));
        rebuildCells();
    } else {
        m_colorMap->data()->clear();
    }
    fillTable();
    drawScaleHistogram();
    drawBlockHistogram();
    updateStatus();
    plot()->replot();
}

void BlockMapView::resetZoom()
{
    const BlockMap *m = shownMap();
    if (!m)
        return;
    m_rebuilding = true;
    plot()->xAxis->setRange(-0.5, double(m->gridCols) - 0.5);
    plot()->yAxis->setRange(-0.5, double(m->gridRows) - 0.5);
    m_rebuilding = false;
    rebuildCells();
}

bool BlockMapView::shownTransposed() const
{
    const BlockMap *m = shownMap();
    if (!m || !m_result || !m_result->te || m == &m_result->map)
        return false;
    for (const TeCopyCheck &c : m_result->te->copies) {
        if (&c.map == m)
            return c.transposed;
    }
    return false;
}

void BlockMapView::updateScaleLabel()
{
    const BlockField f = field();
    m_colorScale->axis()->setLabel(f == BlockField::Scale ? tr("log2 scale_inv")
            : f == BlockField::Amax                       ? tr("log2 amax")
                                                          : blockFieldTitle(f));
}

void BlockMapView::fillTable()
{
    m_model->clear();
    m_model->setHorizontalHeaderLabels({tr("Block"), tr("Rows"), tr("Columns"), tr("Scale"), tr("Amax"),
        tr("Flushed %"), tr("Saturated %"), tr("Mean rel. error"), tr("Flagged")});
    const BlockMap *m = shownMap();
    if (!m)
        return;
    for (int64_t i : m->ranked(kListed)) {
        const int64_t r0 = m->firstRow(i), c0 = m->firstCol(i);
        const std::optional<int> e = m->scaleExponent(i);
        QList<QStandardItem *> row {
            new QStandardItem(QStringLiteral("(%1, %2)").arg(i / m->gridCols).arg(i % m->gridCols)),
            new QStandardItem(QStringLiteral("%1-%2").arg(r0).arg(std::min(m->rows, r0 + m->blockRows) - 1)),
            new QStandardItem(QStringLiteral("%1-%2").arg(c0).arg(std::min(m->cols, c0 + m->blockCols) - 1)),
            new QStandardItem(e ? QStringLiteral("2^%1").arg(*e) : num(m->scale[size_t(i)])),
            new QStandardItem(num(m->amax[size_t(i)])), new QStandardItem(num(m->underflowPct(i))),
            new QStandardItem(num(m->saturatedPct(i))), new QStandardItem(num(m->relError(i))),
            new QStandardItem(m->flagged(i) ? tr("yes") : QString())};
        row.front()->setData(qlonglong(i), Qt::UserRole);
        for (QStandardItem *item : row)
            item->setEditable(false);
        m_model->appendRow(row);
    }
}

void BlockMapView::drawScaleHistogram()
{
    m_scaleBars->data()->clear();
    const BlockMap *m = shownMap();
    m_scalePlot->xAxis->setTickLabels(m != nullptr);
    m_scalePlot->yAxis->setTickLabels(m != nullptr);
    if (m) {
        int64_t zero = 0;
        QVector<double> keys, values;
        double ymax = 1;
        for (const auto &[log2, n] : m->scaleHistogram(&zero)) {
            keys << log2;
            values << double(n);
            ymax = std::max(ymax, double(n));
        }
        m_scaleBars->setData(keys, values, true);
        if (!keys.isEmpty())
            m_scalePlot->xAxis->setRange(keys.front() - 1, keys.back() + 1);
        m_scalePlot->yAxis->setRange(0, ymax * 1.1);
        m_scaleBars->setName(zero ? tr("%1 blocks with scale 0").arg(zero) : QString());
    }
    m_scalePlot->replot();
}

void BlockMapView::drawBlockHistogram()
{
    m_blockBars->data()->clear();
    m_blockPlot->clearItems();
    const BlockMap *m = shownMap();
    const bool drawn = m && m_selected >= 0 && m_dump;
    m_blockPlot->xAxis->setTickLabels(drawn);
    m_blockPlot->yAxis->setTickLabels(drawn);
    if (!drawn) {
        m_blockTitle->setText(m ? tr("Click a block on the map, or a row of the list") : QString());
        m_blockPlot->replot();
        return;
    }
    // The block's values, read from the dump (a column-wise TE copy's view is the tensor's transpose).
    Problem problem;
    auto reader = openTensor(m_dump->spec(), &problem);
    bool transposed = false;
    if (m_result && m_result->te && m != &m_result->map) {
        for (const TeCopyCheck &c : m_result->te->copies)
            transposed = transposed || (&c.map == m && c.transposed);
    }
    const std::optional<std::vector<float>> values
        = reader ? blockValues(*reader, *m, m_selected, &problem, transposed) : std::nullopt;
    if (!values) {
        m_blockTitle->setText(tr("The values of block (%1, %2) could not be read: %3")
                                  .arg(m_selected / m->gridCols)
                                  .arg(m_selected % m->gridCols)
                                  .arg(problem.message));
        m_blockPlot->replot();
        return;
    }
    const float scale = m->scale[size_t(m_selected)];
    const double encode = scale > 0 ? 1.0 / double(scale) : 0.0;
    std::map<int, int64_t> bins;
    for (float v : *values) {
        const double s = std::fabs(double(v) * encode);
        if (s > 0 && std::isfinite(s))
            ++bins[int(std::floor(std::log2(s)))];
    }
    QVector<double> keys, counts;
    double ymax = 1;
    for (const auto &[k, n] : bins) {
        keys << k + 0.5;
        counts << double(n);
        ymax = std::max(ymax, double(n));
    }
    m_blockBars->setData(keys, counts, true);
    int64_t flushed = 0;
    for (float v : *values) {
        if (v != 0.0f && std::isfinite(v)
            && fp8math::decodeCode(fp8math::castToCode(float(double(v) * encode), m->recipe.format), m->recipe.format)
                == 0.0f)
            ++flushed;
    }
    m_blockBars->setName(tr("%1 values, %2 flushed to zero").arg(values->size()).arg(flushed));
    m_blockTitle->setText(
        tr("Block (%1, %2): %3 values, %4 flushed to zero, scale %5\nlines: min subnormal (dotted), min normal "
           "(dashed), max %6 (solid)")
            .arg(m_selected / m->gridCols)
            .arg(m_selected % m->gridCols)
            .arg(values->size())
            .arg(flushed)
            .arg(m->scaleExponent(m_selected) ? QStringLiteral("2^%1").arg(*m->scaleExponent(m_selected)) : num(scale))
            .arg(double(fp8math::formatSpec(m->recipe.format).maxFinite), 0, 'g', 6));
    const fp8math::FormatSpec spec = fp8math::formatSpec(m->recipe.format);
    const double lSub = std::log2(spec.minSubnormal), lMax = std::log2(spec.maxFinite);
    double xlo = std::min(keys.isEmpty() ? lSub : keys.front() - 1.5, lSub - 2);
    double xhi = std::max(keys.isEmpty() ? lMax : keys.back() + 1.5, lMax + 2);
    m_blockPlot->xAxis->setRange(xlo, xhi);
    m_blockPlot->yAxis->setRange(0, ymax * 1.15);
    const QColor text = palette().color(QPalette::Text);
    const auto line = [&](double x, const QString &label, Qt::PenStyle style) {
        auto *l = new QCPItemStraightLine(m_blockPlot);
        l->point1->setCoords(x, 0);
        l->point2->setCoords(x, 1);
        l->setPen(QPen(text, 1, style));
        // Named in the title, not beside the line: a short plot has no room for upright labels, and lines a
        // binade or two apart would overlap level ones.
        (void)label;
    };
    line(lSub, tr("min subnormal"), Qt::DotLine);
    line(std::log2(spec.minNormal), tr("min normal"), Qt::DashLine);
    line(lMax, tr("max %1").arg(double(spec.maxFinite), 0, 'g', 6), Qt::SolidLine);
    m_blockPlot->replot();
}

int64_t BlockMapView::blockAt(const QPoint &pixel) const
{
    const BlockMap *m = shownMap();
    if (!m || !plot()->axisRect()->rect().contains(pixel))
        return -1;
    const int64_t c = std::llround(plot()->xAxis->pixelToCoord(pixel.x()));
    const int64_t r = std::llround(plot()->yAxis->pixelToCoord(pixel.y()));
    if (c < 0 || r < 0 || c >= m->gridCols || r >= m->gridRows)
        return -1;
    return r * m->gridCols + c;
}

void BlockMapView::selectBlock(int64_t index)
{
    const BlockMap *m = shownMap();
    if (!m || index < 0 || index >= m->blocks())
        return;
    m_selected = index;
    const double r = double(index / m->gridCols), c = double(index % m->gridCols);
    m_mark->topLeft->setCoords(c - 0.5, r - 0.5);
    m_mark->bottomRight->setCoords(c + 0.5, r + 0.5);
    m_mark->setVisible(true);
    // A block picked in the list but out of view: the view moves to it, at the same zoom.
    QCPAxis *x = plot()->xAxis, *y = plot()->yAxis;
    if (!x->range().contains(c) || !y->range().contains(r)) {
        x->setRange(c, x->range().size(), Qt::AlignCenter);
        y->setRange(r, y->range().size(), Qt::AlignCenter);
    }
    // The list's row of the block, where it is listed.
    for (int row = 0; row < m_model->rowCount(); ++row) {
        if (m_model->item(row, 0)->data(Qt::UserRole).toLongLong() == index) {
            const QSignalBlocker block(m_table->selectionModel());
            m_table->selectRow(row);
            break;
        }
    }
    drawBlockHistogram();
    updateStatus();
    plot()->replot();
    Q_EMIT blockSelected(index);
}

bool BlockMapView::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == plot()) {
        if (event->type() == QEvent::MouseButtonPress) {
            m_pressAt = static_cast<QMouseEvent *>(event)->pos();
        } else if (event->type() == QEvent::MouseButtonRelease) {
            const QPoint at = static_cast<QMouseEvent *>(event)->pos();
            // A click, not the end of a drag: select the block under it.
            if ((at - m_pressAt).manhattanLength() < 4) {
                const int64_t b = blockAt(at);
                if (b >= 0) {
                    selectBlock(b);
                    m_tabs->setCurrentWidget(m_blockPlot);
                }
            }
        } else if (event->type() == QEvent::MouseButtonDblClick) {
            resetZoom();
            plot()->replot();
            return true;
        } else if (event->type() == QEvent::MouseMove) {
            const QPoint at = static_cast<QMouseEvent *>(event)->pos();
            const int64_t b = blockAt(at);
            const BlockMap *m = shownMap();
            if (b >= 0 && m) {
                // In the tensor's own rows and columns (a column-wise copy's view is its transpose).
                const int64_t r0 = m->firstRow(b), r1 = std::min(m->rows, r0 + m->blockRows) - 1;
                const int64_t c0 = m->firstCol(b), c1 = std::min(m->cols, c0 + m->blockCols) - 1;
                const bool t = shownTransposed();
                const auto span = [](int64_t a, int64_t z) {
                    return a == z ? QString::number(a) : QStringLiteral("%1-%2").arg(a).arg(z);
                };
                const std::optional<int> e = m->scaleExponent(b);
                QToolTip::showText(plot()->mapToGlobal(at),
                    tr("block (%1, %2): tensor rows %3, columns %4\nscale %5, amax %6\nflushed %7 %, saturated %8 %, "
                       "mean relative error %9")
                        .arg(b / m->gridCols)
                        .arg(b % m->gridCols)
                        .arg(t ? span(c0, c1) : span(r0, r1), t ? span(r0, r1) : span(c0, c1),
                            e ? QStringLiteral("2^%1").arg(*e) : num(m->scale[size_t(b)]), num(m->amax[size_t(b)]),
                            num(m->underflowPct(b)), num(m->saturatedPct(b)), num(m->relError(b))),
                    plot());
            }
        }
    }
    return PlotView::eventFilter(watched, event);
}

void BlockMapView::updateStatus()
{
    // Where there is no map, its reason on the map itself too (the Summary may not be the tab in view).
    const auto showOnMap = [this] {
        if (m_empty) {
            m_empty->setText(shownMap() ? QString() : m_status->text().section(QLatin1Char('\n'), 0, 0));
            m_empty->setVisible(!shownMap());
        }
    };
    struct OnExit {
        std::function<void()> f;
        ~OnExit() { f(); }
    } onExit {showOnMap};
    if (!m_dump) {
        const auto dumps = m_dumps.find(m_selection->run());
        const bool runHasDumps = dumps == m_dumps.end() || !dumps->second.empty();
        m_status->setText(!runHasDumps ? tr("This run holds no tensor dumps; a block map is made from one.")
                : m_selection->layer().isEmpty()
                ? tr("Select a layer and tensor (in the tree or the heatmap) to see its blocks.")
                : tr("No tensor dump of %1 %2 in this run.").arg(m_selection->layer(), m_selection->tensor()));
        return;
    }
    const DumpRecord &d = m_dump->record;
    const QString where = d.step < 0 ? tr("%1 / %2").arg(d.layer, d.tensor)
                                     : tr("%1 / %2 at step %3").arg(d.layer, d.tensor).arg(d.step);
    if (m_ticket) {
        m_status->setText(tr("Mapping the blocks of %1 under %2...").arg(where, m_recipeBox->currentText()));
        return;
    }
    if (!m_error.isEmpty()) {
        m_status->setText(tr("Could not map the blocks of %1: %2").arg(where, m_error));
        return;
    }
    const BlockMap *m = shownMap();
    if (!m)
        return;
    QStringList lines {tr("%1: %2.").arg(where, m->patternText())};
    int64_t zeroScale = 0;
    m->scaleHistogram(&zeroScale);
    if (zeroScale > 0)
        lines << tr("%n block(s) with scale 0 (every value of them lost).", nullptr, int(zeroScale));
    if (m == &m_result->map && m_result->fp32)
        lines << tr("What if: %1.").arg(compareBlockScales(m_result->map, *m_result->fp32).text());
    if (m_result->te)
        lines << tr("Transformer Engine's quantization: %1.").arg(m_result->te->summary());
    else if (!m_result->teError.isEmpty())
        lines << tr("Transformer Engine's quantization not compared: %1").arg(m_result->teError);
    if (m_selected >= 0)
        lines << tr("Selected block (%1, %2): flushed %3 %, saturated %4 %, mean relative error %5.")
                     .arg(m_selected / m->gridCols)
                     .arg(m_selected % m->gridCols)
                     .arg(num(m->underflowPct(m_selected)), num(m->saturatedPct(m_selected)),
                         num(m->relError(m_selected)));
    m_status->setText(lines.join(QLatin1Char('\n')));
}

QString BlockMapView::statusText() const
{
    return m_status->text();
}

QString BlockMapView::title() const
{
    const BlockMap *m = shownMap();
    if (!m || !m_dump)
        return tr("blocks");
    return tr("%1 %2, %3 %4 blocks, %5")
        .arg(m_dump->record.layer, m_dump->record.tensor, m->recipe.name(), m->blockShape(),
            blockFieldName(field()).replace(QLatin1Char('_'), QLatin1Char(' ')));
}

QString BlockMapView::csv() const
{
    QString out
        = QStringLiteral("row,col,first_row,first_col,scale,amax,underflow_pct,saturated_pct,rel_error,flagged\n");
    const BlockMap *m = shownMap();
    if (!m)
        return out;
    for (int64_t i = 0; i < m->blocks(); ++i)
        out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7,%8,%9,%10\n")
                   .arg(i / m->gridCols)
                   .arg(i % m->gridCols)
                   .arg(m->firstRow(i))
                   .arg(m->firstCol(i))
                   .arg(double(m->scale[size_t(i)]), 0, 'g', 9)
                   .arg(double(m->amax[size_t(i)]), 0, 'g', 9)
                   .arg(m->underflowPct(i), 0, 'g', 9)
                   .arg(m->saturatedPct(i), 0, 'g', 9)
                   .arg(m->relError(i), 0, 'g', 9)
                   .arg(m->flagged(i) ? 1 : 0);
    return out;
}

} // namespace fp8scope
