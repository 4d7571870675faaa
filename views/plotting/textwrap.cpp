#include "textwrap.h"

#include <QRegularExpression>
#include <QTextLayout>

namespace fp8scope {

QStringList wrapText(const QString &text, const QFont &font, double width, QPaintDevice *device)
{
    QStringList out;
    // Run and layer names have no spaces: they may break after their '_', '-', '.' and '/' (a zero-width space
    // offers the break), and only a part wider than the line breaks anywhere.
    // (Not in numbers: "-0.5" and "0.0123" keep together.)
    static const QRegularExpression separators(QStringLiteral("(?<=\\w[_/-])(?=\\w)|(?<=[A-Za-z]\\.)(?=[A-Za-z_])"));
    constexpr QChar kBreak(0x200B);
    for (QString para : text.split(QLatin1Char('\n'))) {
        if (para.isEmpty()) {
            out << QString();
            continue;
        }
        para.replace(separators, QString(kBreak));
        QTextLayout layout(para, font, device);
        QTextOption option;
        option.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
        layout.setTextOption(option);
        layout.beginLayout();
        for (QTextLine l = layout.createLine(); l.isValid(); l = layout.createLine()) {
            l.setLineWidth(width);
            out << para.mid(l.textStart(), l.textLength()).remove(kBreak);
        }
        layout.endLayout();
    }
    return out;
}

} // namespace fp8scope
