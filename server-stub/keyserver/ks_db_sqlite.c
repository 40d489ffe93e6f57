/* SPDX-License-Identifier: MPL-2.0 */
/* ks_db_sqlite.c -- the keyserver's SQLite backend (the embedded default;
 * see ks_db.h for the contract, ks_db_impl.h for the table). */
#include "keyserver/ks_db_impl.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/util.h"
#include "protocol/tokens.h"

typedef struct ks_db_impl sq_db;

/* The statements of the login path, prepared once per connection (stmt()). */
enum {
    Q_ACC_BY_EMAIL,
    Q_ACC_BY_ID,
    Q_TOK_PUT,
    Q_SRP_PUT,
    Q_SRP_GC,
    Q_SRP_GET,
    Q_SRP_DEL,
    Q_RATE_COUNT,
    Q_RATE_ADD,
    Q_RATE_DEL,
    Q_SYNC_NORMAL,
    Q_SYNC_FULL,
    Q_BEGIN,
    Q_BEGIN_READ,
    Q_COMMIT,
    Q_ROLLBACK,
    Q_COUNT
};

struct ks_db_impl {
    sqlite3 *h;
    pthread_mutex_t mu;
    sqlite3_stmt *q[Q_COUNT]; /* under mu */
};

static const char *const schema_v1 =
    "CREATE TABLE IF NOT EXISTS accounts ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " uid BLOB NOT NULL UNIQUE,"
    " email BLOB NOT NULL UNIQUE,"
    " verified INTEGER NOT NULL DEFAULT 0,"
    " verify_code BLOB NOT NULL,"
    " ka BLOB NOT NULL, wrap_kb BLOB NOT NULL,"
    " verifier BLOB NOT NULL, srp_salt BLOB NOT NULL, main_salt BLOB NOT NULL,"
    " pbkdf2_rounds_1 INTEGER NOT NULL, scrypt_n INTEGER NOT NULL,"
    " scrypt_r INTEGER NOT NULL, scrypt_p INTEGER NOT NULL,"
    " pbkdf2_rounds_2 INTEGER NOT NULL,"
    " created INTEGER NOT NULL DEFAULT (strftime('%s','now')));"
    "CREATE TABLE IF NOT EXISTS tokens ("
    " id BLOB PRIMARY KEY, type INTEGER NOT NULL,"
    " account INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,"
    " hmac_key BLOB NOT NULL, request_key BLOB NOT NULL,"
    " created INTEGER NOT NULL, expires INTEGER NOT NULL,"
    " device_id TEXT NOT NULL DEFAULT '', device_name TEXT NOT NULL DEFAULT '',"
    " device_type TEXT NOT NULL DEFAULT '',"
    " code TEXT NOT NULL DEFAULT '', tries INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS tokens_account ON tokens(account, type);"
    "CREATE TABLE IF NOT EXISTS srp_sessions ("
    " key BLOB PRIMARY KEY,"
    " account INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,"
    " b BLOB NOT NULL, expires INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS srp_account ON srp_sessions(account);"
    "CREATE TABLE IF NOT EXISTS rate_events (key TEXT NOT NULL, t INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS rate_key ON rate_events(key, t);";

/* v2 (keyserver.md section 9): the key epoch, the class map anchor, and
 * whether an accountResetToken came from a reset code (it proved the
 * mailbox).  Existing accounts start in epoch 1 without an anchor. */
static const char *const schema_v2 =
    "ALTER TABLE accounts ADD COLUMN epoch INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE accounts ADD COLUMN cm_version INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE accounts ADD COLUMN cm_hmac BLOB;"
    "ALTER TABLE accounts ADD COLUMN cm_epoch INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE tokens ADD COLUMN mailbox INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX IF NOT EXISTS tokens_expires ON tokens(expires);"
    "CREATE INDEX IF NOT EXISTS accounts_unverified ON accounts(verified, created);"
    "DROP TABLE IF EXISTS rate_events;"; /* now in memory, see sq_open */

/* v3 (storage.md section 6): storage nodes and the accounts' assignments.
 * A storage uid is an assignment id; they start above 2^32 so they never
 * meet the account ids that a single --storage-node uses as uids. */
static const char *const schema_v3 =
    "CREATE TABLE IF NOT EXISTS nodes ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL UNIQUE,"
    " capacity INTEGER NOT NULL, current_load INTEGER NOT NULL DEFAULT 0,"
    " available INTEGER NOT NULL DEFAULT 1, downed INTEGER NOT NULL DEFAULT 0,"
    " backoff INTEGER NOT NULL DEFAULT 0, generation INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS assignments ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, account INTEGER,"
    " node INTEGER NOT NULL REFERENCES nodes(id),"
    " created_at INTEGER NOT NULL, replaced_at INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS assignments_account ON assignments(account, replaced_at);"
    "CREATE INDEX IF NOT EXISTS assignments_replaced ON assignments(replaced_at);"
    "INSERT INTO sqlite_sequence (name, seq) SELECT 'assignments', 4294967295"
    " WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'assignments');";

/* v4 (keyserver.md section 9): devices' last access, security events and
 * the recovery key.  Every step is idempotent. */
static const char *const schema_v4 =
    "CREATE TABLE IF NOT EXISTS session_access ("
    " id BLOB PRIMARY KEY REFERENCES tokens(id) ON DELETE CASCADE, t INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS events ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " account INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,"
    " type TEXT NOT NULL, t INTEGER NOT NULL, device TEXT NOT NULL DEFAULT '',"
    " address TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX IF NOT EXISTS events_account ON events(account, id);"
    "CREATE TABLE IF NOT EXISTS recovery_keys ("
    " account INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,"
    " key_id TEXT NOT NULL, data TEXT NOT NULL);";

/* v5: the outbox of verification mails (ks_db.h): written with the
 * account, deleted once the mail is delivered. */
static const char *const schema_v5 = "CREATE TABLE IF NOT EXISTS outbox ("
                                     " account INTEGER PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,"
                                     " next_try INTEGER NOT NULL, tries INTEGER NOT NULL DEFAULT 0);"
                                     "CREATE INDEX IF NOT EXISTS outbox_due ON outbox(next_try);";

/* v6: the SRP session keeps the B its /auth/start sent (public), so
 * /auth/finish need not compute g^b again; sessions stored before have
 * none (NULL) and are finished the old way.  The table is rebuilt WITHOUT
 * ROWID and without its account index: a login writes one b-tree page per
 * session change instead of three (the table only holds logins younger
 * than the SRP TTL, so a delete by account scans a few rows). */
static const char *const schema_v6 =
    "CREATE TABLE srp_sessions_v6 ("
    " key BLOB PRIMARY KEY,"
    " account INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,"
    " b BLOB NOT NULL, b_public BLOB, expires INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT INTO srp_sessions_v6 (key, account, b, expires)"
    " SELECT key, account, b, expires FROM srp_sessions;"
    "DROP TABLE srp_sessions;"
    "ALTER TABLE srp_sessions_v6 RENAME TO srp_sessions;";

/* ---- small helpers ------------------------------------------------------ */

/* Statement `which` (sql), prepared on first use and kept: the caller
 * binds, steps and hands it back with done().  NULL when it cannot be
 * prepared.  Under the lock. */
static sqlite3_stmt *stmt(sq_db *db, int which, const char *sql)
{
    if (!db->q[which] &&
        sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &db->q[which], NULL) != SQLITE_OK) {
        sqlite3_finalize(db->q[which]);
        db->q[which] = NULL;
    }
    return db->q[which];
}

/* Hands a kept statement back: reset, bindings cleared. */
static void done(sqlite3_stmt *st)
{
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
}

/* The storage under the database failed (a COMMIT on a full disk). */
static void note_fault(sq_db *db)
{
    int primary = sqlite3_extended_errcode(db->h) & 0xff;
    if (primary == SQLITE_FULL || primary == SQLITE_IOERR)
        ks_db_note_fault(primary == SQLITE_FULL, sqlite3_errmsg(db->h));
}

static picl_status exec(sq_db *db, const char *sql)
{
    if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) == SQLITE_OK)
        return PICL_OK;
    note_fault(db);
    return PICL_ERROR_DATABASE;
}

/* BEGIN IMMEDIATE, COMMIT or ROLLBACK from a kept statement (no parse per
 * transaction); failures noted as exec's. */
