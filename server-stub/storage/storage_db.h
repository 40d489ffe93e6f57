/* storage_db.h -- SQLite persistence of the storage server: connection pool,
 * schema, and the queries of each SyncStorage 1.5 operation. */
#ifndef PICL_STORAGE_DB_H
#define PICL_STORAGE_DB_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "picl.h"

/*
 * Timestamps are integer hundredths of a second ("centis") everywhere in
 * this module; the API layer prints them as seconds with 2 decimals.
 *
 * Concurrency: every write runs in BEGIN IMMEDIATE on its own pooled
 * connection, so writers of one database are serialised; readers run in a
 * deferred transaction and see one WAL snapshot.  Statuses: PICL_OK,
 * PICL_ERROR_DATABASE (SQLite failed), PICL_ERROR_CONFLICT (the database
 * stayed locked longer than the busy timeout), PICL_ERROR_NOT_FOUND,
 * PICL_ERROR_NO_MEMORY.
 */

#define SDB_SCHEMA_VERSION 3 /* 2: index batches(uid, expires); 3: bso_history (undo) */
#define SDB_NO_EXPIRY INT64_C(4611686018427387903)

typedef struct sdb sdb;

/* Opens (creating and migrating) <dir>/storage.db in WAL mode with
 * synchronous=FULL; a write waits at most busy_timeout_ms (<= 0: 10 s) for
 * another writer before it fails with PICL_ERROR_CONFLICT.  The caller frees with sdb_close().  PICL_ERROR_IO when
 * the directory is unusable. */
picl_status sdb_open(sdb **out, const char *dir, int busy_timeout_ms);
void sdb_close(sdb *db);

/* Borrows a connection from the pool (opening one when none is idle);
 * give it back with sdb_release(), which rolls back any open transaction. */
picl_status sdb_acquire(sdb *db, sqlite3 **conn);
void sdb_release(sdb *db, sqlite3 *conn);

/* Current wall-clock time in centis. */
int64_t sdb_now(void);

/* A BSO as parsed from a request.  has_* say whether the field was given;
 * *_null that it was given as JSON null (reset to the default). */
typedef struct sdb_bso {
    char *id;                       /* malloc()ed, owned by the array holding it */
    int has_sortindex, sortindex_null;
    int64_t sortindex;
    int has_payload;                /* payload NULL with has_payload = null given */
    char *payload;                  /* malloc()ed or NULL */
    size_t payload_len;
    int has_ttl, ttl_null;
    int64_t ttl;                    /* seconds */
} sdb_bso;

/* Transactions.  sdb_begin_write starts BEGIN IMMEDIATE and reads the user's
 * last-modified (0 for a new user). */
picl_status sdb_begin_write(sqlite3 *c, int64_t uid, int64_t *user_modified);
picl_status sdb_begin_read(sqlite3 *c, int64_t uid, int64_t *user_modified);
picl_status sdb_commit(sqlite3 *c);
void sdb_rollback(sqlite3 *c);

/* Last-modified of a collection (NOT_FOUND when it does not exist). */
picl_status sdb_coll_modified(sqlite3 *c, int64_t uid, const char *coll, int64_t *modified);
/* Last-modified of a live item (NOT_FOUND when absent or expired). */
picl_status sdb_item_modified(sqlite3 *c, int64_t uid, const char *coll, const char *id,
                              int64_t now, int64_t *modified);

/* Creates or merges one BSO at time t (fields not given are kept; an expired
 * row is replaced as if absent). */
picl_status sdb_upsert(sqlite3 *c, int64_t uid, const char *coll, const sdb_bso *b, int64_t t,
                       int64_t now);

/* The same for many BSOs in one transaction, preparing the statements once:
 * init, run for each, done (always, also after a failure). */
typedef struct sdb_upserter {
    sqlite3_stmt *del, *ins;
} sdb_upserter;
picl_status sdb_upserter_init(sqlite3 *c, sdb_upserter *u);
picl_status sdb_upserter_run(sdb_upserter *u, int64_t uid, const char *coll, const sdb_bso *b,
                             int64_t t, int64_t now);
void sdb_upserter_done(sdb_upserter *u);
/* Sets the user's (and when coll != NULL the collection's) last-modified to t. */
picl_status sdb_touch(sqlite3 *c, int64_t uid, const char *coll, int64_t t);

/* Deletes.  *deleted receives the number of rows removed (may be NULL). */
picl_status sdb_delete_coll(sqlite3 *c, int64_t uid, const char *coll);
picl_status sdb_delete_item(sqlite3 *c, int64_t uid, const char *coll, const char *id,
                            int64_t now, int *deleted);
picl_status sdb_delete_all(sqlite3 *c, int64_t uid);

