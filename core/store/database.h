// A thin RAII wrapper over the sqlite3 C API: one connection, prepared statements with bound parameters,
// transactions that roll back unless committed. Errors are values (a message), never exceptions.
#pragma once

// Only core/query, core/session and core/recompute read or write a store (their targets link
// fp8scope_store, which defines this); everything above them goes through Catalog and FolderSession.
#ifndef FP8SCOPE_STORE_ACCESS
#error                                                                                                                 \
    "core/store is private to core: read runs through core/query's Catalog, write through core/session's FolderSession (docs/ARCHITECTURE.md)"
#endif

#include <QString>

#include <string_view>

#include <cstdint>
#include <memory>

struct sqlite3;
struct sqlite3_stmt;

namespace fp8scope {

class Statement
{
public:
    Statement() = default;
    Statement(sqlite3 *db, const char *sql, QString *error);
    ~Statement();
    Statement(Statement &&o) noexcept;
    Statement &operator=(Statement &&o) noexcept;
    Statement(const Statement &) = delete;
    Statement &operator=(const Statement &) = delete;

    bool isValid() const { return m_stmt != nullptr; }
    // Parameters are 1-based, as in SQLite.
    Statement &bind(int i, int64_t v);
    Statement &bind(int i, double v); // NaN binds NULL
    Statement &bind(int i, const QString &v);
    Statement &bindNull(int i);
    // UTF-8 text that is already encoded (copied by SQLite).
    Statement &bindUtf8(int i, std::string_view v);
    // Steps once: true while a row is available. false at the end of the rows and on an error: failed()
    // tells them apart (and error() says what went wrong). exec() steps to the end and resets; false on an
    // error (and for a statement that did not prepare).
    [[nodiscard]] bool next();
    [[nodiscard]] bool exec();
    // True once a step failed or the statement did not prepare; cleared by reset().
    [[nodiscard]] bool failed() const { return m_failed || !m_stmt; }
    // SQLite's result code of the failure (SQLITE_CORRUPT, SQLITE_BUSY, ...); 0 when none.
    int errorCode() const { return m_errorCode; }
    void reset();

    int64_t int64(int col) const;
    double real(int col) const; // NULL reads as NaN
    QString text(int col) const;
    // The column's UTF-8 text without conversion; valid until the next step, reset or column call.
    std::string_view utf8(int col) const;
    bool isNull(int col) const;
    QString error() const;

private:
    sqlite3_stmt *m_stmt = nullptr;
    sqlite3 *m_db = nullptr;
    bool m_failed = false;
    int m_errorCode = 0;
    QString m_error; // the statement's own error (a failed prepare, a failed step)
};

class Database
{
public:
    Database() = default;
    ~Database();
    Database(const Database &) = delete;
    Database &operator=(const Database &) = delete;

    // Opens (creating) the file in WAL mode.
    bool open(const QString &path, QString *error);
    // Closes the connection (in WAL mode the last one checkpoints and removes the -wal file).
    void close();
    bool isOpen() const { return m_db != nullptr; }
    [[nodiscard]] bool exec(const char *sql, QString *error = nullptr);
    Statement prepare(const char *sql, QString *error = nullptr);
    int64_t lastInsertId() const;
    QString lastError() const;
    int lastErrorCode() const; // SQLite's primary result code of the last failure
    // The last failure was SQLITE_BUSY or SQLITE_LOCKED: another connection (another fp8scope) holds the store.
    bool isBusy() const;
    sqlite3 *handle() const { return m_db; }

private:
    sqlite3 *m_db = nullptr;
};

// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() succeeded.
class Transaction
{
public:
    explicit Transaction(Database &db);
    ~Transaction();
    bool isActive() const { return m_active; }
    [[nodiscard]] bool commit(QString *error = nullptr);

private:
    Database &m_db;
    bool m_active = false;
};

// What a store error means for the user, with the store's path and what to do: a damaged store (SQLite's
// CORRUPT or NOTADB) is rebuilt from the run's files, a busy one waits for its writer (`writer`: who holds it,
// when known).
QString describeStoreError(int code, const QString &message, const QString &storePath, const QString &folder,
    const QString &writer = QString());
bool isDamagedCode(int code);
bool isBusyCode(int code);

} // namespace fp8scope