static picl_status kept(sq_db *db, int which, const char *sql)
{
    sqlite3_stmt *st = stmt(db, which, sql);
    if (!st)
        return exec(db, sql);
    picl_status rc = PICL_OK;
    if (sqlite3_step(st) != SQLITE_DONE) {
        note_fault(db);
        rc = PICL_ERROR_DATABASE;
    }
    sqlite3_reset(st);
    return rc;
}

static picl_status begin_tx(sq_db *db) { return kept(db, Q_BEGIN, "BEGIN IMMEDIATE"); }

/* A transaction that writes only the in-memory database (mem.*) and at
 * most reads the file: deferred, so the file gets a WAL read lock and no
 * write lock.  Every use of the connection is under db->mu, so nothing in
 * this process writes between its reads and its writes, and another
 * process's writer never blocks a WAL reader. */
static picl_status begin_mem_tx(sq_db *db) { return kept(db, Q_BEGIN_READ, "BEGIN DEFERRED"); }

/* Ends a transaction: COMMIT when rc is PICL_OK, else (or when COMMIT fails)
 * ROLLBACK, so no transaction is ever left open.  Returns the outcome. */
static picl_status end_tx(sq_db *db, picl_status rc)
{
    if (rc == PICL_OK)
        rc = kept(db, Q_COMMIT, "COMMIT");
    if (rc != PICL_OK && !sqlite3_get_autocommit(db->h))
        kept(db, Q_ROLLBACK, "ROLLBACK");
    return rc;
}

static picl_status prep(sq_db *db, sqlite3_stmt **st, const char *sql)
{
    return sqlite3_prepare_v2(db->h, sql, -1, st, NULL) == SQLITE_OK ? PICL_OK : PICL_ERROR_DATABASE;
}

/* Copies a blob column of exactly n bytes; PICL_ERROR_DATABASE otherwise. */
static picl_status col_blob(sqlite3_stmt *st, int i, uint8_t *out, size_t n)
{
    const void *p = sqlite3_column_blob(st, i);
    if ((size_t)sqlite3_column_bytes(st, i) != n || (!p && n))
        return PICL_ERROR_DATABASE;
    memcpy(out, p, n);
    return PICL_OK;
}

static void col_text(sqlite3_stmt *st, int i, char *out, size_t cap)
{
    const unsigned char *p = sqlite3_column_text(st, i);
    snprintf(out, cap, "%s", p ? (const char *)p : "");
}

/* PRAGMA synchronous=NORMAL (durable: 0) or FULL (1) for the next
 * transactions of the connection.  In WAL mode a NORMAL commit survives a
 * kill -9 of the process, not a power failure; the next FULL commit syncs
 * it with its own. */
static picl_status sync_level(sq_db *db, int durable)
{
    sqlite3_stmt *st = durable ? stmt(db, Q_SYNC_FULL, "PRAGMA synchronous=FULL")
                               : stmt(db, Q_SYNC_NORMAL, "PRAGMA synchronous=NORMAL");
    picl_status rc = st && sqlite3_step(st) == SQLITE_DONE ? PICL_OK : PICL_ERROR_DATABASE;
    done(st);
    /* back to FULL whatever happened to the kept statement: every other
     * write relies on it */
    if (rc != PICL_OK && durable)
        rc = exec(db, "PRAGMA synchronous=FULL");
    return rc;
}

static void lock(sq_db *db) { pthread_mutex_lock(&db->mu); }
static void unlock(sq_db *db) { pthread_mutex_unlock(&db->mu); }

/* ---- open / migrate ------------------------------------------------------ */

static picl_status migrate(sq_db *db)
{
    picl_status rc = begin_tx(db);
    if (rc != PICL_OK)
        return rc;
    sqlite3_stmt *st = NULL;
    int64_t version = 0;
    rc = exec(db, "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER)");
    if (rc == PICL_OK)
        rc = prep(db, &st, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (rc == PICL_OK && sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc == PICL_OK && version > KS_SCHEMA_VERSION)
        rc = PICL_ERROR_DATABASE; /* written by a newer keyserver */
    if (rc == PICL_OK && version < 1) {
        rc = exec(db, schema_v1);
        if (rc == PICL_OK)
            rc = exec(db, "INSERT OR REPLACE INTO meta VALUES ('schema_version', 1)");
    }
    if (rc == PICL_OK && version < 2) {
        rc = exec(db, schema_v2);
        if (rc == PICL_OK)
            rc = exec(db, "INSERT OR REPLACE INTO meta VALUES ('schema_version', 2)");
    }
    if (rc == PICL_OK && version < 3) {
        rc = exec(db, schema_v3);
        if (rc == PICL_OK)
            rc = exec(db, "INSERT OR REPLACE INTO meta VALUES ('schema_version', 3)");
    }
    if (rc == PICL_OK && version < 4) {
        rc = exec(db, schema_v4);
        if (rc == PICL_OK)
            rc = exec(db, "INSERT OR REPLACE INTO meta VALUES ('schema_version', 4)");
    }
    if (rc == PICL_OK && version < 5) {
        rc = exec(db, schema_v5);
        if (rc == PICL_OK)
            rc = exec(db, "INSERT OR REPLACE INTO meta VALUES ('schema_version', 5)");
    }
    if (rc == PICL_OK && version < 6) {
        /* idempotent like the others: SQLite has no ADD COLUMN IF NOT EXISTS */
        int has = 0;
        rc = prep(db, &st, "SELECT 1 FROM pragma_table_info('srp_sessions') WHERE name = 'b_public'");
        if (rc == PICL_OK)
            has = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        st = NULL;
        if (rc == PICL_OK && !has)
            rc = exec(db, schema_v6);
        if (rc == PICL_OK)
            rc = exec(db, "INSERT OR REPLACE INTO meta VALUES ('schema_version', 6)");
    }
    /* Later versions add "if (version < 7) ..." steps here. */
    rc = end_tx(db, rc);
    return rc;
}

static void sq_close(sq_db *db);

static picl_status sq_open(ks_db_impl **out, const char *path, unsigned pool, const char **why)
{
    *out = NULL;
    sq_db *db = calloc(1, sizeof *db);
    if (!db)
        return PICL_ERROR_NO_MEMORY;
    pthread_mutex_init(&db->mu, NULL);
    picl_status rc = PICL_ERROR_DATABASE;
    /* every use of the connection is under db->mu: SQLite's own mutex per
     * call (FULLMUTEX) would only be taken again */
    if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        goto done;
    sqlite3_busy_timeout(db->h, 5000);
    rc = exec(db, "PRAGMA journal_mode=WAL");
    if (rc == PICL_OK)
        rc = exec(db, "PRAGMA synchronous=FULL");
    if (rc == PICL_OK)
        rc = exec(db, "PRAGMA foreign_keys=ON");
    if (rc == PICL_OK)
        rc = exec(db, "PRAGMA secure_delete=ON");
    if (rc == PICL_OK)
        rc = migrate(db);
    /* Rate-limit events and SRP sessions live in an attached in-memory
     * database (secure_delete too): checked and counted in the same
     * transactions as before, but a login writes neither to the file, and
     * a session's secret b never reaches the disk.  A restart forgets them:
     * a pending login starts again (ks_db.h).  Sessions an older version
     * left in the file's table go now (the table stays, for a downgrade). */
    if (rc == PICL_OK)
        rc = exec(db, "ATTACH DATABASE ':memory:' AS mem;"
                      "CREATE TABLE mem.rate_events (key TEXT NOT NULL, t INTEGER NOT NULL);"
                      "CREATE INDEX mem.rate_key ON rate_events(key, t);"
                      "CREATE TABLE mem.srp_sessions (key BLOB PRIMARY KEY, account INTEGER NOT NULL,"
                      " b BLOB NOT NULL, b_public BLOB NOT NULL, expires INTEGER NOT NULL) WITHOUT ROWID;"
                      "DELETE FROM main.srp_sessions;");
done:
    if (rc != PICL_OK) {
        *why = "cannot open or migrate the SQLite database";
        sq_close(db);
        return rc;
    }
    *out = db;
    return PICL_OK;
}

static void sq_close(sq_db *db)
{
    if (!db)
        return;
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(db->q[i]);
    if (db->h)
        sqlite3_close_v2(db->h);
    pthread_mutex_destroy(&db->mu);
    free(db);
}

static picl_status sq_ping(sq_db *db)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st, "SELECT count(*) FROM meta");
    if (rc == PICL_OK && sqlite3_step(st) != SQLITE_ROW)
        rc = PICL_ERROR_DATABASE;
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

/* ---- accounts ------------------------------------------------------------ */

