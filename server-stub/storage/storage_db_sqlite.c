/* SPDX-License-Identifier: MPL-2.0 */
/* storage_db_sqlite.c -- the storage server's SQLite backend: one file
 * <dir>/storage.db in WAL mode, a pool of connections, BEGIN IMMEDIATE for
 * writers (see storage_db.h for the contract, storage_db_impl.h for the
 * table). */
#include "storage/storage_db_sqlite.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define POOL_MAX_IDLE 16
#define BUSY_TIMEOUT_MS 10000
/* Reads map the database file instead of pread()ing each 4 KiB page into
 * the connection's cache (a 1 000-record listing was dominated by those
 * copies; issue 15).  Writes still go through the WAL with
 * synchronous=FULL: mmap changes how pages are read, not what is durable. */
#define SQ_MMAP_SIZE "268435456"
#define NULL_SORTINDEX SDB_NULL_SORTINDEX
/* The SQLite file's schema: SDB_SCHEMA_VERSION's 3, then 4: an open
 * batch's records and bytes kept in its row; 5: a deletion's own
 * timestamp in the undo history. */
#define SQ_SCHEMA_VERSION 5

typedef struct sdb_impl sq_db;

struct sdb_impl {
    char *path;
    int busy_ms;
    pthread_mutex_t mu;
    sq_conn *idle[POOL_MAX_IDLE];
    size_t nidle;
};

picl_status sdb__map_rc(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return PICL_ERROR_CONFLICT;
    case SQLITE_NOMEM:
        return PICL_ERROR_NO_MEMORY;
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_FULL:
        return PICL_ERROR_IO;
    default:
        return PICL_ERROR_DATABASE;
    }
}

static picl_status exec(sqlite3 *c, const char *sql)
{
    int rc = sqlite3_exec(c, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? PICL_OK : sdb__map_rc(rc);
}

picl_status sdb__prep(sqlite3 *c, const char *sql, sqlite3_stmt **st)
{
    int rc = sqlite3_prepare_v2(c, sql, -1, st, NULL);
    return rc == SQLITE_OK ? PICL_OK : sdb__map_rc(rc);
}

/* Steps a statement that returns no row, then finalizes it. */
picl_status sdb__run(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? PICL_OK : sdb__map_rc(rc);
}

/* ---- statements kept per connection ---------------------------------- */

/* FNV-1a of the length and of at most the first and last 48 bytes (the
 * whole text is compared on a match). */
static uint64_t sql_hash(const char *sql)
{
    size_t n = strlen(sql);
    uint64_t h = (1469598103934665603u ^ n) * 1099511628211u;
    for (size_t i = 0; i < n; i = (i == 47 && n > 96) ? n - 48 : i + 1)
        h = (h ^ (uint8_t)sql[i]) * 1099511628211u;
    return h;
}

picl_status sq_stmt(sdb_conn *conn, const char *sql, sqlite3_stmt **st)
{
    sq_conn *k = (sq_conn *)conn;
    uint64_t h = sql_hash(sql);
    *st = NULL;
    for (size_t i = 0; i < k->nstmts; i++) {
        struct sq_cached *e = &k->stmts[i];
        if (e->hash == h && !e->busy && !strcmp(sqlite3_sql(e->st), sql)) {
            e->busy = 1;
            *st = e->st;
            return PICL_OK;
        }
    }
    int keep = k->nstmts < SQ_STMT_CACHE;
    int rc = sqlite3_prepare_v3(k->c, sql, -1, keep ? SQLITE_PREPARE_PERSISTENT : 0, st, NULL);
    if (rc != SQLITE_OK) {
        *st = NULL;
        return sdb__map_rc(rc);
    }
    if (keep)
        k->stmts[k->nstmts++] = (struct sq_cached){.hash = h, .st = *st, .busy = 1};
    return PICL_OK;
}

void sq_put(sdb_conn *conn, sqlite3_stmt *st)
{
    sq_conn *k = (sq_conn *)conn;
    if (!st)
        return;
    for (size_t i = 0; i < k->nstmts; i++) {
        if (k->stmts[i].st == st) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            k->stmts[i].busy = 0;
            return;
        }
    }
    sqlite3_finalize(st);
}

picl_status sq_run(sdb_conn *conn, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sq_put(conn, st);
    return rc == SQLITE_DONE ? PICL_OK : sdb__map_rc(rc);
}

void sq_stmts_free(sq_conn *k)
{
    for (size_t i = 0; i < k->nstmts; i++)
        sqlite3_finalize(k->stmts[i].st);
    k->nstmts = 0;
}

/* Runs a statement without parameters or rows (BEGIN, COMMIT...) kept on
 * the connection. */
static picl_status run_kept(sdb_conn *conn, const char *sql)
{
    sqlite3_stmt *q;
    picl_status st = sq_stmt(conn, sql, &q);
    return st == PICL_OK ? sq_run(conn, q) : st;
}

