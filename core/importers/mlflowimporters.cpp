#include "mlflowimporters.h"

#include "configlimits.h"
#include "otherimporters.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QHash>

#include <sqlite3.h>
#include <yaml-cpp/yaml.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

namespace fp8scope {

namespace {

const QString kSource = QStringLiteral("mlflow");

// MLflow stores +-inf as +-DBL_MAX (its SQL backends cannot hold infinities); NaN as 0 with is_nan set.
double storedValue(double v, bool isNan)
{
    if (isNan)
        return std::numeric_limits<double>::quiet_NaN();
    if (v == DBL_MAX)
        return std::numeric_limits<double>::infinity();
    if (v == -DBL_MAX)
        return -std::numeric_limits<double>::infinity();
    return v;
}

// A tag as the run's: MLflow's own (mlflow.*) are left out but for the note, which is the run's notes.
void tag(const QString &key, const QString &value, IngestSink &sink, ConfigBudget &budget)
{
    if (key == QLatin1String("mlflow.note.content")) {
        sink.runInfo(QStringLiteral("notes"), value);
        return;
    }
    if (key.startsWith(QLatin1String("mlflow.")) || !budget.take())
        return;
    sink.config(QStringLiteral("tag.") + key, value);
}

QString shortId(const QString &id)
{
    return id.left(8);
}

// Runs' names: their own, the short id where two share one, the whole id where two share that.
QHash<QString, QString> uniqueNames(const std::vector<std::pair<QString, QString>> &idAndName)
{
    QHash<QString, int> count;
    for (const auto &[id, name] : idAndName)
        ++count[name.isEmpty() ? shortId(id) : name];
    QHash<QString, int> shortCount;
    for (const auto &[id, name] : idAndName)
        ++shortCount[shortId(id)];
    QHash<QString, QString> out;
    for (const auto &[id, name] : idAndName) {
        const QString own = name.isEmpty() ? shortId(id) : name;
        out.insert(id, count.value(own) == 1 ? own : shortCount.value(shortId(id)) == 1 ? shortId(id) : id);
    }
    return out;
}

class Db
{
public:
    ~Db()
    {
        if (m_db)
            sqlite3_close(m_db);
    }
    bool open(const QString &path, QString *error)
    {
        const QByteArray name = QFile::encodeName(path);
        if (sqlite3_open_v2(name.constData(), &m_db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
            *error = QString::fromUtf8(m_db ? sqlite3_errmsg(m_db) : "cannot open");
            return false;
        }
        sqlite3_busy_timeout(m_db, 5000); // MLflow writing a run now holds the lock a moment at a time
        return true;
    }
    sqlite3 *handle() const { return m_db; }
    QString error() const { return QString::fromUtf8(sqlite3_errmsg(m_db)); }

private:
    sqlite3 *m_db = nullptr;
};

class Query
{
public:
    Query(const Db &db, const char *sql)
        : m_db(db.handle())
    {
        m_ok = sqlite3_prepare_v2(m_db, sql, -1, &m_stmt, nullptr) == SQLITE_OK && m_stmt;
    }
    ~Query() { sqlite3_finalize(m_stmt); }
    bool ok() const { return m_ok; }
    Query &bind(int i, const QString &v)
    {
        m_bound = v.toUtf8();
        sqlite3_bind_text(m_stmt, i, m_bound.constData(), int(m_bound.size()), SQLITE_TRANSIENT);
        return *this;
    }
    bool next()
    {
        if (!m_ok)
            return false;
        const int rc = sqlite3_step(m_stmt);
        m_ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
        return rc == SQLITE_ROW;
    }
    // Ready to run again (after an error too: one busy run does not stop the next ones).
    void reset()
    {
        sqlite3_reset(m_stmt);
        m_ok = m_stmt != nullptr;
    }
    QString text(int i) const
    {
        const auto *t = reinterpret_cast<const char *>(sqlite3_column_text(m_stmt, i));
        return t ? QString::fromUtf8(t, sqlite3_column_bytes(m_stmt, i)) : QString();
    }
    double real(int i) const { return sqlite3_column_double(m_stmt, i); }
    int64_t int64(int i) const { return sqlite3_column_int64(m_stmt, i); }
    bool isNull(int i) const { return sqlite3_column_type(m_stmt, i) == SQLITE_NULL; }

private:
    sqlite3 *m_db;
    sqlite3_stmt *m_stmt = nullptr;
    bool m_ok = false;
    QByteArray m_bound;
};

// The columns a table has (empty when there is no such table).
QStringList columnsOf(const Db &db, const char *table)
{
    QStringList out;
    const QByteArray sql = QByteArray("PRAGMA table_info(") + table + ")";
    Query q(db, sql.constData());
    while (q.next())
        out << q.text(1);
    return out;
}

YAML::Node loadYaml(const QString &path, QString *error)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = f.errorString();
        return {};
    }
    const QByteArray bytes = f.read(kMaxConfigBytes);
    if (yamlNesting(bytes) > kMaxConfigDepth) {
        *error = QStringLiteral("YAML nested deeper than %1 levels").arg(kMaxConfigDepth);
        return {};
    }
    try {
        return YAML::Load(bytes.toStdString());
    } catch (const YAML::Exception &e) {
        *error = QString::fromStdString(e.what());
        return {};
    }
}

QString yamlText(const YAML::Node &map, const char *key)
{
    try {
        const YAML::Node n = map.IsMap() ? map[key] : YAML::Node();
        return n && n.IsScalar() ? QString::fromStdString(n.Scalar()) : QString();
    } catch (const YAML::Exception &) {
        return {};
    }
}

// The files below `dir` by their path from it (nested keys: "train/loss" is train/loss), in name order.
std::map<QString, QString> filesBelow(const QString &dir)
{
    std::map<QString, QString> out;
    QDirIterator it(dir, QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        out.emplace(QDir(dir).relativeFilePath(path), path);
    }
    return out;
}

QString wholeFile(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.read(kMaxConfigBytes)) : QString();
}

} // namespace

