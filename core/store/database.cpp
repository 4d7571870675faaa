#include "database.h"

#include <sqlite3.h>

#include <cmath>

namespace fp8scope {

Statement::Statement(sqlite3 *db, const char *sql, QString *error)
    : m_db(db)
{
    if (sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr) != SQLITE_OK) {
        m_errorCode = sqlite3_errcode(db) & 0xFF;
        m_error = QString::fromUtf8(sqlite3_errmsg(db));
        if (error)
            *error = m_error;
        sqlite3_finalize(m_stmt);
        m_stmt = nullptr;
    }
}

Statement::~Statement()
{
    sqlite3_finalize(m_stmt);
}

Statement::Statement(Statement &&o) noexcept
    : m_stmt(o.m_stmt)
    , m_db(o.m_db)
    , m_failed(o.m_failed)
    , m_errorCode(o.m_errorCode)
    , m_error(std::move(o.m_error))
{
    o.m_stmt = nullptr;
}

Statement &Statement::operator=(Statement &&o) noexcept
{
    if (this != &o) {
        sqlite3_finalize(m_stmt);
        m_stmt = o.m_stmt;
        m_db = o.m_db;
        m_failed = o.m_failed;
        m_errorCode = o.m_errorCode;
        m_error = std::move(o.m_error);
        o.m_stmt = nullptr;
    }
    return *this;
}

Statement &Statement::bind(int i, int64_t v)
{
    sqlite3_bind_int64(m_stmt, i, v);
    return *this;
}

Statement &Statement::bind(int i, double v)
{
    if (std::isnan(v))
        sqlite3_bind_null(m_stmt, i);
    else
        sqlite3_bind_double(m_stmt, i, v);
    return *this;
}

Statement &Statement::bind(int i, const QString &v)
{
    const QByteArray u = v.toUtf8();
    sqlite3_bind_text(m_stmt, i, u.constData(), int(u.size()), SQLITE_TRANSIENT);
    return *this;
}

Statement &Statement::bindUtf8(int i, std::string_view v)
{
    sqlite3_bind_text(m_stmt, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
}

Statement &Statement::bindNull(int i)
{
    sqlite3_bind_null(m_stmt, i);
    return *this;
}

bool Statement::next()
{
    if (!m_stmt || m_failed)
        return false;
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW)
        return true;
    if (rc != SQLITE_DONE) {
        m_failed = true;
        m_errorCode = rc & 0xFF;
        m_error = QString::fromUtf8(sqlite3_errmsg(m_db));
    }
    return false;
}

bool Statement::exec()
{
    if (!m_stmt)
        return false;
    int rc;
    while ((rc = sqlite3_step(m_stmt)) == SQLITE_ROW) { }
    const bool ok = rc == SQLITE_DONE;
    if (!ok) {
        m_errorCode = rc & 0xFF;
        m_error = QString::fromUtf8(sqlite3_errmsg(m_db));
    }
    sqlite3_reset(m_stmt);
    return ok;
}

void Statement::reset()
{
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
    m_failed = false;
}

int64_t Statement::int64(int col) const
{
    return sqlite3_column_int64(m_stmt, col);
}

double Statement::real(int col) const
{
    return sqlite3_column_type(m_stmt, col) == SQLITE_NULL ? NAN : sqlite3_column_double(m_stmt, col);
}

QString Statement::text(int col) const
{
    const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(m_stmt, col));
    return p ? QString::fromUtf8(p, sqlite3_column_bytes(m_stmt, col)) : QString();
}

std::string_view Statement::utf8(int col) const
{
    const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(m_stmt, col));
    return p ? std::string_view(p, size_t(sqlite3_column_bytes(m_stmt, col))) : std::string_view();
}

bool Statement::isNull(int col) const
{
    return sqlite3_column_type(m_stmt, col) == SQLITE_NULL;
}

QString Statement::error() const
{
    if (!m_error.isEmpty())
        return m_error;
    return m_db ? QString::fromUtf8(sqlite3_errmsg(m_db)) : QString();
}

Database::~Database()
{
    sqlite3_close_v2(m_db);
}

bool Database::open(const QString &path, QString *error)
{
    sqlite3_close_v2(m_db);
    m_db = nullptr;
    if (sqlite3_open_v2(path.toUtf8().constData(), &m_db,
            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr)
        != SQLITE_OK) {
        *error = QStringLiteral("%1: %2").arg(path, QString::fromUtf8(sqlite3_errmsg(m_db)));
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        return false;
    }
    sqlite3_busy_timeout(m_db, 5000);
    return exec("PRAGMA page_size=16384; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; "
                "PRAGMA cache_size=-65536;",
        error);
}

void Database::close()
{
    sqlite3_close_v2(m_db);
    m_db = nullptr;
}

bool Database::exec(const char *sql, QString *error)
{
    char *msg = nullptr;
    if (sqlite3_exec(m_db, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
        if (error)
            *error = QString::fromUtf8(msg);
        sqlite3_free(msg);
        return false;
    }
    return true;
}

Statement Database::prepare(const char *sql, QString *error)
{
    return Statement(m_db, sql, error);
}

int64_t Database::lastInsertId() const
{
    return sqlite3_last_insert_rowid(m_db);
}

bool Database::isBusy() const
{
    return isBusyCode(lastErrorCode());
}

int Database::lastErrorCode() const
{
    return m_db ? sqlite3_errcode(m_db) & 0xFF : SQLITE_CANTOPEN;
}

bool isDamagedCode(int code)
{
    return code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
}

bool isBusyCode(int code)
{
    return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

QString describeStoreError(
    int code, const QString &message, const QString &storePath, const QString &folder, const QString &writer)
{
    if (isDamagedCode(code))
        return QStringLiteral("%1: the store is damaged (%2). It is a cache of the run's files: rebuild it with "
                              "`fp8scope-cli ingest --rebuild %3`, or File > Rebuild Store in the window")
            .arg(storePath, message, folder);
    if (isBusyCode(code))
        return QStringLiteral("%1: the store is busy: %2; try again when it is done")
            .arg(storePath, writer.isEmpty() ? QStringLiteral("another fp8scope is writing to it") : writer);
    return QStringLiteral("%1: %2").arg(storePath, message);
}

QString Database::lastError() const
{
    return QString::fromUtf8(sqlite3_errmsg(m_db));
}

Transaction::Transaction(Database &db)
    : m_db(db)
    , m_active(db.exec("BEGIN IMMEDIATE"))
{
}

Transaction::~Transaction()
{
    // A failed rollback leaves nothing to do: SQLite rolls an open transaction back when the connection closes.
    if (m_active && !m_db.exec("ROLLBACK"))
        m_active = false;
}

bool Transaction::commit(QString *error)
{
    if (!m_active)
        return false;
    m_active = false;
    return m_db.exec("COMMIT", error);
}

} // namespace fp8scope