/* ---- pool and schema ------------------------------------------------- */

static const char *const schema_v1 =
    "CREATE TABLE users(uid INTEGER PRIMARY KEY, modified INTEGER NOT NULL);"
    "CREATE TABLE collections(uid INTEGER NOT NULL, name TEXT NOT NULL,"
    " modified INTEGER NOT NULL, PRIMARY KEY(uid, name));"
    "CREATE TABLE bsos(uid INTEGER NOT NULL, coll TEXT NOT NULL, id TEXT NOT NULL,"
    " sortindex INTEGER, payload TEXT NOT NULL DEFAULT '', payload_size INTEGER NOT NULL DEFAULT 0,"
    " modified INTEGER NOT NULL, expiry INTEGER NOT NULL);"
    "CREATE UNIQUE INDEX bsos_key ON bsos(uid, coll, id);"
    "CREATE INDEX bsos_modified ON bsos(uid, coll, modified);"
    "CREATE INDEX bsos_expiry ON bsos(expiry);"
    "CREATE TABLE batches(id TEXT PRIMARY KEY, uid INTEGER NOT NULL, coll TEXT NOT NULL,"
    " expires INTEGER NOT NULL);"
    "CREATE TABLE batch_items(batch TEXT NOT NULL, id TEXT NOT NULL,"
    " sortindex INTEGER, has_sortindex INTEGER NOT NULL, payload TEXT, has_payload INTEGER NOT NULL,"
    " ttl INTEGER, has_ttl INTEGER NOT NULL, PRIMARY KEY(batch, id));";

static picl_status conn_open(const char *path, int busy_ms, sqlite3 **out)
{
    sqlite3 *c = NULL;
    *out = NULL;
    int rc =
        sqlite3_open_v2(path, &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_close(c);
        return rc == SQLITE_CANTOPEN ? PICL_ERROR_IO : sdb__map_rc(rc);
    }
    sqlite3_busy_timeout(c, busy_ms);
    picl_status st =
        exec(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA mmap_size=" SQ_MMAP_SIZE ";");
    if (st != PICL_OK) {
        sqlite3_close(c);
        return st;
    }
    *out = c;
    return PICL_OK;
}

/* 1 when table has the column (a file whose version was set back by hand
 * may have it already). */
static int has_column(sqlite3 *c, const char *table, const char *column)
{
    sqlite3_stmt *q = NULL;
    int found = 0;
    if (sdb__prep(c, "SELECT count(*) FROM pragma_table_info(?1) WHERE name=?2", &q) != PICL_OK)
        return 0;
    sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, column, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW)
        found = sqlite3_column_int(q, 0) > 0;
    sqlite3_finalize(q);
    return found;
}