static picl_status sq_account_create(sq_db *db, ks_account *a)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = begin_tx(db);
    if (rc == PICL_OK)
        rc = prep(db, &st,
                  "INSERT INTO accounts (uid, email, verified, verify_code, ka, wrap_kb,"
                  " verifier, srp_salt, main_salt, pbkdf2_rounds_1, scrypt_n, scrypt_r,"
                  " scrypt_p, pbkdf2_rounds_2, created)"
                  " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (rc == PICL_OK) {
        sqlite3_bind_blob(st, 1, a->uid, KS_UID_BYTES, SQLITE_STATIC);
        sqlite3_bind_blob(st, 2, a->email, (int)a->email_len, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, a->verified);
        sqlite3_bind_blob(st, 4, a->verify_code, 32, SQLITE_STATIC);
        sqlite3_bind_blob(st, 5, a->ka, 32, SQLITE_STATIC);
        sqlite3_bind_blob(st, 6, a->wrap_kb, 32, SQLITE_STATIC);
        sqlite3_bind_blob(st, 7, a->verifier, KS_VERIFIER_BYTES, SQLITE_STATIC);
        sqlite3_bind_blob(st, 8, a->srp_salt, 32, SQLITE_STATIC);
        sqlite3_bind_blob(st, 9, a->main_salt, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 10, a->params.pbkdf2_rounds_1);
        sqlite3_bind_int64(st, 11, (int64_t)a->params.scrypt_n);
        sqlite3_bind_int64(st, 12, a->params.scrypt_r);
        sqlite3_bind_int64(st, 13, a->params.scrypt_p);
        sqlite3_bind_int64(st, 14, a->params.pbkdf2_rounds_2);
        sqlite3_bind_int64(st, 15, a->created);
        int s = sqlite3_step(st);
        if (s == SQLITE_DONE)
            a->id = sqlite3_last_insert_rowid(db->h);
        else if (sqlite3_extended_errcode(db->h) == SQLITE_CONSTRAINT_UNIQUE)
            rc = PICL_ERROR_ACCOUNT_EXISTS;
        else
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    st = NULL;
    /* its verification mail, in the same transaction */
    if (rc == PICL_OK && !a->verified)
        rc = prep(db, &st, "INSERT INTO outbox (account, next_try) VALUES (?, ?)");
    if (rc == PICL_OK && st) {
        sqlite3_bind_int64(st, 1, a->id);
        sqlite3_bind_int64(st, 2, a->created + KS_OUTBOX_LEASE);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    rc = end_tx(db, rc);
    unlock(db);
    return rc;
}

#define ACCOUNT_COLS                                                                                         \
    "SELECT id, uid, email, verified, verify_code, ka, wrap_kb, verifier, srp_salt, main_salt,"              \
    " pbkdf2_rounds_1, scrypt_n, scrypt_r, scrypt_p, pbkdf2_rounds_2, epoch FROM accounts "

/* Runs a prepared account query (one bound key) and reads the row. */
static picl_status account_row(sqlite3_stmt *st, ks_account *a)
{
    int s = sqlite3_step(st);
    if (s == SQLITE_DONE)
        return PICL_ERROR_NOT_FOUND;
    if (s != SQLITE_ROW)
        return PICL_ERROR_DATABASE;
    memset(a, 0, sizeof *a);
    a->id = sqlite3_column_int64(st, 0);
    int n = sqlite3_column_bytes(st, 2);
    const void *e = sqlite3_column_blob(st, 2);
    if (n <= 0 || n > KS_EMAIL_MAX || !e)
        return PICL_ERROR_DATABASE;
    memcpy(a->email, e, (size_t)n);
    a->email_len = (size_t)n;
    a->verified = sqlite3_column_int(st, 3);
    picl_status rc = col_blob(st, 1, a->uid, KS_UID_BYTES);
    if (rc == PICL_OK)
        rc = col_blob(st, 4, a->verify_code, 32);
    if (rc == PICL_OK)
        rc = col_blob(st, 5, a->ka, 32);
    if (rc == PICL_OK)
        rc = col_blob(st, 6, a->wrap_kb, 32);
    if (rc == PICL_OK)
        rc = col_blob(st, 7, a->verifier, KS_VERIFIER_BYTES);
    if (rc == PICL_OK)
        rc = col_blob(st, 8, a->srp_salt, 32);
    if (rc == PICL_OK)
        rc = col_blob(st, 9, a->main_salt, 32);
    a->params.pbkdf2_rounds_1 = (uint32_t)sqlite3_column_int64(st, 10);
    a->params.scrypt_n = (uint64_t)sqlite3_column_int64(st, 11);
    a->params.scrypt_r = (uint32_t)sqlite3_column_int64(st, 12);
    a->params.scrypt_p = (uint32_t)sqlite3_column_int64(st, 13);
    a->params.pbkdf2_rounds_2 = (uint32_t)sqlite3_column_int64(st, 14);
    a->epoch = sqlite3_column_int64(st, 15);
    if (rc != PICL_OK)
        picl__wipe(a, sizeof *a);
    return rc;
}

/* The account by id, under the lock (inside the caller's transaction). */
static picl_status account_by_id_locked(sq_db *db, int64_t id, ks_account *a)
{
    sqlite3_stmt *st = stmt(db, Q_ACC_BY_ID, ACCOUNT_COLS "WHERE id = ?");
    picl_status rc = st ? PICL_OK : PICL_ERROR_DATABASE;
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, id);
        rc = account_row(st, a);
    }
    done(st);
    return rc;
}

/* where: a kept statement (which >= 0) or its text. */
static picl_status account_by(sq_db *db, int which, const char *where, const void *key, size_t keylen,
                              int64_t id, ks_account *a)
{
    char sql[512];
    snprintf(sql, sizeof sql, "%s%s", ACCOUNT_COLS, where);
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = PICL_ERROR_DATABASE;
    if (which >= 0)
        rc = (st = stmt(db, which, sql)) ? PICL_OK : PICL_ERROR_DATABASE;
    else
        rc = prep(db, &st, sql);
    if (rc == PICL_OK) {
        if (key)
            sqlite3_bind_blob(st, 1, key, (int)keylen, SQLITE_STATIC);
        else
            sqlite3_bind_int64(st, 1, id);
        rc = account_row(st, a);
    }
    if (which >= 0)
        done(st);
    else
        sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_account_by_email(sq_db *db, const char *email, size_t len, ks_account *a)
{
    if (!len || len > KS_EMAIL_MAX)
        return PICL_ERROR_NOT_FOUND;
    return account_by(db, Q_ACC_BY_EMAIL, "WHERE email = ?", email, len, 0, a);
}

static picl_status sq_account_by_id(sq_db *db, int64_t id, ks_account *a)
{
    return account_by(db, Q_ACC_BY_ID, "WHERE id = ?", NULL, 0, id, a);
}

static picl_status sq_account_by_uid(sq_db *db, const uint8_t uid[KS_UID_BYTES], ks_account *a)
{
    return account_by(db, -1, "WHERE uid = ?", uid, KS_UID_BYTES, 0, a);
}

/* Runs a one-statement change binding an integer id first. */
static picl_status change_by_id(sq_db *db, const char *sql, int64_t id, int *changes)
{
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st, sql);
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
        else if (changes)
            *changes = sqlite3_changes(db->h);
    }
    sqlite3_finalize(st);
    return rc;
}

static picl_status sq_account_set_verified(sq_db *db, int64_t id)
{
    lock(db);
    int n = 0;
    picl_status rc = change_by_id(db, "UPDATE accounts SET verified = 1 WHERE id = ?", id, &n);
    unlock(db);
    return rc == PICL_OK && n == 0 ? PICL_ERROR_NOT_FOUND : rc;
}

