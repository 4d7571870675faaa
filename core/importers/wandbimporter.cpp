#include "wandbimporter.h"

#include "configlimits.h"
#include "jsonimporters.h"
#include "megatronlogimporter.h"
#include "tableimporters.h"
#include "wandblog.h"

#include "importers/wandb.pb.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

namespace fp8scope {

namespace {

const QString kSource = QStringLiteral("wandb");
const QString kSummarySource = QStringLiteral("wandb-summary");

// A value_json as a number: JSON numbers, the bare NaN, Infinity and -Infinity W&B writes, true and false as 1
// and 0. Strings, null, lists and objects are none.
bool jsonNumber(std::string_view v, double *out)
{
    if (v.empty())
        return false;
    const char c = v.front();
    if (c == '-' || (c >= '0' && c <= '9')) {
        if (v == "-Infinity") {
            *out = -std::numeric_limits<double>::infinity();
            return true;
        }
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
        return ec == std::errc() && end == v.data() + v.size();
    }
    if (v == "NaN") {
        *out = std::numeric_limits<double>::quiet_NaN();
        return true;
    }
    if (v == "Infinity") {
        *out = std::numeric_limits<double>::infinity();
        return true;
    }
    if (v == "true" || v == "false") {
        *out = v == "true" ? 1 : 0;
        return true;
    }
    return false;
}

bool isNonFiniteWord(const QString &s)
{
    return s == QLatin1String("NaN") || s == QLatin1String("Infinity") || s == QLatin1String("-Infinity");
}

// A JSON value in W&B's dialect as Qt reads JSON: NaN and the infinities outside strings quoted.
QJsonValue parseJsonValue(const std::string &v, bool *ok)
{
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(quoteNonFinite("[" + QByteArray::fromStdString(v) + "]"), &error);
    *ok = error.error == QJsonParseError::NoError && doc.isArray() && doc.array().size() == 1;
    return *ok ? doc.array().at(0) : QJsonValue();
}

// An item's key: its nested path joined with `separator`, or its key (the legacy writer's).
std::string itemKey(const wandb::Item &item, char separator)
{
    if (item.nested_key_size() == 0)
        return item.key();
    std::string key = item.nested_key(0);
    for (int i = 1; i < item.nested_key_size(); ++i) {
        key += separator;
        key += item.nested_key(i);
    }
    return key;
}

// The terminal's view of a console line: what a carriage return redraws is the text after it; colours and other
// escape sequences (ESC [ ... letter) are left out.
QString consoleText(std::string_view raw)
{
    while (!raw.empty() && raw.back() == '\r')
        raw.remove_suffix(1);
    if (const size_t cr = raw.rfind('\r'); cr != std::string_view::npos)
        raw.remove_prefix(cr + 1);
    std::string text;
    text.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\x1b' && i + 1 < raw.size() && raw[i + 1] == '[') {
            i += 2;
            while (i < raw.size() && !((raw[i] >= '@' && raw[i] <= '~')))
                ++i;
            continue;
        }
        text += raw[i];
    }
    return QString::fromUtf8(text.data(), qsizetype(text.size()));
}

class Reader
{
public:
    Reader(IngestSink &sink, const ReadPosition &from)
        : m_sink(sink)
        , m_console(sink, from.steps)
        , m_fromSteps(from.steps)
        , m_lastStep(from.steps.lastRow)
        , m_record(from.line)
    {
    }

    void record(int64_t offset, const wandb::Record &r)
    {
        ++m_record;
        switch (r.record_type_case()) {
        case wandb::Record::kHistory: history(r.history()); break;
        case wandb::Record::kSummary: summary(r.summary()); break;
        case wandb::Record::kConfig: config(r.config()); break;
        case wandb::Record::kOutput: console(offset, r.output()); break;
        case wandb::Record::kOutputRaw: console(offset, r.output_raw()); break;
        case wandb::Record::kTelemetry: telemetry(r.telemetry()); break;
        case wandb::Record::kRun: run(r.run()); break;
        case wandb::Record::kEnvironment: environment(r.environment()); break;
        default: break;
        }
    }

    // A record that is no Record message: counted; its number.
    int64_t skip() { return ++m_record; }

