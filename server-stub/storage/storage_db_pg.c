/* SPDX-License-Identifier: MPL-2.0 */
/* storage_db_pg.c -- the storage server's PostgreSQL backend (libpq): a pool
 * of connections with prepared statements, the user's row locked FOR UPDATE
 * where SQLite serialises every writer (see storage_db.h for the contract,
 * storage_db_impl.h for the table). */
#include "storage/storage_db_impl.h"

#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POOL_DEFAULT 8
#define POOL_MAX 256
#define BUSY_TIMEOUT_MS 10000
/* pg_advisory_xact_lock key of the migration (several storage processes
 * starting on one empty database create the schema once; the keyserver's
 * is 7411001) */
#define MIGRATE_LOCK "7412001"
#define INT8OID 20
#define TEXTOID 25

/*
 * The PostgreSQL backend starts at schema version 3 (everything at once).
 * Names that the keyserver also uses on a shared database are prefixed
 * (storage_meta, storage_nonces).  Identifiers and collection names sort
 * bytewise (COLLATE "C") as in SQLite; payloads are bytea, so that any
 * JSON string (even one holding U+0000) is kept byte for byte.
 */
static const char *const schema_v3 =
    "CREATE TABLE users (uid BIGINT PRIMARY KEY, modified BIGINT NOT NULL);"
    "CREATE TABLE collections (uid BIGINT NOT NULL, name TEXT COLLATE \"C\" NOT NULL,"
    " modified BIGINT NOT NULL, PRIMARY KEY (uid, name));"
    "CREATE TABLE bsos (uid BIGINT NOT NULL, coll TEXT COLLATE \"C\" NOT NULL,"
    " id TEXT COLLATE \"C\" NOT NULL, sortindex BIGINT, payload BYTEA NOT NULL DEFAULT '',"
    " payload_size BIGINT NOT NULL DEFAULT 0, modified BIGINT NOT NULL, expiry BIGINT NOT NULL,"
    " PRIMARY KEY (uid, coll, id));"
    "CREATE INDEX bsos_modified ON bsos (uid, coll, modified);"
    "CREATE INDEX bsos_expiry ON bsos (expiry);"
    "CREATE TABLE batches (id TEXT PRIMARY KEY, uid BIGINT NOT NULL,"
    " coll TEXT COLLATE \"C\" NOT NULL, expires BIGINT NOT NULL);"
    "CREATE INDEX batches_uid ON batches (uid, expires);"
    "CREATE TABLE batch_items (batch TEXT NOT NULL, id TEXT COLLATE \"C\" NOT NULL,"
    " sortindex BIGINT, has_sortindex BOOLEAN NOT NULL, payload BYTEA,"
    " has_payload BOOLEAN NOT NULL, ttl BIGINT, has_ttl BOOLEAN NOT NULL,"
    " PRIMARY KEY (batch, id));"
    /* the undo extension (storage_db_sqlite_history.c says the rules) */
    "CREATE TABLE bso_history (hid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " uid BIGINT NOT NULL, coll TEXT COLLATE \"C\" NOT NULL, id TEXT COLLATE \"C\" NOT NULL,"
    " sortindex BIGINT, payload BYTEA NOT NULL, payload_size BIGINT NOT NULL,"
    " modified BIGINT NOT NULL, expiry BIGINT NOT NULL, replaced BIGINT NOT NULL,"
    " keep_until BIGINT NOT NULL);"
    "CREATE INDEX bso_history_key ON bso_history (uid, coll, modified);"
    "CREATE INDEX bso_history_keep ON bso_history (keep_until);"
    "CREATE TABLE history_config (keep BIGINT NOT NULL);"
    "INSERT INTO history_config VALUES (259200000);"
    "CREATE FUNCTION picl_bso_history() RETURNS trigger LANGUAGE plpgsql AS $f$"
    " DECLARE k BIGINT; t BIGINT;"
    " BEGIN"
    "  SELECT keep INTO k FROM history_config LIMIT 1;"
    "  IF k IS NULL OR k <= 0 THEN RETURN NULL; END IF;"
    "  IF TG_OP = 'UPDATE' THEN"
    "   IF OLD.expiry <= NEW.modified THEN RETURN NULL; END IF;"
    "   t := NEW.modified;"
    "  ELSE"
    /* the deleting write's own timestamp (sdb_set_write_time), else the clock */
    "   t := coalesce(nullif(current_setting('picl.write_time', true), '')::bigint,"
    "    floor(extract(epoch FROM clock_timestamp()) * 100)::bigint);"
    "   IF OLD.expiry <= t THEN RETURN NULL; END IF;"
    "   t := greatest(t, OLD.modified + 1);"
    "  END IF;"
    "  INSERT INTO bso_history (uid, coll, id, sortindex, payload, payload_size, modified,"
    "   expiry, replaced, keep_until) VALUES (OLD.uid, OLD.coll, OLD.id, OLD.sortindex,"
    "   OLD.payload, OLD.payload_size, OLD.modified, OLD.expiry, t, t + k);"
    "  RETURN NULL;"
    " END $f$;"
    "CREATE TRIGGER bsos_history AFTER UPDATE OR DELETE ON bsos"
    " FOR EACH ROW EXECUTE FUNCTION picl_bso_history();"
    /* Hawk nonces seen by any storage process of this database */
    "CREATE UNLOGGED TABLE storage_nonces (key TEXT PRIMARY KEY, expires BIGINT NOT NULL);"
    "CREATE INDEX storage_nonces_expires ON storage_nonces (expires);";

/* The prepared statements (prepared on each connection at first use). */
enum {
    S_PING,
    S_USER_LOCK,
    S_USER_ADD,
    S_COLL_MOD,
    S_ITEM_MOD,
    S_UPSERT,
    S_TOUCH_USER,
    S_TOUCH_COLL,
    S_DC_BSOS,
    S_DC_COLL,
    S_DC_ITEMS,
    S_DC_BATCHES,
    S_DA_BSOS,
    S_DA_COLLS,
    S_DA_ITEMS,
    S_DA_BATCHES,
    S_DA_HISTORY,
    S_DEL_ITEM,
    S_USAGE,
    S_INFO_COLLS,
    S_INFO_COUNTS,
    S_INFO_USAGE,
    S_GET_ITEM,
    S_B_CREATE,
    S_B_CHECK,
    S_B_ADD,
    S_B_COUNT,
    S_B_ITEMS,
    S_B_DEL_ITEMS,
    S_B_DEL,
    S_P_BSOS,
    S_P_HISTORY,
    S_P_ITEMS,
    S_P_BATCHES,
    S_P_NONCES,
    S_H_KEEP,
    S_H_EVICT,
    S_NONCE_ADD,
    S_WRITABLE,
    S_WRITE_TIME,
    S_COUNT
};