static picl_status sq_account_reset(sq_db *db, int64_t id, const ks_reset *r)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    int verified = 0;
    picl_status rc = begin_tx(db);
    if (rc != PICL_OK)
        goto out;
    /* decided inside the transaction: nobody can verify in between */
    rc = prep(db, &st, "SELECT verified FROM accounts WHERE id = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, id);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW)
            verified = sqlite3_column_int(st, 0);
        else
            rc = s == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    st = NULL;
    /* never verified: whoever held it before learns nothing of what follows */
    const uint8_t *ka = verified ? NULL : r->fresh_keys;
    const uint8_t *wrap_kb = verified ? r->wrap_kb : r->fresh_keys + 32;
    int bump = !verified || r->kb_changed;
    if (rc == PICL_OK)
        rc = prep(db, &st,
                  "UPDATE accounts SET verifier = ?, srp_salt = ?, main_salt = ?, wrap_kb = ?,"
                  " pbkdf2_rounds_1 = ?, scrypt_n = ?, scrypt_r = ?, scrypt_p = ?,"
                  " pbkdf2_rounds_2 = ?, ka = coalesce(?, ka), epoch = epoch + ?,"
                  " verified = max(verified, ?) WHERE id = ?");
    if (rc == PICL_OK) {
        const picl_stretch_params *p = r->params;
        sqlite3_bind_blob(st, 1, r->verifier, KS_VERIFIER_BYTES, SQLITE_STATIC);
        sqlite3_bind_blob(st, 2, r->srp_salt, 32, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, r->main_salt, 32, SQLITE_STATIC);
        sqlite3_bind_blob(st, 4, wrap_kb, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, p->pbkdf2_rounds_1);
        sqlite3_bind_int64(st, 6, (int64_t)p->scrypt_n);
        sqlite3_bind_int64(st, 7, p->scrypt_r);
        sqlite3_bind_int64(st, 8, p->scrypt_p);
        sqlite3_bind_int64(st, 9, p->pbkdf2_rounds_2);
        if (ka)
            sqlite3_bind_blob(st, 10, ka, 32, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 10);
        sqlite3_bind_int(st, 11, bump);
        sqlite3_bind_int(st, 12, r->mailbox ? 1 : 0);
        sqlite3_bind_int64(st, 13, id);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
        else if (sqlite3_changes(db->h) == 0)
            rc = PICL_ERROR_NOT_FOUND;
    }
    sqlite3_finalize(st);
    if (rc == PICL_OK)
        rc = change_by_id(db, "DELETE FROM tokens WHERE account = ?", id, NULL);
    if (rc == PICL_OK)
        rc = change_by_id(db, "DELETE FROM mem.srp_sessions WHERE account = ?", id, NULL);
    rc = end_tx(db, rc);
out:
    unlock(db);
    return rc;
}