    // What the read leaves: the summary's own keys, what was skipped (said once), where the steps stand.
    void finish(ReadPosition *end)
    {
        const int64_t at = std::max<int64_t>(m_lastStep, 0);
        for (const auto &[key, value] : m_summary) {
            if (m_historyKeys.count(key) == 0)
                m_sink.point({QString(), QString(), QString::fromStdString(key), kSummarySource, QString()}, at, value);
        }
        if (!m_media.empty()) {
            QStringList kinds;
            for (const auto &[type, keys] : m_media) {
                QStringList names;
                for (const std::string &k : keys.second)
                    names << QString::fromStdString(k);
                kinds << QStringLiteral("%1 %2 (keys: %3)")
                             .arg(keys.first)
                             .arg(QString::fromStdString(type), names.join(QStringLiteral(", ")));
            }
            m_sink.problem(m_firstMedia, -1,
                QStringLiteral("W&B media, tables and histograms are not read: %1")
                    .arg(kinds.join(QStringLiteral("; "))));
        }
        if (m_textValues > 0) {
            QStringList names;
            for (const std::string &k : m_textKeys)
                names << QString::fromStdString(k);
            m_sink.problem(m_firstText, -1,
                QStringLiteral("%1 history values that are not numbers (text, lists) are not read (keys: %2)")
                    .arg(m_textValues)
                    .arg(names.join(QStringLiteral(", "))));
        }
        reportConfigBudget(m_budget, m_sink);
        m_console.finish(&end->steps);
        end->steps.lastRow = m_lastStep;
        end->line = m_record;
    }

private:
    int64_t series(const std::string &key)
    {
        const auto it = m_series.find(key);
        if (it != m_series.end())
            return it->second;
        const int64_t handle = m_sink.series({QString(), QString(), QString::fromStdString(key), kSource, QString()});
        m_series.emplace(key, handle);
        m_historyKeys.insert(key);
        return handle;
    }

    // The keys of a record's media objects (a subtree with a `_type` leaf), counted by type.
    std::set<std::string> mediaPrefixes(const google::protobuf::RepeatedPtrField<wandb::Item> &items)
    {
        std::set<std::string> prefixes;
        for (const wandb::Item &item : items) {
            const int n = item.nested_key_size();
            if (n < 2 || item.nested_key(n - 1) != "_type")
                continue;
            std::string prefix = item.nested_key(0);
            for (int i = 1; i < n - 1; ++i)
                prefix += '/' + item.nested_key(i);
            std::string type = item.value_json();
            if (type.size() >= 2 && type.front() == '"')
                type = type.substr(1, type.size() - 2);
            noteMedia(type, prefix);
            prefixes.insert(prefix + '/');
        }
        return prefixes;
    }

    // Whether a key lies in a media object: one of its '/'-prefixes is one of theirs.
    static bool inMedia(const std::string &key, const std::set<std::string> &media)
    {
        if (media.empty())
            return false;
        for (size_t slash = key.find('/'); slash != std::string::npos; slash = key.find('/', slash + 1)) {
            if (media.count(key.substr(0, slash + 1)) > 0)
                return true;
        }
        return false;
    }

    void noteMedia(const std::string &type, const std::string &key)
    {
        if (m_media.empty())
            m_firstMedia = m_record;
        auto &entry = m_media[type];
        ++entry.first;
        if (entry.second.size() < 5)
            entry.second.insert(key);
    }

    void noteText(const std::string &key)
    {
        if (m_textValues++ == 0)
            m_firstText = m_record;
        if (m_textKeys.size() < 5)
            m_textKeys.insert(key);
    }

    // A history or summary item's numeric value; false for what is no number (media noted by the caller).
    bool itemValue(const wandb::Item &item, double *out)
    {
        if (item.has_number()) {
            *out = item.number();
            return true;
        }
        if (item.has_integer()) {
            *out = double(item.integer());
            return true;
        }
        if (item.has_boolean()) {
            *out = item.boolean() ? 1 : 0;
            return true;
        }
        if (item.has_none() || item.has_text())
            return false;
        return jsonNumber(item.has_json() ? item.json() : item.value_json(), out);
    }

    // A legacy item whose value is a JSON object: its numeric leaves, keys joined with '/'; a media object (one
    // with "_type") noted.
    void objectLeaves(const std::string &prefix, const QJsonObject &o, std::vector<std::pair<std::string, double>> *out)
    {
        if (const QJsonValue type = o.value(QLatin1String("_type")); type.isString()) {
            noteMedia(type.toString().toStdString(), prefix);
            return;
        }
        for (auto it = o.begin(); it != o.end(); ++it) {
            const std::string key = prefix + '/' + it.key().toStdString();
            if (it.value().isObject())
                objectLeaves(key, it.value().toObject(), out);
            else if (it.value().isDouble())
                out->emplace_back(key, it.value().toDouble());
            else if (it.value().isBool())
                out->emplace_back(key, it.value().toBool() ? 1.0 : 0.0);
            else if (double v = 0; it.value().isString() && isNonFiniteWord(it.value().toString())
                     && jsonNumber(it.value().toString().toStdString(), &v))
                out->emplace_back(key, v); // NaN or an infinity, quoted by quoteNonFinite
        }
    }