static const char *const sql[S_COUNT] = {
    [S_PING] = "SELECT 1",
    [S_USER_LOCK] = "SELECT modified FROM users WHERE uid = $1 FOR UPDATE",
    [S_USER_ADD] = "INSERT INTO users (uid, modified) VALUES ($1, 0) ON CONFLICT DO NOTHING",
    [S_COLL_MOD] = "SELECT modified FROM collections WHERE uid = $1 AND name = $2",
    [S_ITEM_MOD] = "SELECT modified FROM bsos WHERE uid = $1 AND coll = $2 AND id = $3"
                   " AND expiry > $4",
    /* an expired row is replaced as if absent (SQLite deletes it first) */
    [S_UPSERT] = "INSERT INTO bsos AS b (uid, coll, id, sortindex, payload, payload_size,"
                 " modified, expiry) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)"
                 " ON CONFLICT (uid, coll, id) DO UPDATE SET"
                 " sortindex = CASE WHEN $9::boolean OR b.expiry <= $12 THEN EXCLUDED.sortindex"
                 " ELSE b.sortindex END,"
                 " payload = CASE WHEN $10::boolean OR b.expiry <= $12 THEN EXCLUDED.payload"
                 " ELSE b.payload END,"
                 " payload_size = CASE WHEN $10::boolean OR b.expiry <= $12"
                 " THEN EXCLUDED.payload_size ELSE b.payload_size END,"
                 " expiry = CASE WHEN $11::boolean OR b.expiry <= $12 THEN EXCLUDED.expiry"
                 " ELSE b.expiry END,"
                 " modified = EXCLUDED.modified",
    [S_TOUCH_USER] = "INSERT INTO users (uid, modified) VALUES ($1, $2) ON CONFLICT (uid)"
                     " DO UPDATE SET modified = EXCLUDED.modified",
    [S_TOUCH_COLL] = "INSERT INTO collections (uid, name, modified) VALUES ($1, $2, $3)"
                     " ON CONFLICT (uid, name) DO UPDATE SET modified = EXCLUDED.modified",
    [S_DC_BSOS] = "DELETE FROM bsos WHERE uid = $1 AND coll = $2",
    [S_DC_COLL] = "DELETE FROM collections WHERE uid = $1 AND name = $2",
    [S_DC_ITEMS] = "DELETE FROM batch_items WHERE batch IN (SELECT id FROM batches"
                   " WHERE uid = $1 AND coll = $2)",
    [S_DC_BATCHES] = "DELETE FROM batches WHERE uid = $1 AND coll = $2",
    [S_DA_BSOS] = "DELETE FROM bsos WHERE uid = $1",
    [S_DA_COLLS] = "DELETE FROM collections WHERE uid = $1",
    [S_DA_ITEMS] = "DELETE FROM batch_items WHERE batch IN (SELECT id FROM batches"
                   " WHERE uid = $1)",
    [S_DA_BATCHES] = "DELETE FROM batches WHERE uid = $1",
    [S_DA_HISTORY] = "DELETE FROM bso_history WHERE uid = $1",
    [S_DEL_ITEM] = "DELETE FROM bsos WHERE uid = $1 AND coll = $2 AND id = $3",
    [S_USAGE] = "SELECT coalesce((SELECT sum(payload_size) FROM bsos WHERE uid = $1"
                " AND expiry > $2), 0)::bigint + coalesce((SELECT sum(octet_length(i.payload))"
                " FROM batches b JOIN batch_items i ON i.batch = b.id"
                " WHERE b.uid = $1 AND b.expires > $2), 0)::bigint"
                " + coalesce((SELECT sum(payload_size) FROM bso_history WHERE uid = $1"
                " AND keep_until > $2), 0)::bigint",
    [S_INFO_COLLS] = "SELECT name, modified FROM collections WHERE uid = $1 ORDER BY name",
    [S_INFO_COUNTS] = "SELECT coll, count(*) FROM bsos WHERE uid = $1 AND expiry > $2"
                      " GROUP BY coll ORDER BY coll",
    [S_INFO_USAGE] = "SELECT coll, sum(payload_size)::bigint FROM bsos WHERE uid = $1"
                     " AND expiry > $2 GROUP BY coll ORDER BY coll",
    [S_GET_ITEM] = "SELECT id, modified, payload, sortindex FROM bsos WHERE uid = $1"
                   " AND coll = $2 AND id = $3 AND expiry > $4",
    [S_B_CREATE] = "INSERT INTO batches (id, uid, coll, expires) VALUES ($1, $2, $3, $4)",
    [S_B_CHECK] = "SELECT (SELECT count(*) FROM batch_items WHERE batch = $1),"
                  " (SELECT coalesce(sum(octet_length(payload)), 0)::bigint FROM batch_items"
                  " WHERE batch = $1) FROM batches"
                  " WHERE id = $1 AND uid = $2 AND coll = $3 AND expires > $4",
    [S_B_ADD] = "INSERT INTO batch_items AS i (batch, id, sortindex, has_sortindex, payload,"
                " has_payload, ttl, has_ttl) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)"
                " ON CONFLICT (batch, id) DO UPDATE SET"
                " sortindex = CASE WHEN EXCLUDED.has_sortindex THEN EXCLUDED.sortindex"
                " ELSE i.sortindex END,"
                " has_sortindex = i.has_sortindex OR EXCLUDED.has_sortindex,"
                " payload = CASE WHEN EXCLUDED.has_payload THEN EXCLUDED.payload"
                " ELSE i.payload END,"
                " has_payload = i.has_payload OR EXCLUDED.has_payload,"
                " ttl = CASE WHEN EXCLUDED.has_ttl THEN EXCLUDED.ttl ELSE i.ttl END,"
                " has_ttl = i.has_ttl OR EXCLUDED.has_ttl",
    [S_B_COUNT] = "SELECT count(*) FROM batches WHERE uid = $1 AND expires > $2",
    [S_B_ITEMS] = "SELECT id, sortindex, has_sortindex, payload, has_payload, ttl, has_ttl"
                  " FROM batch_items WHERE batch = $1",
    [S_B_DEL_ITEMS] = "DELETE FROM batch_items WHERE batch = $1",
    [S_B_DEL] = "DELETE FROM batches WHERE id = $1",
    [S_P_BSOS] = "DELETE FROM bsos WHERE expiry <= $1",
    [S_P_HISTORY] = "DELETE FROM bso_history WHERE keep_until <= $1",
    [S_P_ITEMS] = "DELETE FROM batch_items WHERE batch IN (SELECT id FROM batches"
                  " WHERE expires <= $1)",
    [S_P_BATCHES] = "DELETE FROM batches WHERE expires <= $1",
    [S_P_NONCES] = "DELETE FROM storage_nonces WHERE expires < $1",
    [S_H_KEEP] = "UPDATE history_config SET keep = $1",
    /* the oldest kept versions whose running total reaches $2 */
    [S_H_EVICT] = "DELETE FROM bso_history WHERE hid IN (SELECT hid FROM (SELECT hid,"
                  " payload_size AS sz, sum(payload_size) OVER (ORDER BY replaced, hid) AS run"
                  " FROM bso_history WHERE uid = $1) w WHERE run - sz < $2)",
    [S_NONCE_ADD] = "INSERT INTO storage_nonces (key, expires) VALUES ($1, $2)"
                    " ON CONFLICT (key) DO NOTHING",
    [S_WRITE_TIME] = "SELECT set_config('picl.write_time', $1::text, true)",
    [S_WRITABLE] = "SELECT pg_is_in_recovery() OR"
                   " current_setting('default_transaction_read_only') = 'on'",
};

