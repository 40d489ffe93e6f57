/* storage_db.c -- SQLite persistence of the storage server (see storage_db.h). */
#include "storage/storage_db.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "crypto/codec.h"
#include "crypto/hash.h"

#define POOL_MAX_IDLE 16
#define BUSY_TIMEOUT_MS 10000
/* Sort key of a BSO without sortindex: below every valid (9-digit) value. */
#define NULL_SORTINDEX "-1000000000"

struct sdb {
    char *path;
    int busy_ms;
    pthread_mutex_t mu;
    sqlite3 *idle[POOL_MAX_IDLE];
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

int64_t sdb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 100 + ts.tv_nsec / 10000000;
}

void sdb_fmt_ts(char out[32], int64_t centis)
{
    if (centis < 0)
        centis = 0;
    snprintf(out, 32, "%" PRId64 ".%02d", centis / 100, (int)(centis % 100));
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
    int rc = sqlite3_open_v2(path, &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                           SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_close(c);
        return rc == SQLITE_CANTOPEN ? PICL_ERROR_IO : sdb__map_rc(rc);
    }
    sqlite3_busy_timeout(c, busy_ms);
    picl_status st = exec(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;");
    if (st != PICL_OK) {
        sqlite3_close(c);
        return st;
    }
    *out = c;
    return PICL_OK;
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
    if (st == PICL_OK && version > SDB_SCHEMA_VERSION)
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
        st = sdb__history_migrate(c);
        if (st == PICL_OK)
            st = exec(c, "DELETE FROM schema_version; INSERT INTO schema_version VALUES(3)");
    }
    /* Later versions migrate here: if (version < 4) ... */
    if (st == PICL_OK)
        st = exec(c, "COMMIT");
    if (st != PICL_OK)
        sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

picl_status sdb_open(sdb **out, const char *dir, int busy_timeout_ms)
{
    *out = NULL;
    struct stat sb;
    if (!dir || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return PICL_ERROR_IO;
    sdb *db = calloc(1, sizeof *db);
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
    sqlite3 *c;
    picl_status st = conn_open(db->path, db->busy_ms, &c);
    if (st == PICL_OK) {
        st = migrate(c);
        if (st == PICL_OK)
            sdb_release(db, c);
        else
            sqlite3_close(c);
    }
    if (st != PICL_OK) {
        sdb_close(db);
        return st;
    }
    *out = db;
    return PICL_OK;
}

void sdb_close(sdb *db)
{
    if (!db)
        return;
    for (size_t i = 0; i < db->nidle; i++)
        sqlite3_close(db->idle[i]);
    pthread_mutex_destroy(&db->mu);
    free(db->path);
    free(db);
}

picl_status sdb_acquire(sdb *db, sqlite3 **conn)
{
    *conn = NULL;
    pthread_mutex_lock(&db->mu);
    if (db->nidle)
        *conn = db->idle[--db->nidle];
    pthread_mutex_unlock(&db->mu);
    if (*conn)
        return PICL_OK;
    return conn_open(db->path, db->busy_ms, conn);
}

void sdb_release(sdb *db, sqlite3 *conn)
{
    if (!conn)
        return;
    if (!sqlite3_get_autocommit(conn))
        sqlite3_exec(conn, "ROLLBACK", NULL, NULL, NULL);
    pthread_mutex_lock(&db->mu);
    if (db->nidle < POOL_MAX_IDLE) {
        db->idle[db->nidle++] = conn;
        conn = NULL;
    }
    pthread_mutex_unlock(&db->mu);
    if (conn)
        sqlite3_close(conn);
}

/* ---- transactions ---------------------------------------------------- */

static picl_status user_modified(sqlite3 *c, int64_t uid, int64_t *m)
{
    sqlite3_stmt *q;
    *m = 0;
    picl_status st = sdb__prep(c, "SELECT modified FROM users WHERE uid=?1", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *m = sqlite3_column_int64(q, 0);
    else if (rc != SQLITE_DONE)
        st = sdb__map_rc(rc);
    sqlite3_finalize(q);
    return st;
}

static picl_status begin(sqlite3 *c, const char *sql, int64_t uid, int64_t *m)
{
    picl_status st = exec(c, sql);
    if (st != PICL_OK)
        return st;
    st = user_modified(c, uid, m);
    if (st != PICL_OK)
        sdb_rollback(c);
    return st;
}

picl_status sdb_begin_write(sqlite3 *c, int64_t uid, int64_t *m)
{
    return begin(c, "BEGIN IMMEDIATE", uid, m);
}

picl_status sdb_begin_read(sqlite3 *c, int64_t uid, int64_t *m)
{
    return begin(c, "BEGIN", uid, m);
}

picl_status sdb_commit(sqlite3 *c)
{
    picl_status st = exec(c, "COMMIT");
    if (st != PICL_OK)
        sdb_rollback(c);
    return st;
}

void sdb_rollback(sqlite3 *c)
{
    if (!sqlite3_get_autocommit(c))
        sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- single values --------------------------------------------------- */

/* Runs q (bound already); a row's column 0 into *v, else NOT_FOUND. */
static picl_status one_int(sqlite3_stmt *q, int64_t *v)
{
    int rc = sqlite3_step(q);
    picl_status st = PICL_OK;
    if (rc == SQLITE_ROW)
        *v = sqlite3_column_int64(q, 0);
    else
        st = rc == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : sdb__map_rc(rc);
    sqlite3_finalize(q);
    return st;
}

picl_status sdb_coll_modified(sqlite3 *c, int64_t uid, const char *coll, int64_t *modified)
{
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, "SELECT modified FROM collections WHERE uid=?1 AND name=?2", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    return one_int(q, modified);
}

/* Prepares sql and binds ?1 uid, ?2 collection, ?3 BSO id, ?4 now: the
 * shape of every query on one live BSO. */
static picl_status prep_live_item(sqlite3 *c, const char *sql, int64_t uid, const char *coll, const char *id,
                                  int64_t now, sqlite3_stmt **q)
{
    picl_status st = sdb__prep(c, sql, q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(*q, 1, uid);
    sqlite3_bind_text(*q, 2, coll, -1, SQLITE_STATIC);
    sqlite3_bind_text(*q, 3, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(*q, 4, now);
    return PICL_OK;
}

picl_status sdb_item_modified(sqlite3 *c, int64_t uid, const char *coll, const char *id,
                              int64_t now, int64_t *modified)
{
    sqlite3_stmt *q;
    picl_status st = prep_live_item(c, "SELECT modified FROM bsos WHERE uid=?1 AND coll=?2 AND id=?3"
                                       " AND expiry>?4", uid, coll, id, now, &q);
    if (st != PICL_OK)
        return st;
    return one_int(q, modified);
}

picl_status sdb_usage(sqlite3 *c, int64_t uid, int64_t now, int64_t *bytes)
{
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, "SELECT IFNULL((SELECT SUM(payload_size) FROM bsos WHERE uid=?1"
                             " AND expiry>?2),0) + IFNULL((SELECT SUM(length(CAST(i.payload AS BLOB)))"
                             " FROM batches b JOIN batch_items i ON i.batch=b.id"
                             " WHERE b.uid=?1 AND b.expires>?2),0) + IFNULL((SELECT SUM(payload_size)"
                             " FROM bso_history WHERE uid=?1 AND keep_until>?2),0)", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_int64(q, 2, now);
    return one_int(q, bytes);
}

/* ---- writes ---------------------------------------------------------- */

picl_status sdb_upserter_init(sqlite3 *c, sdb_upserter *u)
{
    memset(u, 0, sizeof *u);
    picl_status st = sdb__prep(
        c, "DELETE FROM bsos WHERE uid=?1 AND coll=?2 AND id=?3 AND expiry<=?4", &u->del);
    if (st == PICL_OK)
        st = sdb__prep(c,
                       "INSERT INTO bsos(uid,coll,id,sortindex,payload,payload_size,modified,expiry)"
                       " VALUES(?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT(uid,coll,id) DO UPDATE SET"
                       " sortindex=CASE WHEN ?9 THEN excluded.sortindex ELSE sortindex END,"
                       " payload=CASE WHEN ?10 THEN excluded.payload ELSE payload END,"
                       " payload_size=CASE WHEN ?10 THEN excluded.payload_size ELSE payload_size END,"
                       " expiry=CASE WHEN ?11 THEN excluded.expiry ELSE expiry END,"
                       " modified=excluded.modified",
                       &u->ins);
    if (st != PICL_OK)
        sdb_upserter_done(u);
    return st;
}

void sdb_upserter_done(sdb_upserter *u)
{
    sqlite3_finalize(u->del);
    sqlite3_finalize(u->ins);
    u->del = u->ins = NULL;
}

/* Steps a reusable statement that returns no row, then resets it. */
static picl_status step_reset(sqlite3_stmt *q)
{
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc == SQLITE_DONE ? PICL_OK : sdb__map_rc(rc);
}

picl_status sdb_upserter_run(sdb_upserter *u, int64_t uid, const char *coll, const sdb_bso *b,
                             int64_t t, int64_t now)
{
    sqlite3_stmt *q = u->del;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, b->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, now);
    picl_status st = step_reset(q);
    if (st != PICL_OK)
        return st;
    q = u->ins;
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

picl_status sdb_upsert(sqlite3 *c, int64_t uid, const char *coll, const sdb_bso *b, int64_t t,
                       int64_t now)
{
    sdb_upserter u;
    picl_status st = sdb_upserter_init(c, &u);
    if (st == PICL_OK)
        st = sdb_upserter_run(&u, uid, coll, b, t, now);
    sdb_upserter_done(&u);
    return st;
}

picl_status sdb_touch(sqlite3 *c, int64_t uid, const char *coll, int64_t t)
{
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, "INSERT INTO users(uid,modified) VALUES(?1,?2)"
                             " ON CONFLICT(uid) DO UPDATE SET modified=excluded.modified", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_int64(q, 2, t);
    if ((st = sdb__run(q)) != PICL_OK || !coll)
        return st;
    st = sdb__prep(c, "INSERT INTO collections(uid,name,modified) VALUES(?1,?2,?3)"
                 " ON CONFLICT(uid,name) DO UPDATE SET modified=excluded.modified", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, t);
    return sdb__run(q);
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

picl_status sdb_delete_coll(sqlite3 *c, int64_t uid, const char *coll)
{
    static const char *const sql[] = {
        "DELETE FROM bsos WHERE uid=?1 AND coll=?2",
        "DELETE FROM collections WHERE uid=?1 AND name=?2",
        "DELETE FROM batch_items WHERE batch IN (SELECT id FROM batches WHERE uid=?1 AND coll=?2)",
        "DELETE FROM batches WHERE uid=?1 AND coll=?2",
    };
    picl_status st = PICL_OK;
    for (size_t i = 0; i < sizeof sql / sizeof sql[0] && st == PICL_OK; i++)
        st = run_uc(c, sql[i], uid, coll);
    return st;
}

picl_status sdb_delete_all(sqlite3 *c, int64_t uid)
{
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

picl_status sdb_delete_item(sqlite3 *c, int64_t uid, const char *coll, const char *id,
                            int64_t now, int *deleted)
{
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, "DELETE FROM bsos WHERE uid=?1 AND coll=?2 AND id=?3", &q);
    if (st != PICL_OK)
        return st;
    int64_t m;
    int live = sdb_item_modified(c, uid, coll, id, now, &m) == PICL_OK;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_text(q, 2, coll, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, id, -1, SQLITE_STATIC);
    st = sdb__run(q);
    if (deleted)
        *deleted = live;
    return st;
}

picl_status sdb_prune(sqlite3 *c, int64_t now, int64_t *removed)
{
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
    st = sdb__prep(c, "DELETE FROM batch_items WHERE batch IN (SELECT id FROM batches WHERE expires<=?1)",
              &q);
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

/* Writes {"id":..,"modified":..,"payload":..[,"sortindex":..]} from a row
 * whose columns are id, modified, payload, sortindex. */
static void render_bso(picl_buf *out, sqlite3_stmt *q)
{
    char ts[32];
    picl_buf_puts(out, "{\"id\":");
    picl_buf_json_string(out, (const char *)sqlite3_column_text(q, 0),
                         (size_t)sqlite3_column_bytes(q, 0));
    sdb_fmt_ts(ts, sqlite3_column_int64(q, 1));
    picl_buf_printf(out, ",\"modified\":%s,\"payload\":", ts);
    picl_buf_json_string(out, (const char *)sqlite3_column_text(q, 2),
                         (size_t)sqlite3_column_bytes(q, 2));
    if (sqlite3_column_type(q, 3) != SQLITE_NULL)
        picl_buf_printf(out, ",\"sortindex\":%" PRId64, (int64_t)sqlite3_column_int64(q, 3));
    picl_buf_puts(out, "}");
}

picl_status sdb_get_item(sqlite3 *c, int64_t uid, const char *coll, const char *id, int64_t now,
                         picl_buf *out, int64_t *modified)
{
    sqlite3_stmt *q;
    picl_status st = prep_live_item(c, "SELECT id, modified, payload, sortindex FROM bsos"
                                       " WHERE uid=?1 AND coll=?2 AND id=?3 AND expiry>?4",
                                    uid, coll, id, now, &q);
    if (st != PICL_OK)
        return st;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *modified = sqlite3_column_int64(q, 1);
        render_bso(out, q);
        st = out->failed ? PICL_ERROR_NO_MEMORY : PICL_OK;
    } else {
        st = rc == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : sdb__map_rc(rc);
    }
    sqlite3_finalize(q);
    return st;
}

/* Renders a {name: value} object from rows (text name, value). kind 0:
 * timestamp, 1: integer, 2: kilobytes from bytes. */
static picl_status render_map(sqlite3_stmt *q, picl_buf *out, int kind)
{
    int rc, first = 1;
    char ts[32];
    picl_buf_puts(out, "{");
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (!first)
            picl_buf_puts(out, ",");
        first = 0;
        picl_buf_json_string(out, (const char *)sqlite3_column_text(q, 0),
                             (size_t)sqlite3_column_bytes(q, 0));
        int64_t v = sqlite3_column_int64(q, 1);
        if (kind == 0) {
            sdb_fmt_ts(ts, v);
            picl_buf_printf(out, ":%s", ts);
        } else if (kind == 1) {
            picl_buf_printf(out, ":%" PRId64, (int64_t)v);
        } else {
            picl_buf_printf(out, ":%.2f", (double)v / 1024.0);
        }
    }
    picl_buf_puts(out, "}");
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return sdb__map_rc(rc);
    return out->failed ? PICL_ERROR_NO_MEMORY : PICL_OK;
}

picl_status sdb_info_collections(sqlite3 *c, int64_t uid, picl_buf *out)
{
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, "SELECT name, modified FROM collections WHERE uid=?1 ORDER BY name",
                          &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    return render_map(q, out, 0);
}

/* A {collection: aggregate} map over the user's live BSOs (mode as render_map). */
static picl_status info_per_coll(sqlite3 *c, int64_t uid, int64_t now, const char *sql, int mode, picl_buf *out)
{
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, sql, &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_int64(q, 2, now);
    return render_map(q, out, mode);
}

picl_status sdb_info_counts(sqlite3 *c, int64_t uid, int64_t now, picl_buf *out)
{
    return info_per_coll(c, uid, now,
                         "SELECT coll, count(*) FROM bsos WHERE uid=?1 AND expiry>?2 GROUP BY coll ORDER BY coll", 1,
                         out);
}

picl_status sdb_info_usage(sqlite3 *c, int64_t uid, int64_t now, picl_buf *out)
{
    return info_per_coll(c, uid, now,
                         "SELECT coll, SUM(payload_size) FROM bsos WHERE uid=?1 AND expiry>?2"
                         " GROUP BY coll ORDER BY coll",
                         2, out);
}

/* Offset tokens: <mode char><sort key>_<hex of id>, mode one of d n o i. */
static const char sort_mode[] = {'d', 'n', 'o', 'i'};

static picl_status parse_offset(const char *tok, sdb_sort sort, int64_t *key, char **id)
{
    *id = NULL;
    if (!tok[0] || tok[0] != sort_mode[sort])
        return PICL_ERROR_INVALID_ARGUMENT;
    const char *us = strchr(tok, '_');
    if (!us || us == tok + 1 || us - tok > 22)
        return PICL_ERROR_INVALID_ARGUMENT;
    char num[24];
    memcpy(num, tok + 1, (size_t)(us - tok - 1));
    num[us - tok - 1] = 0;
    char *end;
    long long k = strtoll(num, &end, 10);
    if (*end)
        return PICL_ERROR_INVALID_ARGUMENT;
    uint8_t *raw;
    size_t rawlen;
    size_t hl = strlen(us + 1);
    if (!hl || hl > 128 || picl__hex_decode_alloc(&raw, &rawlen, us + 1, hl) != PICL_OK)
        return PICL_ERROR_INVALID_ARGUMENT;
    char *s = malloc(rawlen + 1);
    if (!s) {
        free(raw);
        return PICL_ERROR_NO_MEMORY;
    }
    memcpy(s, raw, rawlen);
    s[rawlen] = 0;
    free(raw);
    if (strlen(s) != rawlen) {
        free(s);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    *key = k;
    *id = s;
    return PICL_OK;
}

static char *make_offset(sdb_sort sort, int64_t key, const char *id)
{
    size_t il = strlen(id);
    char *hex = picl__hex_encode_alloc((const uint8_t *)id, il);
    if (!hex)
        return NULL;
    size_t n = 2 * il + 32;
    char *tok = malloc(n);
    if (tok)
        snprintf(tok, n, "%c%" PRId64 "_%s", sort_mode[sort], key, hex);
    free(hex);
    return tok;
}

picl_status sdb_list(sqlite3 *c, const sdb_query *q, picl_buf *out, int64_t *count, char **next)
{
    *count = 0;
    *next = NULL;
    int64_t okey = 0;
    char *oid = NULL;
    picl_status st = PICL_OK;
    if (q->offset && (st = parse_offset(q->offset, q->sort, &okey, &oid)) != PICL_OK)
        return st;

    static const char *const keyexpr[] = {"0", "modified", "modified",
                                          "IFNULL(sortindex," NULL_SORTINDEX ")"};
    picl_buf sql;
    picl_buf_init(&sql, 64 * 1024);
    picl_buf_printf(&sql, "SELECT id, modified, %s, sortindex, %s FROM %s"
                          " WHERE uid=?1 AND coll=?2 AND expiry>?3",
                    q->full ? "payload" : "''", keyexpr[q->sort], sdb__history_source(q->has_as_of));
    if (q->has_newer)
        picl_buf_puts(&sql, " AND modified>?4");
    if (q->has_older)
        picl_buf_puts(&sql, " AND modified<?5");
    if (oid) {
        switch (q->sort) {
        case SDB_SORT_NONE: picl_buf_puts(&sql, " AND id>?7"); break;
        case SDB_SORT_OLDEST: picl_buf_puts(&sql, " AND (modified>?6 OR (modified=?6 AND id>?7))"); break;
        case SDB_SORT_NEWEST: picl_buf_puts(&sql, " AND (modified<?6 OR (modified=?6 AND id>?7))"); break;
        case SDB_SORT_INDEX:
            picl_buf_puts(&sql, " AND (IFNULL(sortindex," NULL_SORTINDEX ")<?6 OR"
                                " (IFNULL(sortindex," NULL_SORTINDEX ")=?6 AND id>?7))");
            break;
        }
    }
    if (q->nids) {
        picl_buf_puts(&sql, " AND id IN (");
        for (size_t i = 0; i < q->nids; i++)
            picl_buf_printf(&sql, "%s?%zu", i ? "," : "", 10 + i);
        picl_buf_puts(&sql, ")");
    }
    static const char *const order[] = {
        " ORDER BY id", " ORDER BY modified DESC, id", " ORDER BY modified, id",
        " ORDER BY IFNULL(sortindex," NULL_SORTINDEX ") DESC, id"};
    picl_buf_puts(&sql, order[q->sort]);
    if (q->limit > 0)
        picl_buf_puts(&sql, " LIMIT ?8");
    sqlite3_stmt *s = NULL;
    if (sql.failed)
        st = PICL_ERROR_NO_MEMORY;
    else
        st = sdb__prep(c, sql.data, &s);
    picl_buf_free(&sql);
    if (st != PICL_OK) {
        free(oid);
        return st;
    }
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

    int rc;
    int64_t n = 0, lastkey = 0;
    char *lastid = NULL;
    if (!q->newlines)
        picl_buf_puts(out, "[");
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (q->limit > 0 && n == q->limit) {
            *next = lastid ? make_offset(q->sort, lastkey, lastid) : NULL;
            if (!*next)
                st = PICL_ERROR_NO_MEMORY;
            break;
        }
        size_t before = out->len;
        if (n && !q->newlines)
            picl_buf_puts(out, ",");
        if (q->full)
            render_bso(out, s);
        else
            picl_buf_json_string(out, (const char *)sqlite3_column_text(s, 0),
                                 (size_t)sqlite3_column_bytes(s, 0));
        if (q->newlines)
            picl_buf_puts(out, "\n");
        if (n && q->max_bytes > 0 && !out->failed && (int64_t)out->len + 1 > q->max_bytes) {
            /* this item would take the page past max_bytes: it starts the next one */
            out->len = before;
            out->data[before] = 0;
            *next = make_offset(q->sort, lastkey, lastid);
            if (!*next)
                st = PICL_ERROR_NO_MEMORY;
            break;
        }
        n++;
        if (q->limit > 0 || q->max_bytes > 0) {
            free(lastid);
            lastid = strdup((const char *)sqlite3_column_text(s, 0));
            lastkey = sqlite3_column_int64(s, 4);
            if (!lastid) {
                st = PICL_ERROR_NO_MEMORY;
                break;
            }
        }
    }
    if (st == PICL_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = sdb__map_rc(rc);
    if (!q->newlines)
        picl_buf_puts(out, "]");
    if (st == PICL_OK && out->failed)
        st = PICL_ERROR_TOO_LARGE;
    sqlite3_finalize(s);
    free(lastid);
    free(oid);
    if (st != PICL_OK) {
        free(*next);
        *next = NULL;
    }
    *count = n;
    return st;
}

