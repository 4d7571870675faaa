// The window's tables: their one look (whole rows selected, no row numbers, alternating rows, the last
// column stretched), and copy and CSV export of the rows as the model holds them, numbers (kept in
// Qt::UserRole as doubles) in their shortest round-trip form, so that a table pasted elsewhere or read by a
// script carries every digit, not the digits shown.
#pragma once

#include <QList>
#include <QString>

class QAbstractItemModel;
class QStandardItem;
class QTableView;
class QWidget;

namespace fp8scope {

// A read-only table view of one selected row at a time, named `name` (object name). Its columns fit its width
// (fitColumnsToWidth, again as it is resized or its rows change) unless fitWidth is false; a cell whose text is
// cut shows the whole of it on hover.
QTableView *newTableView(const QString &name, QWidget *parent, bool fitWidth = true);

// Sizes the columns to what they hold, and where that is wider than the view, narrows the widest text columns
// (to one width, as far as needed, no narrower than kLeastColumnWidth) so that every column is in view without
// scrolling: numbers are never cut (a column whose every cell is a number keeps its values' width; only its
// header may be cut where the numbers alone are too wide); text is elided, whole on hover. The last column takes
// what is left.
void fitColumnsToWidth(QTableView *table);
inline constexpr int kLeastColumnWidth = 44;

// Cells of a QStandardItemModel for these tables, read-only: text with itself as its tooltip; a number shown
// to six significant digits (or `decimals` places), held exactly in Qt::UserRole, right-aligned, its tooltip
// every digit (NaN and infinities shown blank).
QStandardItem *textItem(const QString &text);
QStandardItem *numberItem(double v, int decimals = -1);

// The model's rows (all, or those listed) with a header line: tab-separated, or CSV with quoting.
QString tableText(const QAbstractItemModel *model, const QList<int> &rows = {}, bool csv = false);

// Gives the view a context menu (and Ctrl+C) that copies its selected rows, and Export as CSV... into a
// file whose default name is `fileName`.
void addTableActions(QTableView *view, const QString &fileName);

} // namespace fp8scope
