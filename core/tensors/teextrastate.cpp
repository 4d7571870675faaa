#include "teextrastate.h"

#include "torchfile.h"
#include "torchpickle.h"

#include <QRegularExpression>

#include <cmath>
#include <cstring>

namespace fp8scope {

using torchpickle::Kind;
using torchpickle::Program;
using torchpickle::Value;

namespace {

// A float32 tensor pickled by value, as contiguous floats; false with *why otherwise.
bool floatsOf(
    const Program &program, const Value &tensor, std::vector<float> *out, std::vector<int64_t> *shape, QString *why)
{
    if (tensor.kind != Kind::Tensor || tensor.items.empty()) {
        *why = tensor.kind == Kind::Refused ? tensor.text : QStringLiteral("not a tensor");
        return false;
    }
    const Value &storage = program.at(tensor.items[0]);
    if (storage.kind != Kind::Storage || storage.name != QLatin1String("FloatStorage") || storage.bytes.isNull()) {
        *why = QStringLiteral("not a float32 tensor pickled by value (%1)").arg(storage.name);
        return false;
    }
    int64_t numel = 1;
    int64_t expected = 1;
    for (size_t d = tensor.shape.size(); d-- > 0;) {
        if (tensor.shape[d] < 0 || tensor.stride[d] != expected) {
            *why = QStringLiteral("not contiguous");
            return false;
        }
        expected *= std::max<int64_t>(tensor.shape[d], 1);
        numel *= tensor.shape[d];
    }
    if (tensor.integer < 0 || numel > (int64_t(storage.bytes.size()) / 4) - tensor.integer) {
        *why = QStringLiteral("%1 elements from %2 on in a storage of %3 bytes")
                   .arg(numel)
                   .arg(tensor.integer)
                   .arg(storage.bytes.size());
        return false;
    }
    out->resize(size_t(numel));
    std::memcpy(out->data(), storage.bytes.constData() + tensor.integer * 4, size_t(numel) * 4);
    *shape = tensor.shape;
    return true;
}

} // namespace

double TeExtraState::historyAmax(int64_t column) const
{
    double m = NAN;
    if (column < 0 || column >= fwdTensors)
        return m;
    for (int64_t r = 0; r < historyLength; ++r) {
        const double v = amaxHistoryFwd[size_t(r * fwdTensors + column)];
        if (std::isfinite(v) && (std::isnan(m) || v > m))
            m = v;
    }
    return m;
}

bool parseTeExtraState(const QByteArray &bytes, TeExtraState *state, Problem *problem)
{
    *state = {};
    if (bytes.isEmpty())
        return true;
    Program program;
    QString error;
    int64_t offset = 0;
    torchpickle::Limits limits;
    limits.maxValues = int64_t(1) << 16;
    if (!program.run(bytes, &error, &offset, limits)) {
        *problem = {QString(), offset, error};
        return false;
    }
    const Value &root = program.at(program.root());
    if (root.kind == Kind::None) // TE 1.x wrote None for a module without FP8 state
        return true;
    if (root.kind != Kind::Dict) {
        *problem = {QString(), 0, QStringLiteral("Transformer Engine's extra state is not a dict")};
        return false;
    }
    state->empty = false;
    for (size_t i = 0; i + 1 < root.items.size(); i += 2) {
        const Value &key = program.at(root.items[i]);
        const Value &value = program.at(root.items[i + 1]);
        if (key.kind != Kind::String)
            continue;
        QString why;
        std::vector<int64_t> shape;
        if (key.text == QLatin1String("recipe")) {
            // The recipe object is not built: its class, from the global the pickle names.
            static const QRegularExpression global(QStringLiteral("'([A-Za-z_][\\w.]*)'"));
            const QRegularExpressionMatch m = global.match(value.text);
            state->recipe = value.kind == Kind::Refused && m.hasMatch() ? m.captured(1) : QStringLiteral("?");
        } else if (key.text == QLatin1String("scale_fwd")) {
            if (!floatsOf(program, value, &state->scaleFwd, &shape, &why)) {
                *problem = {QString(), 0, QStringLiteral("scale_fwd: %1").arg(why)};
                return false;
            }
        } else if (key.text == QLatin1String("amax_history_fwd")) {
            if (!floatsOf(program, value, &state->amaxHistoryFwd, &shape, &why) || shape.size() != 2) {
                *problem = {QString(), 0,
                    QStringLiteral("amax_history_fwd: %1").arg(why.isEmpty() ? QStringLiteral("not 2-D") : why)};
                return false;
            }
            state->historyLength = shape[0];
            state->fwdTensors = shape[1];
        }
    }
    return true;
}

bool readTeExtraStates(
    const QString &path, QHash<QString, TeExtraState> *states, std::vector<Problem> *skipped, Problem *problem)
{
    auto archive = TorchArchive::open(path, problem);
    if (!archive)
        return false;
    static const QLatin1String suffix("._extra_state");
    for (const TorchEntry &e : archive->contents().tensors) {
        if (!e.name.endsWith(suffix))
            continue;
        // A uint8 tensor of one dimension, as TE returns it.
        if (e.dtypeName != QLatin1String("uint8") || e.shape.size() != 1 || e.storageOffset < 0
            || e.shape[0] > e.storageNumel - e.storageOffset) {
            skipped->push_back(
                {path, -1, QStringLiteral("%1 is not the uint8 tensor Transformer Engine writes").arg(e.name)});
            continue;
        }
        QByteArray bytes(qsizetype(e.shape[0]), '\0');
        Problem p;
        if (e.shape[0] > 0 && !archive->readStorage(e.storageKey, e.storageOffset, e.shape[0], bytes.data(), &p)) {
            skipped->push_back(p);
            continue;
        }
        TeExtraState state;
        if (!parseTeExtraState(bytes, &state, &p)) {
            skipped->push_back({path, p.offset, QStringLiteral("%1: %2").arg(e.name, p.message)});
            continue;
        }
        states->insert(e.name.chopped(suffix.size()), state);
    }
    return true;
}

} // namespace fp8scope