    void history(const wandb::HistoryRecord &h)
    {
        // The row's step: its `_step` (wandb-core also sets the HistoryStep), else the next after the last row.
        int64_t step = h.has_step()                            ? h.step().num()
            : m_lastStep < std::numeric_limits<int64_t>::max() ? m_lastStep + 1
                                                               : m_lastStep;
        double wall = NAN;
        bool hasMedia = false;
        for (const wandb::Item &item : h.item()) {
            const int n = item.nested_key_size();
            const std::string &top = n > 0 ? item.nested_key(0) : item.key();
            if (top == "_step" && n <= 1) {
                double v;
                // Within int64_t's range (the cast of a larger double is undefined).
                if (itemValue(item, &v) && std::abs(v) < 9.2e18)
                    step = int64_t(v);
            } else if (top == "_timestamp" && n <= 1) {
                double v;
                if (itemValue(item, &v))
                    wall = v;
            }
            hasMedia = hasMedia || (n >= 2 && item.nested_key(n - 1) == "_type");
        }
        const std::set<std::string> media = hasMedia ? mediaPrefixes(h.item()) : std::set<std::string>();
        for (const wandb::Item &item : h.item()) {
            const int n = item.nested_key_size();
            const std::string &top = n > 0 ? item.nested_key(0) : item.key();
            if (top.empty() || top.front() == '_')
                continue; // W&B's own: _step, _runtime, _timestamp, _wandb
            const std::string key = itemKey(item, '/');
            if (hasMedia) {
                if (inMedia(key, media))
                    continue;
            }
            double v;
            if (itemValue(item, &v)) {
                m_sink.point(series(key), step, v, wall);
                continue;
            }
            const std::string &json = item.value_json();
            if (!json.empty() && json.front() == '{') {
                bool ok = false;
                const QJsonValue value = parseJsonValue(json, &ok);
                std::vector<std::pair<std::string, double>> leaves;
                if (ok && value.isObject())
                    objectLeaves(key, value.toObject(), &leaves);
                for (const auto &[leaf, x] : leaves)
                    m_sink.point(series(leaf), step, x, wall);
                continue;
            }
            if (json != "null")
                noteText(key);
        }
        m_lastStep = std::max(m_lastStep, step);
    }

    void summary(const wandb::SummaryRecord &s)
    {
        // wandb-core mirrors each history row into the summary, with the row's _step: those keys are the
        // history's (a read of a grown log may not see their rows). What the program set in the summary itself
        // (run.summary["eval/accuracy"] = ...) comes without one.
        bool hasMedia = false;
        for (const wandb::Item &item : s.update()) {
            const int n = item.nested_key_size();
            hasMedia = hasMedia || (n >= 2 && item.nested_key(n - 1) == "_type");
            if ((n == 1 && item.nested_key(0) == "_step") || (n == 0 && item.key() == "_step"))
                return;
        }
        std::set<std::string> media;
        if (hasMedia) {
            // The summary repeats the history's media: noted there already.
            const auto saved = m_media;
            const int64_t first = m_firstMedia;
            media = mediaPrefixes(s.update());
            m_media = saved;
            m_firstMedia = first;
        }
        for (const wandb::Item &item : s.update()) {
            const int n = item.nested_key_size();
            const std::string &top = n > 0 ? item.nested_key(0) : item.key();
            if (top.empty() || top.front() == '_')
                continue;
            const std::string key = itemKey(item, '/');
            double v;
            if (!inMedia(key, media) && itemValue(item, &v))
                m_summary[key] = v;
        }
        for (const wandb::Item &item : s.remove())
            m_summary.erase(itemKey(item, '/'));
    }

