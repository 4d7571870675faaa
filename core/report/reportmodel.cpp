#include "reportmodel.h"

namespace fp8scope::report {

QStringList documentText(const Document &d)
{
    QStringList out {d.title, d.subtitle};
    const auto blocks = [&](const std::vector<Block> &bs) {
        for (const Block &b : bs) {
            if (const auto *p = std::get_if<Paragraph>(&b)) {
                out << p->text;
            } else if (const auto *t = std::get_if<Table>(&b)) {
                out << t->headers.join(QLatin1Char(' '));
                for (const QStringList &r : t->rows)
                    out << r.join(QLatin1Char(' '));
            } else if (const auto *f = std::get_if<Figure>(&b)) {
                out << f->caption;
            }
        }
    };
    blocks(d.titlePage);
    for (const Section &s : d.sections) {
        out << s.title;
        blocks(s.blocks);
    }
    return out;
}

} // namespace fp8scope::report
