/* SPDX-License-Identifier: MPL-2.0 */
/* storage_db_sqlite_batch.c -- SQLite persistence of batch uploads (see storage_db.h). */
#include <stdlib.h>
#include <string.h>

#include "storage/storage_db_sqlite.h"

picl_status sdb__sq_batch_create(sdb_conn *conn, int64_t uid, const char *coll, int64_t expires,
                                 const char *id)
{
    sqlite3_stmt *q;
    picl_status st;
    if ((st = sq_stmt(conn, "INSERT INTO batches(id,uid,coll,expires) VALUES(?1,?2,?3,?4)", &q)) != PICL_OK)
        return st;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, uid);
    sqlite3_bind_text(q, 3, coll, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, expires);
    return sq_run(conn, q);
}

picl_status sdb__sq_batch_check(sdb_conn *conn, const char *id, int64_t uid, const char *coll, int64_t now,
                                int64_t *records, int64_t *bytes)
{
    sqlite3_stmt *q;
    /* the totals sdb__sq_batch_add keeps */
    picl_status st = sq_stmt(conn,
                             "SELECT records, bytes FROM batches"
                             " WHERE id=?1 AND uid=?2 AND coll=?3 AND expires>?4",
                             &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, uid);
    sqlite3_bind_text(q, 3, coll, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, now);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *records = sqlite3_column_int64(q, 0);
        *bytes = sqlite3_column_int64(q, 1);
    } else {
        st = rc == SQLITE_DONE ? PICL_ERROR_NOT_FOUND : sdb__map_rc(rc);
    }
    sq_put(conn, q);
    return st;
}

/* The payload bytes item `bid` of batch `id` holds now: *exists 0 when it
 * is not in the batch yet. */
static picl_status item_bytes(sdb_conn *conn, const char *id, const char *bid, int *exists, int64_t *bytes)
{
    sqlite3_stmt *q;
    *exists = 0;
    *bytes = 0;
    picl_status st = sq_stmt(conn,
                             "SELECT IFNULL(length(CAST(payload AS BLOB)),0) FROM batch_items"
                             " WHERE batch=?1 AND id=?2",
                             &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, bid, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *exists = 1;
        *bytes = sqlite3_column_int64(q, 0);
    } else if (rc != SQLITE_DONE) {
        st = sdb__map_rc(rc);
    }
    sq_put(conn, q);
    return st;
}

/* Adds (or merges into the item of the same id) and keeps the batch's
 * records and bytes (what sdb__sq_batch_check answers) in its row. */
picl_status sdb__sq_batch_add(sdb_conn *conn, const char *id, const sdb_bso *b)
{
    int exists;
    int64_t old_bytes;
    picl_status st = item_bytes(conn, id, b->id, &exists, &old_bytes);
    if (st != PICL_OK)
        return st;
    /* a merge keeps the old payload unless this one gives a payload */
    int64_t new_bytes = !b->has_payload ? old_bytes : b->payload ? (int64_t)b->payload_len : 0;
    sqlite3_stmt *q;
    st = sq_stmt(conn,
                 "INSERT INTO batch_items(batch,id,sortindex,has_sortindex,payload,has_payload,ttl,has_ttl)"
                 " VALUES(?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT(batch,id) DO UPDATE SET"
                 " sortindex=CASE WHEN excluded.has_sortindex THEN excluded.sortindex ELSE sortindex END,"
                 " has_sortindex=has_sortindex OR excluded.has_sortindex,"
                 " payload=CASE WHEN excluded.has_payload THEN excluded.payload ELSE payload END,"
                 " has_payload=has_payload OR excluded.has_payload,"
                 " ttl=CASE WHEN excluded.has_ttl THEN excluded.ttl ELSE ttl END,"
                 " has_ttl=has_ttl OR excluded.has_ttl",
                 &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, b->id, -1, SQLITE_STATIC);
    if (b->has_sortindex && !b->sortindex_null)
        sqlite3_bind_int64(q, 3, b->sortindex);
    else
        sqlite3_bind_null(q, 3);
    sqlite3_bind_int(q, 4, b->has_sortindex);
    if (b->has_payload && b->payload)
        sqlite3_bind_text(q, 5, b->payload, (int)b->payload_len, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 5);
    sqlite3_bind_int(q, 6, b->has_payload);
    if (b->has_ttl && !b->ttl_null)
        sqlite3_bind_int64(q, 7, b->ttl);
    else
        sqlite3_bind_null(q, 7);
    sqlite3_bind_int(q, 8, b->has_ttl);
    if ((st = sq_run(conn, q)) != PICL_OK)
        return st;
    if ((st = sq_stmt(conn, "UPDATE batches SET records=records+?2, bytes=bytes+?3 WHERE id=?1", &q)) !=
        PICL_OK)
        return st;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, !exists);
    sqlite3_bind_int64(q, 3, new_bytes - old_bytes);
    return sq_run(conn, q);
}

