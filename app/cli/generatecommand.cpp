#include "generatecommand.h"

#include "app/common/commandline.h"

#include "core/formats/fp8math.h"
#include "core/tensors/hdf5dumpwriter.h"

#include <QCommandLineParser>
#include <QTextStream>

#include <cmath>
#include <random>

namespace fp8scope::cli {

namespace {

uint16_t toBf16(float x)
{
    return uint16_t(fp8math::castToCode(x, fp8math::Format::BF16));
}

} // namespace

int runGenerate(const QStringList &args)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    const QString rowsOpt = QStringLiteral("rows");
    const QString colsOpt = QStringLiteral("cols");
    const QString seedOpt = QStringLiteral("seed");
    if (const int rc = parseCommand(parser, *cliCommand(u"generate"), args))
        return rc < 0 ? 0 : rc;
    bool okRows = false;
    bool okCols = false;
    bool okSeed = false;
    const int64_t rows = parser.value(rowsOpt).toLongLong(&okRows);
    const int64_t cols = parser.value(colsOpt).toLongLong(&okCols);
    const uint32_t seed = parser.value(seedOpt).toUInt(&okSeed);
    bool okStep = false;
    const int64_t step = parser.value(QStringLiteral("step")).toLongLong(&okStep);
    if (parser.positionalArguments().size() != 1 || !okRows || !okCols || !okSeed || !okStep || step < 0
        || step > 999999999 || rows < 1 || cols < 1 || rows * cols > (int64_t(1) << 28)) {
        err << "fp8scope-cli generate: expected OUT.h5, positive --rows/--cols (at most 2^28 elements) and a --step "
               "from 0 to 999999999\n";
        return 2;
    }
    const QString path = parser.positionalArguments().front();
    Problem problem;
    auto writer = Hdf5DumpWriter::create(path, &problem);
    if (!writer) {
        err << "fp8scope-cli: " << problem.toString() << '\n';
        return 1;
    }
    writer->setRootAttribute("precision", QStringLiteral("fp8"));
    writer->setRootAttribute("recipe", QStringLiteral("delayed"));

    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    const size_t n = size_t(rows * cols);
    const std::vector<int64_t> shape {rows, cols};

    const QString layers[] = {
        QStringLiteral("model.layers.0.self_attention.linear_qkv"), QStringLiteral("model.layers.11.mlp.linear_fc2")};
    for (const QString &layer : layers) {
        const QString base = QStringLiteral("/iter_%1/").arg(step, 6, 10, QLatin1Char('0')) + layer + QLatin1Char('/');
        // Activations: unit Gaussian with rare outliers 300x larger than the recent amax history knew.
        std::vector<uint16_t> act(n);
        for (size_t i = 0; i < n; ++i) {
            float v = normal(rng);
            if (uniform(rng) < 1e-3f)
                v *= 300.0f;
            act[i] = toBf16(v);
        }
        // Gradients: log-uniform magnitudes across 2^-30..2^-4, many below E4M3's reach under one scale.
        std::vector<float> grad(n);
        for (size_t i = 0; i < n; ++i) {
            const float mag = std::exp2(-30.0f + 26.0f * uniform(rng));
            grad[i] = normal(rng) < 0 ? -mag : mag;
        }
        // Weights: small Gaussian.
        std::vector<float> weight(n);
        for (float &w : weight)
            w = 0.02f * normal(rng);
        DumpTensorAttributes a;
        a.recipe = QStringLiteral("delayed");
        a.fp8Format = QStringLiteral("E4M3");
        a.amaxHistory = {4.5f, 4.4f, 4.6f, 4.3f};
        bool ok = writer->writeTensor(base + QStringLiteral("activation"), DType::BF16, shape, act.data(), a, &problem);
        a.fp8Format = QStringLiteral("E5M2");
        a.amaxHistory = {0.5f, 0.45f}; // stale: earlier steps had larger gradients
        ok = ok && writer->writeTensor(base + QStringLiteral("gradient"), DType::F32, shape, grad.data(), a, &problem);
        a.fp8Format = QStringLiteral("E4M3");
        a.amaxHistory = {0.1f};
        ok = ok && writer->writeTensor(base + QStringLiteral("weight"), DType::F32, shape, weight.data(), a, &problem);
        if (!ok) {
            err << "fp8scope-cli: " << problem.toString() << '\n';
            return 1;
        }
        out << "wrote " << base << "{activation,gradient,weight}\n";
    }
    out << "dump written to " << path << '\n';
    return 0;
}

} // namespace fp8scope::cli