    void config(const wandb::ConfigRecord &c)
    {
        for (const wandb::Item &item : c.update()) {
            const int n = item.nested_key_size();
            const std::string &top = n > 0 ? item.nested_key(0) : item.key();
            if (top.empty() || top == "_wandb")
                continue;
            const QString key = QString::fromStdString(itemKey(item, '.'));
            bool ok = false;
            QJsonValue value = parseJsonValue(item.value_json(), &ok);
            // wandb.config values are {"value": ..., "desc": ...} in the legacy writer's config records.
            if (ok && value.isObject()) {
                const QJsonObject o = value.toObject();
                if (o.contains(QLatin1String("value"))
                    && (o.size() == 1 || (o.size() == 2 && o.contains(QLatin1String("desc")))))
                    value = o.value(QLatin1String("value"));
            }
            if (ok)
                flattenConfig(key, value, m_sink, m_budget, 0);
            else if (m_budget.take())
                m_sink.config(key, QString::fromStdString(item.value_json()));
        }
    }

public:
    // Where the console text still waiting for its newline began: a read of a log being written that ends there
    // is read on from that record next time (W&B writes a line and its newline as two records), so that no line
    // is lost between two reads.
    static constexpr int64_t kMaxHeld = int64_t(1) << 20;
    struct Held {
        int64_t offset = -1; // -1: nothing waits
        int64_t records = 0; // the records before it
        StepPlacement steps; // where the steps stood before it
    };

    // `stop`: where the read ends. Text that waits longer than kMaxHeld bytes of log (a progress bar redrawn by
    // carriage returns, a write that never ends its line) is not held for: each read would read it again.
    bool consoleWaiting(int64_t stop, Held *held) const
    {
        if (m_held.offset < 0 || stop - m_held.offset > kMaxHeld)
            return false;
        *held = m_held;
        return true;
    }

    // The console's last line without its newline, as a line (a log that has stopped growing).
    void flushConsole(int64_t offset)
    {
        for (std::string *pending : {&m_stdout, &m_stderr}) {
            if (!pending->empty()) {
                *pending += '\n';
                wandb::OutputRecord none;
                none.set_output_type(pending == &m_stderr ? 0 : 1);
                console(offset, none);
            }
        }
    }

private:
    void console(int64_t offset, const wandb::OutputRecord &o)
    {
        if (m_stdout.empty() && m_stderr.empty()) {
            m_held.offset = offset;
            m_held.records = m_record - 1;
            m_held.steps = m_fromSteps;
            m_console.finish(&m_held.steps);
            m_held.steps.lastRow = m_lastStep;
        }
        std::string &pending = o.output_type() == 0 ? m_stderr : m_stdout;
        pending += o.line();
        size_t start = 0;
        for (size_t nl = pending.find('\n'); nl != std::string::npos; start = nl + 1, nl = pending.find('\n', start)) {
            TextLine l;
            l.text = consoleText(std::string_view(pending).substr(start, nl - start));
            l.number = m_record;
            l.offset = offset;
            m_console.handle(l);
        }
        pending.erase(0, start);
        // A line without its newline that never ends (a progress bar redrawn by carriage returns) is kept to its
        // last redraw.
        if (pending.size() > size_t(kMaxLine)) {
            const size_t cr = pending.rfind('\r');
            if (cr == std::string::npos || cr == 0 || pending.size() - cr > size_t(kMaxLine))
                pending.clear(); // no redraw to keep, or one longer than a line: no line
            else
                pending.erase(0, cr);
        }
        if (m_stdout.empty() && m_stderr.empty())
            m_held.offset = -1;
    }

    void telemetry(const wandb::TelemetryRecord &t)
    {
        const auto version = [&](const char *package, const std::string &v) {
            if (!v.empty())
                m_sink.version(QLatin1String(package), QString::fromStdString(v));
        };
        version("python", t.python_version());
        version("wandb", t.cli_version());
        version("transformers", t.huggingface_version());
    }

    void run(const wandb::RunRecord &r)
    {
        if (r.has_config())
            config(r.config());
        if (r.has_summary())
            summary(r.summary());
        if (r.has_telemetry())
            telemetry(r.telemetry());
        if (!r.notes().empty())
            m_sink.runInfo(QStringLiteral("notes"), QString::fromStdString(r.notes()));
        if (!r.run_group().empty())
            m_sink.runInfo(QStringLiteral("group"), QString::fromStdString(r.run_group()));
    }

    void environment(const wandb::EnvironmentRecord &e)
    {
        if (!e.cuda_version().empty())
            m_sink.version(QStringLiteral("cuda"), QString::fromStdString(e.cuda_version()));
    }