typedef struct pg_conn {
    sdb_conn base;
    PGconn *c;
    int busy, busy_ms;
    int pending;        /* a ROLLBACK sent at release whose answer is not read yet */
    int64_t write_time; /* to hand to the database before a deletion; 0 = none */
    unsigned char prepared[S_COUNT];
} pg_conn;

typedef struct sdb_impl pg_db;

struct sdb_impl {
    char *url;
    int busy_ms;
    _Atomic unsigned long nonces; /* taken so far: every 4096th sweeps the expired */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned n;
    pg_conn *conns;
};

static PGconn *pq_of(sdb_conn *c) { return ((pg_conn *)c)->c; }

/* ---- parameters and results ------------------------------------------------ */

#define MAX_ARGS 16

typedef struct pq_args {
    int n;
    const char *v[MAX_ARGS];
    int len[MAX_ARGS];
    int fmt[MAX_ARGS];
    char num[MAX_ARGS][24];
} pq_args;

static void a_i64(pq_args *a, int64_t x)
{
    snprintf(a->num[a->n], sizeof a->num[a->n], "%lld", (long long)x);
    a->v[a->n] = a->num[a->n];
    a->len[a->n] = 0;
    a->fmt[a->n] = 0;
    a->n++;
}

static void a_text(pq_args *a, const char *s)
{
    a->v[a->n] = s;
    a->len[a->n] = 0;
    a->fmt[a->n] = 0;
    a->n++;
}

static void a_bool(pq_args *a, int b) { a_text(a, b ? "t" : "f"); }

/* bytea in binary format: the bytes as they are */
static void a_bin(pq_args *a, const void *p, size_t n)
{
    a->v[a->n] = p ? (const char *)p : "";
    a->len[a->n] = (int)n;
    a->fmt[a->n] = 1;
    a->n++;
}

static void a_null(pq_args *a)
{
    a->v[a->n] = NULL;
    a->len[a->n] = 0;
    a->fmt[a->n] = 0;
    a->n++;
}

/* An integer (binary int8, int4 or bool) column; 0 for NULL. */
static int64_t g_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
    int n = PQgetlength(r, row, col);
    uint64_t v = 0;
    for (int i = 0; i < n && i < 8; i++)
        v = v << 8 | p[i];
    if (n == 4)
        return (int32_t)(uint32_t)v;
    return (int64_t)v;
}

/* SQLSTATEs that mean "another writer holds it": lock_not_available (the
 * busy timeout), deadlock_detected, serialization_failure,
 * unique_violation. */
static picl_status map_state(const PGresult *r)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (state && (!strcmp(state, "55P03") || !strcmp(state, "40P01") || !strcmp(state, "40001") ||
                  !strcmp(state, "23505")))
        return PICL_ERROR_CONFLICT;
    if (state && !strcmp(state, "53200"))
        return PICL_ERROR_NO_MEMORY;
    return PICL_ERROR_DATABASE;
}

/* Runs statement s; *res (may be NULL) receives the result (caller
 * PQclear()s it); *changed (may be NULL) the rows a change touched. */
static picl_status q(sdb_conn *conn, int s, const pq_args *a, PGresult **res, int64_t *changed)
{
    pg_conn *c = (pg_conn *)conn;
    char name[16];
    snprintf(name, sizeof name, "s%d", s);
    if (res)
        *res = NULL;
    if (!c->prepared[s]) {
        PGresult *p = PQprepare(c->c, name, sql[s], 0, NULL);
        picl_status rc = PQresultStatus(p) == PGRES_COMMAND_OK ? PICL_OK : map_state(p);
        PQclear(p);
        if (rc != PICL_OK)
            return rc;
        c->prepared[s] = 1;
    }
    PGresult *r =
        PQexecPrepared(c->c, name, a ? a->n : 0, a ? a->v : NULL, a ? a->len : NULL, a ? a->fmt : NULL, 1);
    ExecStatusType st = PQresultStatus(r);
    picl_status rc = PICL_OK;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        rc = map_state(r);
    if (rc == PICL_OK && changed)
        *changed = strtoll(PQcmdTuples(r), NULL, 10);
    if (rc == PICL_OK && res)
        *res = r;
    else
        PQclear(r);
    return rc;
}

static picl_status simple(PGconn *c, const char *text)
{
    PGresult *r = PQexec(c, text);
    ExecStatusType st = PQresultStatus(r);
    picl_status rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? PICL_OK : map_state(r);
    PQclear(r);
    return rc;
}

/* Runs s and reads one integer: NOT_FOUND without a row. */
static picl_status one_int(sdb_conn *c, int s, const pq_args *a, int64_t *v)
{
    PGresult *r = NULL;
    picl_status rc = q(c, s, a, &r, NULL);
    if (rc == PICL_OK && PQntuples(r) >= 1)
        *v = g_i64(r, 0, 0);
    else if (rc == PICL_OK)
        rc = PICL_ERROR_NOT_FOUND;
    PQclear(r);
    return rc;
}

/* ---- the pool ---------------------------------------------------------------- */

static __thread char why_buf[320];

