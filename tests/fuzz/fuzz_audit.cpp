// libFuzzer target: the checkpoint audit (core/audit) of an export made of arbitrary bytes: a config.json (the
// bytes up to the first NUL) and a model.safetensors (the rest). Whatever they hold, the audit answers or refuses
// with a problem; it never crashes, and a layer it audits names a tensor the header holds.
#include "core/audit/checkpointaudit.h"

#include <QFile>
#include <QTemporaryDir>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray bytes(reinterpret_cast<const char *>(data), qsizetype(size));
    const qsizetype nul = bytes.indexOf('\0');
    const QByteArray config = nul < 0 ? QByteArray() : bytes.left(nul);
    const QByteArray file = nul < 0 ? bytes : bytes.mid(nul + 1);
    static QTemporaryDir dir;
    for (const auto &[name, content] :
        {std::pair {QStringLiteral("config.json"), config}, std::pair {QStringLiteral("model.safetensors"), file}}) {
        QFile f(dir.filePath(name));
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(content) != content.size())
            return 0;
    }
    fp8scope::AuditOptions options;
    options.threads = 1;
    options.activationAmax.insert(QStringLiteral("decoder.layers.0.mlp.linear_fc2"), {3.0, 2.5, 10});
    fp8scope::Problem problem;
    const auto result = fp8scope::auditCheckpoint(dir.path(), options, &problem);
    if (!result && problem.message.isEmpty())
        __builtin_trap(); // a refusal says why
    if (result) {
        for (const fp8scope::AuditLayer &l : result->layers) {
            if (l.name.isEmpty() || l.shape.size() < 2)
                __builtin_trap();
        }
        fp8scope::auditToJson(*result);
    }
    return 0;
}
