// The audit of an FP8 inference checkpoint (core/audit) against a plain read of the same bytes, in the same
// run: the audit streams every weight a band at a time, so it should cost little more than reading them.
// Writes a compressed-tensors style export (per-tensor scales, 32 MiB E4M3 weights in 512 MiB shards) of the
// size asked, and for the second row a quarter of it with its bfloat16 reference beside it.
//
// Usage: bench_audit [MiB, default 2048] [repeats, default 3] [threads, default all]
#include "benchutil.h"
#include "core/audit/checkpointaudit.h"
#include "core/formats/fp8math.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTextStream>

#include <cstring>
#include <random>
#include <thread>

using namespace fp8scope;

namespace {

constexpr int64_t kRows = 4096;
constexpr int64_t kCols = 8192; // 32 MiB of E4M3 a layer
constexpr int kLayersPerShard = 16;
constexpr float kScale = 1e-3f;

void writeSafetensors(const QString &path, const QJsonObject &header, const std::vector<const QByteArray *> &parts)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        qFatal("cannot write %s", qPrintable(path));
    QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (json.size() % 8)
        json += ' ';
    QByteArray len(8, '\0');
    for (int i = 0; i < 8; ++i)
        len[i] = char((quint64(json.size()) >> (8 * i)) & 0xFF);
    f.write(len);
    f.write(json);
    for (const QByteArray *p : parts)
        f.write(*p);
}

// `layers` layers of E4M3 codes (and, with `reference`, their bfloat16 values in another folder).
void writeExport(const QString &dir, int layers, const QString &referenceDir, const QByteArray &codes)
{
    QDir().mkpath(dir);
    QFile config(QDir(dir).filePath(QStringLiteral("config.json")));
    config.open(QIODevice::WriteOnly);
    config.write(R"({"quantization_config":{"quant_method":"compressed-tensors","config_groups":{"g":{"weights":)"
                 R"({"type":"float","num_bits":8,"strategy":"tensor"}}}}})");
    config.close();
    const QByteArray scale(reinterpret_cast<const char *>(&kScale), 4);
    QByteArray bf16;
    if (!referenceDir.isEmpty()) {
        QDir().mkpath(referenceDir);
        bf16.resize(codes.size() * 2);
        for (qsizetype i = 0; i < codes.size(); ++i) {
            const float v = fp8math::decodeCode(uint8_t(codes[i]), fp8math::Format::E4M3) * kScale;
            const uint16_t h = uint16_t(fp8math::floatBits(v) >> 16);
            std::memcpy(bf16.data() + 2 * i, &h, 2);
        }
    }
    for (int shard = 0; shard * kLayersPerShard < layers; ++shard) {
        QJsonObject header, refHeader;
        std::vector<const QByteArray *> parts, refParts;
        int64_t offset = 0, refOffset = 0;
        for (int l = shard * kLayersPerShard; l < std::min(layers, (shard + 1) * kLayersPerShard); ++l) {
            const QString name = QStringLiteral("model.layers.%1.mlp.down_proj").arg(l);
            header.insert(name + QStringLiteral(".weight"),
                QJsonObject {{QStringLiteral("dtype"), QStringLiteral("F8_E4M3")},
                    {QStringLiteral("shape"), QJsonArray {qint64(kRows), qint64(kCols)}},
                    {QStringLiteral("data_offsets"), QJsonArray {qint64(offset), qint64(offset + codes.size())}}});
            offset += codes.size();
            parts.push_back(&codes);
            header.insert(name + QStringLiteral(".weight_scale"),
                QJsonObject {{QStringLiteral("dtype"), QStringLiteral("F32")},
                    {QStringLiteral("shape"), QJsonArray {1}},
                    {QStringLiteral("data_offsets"), QJsonArray {qint64(offset), qint64(offset + 4)}}});
            offset += 4;
            parts.push_back(&scale);
            if (!referenceDir.isEmpty()) {
                refHeader.insert(name + QStringLiteral(".weight"),
                    QJsonObject {{QStringLiteral("dtype"), QStringLiteral("BF16")},
                        {QStringLiteral("shape"), QJsonArray {qint64(kRows), qint64(kCols)}},
                        {QStringLiteral("data_offsets"),
                            QJsonArray {qint64(refOffset), qint64(refOffset + bf16.size())}}});
                refOffset += bf16.size();
                refParts.push_back(&bf16);
            }
        }
        writeSafetensors(QDir(dir).filePath(QStringLiteral("model-%1.safetensors").arg(shard)), header, parts);
        if (!referenceDir.isEmpty())
            writeSafetensors(
                QDir(referenceDir).filePath(QStringLiteral("model-%1.safetensors").arg(shard)), refHeader, refParts);
    }
}