/* why_buf = prefix + libpq's message (first line). */
static const char *reason(const char *prefix, PGconn *c)
{
    const char *m = c ? PQerrorMessage(c) : "";
    snprintf(why_buf, sizeof why_buf, "%s%s%s", prefix, *m ? ": " : "", m);
    char *nl = strchr(why_buf, '\n');
    if (nl)
        *nl = 0;
    return why_buf;
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Connects slot c (the URL's settings win over the 10 s connect_timeout,
 * which comes first); notices are not errors, so they stay quiet. */
static void conn_open(pg_db *db, pg_conn *c)
{
    static const char *const keys[] = {"connect_timeout", "dbname", NULL};
    const char *vals[] = {"10", db->url, NULL};
    c->c = PQconnectdbParams(keys, vals, 1);
    c->base.ops = &sdb_pg_ops;
    c->busy_ms = db->busy_ms;
    memset(c->prepared, 0, sizeof c->prepared);
    if (c->c && PQstatus(c->c) == CONNECTION_OK)
        PQsetNoticeProcessor(c->c, quiet, NULL);
}

static void pg_release(pg_db *db, sdb_conn *conn);

/* Reads the answer of the ROLLBACK a release sent (there by now, mostly). */
static void settle(pg_conn *c)
{
    if (!c->pending)
        return;
    for (PGresult *r; (r = PQgetResult(c->c)) != NULL;)
        PQclear(r);
    c->pending = 0;
}

/* A connection of the pool: an idle open one, else a slot never opened
 * (connected now: the pool grows to db->n as the load needs), else waits
 * at most the busy timeout (CONFLICT).  A connection that cannot be made
 * is PICL_ERROR_DATABASE. */
static picl_status pg_acquire(pg_db *db, sdb_conn **out)
{
    *out = NULL;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += db->busy_ms / 1000;
    until.tv_nsec += (long)(db->busy_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&db->mu);
    pg_conn *c = NULL;
    for (;;) {
        for (unsigned i = 0; i < db->n && !c; i++)
            if (!db->conns[i].busy && db->conns[i].c)
                c = &db->conns[i];
        for (unsigned i = 0; i < db->n && !c; i++)
            if (!db->conns[i].busy)
                c = &db->conns[i];
        if (c || pthread_cond_timedwait(&db->cv, &db->mu, &until) == ETIMEDOUT)
            break;
    }
    if (c)
        c->busy = 1;
    pthread_mutex_unlock(&db->mu);
    if (!c)
        return PICL_ERROR_CONFLICT;
    settle(c);
    if (!c->c) {
        conn_open(db, c);
    } else if (PQstatus(c->c) != CONNECTION_OK) {
        /* a connection the server dropped (restart, idle timeout) is made again */
        PQreset(c->c);
        memset(c->prepared, 0, sizeof c->prepared);
    }
    if (!c->c || PQstatus(c->c) != CONNECTION_OK) {
        pg_release(db, &c->base);
        return PICL_ERROR_DATABASE;
    }
    *out = &c->base;
    return PICL_OK;
}

static void pg_release(pg_db *db, sdb_conn *conn)
{
    pg_conn *c = (pg_conn *)conn;
    c->write_time = 0;
    /* a transaction left open (a read, a refused write) ends without the
     * caller waiting for it: the answer is read at the next acquire */
    if (c->c && PQtransactionStatus(c->c) != PQTRANS_IDLE) {
        if (PQstatus(c->c) == CONNECTION_OK && PQsendQuery(c->c, "ROLLBACK") == 1)
            c->pending = 1;
        else
            PQclear(PQexec(c->c, "ROLLBACK"));
    }
    pthread_mutex_lock(&db->mu);
    c->busy = 0;
    pthread_cond_signal(&db->cv);
    pthread_mutex_unlock(&db->mu);
}

/* ---- open / migrate ----------------------------------------------------------- */

/* Creates or migrates the schema in one transaction (never half-migrated). */
static picl_status migrate(PGconn *c, const char **why)
{
    int64_t version = 0;
    picl_status rc = simple(c, "BEGIN");
    if (rc == PICL_OK)
        rc = simple(c, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")");
    if (rc == PICL_OK)
        rc = simple(c, "CREATE TABLE IF NOT EXISTS storage_meta (key TEXT PRIMARY KEY,"
                       " value BIGINT)");
    if (rc == PICL_OK) {
        PGresult *r = PQexecParams(c,
                                   "SELECT value FROM storage_meta WHERE key ="
                                   " 'schema_version'",
                                   0, NULL, NULL, NULL, NULL, 1);
        if (PQresultStatus(r) != PGRES_TUPLES_OK)
            rc = PICL_ERROR_DATABASE;
        else if (PQntuples(r) == 1)
            version = g_i64(r, 0, 0);
        PQclear(r);
    }
    if (rc == PICL_OK && version > SDB_SCHEMA_VERSION) {
        rc = PICL_ERROR_UNSUPPORTED;
        *why = "the database was written by a newer storage server (its schema version is"
               " higher)";
    }
    if (rc == PICL_OK && version < 3) {
        rc = simple(c, schema_v3);
        if (rc != PICL_OK)
            *why = reason("cannot create the schema", c);
        if (rc == PICL_OK)
            rc = simple(c, "INSERT INTO storage_meta VALUES ('schema_version', 3)"
                           " ON CONFLICT (key) DO UPDATE SET value = 3");
    }
    /* Later versions add "if (version < 4) ..." steps here. */
    if (rc == PICL_OK)
        rc = simple(c, "COMMIT");
    if (rc != PICL_OK && !*why)
        *why = reason("cannot migrate the schema", c);
    if (rc != PICL_OK)
        PQclear(PQexec(c, "ROLLBACK"));
    return rc;
}

static void pg_close(pg_db *db);

static picl_status pg_open(pg_db **out, const char *url, int busy_ms, unsigned pool, const char **why)
{
    *out = NULL;
    *why = NULL;
    pg_db *db = calloc(1, sizeof *db);
    if (!db)
        return PICL_ERROR_NO_MEMORY;
    pthread_mutex_init(&db->mu, NULL);
    pthread_cond_init(&db->cv, NULL);
    db->n = pool ? pool : POOL_DEFAULT;
    db->busy_ms = busy_ms > 0 ? busy_ms : BUSY_TIMEOUT_MS;
    picl_status rc = PICL_ERROR_NO_MEMORY;
    if (db->n > POOL_MAX) {
        rc = PICL_ERROR_INVALID_ARGUMENT;
        *why = "the pool takes at most 256 connections";
        goto done;
    }
    if (!(db->url = strdup(url)) || !(db->conns = calloc(db->n, sizeof *db->conns)))
        goto done;
    /* the first connection now: an unreachable server or a wrong URL is an
     * error at start (after at most connect_timeout), not at a request */
    conn_open(db, &db->conns[0]);
    if (!db->conns[0].c) {
        rc = PICL_ERROR_NO_MEMORY;
    } else if (PQstatus(db->conns[0].c) != CONNECTION_OK) {
        rc = PICL_ERROR_DATABASE;
        *why = reason("cannot connect to PostgreSQL", db->conns[0].c);
    } else {
        rc = migrate(db->conns[0].c, why);
    }
done:
    if (rc != PICL_OK) {
        pg_close(db);
        return rc;
    }
    *out = db;
    return PICL_OK;
}

static void pg_close(pg_db *db)
{
    if (!db)
        return;
    for (unsigned i = 0; db->conns && i < db->n; i++) {
        if (db->conns[i].c) {
            settle(&db->conns[i]);
            PQfinish(db->conns[i].c);
        }
    }
    free(db->conns);
    free(db->url);
    pthread_mutex_destroy(&db->mu);
    pthread_cond_destroy(&db->cv);
    free(db);
}

static const char *pg_where(const pg_db *db)
{
    (void)db;
    return "PostgreSQL";
}

/* A standby (or a database whose transactions default to read-only) would
 * answer every write 503: refused at start. */
static picl_status pg_check_writable(pg_db *db, const char **why)
{
    sdb_conn *c = NULL;
    int64_t ro = 0;
    *why = NULL;
    picl_status rc = pg_acquire(db, &c);
    if (rc == PICL_OK)
        rc = one_int(c, S_WRITABLE, NULL, &ro);
    if (rc == PICL_OK && ro) {
        rc = PICL_ERROR_IO;
        *why = "it is read-only (a standby, or default_transaction_read_only is on)";
    }
    if (c)
        pg_release(db, c);
    return rc;
}

static picl_status pg_history_configure(pg_db *db, int64_t days)
{
    sdb_conn *c = NULL;
    pq_args a = {0};
    a_i64(&a, days > 0 ? days * 86400 * 100 : 0);
    picl_status rc = pg_acquire(db, &c);
    if (rc == PICL_OK)
        rc = q(c, S_H_KEEP, &a, NULL, NULL);
    if (c)
        pg_release(db, c);
    return rc;
}

/* One statement: of two processes inserting the same key, one wins. */
static picl_status pg_nonce_take(pg_db *db, const char *key, int64_t expires)
{
    sdb_conn *c = NULL;
    pq_args a = {0};
    a_text(&a, key);
    a_i64(&a, expires);
    int64_t n = 0;
    picl_status rc = pg_acquire(db, &c);
    if (rc == PICL_OK)
        rc = q(c, S_NONCE_ADD, &a, NULL, &n);
    /* between the hourly prunes too: the table holds about skew seconds of
     * requests, not an hour's */
    if (rc == PICL_OK && (atomic_fetch_add(&db->nonces, 1) & 4095) == 4095) {
        pq_args now = {0};
        a_i64(&now, (int64_t)time(NULL));
        q(c, S_P_NONCES, &now, NULL, NULL); /* best effort: the prune job does it again */
    }
    if (c)
        pg_release(db, c);
    return rc == PICL_OK && n != 1 ? PICL_ERROR_CONFLICT : rc;
}

/* ---- transactions -------------------------------------------------------------- */

static picl_status pg_ping(sdb_conn *c) { return q(c, S_PING, NULL, NULL, NULL); }

static void pg_rollback(sdb_conn *c)
{
    ((pg_conn *)c)->write_time = 0;
    if (PQtransactionStatus(pq_of(c)) != PQTRANS_IDLE)
        PQclear(PQexec(pq_of(c), "ROLLBACK"));
}

/* BEGIN, with the busy timeout as the lock timeout of the transaction. */
static picl_status begin_locking(sdb_conn *c)
{
    char text[96];
    snprintf(text, sizeof text, "BEGIN; SET LOCAL lock_timeout = %d", ((pg_conn *)c)->busy_ms);
    return simple(pq_of(c), text);
}

/* BEGIN (begin_sql) and the user's last-modified in one round trip (the
 * simple protocol; uid is our own integer): *m, or NOT_FOUND without a
 * row.  On failure the transaction is rolled back. */
static picl_status begin_user(sdb_conn *c, const char *begin_sql, int64_t uid, const char *lock, int64_t *m)
{
    char text[256];
    snprintf(text, sizeof text, "%s; SELECT modified FROM users WHERE uid = %lld%s", begin_sql,
             (long long)uid, lock);
    PGresult *r = PQexec(pq_of(c), text);
    picl_status rc = PQresultStatus(r) == PGRES_TUPLES_OK ? PICL_OK : map_state(r);
    if (rc == PICL_OK && PQntuples(r) == 1)
        *m = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    else if (rc == PICL_OK)
        rc = PICL_ERROR_NOT_FOUND;
    PQclear(r);
    if (rc != PICL_OK && rc != PICL_ERROR_NOT_FOUND)
        pg_rollback(c);
    return rc;
}

/* The user's row locked FOR UPDATE (made first for a new user): the
 * writers of one user queue here, at most the busy timeout (CONFLICT). */
static picl_status pg_begin_write(sdb_conn *c, int64_t uid, int64_t *m)
{
    pq_args a = {0};
    a_i64(&a, uid);
    *m = 0;
    char begin[96];
    snprintf(begin, sizeof begin, "BEGIN; SET LOCAL lock_timeout = %d", ((pg_conn *)c)->busy_ms);
    picl_status rc = begin_user(c, begin, uid, " FOR UPDATE", m);
    if (rc == PICL_ERROR_NOT_FOUND) {
        rc = q(c, S_USER_ADD, &a, NULL, NULL);
        if (rc == PICL_OK)
            rc = one_int(c, S_USER_LOCK, &a, m);
    }
    if (rc != PICL_OK)
        pg_rollback(c);
    return rc == PICL_ERROR_NOT_FOUND ? PICL_ERROR_DATABASE : rc;
}

/* One snapshot for the whole read. */
static picl_status pg_begin_read(sdb_conn *c, int64_t uid, int64_t *m)
{
    *m = 0;
    picl_status rc = begin_user(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", uid, "", m);
    if (rc == PICL_ERROR_NOT_FOUND)
        rc = PICL_OK, *m = 0;
    return rc;
}

static picl_status pg_begin_maint(sdb_conn *c)
{
    picl_status rc = begin_locking(c);
    return rc == PICL_OK ? PICL_OK : PICL_ERROR_CONFLICT;
}

static picl_status pg_commit(sdb_conn *c)
{
    picl_status rc = simple(pq_of(c), "COMMIT");
    pg_rollback(c);
    return rc;
}

static int pg_in_tx(sdb_conn *c) { return PQtransactionStatus(pq_of(c)) != PQTRANS_IDLE; }

static void pg_set_write_time(sdb_conn *c, int64_t t) { ((pg_conn *)c)->write_time = t; }

/* Before a deletion: the write's timestamp into the transaction, for the
 * history trigger (the replaced time of what it deletes). */
static picl_status send_write_time(sdb_conn *c)
{
    pg_conn *k = (pg_conn *)c;
    if (!k->write_time)
        return PICL_OK;
    pq_args a = {0};
    a_i64(&a, k->write_time);
    picl_status rc = q(c, S_WRITE_TIME, &a, NULL, NULL);
    if (rc == PICL_OK)
        k->write_time = 0;
    return rc;
}

/* ---- single values and writes ------------------------------------------------- */

static picl_status pg_coll_modified(sdb_conn *c, int64_t uid, const char *coll, int64_t *m)
{
    pq_args a = {0};
    a_i64(&a, uid);
    a_text(&a, coll);
    return one_int(c, S_COLL_MOD, &a, m);
}

/* ?1 uid, ?2 collection, ?3 BSO id, ?4 now: every query on one live BSO. */
static void live_item_args(pq_args *a, int64_t uid, const char *coll, const char *id, int64_t now)
{
    a_i64(a, uid);
    a_text(a, coll);
    a_text(a, id);
    a_i64(a, now);
}

static picl_status pg_item_modified(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                                    int64_t *m)
{
    pq_args a = {0};
    live_item_args(&a, uid, coll, id, now);
    return one_int(c, S_ITEM_MOD, &a, m);
}

/* Prepares statement s on c when it is not yet (before a pipeline). */
static picl_status prepare(pg_conn *c, int s)
{
    if (c->prepared[s])
        return PICL_OK;
    char name[16];
    snprintf(name, sizeof name, "s%d", s);
    PGresult *p = PQprepare(c->c, name, sql[s], 0, NULL);
    picl_status rc = PQresultStatus(p) == PGRES_COMMAND_OK ? PICL_OK : map_state(p);
    PQclear(p);
    if (rc == PICL_OK)
        c->prepared[s] = 1;
    return rc;
}

/* The upserts of one request go out in a libpq pipeline: one round trip
 * for all of them (priv[0]: the number sent, priv[1]: 1 while the
 * pipeline is open); their results are read by the flush. */
static picl_status pg_upserter_init(sdb_conn *c, sdb_upserter *u)
{
    picl_status rc = prepare((pg_conn *)c, S_UPSERT);
    if (rc != PICL_OK)
        return rc;
    if (PQenterPipelineMode(pq_of(c)) != 1)
        return PICL_ERROR_DATABASE;
    u->priv[0] = (void *)(uintptr_t)0;
    u->priv[1] = (void *)(uintptr_t)1;
    return PICL_OK;
}

/* Reads the results of what was sent: the first failure, else OK. */
static picl_status pg_upserter_flush(sdb_upserter *u)
{
    if (!(uintptr_t)u->priv[1])
        return PICL_OK;
    PGconn *c = pq_of(u->c);
    size_t sent = (uintptr_t)u->priv[0];
    picl_status rc = PQpipelineSync(c) == 1 ? PICL_OK : PICL_ERROR_DATABASE;
    /* every query's result is read, also after a failure (the pipeline
     * answers the rest PIPELINE_ABORTED): the connection stays usable */
    for (size_t i = 0; i < sent; i++) {
        PGresult *r = PQgetResult(c);
        if (!r) {
            rc = PICL_ERROR_DATABASE;
            break;
        }
        ExecStatusType st = PQresultStatus(r);
        if (rc == PICL_OK && st != PGRES_COMMAND_OK)
            rc = st == PGRES_PIPELINE_ABORTED ? PICL_ERROR_DATABASE : map_state(r);
        PQclear(r);
        PQclear(PQgetResult(c)); /* the NULL that ends each query's results */
    }
    /* the sync point */
    for (PGresult *r; (r = PQgetResult(c)) != NULL;) {
        int sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        PQclear(r);
        if (sync)
            break;
    }
    if (PQexitPipelineMode(c) != 1 && rc == PICL_OK)
        rc = PICL_ERROR_DATABASE;
    u->priv[1] = (void *)(uintptr_t)0;
    return rc;
}

static void pg_upserter_done(sdb_upserter *u) { pg_upserter_flush(u); }

static picl_status pg_upserter_run(sdb_upserter *u, int64_t uid, const char *coll, const sdb_bso *b,
                                   int64_t t, int64_t now)
{
    pq_args a = {0};
    a_i64(&a, uid);
    a_text(&a, coll);
    a_text(&a, b->id);
    if (b->has_sortindex && !b->sortindex_null)
        a_i64(&a, b->sortindex);
    else
        a_null(&a);
    if (b->has_payload && b->payload) {
        a_bin(&a, b->payload, b->payload_len);
        a_i64(&a, (int64_t)b->payload_len);
    } else {
        a_bin(&a, "", 0);
        a_i64(&a, 0);
    }
    a_i64(&a, t);
    a_i64(&a, b->has_ttl && !b->ttl_null ? t + b->ttl * 100 : SDB_NO_EXPIRY);
    a_bool(&a, b->has_sortindex);
    a_bool(&a, b->has_payload);
    a_bool(&a, b->has_ttl);
    a_i64(&a, now);
    char name[16];
    snprintf(name, sizeof name, "s%d", S_UPSERT);
    /* libpq copies the parameters into its buffer here */
    if (PQsendQueryPrepared(pq_of(u->c), name, a.n, a.v, a.len, a.fmt, 1) != 1)
        return PICL_ERROR_DATABASE;
    u->priv[0] = (void *)((uintptr_t)u->priv[0] + 1);
    return PICL_OK;
}

static picl_status pg_touch(sdb_conn *c, int64_t uid, const char *coll, int64_t t)
{
    pq_args a = {0};
    a_i64(&a, uid);
    a_i64(&a, t);
    picl_status rc = q(c, S_TOUCH_USER, &a, NULL, NULL);
    if (rc != PICL_OK || !coll)
        return rc;
    pq_args b = {0};
    a_i64(&b, uid);
    a_text(&b, coll);
    a_i64(&b, t);
    return q(c, S_TOUCH_COLL, &b, NULL, NULL);
}

/* Runs statements s[0..n) with $1 = uid and (when coll) $2 = coll. */
static picl_status run_uc(sdb_conn *c, const int *s, size_t n, int64_t uid, const char *coll)
{
    pq_args a = {0};
    a_i64(&a, uid);
    if (coll)
        a_text(&a, coll);
    picl_status rc = send_write_time(c);
    for (size_t i = 0; i < n && rc == PICL_OK; i++)
        rc = q(c, s[i], &a, NULL, NULL);
    return rc;
}

static picl_status pg_delete_coll(sdb_conn *c, int64_t uid, const char *coll)
{
    static const int s[] = {S_DC_BSOS, S_DC_COLL, S_DC_ITEMS, S_DC_BATCHES};
    return run_uc(c, s, sizeof s / sizeof s[0], uid, coll);
}

static picl_status pg_delete_all(sdb_conn *c, int64_t uid)
{
    static const int s[] = {S_DA_BSOS, S_DA_COLLS, S_DA_ITEMS, S_DA_BATCHES, S_DA_HISTORY};
    return run_uc(c, s, sizeof s / sizeof s[0], uid, NULL);
}

static picl_status pg_delete_item(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                                  int *deleted)
{
    int64_t m;
    int live = pg_item_modified(c, uid, coll, id, now, &m) == PICL_OK;
    pq_args a = {0};
    a_i64(&a, uid);
    a_text(&a, coll);
    a_text(&a, id);
    picl_status rc = send_write_time(c);
    if (rc == PICL_OK)
        rc = q(c, S_DEL_ITEM, &a, NULL, NULL);
    if (deleted)
        *deleted = live;
    return rc;
}

static picl_status pg_usage(sdb_conn *c, int64_t uid, int64_t now, int64_t *bytes)
{
    pq_args a = {0};
    a_i64(&a, uid);
    a_i64(&a, now);
    return one_int(c, S_USAGE, &a, bytes);
}

static picl_status pg_prune(sdb_conn *c, int64_t now, int64_t *removed)
{
    pq_args a = {0}, secs = {0};
    a_i64(&a, now);
    a_i64(&secs, now / 100);
    int64_t bsos = 0, kept = 0;
    picl_status rc = q(c, S_P_BSOS, &a, NULL, &bsos);
    if (rc == PICL_OK)
        rc = q(c, S_P_HISTORY, &a, NULL, &kept);
    if (rc == PICL_OK)
        rc = q(c, S_P_ITEMS, &a, NULL, NULL);
    if (rc == PICL_OK)
        rc = q(c, S_P_BATCHES, &a, NULL, NULL);
    if (rc == PICL_OK)
        rc = q(c, S_P_NONCES, &secs, NULL, NULL);
    if (rc == PICL_OK && removed)
        *removed = bsos + kept;
    return rc;
}

static picl_status pg_history_evict(sdb_conn *c, int64_t uid, int64_t bytes)
{
    pq_args a = {0};
    a_i64(&a, uid);
    a_i64(&a, bytes);
    return q(c, S_H_EVICT, &a, NULL, NULL);
}

/* ---- reads ------------------------------------------------------------------------ */

/* Row `i` of a result whose columns are id, modified, payload, sortindex,
 * then (listings) the sort key. */
static void row_of(const PGresult *r, int i, sdb_row *row)
{
    row->id = PQgetvalue(r, i, 0);
    row->idlen = (size_t)PQgetlength(r, i, 0);
    row->modified = g_i64(r, i, 1);
    row->payload = PQgetvalue(r, i, 2);
    row->payload_len = (size_t)PQgetlength(r, i, 2);
    row->has_sortindex = !PQgetisnull(r, i, 3);
    row->sortindex = g_i64(r, i, 3);
    row->key = PQnfields(r) > 4 ? g_i64(r, i, 4) : 0;
}

static picl_status pg_get_item(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                               srv_buf *out, int64_t *m)
{
    pq_args a = {0};
    live_item_args(&a, uid, coll, id, now);
    PGresult *r = NULL;
    picl_status rc = q(c, S_GET_ITEM, &a, &r, NULL);
    if (rc == PICL_OK && PQntuples(r) == 1) {
        sdb_row row;
        row_of(r, 0, &row);
        *m = row.modified;
        sdb__render_bso(out, &row);
        rc = out->failed ? PICL_ERROR_NO_MEMORY : PICL_OK;
    } else if (rc == PICL_OK) {
        rc = PICL_ERROR_NOT_FOUND;
    }
    PQclear(r);
    return rc;
}

/* A {name: value} map from the rows (text name, integer value) of s. */
static picl_status render_map(sdb_conn *c, int s, const pq_args *a, srv_buf *out, int kind)
{
    PGresult *r = NULL;
    picl_status rc = q(c, s, a, &r, NULL);
    if (rc != PICL_OK)
        return rc;
    srv_buf_puts(out, "{");
    for (int i = 0; i < PQntuples(r); i++)
        sdb__map_entry(out, i == 0, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), g_i64(r, i, 1), kind);
    srv_buf_puts(out, "}");
    PQclear(r);
    return out->failed ? PICL_ERROR_NO_MEMORY : PICL_OK;
}

static picl_status pg_info_collections(sdb_conn *c, int64_t uid, srv_buf *out)
{
    pq_args a = {0};
    a_i64(&a, uid);
    return render_map(c, S_INFO_COLLS, &a, out, 0);
}

static picl_status pg_info_counts(sdb_conn *c, int64_t uid, int64_t now, srv_buf *out)
{
    pq_args a = {0};
    a_i64(&a, uid);
    a_i64(&a, now);
    return render_map(c, S_INFO_COUNTS, &a, out, 1);
}

static picl_status pg_info_usage(sdb_conn *c, int64_t uid, int64_t now, srv_buf *out)
{
    pq_args a = {0};
    a_i64(&a, uid);
    a_i64(&a, now);
    return render_map(c, S_INFO_USAGE, &a, out, 2);
}

/* The text of a listing: columns id, modified, payload, sortindex, sort
 * key; parameters $1 uid, $2 collection, $3 now, $4 newer, $5 older, $6 $7
 * the offset's key and id, $8 limit + 1, $9 as_of, $10... ids (every one
 * typed, so that those a query does not use may stay NULL). */
static picl_status list_sql(const sdb_query *q, int has_offset, srv_buf *sqlb)
{
    static const char *const keyexpr[] = {"0::bigint", "modified", "modified",
                                          "coalesce(sortindex, " SDB_NULL_SORTINDEX ")"};
    static const char *const order[] = {" ORDER BY id", " ORDER BY modified DESC, id",
                                        " ORDER BY modified, id",
                                        " ORDER BY coalesce(sortindex, " SDB_NULL_SORTINDEX ") DESC, id"};
    static const char *const offset[] = {" AND id > $7",
                                         " AND (modified < $6 OR (modified = $6 AND id > $7))",
                                         " AND (modified > $6 OR (modified = $6 AND id > $7))",
                                         " AND (coalesce(sortindex, " SDB_NULL_SORTINDEX ") < $6 OR"
                                         " (coalesce(sortindex, " SDB_NULL_SORTINDEX ") = $6 AND id > $7))"};
    srv_buf_printf(sqlb,
                   "SELECT id, modified, %s, sortindex, %s FROM %s"
                   " WHERE uid = $1 AND coll = $2 AND expiry > $3",
                   q->full ? "payload" : "''::bytea", keyexpr[q->sort],
                   q->has_as_of ? "(SELECT uid, coll, id, modified, payload, sortindex, expiry FROM bsos"
                                  " WHERE uid = $1 AND coll = $2 AND modified <= $9 UNION ALL"
                                  " SELECT uid, coll, id, modified, payload, sortindex,"
                                  " 4611686018427387903::bigint FROM bso_history WHERE uid = $1"
                                  " AND coll = $2 AND modified <= $9 AND replaced > $9"
                                  " AND expiry > $9) AS src"
                                : "bsos");
    if (q->has_newer)
        srv_buf_puts(sqlb, " AND modified > $4");
    if (q->has_older)
        srv_buf_puts(sqlb, " AND modified < $5");
    if (has_offset)
        srv_buf_puts(sqlb, offset[q->sort]);
    if (q->nids) {
        srv_buf_puts(sqlb, " AND id IN (");
        for (size_t i = 0; i < q->nids; i++)
            srv_buf_printf(sqlb, "%s$%zu", i ? "," : "", 10 + i);
        srv_buf_puts(sqlb, ")");
    }
    srv_buf_puts(sqlb, order[q->sort]);
    if (q->limit > 0)
        srv_buf_puts(sqlb, " LIMIT $8");
    return sqlb->failed ? PICL_ERROR_NO_MEMORY : PICL_OK;
}

/* Sends the listing's text with its parameters (ids: at most 100) in
 * single-row mode: its rows are read one by one (list_rows), so that a
 * page of a thousand full records is never a megabyte-sized result that
 * is allocated, faulted in and freed again at every request. */
static picl_status list_send(sdb_conn *c, const sdb_query *q, const char *text, int64_t okey, const char *oid)
{
    enum { NP = 9 + 100 };
    Oid types[NP];
    const char *v[NP];
    char num[9][24];
    int64_t iv[9] = {q->uid, 0, q->now, q->newer, q->older, okey, 0, q->limit + 1, q->as_of};
    int use[9] = {1, 0, 1, q->has_newer, q->has_older, oid != NULL, 0, q->limit > 0, q->has_as_of};
    size_t np = 9 + q->nids;
    if (q->nids > 100)
        return PICL_ERROR_TOO_LARGE;
    for (size_t i = 0; i < 9; i++) {
        types[i] = i == 1 || i == 6 ? TEXTOID : INT8OID;
        snprintf(num[i], sizeof num[i], "%lld", (long long)iv[i]);
        v[i] = use[i] ? num[i] : NULL;
    }
    v[1] = q->coll;
    v[6] = oid;
    for (size_t i = 0; i < q->nids; i++) {
        types[9 + i] = TEXTOID;
        v[9 + i] = q->ids[i];
    }
    if (PQsendQueryParams(pq_of(c), text, (int)np, types, v, NULL, NULL, 1) != 1)
        return PICL_ERROR_DATABASE;
    /* without single-row mode the rows still all arrive, in one result */
    PQsetSingleRowMode(pq_of(c));
    return PICL_OK;
}

/* Feeds the rows of the listing sent to the pager, then reads whatever
 * is left of the answer (the rows after a full page, the final status),
 * so that the connection is ready for the next statement. */
static picl_status list_rows(sdb_conn *c, sdb_pager *pg)
{
    picl_status rc = PICL_OK;
    int more = 1;
    for (PGresult *r; (r = PQgetResult(pq_of(c))) != NULL; PQclear(r)) {
        ExecStatusType st = PQresultStatus(r);
        if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK) {
            if (rc == PICL_OK)
                rc = map_state(r);
            continue;
        }
        for (int i = 0; more && rc == PICL_OK && i < PQntuples(r); i++) {
            sdb_row row;
            row_of(r, i, &row);
            more = sdb__pager_row(pg, &row);
        }
    }
    return rc;
}