static picl_status sq_classmap_get(sq_db *db, int64_t account, ks_classmap *out)
{
    memset(out, 0, sizeof *out);
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st, "SELECT cm_version, cm_hmac, cm_epoch, epoch FROM accounts WHERE id = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        int s = sqlite3_step(st);
        if (s == SQLITE_DONE)
            rc = PICL_ERROR_NOT_FOUND;
        else if (s != SQLITE_ROW)
            rc = PICL_ERROR_DATABASE;
        else {
            out->version = sqlite3_column_int64(st, 0);
            out->epoch = sqlite3_column_int64(st, 2);
            out->current_epoch = sqlite3_column_int64(st, 3);
            if (out->version > 0) {
                rc = col_blob(st, 1, out->hmac, sizeof out->hmac);
                out->has_hmac = rc == PICL_OK;
            }
        }
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_classmap_put(sq_db *db, int64_t account, int64_t version, const uint8_t hmac[32])
{
    if (version < 1)
        return PICL_ERROR_INVALID_ARGUMENT;
    lock(db);
    sqlite3_stmt *st = NULL;
    int64_t have = 0;
    uint8_t old[32];
    int has_old = 0;
    picl_status rc = begin_tx(db);
    if (rc != PICL_OK)
        goto out;
    rc = prep(db, &st, "SELECT cm_version, cm_hmac FROM accounts WHERE id = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        int s = sqlite3_step(st);
        if (s == SQLITE_DONE)
            rc = PICL_ERROR_NOT_FOUND;
        else if (s != SQLITE_ROW)
            rc = PICL_ERROR_DATABASE;
        else {
            have = sqlite3_column_int64(st, 0);
            if (have > 0 && (rc = col_blob(st, 1, old, sizeof old)) == PICL_OK)
                has_old = 1;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == PICL_OK && version < have)
        rc = PICL_ERROR_CONFLICT;
    if (rc == PICL_OK && version == have && !(has_old && picl__memeq_ct(old, hmac, 32)))
        rc = PICL_ERROR_CONFLICT;
    if (rc == PICL_OK && version > have)
        rc = prep(db, &st,
                  "UPDATE accounts SET cm_version = ?, cm_hmac = ?, cm_epoch = epoch"
                  " WHERE id = ?");
    if (rc == PICL_OK && st) {
        sqlite3_bind_int64(st, 1, version);
        sqlite3_bind_blob(st, 2, hmac, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, account);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    rc = end_tx(db, rc);
out:
    unlock(db);
    return rc;
}

static picl_status sq_account_delete(sq_db *db, int64_t id)
{
    lock(db);
    int n = 0;
    picl_status rc = begin_tx(db);
    if (rc == PICL_OK)
        rc = change_by_id(db, "DELETE FROM tokens WHERE account = ?", id, NULL);
    if (rc == PICL_OK)
        rc = change_by_id(db, "DELETE FROM mem.srp_sessions WHERE account = ?", id, NULL);
    /* its storage data is purged at once: live assignments end now */
    if (rc == PICL_OK)
        rc = change_by_id(db,
                          "UPDATE nodes SET current_load = max(current_load - 1, 0)"
                          " WHERE id IN (SELECT node FROM assignments WHERE account = ?"
                          " AND replaced_at = 0)",
                          id, NULL);
    if (rc == PICL_OK)
        rc = change_by_id(db,
                          "UPDATE assignments SET account = NULL, replaced_at ="
                          " CASE replaced_at WHEN 0 THEN strftime('%s','now') ELSE"
                          " replaced_at END WHERE account = ?",
                          id, NULL);
    if (rc == PICL_OK)
        rc = change_by_id(db, "DELETE FROM accounts WHERE id = ?", id, &n);
    if (rc == PICL_OK && n == 0)
        rc = PICL_ERROR_NOT_FOUND;
    rc = end_tx(db, rc);
    unlock(db);
    return rc;
}

/* ---- tokens -------------------------------------------------------------- */

/* Inserts t, under the lock (in the caller's transaction or its own). */
static picl_status token_put_locked(sq_db *db, const ks_token *t)
{
    sqlite3_stmt *st = stmt(db, Q_TOK_PUT,
                            "INSERT INTO tokens (id, type, account, hmac_key, request_key, created,"
                            " expires, device_id, device_name, device_type, code, tries, mailbox)"
                            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
    picl_status rc = st ? PICL_OK : PICL_ERROR_DATABASE;
    if (rc == PICL_OK) {
        sqlite3_bind_blob(st, 1, t->id, 32, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, t->type);
        sqlite3_bind_int64(st, 3, t->account);
        sqlite3_bind_blob(st, 4, t->hmac_key, 32, SQLITE_STATIC);
        sqlite3_bind_blob(st, 5, t->request_key, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, t->created);
        sqlite3_bind_int64(st, 7, t->expires);
        sqlite3_bind_text(st, 8, t->device_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 9, t->device_name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 10, t->device_type, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 11, t->code, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 12, t->tries);
        sqlite3_bind_int(st, 13, t->mailbox);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    done(st);
    return rc;
}

static picl_status sq_token_put(sq_db *db, const ks_token *t)
{
    lock(db);
    picl_status rc = token_put_locked(db, t);
    unlock(db);
    return rc;
}

#define TOKEN_COLS                                                                                           \
    "SELECT id, type, account, hmac_key, request_key, created, expires, device_id,"                          \
    " device_name, device_type, code, tries, mailbox FROM tokens "

static picl_status token_row(sqlite3_stmt *st, ks_token *t)
{
    memset(t, 0, sizeof *t);
    picl_status rc = col_blob(st, 0, t->id, 32);
    t->type = sqlite3_column_int(st, 1);
    t->account = sqlite3_column_int64(st, 2);
    if (rc == PICL_OK)
        rc = col_blob(st, 3, t->hmac_key, 32);
    if (rc == PICL_OK)
        rc = col_blob(st, 4, t->request_key, 32);
    t->created = sqlite3_column_int64(st, 5);
    t->expires = sqlite3_column_int64(st, 6);
    col_text(st, 7, t->device_id, sizeof t->device_id);
    col_text(st, 8, t->device_name, sizeof t->device_name);
    col_text(st, 9, t->device_type, sizeof t->device_type);
    col_text(st, 10, t->code, sizeof t->code);
    t->tries = sqlite3_column_int(st, 11);
    t->mailbox = sqlite3_column_int(st, 12);
    if (rc != PICL_OK)
        picl__wipe(t, sizeof *t);
    return rc;
}

/* Reads token (id, type) under the lock already held. */
static picl_status token_get_locked(sq_db *db, const uint8_t id[32], int type, int64_t now, ks_token *t)
{
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st, TOKEN_COLS "WHERE id = ? AND type = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_blob(st, 1, id, 32, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, type);
        int s = sqlite3_step(st);
        if (s == SQLITE_DONE)
            rc = PICL_ERROR_NOT_FOUND;
        else if (s != SQLITE_ROW)
            rc = PICL_ERROR_DATABASE;
        else
            rc = token_row(st, t);
    }
    sqlite3_finalize(st);
    if (rc == PICL_OK && t->expires && now > t->expires) {
        picl__wipe(t, sizeof *t);
        rc = PICL_ERROR_TOKEN;
        /* an expired row is deleted, not kept */
        sqlite3_stmt *del = NULL;
        if (prep(db, &del, "DELETE FROM tokens WHERE id = ?") == PICL_OK) {
            sqlite3_bind_blob(del, 1, id, 32, SQLITE_STATIC);
            sqlite3_step(del);
        }
        sqlite3_finalize(del);
    }
    return rc;
}

static picl_status sq_token_get(sq_db *db, const uint8_t id[32], int type, int64_t now, ks_token *t)
{
    lock(db);
    picl_status rc = token_get_locked(db, id, type, now, t);
    unlock(db);
    return rc;
}

static picl_status sq_token_consume(sq_db *db, const uint8_t id[32])
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = begin_tx(db);
    if (rc == PICL_OK)
        rc = prep(db, &st, "DELETE FROM tokens WHERE id = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_blob(st, 1, id, 32, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
        else if (sqlite3_changes(db->h) != 1)
            rc = PICL_ERROR_TOKEN;
    }
    sqlite3_finalize(st);
    rc = end_tx(db, rc);
    unlock(db);
    return rc;
}

static picl_status sq_token_delete_account(sq_db *db, int64_t account, int type)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st,
                          type < 0 ? "DELETE FROM tokens WHERE account = ?"
                                   : "DELETE FROM tokens WHERE account = ? AND type = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        if (type >= 0)
            sqlite3_bind_int(st, 2, type);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_sessions(sq_db *db, int64_t account, int64_t now,
                               void (*fn)(void *ctx, const ks_token *t), void *ctx)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st,
                          "SELECT id, type, account, hmac_key, request_key, created, expires,"
                          " device_id, device_name, device_type, code, tries, mailbox,"
                          " coalesce((SELECT t FROM session_access a WHERE a.id = tokens.id), 0)"
                          " FROM tokens WHERE account = ? AND type = ? AND"
                          " (expires = 0 OR expires >= ?) ORDER BY rowid");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        sqlite3_bind_int(st, 2, PICL_TOKEN_SESSION);
        sqlite3_bind_int64(st, 3, now);
        int s;
        while ((s = sqlite3_step(st)) == SQLITE_ROW) {
            ks_token t;
            if (token_row(st, &t) == PICL_OK) {
                t.last_access = sqlite3_column_int64(st, 13);
                fn(ctx, &t);
            }
            picl__wipe(&t, sizeof t);
        }
        if (s != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_forgot_guess(sq_db *db, const uint8_t id[32], const char code[8], int64_t now, int *ok,
                                   int *tries_left)
{
    *ok = 0;
    *tries_left = 0;
    lock(db);
    ks_token t;
    memset(&t, 0, sizeof t);
    picl_status rc = begin_tx(db);
    if (rc != PICL_OK)
        goto out;
    rc = token_get_locked(db, id, PICL_TOKEN_FORGOT_PASSWORD, now, &t);
    if (rc == PICL_OK) {
        int right = strlen(t.code) == 8 && picl__memeq_ct(t.code, code, 8);
        if (right || t.tries <= 1) {
            sqlite3_stmt *st = NULL;
            rc = prep(db, &st, "DELETE FROM tokens WHERE id = ?");
            if (rc == PICL_OK) {
                sqlite3_bind_blob(st, 1, id, 32, SQLITE_STATIC);
                if (sqlite3_step(st) != SQLITE_DONE || sqlite3_changes(db->h) != 1)
                    rc = PICL_ERROR_TOKEN;
            }
            sqlite3_finalize(st);
            *tries_left = 0;
        } else {
            sqlite3_stmt *st = NULL;
            rc = prep(db, &st, "UPDATE tokens SET tries = tries - 1 WHERE id = ?");
            if (rc == PICL_OK) {
                sqlite3_bind_blob(st, 1, id, 32, SQLITE_STATIC);
                if (sqlite3_step(st) != SQLITE_DONE)
                    rc = PICL_ERROR_DATABASE;
            }
            sqlite3_finalize(st);
            *tries_left = t.tries - 1;
        }
        *ok = rc == PICL_OK && right;
    }
    rc = end_tx(db, rc);
    if (rc != PICL_OK)
        *ok = 0;
out:
    picl__wipe(&t, sizeof t);
    unlock(db);
    return rc;
}

/* ---- SRP sessions -------------------------------------------------------- */

static picl_status sq_srp_put(sq_db *db, const uint8_t key[32], int64_t account, const uint8_t *b,
                              size_t blen, const uint8_t B[KS_VERIFIER_BYTES], int64_t now, int64_t expires)
{
    if (!blen || blen > 256 || !B)
        return PICL_ERROR_INVALID_ARGUMENT;
    lock(db);
    /* in memory (ks_db.h): one transaction for the insert and the cleanup,
     * without a lock on the file */
    picl_status rc = begin_mem_tx(db);
    if (rc != PICL_OK) {
        unlock(db);
        return rc;
    }
    sqlite3_stmt *st = stmt(db, Q_SRP_PUT,
                            "INSERT INTO mem.srp_sessions (key, account, b, b_public, expires)"
                            " VALUES (?,?,?,?,?)");
    rc = st ? PICL_OK : PICL_ERROR_DATABASE;
    if (rc == PICL_OK) {
        sqlite3_bind_blob(st, 1, key, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, account);
        sqlite3_bind_blob(st, 3, b, (int)blen, SQLITE_STATIC);
        sqlite3_bind_blob(st, 4, B, KS_VERIFIER_BYTES, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, expires);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    done(st);
    /* Abandoned logins go as soon as they expire (expires is now + ttl). */
    if (rc == PICL_OK) {
        sqlite3_stmt *del = stmt(db, Q_SRP_GC, "DELETE FROM mem.srp_sessions WHERE expires < ?");
        if (del) {
            sqlite3_bind_int64(del, 1, now);
            sqlite3_step(del);
        }
        done(del);
    }
    rc = end_tx(db, rc);
    unlock(db);
    return rc;
}

static picl_status rate_take_locked(sq_db *db, ks_rate *limits, size_t n, int64_t now, int *over,
                                    int64_t *retry_after);

/* Reads the session row (account, b, B, expires) and deletes it, under
 * the lock inside the caller's transaction. */
static picl_status srp_pop_locked(sq_db *db, const uint8_t key[32], int64_t *account, ks_srp_login *l,
                                  int64_t *expires)
{
    sqlite3_stmt *st =
        stmt(db, Q_SRP_GET, "SELECT account, b, b_public, expires FROM mem.srp_sessions WHERE key = ?");
    picl_status rc = st ? PICL_OK : PICL_ERROR_DATABASE;
    if (rc == PICL_OK) {
        sqlite3_bind_blob(st, 1, key, 32, SQLITE_STATIC);
        int s = sqlite3_step(st);
        if (s == SQLITE_DONE)
            rc = PICL_ERROR_TOKEN;
        else if (s != SQLITE_ROW)
            rc = PICL_ERROR_DATABASE;
        else {
            *account = sqlite3_column_int64(st, 0);
            int n = sqlite3_column_bytes(st, 1);
            if (n < 1 || n > 256)
                rc = PICL_ERROR_DATABASE;
            else
                rc = col_blob(st, 1, l->b, (size_t)n);
            l->blen = n > 0 ? (size_t)n : 0;
            /* NULL: a session stored before schema v6 */
            if (rc == PICL_OK && sqlite3_column_type(st, 2) != SQLITE_NULL) {
                rc = col_blob(st, 2, l->B, KS_VERIFIER_BYTES);
                l->Blen = KS_VERIFIER_BYTES;
            }
            *expires = sqlite3_column_int64(st, 3);
        }
    }
    done(st);
    if (rc == PICL_OK) {
        st = stmt(db, Q_SRP_DEL, "DELETE FROM mem.srp_sessions WHERE key = ?");
        rc = st ? PICL_OK : PICL_ERROR_DATABASE;
        if (rc == PICL_OK) {
            sqlite3_bind_blob(st, 1, key, 32, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_DONE || sqlite3_changes(db->h) != 1)
                rc = PICL_ERROR_TOKEN;
        }
        done(st);
    }
    return rc;
}

static picl_status sq_srp_take(sq_db *db, const uint8_t key[32], int64_t now, ks_srp_login *l)
{
    lock(db);
    int64_t expires = 0, account = 0;
    /* the session and the rate events are in memory; the authToken is
     * written without waiting for the disk (ks_db.h) */
    picl_status rc = sync_level(db, 0);
    if (rc == PICL_OK)
        rc = begin_tx(db);
    if (rc != PICL_OK) {
        sync_level(db, 1);
        goto out;
    }
    rc = srp_pop_locked(db, key, &account, l, &expires);
    /* An expired session is deleted all the same, and refused. */
    picl_status verdict = rc == PICL_OK && now > expires ? PICL_ERROR_TOKEN : PICL_OK;
    if (rc == PICL_OK && verdict == PICL_OK) {
        verdict = account_by_id_locked(db, account, &l->account);
        if (verdict != PICL_OK && verdict != PICL_ERROR_NOT_FOUND)
            rc = verdict;
    }
    if (rc == PICL_OK && verdict == PICL_OK) {
        int over = 0;
        l->limits(l->ctx, account, l->lim);
        rc = rate_take_locked(db, l->lim, l->n, now, &over, &l->retry_after);
        l->ok = !over;
    }
    /* the login's authToken, in the same commit (ks_db.h) */
    if (rc == PICL_OK && verdict == PICL_OK && l->ok && l->issue) {
        l->issue->account = account;
        rc = token_put_locked(db, l->issue);
        l->issued = rc == PICL_OK;
    }
    rc = end_tx(db, rc);
    if (sync_level(db, 1) != PICL_OK && rc == PICL_OK)
        rc = PICL_ERROR_DATABASE;
    if (rc == PICL_OK)
        rc = verdict;
out:
    unlock(db);
    return rc;
}

/* ---- rate-limit events --------------------------------------------------- */

/* Counts the events of key at or after since, under the lock and inside
 * the caller's transaction.  Older events are left to the sweep (every
 * KS_SWEEP_EVERY seconds, ks_db_sweep): they are outside every count, and
 * a login does not pay a delete per limit for them. */
static picl_status rate_count_locked(sq_db *db, const char *key, int64_t since, int64_t *count,
                                     int64_t *oldest)
{
    sqlite3_stmt *st =
        stmt(db, Q_RATE_COUNT, "SELECT count(*), min(t) FROM mem.rate_events WHERE key = ? AND t >= ?");
    picl_status rc = st ? PICL_OK : PICL_ERROR_DATABASE;
    if (rc == PICL_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, since);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *count = sqlite3_column_int64(st, 0);
            *oldest = sqlite3_column_int64(st, 1);
        } else {
            rc = PICL_ERROR_DATABASE;
        }
        done(st);
    }
    return rc;
}

/* Checks every limit and, when none is reached (*over = 0), counts the
 * request in those with count = 1; under the lock, inside the caller's
 * transaction. */
static picl_status rate_take_locked(sq_db *db, ks_rate *limits, size_t n, int64_t now, int *over,
                                    int64_t *retry_after)
{
    picl_status rc = PICL_OK;
    *over = 0;
    for (size_t i = 0; rc == PICL_OK && i < n; i++) {
        ks_rate *l = &limits[i];
        int64_t count = 0, oldest = 0;
        l->event = 0;
        if (!l->key[0])
            continue;
        rc = rate_count_locked(db, l->key, now - l->window + 1, &count, &oldest);
        if (rc == PICL_OK && count >= l->max) {
            *over = 1;
            if (oldest + l->window - now > *retry_after)
                *retry_after = oldest + l->window - now;
        }
    }
    for (size_t i = 0; rc == PICL_OK && !*over && i < n; i++) {
        ks_rate *l = &limits[i];
        if (!l->key[0] || !l->count)
            continue;
        sqlite3_stmt *st = stmt(db, Q_RATE_ADD, "INSERT INTO mem.rate_events (key, t) VALUES (?, ?)");
        rc = st ? PICL_OK : PICL_ERROR_DATABASE;
        if (rc == PICL_OK) {
            sqlite3_bind_text(st, 1, l->key, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, now);
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = PICL_ERROR_DATABASE;
            else
                l->event = sqlite3_last_insert_rowid(db->h);
        }
        done(st);
    }
    return rc;
}

static picl_status sq_rate_take(sq_db *db, ks_rate *limits, size_t n, int64_t now, int *ok,
                                int64_t *retry_after)
{
    *ok = 0;
    *retry_after = 0;
    lock(db);
    int over = 0;
    picl_status rc = begin_mem_tx(db);
    if (rc != PICL_OK)
        goto out;
    rc = rate_take_locked(db, limits, n, now, &over, retry_after);
    rc = end_tx(db, rc);
    if (rc == PICL_OK)
        *ok = !over;
    else
        for (size_t i = 0; i < n; i++)
            limits[i].event = 0;
out:
    unlock(db);
    return rc;
}

/* Deletes the events a take added; under the lock, in the caller's
 * transaction. */
static picl_status rate_refund_locked(sq_db *db, const ks_rate *limits, size_t n)
{
    picl_status rc = PICL_OK;
    for (size_t i = 0; rc == PICL_OK && i < n; i++) {
        if (limits[i].event <= 0)
            continue;
        sqlite3_stmt *st = stmt(db, Q_RATE_DEL, "DELETE FROM mem.rate_events WHERE rowid = ?");
        rc = st ? PICL_OK : PICL_ERROR_DATABASE;
        if (rc == PICL_OK) {
            sqlite3_bind_int64(st, 1, limits[i].event);
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = PICL_ERROR_DATABASE;
        }
        done(st);
    }
    return rc;
}

static picl_status sq_account_rate_take(sq_db *db, const char *email, size_t len, ks_account *a,
                                        void (*limits)(void *ctx, int64_t account, ks_rate *lim), void *ctx,
                                        ks_rate *lim, size_t n, int64_t now, int *ok, int64_t *retry_after)
{
    *ok = 0;
    *retry_after = 0;
    if (!len || len > KS_EMAIL_MAX)
        return PICL_ERROR_NOT_FOUND;
    lock(db);
    int over = 0;
    picl_status rc = begin_mem_tx(db);
    if (rc != PICL_OK)
        goto out;
    sqlite3_stmt *st = stmt(db, Q_ACC_BY_EMAIL, ACCOUNT_COLS "WHERE email = ?");
    rc = st ? PICL_OK : PICL_ERROR_DATABASE;
    if (rc == PICL_OK) {
        sqlite3_bind_blob(st, 1, email, (int)len, SQLITE_STATIC);
        rc = account_row(st, a);
    }
    done(st);
    if (rc == PICL_OK) {
        limits(ctx, a->id, lim);
        rc = rate_take_locked(db, lim, n, now, &over, retry_after);
    }
    /* NOT_FOUND: nothing was written, the rollback ends the transaction */
    rc = end_tx(db, rc);
    if (rc == PICL_OK)
        *ok = !over;
    else
        for (size_t i = 0; i < n; i++)
            lim[i].event = 0;
out:
    unlock(db);
    return rc;
}

static picl_status sq_rate_refund(sq_db *db, const ks_rate *limits, size_t n)
{
    lock(db);
    picl_status rc = begin_mem_tx(db);
    if (rc == PICL_OK)
        rc = rate_refund_locked(db, limits, n);
    rc = end_tx(db, rc);
    unlock(db);
    return rc;
}

static picl_status sq_sweep(sq_db *db, int64_t now, int64_t unverified_before, int64_t rate_before)
{
    lock(db);
    picl_status rc = begin_tx(db);
    if (rc == PICL_OK)
        rc = change_by_id(db, "DELETE FROM tokens WHERE expires > 0 AND expires < ?", now, NULL);
    if (rc == PICL_OK)
        rc = change_by_id(db, "DELETE FROM mem.srp_sessions WHERE expires < ?", now, NULL);
    if (rc == PICL_OK)
        rc = change_by_id(db, "DELETE FROM mem.rate_events WHERE t < ?", rate_before, NULL);
    /* accounts never verified in time, with everything they own */
    if (rc == PICL_OK)
        rc = change_by_id(db,
                          "DELETE FROM tokens WHERE account IN (SELECT id FROM accounts"
                          " WHERE verified = 0 AND created < ?)",
                          unverified_before, NULL);
    if (rc == PICL_OK)
        rc = change_by_id(db,
                          "DELETE FROM mem.srp_sessions WHERE account IN (SELECT id FROM"
                          " accounts WHERE verified = 0 AND created < ?)",
                          unverified_before, NULL);
    if (rc == PICL_OK)
        rc = change_by_id(db, "DELETE FROM accounts WHERE verified = 0 AND created < ?", unverified_before,
                          NULL);
    rc = end_tx(db, rc);
    unlock(db);
    return rc;
}

/* One process serves an SQLite file: its in-memory nonce cache is enough. */
static picl_status sq_nonce_take(sq_db *db, const char *id, int64_t ts, const char *nonce, int64_t expires)
{
    return PICL_OK;
}

/* ---- storage nodes and assignments ---------------------------------------- */

static picl_status sq_node_add(sq_db *db, const char *url, int64_t capacity)
{
    if (!url || !*url || strlen(url) > KS_NODE_URL_MAX || capacity < 1)
        return PICL_ERROR_INVALID_ARGUMENT;
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st, "INSERT INTO nodes (url, capacity) VALUES (?, ?)");
    if (rc == PICL_OK) {
        sqlite3_bind_text(st, 1, url, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, capacity);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sqlite3_extended_errcode(db->h) == SQLITE_CONSTRAINT_UNIQUE ? PICL_ERROR_CONFLICT
                                                                             : PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

#define NODE_COLS "SELECT id, url, capacity, current_load, available, downed, generation FROM nodes "

static void node_row(sqlite3_stmt *st, ks_node *n)
{
    memset(n, 0, sizeof *n);
    n->id = sqlite3_column_int64(st, 0);
    col_text(st, 1, n->url, sizeof n->url);
    n->capacity = sqlite3_column_int64(st, 2);
    n->load = sqlite3_column_int64(st, 3);
    n->available = sqlite3_column_int(st, 4);
    n->downed = sqlite3_column_int(st, 5);
    n->generation = sqlite3_column_int64(st, 6);
}

static picl_status sq_nodes(sq_db *db, void (*fn)(void *ctx, const ks_node *n), void *ctx, int64_t *count)
{
    if (count)
        *count = 0;
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st, NODE_COLS "ORDER BY id");
    if (rc == PICL_OK) {
        int s;
        while ((s = sqlite3_step(st)) == SQLITE_ROW) {
            ks_node n;
            node_row(st, &n);
            if (fn)
                fn(ctx, &n);
            if (count)
                (*count)++;
        }
        if (s != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_node_get(sq_db *db, const char *url, ks_node *out)
{
    memset(out, 0, sizeof *out);
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st, NODE_COLS "WHERE url = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_text(st, 1, url, -1, SQLITE_STATIC);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW)
            node_row(st, out);
        else
            rc = s == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_node_drain(sq_db *db, const char *url, int64_t now, int64_t *moved)
{
    if (moved)
        *moved = 0;
    lock(db);
    sqlite3_stmt *st = NULL;
    int64_t id = 0;
    picl_status rc = begin_tx(db);
    if (rc != PICL_OK)
        goto out;
    rc = prep(db, &st, "SELECT id FROM nodes WHERE url = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_text(st, 1, url, -1, SQLITE_STATIC);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW)
            id = sqlite3_column_int64(st, 0);
        else
            rc = s == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == PICL_OK)
        rc = change_by_id(db,
                          "UPDATE nodes SET downed = 1, available = 0, current_load = 0,"
                          " generation = generation + 1 WHERE id = ?",
                          id, NULL);
    if (rc == PICL_OK)
        rc = prep(db, &st,
                  "UPDATE assignments SET replaced_at = ? WHERE node = ? AND"
                  " replaced_at = 0");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, now > 0 ? now : 1);
        sqlite3_bind_int64(st, 2, id);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
        else if (moved)
            *moved = sqlite3_changes(db->h);
    }
    sqlite3_finalize(st);
    rc = end_tx(db, rc);
out:
    unlock(db);
    return rc;
}

#define ASSIGN_COLS                                                                                          \
    "SELECT a.id, coalesce(a.account, 0), n.url, n.generation, a.created_at, a.replaced_at,"                 \
    " n.downed FROM assignments a JOIN nodes n ON n.id = a.node "

static int assignment_row(sqlite3_stmt *st, ks_assignment *a)
{
    memset(a, 0, sizeof *a);
    a->uid = sqlite3_column_int64(st, 0);
    a->account = sqlite3_column_int64(st, 1);
    col_text(st, 2, a->node, sizeof a->node);
    a->generation = sqlite3_column_int64(st, 3);
    a->created_at = sqlite3_column_int64(st, 4);
    a->replaced_at = sqlite3_column_int64(st, 5);
    return sqlite3_column_int(st, 6); /* downed */
}

static picl_status sq_assign(sq_db *db, int64_t account, int64_t now, ks_assignment *out, int *created)
{
    memset(out, 0, sizeof *out);
    if (created)
        *created = 0;
    lock(db);
    sqlite3_stmt *st = NULL;
    int64_t node = 0;
    picl_status rc = begin_tx(db);
    if (rc != PICL_OK)
        goto out;
    rc = prep(db, &st, "SELECT 1 FROM accounts WHERE id = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        int s = sqlite3_step(st);
        if (s != SQLITE_ROW)
            rc = s == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    st = NULL;
    /* the live one, unless its node went down (a drain replaces them all,
     * so that is only a node downed by hand: it is replaced now) */
    int found = 0;
    if (rc == PICL_OK)
        rc = prep(db, &st,
                  ASSIGN_COLS "WHERE a.account = ? AND a.replaced_at = 0"
                              " ORDER BY a.id DESC LIMIT 1");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW)
            found = assignment_row(st, out) ? 2 : 1;
        else if (s != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == PICL_OK && found == 1)
        goto commit;
    if (rc == PICL_OK && found == 2) {
        rc = prep(db, &st, "UPDATE assignments SET replaced_at = ? WHERE id = ?");
        if (rc == PICL_OK) {
            sqlite3_bind_int64(st, 1, now > 0 ? now : 1);
            sqlite3_bind_int64(st, 2, out->uid);
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = PICL_ERROR_DATABASE;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    memset(out, 0, sizeof *out);
    if (rc == PICL_OK)
        rc = prep(db, &st,
                  "SELECT id, url, generation FROM nodes WHERE available = 1 AND"
                  " downed = 0 AND current_load < capacity"
                  " ORDER BY capacity - current_load DESC, id LIMIT 1");
    if (rc == PICL_OK) {
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW) {
            node = sqlite3_column_int64(st, 0);
            col_text(st, 1, out->node, sizeof out->node);
            out->generation = sqlite3_column_int64(st, 2);
        } else {
            rc = s == SQLITE_DONE ? PICL_ERROR_BACKOFF : PICL_ERROR_DATABASE;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == PICL_OK)
        rc = prep(db, &st, "INSERT INTO assignments (account, node, created_at) VALUES (?,?,?)");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        sqlite3_bind_int64(st, 2, node);
        sqlite3_bind_int64(st, 3, now);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
        out->uid = sqlite3_last_insert_rowid(db->h);
        out->account = account;
        out->created_at = now;
    }
    sqlite3_finalize(st);
    if (rc == PICL_OK)
        rc = change_by_id(db, "UPDATE nodes SET current_load = current_load + 1 WHERE id = ?", node, NULL);
    if (rc == PICL_OK && created)
        *created = 1;
commit:
    rc = end_tx(db, rc);
    if (rc != PICL_OK) {
        memset(out, 0, sizeof *out);
        if (created)
            *created = 0;
    }
out:
    unlock(db);
    return rc;
}

static picl_status sq_assignment(sq_db *db, int64_t uid, ks_assignment *out)
{
    memset(out, 0, sizeof *out);
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st, ASSIGN_COLS "WHERE a.id = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, uid);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW)
            assignment_row(st, out);
        else
            rc = s == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_purgeable(sq_db *db, int64_t replaced_before,
                                int (*fn)(void *ctx, const ks_assignment *a), void *ctx)
{
    ks_assignment *list = NULL;
    size_t n = 0, cap = 0;
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st,
                          ASSIGN_COLS "WHERE a.replaced_at > 0 AND (a.replaced_at < ?"
                                      " OR a.account IS NULL) ORDER BY a.id");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, replaced_before);
        int s;
        while (rc == PICL_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 64;
                ks_assignment *g = realloc(list, nc * sizeof *g);
                if (!g) {
                    rc = PICL_ERROR_NO_MEMORY;
                    break;
                }
                list = g;
                cap = nc;
            }
            assignment_row(st, &list[n++]);
        }
        if (rc == PICL_OK && s != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    for (size_t i = 0; rc == PICL_OK && i < n; i++)
        if (fn(ctx, &list[i]))
            break;
    free(list);
    return rc;
}

static picl_status sq_purged(sq_db *db, int64_t uid)
{
    lock(db);
    int n = 0;
    picl_status rc = change_by_id(db, "DELETE FROM assignments WHERE id = ? AND replaced_at > 0", uid, &n);
    unlock(db);
    return rc == PICL_OK && n == 0 ? PICL_ERROR_NOT_FOUND : rc;
}

/* ---- devices, security events, recovery key ------------------------------- */

static picl_status sq_session_touch(sq_db *db, const uint8_t id[32], int64_t now)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st,
                          "INSERT INTO session_access (id, t) VALUES (?, ?)"
                          " ON CONFLICT (id) DO UPDATE SET t = excluded.t"
                          " WHERE t <> excluded.t");
    if (rc == PICL_OK) {
        sqlite3_bind_blob(st, 1, id, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_session_rename(sq_db *db, const uint8_t id[32], const char *name, const char *type)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st,
                          "UPDATE tokens SET device_name = ?, device_type = ?"
                          " WHERE id = ? AND type = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, id, 32, SQLITE_STATIC);
        sqlite3_bind_int(st, 4, PICL_TOKEN_SESSION);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
        else if (sqlite3_changes(db->h) != 1)
            rc = PICL_ERROR_NOT_FOUND;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_session_destroy(sq_db *db, int64_t account, const char *device_id)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st,
                          "DELETE FROM tokens WHERE account = ? AND type = ? AND"
                          " device_id = ? AND device_id <> ''");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        sqlite3_bind_int(st, 2, PICL_TOKEN_SESSION);
        sqlite3_bind_text(st, 3, device_id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
        else if (sqlite3_changes(db->h) < 1)
            rc = PICL_ERROR_NOT_FOUND;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_event_add(sq_db *db, int64_t account, const ks_event *e)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = begin_tx(db);
    if (rc == PICL_OK)
        rc = prep(db, &st,
                  "INSERT INTO events (account, type, t, device, address)"
                  " VALUES (?,?,?,?,?)");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        sqlite3_bind_text(st, 2, e->type, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, e->time);
        sqlite3_bind_text(st, 4, e->device, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, e->address, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == PICL_OK)
        rc = prep(db, &st,
                  "DELETE FROM events WHERE account = ?1 AND id NOT IN (SELECT id"
                  " FROM events WHERE account = ?1 ORDER BY id DESC LIMIT ?2)");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        sqlite3_bind_int(st, 2, KS_EVENTS_KEPT);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    rc = end_tx(db, rc);
    unlock(db);
    return rc;
}

static picl_status sq_events(sq_db *db, int64_t account, void (*fn)(void *ctx, const ks_event *e), void *ctx)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st,
                          "SELECT type, t, device, address FROM events"
                          " WHERE account = ? ORDER BY id DESC LIMIT ?");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        sqlite3_bind_int(st, 2, KS_EVENTS_KEPT);
        int s;
        while ((s = sqlite3_step(st)) == SQLITE_ROW) {
            ks_event e;
            memset(&e, 0, sizeof e);
            col_text(st, 0, e.type, sizeof e.type);
            e.time = sqlite3_column_int64(st, 1);
            col_text(st, 2, e.device, sizeof e.device);
            col_text(st, 3, e.address, sizeof e.address);
            fn(ctx, &e);
        }
        if (s != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_recovery_put(sq_db *db, int64_t account, const char *id, const char *data)
{
    if (strlen(id) != 32 || strlen(data) > KS_RECOVERY_DATA_MAX)
        return PICL_ERROR_INVALID_ARGUMENT;
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st,
                          "INSERT OR REPLACE INTO recovery_keys (account, key_id, data)"
                          " VALUES (?,?,?)");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, data, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_recovery_get(sq_db *db, int64_t account, char id[33], char *data, size_t cap)
{
    id[0] = 0;
    if (cap)
        data[0] = 0;
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = prep(db, &st, "SELECT key_id, data FROM recovery_keys WHERE account = ?");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, account);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW) {
            col_text(st, 0, id, 33);
            if (cap)
                col_text(st, 1, data, cap);
        } else {
            rc = s == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : PICL_ERROR_DATABASE;
        }
    }
    sqlite3_finalize(st);
    unlock(db);
    return rc;
}

static picl_status sq_recovery_delete(sq_db *db, int64_t account)
{
    lock(db);
    int n = 0;
    picl_status rc = change_by_id(db, "DELETE FROM recovery_keys WHERE account = ?", account, &n);
    unlock(db);
    return rc == PICL_OK && n == 0 ? PICL_ERROR_NOT_FOUND : rc;
}

/* ---- the outbox of verification mails ------------------------------------ */

static picl_status sq_outbox_claim(sq_db *db, int64_t due, int64_t until, int64_t *accounts, size_t cap,
                                   size_t *n)
{
    lock(db);
    sqlite3_stmt *st = NULL;
    picl_status rc = begin_tx(db);
    if (rc == PICL_OK)
        rc = prep(db, &st,
                  "SELECT account FROM outbox WHERE next_try <= ?"
                  " ORDER BY next_try, account LIMIT ?");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, due);
        sqlite3_bind_int64(st, 2, (int64_t)cap);
        int s = SQLITE_DONE;
        while (*n < cap && (s = sqlite3_step(st)) == SQLITE_ROW)
            accounts[(*n)++] = sqlite3_column_int64(st, 0);
        if (*n < cap && s != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == PICL_OK)
        rc = prep(db, &st, "UPDATE outbox SET next_try = ?, tries = tries + 1 WHERE account = ?");
    for (size_t i = 0; rc == PICL_OK && i < *n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, until);
        sqlite3_bind_int64(st, 2, accounts[i]);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = PICL_ERROR_DATABASE;
    }
    sqlite3_finalize(st);
    rc = end_tx(db, rc);
    if (rc != PICL_OK)
        *n = 0;
    unlock(db);
    return rc;
}

