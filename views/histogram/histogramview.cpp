#include "histogramview.h"

#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include "core/query/statnames.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <cmath>

namespace fp8scope {

namespace {

// Whether the recipe takes its element format from the format picker (nvfp4 is E2M1, bf16 BF16).
bool choosesFormat(const QString &recipe)
{
    return recipe != QLatin1String("nvfp4") && recipe != QLatin1String("bf16");
}

} // namespace

HistogramView::HistogramView(Workspace *workspace, Selection *selection, QWidget *parent)
    : PlotView(QStringLiteral("histogram"), parent)
    , m_workspace(workspace)
    , m_selection(selection)
    , m_recipeBox(new QComboBox(this))
    , m_formatBox(new QComboBox(this))
    , m_scaled(new QCheckBox(tr("Scaled"), this))
    , m_status(new QLabel(this))
    , m_bars(new QCPBars(plot()->xAxis, plot()->yAxis))
    , m_slot(Workspace::newSlot(QStringLiteral("histogram")))
{
    m_recipeBox->setObjectName(QStringLiteral("histogramRecipe"));
    m_formatBox->setObjectName(QStringLiteral("histogramFormat"));
    m_scaled->setObjectName(QStringLiteral("histogramScaled"));
    m_status->setObjectName(QStringLiteral("histogramStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    for (const char *name : {"delayed", "current", "current-pow2", "mxfp8", "mxfp8-ocp", "mxfp8-col", "block1x128",
             "block128x128", "nvfp4", "bf16"})
        m_recipeBox->addItem(QString::fromLatin1(name));
    m_recipeBox->setCurrentText(QStringLiteral("current"));
    for (Format f : {Format::E4M3, Format::E5M2, Format::E4M3FNUZ, Format::E5M2FNUZ})
        m_formatBox->addItem(formatName(f).toUpper(), formatName(f));
    m_scaled->setChecked(true);
    m_recipeBox->setToolTip(tr("The recipe the tensor is cast under"));
    m_formatBox->setToolTip(tr("The element format"));
    m_scaled->setToolTip(tr("Values after the recipe's scaling (as they are cast), or as the tensor holds them"));
    addControl(m_recipeBox);
    addControl(m_formatBox);
    addControl(m_scaled);
    static_cast<QVBoxLayout *>(layout())->addWidget(m_status);

    plot()->xAxis->setLabel(tr("log2 |x|"));
    plot()->yAxis->setLabel(tr("elements"));
    m_bars->setWidth(1.0);
    m_bars->setName(tr("log2|x| histogram"));
    QColor fill = palette().color(QPalette::Highlight);
    m_bars->setPen(QPen(fill.darker(130)));
    fill.setAlpha(170);
    m_bars->setBrush(fill);

    connect(m_recipeBox, &QComboBox::currentIndexChanged, this, [this] {
        syncFormatBox();
        request();
    });
    connect(m_formatBox, &QComboBox::currentIndexChanged, this, &HistogramView::request);
    connect(m_scaled, &QCheckBox::toggled, this, &HistogramView::redraw);
    connect(workspace, &Workspace::changed, this, [this](Workspace::Parts parts) {
        if (parts & (Workspace::Loaded | Workspace::Closed))
            reloadDumps();
    });
    connect(selection, &Selection::changed, this, &HistogramView::selectionChanged);
    reloadDumps();
}

void HistogramView::setRecipe(const QString &recipe, const QString &format)
{
    const QSignalBlocker b1(m_recipeBox), b2(m_formatBox);
    m_recipeBox->setCurrentText(recipe);
    if (!format.isEmpty())
        m_formatBox->setCurrentIndex(std::max(0, m_formatBox->findData(format.toLower())));
    syncFormatBox();
    request();
}

std::optional<Recipe> HistogramView::recipe() const
{
    QString error;
    const QString name = m_recipeBox->currentText();
    std::optional<Format> format;
    if (m_formatBox->isEnabled())
        format = formatFromName(m_formatBox->currentData().toString());
    return Recipe::parse(name, format, &error);
}

QString HistogramView::title() const
{
    if (!m_dump || !m_metrics)
        return tr("histogram");
    const DumpRecord &d = m_dump->record;
    const WorkspaceRun *run = m_workspace->run(m_selection->run());
    return tr("log2|x| of %1 %2%3 — %4 — %5 (%6), %7")
        .arg(d.layer, d.tensor, d.step < 0 ? QString() : tr(" at step %1").arg(d.step),
            run ? run->run.label() : QString(), m_metrics->recipe, formatName(m_metrics->format).toUpper(),
            m_scaled->isChecked() ? tr("after scaling") : tr("as stored"));
}

void HistogramView::syncFormatBox()
{
    // A recipe with its own element format (NVFP4's E2M1, BF16) shows that format, not the last one picked;
    // the pick comes back with a recipe that takes one.
    const QString recipe = m_recipeBox->currentText();
    const bool chooses = choosesFormat(recipe);
    const QSignalBlocker block(m_formatBox);
    const int fixed = m_formatBox->findData(QString());
    if (fixed >= 0)
        m_formatBox->removeItem(fixed);
    if (chooses) {
        if (fixed >= 0)
            m_formatBox->setCurrentIndex(std::max(0, m_formatBox->findData(m_formatChoice)));
    } else {
        if (fixed < 0)
            m_formatChoice = m_formatBox->currentData().toString();
        m_formatBox->addItem(recipe == QLatin1String("nvfp4") ? QStringLiteral("E2M1") : recipe.toUpper(), QString());
        m_formatBox->setCurrentIndex(m_formatBox->count() - 1);
    }
    m_formatBox->setEnabled(chooses);
}

void HistogramView::setAfterScaling(bool on)
{
    m_scaled->setChecked(on);
}

void HistogramView::reloadDumps()
{
    m_recipeRun = {};
    m_dumps.clear();
    for (const WorkspaceRun &r : m_workspace->runs())
        m_dumps[r.run.ref] = m_workspace->catalog().dumps(r.run.ref);
    selectionChanged();
}

namespace {

// The recipe box entry for the recipe a run's tensor was quantized under (parameters after ':' dropped), or
// empty where the box has none.
QString recipeEntryFor(const QString &runRecipe, const QString &tensor, const QComboBox *box)
{
    const QString name = tensorRecipe(runRecipe, tensor).section(QLatin1Char(':'), 0, 0).trimmed();
    return box->findText(name) >= 0 ? name : QString();
}

} // namespace

void HistogramView::selectionChanged()
{
    std::optional<Dump> pick;
    const RunRef r = m_selection->run();
    bool recipeSet = false;
    const WorkspaceRun *run = m_workspace->run(r);
    const QString runRecipe = run ? run->run.recipe : QString();
    if (r != m_recipeRun || (runRecipe == QLatin1String("blockwise") && m_selection->tensor() != m_recipeTensor)) {
        m_recipeRun = r;
        m_recipeTensor = m_selection->tensor();
        const QString entry = recipeEntryFor(runRecipe, m_selection->tensor(), m_recipeBox);
        if (!entry.isEmpty() && entry != m_recipeBox->currentText()) {
            const QSignalBlocker block(m_recipeBox);
            m_recipeBox->setCurrentText(entry);
            syncFormatBox();
            recipeSet = true;
        }
    }
    if (const auto dumps = m_dumps.find(r); dumps != m_dumps.end())
        pick = Workspace::dumpNearest(dumps->second, m_selection->layer(), m_selection->tensor(), m_selection->step());
    const bool same = pick && m_dump && pick->run == m_dump->run && pick->file == m_dump->file
        && pick->record.dataset == m_dump->record.dataset;
    if (same) {
        if (recipeSet)
            request();
        else
            redraw(); // the same dump: its status says how far it is from the step now selected
        return;
    }
    if (!pick && !m_dump) {
        redraw(); // still nothing to show, but the message names the layer now selected
        return;
    }
    m_dump = pick;
    request();
}

void HistogramView::showEvent(QShowEvent *event)
{
    PlotView::showEvent(event);
    if (m_requestPending)
        request();
}

void HistogramView::request()
{
    if (m_ticket)
        m_workspace->jobs().cancel(m_ticket);
    m_ticket = 0;
    if (!m_requestWhileHidden && !isVisible()) {
        m_requestPending = true;
        return;
    }
    m_requestPending = false;
    m_metrics.reset();
    const auto rcp = recipe();
    if (!m_dump || !rcp) {
        redraw();
        Q_EMIT metricsChanged();
        return;
    }
    m_ticket = m_workspace->recompute(
        *m_dump, *rcp, m_slot, this, [this](const std::optional<TensorMetrics> &m, const QString &error) {
            m_ticket = 0;
            m_metrics = m;
            if (!m)
                m_status->setText(tr("Could not compute: %1").arg(error));
            redraw();
            Q_EMIT metricsChanged();
        });
    redraw();
}

QString HistogramView::statusText() const
{
    return m_status->text();
}

void HistogramView::redraw()
{
    plot()->clearItems();
    m_bars->data()->clear();
    // Ticks only under bars: an empty plot shows no numbers of its own or of a tensor shown before.
    const bool drawn = m_dump && m_metrics;
    plot()->xAxis->setTickLabels(drawn);
    plot()->yAxis->setTickLabels(drawn);
    setAxesShown(drawn);
    if (!m_dump) {
        const auto dumps = m_dumps.find(m_selection->run());
        const bool runHasDumps = dumps == m_dumps.end() || !dumps->second.empty();
        m_status->setText(!runHasDumps
                ? tr("This run holds no tensor dumps; a histogram is computed from one (HDF5, safetensors or .npy "
                     "files in the run folder).")
                : m_selection->layer().isEmpty()
                ? tr("Select a layer and tensor (in the tree or the heatmap) to see its histogram.")
                : tr("No tensor dump of %1 %2 in this run.").arg(m_selection->layer(), m_selection->tensor()));
        plot()->replot();
        return;
    }
    const DumpRecord &d = m_dump->record;
    // A checkpoint's tensors have no step (-1).
    // A dump far from the selected step shows the tensor as it was then, not at the step selected: said
    // clearly. Far: more than the usual spacing of this tensor's dumps (and 5 % of the run's last dump step).
    QString farNote;
    if (d.step >= 0 && m_selection->step() >= 0 && d.step != m_selection->step()) {
        std::vector<int64_t> steps;
        if (const auto all = m_dumps.find(m_dump->run); all != m_dumps.end()) {
            for (const Dump &x : all->second) {
                if (x.record.layer == d.layer && x.record.tensor == d.tensor && x.record.step >= 0)
                    steps.push_back(x.record.step);
            }
        }
        std::sort(steps.begin(), steps.end());
        int64_t spacing = 0;
        for (size_t i = 1; i < steps.size(); ++i)
            spacing = std::max(spacing, steps[i] - steps[i - 1]);
        const int64_t distance = std::abs(d.step - m_selection->step());
        const int64_t allowed = std::max(spacing, steps.empty() ? int64_t(0) : steps.back() / 20);
        if (distance > allowed)
            farNote = tr(" — far from the selected step %1 (%2 steps away): this is the tensor at step %3, not at "
                         "the step selected")
                          .arg(m_selection->step())
                          .arg(distance)
                          .arg(d.step);
    }
    const QString where = d.step < 0 ? tr("%1 / %2").arg(d.layer, d.tensor)
                                     : tr("%1 / %2 at step %3").arg(d.layer, d.tensor).arg(d.step)
            + (farNote.isEmpty() && d.step != m_selection->step() && m_selection->step() >= 0
                    ? tr(" (nearest dump to step %1)").arg(m_selection->step())
                    : farNote);
    if (!m_metrics) {
        if (m_ticket)
            m_status->setText(tr("Computing %1 under %2...").arg(where, recipe() ? recipe()->name() : QString()));
        plot()->replot();
        return;
    }
    const TensorMetrics &m = *m_metrics;
    const bool scaled = m_scaled->isChecked();
    const auto &hist = scaled ? m.histScaled : m.histIn;
    int first = -1, last = -1;
    QVector<double> keys, values;
    for (int i = 0; i < fp8math::kHistBins; ++i) {
        if (hist[size_t(i)] == 0)
            continue;
        if (first < 0)
            first = i;
        last = i;
        keys << fp8math::histBinLog2(i) + 0.5;
        values << double(hist[size_t(i)]);
    }
    m_bars->setData(keys, values, true);

    const fp8math::FormatSpec spec = fp8math::formatSpec(m.format);
    // The format's range on this histogram's axis: after scaling as is; before scaling only when one
    // tensor-wide scale applies (block recipes scale each block differently).
    const bool perTensor = std::isfinite(m.scale) && m.scale > 0;
    const bool showRange = scaled || perTensor;
    const double shift = scaled ? 0 : -std::log2(m.scale);
    const double lSub = std::log2(spec.minSubnormal) + shift;
    const double lNorm = std::log2(spec.minNormal) + shift;
    const double lMax = std::log2(spec.maxFinite) + shift;
    double xlo = first >= 0 ? fp8math::histBinLog2(first) - 1 : -10;
    double xhi = last >= 0 ? fp8math::histBinLog2(last) + 2 : 10;
    if (showRange && m.format != Format::BF16) {
        xlo = std::min(xlo, lSub - 2);
        xhi = std::max(xhi, lMax + 2);
    }
    plot()->xAxis->setRange(xlo, xhi);
    double ymax = 1;
    for (double v : values)
        ymax = std::max(ymax, v);
    plot()->yAxis->setRange(0, ymax * 1.15);

    const QColor text = palette().color(QPalette::Text);
    // The label sits above the axes, from the plot's edge into the middle: over no bar and no line, and a narrow
    // region never clips it.
    const int labelHeight = QFontMetrics(plot()->font()).height() + 4;
    plot()->axisRect()->setMinimumMargins(QMargins(0, showRange && m.format != Format::BF16 ? labelHeight : 0, 0, 0));
    auto shade = [&](double a, double b, const QColor &colour, const QString &label, Qt::Alignment side) {
        auto *rect = new QCPItemRect(plot());
        rect->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
        rect->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
        rect->topLeft->setCoords(a, 0);
        rect->bottomRight->setCoords(b, 1);
        QColor c = colour;
        c.setAlpha(45);
        rect->setBrush(c);
        rect->setPen(Qt::NoPen);
        auto *t = new QCPItemText(plot());
        t->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        t->position->setCoords(side == Qt::AlignLeft ? a : b, 0);
        t->setPositionAlignment(side | Qt::AlignBottom);
        t->setClipToAxisRect(false);
        t->setPadding(QMargins(4, 0, 4, 0));
        t->setText(label);
        t->setColor(colour.darker(120));
    };
    auto line = [&](double x, const QString &label, Qt::PenStyle style) {
        auto *l = new QCPItemStraightLine(plot());
        l->point1->setCoords(x, 0);
        l->point2->setCoords(x, 1);
        l->setPen(QPen(text, 1, style));
        auto *t = new QCPItemText(plot());
        t->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        t->position->setCoords(x, 0.12);
        t->setRotation(-90);
        t->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
        t->setText(label);
        t->setColor(text);
    };
    if (showRange && m.format != Format::BF16) {
        shade(xlo, lSub, QColor(0, 90, 200), tr("underflow %1 %").arg(m.underflowPct, 0, 'g', 3), Qt::AlignLeft);
        shade(lMax, xhi, QColor(200, 30, 0), tr("saturation %1 %").arg(m.saturationPct, 0, 'g', 3), Qt::AlignRight);
        line(lSub, tr("min subnormal"), Qt::DotLine);
        line(lNorm, tr("min normal"), Qt::DashLine);
        line(lMax, tr("max %1").arg(double(spec.maxFinite), 0, 'g', 6), Qt::SolidLine);
    }
    QString text2 = tr("%1 — %2 (%3), computed on %4.\nunderflow %5 %, saturation %6 %, MSE %7, SQNR %8 dB.")
                        // The backend's name; why it is the one (no CUDA driver, ...) is in the status bar.
                        .arg(where, m.recipe, formatName(m.format).toUpper(), m.backend.section(QLatin1Char(':'), 0, 0))
                        .arg(m.underflowPct, 0, 'g', 4)
                        .arg(m.saturationPct, 0, 'g', 4)
                        .arg(m.mse, 0, 'g', 4)
                        .arg(m.sqnrDb, 0, 'f', 1);
    if (!showRange)
        text2 += tr(" Per-block scales: the format range is drawn after scaling only.");
    if (!m.delayedScaleSource.isEmpty())
        text2 += tr("\nDelayed scale %1 from %2.").arg(m.scale, 0, 'g', 6).arg(m.delayedScaleSource);
    if (!m.decoding.isEmpty())
        text2 += tr("\nDump: %1.").arg(m.decoding);
    m_status->setText(text2);
    plot()->replot();
}

QString HistogramView::csv() const
{
    QString out = QStringLiteral("log2_low,count_before_scaling,count_after_scaling\n");
    if (!m_metrics)
        return out;
    for (int i = 0; i < fp8math::kHistBins; ++i) {
        if (m_metrics->histIn[size_t(i)] == 0 && m_metrics->histScaled[size_t(i)] == 0)
            continue;
        out += QString::number(fp8math::histBinLog2(i)) + QLatin1Char(',')
            + QString::number(m_metrics->histIn[size_t(i)]) + QLatin1Char(',')
            + QString::number(m_metrics->histScaled[size_t(i)]) + QLatin1Char('\n');
    }
    return out;
}

} // namespace fp8scope