static picl_status pg_list(sdb_conn *c, const sdb_query *q, srv_buf *out, int64_t *count, char **next)
{
    *count = 0;
    *next = NULL;
    int64_t okey = 0;
    char *oid = NULL;
    srv_buf text;
    srv_buf_init(&text, 64 * 1024);
    picl_status st = PICL_OK;
    if (q->offset && (st = sdb__offset_parse(q->offset, q->sort, &okey, &oid)) != PICL_OK)
        goto done;
    if ((st = list_sql(q, oid != NULL, &text)) != PICL_OK ||
        (st = list_send(c, q, text.data, okey, oid)) != PICL_OK)
        goto done;
    sdb_pager pg;
    sdb__pager_init(&pg, q, out);
    st = sdb__pager_end(&pg, list_rows(c, &pg), count, next);
done:
    srv_buf_free(&text);
    free(oid);
    return st;
}

/* ---- batches ------------------------------------------------------------------------ */

static picl_status pg_batch_create(sdb_conn *c, int64_t uid, const char *coll, int64_t expires,
                                   const char *id)
{
    pq_args a = {0};
    a_text(&a, id);
    a_i64(&a, uid);
    a_text(&a, coll);
    a_i64(&a, expires);
    return q(c, S_B_CREATE, &a, NULL, NULL);
}