bool MlflowDbImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    // An SQLite file by its header; whether it is MLflow's is said when it is read (its tables).
    const QString lower = fileName.toLower();
    return head.startsWith(QByteArrayLiteral("SQLite format 3\0"))
        && (lower == QLatin1String("mlflow.db") || lower.startsWith(QLatin1String("mlflow"))
            || lower.endsWith(QLatin1String(".db")));
}

ReadPosition MlflowDbImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    ReadPosition end {QFileInfo(path).size(), 0};
    Db db;
    QString error;
    if (!db.open(path, &error)) {
        sink.problem(0, -1, QStringLiteral("cannot open the SQLite file: %1").arg(error));
        return end;
    }
    const QStringList runColumns = columnsOf(db, "runs"), metricColumns = columnsOf(db, "metrics");
    for (const char *column : {"run_uuid", "name", "experiment_id"}) {
        if (!runColumns.contains(QLatin1String(column)) || !metricColumns.contains(QLatin1String("key"))) {
            sink.problem(0, -1,
                QStringLiteral("an SQLite file that is no MLflow store (no runs table with run_uuid, name and "
                               "experiment_id, or no metrics table); not read"));
            return end;
        }
    }
    const bool hasIsNan = metricColumns.contains(QLatin1String("is_nan"));
    const bool hasLifecycle = runColumns.contains(QLatin1String("lifecycle_stage"));

    QHash<QString, QString> experiments;
    {
        Query q(db, "SELECT experiment_id, name FROM experiments");
        while (q.next())
            experiments.insert(q.text(0), q.text(1));
    }
    struct RunRow {
        QString id, name, experiment;
    };
    std::vector<RunRow> runs;
    int deleted = 0;
    {
        Query q(db,
            hasLifecycle ? "SELECT r.run_uuid, COALESCE(NULLIF(r.name, ''), (SELECT value FROM tags t WHERE "
                           "t.run_uuid=r.run_uuid AND t.key='mlflow.runName'), ''), r.experiment_id, "
                           "r.lifecycle_stage FROM runs r ORDER BY r.start_time, r.run_uuid"
                         : "SELECT r.run_uuid, COALESCE(NULLIF(r.name, ''), ''), r.experiment_id, 'active' FROM runs r "
                           "ORDER BY r.start_time, r.run_uuid");
        while (q.next()) {
            if (q.text(3) == QLatin1String("deleted")) {
                ++deleted;
                continue;
            }
            runs.push_back({q.text(0), q.text(1), q.text(2)});
        }
        if (!q.ok()) {
            sink.problem(0, -1, QStringLiteral("cannot read the runs: %1").arg(db.error()));
            return end;
        }
    }
    if (deleted > 0)
        sink.problem(0, -1, QStringLiteral("%1 deleted run(s) not read").arg(deleted));
    std::vector<std::pair<QString, QString>> names;
    for (const RunRow &r : runs)
        names.emplace_back(r.id, r.name);
    const QHash<QString, QString> runName = uniqueNames(names);

    Query metrics(db,
        hasIsNan ? "SELECT key, step, value, is_nan, timestamp FROM metrics WHERE run_uuid=? "
                   "ORDER BY key, step, timestamp"
                 : "SELECT key, step, value, 0, timestamp FROM metrics WHERE run_uuid=? ORDER BY key, step, timestamp");
    Query params(db, "SELECT key, value FROM params WHERE run_uuid=? ORDER BY key");
    Query tags(db, "SELECT key, value FROM tags WHERE run_uuid=? ORDER BY key");
    for (const RunRow &r : runs) {
        sink.useRun(runName.value(r.id));
        const QString group = experiments.value(r.experiment);
        if (!group.isEmpty())
            sink.runInfo(QStringLiteral("group"), group);
        ConfigBudget budget;
        params.reset();
        params.bind(1, r.id);
        while (params.next()) {
            if (budget.take())
                sink.config(params.text(0), params.text(1));
        }
        tags.reset();
        tags.bind(1, r.id);
        while (tags.next())
            tag(tags.text(0), tags.text(1), sink, budget);
        metrics.reset();
        metrics.bind(1, r.id);
        QString key;
        int64_t handle = -1;
        while (metrics.next()) {
            if (handle < 0 || metrics.text(0) != key) {
                key = metrics.text(0);
                handle = sink.series({QString(), QString(), key, kSource, QString()});
            }
            sink.point(handle, metrics.int64(1), storedValue(metrics.real(2), metrics.int64(3) != 0),
                double(metrics.int64(4)) / 1000.0);
        }
        if (!metrics.ok() || !params.ok() || !tags.ok())
            sink.problem(0, -1, QStringLiteral("run %1: cannot read all of it: %2").arg(r.id, db.error()));
    }
    return end;
}

