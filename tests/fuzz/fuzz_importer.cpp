// libFuzzer target template: one importer (FUZZ_IMPORTER, a class of core/importers) reads arbitrary bytes
// written to a file named FUZZ_FILE_NAME, from the start and from a resume position inside it; every
// record goes to a sink that checks what it is given. Built once per importer by tests/fuzz/CMakeLists.txt;
// a name with a compression suffix (.gz, .xz, .zst) has its bytes read as a compressed stream, whose positions
// are of what it decompresses to.
#include "core/importers/compressedfile.h"
#include "core/importers/jsonimporters.h"
#include "core/importers/megatronlogimporter.h"
#include "core/importers/otherimporters.h"
#include "core/importers/tableimporters.h"
#include "core/importers/tedebugimporter.h"
#include "core/importers/tfeventsimporter.h"
#include "core/importers/versionsimporter.h"
#include "core/importers/wandbimporter.h"

#include <QDir>
#include <QFile>

#include <cstdlib>
#include <unistd.h>

namespace {

class CheckingSink : public fp8scope::IngestSink
{
public:
    void useRun(const QString &) override { }
    int64_t series(const fp8scope::SeriesKey &key) override
    {
        if (key.stat.isEmpty() && key.source.isEmpty())
            std::abort(); // every series names a statistic or a source
        return ++m_series;
    }
    void point(int64_t series, int64_t, double, double) override
    {
        if (series < 1 || series > m_series)
            std::abort(); // only handles the sink gave out
    }
    void eval(const fp8scope::EvalRecord &) override { }
    void config(const QString &, const QString &) override { }
    void version(const QString &package, const QString &version) override
    {
        if (package.isEmpty() || version.isEmpty() || package != package.toLower())
            std::abort(); // a version names a normalized package and a version
    }
    void runInfo(const QString &, const QString &) override { }
    void dump(const fp8scope::DumpRecord &) override { }
    void problem(int64_t line, int64_t offset, const QString &message) override
    {
        if (message.isEmpty() || line < 0 || offset < -1)
            std::abort(); // problems always say what and where
    }

private:
    int64_t m_series = 0;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const QString dir = [] {
        const QString d = QDir::tempPath() + QStringLiteral("/fp8scope-fuzz-%1").arg(getpid());
        QDir().mkpath(d);
        return d;
    }();
    const QString path = dir + QStringLiteral("/" FUZZ_FILE_NAME);
    {
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly))
            return 0;
        f.write(reinterpret_cast<const char *>(data), qint64(size));
    }
    fp8scope::FUZZ_IMPORTER importer;
    CheckingSink sink;
    // The content's size: the bytes, or what they decompress to (read a block at a time, up to the most a fuzz
    // input can expand to within the run's memory limit).
    qint64 content = qint64(size);
    if (fp8scope::compressionOf(path) != fp8scope::Compression::None) {
        content = 0;
        fp8scope::DecompressedFile f(path);
        QString error;
        if (f.open(&error)) {
            for (QByteArray b; content < (qint64(256) << 20) && !(b = f.read(qint64(1) << 20)).isEmpty();)
                content += b.size();
        }
    }
    const fp8scope::ReadPosition end = importer.read(path, {}, sink);
    if (end.offset < 0 || end.offset > content)
        std::abort(); // a position inside the content
    if (importer.resumable() && content > 0)
        importer.read(path, {content / 2, 1}, sink);
    return 0;
}
