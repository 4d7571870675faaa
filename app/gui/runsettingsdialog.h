// A run's settings as the user sets them in the window: display name, precision, recipe, baseline, inference
// precision and notes (the fields of the fp8scope.json manifest, where the window saves them).
#pragma once

#include "core/importers/manifestwriter.h"

#include <QDialog>

class QComboBox;
class QLineEdit;
class QPlainTextEdit;

namespace fp8scope {

class RunSettingsDialog : public QDialog
{
    Q_OBJECT
public:
    // `baselines`: the names of the runs it may be paired with; `savedIn`: the manifest file the settings go to, and
    // the key under its "runs" where it is a workspace manifest (core/importers/manifestwriter runManifestPlace).
    RunSettingsDialog(const QString &runName, const RunManifest &current, const QStringList &baselines,
        const QString &savedIn, const QString &savedKey, QWidget *parent = nullptr);

    RunManifest manifest() const;

private:
    QLineEdit *m_name;
    QComboBox *m_precision;
    QComboBox *m_recipe;
    QComboBox *m_baseline;
    QComboBox *m_inference;
    QPlainTextEdit *m_notes;
    QLineEdit *m_lossGapBar;
};

} // namespace fp8scope