static picl_status pg_batch_check(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t now,
                                  int64_t *records, int64_t *bytes)
{
    pq_args a = {0};
    a_text(&a, id);
    a_i64(&a, uid);
    a_text(&a, coll);
    a_i64(&a, now);
    PGresult *r = NULL;
    picl_status rc = q(c, S_B_CHECK, &a, &r, NULL);
    if (rc == PICL_OK && PQntuples(r) == 1) {
        *records = g_i64(r, 0, 0);
        *bytes = g_i64(r, 0, 1);
    } else if (rc == PICL_OK) {
        rc = PICL_ERROR_NOT_FOUND;
    }
    PQclear(r);
    return rc;
}

static picl_status pg_batch_add(sdb_conn *c, const char *id, const sdb_bso *b)
{
    pq_args a = {0};
    a_text(&a, id);
    a_text(&a, b->id);
    if (b->has_sortindex && !b->sortindex_null)
        a_i64(&a, b->sortindex);
    else
        a_null(&a);
    a_bool(&a, b->has_sortindex);
    if (b->has_payload && b->payload)
        a_bin(&a, b->payload, b->payload_len);
    else
        a_null(&a);
    a_bool(&a, b->has_payload);
    if (b->has_ttl && !b->ttl_null)
        a_i64(&a, b->ttl);
    else
        a_null(&a);
    a_bool(&a, b->has_ttl);
    return q(c, S_B_ADD, &a, NULL, NULL);
}

