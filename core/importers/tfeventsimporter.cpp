#include "tfeventsimporter.h"

#include "importers/tfevents.pb.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <array>
#include <cstring>

namespace fp8scope {

namespace {

std::array<uint32_t, 256> crcTable()
{
    std::array<uint32_t, 256> t {};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k)
            c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1; // reflected Castagnoli polynomial
        t[i] = c;
    }
    return t;
}

uint64_t readLe64(const char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | uint8_t(p[i]);
    return v;
}

uint32_t readLe32(const char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
        v = (v << 8) | uint8_t(p[i]);
    return v;
}

constexpr uint64_t kMaxRecord = uint64_t(256) << 20;

// A scalar from a rank-0 (or single-element) numeric tensor.
bool tensorScalar(const tfevents::TensorProto &t, double *out)
{
    if (t.float_val_size() == 1) {
        *out = t.float_val(0);
        return true;
    }
    if (t.double_val_size() == 1) {
        *out = t.double_val(0);
        return true;
    }
    if (t.int_val_size() == 1) {
        *out = t.int_val(0);
        return true;
    }
    if (t.int64_val_size() == 1) {
        *out = double(t.int64_val(0));
        return true;
    }
    const std::string &c = t.tensor_content();
    if (t.dtype() == 1 && c.size() == 4) {
        float f;
        std::memcpy(&f, c.data(), 4);
        *out = f;
        return true;
    }
    if (t.dtype() == 2 && c.size() == 8) {
        std::memcpy(out, c.data(), 8);
        return true;
    }
    return false;
}

void histogramSeries(const QString &tag, int64_t step, double min, double max, double num, double sum, IngestSink &sink)
{
    const QString source = QStringLiteral("tensorboard");
    sink.point({QString(), QString(), tag + QStringLiteral(" (min)"), source, QString()}, step, min);
    sink.point({QString(), QString(), tag + QStringLiteral(" (max)"), source, QString()}, step, max);
    sink.point({QString(), QString(), tag + QStringLiteral(" (count)"), source, QString()}, step, num);
    sink.point(
        {QString(), QString(), tag + QStringLiteral(" (mean)"), source, QString()}, step, num > 0 ? sum / num : NAN);
}

// add_scalars("losses", {"train": ..., "val": ...}) writes each key with the tag "losses" through a writer of
// its own, in the subfolder "losses_train": a scalar whose file sits in "<tag>_<key>" is the series "<tag>/<key>".
QString scalarName(const QString &tag, const QString &folder)
{
    if (folder.size() > tag.size() + 1 && folder.startsWith(tag) && folder.at(tag.size()) == QLatin1Char('_'))
        return tag + QLatin1Char('/') + folder.mid(tag.size() + 1);
    return tag;
}

void handleEvent(const tfevents::Event &e, IngestSink &sink, const QString &folder)
{
    if (!e.has_summary())
        return;
    const QString source = QStringLiteral("tensorboard");
    const double wall = e.wall_time();
    for (const auto &v : e.summary().value()) {
        const QString tag = QString::fromStdString(v.tag());
        const std::string plugin = v.has_metadata() ? v.metadata().plugin_data().plugin_name() : std::string();
        switch (v.value_case()) {
        case tfevents::Summary::Value::kSimpleValue:
            sink.point(
                {QString(), QString(), scalarName(tag, folder), source, QString()}, e.step(), v.simple_value(), wall);
            break;
        case tfevents::Summary::Value::kHisto: {
            const auto &h = v.histo();
            histogramSeries(tag, e.step(), h.min(), h.max(), h.num(), h.sum(), sink);
            break;
        }
        case tfevents::Summary::Value::kTensor: {
            const auto &t = v.tensor();
            if (plugin == "text" || t.dtype() == 7) {
                QStringList parts;
                for (const std::string &s : t.string_val())
                    parts << QString::fromStdString(s);
                sink.config(tag, parts.join(QLatin1Char('\n')));
            } else if (plugin == "histograms") {
                // k x 3 rows of (left edge, right edge, count), as float or double.
                std::vector<double> cells;
                for (float f : t.float_val())
                    cells.push_back(f);
                for (double d : t.double_val())
                    cells.push_back(d);
                const std::string &c = t.tensor_content();
                if (cells.empty() && t.dtype() == 2)
                    for (size_t i = 0; i + 8 <= c.size(); i += 8) {
                        double d;
                        std::memcpy(&d, c.data() + i, 8);
                        cells.push_back(d);
                    }
                if (cells.empty() && t.dtype() == 1)
                    for (size_t i = 0; i + 4 <= c.size(); i += 4) {
                        float f;
                        std::memcpy(&f, c.data() + i, 4);
                        cells.push_back(f);
                    }
                double num = 0, sum = 0, lo = NAN, hi = NAN;
                for (size_t i = 0; i + 2 < cells.size(); i += 3) {
                    if (cells[i + 2] <= 0)
                        continue;
                    lo = std::isnan(lo) ? cells[i] : std::min(lo, cells[i]);
                    hi = std::isnan(hi) ? cells[i + 1] : std::max(hi, cells[i + 1]);
                    num += cells[i + 2];
                    sum += cells[i + 2] * 0.5 * (cells[i] + cells[i + 1]);
                }
                histogramSeries(tag, e.step(), lo, hi, num, sum, sink);
            } else {
                double s;
                if (tensorScalar(t, &s))
                    sink.point({QString(), QString(), scalarName(tag, folder), source, QString()}, e.step(), s, wall);
            }
            break;
        }
        default: break;
        }
    }
}

} // namespace

