/* SPDX-License-Identifier: MPL-2.0 */
/* storage_db.h -- persistence of the storage server behind one interface:
 * a backend table of functions (storage_db_impl.h) filled by SQLite
 * (storage_db_sqlite*.c) and PostgreSQL (storage_db_pg*.c). */
#ifndef PICL_STORAGE_DB_H
#define PICL_STORAGE_DB_H

#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "picl.h"

/*
 * Timestamps are integer hundredths of a second ("centis") everywhere in
 * this module; the API layer prints them as seconds with 2 decimals.
 *
 * Concurrency: every write runs in a transaction that holds the user's
 * lock (SQLite: BEGIN IMMEDIATE, so all writers of one database are
 * serialised; PostgreSQL: the user's row in `users` locked FOR UPDATE, so
 * writers of one user are serialised and others run side by side); readers
 * see one snapshot (SQLite WAL, PostgreSQL REPEATABLE READ).  Hence the
 * user's timestamps strictly increase whatever the number of processes.
 * Statuses: PICL_OK, PICL_ERROR_DATABASE (the database failed),
 * PICL_ERROR_CONFLICT (the lock stayed taken longer than the busy timeout,
 * or no pooled connection came free in that time), PICL_ERROR_NOT_FOUND,
 * PICL_ERROR_NO_MEMORY.
 */

#define SDB_SCHEMA_VERSION 3 /* 2: index batches(uid, expires); 3: bso_history (undo) */
#define SDB_NO_EXPIRY INT64_C(4611686018427387903)

typedef struct sdb sdb;

typedef struct sdb_conn sdb_conn;

/* Opens (creating and migrating, in one transaction: never half-migrated)
 * the database of `target`:
 *  - a directory: <dir>/storage.db (SQLite) in WAL mode with
 *    synchronous=FULL, read through a 256 MiB mmap; PICL_ERROR_IO when the directory is unusable;
 *  - a postgresql:// (or postgres://) URL: that PostgreSQL database with a
 *    pool of `pool` connections (0 = 8, at most 256); PICL_ERROR_DATABASE
 *    when it cannot be reached (after at most 10 s) or the URL is wrong,
 *    with the reason in *why.
 * A write waits at most busy_timeout_ms (<= 0: 10 s) for another writer
 * before it fails with PICL_ERROR_CONFLICT.  *why (may be NULL) receives a
 * static or thread-local reason on failure (may stay NULL).  The caller
 * frees with sdb_close(). */
picl_status sdb_open(sdb **out, const char *target, int busy_timeout_ms, unsigned pool, const char **why);
void sdb_close(sdb *db);

/* 1 when target names a PostgreSQL database (postgresql:// or postgres://). */
int sdb_is_url(const char *target);

/* "sqlite" or "postgresql". */
const char *sdb_backend(const sdb *db);

/* What to name in an operator's message: "<dir>/storage.db", or
 * "PostgreSQL" (never the URL: it may hold a password). */
const char *sdb_where(const sdb *db);

/* Refuses a database this process cannot write (SQLite opened read-only,
 * a PostgreSQL standby or read-only default): PICL_ERROR_IO with *why. */
picl_status sdb_check_writable(sdb *db, const char **why);

/* Borrows a connection from the pool; give it back with sdb_release(),
 * which rolls back any open transaction. */
picl_status sdb_acquire(sdb *db, sdb_conn **conn);
void sdb_release(sdb *db, sdb_conn *conn);

/* A trivial query (the heartbeat). */
picl_status sdb_ping(sdb_conn *c);

/* Hawk nonces shared by the processes of one database: records `key` (a
 * request's token, ts and nonce, hashed by the caller) until `expires`
 * (unix seconds); PICL_ERROR_CONFLICT when some process recorded it
 * already.  A backend that one process serves alone (SQLite) records
 * nothing and answers PICL_OK: its in-memory cache is the whole truth. */
picl_status sdb_nonce_take(sdb *db, const char *key, int64_t expires);
/* 1 when sdb_nonce_take records anything. */
int sdb_shares_nonces(const sdb *db);

/* Current wall-clock time in centis. */
int64_t sdb_now(void);

/* Bytes as SyncStorage writes a size in KB (/info/collection_usage,
 * /info/quota, X-Weave-Quota-Remaining): kibibytes with two decimals --
 * the one formatter of that figure. */
void sdb_fmt_kib(char out[32], int64_t bytes);

/* A BSO as parsed from a request.  has_* say whether the field was given;
 * *_null that it was given as JSON null (reset to the default). */
typedef struct sdb_bso {
    char *id; /* malloc()ed, owned by the array holding it */
    int has_sortindex, sortindex_null;
    int64_t sortindex;
    int has_payload; /* payload NULL with has_payload = null given */
    char *payload;   /* malloc()ed or NULL */
    size_t payload_len;
    int has_ttl, ttl_null;
    int64_t ttl; /* seconds */
} sdb_bso;

/* Transactions.  sdb_begin_write takes the user's write lock and reads
 * the user's last-modified (0 for a new user); sdb_begin_read reads it in
 * a snapshot; sdb_begin_maint starts a write transaction that takes no
 * user's lock (pruning).  sdb_in_tx: 1 while a transaction is open. */
picl_status sdb_begin_write(sdb_conn *c, int64_t uid, int64_t *user_modified);
picl_status sdb_begin_read(sdb_conn *c, int64_t uid, int64_t *user_modified);
picl_status sdb_begin_maint(sdb_conn *c);
picl_status sdb_commit(sdb_conn *c);
void sdb_rollback(sdb_conn *c);
int sdb_in_tx(sdb_conn *c);
/* The timestamp of the open write transaction, once the caller chose it:
 * what the undo extension records as the time a deleted BSO stopped being
 * current (SQLite reads its own clock instead, and ignores this). */