static picl_status pg_batch_count(sdb_conn *c, int64_t uid, int64_t now, int64_t *open)
{
    pq_args a = {0};
    a_i64(&a, uid);
    a_i64(&a, now);
    return one_int(c, S_B_COUNT, &a, open);
}

/* Item `i` of the batch's rows as a BSO (pointing into the result). */
static void batch_item(const PGresult *r, int i, sdb_bso *b)
{
    memset(b, 0, sizeof *b);
    b->id = PQgetvalue(r, i, 0);
    b->has_sortindex = (int)g_i64(r, i, 2);
    b->sortindex_null = PQgetisnull(r, i, 1);
    b->sortindex = g_i64(r, i, 1);
    b->has_payload = (int)g_i64(r, i, 4);
    if (!PQgetisnull(r, i, 3)) {
        b->payload = PQgetvalue(r, i, 3);
        b->payload_len = (size_t)PQgetlength(r, i, 3);
    }
    b->has_ttl = (int)g_i64(r, i, 6);
    b->ttl_null = PQgetisnull(r, i, 5);
    b->ttl = g_i64(r, i, 5);
}

static picl_status pg_batch_apply(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t t,
                                  int64_t now)
{
    pq_args a = {0};
    a_text(&a, id);
    PGresult *r = NULL;
    sdb_upserter u = {.c = c};
    picl_status rc = q(c, S_B_ITEMS, &a, &r, NULL);
    if (rc == PICL_OK)
        rc = pg_upserter_init(c, &u);
    for (int i = 0; rc == PICL_OK && i < PQntuples(r); i++) {
        sdb_bso b;
        batch_item(r, i, &b);
        rc = pg_upserter_run(&u, uid, coll, &b, t, now);
    }
    picl_status fl = pg_upserter_flush(&u);
    if (rc == PICL_OK)
        rc = fl;
    PQclear(r);
    if (rc == PICL_OK)
        rc = q(c, S_B_DEL_ITEMS, &a, NULL, NULL);
    if (rc == PICL_OK)
        rc = q(c, S_B_DEL, &a, NULL, NULL);
    return rc;
}

