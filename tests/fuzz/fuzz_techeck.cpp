// libFuzzer target: a DumpTensors file (a torch.save zip, written to a temporary file as the check reads one),
// its Transformer Engine quantized tensor compared with its high_precision one (every buffer's shape checked
// before it is indexed), and the block map of the high-precision tensor under each kind of block recipe.
#include "core/numerics/blockmap.h"
#include "core/numerics/techeck.h"
#include "core/tensors/tensorreader.h"

#include <QDir>
#include <QTemporaryFile>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    QTemporaryFile file(QDir::tempPath() + QStringLiteral("/fuzz-techeck-XXXXXX.pt"));
    if (!file.open() || file.write(reinterpret_cast<const char *>(data), qint64(size)) != qint64(size))
        return 0;
    file.flush();
    const QString path = file.fileName();
    fp8scope::Problem problem;
    (void)fp8scope::checkTeQuantized(path, {}, &problem);
    // Small tensors only: the map of a large one is the benchmark's, not the fuzzer's.
    auto reader = fp8scope::openTensor(path + QStringLiteral(":high_precision"), &problem);
    if (!reader || reader->info().numel > (int64_t(1) << 20))
        return 0;
    QString error;
    for (const char *name : {"mxfp8", "mxfp8-col", "nvfp4", "block128x128", "current"}) {
        const std::optional<fp8scope::Recipe> recipe
            = fp8scope::Recipe::parse(QString::fromLatin1(name), std::nullopt, &error);
        if (const std::optional<fp8scope::BlockMap> m = fp8scope::computeBlockMap(*reader, *recipe, &problem, 1)) {
            (void)m->toJson(3);
            if (m->blocks() > 0)
                (void)fp8scope::blockValues(*reader, *m, m->blocks() - 1, &problem);
        }
    }
    return 0;
}