picl_status sdb__sq_batch_apply(sdb_conn *conn, const char *id, int64_t uid, const char *coll, int64_t t,
                                int64_t now)
{
    sqlite3_stmt *q;
    picl_status st = sq_stmt(conn,
                             "SELECT id, sortindex, has_sortindex, payload, has_payload, ttl,"
                             " has_ttl FROM batch_items WHERE batch=?1",
                             &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sdb_upserter u;
    if ((st = sdb_upserter_init(conn, &u)) != PICL_OK) {
        sq_put(conn, q);
        return st;
    }
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        sdb_bso b;
        memset(&b, 0, sizeof b);
        b.id = (char *)sqlite3_column_text(q, 0);
        b.has_sortindex = sqlite3_column_int(q, 2);
        b.sortindex_null = sqlite3_column_type(q, 1) == SQLITE_NULL;
        b.sortindex = sqlite3_column_int64(q, 1);
        b.has_payload = sqlite3_column_int(q, 4);
        if (sqlite3_column_type(q, 3) != SQLITE_NULL) {
            b.payload = (char *)sqlite3_column_text(q, 3);
            b.payload_len = (size_t)sqlite3_column_bytes(q, 3);
        }
        b.has_ttl = sqlite3_column_int(q, 6);
        b.ttl_null = sqlite3_column_type(q, 5) == SQLITE_NULL;
        b.ttl = sqlite3_column_int64(q, 5);
        if (!b.id) {
            st = PICL_ERROR_NO_MEMORY;
            break;
        }
        if ((st = sdb_upserter_run(&u, uid, coll, &b, t, now)) != PICL_OK)
            break;
    }
    if (st == PICL_OK && rc != SQLITE_DONE)
        st = sdb__map_rc(rc);
    if (st == PICL_OK)
        st = sdb_upserter_flush(&u);
    sdb_upserter_done(&u);
    sq_put(conn, q);
    if (st != PICL_OK)
        return st;
    if ((st = sq_stmt(conn, "DELETE FROM batch_items WHERE batch=?1", &q)) != PICL_OK)
        return st;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    if ((st = sq_run(conn, q)) != PICL_OK)
        return st;
    if ((st = sq_stmt(conn, "DELETE FROM batches WHERE id=?1", &q)) != PICL_OK)
        return st;
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    return sq_run(conn, q);
}

picl_status sdb__sq_batch_count(sdb_conn *conn, int64_t uid, int64_t now, int64_t *open)
{
    sqlite3_stmt *q;
    picl_status st = sq_stmt(conn, "SELECT count(*) FROM batches WHERE uid=?1 AND expires>?2", &q);
    if (st != PICL_OK)
        return st;
    sqlite3_bind_int64(q, 1, uid);
    sqlite3_bind_int64(q, 2, now);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *open = sqlite3_column_int64(q, 0);
    else
        st = sdb__map_rc(rc);
    sq_put(conn, q);
    return st;
}
