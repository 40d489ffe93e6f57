/* SPDX-License-Identifier: MPL-2.0 */
/* storage_db_sqlite_history.c -- the PiCL undo extension of the storage database: the previous ciphertext of every overwritten or deleted BSO, kept for picl_restore_days (SQLite). */
#include "storage/storage_db_sqlite.h"

#include <stdio.h>

/*
 * Every live BSO that is overwritten (UPDATE) or deleted (DELETE) leaves its
 * row in bso_history with `replaced` = the time it stopped being current and
 * `keep_until` = replaced + the configured keep time.  Triggers do it, so
 * every write path (PUT, POST, batch commit, DELETE of an item, of ids, of a
 * collection) is covered without touching it.  Rows that had already expired
 * (their TTL passed: pruning, an upsert over an expired row) are not kept.
 * A listing "as of T" is the union of live rows modified at or before T and
 * history rows with modified <= T < replaced.
 *
 * The keep time lives in history_config (one row, centis; 0 = off) so the
 * triggers can read it; sdb_history_configure() writes it at start-up.
 * storage_db_pg.c carries the same on PostgreSQL (a plpgsql trigger).
 */

/* Wall-clock centis inside SQLite: what the v3 trigger used as a deletion's
 * time (never earlier than the deleted version's modified). */
#define NOW_CENTIS "CAST((julianday('now') - 2440587.5) * 8640000 AS INTEGER)"
#define KEEP "(SELECT keep FROM history_config)"
/* Since v5 a deletion's time is the deleting write's own timestamp, the one
 * its answer gives: the server puts it in history_write_time for the
 * transaction (sdb__history_write_time) and takes it out before the commit,
 * so another program that deletes a row (its table empty to that program)
 * still gets SQLite's clock.  The v3 trigger read that clock always: when it
 * ticked between the request's timestamp and the trigger, a listing "as of"
 * the deletion's own timestamp still showed what it deleted. */
#define DELETE_TIME "COALESCE((SELECT t FROM history_write_time), " NOW_CENTIS ")"

static const char *const schema_v3 =
    "CREATE TABLE IF NOT EXISTS bso_history(uid INTEGER NOT NULL, coll TEXT NOT NULL, id TEXT NOT NULL,"
    " sortindex INTEGER, payload TEXT NOT NULL, payload_size INTEGER NOT NULL, modified INTEGER NOT NULL,"
    " expiry INTEGER NOT NULL, replaced INTEGER NOT NULL, keep_until INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS bso_history_key ON bso_history(uid, coll, modified);"
    "CREATE INDEX IF NOT EXISTS bso_history_keep ON bso_history(keep_until);"
    "CREATE TABLE IF NOT EXISTS history_config(keep INTEGER NOT NULL);"
    "INSERT INTO history_config SELECT 259200000 WHERE NOT EXISTS (SELECT 1 FROM history_config);"
    "CREATE TRIGGER IF NOT EXISTS bsos_history_update AFTER UPDATE ON bsos"
    " WHEN OLD.expiry > NEW.modified AND " KEEP " > 0 BEGIN"
    " INSERT INTO bso_history VALUES(OLD.uid, OLD.coll, OLD.id, OLD.sortindex, OLD.payload, OLD.payload_size,"
    " OLD.modified, OLD.expiry, NEW.modified, NEW.modified + " KEEP "); END;"
    "CREATE TRIGGER IF NOT EXISTS bsos_history_delete AFTER DELETE ON bsos"
    " WHEN OLD.expiry > " NOW_CENTIS " AND " KEEP " > 0 BEGIN"
    " INSERT INTO bso_history VALUES(OLD.uid, OLD.coll, OLD.id, OLD.sortindex, OLD.payload, OLD.payload_size,"
    " OLD.modified, OLD.expiry, MAX(" NOW_CENTIS ", OLD.modified + 1),"
    " MAX(" NOW_CENTIS ", OLD.modified + 1) + " KEEP "); END;";