bool MlflowRunImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    return fileName == QLatin1String("meta.yaml") && head.contains("run_id:") && head.contains("experiment_id:")
        && head.contains("lifecycle_stage:");
}

void MlflowRunImporter::stamp(const QString &path, int64_t *size, int64_t *mtime) const
{
    const QString dir = QFileInfo(path).absolutePath();
    *size = 0;
    *mtime = 0;
    QDirIterator it(dir, QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString file = it.next();
        const QString within = QDir(dir).relativeFilePath(file);
        if (within != QLatin1String("meta.yaml") && !within.startsWith(QLatin1String("metrics/"))
            && !within.startsWith(QLatin1String("params/")) && !within.startsWith(QLatin1String("tags/")))
            continue;
        const QFileInfo info = it.fileInfo();
        *size += info.size();
        *mtime = std::max<int64_t>(*mtime, info.lastModified().toMSecsSinceEpoch());
    }
    // The experiment's meta.yaml: its name is the run's group.
    const QFileInfo experiment(dir + QStringLiteral("/../meta.yaml"));
    if (experiment.exists()) {
        *size += experiment.size();
        *mtime = std::max<int64_t>(*mtime, experiment.lastModified().toMSecsSinceEpoch());
    }
}

ReadPosition MlflowRunImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    ReadPosition end {QFileInfo(path).size(), 0};
    QString error;
    const YAML::Node meta = loadYaml(path, &error);
    if (!meta.IsMap()) {
        sink.problem(0, -1, QStringLiteral("an MLflow run's meta.yaml that cannot be read: %1").arg(error));
        return end;
    }
    if (yamlText(meta, "lifecycle_stage") == QLatin1String("deleted")) {
        sink.problem(0, -1, QStringLiteral("a deleted MLflow run; not read"));
        return end;
    }
    const QDir dir = QFileInfo(path).absoluteDir();
    QString experimentError;
    const YAML::Node experiment = loadYaml(dir.absoluteFilePath(QStringLiteral("../meta.yaml")), &experimentError);
    const QString group = yamlText(experiment, "name");
    if (!group.isEmpty())
        sink.runInfo(QStringLiteral("group"), group);
    ConfigBudget budget;
    for (const auto &[key, file] : filesBelow(dir.absoluteFilePath(QStringLiteral("params")))) {
        if (budget.take())
            sink.config(key, wholeFile(file));
    }
    for (const auto &[key, file] : filesBelow(dir.absoluteFilePath(QStringLiteral("tags"))))
        tag(key, wholeFile(file), sink, budget);
    for (const auto &[key, file] : filesBelow(dir.absoluteFilePath(QStringLiteral("metrics")))) {
        QFile f(file);
        if (!f.open(QIODevice::ReadOnly)) {
            sink.problem(0, -1, QStringLiteral("metrics/%1: cannot open: %2").arg(key, f.errorString()));
            continue;
        }
        const int64_t series = sink.series({QString(), QString(), key, kSource, QString()});
        // "<timestamp ms> <value> <step>", or with the dataset's name and digest after, or without the step (0).
        int64_t line = 0;
        int bad = 0;
        while (!f.atEnd()) {
            const QByteArray raw = f.readLine(kMaxConfigBytes);
            ++line;
            if (!raw.endsWith('\n') && f.atEnd() && raw.trimmed().isEmpty())
                break;
            const QList<QByteArray> fields = raw.trimmed().split(' ');
            bool okTime = false, okValue = false, okStep = true;
            const int64_t ms = fields.value(0).toLongLong(&okTime);
            const QByteArray text = fields.value(1).toLower();
            double value = text == "nan" ? NAN
                : text == "inf"          ? INFINITY
                : text == "-inf"         ? -INFINITY
                                         : text.toDouble(&okValue);
            okValue = okValue || text == "nan" || text == "inf" || text == "-inf";
            const int64_t step = fields.size() >= 3 ? fields[2].toLongLong(&okStep) : 0;
            if (!okTime || !okValue || !okStep || (fields.size() != 2 && fields.size() != 3 && fields.size() != 5)) {
                // A line being written has no newline yet: left for the next read.
                if (!raw.endsWith('\n'))
                    break;
                // Said with the metric's file and line (the problem's file is the run's meta.yaml).
                if (bad++ == 0)
                    sink.problem(0, -1,
                        QStringLiteral("metrics/%1, line %2: unreadable: %3")
                            .arg(key)
                            .arg(line)
                            .arg(QString::fromUtf8(raw.trimmed().left(80))));
                continue;
            }
            sink.point(series, step, value, double(ms) / 1000.0);
        }
    }
    return end;
}

bool MlflowExperimentImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    return fileName == QLatin1String("meta.yaml") && !head.contains("run_id:") && head.contains("experiment_id:")
        && head.contains("artifact_location:");
}

ReadPosition MlflowExperimentImporter::read(const QString &path, const ReadPosition &, IngestSink &)
{
    return {QFileInfo(path).size(), 0};
}

LoggedRunName mlflowRunName(const QString &metaPath)
{
    QString error;
    const YAML::Node meta = loadYaml(metaPath, &error);
    LoggedRunName name {shortId(yamlText(meta, "run_id")), yamlText(meta, "run_name")};
    if (name.id.isEmpty())
        name.id = shortId(QFileInfo(metaPath).absoluteDir().dirName());
    if (name.name.isEmpty())
        name.name
            = wholeFile(QFileInfo(metaPath).absoluteDir().absoluteFilePath(QStringLiteral("tags/mlflow.runName")));
    return name;
}

} // namespace fp8scope