/* ---- the table ------------------------------------------------------------------------ */

const sdb_ops sdb_pg_ops = {
    .name = "postgresql",
    .shares_nonces = 1,
    .open = pg_open,
    .close = pg_close,
    .where = pg_where,
    .check_writable = pg_check_writable,
    .acquire = pg_acquire,
    .release = pg_release,
    .history_configure = pg_history_configure,
    .nonce_take = pg_nonce_take,
    .ping = pg_ping,
    .begin_write = pg_begin_write,
    .begin_read = pg_begin_read,
    .begin_maint = pg_begin_maint,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .in_tx = pg_in_tx,
    .set_write_time = pg_set_write_time,
    .coll_modified = pg_coll_modified,
    .item_modified = pg_item_modified,
    .upserter_init = pg_upserter_init,
    .upserter_run = pg_upserter_run,
    .upserter_flush = pg_upserter_flush,
    .upserter_done = pg_upserter_done,
    .touch = pg_touch,
    .delete_coll = pg_delete_coll,
    .delete_item = pg_delete_item,
    .delete_all = pg_delete_all,
    .usage = pg_usage,
    .info_collections = pg_info_collections,
    .info_counts = pg_info_counts,
    .info_usage = pg_info_usage,
    .get_item = pg_get_item,
    .list = pg_list,
    .batch_create = pg_batch_create,
    .batch_check = pg_batch_check,
    .batch_add = pg_batch_add,
    .batch_count = pg_batch_count,
    .batch_apply = pg_batch_apply,
    .prune = pg_prune,
    .history_evict = pg_history_evict,
};