static const char *const schema_v5 =
    "CREATE TABLE IF NOT EXISTS history_write_time(t INTEGER);"
    "INSERT INTO history_write_time SELECT NULL WHERE NOT EXISTS (SELECT 1 FROM history_write_time);"
    "DROP TRIGGER IF EXISTS bsos_history_delete;"
    "CREATE TRIGGER bsos_history_delete AFTER DELETE ON bsos"
    " WHEN OLD.expiry > " DELETE_TIME " AND " KEEP " > 0 BEGIN"
    " INSERT INTO bso_history VALUES(OLD.uid, OLD.coll, OLD.id, OLD.sortindex, OLD.payload, OLD.payload_size,"
    " OLD.modified, OLD.expiry, MAX(" DELETE_TIME ", OLD.modified + 1),"
    " MAX(" DELETE_TIME ", OLD.modified + 1) + " KEEP "); END;";

picl_status sdb__history_migrate(sqlite3 *c, int version)
{
    int rc = sqlite3_exec(c, version == 3 ? schema_v3 : schema_v5, NULL, NULL, NULL);
    return rc == SQLITE_OK ? PICL_OK : sdb__map_rc(rc);
}

picl_status sdb__history_write_time(sdb_conn *conn, int64_t t)
{
    sqlite3_stmt *q;
    picl_status st = sq_stmt(conn, "UPDATE history_write_time SET t=?1", &q);
    if (st != PICL_OK)
        return st;
    if (t)
        sqlite3_bind_int64(q, 1, t);
    else
        sqlite3_bind_null(q, 1);
    return sq_run(conn, q);
}

picl_status sdb__history_configure(sqlite3 *c, int64_t days)
{
    sqlite3_stmt *q = NULL;
    picl_status st = sdb__prep(c, "UPDATE history_config SET keep=?1", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, days > 0 ? days * 86400 * 100 : 0);
    return sdb__run(q);
}

picl_status sdb__history_prune(sqlite3 *c, int64_t now, int64_t *removed)
{
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, "DELETE FROM bso_history WHERE keep_until<=?1", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, now);
    st = sdb__run(q);
    if (st == PICL_OK && removed)
        *removed += sqlite3_changes(c);
    return st;
}

picl_status sdb__history_delete_user(sqlite3 *c, int64_t uid)
{
    sqlite3_stmt *q;
    picl_status st = sdb__prep(c, "DELETE FROM bso_history WHERE uid=?1", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    return sdb__run(q);
}

const char *sdb__history_source(int as_of)
{
    /* the columns sdb_list reads, ?1 uid, ?2 collection, ?3 now, ?9 as_of */
    return as_of ? "(SELECT uid, coll, id, modified, payload, sortindex, expiry FROM bsos"
                   " WHERE uid=?1 AND coll=?2 AND modified<=?9"
                   " UNION ALL SELECT uid, coll, id, modified, payload, sortindex, "
                   "4611686018427387903"
                   " FROM bso_history WHERE uid=?1 AND coll=?2 AND modified<=?9 AND replaced>?9"
                   " AND expiry>?9)"
                 : "bsos";
}

picl_status sdb__sq_history_evict(sdb_conn *conn, int64_t uid, int64_t bytes)
{
    sqlite3 *c = sq_of(conn);
    sqlite3_stmt *q;
    /* the oldest kept versions whose running total reaches `bytes` */
    picl_status st = sdb__prep(c,
                               "DELETE FROM bso_history WHERE rowid IN (SELECT rid FROM (SELECT rowid AS rid,"
                               " payload_size AS sz, SUM(payload_size) OVER (ORDER BY replaced, rowid) AS run"
                               " FROM bso_history WHERE uid=?1) WHERE run - sz < ?2)",
                               &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_int64(q, 2, bytes);
    return sdb__run(q);
}