/* Creates or migrates the schema in one IMMEDIATE transaction. */
static picl_status migrate(sqlite3 *c)
{
    picl_status st = exec(c, "BEGIN IMMEDIATE");
    if (st != PICL_OK)
        return st;
    sqlite3_stmt *q = NULL;
    int64_t version = 0;
    st = exec(c, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)");
    if (st == PICL_OK)
        st = sdb__prep(c, "SELECT max(version) FROM schema_version", &q);
    if (st == PICL_OK) {
        if (sqlite3_step(q) == SQLITE_ROW)
            version = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    if (st == PICL_OK && version > SQ_SCHEMA_VERSION)
        st = PICL_ERROR_UNSUPPORTED; /* written by a newer server */
    if (st == PICL_OK && version < 1) {
        st = exec(c, schema_v1);
        if (st == PICL_OK)
            st = exec(c, "DELETE FROM schema_version; INSERT INTO schema_version VALUES(1)");
    }
    /* v2: open batches are looked up per user (quota, open-batch limit) */
    if (st == PICL_OK && version < 2) {
        st = exec(c, "CREATE INDEX IF NOT EXISTS batches_uid ON batches(uid, expires)");
        if (st == PICL_OK)
            st = exec(c, "DELETE FROM schema_version; INSERT INTO schema_version VALUES(2)");
    }
    /* v3: the undo extension's history of previous versions */
    if (st == PICL_OK && version < 3) {
        st = sdb__history_migrate(c, 3);
        if (st == PICL_OK)
            st = exec(c, "DELETE FROM schema_version; INSERT INTO schema_version VALUES(3)");
    }
    /* v4: an open batch's record count and payload bytes kept in its row
     * (they were summed over its items at every append: quadratic) */
    if (st == PICL_OK && version < 4 && !has_column(c, "batches", "records"))
        st = exec(c, "ALTER TABLE batches ADD COLUMN records INTEGER NOT NULL DEFAULT 0;"
                     "ALTER TABLE batches ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0");
    if (st == PICL_OK && version < 4) {
        st = exec(c, "UPDATE batches SET records=(SELECT count(*) FROM batch_items WHERE batch=batches.id),"
                     " bytes=(SELECT IFNULL(SUM(length(CAST(payload AS BLOB))),0) FROM batch_items"
                     " WHERE batch=batches.id)");
        if (st == PICL_OK)
            st = exec(c, "DELETE FROM schema_version; INSERT INTO schema_version VALUES(4)");
    }
    /* v5: the undo history records a deletion at the deleting write's own
     * timestamp (it read SQLite's clock, which could be a tick later) */
    if (st == PICL_OK && version < 5) {
        st = sdb__history_migrate(c, 5);
        if (st == PICL_OK)
            st = exec(c, "DELETE FROM schema_version; INSERT INTO schema_version VALUES(5)");
    }
    /* Later versions migrate here: if (version < 6) ... */
    if (st == PICL_OK)
        st = exec(c, "COMMIT");
    if (st != PICL_OK)
        sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

static void sq_close(sq_db *db);
static void sq_release(sq_db *db, sdb_conn *conn);

/* A pooled connection around a fresh handle. */
static picl_status conn_new(sq_db *db, sq_conn **out)
{
    *out = NULL;
    sq_conn *k = calloc(1, sizeof *k);
    if (!k)
        return PICL_ERROR_NO_MEMORY;
    k->base.ops = &sdb_sqlite_ops;
    picl_status st = conn_open(db->path, db->busy_ms, &k->c);
    if (st != PICL_OK) {
        free(k);
        return st;
    }
    *out = k;
    return PICL_OK;
}

static void conn_free(sq_conn *k)
{
    if (!k)
        return;
    sq_stmts_free(k);
    sqlite3_close(k->c);
    free(k);
}

static picl_status sq_open(sq_db **out, const char *dir, int busy_timeout_ms, unsigned pool, const char **why)
{
    (void)pool; /* SQLite opens connections as the load needs */
    (void)why;
    *out = NULL;
    struct stat sb;
    if (!dir || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return PICL_ERROR_IO;
    sq_db *db = calloc(1, sizeof *db);
    if (!db)
        return PICL_ERROR_NO_MEMORY;
    size_t n = strlen(dir) + sizeof "/storage.db";
    db->path = malloc(n);
    if (!db->path) {
        free(db);
        return PICL_ERROR_NO_MEMORY;
    }
    snprintf(db->path, n, "%s/storage.db", dir);
    db->busy_ms = busy_timeout_ms > 0 ? busy_timeout_ms : BUSY_TIMEOUT_MS;
    pthread_mutex_init(&db->mu, NULL);
    sq_conn *k;
    picl_status st = conn_new(db, &k);
    if (st == PICL_OK) {
        st = migrate(k->c);
        if (st == PICL_OK)
            sq_release(db, &k->base);
        else
            conn_free(k);
    }
    if (st != PICL_OK) {
        sq_close(db);
        return st;
    }
    *out = db;
    return PICL_OK;
}

static void sq_close(sq_db *db)
{
    if (!db)
        return;
    for (size_t i = 0; i < db->nidle; i++)
        conn_free(db->idle[i]);
    pthread_mutex_destroy(&db->mu);
    free(db->path);
    free(db);
}

static const char *sq_where(const sq_db *db) { return db->path; }

static picl_status sq_acquire(sq_db *db, sdb_conn **conn)
{
    sq_conn *k = NULL;
    *conn = NULL;
    pthread_mutex_lock(&db->mu);
    if (db->nidle)
        k = db->idle[--db->nidle];
    pthread_mutex_unlock(&db->mu);
    picl_status st = k ? PICL_OK : conn_new(db, &k);
    if (st == PICL_OK)
        *conn = &k->base;
    return st;
}

static void sq_release(sq_db *db, sdb_conn *conn)
{
    sq_conn *k = (sq_conn *)conn;
    if (!k)
        return;
    /* what a failed path left held goes back before the connection does */
    for (size_t i = 0; i < k->nstmts; i++)
        if (k->stmts[i].busy)
            sq_put(conn, k->stmts[i].st);
    if (!sqlite3_get_autocommit(k->c) && run_kept(conn, "ROLLBACK") != PICL_OK)
        sqlite3_exec(k->c, "ROLLBACK", NULL, NULL, NULL);
    pthread_mutex_lock(&db->mu);
    if (db->nidle < POOL_MAX_IDLE) {
        db->idle[db->nidle++] = k;
        k = NULL;
    }
    pthread_mutex_unlock(&db->mu);
    conn_free(k);
}

/* A database opened read-only would answer every write 503 forever: the
 * caller refuses to start instead, saying which file and why. */
static picl_status sq_check_writable(sq_db *db, const char **why)
{
    sdb_conn *conn = NULL;
    *why = NULL;
    picl_status st = sq_acquire(db, &conn);
    if (st != PICL_OK)
        return st;
    sqlite3 *c = sq_of(conn);
    if (sqlite3_db_readonly(c, "main") == 1) {
        *why = "opened read-only (check the permissions of the file and its directory, and the mount)";
    } else if (sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        /* the message lives in the handle: copied before it goes back */
        static __thread char msg[256];
        snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(c));
        *why = msg;
    } else {
        sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    }
    if (*why)
        st = PICL_ERROR_IO;
    sq_release(db, conn);
    return st;
}

static picl_status sq_history_configure(sq_db *db, int64_t days)
{
    sdb_conn *c = NULL;
    picl_status st = sq_acquire(db, &c);
    if (st == PICL_OK)
        st = sdb__history_configure(sq_of(c), days);
    sq_release(db, c);
    return st;
}

/* One process serves an SQLite file: its in-memory nonce cache is enough. */
static picl_status sq_nonce_take(sq_db *db, const char *key, int64_t expires)
{
    (void)db;
    (void)key;
    (void)expires;
    return PICL_OK;
}

static picl_status sq_ping(sdb_conn *c)
{
    return sqlite3_exec(sq_of(c), "SELECT 1", NULL, NULL, NULL) == SQLITE_OK ? PICL_OK : PICL_ERROR_DATABASE;
}

/* ---- transactions ---------------------------------------------------- */

static void rollback_raw(sdb_conn *c)
{
    ((sq_conn *)c)->write_time = 0;
    ((sq_conn *)c)->write_time_set = 0; /* rolled back with the rest */
    if (!sqlite3_get_autocommit(sq_of(c)) && run_kept(c, "ROLLBACK") != PICL_OK)
        sqlite3_exec(sq_of(c), "ROLLBACK", NULL, NULL, NULL);
}

static picl_status user_modified(sdb_conn *c, int64_t uid, int64_t *m)
{
    sqlite3_stmt *q;
    *m = 0;
    picl_status st = sq_stmt(c, "SELECT modified FROM users WHERE uid=?1", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *m = sqlite3_column_int64(q, 0);
    else if (rc != SQLITE_DONE)
        st = sdb__map_rc(rc);
    sq_put(c, q);
    return st;
}

static picl_status begin(sdb_conn *c, const char *sql, int64_t uid, int64_t *m)
{
    picl_status st = run_kept(c, sql);
    if (st != PICL_OK)
        return st;
    st = user_modified(c, uid, m);
    if (st != PICL_OK)
        rollback_raw(c);
    return st;
}

/* BEGIN IMMEDIATE: every writer of the file waits here (busy timeout). */
static picl_status sq_begin_write(sdb_conn *c, int64_t uid, int64_t *m)
{
    return begin(c, "BEGIN IMMEDIATE", uid, m);
}

static picl_status sq_begin_read(sdb_conn *c, int64_t uid, int64_t *m) { return begin(c, "BEGIN", uid, m); }

static picl_status sq_begin_maint(sdb_conn *c)
{
    return run_kept(c, "BEGIN IMMEDIATE") == PICL_OK ? PICL_OK : PICL_ERROR_CONFLICT;
}

static picl_status sq_commit(sdb_conn *c)
{
    sq_conn *k = (sq_conn *)c;
    picl_status st = PICL_OK;
    /* the deletion time out again: never committed, so another program's
     * deletion reads SQLite's clock */
    if (k->write_time_set)
        st = sdb__history_write_time(c, 0);
    k->write_time = 0;
    k->write_time_set = 0;
    if (st == PICL_OK)
        st = run_kept(c, "COMMIT");
    if (st != PICL_OK)
        rollback_raw(c);
    return st;
}

static void sq_rollback(sdb_conn *c) { rollback_raw(c); }

static int sq_in_tx(sdb_conn *c) { return !sqlite3_get_autocommit(sq_of(c)); }

/* The deleting write's timestamp: into history_write_time before the
 * transaction's first deletion (mark_write_time), for the history trigger. */
static void sq_set_write_time(sdb_conn *c, int64_t t) { ((sq_conn *)c)->write_time = t; }

static picl_status mark_write_time(sdb_conn *c)
{
    sq_conn *k = (sq_conn *)c;
    if (!k->write_time || k->write_time_set)
        return PICL_OK;
    picl_status st = sdb__history_write_time(c, k->write_time);
    k->write_time_set = st == PICL_OK;
    return st;
}

/* ---- single values --------------------------------------------------- */

/* Runs q (bound already); a row's column 0 into *v, else NOT_FOUND. */
static picl_status one_int(sdb_conn *conn, sqlite3_stmt *q, int64_t *v)
{
    int rc = sqlite3_step(q);
    picl_status st = PICL_OK;
    if (rc == SQLITE_ROW)
        *v = sqlite3_column_int64(q, 0);
    else
        st = rc == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : sdb__map_rc(rc);
    sq_put(conn, q);
    return st;
}

static picl_status sq_coll_modified(sdb_conn *conn, int64_t uid, const char *coll, int64_t *modified)
{
    sqlite3_stmt *q;
    picl_status st = sq_stmt(conn, "SELECT modified FROM collections WHERE uid=?1 AND name=?2", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    return one_int(conn, q, modified);
}

/* Prepares sql and binds ?1 uid, ?2 collection, ?3 BSO id, ?4 now: the
 * shape of every query on one live BSO. */
static picl_status prep_live_item(sdb_conn *c, const char *sql, int64_t uid, const char *coll, const char *id,
                                  int64_t now, sqlite3_stmt **q)
{
    picl_status st = sq_stmt(c, sql, q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(*q, 1, uid);
    sqlite3_bind_text(*q, 2, coll, -1, SQLITE_STATIC);
    sqlite3_bind_text(*q, 3, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(*q, 4, now);
    return PICL_OK;
}

static picl_status sq_item_modified(sdb_conn *conn, int64_t uid, const char *coll, const char *id,
                                    int64_t now, int64_t *modified)
{
    sqlite3_stmt *q;
    picl_status st = prep_live_item(conn,
                                    "SELECT modified FROM bsos WHERE uid=?1 AND coll=?2 AND id=?3"
                                    " AND expiry>?4",
                                    uid, coll, id, now, &q);
    if (st != PICL_OK)
        return st;
    return one_int(conn, q, modified);
}

static picl_status sq_usage(sdb_conn *conn, int64_t uid, int64_t now, int64_t *bytes)
{
    sqlite3_stmt *q;
    /* an open batch's bytes are kept in its row (schema v4) */
    picl_status st = sq_stmt(conn,
                             "SELECT IFNULL((SELECT SUM(payload_size) FROM bsos WHERE uid=?1"
                             " AND expiry>?2),0) + IFNULL((SELECT SUM(bytes) FROM batches"
                             " WHERE uid=?1 AND expires>?2),0) + IFNULL((SELECT SUM(payload_size)"
                             " FROM bso_history WHERE uid=?1 AND keep_until>?2),0)",
                             &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_int64(q, 2, now);
    return one_int(conn, q, bytes);
}

/* ---- writes ---------------------------------------------------------- */

static void sq_upserter_done(sdb_upserter *u);

static picl_status sq_upserter_init(sdb_conn *conn, sdb_upserter *u)
{
    sqlite3_stmt *del = NULL, *ins = NULL;
    u->c = conn;
    picl_status st =
        sq_stmt(conn, "DELETE FROM bsos WHERE uid=?1 AND coll=?2 AND id=?3 AND expiry<=?4", &del);
    if (st == PICL_OK)
        st = sq_stmt(conn,
                     "INSERT INTO bsos(uid,coll,id,sortindex,payload,payload_size,modified,expiry)"
                     " VALUES(?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT(uid,coll,id) DO UPDATE SET"
                     " sortindex=CASE WHEN ?9 THEN excluded.sortindex ELSE sortindex END,"
                     " payload=CASE WHEN ?10 THEN excluded.payload ELSE payload END,"
                     " payload_size=CASE WHEN ?10 THEN excluded.payload_size ELSE payload_size END,"
                     " expiry=CASE WHEN ?11 THEN excluded.expiry ELSE expiry END,"
                     " modified=excluded.modified",
                     &ins);
    u->priv[0] = del;
    u->priv[1] = ins;
    if (st != PICL_OK)
        sq_upserter_done(u);
    return st;
}

/* Every run stepped its statement already. */
static picl_status sq_upserter_flush(sdb_upserter *u)
{
    (void)u;
    return PICL_OK;
}

static void sq_upserter_done(sdb_upserter *u)
{
    sq_put(u->c, u->priv[0]);
    sq_put(u->c, u->priv[1]);
    u->priv[0] = u->priv[1] = NULL;
}

/* Steps a reusable statement that returns no row, then resets it. */
static picl_status step_reset(sqlite3_stmt *q)
{
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc == SQLITE_DONE ? PICL_OK : sdb__map_rc(rc);
}

static picl_status sq_upserter_run(sdb_upserter *u, int64_t uid, const char *coll, const sdb_bso *b,
                                   int64_t t, int64_t now)
{
    sqlite3_stmt *q = u->priv[0];
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, b->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, now);
    picl_status st = step_reset(q);
    if (st != PICL_OK)
        return st;
    q = u->priv[1];
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, b->id, -1, SQLITE_STATIC);
    if (b->has_sortindex && !b->sortindex_null)
        sqlite3_bind_int64(q, 4, b->sortindex);
    else
        sqlite3_bind_null(q, 4);
    if (b->has_payload && b->payload) {
        sqlite3_bind_text(q, 5, b->payload, (int)b->payload_len, SQLITE_STATIC);
        sqlite3_bind_int64(q, 6, (int64_t)b->payload_len);
    } else {
        sqlite3_bind_text(q, 5, "", 0, SQLITE_STATIC);
        sqlite3_bind_int64(q, 6, 0);
    }
    sqlite3_bind_int64(q, 7, t);
    sqlite3_bind_int64(q, 8, b->has_ttl && !b->ttl_null ? t + b->ttl * 100 : SDB_NO_EXPIRY);
    sqlite3_bind_int(q, 9, b->has_sortindex);
    sqlite3_bind_int(q, 10, b->has_payload);
    sqlite3_bind_int(q, 11, b->has_ttl);
    return step_reset(q);
}

static picl_status sq_touch(sdb_conn *conn, int64_t uid, const char *coll, int64_t t)
{
    sqlite3_stmt *q;
    picl_status st = sq_stmt(conn,
                             "INSERT INTO users(uid,modified) VALUES(?1,?2)"
                             " ON CONFLICT(uid) DO UPDATE SET modified=excluded.modified",
                             &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_int64(q, 2, t);
    if ((st = sq_run(conn, q)) != PICL_OK || !coll)
        return st;
    st = sq_stmt(conn,
                 "INSERT INTO collections(uid,name,modified) VALUES(?1,?2,?3)"
                 " ON CONFLICT(uid,name) DO UPDATE SET modified=excluded.modified",
                 &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, t);
    return sq_run(conn, q);
}

/* Runs sql with ?1 = uid and (when coll) ?2 = coll. */
static picl_status run_uc(sqlite3 *c, const char *sql, int64_t uid, const char *coll)
{
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, sql, &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    if (coll)
        sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    return sdb__run(q);
}

static picl_status sq_delete_coll(sdb_conn *conn, int64_t uid, const char *coll)
{
    sqlite3 *c = sq_of(conn);
    static const char *const sql[] = {
        "DELETE FROM bsos WHERE uid=?1 AND coll=?2",
        "DELETE FROM collections WHERE uid=?1 AND name=?2",
        "DELETE FROM batch_items WHERE batch IN (SELECT id FROM batches WHERE uid=?1 AND coll=?2)",
        "DELETE FROM batches WHERE uid=?1 AND coll=?2",
    };
    picl_status st = mark_write_time(conn);
    for (size_t i = 0; i < sizeof sql / sizeof sql[0] && st == PICL_OK; i++)
        st = run_uc(c, sql[i], uid, coll);
    return st;
}

static picl_status sq_delete_all(sdb_conn *conn, int64_t uid)
{
    sqlite3 *c = sq_of(conn);
    static const char *const sql[] = {
        "DELETE FROM bsos WHERE uid=?1",
        "DELETE FROM collections WHERE uid=?1",
        "DELETE FROM batch_items WHERE batch IN (SELECT id FROM batches WHERE uid=?1)",
        "DELETE FROM batches WHERE uid=?1",
    };
    picl_status st = PICL_OK;
    for (size_t i = 0; i < sizeof sql / sizeof sql[0] && st == PICL_OK; i++)
        st = run_uc(c, sql[i], uid, NULL);
    if (st == PICL_OK)
        st = sdb__history_delete_user(c, uid);
    return st;
}

static picl_status sq_delete_item(sdb_conn *conn, int64_t uid, const char *coll, const char *id, int64_t now,
                                  int *deleted)
{
    sqlite3 *c = sq_of(conn);
    sqlite3_stmt *q;
    picl_status st = mark_write_time(conn);
    if (st != PICL_OK)
        return st;
    st = sdb__prep(c, "DELETE FROM bsos WHERE uid=?1 AND coll=?2 AND id=?3", &q);
    if (st != PICL_OK)
        return st;
    int64_t m;
    int live = sq_item_modified(conn, uid, coll, id, now, &m) == PICL_OK;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, id, -1, SQLITE_STATIC);
    st = sdb__run(q);
    if (deleted)
        *deleted = live;
    return st;
}

static picl_status sq_prune(sdb_conn *conn, int64_t now, int64_t *removed)
{
    sqlite3 *c = sq_of(conn);
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, "DELETE FROM bsos WHERE expiry<=?1", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, now);
    if ((st = sdb__run(q)) != PICL_OK)
        return st;
    if (removed)
        *removed = sqlite3_changes(c);
    if ((st = sdb__history_prune(c, now, removed)) != PICL_OK)
        return st;
    st =
        sdb__prep(c, "DELETE FROM batch_items WHERE batch IN (SELECT id FROM batches WHERE expires<=?1)", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, now);
    if ((st = sdb__run(q)) != PICL_OK)
        return st;
    if ((st = sdb__prep(c, "DELETE FROM batches WHERE expires<=?1", &q)) != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, now);
    return sdb__run(q);
}

/* ---- reads ----------------------------------------------------------- */

/* The row of a statement whose columns are id, modified, payload,
 * sortindex, then (listings) the sort key. */
static void row_of(sqlite3_stmt *q, sdb_row *row)
{
    row->id = (const char *)sqlite3_column_text(q, 0);
    row->idlen = (size_t)sqlite3_column_bytes(q, 0);
    row->modified = sqlite3_column_int64(q, 1);
    row->payload = (const char *)sqlite3_column_text(q, 2);
    row->payload_len = (size_t)sqlite3_column_bytes(q, 2);
    row->has_sortindex = sqlite3_column_type(q, 3) != SQLITE_NULL;
    row->sortindex = sqlite3_column_int64(q, 3);
    row->key = sqlite3_column_count(q) > 4 ? sqlite3_column_int64(q, 4) : 0;
}

static picl_status sq_get_item(sdb_conn *conn, int64_t uid, const char *coll, const char *id, int64_t now,
                               srv_buf *out, int64_t *modified)
{
    sqlite3_stmt *q;
    picl_status st = prep_live_item(conn,
                                    "SELECT id, modified, payload, sortindex FROM bsos"
                                    " WHERE uid=?1 AND coll=?2 AND id=?3 AND expiry>?4",
                                    uid, coll, id, now, &q);
    if (st != PICL_OK)
        return st;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        sdb_row row;
        row_of(q, &row);
        *modified = row.modified;
        sdb__render_bso(out, &row);
        st = out->failed ? PICL_ERROR_NO_MEMORY : PICL_OK;
    } else {
        st = rc == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : sdb__map_rc(rc);
    }
    sq_put(conn, q);
    return st;
}

/* Renders a {name: value} object from rows (text name, value). kind 0:
 * timestamp, 1: integer, 2: kilobytes from bytes. */
static picl_status render_map(sdb_conn *conn, sqlite3_stmt *q, srv_buf *out, int kind)
{
    int rc, first = 1;
    srv_buf_puts(out, "{");
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        sdb__map_entry(out, first, (const char *)sqlite3_column_text(q, 0),
                       (size_t)sqlite3_column_bytes(q, 0), sqlite3_column_int64(q, 1), kind);
        first = 0;
    }
    srv_buf_puts(out, "}");
    sq_put(conn, q);
    if (rc != SQLITE_DONE)
        return sdb__map_rc(rc);
    return out->failed ? PICL_ERROR_NO_MEMORY : PICL_OK;
}

static picl_status sq_info_collections(sdb_conn *conn, int64_t uid, srv_buf *out)
{
    sqlite3_stmt *q;
    picl_status st = sq_stmt(conn, "SELECT name, modified FROM collections WHERE uid=?1 ORDER BY name", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    return render_map(conn, q, out, 0);
}

/* A {collection: aggregate} map over the user's live BSOs (mode as render_map). */
static picl_status info_per_coll(sdb_conn *c, int64_t uid, int64_t now, const char *sql, int mode,
                                 srv_buf *out)
{
    sqlite3_stmt *q;
    picl_status st = sq_stmt(c, sql, &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_int64(q, 2, now);
    return render_map(c, q, out, mode);
}

static picl_status sq_info_counts(sdb_conn *conn, int64_t uid, int64_t now, srv_buf *out)
{
    return info_per_coll(
        conn, uid, now,
        "SELECT coll, count(*) FROM bsos WHERE uid=?1 AND expiry>?2 GROUP BY coll ORDER BY coll", 1, out);
}

static picl_status sq_info_usage(sdb_conn *conn, int64_t uid, int64_t now, srv_buf *out)
{
    return info_per_coll(conn, uid, now,
                         "SELECT coll, SUM(payload_size) FROM bsos WHERE uid=?1 AND expiry>?2"
                         " GROUP BY coll ORDER BY coll",
                         2, out);
}

/* The statement of a listing: columns id, modified, payload, sortindex,
 * sort key; parameters ?1 uid, ?2 collection, ?3 now, ?4 newer, ?5 older,
 * ?6 ?7 the offset's key and id, ?8 limit + 1, ?9 as_of, ?10... ids. */
static picl_status list_prepare(sdb_conn *c, const sdb_query *q, int has_offset, sqlite3_stmt **s)
{
    static const char *const keyexpr[] = {"0", "modified", "modified",
                                          "IFNULL(sortindex," NULL_SORTINDEX ")"};
    static const char *const order[] = {" ORDER BY id", " ORDER BY modified DESC, id",
                                        " ORDER BY modified, id",
                                        " ORDER BY IFNULL(sortindex," NULL_SORTINDEX ") DESC, id"};
    srv_buf sql;
    srv_buf_init(&sql, 64 * 1024);
    srv_buf_printf(&sql,
                   "SELECT id, modified, %s, sortindex, %s FROM %s"
                   " WHERE uid=?1 AND coll=?2 AND expiry>?3",
                   q->full ? "payload" : "''", keyexpr[q->sort], sdb__history_source(q->has_as_of));
    if (q->has_newer)
        srv_buf_puts(&sql, " AND modified>?4");
    if (q->has_older)
        srv_buf_puts(&sql, " AND modified<?5");
    if (has_offset) {
        switch (q->sort) {
        case SDB_SORT_NONE:
            srv_buf_puts(&sql, " AND id>?7");
            break;
        case SDB_SORT_OLDEST:
            srv_buf_puts(&sql, " AND (modified>?6 OR (modified=?6 AND id>?7))");
            break;
        case SDB_SORT_NEWEST:
            srv_buf_puts(&sql, " AND (modified<?6 OR (modified=?6 AND id>?7))");
            break;
        case SDB_SORT_INDEX:
            srv_buf_puts(&sql, " AND (IFNULL(sortindex," NULL_SORTINDEX ")<?6 OR"
                               " (IFNULL(sortindex," NULL_SORTINDEX ")=?6 AND id>?7))");
            break;
        }
    }
    if (q->nids) {
        srv_buf_puts(&sql, " AND id IN (");
        for (size_t i = 0; i < q->nids; i++)
            srv_buf_printf(&sql, "%s?%zu", i ? "," : "", 10 + i);
        srv_buf_puts(&sql, ")");
    }
    srv_buf_puts(&sql, order[q->sort]);
    if (q->limit > 0)
        srv_buf_puts(&sql, " LIMIT ?8");
    /* a listing by ids has a shape per count: not kept */
    picl_status st = sql.failed ? PICL_ERROR_NO_MEMORY
                     : q->nids  ? sdb__prep(sq_of(c), sql.data, s)
                                : sq_stmt(c, sql.data, s);
    srv_buf_free(&sql);
    return st;
}

static void list_bind(sqlite3_stmt *s, const sdb_query *q, int64_t okey, const char *oid)
{
    sqlite3_bind_int64(s, 1, q->uid);
    sqlite3_bind_text(s, 2, q->coll, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, q->now);
    if (q->has_newer)
        sqlite3_bind_int64(s, 4, q->newer);
    if (q->has_older)
        sqlite3_bind_int64(s, 5, q->older);
    if (oid) {
        sqlite3_bind_int64(s, 6, okey);
        sqlite3_bind_text(s, 7, oid, -1, SQLITE_STATIC);
    }
    if (q->limit > 0)
        sqlite3_bind_int64(s, 8, q->limit + 1);
    if (q->has_as_of)
        sqlite3_bind_int64(s, 9, q->as_of);
    for (size_t i = 0; i < q->nids; i++)
        sqlite3_bind_text(s, (int)(10 + i), q->ids[i], -1, SQLITE_STATIC);
}

static picl_status sq_list(sdb_conn *conn, const sdb_query *q, srv_buf *out, int64_t *count, char **next)
{
    *count = 0;
    *next = NULL;
    int64_t okey = 0;
    char *oid = NULL;
    sqlite3_stmt *s = NULL;
    picl_status st = PICL_OK;
    if (q->offset && (st = sdb__offset_parse(q->offset, q->sort, &okey, &oid)) != PICL_OK)
        return st;
    if ((st = list_prepare(conn, q, oid != NULL, &s)) != PICL_OK)
        goto done;
    list_bind(s, q, okey, oid);
    sdb_pager pg;
    sdb__pager_init(&pg, q, out);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        sdb_row row;
        row_of(s, &row);
        if (!sdb__pager_row(&pg, &row))
            break;
    }
    st = sdb__pager_end(&pg, rc == SQLITE_ROW || rc == SQLITE_DONE ? PICL_OK : sdb__map_rc(rc), count, next);
done:
    sq_put(conn, s);
    free(oid);
    return st;
}

/* ---- the table ------------------------------------------------------- */

const sdb_ops sdb_sqlite_ops = {
    .name = "sqlite",
    .shares_nonces = 0,
    .open = sq_open,
    .close = sq_close,
    .where = sq_where,
    .check_writable = sq_check_writable,
    .acquire = sq_acquire,
    .release = sq_release,
    .history_configure = sq_history_configure,
    .nonce_take = sq_nonce_take,
    .ping = sq_ping,
    .begin_write = sq_begin_write,
    .begin_read = sq_begin_read,
    .begin_maint = sq_begin_maint,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .in_tx = sq_in_tx,
    .set_write_time = sq_set_write_time,
    .coll_modified = sq_coll_modified,
    .item_modified = sq_item_modified,
    .upserter_init = sq_upserter_init,
    .upserter_run = sq_upserter_run,
    .upserter_flush = sq_upserter_flush,
    .upserter_done = sq_upserter_done,
    .touch = sq_touch,
    .delete_coll = sq_delete_coll,
    .delete_item = sq_delete_item,
    .delete_all = sq_delete_all,
    .usage = sq_usage,
    .info_collections = sq_info_collections,
    .info_counts = sq_info_counts,
    .info_usage = sq_info_usage,
    .get_item = sq_get_item,
    .list = sq_list,
    .batch_create = sdb__sq_batch_create,
    .batch_check = sdb__sq_batch_check,
    .batch_add = sdb__sq_batch_add,
    .batch_count = sdb__sq_batch_count,
    .batch_apply = sdb__sq_batch_apply,
    .prune = sq_prune,
    .history_evict = sdb__sq_history_evict,
};