    IngestSink &m_sink;
    MegatronLines m_console;
    int64_t m_lastStep;
    // The number of the record being read, counted from the log's first (the line of the problems it has: a read
    // of a grown log drops those after where the last read stopped).
    int64_t m_record;
    int64_t m_firstMedia = 0, m_firstText = 0;
    StepPlacement m_fromSteps;
    Held m_held;
    std::string m_stdout, m_stderr;
    std::unordered_map<std::string, int64_t> m_series;
    std::set<std::string> m_historyKeys;
    std::map<std::string, double> m_summary;
    std::map<std::string, std::pair<int64_t, std::set<std::string>>> m_media; // by type: count, first keys
    int64_t m_textValues = 0;
    std::set<std::string> m_textKeys;
    ConfigBudget m_budget;
};

} // namespace

bool WandbImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    QString why;
    return fileName.endsWith(QLatin1String(".wandb")) && isWandbLogHeader(head, &why);
}

ReadPosition WandbImporter::read(const QString &path, const ReadPosition &from, IngestSink &sink)
{
    ReadPosition end = from;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        sink.problem(0, -1, QStringLiteral("cannot open: %1").arg(f.errorString()));
        return end;
    }
    const qint64 size = f.size();
    const uchar *mapped = size > 0 ? f.map(0, size) : nullptr;
    QByteArray copy;
    if (!mapped && size > 0)
        copy = f.readAll(); // a file system that cannot map it
    const QByteArrayView bytes
        = mapped ? QByteArrayView(reinterpret_cast<const char *>(mapped), size) : QByteArrayView(copy);
    QString why;
    if (!isWandbLogHeader(bytes.first(std::min<qsizetype>(bytes.size(), kWandbLogHeaderSize)).toByteArray(), &why)) {
        sink.problem(0, 0, why);
        return end;
    }
    Reader reader(sink, from);
    wandb::Record record;
    int64_t stop = 0;
    std::vector<Problem> problems;
    // Each problem's line is the number of the record it was met in (after the last whole one before it), so that
    // a later read of a grown log drops and says again only those of what it reads again.
    std::vector<int64_t> recordAt; // the offsets of the records read
    scanWandbLog(
        bytes, from.offset,
        [&](int64_t offset, QByteArrayView payload) {
            recordAt.push_back(offset);
            if (record.ParseFromArray(payload.data(), int(payload.size())))
                reader.record(offset, record);
            else
                sink.problem(reader.skip(), offset, QStringLiteral("a record that is no W&B Record message; skipped"));
            return true;
        },
        &stop, &problems);
    for (const Problem &p : problems) {
        const auto before = std::lower_bound(recordAt.begin(), recordAt.end(), p.offset) - recordAt.begin();
        sink.problem(from.line + int64_t(before) + 1, p.offset, p.message);
    }
    // A log not changed for a while is taken as finished: its console's last line without a newline is read.
    const bool settled
        = f.fileTime(QFileDevice::FileModificationTime).secsTo(QDateTime::currentDateTime()) >= kSettledSeconds;
    if (settled)
        reader.flushConsole(stop);
    reader.finish(&end);
    end.offset = stop;
    Reader::Held held;
    if (!settled && reader.consoleWaiting(stop, &held)) {
        end.offset = held.offset;
        end.line = held.records;
        end.steps = held.steps;
        end.pendingTail = true;
    }
    // Bytes after the last complete record: a record still being written, or a log cut short. Said once the log
    // has settled (a run being written finishes its record soon).
    if (stop < size && problems.empty()) {
        end.pendingTail = end.pendingTail || !settled;
        if (settled)
            sink.problem(end.line + 1, stop,
                QStringLiteral("the log ends inside a record (%1 bytes after the last whole one at offset %2): cut "
                               "short; every whole record before it is read")
                    .arg(size - stop)
                    .arg(stop));
    }
    return end;
}

LoggedRunName wandbRunName(const QString &path)
{
    LoggedRunName name;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return name;
    QByteArray head;
    for (qint64 want = 4096; want <= kMaxRunRecordSearch; want *= 4) {
        f.seek(head.size());
        head += f.read(want - head.size());
        bool found = false;
        int64_t stop = 0;
        std::vector<Problem> problems;
        wandb::Record record;
        scanWandbLog(
            head, kWandbLogHeaderSize,
            [&](int64_t, QByteArrayView payload) {
                if (!record.ParseFromArray(payload.data(), int(payload.size())) || !record.has_run())
                    return true;
                name.id = QString::fromStdString(record.run().run_id());
                name.name = QString::fromStdString(record.run().display_name());
                found = true;
                return false;
            },
            &stop, &problems);
        if (found || !problems.empty() || head.size() < want)
            break;
    }
    return name;
}

} // namespace fp8scope
