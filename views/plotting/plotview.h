// The frame every plot view shares: a tool bar of controls above a QCustomPlot (controls that do not fit
// the width go to the tool bar's overflow menu, so a narrow dock never cuts a label), colours that follow
// the system palette, and export of the plot (PNG, SVG or PDF by file suffix) and of its data (CSV), under
// a default file name made from what is shown.
#pragma once

#include <QWidget>

class QCustomPlot;
class QAction;
class QToolBar;

namespace fp8scope {

class PlotView : public QWidget
{
    Q_OBJECT
public:
    explicit PlotView(const QString &name, QWidget *parent = nullptr);
    ~PlotView() override;

    QCustomPlot *plot() const { return m_plot; }
    // Writes the plot as PNG, SVG or PDF, chosen by the suffix of path, at `size` (empty: the plot's size on
    // screen, at least 640x400; a PNG at the screen's device pixel ratio too), its title above it whole (wrapped
    // to the width).
    bool exportPlot(const QString &path, QString *error, QSize size = {}) const;
    // The title's lines as an export of `width` pixels writes them.
    QStringList titleLines(int width) const;
    // Writes what is plotted as CSV (a header line, then rows).
    bool exportCsv(const QString &path, QString *error) const;
    virtual QString csv() const = 0;
    // What the plot shows, for the exported plot's title and the default export file name
    // ("lm loss, 2 runs, by step").
    virtual QString title() const;
    // The default export file name (without suffix) made from title(): lower case, words joined by '-'.
    QString defaultFileName() const;
    QToolBar *controlBar() const { return m_controls; }
    // Whether the axes, their grids and any colour scale are drawn: a view with nothing to draw says why in
    // words, on a blank plot (docs/GUI.md, "When a view has nothing to draw").
    void setAxesShown(bool shown);
    bool axesShown() const;

protected:
    // Adds a control before the Export button; hide or show it with the returned action (a tool bar's
    // widget follows its action). An expanding control takes the width the others leave.
    QAction *addControl(QWidget *widget, bool expanding = false);
    void changeEvent(QEvent *event) override;
    void applyPalette();

private:
    QFont titleFont() const;
    void askExportPlot();
    void askExportCsv();

    QToolBar *m_controls;
    QAction *m_spacerAction = nullptr;
    QCustomPlot *m_plot;
};

} // namespace fp8scope