static picl_status sq_outbox_done(sq_db *db, int64_t account)
{
    lock(db);
    picl_status rc = change_by_id(db, "DELETE FROM outbox WHERE account = ?", account, NULL);
    unlock(db);
    return rc;
}

#ifdef PICL_TEST_HOOKS
/* The first column of sql's first row on the connection, -1 on failure. */
static long long test_int(sq_db *db, const char *sql)
{
    lock(db);
    long long n = -1;
    sqlite3_stmt *st = NULL;
    if (prep(db, &st, sql) == PICL_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    unlock(db);
    return n;
}

int ks_db_sqlite_sync_level(sq_db *db) { return (int)test_int(db, "PRAGMA synchronous"); }

long long ks_db_sqlite_srp_count(sq_db *db, const char *where)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM mem.srp_sessions %s", where);
    return test_int(db, sql);
}
#endif

const ks_db_ops ks_db_sqlite_ops = {
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .ping = sq_ping,
    .account_create = sq_account_create,
    .account_by_email = sq_account_by_email,
    .account_by_id = sq_account_by_id,
    .account_by_uid = sq_account_by_uid,
    .account_set_verified = sq_account_set_verified,
    .account_reset = sq_account_reset,
    .classmap_get = sq_classmap_get,
    .classmap_put = sq_classmap_put,
    .account_delete = sq_account_delete,
    .token_put = sq_token_put,
    .token_get = sq_token_get,
    .token_consume = sq_token_consume,
    .token_delete_account = sq_token_delete_account,
    .sessions = sq_sessions,
    .forgot_guess = sq_forgot_guess,
    .srp_put = sq_srp_put,
    .srp_take = sq_srp_take,
    .rate_take = sq_rate_take,
    .rate_refund = sq_rate_refund,
    .account_rate_take = sq_account_rate_take,
    .sweep = sq_sweep,
    .nonce_take = sq_nonce_take,
    .node_add = sq_node_add,
    .nodes = sq_nodes,
    .node_get = sq_node_get,
    .node_drain = sq_node_drain,
    .assign = sq_assign,
    .assignment = sq_assignment,
    .purgeable = sq_purgeable,
    .purged = sq_purged,
    .session_touch = sq_session_touch,
    .session_rename = sq_session_rename,
    .session_destroy = sq_session_destroy,
    .event_add = sq_event_add,
    .events = sq_events,
    .recovery_put = sq_recovery_put,
    .recovery_get = sq_recovery_get,
    .recovery_delete = sq_recovery_delete,
    .outbox_claim = sq_outbox_claim,
    .outbox_done = sq_outbox_done,
};