/* Sum of the payload bytes of the user's live BSOs and of the items of the
 * user's open (unexpired) batches. */
picl_status sdb_usage(sqlite3 *c, int64_t uid, int64_t now, int64_t *bytes);

/* The /info documents, written as JSON into out. */
picl_status sdb_info_collections(sqlite3 *c, int64_t uid, picl_buf *out);
picl_status sdb_info_counts(sqlite3 *c, int64_t uid, int64_t now, picl_buf *out);
picl_status sdb_info_usage(sqlite3 *c, int64_t uid, int64_t now, picl_buf *out);

/* One BSO as its JSON object; NOT_FOUND when absent or expired. */
picl_status sdb_get_item(sqlite3 *c, int64_t uid, const char *coll, const char *id, int64_t now,
                         picl_buf *out, int64_t *modified);

typedef enum sdb_sort { SDB_SORT_NONE = 0, SDB_SORT_NEWEST, SDB_SORT_OLDEST, SDB_SORT_INDEX } sdb_sort;

typedef struct sdb_query {
    int64_t uid;
    const char *coll;
    int64_t now;
    char **ids;          /* NULL or nids ids */
    size_t nids;
    int has_newer, has_older;
    int64_t newer, older;
    int full, newlines;
    int64_t limit;       /* 0 = none */
    sdb_sort sort;
    const char *offset;  /* an X-Weave-Next-Offset value, or NULL */
    int64_t max_bytes;   /* 0 = none; else the page ends (with a next offset)
                            before the output passes this, after >= 1 item */
    int has_as_of;       /* PiCL undo: list the collection as it was at as_of */
    int64_t as_of;
} sdb_query;

/* Lists a collection into out (a JSON array, or one JSON text per line);
 * *count receives the number of items and *next a malloc()ed offset token
 * when more remain (else NULL; the caller frees).  PICL_ERROR_INVALID_ARGUMENT
 * for an offset token that is malformed or of another sort order. */
picl_status sdb_list(sqlite3 *c, const sdb_query *q, picl_buf *out, int64_t *count, char **next);

/* Batches.  Ids are 22 url-safe characters (16 random bytes). */
#define SDB_BATCH_ID_LEN 22
picl_status sdb_batch_create(sqlite3 *c, int64_t uid, const char *coll, int64_t expires,
                             char id[SDB_BATCH_ID_LEN + 1]);
/* NOT_FOUND for an id that is unknown, expired, or of another user or
 * collection; else its current record count and payload bytes. */
picl_status sdb_batch_check(sqlite3 *c, const char *id, int64_t uid, const char *coll,
                            int64_t now, int64_t *records, int64_t *bytes);
picl_status sdb_batch_add(sqlite3 *c, const char *id, const sdb_bso *b);
/* The number of the user's open (unexpired) batches. */
picl_status sdb_batch_count(sqlite3 *c, int64_t uid, int64_t now, int64_t *open);
/* Applies every item of the batch at time t, then deletes the batch. */
picl_status sdb_batch_apply(sqlite3 *c, const char *id, int64_t uid, const char *coll,
                            int64_t t, int64_t now);

/* Deletes expired BSOs and batches; *removed (may be NULL) gets the count. */
picl_status sdb_prune(sqlite3 *c, int64_t now, int64_t *removed);

/* PiCL undo extension (storage_db_history.c).  The previous version of every
 * overwritten or deleted live BSO is kept for `days` days (<= 0: none are
 * kept from now on); the kept versions count in sdb_usage, sdb_prune drops
 * them when their time is up, sdb_delete_all drops the user's. */
picl_status sdb_history_configure(sdb *db, int64_t days);
/* Over quota: drops the user's oldest kept versions, at least `bytes` of
 * payload (fewer when there are not that many), so that freeing space by
 * deleting still makes room for new writes. */
picl_status sdb_history_evict(sqlite3 *c, int64_t uid, int64_t bytes);

/* Formats centis as seconds with exactly two decimals ("1234.50"). */
void sdb_fmt_ts(char out[32], int64_t centis);

/* Shared by the storage_db*.c files only: an SQLite code as a status;
 * prepare; step a statement that returns no row and finalize it. */
picl_status sdb__map_rc(int rc);
picl_status sdb__prep(sqlite3 *c, const char *sql, sqlite3_stmt **st);
picl_status sdb__run(sqlite3_stmt *st);
/* storage_db_history.c, for storage_db.c: the v3 schema; pruning (adds to
 * *removed, may be NULL); a user's history; the FROM source of sdb_list. */
picl_status sdb__history_migrate(sqlite3 *c);
picl_status sdb__history_prune(sqlite3 *c, int64_t now, int64_t *removed);
picl_status sdb__history_delete_user(sqlite3 *c, int64_t uid);
const char *sdb__history_source(int as_of);

#endif