void sdb_set_write_time(sdb_conn *c, int64_t t);

/* Last-modified of a collection (NOT_FOUND when it does not exist). */
picl_status sdb_coll_modified(sdb_conn *c, int64_t uid, const char *coll, int64_t *modified);
/* Last-modified of a live item (NOT_FOUND when absent or expired). */
picl_status sdb_item_modified(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                              int64_t *modified);

/* Creates or merges one BSO at time t (fields not given are kept; an expired
 * row is replaced as if absent). */
picl_status sdb_upsert(sdb_conn *c, int64_t uid, const char *coll, const sdb_bso *b, int64_t t, int64_t now);

/* The same for many BSOs in one transaction, preparing the statements once:
 * init, run for each, flush (the status of every run: a backend may send
 * them all at once and learn their outcome there), done (always, also after
 * a failure). */
typedef struct sdb_upserter {
    sdb_conn *c;
    void *priv[2]; /* the backend's prepared statements */
} sdb_upserter;
picl_status sdb_upserter_init(sdb_conn *c, sdb_upserter *u);
picl_status sdb_upserter_run(sdb_upserter *u, int64_t uid, const char *coll, const sdb_bso *b, int64_t t,
                             int64_t now);
picl_status sdb_upserter_flush(sdb_upserter *u);
void sdb_upserter_done(sdb_upserter *u);
/* Sets the user's (and when coll != NULL the collection's) last-modified to t. */
picl_status sdb_touch(sdb_conn *c, int64_t uid, const char *coll, int64_t t);

/* Deletes.  *deleted receives the number of rows removed (may be NULL). */
picl_status sdb_delete_coll(sdb_conn *c, int64_t uid, const char *coll);
picl_status sdb_delete_item(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                            int *deleted);
picl_status sdb_delete_all(sdb_conn *c, int64_t uid);

/* Sum of the payload bytes of the user's live BSOs and of the items of the
 * user's open (unexpired) batches. */
picl_status sdb_usage(sdb_conn *c, int64_t uid, int64_t now, int64_t *bytes);

/* The /info documents, written as JSON into out. */
picl_status sdb_info_collections(sdb_conn *c, int64_t uid, srv_buf *out);
picl_status sdb_info_counts(sdb_conn *c, int64_t uid, int64_t now, srv_buf *out);
picl_status sdb_info_usage(sdb_conn *c, int64_t uid, int64_t now, srv_buf *out);

/* One BSO as its JSON object; NOT_FOUND when absent or expired. */
picl_status sdb_get_item(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                         srv_buf *out, int64_t *modified);

typedef enum sdb_sort { SDB_SORT_NONE = 0, SDB_SORT_NEWEST, SDB_SORT_OLDEST, SDB_SORT_INDEX } sdb_sort;

typedef struct sdb_query {
    int64_t uid;
    const char *coll;
    int64_t now;
    char **ids; /* NULL or nids ids */
    size_t nids;
    int has_newer, has_older;
    int64_t newer, older;
    int full, newlines;
    int64_t limit; /* 0 = none */
    sdb_sort sort;
    const char *offset; /* an X-Weave-Next-Offset value, or NULL */
    int64_t max_bytes;  /* 0 = none; else the page ends (with a next offset)
                            before the output passes this, after >= 1 item */
    int has_as_of;      /* PiCL undo: list the collection as it was at as_of */
    int64_t as_of;
} sdb_query;

/* Lists a collection into out (a JSON array, or one JSON text per line);
 * *count receives the number of items and *next a malloc()ed offset token
 * when more remain (else NULL; the caller frees).  PICL_ERROR_INVALID_ARGUMENT
 * for an offset token that is malformed or of another sort order. */
picl_status sdb_list(sdb_conn *c, const sdb_query *q, srv_buf *out, int64_t *count, char **next);

/* Batches.  Ids are 22 url-safe characters (16 random bytes). */
#define SDB_BATCH_ID_LEN 22
picl_status sdb_batch_create(sdb_conn *c, int64_t uid, const char *coll, int64_t expires,
                             char id[SDB_BATCH_ID_LEN + 1]);
/* NOT_FOUND for an id that is unknown, expired, or of another user or
 * collection; else its current record count and payload bytes. */
picl_status sdb_batch_check(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t now,
                            int64_t *records, int64_t *bytes);
picl_status sdb_batch_add(sdb_conn *c, const char *id, const sdb_bso *b);
/* The number of the user's open (unexpired) batches. */
picl_status sdb_batch_count(sdb_conn *c, int64_t uid, int64_t now, int64_t *open);
/* Applies every item of the batch at time t, then deletes the batch. */
picl_status sdb_batch_apply(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t t,
                            int64_t now);

/* Deletes expired BSOs, batches, kept versions (and shared Hawk nonces);
 * *removed (may be NULL) gets the count of BSOs and kept versions. */
picl_status sdb_prune(sdb_conn *c, int64_t now, int64_t *removed);

/* PiCL undo extension (storage_db_sqlite_history.c, storage_db_pg.c).  The
 * previous version of every overwritten or deleted live BSO is kept for
 * `days` days (<= 0: none are kept from now on); the kept versions count in sdb_usage, sdb_prune drops
 * them when their time is up, sdb_delete_all drops the user's. */
picl_status sdb_history_configure(sdb *db, int64_t days);
/* Over quota: drops the user's oldest kept versions, at least `bytes` of
 * payload (fewer when there are not that many), so that freeing space by
 * deleting still makes room for new writes. */
picl_status sdb_history_evict(sdb_conn *c, int64_t uid, int64_t bytes);

#endif