uint32_t crc32c(const void *data, size_t n)
{
    static const std::array<uint32_t, 256> table = crcTable();
    uint32_t c = 0xFFFFFFFFu;
    const auto *p = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < n; ++i)
        c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t maskedCrc32c(const void *data, size_t n)
{
    const uint32_t c = crc32c(data, n);
    return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

bool TfEventsImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    if (!fileName.contains(QLatin1String("tfevents")) || head.size() < 12)
        return false;
    return readLe32(head.constData() + 8) == maskedCrc32c(head.constData(), 8);
}

namespace {

// The offset of the next record header at or after `from` whose length fits the file and whose CRC holds (a
// length word and its masked CRC32C), or `size` when there is none. Scans a window in memory at a time, the
// length check first: 30 MB of junk between two records took 52 s with a seek and a read per byte.
qint64 nextHeader(QFile &f, qint64 from, qint64 size)
{
    constexpr qint64 kWindow = qint64(1) << 20;
    for (qint64 at = from; at + 12 <= size; at += kWindow) {
        if (!f.seek(at))
            return size;
        const QByteArray window = f.read(kWindow + 11);
        for (qsizetype i = 0; i + 12 <= window.size() && i < kWindow; ++i) {
            const char *h = window.constData() + i;
            const uint64_t len = readLe64(h);
            if (len > kMaxRecord || at + i + 12 + qint64(len) + 4 > size)
                continue;
            if (readLe32(h + 8) == maskedCrc32c(h, 8))
                return at + i;
        }
    }
    return size;
}

} // namespace

ReadPosition TfEventsImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    QFile f(path);
    ReadPosition end;
    if (!f.open(QIODevice::ReadOnly)) {
        sink.problem(0, -1, QStringLiteral("cannot open: %1").arg(f.errorString()));
        return end;
    }
    const qint64 size = f.size();
    const QString folder = QFileInfo(path).dir().dirName();
    qint64 pos = 0;
    bool resyncing = false;
    while (pos + 12 <= size) {
        f.seek(pos);
        const QByteArray header = f.read(12);
        const uint64_t len = readLe64(header.constData());
        const bool headerOk = readLe32(header.constData() + 8) == maskedCrc32c(header.constData(), 8);
        if (!headerOk || len > kMaxRecord || pos + 12 + qint64(len) + 4 > size) {
            if (!resyncing) {
                sink.problem(0, pos,
                    pos + 12 + qint64(len) + 4 > size && headerOk
                        ? QStringLiteral("truncated record")
                        : QStringLiteral("corrupted record header; looking for the next record"));
                resyncing = true;
            }
            pos = nextHeader(f, pos + 1, size);
            continue;
        }
        resyncing = false;
        const QByteArray data = f.read(qint64(len));
        const QByteArray crc = f.read(4);
        if (readLe32(crc.constData()) != maskedCrc32c(data.constData(), data.size())) {
            sink.problem(0, pos, QStringLiteral("record payload fails its CRC; skipped"));
        } else {
            tfevents::Event e;
            if (e.ParseFromArray(data.constData(), int(data.size())))
                handleEvent(e, sink, folder);
            else
                sink.problem(0, pos, QStringLiteral("record is not an Event protobuf; skipped"));
        }
        pos += 12 + qint64(len) + 4;
    }
    end.offset = size;
    return end;
}

} // namespace fp8scope
