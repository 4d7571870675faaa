#include "runsettingsdialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>

namespace fp8scope {

namespace {

QComboBox *editableCombo(const QString &name, const QStringList &items, const QString &current, QWidget *parent)
{
    auto *box = new QComboBox(parent);
    box->setObjectName(name);
    box->setEditable(true);
    box->setInsertPolicy(QComboBox::NoInsert);
    box->addItems(items);
    box->setEditText(current);
    return box;
}

} // namespace

RunSettingsDialog::RunSettingsDialog(const QString &runName, const RunManifest &current, const QStringList &baselines,
    const QString &savedIn, const QString &savedKey, QWidget *parent)
    : QDialog(parent)
    , m_name(new QLineEdit(current.name, this))
    , m_precision(editableCombo(QStringLiteral("runPrecision"),
          {QString(), QStringLiteral("bf16"), QStringLiteral("fp8"), QStringLiteral("mxfp8"), QStringLiteral("nvfp4"),
              QStringLiteral("fp16"), QStringLiteral("fp32")},
          current.precision, this))
    , m_recipe(editableCombo(QStringLiteral("runRecipe"),
          {QString(), QStringLiteral("delayed"), QStringLiteral("current"), QStringLiteral("mxfp8"),
              QStringLiteral("blockwise"), QStringLiteral("nvfp4")},
          current.recipe, this))
    , m_baseline(new QComboBox(this))
    , m_inference(editableCombo(QStringLiteral("runInference"),
          {QString(), QStringLiteral("bf16"), QStringLiteral("fp8"), QStringLiteral("fp8 kv-fp8"),
              QStringLiteral("nvfp4")},
          current.inferencePrecision, this))
    , m_notes(new QPlainTextEdit(current.notes, this))
    , m_lossGapBar(new QLineEdit(current.lossGapBar, this))
{
    setObjectName(QStringLiteral("runSettingsDialog"));
    setWindowTitle(tr("Run Settings — %1").arg(runName));
    m_name->setObjectName(QStringLiteral("runDisplayName"));
    m_name->setPlaceholderText(runName);
    m_baseline->setObjectName(QStringLiteral("runBaseline"));
    m_baseline->addItem(tr("(chosen by fp8scope)"), QString());
    for (const QString &b : baselines)
        m_baseline->addItem(b, b);
    if (!current.baseline.isEmpty() && m_baseline->findData(current.baseline) < 0)
        m_baseline->addItem(current.baseline, current.baseline); // named by a manifest, not open now
    m_baseline->setCurrentIndex(std::max(0, m_baseline->findData(current.baseline)));
    m_notes->setObjectName(QStringLiteral("runNotes"));
    m_lossGapBar->setObjectName(QStringLiteral("runLossGapBar"));
    m_lossGapBar->setPlaceholderText(tr("0.01 (the default)"));
    auto *validator = new QDoubleValidator(0.0, 1e6, 6, m_lossGapBar);
    validator->setLocale(QLocale::c());
    validator->setNotation(QDoubleValidator::StandardNotation);
    m_lossGapBar->setValidator(validator);
    m_lossGapBar->setToolTip(tr("When this run is a baseline: the gap of the loss at the end (in the loss's units) "
                                "that you accept of an FP8 run compared with it. Every comparison says its gap "
                                "against it; a gap over it is a warning."));
    m_notes->setMaximumHeight(90);

    auto *form = new QFormLayout(this);
    // Where they go, as the file is named on disk: the run folder's fp8scope.json, or a workspace manifest under the
    // run's full name (a W&B history run, a table's run-column run).
    const QString file = QDir::toNativeSeparators(savedIn);
    auto *where = new QLabel(savedKey.isEmpty()
            ? tr("Saved in %1, so that the run opens with them again (and for whoever opens the folder next).")
                  .arg(file)
            : tr("Saved in %1 under \"%2\" (no folder is this run's alone), so that the run opens with them again "
                 "(and for whoever opens the folder next).")
                  .arg(file, savedKey),
        this);
    where->setObjectName(QStringLiteral("runSettingsWhere"));
    where->setWordWrap(true);
    form->addRow(where);
    form->addRow(tr("Display &name"), m_name);
    form->addRow(tr("&Precision"), m_precision);
    form->addRow(tr("&Recipe"), m_recipe);
    form->addRow(tr("&Baseline"), m_baseline);
    form->addRow(tr("&Inference precision"), m_inference);
    form->addRow(tr("Accepted loss &gap"), m_lossGapBar);
    form->addRow(tr("N&otes"), m_notes);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    form->addRow(buttons);
}

RunManifest RunSettingsDialog::manifest() const
{
    return {m_name->text(), m_precision->currentText(), m_recipe->currentText(), m_baseline->currentData().toString(),
        m_inference->currentText(), m_notes->toPlainText(), m_lossGapBar->text()};
}

} // namespace fp8scope
