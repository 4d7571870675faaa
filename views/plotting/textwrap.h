// Text set in a column: the report's paragraphs and table cells, an exported plot's title.
#pragma once

#include <QFont>
#include <QStringList>

class QPaintDevice;

namespace fp8scope {

// `text` (its own line breaks kept) in lines at most `width` device units wide, as `device` measures `font`:
// broken between words; a name without spaces after its '_', '-', '/' (or a '.' between words); and anywhere
// only where a part is wider than the column. The lines joined give the text again.
QStringList wrapText(const QString &text, const QFont &font, double width, QPaintDevice *device);

} // namespace fp8scope
