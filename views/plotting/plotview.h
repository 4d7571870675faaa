// The frame every plot view shares: a row of controls above a QCustomPlot, colours that follow the system
// palette, and export of the plot (PNG, SVG or PDF by file suffix) and of its data (CSV).
#pragma once

#include <QWidget>

class QCustomPlot;
class QHBoxLayout;

namespace fp8scope {

class PlotView : public QWidget
{
    Q_OBJECT
public:
    explicit PlotView(const QString &name, QWidget *parent = nullptr);

    QCustomPlot *plot() const { return m_plot; }
    // Writes the plot as PNG, SVG or PDF, chosen by the suffix of path.
    bool exportPlot(const QString &path, QString *error) const;
    // Writes what is plotted as CSV (a header line, then rows).
    bool exportCsv(const QString &path, QString *error) const;
    virtual QString csv() const = 0;

protected:
    QHBoxLayout *controls() const { return m_controls; }
    void changeEvent(QEvent *event) override;
    void applyPalette();

private:
    void askExportPlot();
    void askExportCsv();

    QHBoxLayout *m_controls;
    QCustomPlot *m_plot;
};

} // namespace fp8scope
