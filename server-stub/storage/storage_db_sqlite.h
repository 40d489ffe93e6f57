/* SPDX-License-Identifier: MPL-2.0 */
/* storage_db_sqlite.h -- what the SQLite backend's files share
 * (storage_db_sqlite.c, storage_db_sqlite_batch.c,
 * storage_db_sqlite_history.c); nothing else includes it. */
#ifndef PICL_STORAGE_DB_SQLITE_H
#define PICL_STORAGE_DB_SQLITE_H

#include <sqlite3.h>

#include "storage/storage_db_impl.h"

/* Statements a connection keeps prepared (sq_stmt): every fixed query
 * of the backend and the common listing shapes fit. */
#define SQ_STMT_CACHE 64

/* A pooled connection: the common head, the SQLite handle, and the
 * statements prepared on it, kept for its life (the statement text is the
 * key; busy while a caller holds it between sq_stmt and sq_put). */
typedef struct sq_conn {
    sdb_conn base;
    sqlite3 *c;
    struct sq_cached {
        uint64_t hash;
        sqlite3_stmt *st;
        int busy;
    } stmts[SQ_STMT_CACHE];
    size_t nstmts;
    /* the deleting write's timestamp (sdb_set_write_time), and whether it
     * is in history_write_time now (taken out before the commit) */
    int64_t write_time;
    int write_time_set;
} sq_conn;

/* The SQLite handle of a connection of this backend. */
static inline sqlite3 *sq_of(sdb_conn *c) { return ((sq_conn *)c)->c; }

/* An SQLite code as a status; prepare; step a statement that returns no
 * row and finalize it. */
picl_status sdb__map_rc(int rc);
picl_status sdb__prep(sqlite3 *c, const char *sql, sqlite3_stmt **st);
picl_status sdb__run(sqlite3_stmt *st);

/* The statement of `sql` on connection c, prepared once per connection
 * (a fresh, unkept one when the cache is full or the kept one is in use
 * already); give it back with sq_put (reset, bindings cleared, or
 * finalized when unkept) on every path.  sq_run: steps one that returns
 * no row, then gives it back. */
picl_status sq_stmt(sdb_conn *c, const char *sql, sqlite3_stmt **st);
void sq_put(sdb_conn *c, sqlite3_stmt *st);
picl_status sq_run(sdb_conn *c, sqlite3_stmt *st);
/* Finalizes every kept statement (before the handle closes). */
void sq_stmts_free(sq_conn *k);

/* storage_db_sqlite_batch.c: the batch entries of the table. */
picl_status sdb__sq_batch_create(sdb_conn *c, int64_t uid, const char *coll, int64_t expires, const char *id);
picl_status sdb__sq_batch_check(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t now,
                                int64_t *records, int64_t *bytes);
picl_status sdb__sq_batch_add(sdb_conn *c, const char *id, const sdb_bso *b);
picl_status sdb__sq_batch_count(sdb_conn *c, int64_t uid, int64_t now, int64_t *open);
picl_status sdb__sq_batch_apply(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t t,
                                int64_t now);

/* storage_db_sqlite_history.c: the v3 schema, and v5's deletion time
 * (version 3 or 5); a deleting write's timestamp for the trigger (0: none,
 * SQLite's clock); the keep time (on a connection); pruning (adds to
 * *removed, may be NULL); a user's history; eviction; the FROM source of a
 * listing. */
picl_status sdb__history_migrate(sqlite3 *c, int version);
picl_status sdb__history_write_time(sdb_conn *c, int64_t t);
picl_status sdb__history_configure(sqlite3 *c, int64_t days);
picl_status sdb__history_prune(sqlite3 *c, int64_t now, int64_t *removed);
picl_status sdb__history_delete_user(sqlite3 *c, int64_t uid);
picl_status sdb__sq_history_evict(sdb_conn *c, int64_t uid, int64_t bytes);
const char *sdb__history_source(int as_of);

#endif