// Reads every .safetensors file of the folders, 4 MiB at a time, on `threads` threads (a file to a thread).
int64_t plainRead(const QStringList &dirs, int threads)
{
    QStringList files;
    for (const QString &d : dirs) {
        for (const QString &f : QDir(d).entryList({QStringLiteral("*.safetensors")}, QDir::Files, QDir::Name))
            files << QDir(d).filePath(f);
    }
    std::atomic<int> next {0};
    std::atomic<int64_t> total {0};
    const auto work = [&] {
        std::vector<char> buffer(4 << 20);
        for (int i = next++; i < files.size(); i = next++) {
            QFile f(files[i]);
            f.open(QIODevice::ReadOnly);
            int64_t sum = 0;
            for (qint64 n; (n = f.read(buffer.data(), qint64(buffer.size()))) > 0;)
                sum += n + buffer[size_t(n - 1)];
            total += sum;
        }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (std::thread &t : pool)
        t.join();
    return total;
}

} // namespace

int main(int argc, char **argv)
{
    const int mib = argc > 1 ? std::max(64, atoi(argv[1])) : 2048;
    const int repeats = argc > 2 ? std::max(1, atoi(argv[2])) : 3;
    const int threads = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : int(std::thread::hardware_concurrency());
    QTextStream out(stdout);
    QTemporaryDir dir;
    QByteArray codes(kRows * kCols, '\0');
    std::mt19937 rng(3);
    for (char &c : codes)
        c = char(rng() % 0x7F | ((rng() & 1) << 7)); // finite E4M3 codes of both signs
    const int layers = std::max(1, mib / 32);
    const QString big = dir.filePath(QStringLiteral("export"));
    const QString small = dir.filePath(QStringLiteral("export-small"));
    const QString reference = dir.filePath(QStringLiteral("reference"));
    writeExport(big, layers, {}, codes);
    writeExport(small, std::max(1, layers / 4), reference, codes);

    out << "fp8scope audit benchmark: " << threads << " threads, " << repeats
        << " repeats (medians; the audit and the read alternate)\n";
    out << QStringLiteral("%1 %2 %3 %4 %5\n")
               .arg(QStringLiteral("case"), -44)
               .arg(QStringLiteral("MiB read"), 9)
               .arg(QStringLiteral("audit s"), 9)
               .arg(QStringLiteral("read s"), 9)
               .arg(QStringLiteral("audit/read"), 11);
    const auto row
        = [&](const QString &name, const QString &checkpoint, const QStringList &refs, const QStringList &dirs) {
              AuditOptions options;
              options.references = refs;
              options.threads = threads;
              int64_t bytes = 0;
              size_t findings = 0;
              const auto audit = [&] {
                  Problem problem;
                  const auto r = auditCheckpoint(checkpoint, options, &problem);
                  if (!r)
                      qFatal("%s", qPrintable(problem.toString()));
                  bytes = r->bytesRead;
                  findings = r->findings.size();
              };
              const auto read = [&] { plainRead(dirs, threads); };
              read(); // into the page cache
              const bench::Paired p = bench::pairedMedians(repeats, audit, read);
              out << QStringLiteral("%1 %2 %3 %4 %5\n")
                         .arg(name, -44)
                         .arg(double(bytes) / (1 << 20), 9, 'f', 0)
                         .arg(p.workSeconds, 9, 'f', 3)
                         .arg(p.referenceSeconds, 9, 'f', 3)
                         .arg(1.0 / p.ratio, 11, 'f', 2);
              if (findings != 0)
                  out << "  (unexpected: " << findings << " findings)\n";
              out.flush();
          };
    row(QStringLiteral("%1 MiB export, no reference").arg(layers * 32), big, {}, {big});
    row(QStringLiteral("%1 MiB export + bfloat16 reference").arg(std::max(1, layers / 4) * 32), small, {reference},
        {small, reference});
    out << "target: audit/read at most 1.5 (docs/PERFORMANCE.md)\n";
    return 0;
}
