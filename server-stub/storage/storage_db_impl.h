/* SPDX-License-Identifier: MPL-2.0 */
/* storage_db_impl.h -- the table of functions a storage database backend
 * fills (storage_db_sqlite.c, storage_db_pg.c); storage_db.c dispatches the
 * storage_db.h calls, and holds what both backends share (offset tokens,
 * the rendering of BSOs and maps, the paging of a listing). */
#ifndef PICL_STORAGE_DB_IMPL_H
#define PICL_STORAGE_DB_IMPL_H

#include "storage/storage_db.h"

/* Each backend's connection starts with this (its first member), so that
 * storage_db.c finds the table from a connection alone. */
typedef struct sdb_ops sdb_ops;
struct sdb_conn {
    const sdb_ops *ops;
};

/* Each backend defines struct sdb_impl (its pool) in its own file. */
typedef struct sdb_impl sdb_impl;

/* Every entry keeps the contract of the storage_db.h function of the same
 * name (open: target, busy timeout, pool, *why as sdb_open). */
struct sdb_ops {
    const char *name;
    int shares_nonces;
    picl_status (*open)(sdb_impl **out, const char *target, int busy_ms, unsigned pool, const char **why);
    void (*close)(sdb_impl *db);
    const char *(*where)(const sdb_impl *db);
    picl_status (*check_writable)(sdb_impl *db, const char **why);
    picl_status (*acquire)(sdb_impl *db, sdb_conn **c);
    void (*release)(sdb_impl *db, sdb_conn *c);
    picl_status (*history_configure)(sdb_impl *db, int64_t days);
    picl_status (*nonce_take)(sdb_impl *db, const char *key, int64_t expires);

    picl_status (*ping)(sdb_conn *c);
    picl_status (*begin_write)(sdb_conn *c, int64_t uid, int64_t *m);
    picl_status (*begin_read)(sdb_conn *c, int64_t uid, int64_t *m);
    picl_status (*begin_maint)(sdb_conn *c);
    picl_status (*commit)(sdb_conn *c);
    void (*rollback)(sdb_conn *c);
    int (*in_tx)(sdb_conn *c);
    void (*set_write_time)(sdb_conn *c, int64_t t);
    picl_status (*coll_modified)(sdb_conn *c, int64_t uid, const char *coll, int64_t *m);
    picl_status (*item_modified)(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                                 int64_t *m);
    picl_status (*upserter_init)(sdb_conn *c, sdb_upserter *u);
    picl_status (*upserter_run)(sdb_upserter *u, int64_t uid, const char *coll, const sdb_bso *b, int64_t t,
                                int64_t now);
    picl_status (*upserter_flush)(sdb_upserter *u);
    void (*upserter_done)(sdb_upserter *u);
    picl_status (*touch)(sdb_conn *c, int64_t uid, const char *coll, int64_t t);
    picl_status (*delete_coll)(sdb_conn *c, int64_t uid, const char *coll);
    picl_status (*delete_item)(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                               int *deleted);
    picl_status (*delete_all)(sdb_conn *c, int64_t uid);
    picl_status (*usage)(sdb_conn *c, int64_t uid, int64_t now, int64_t *bytes);
    picl_status (*info_collections)(sdb_conn *c, int64_t uid, srv_buf *out);
    picl_status (*info_counts)(sdb_conn *c, int64_t uid, int64_t now, srv_buf *out);
    picl_status (*info_usage)(sdb_conn *c, int64_t uid, int64_t now, srv_buf *out);
    picl_status (*get_item)(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                            srv_buf *out, int64_t *m);
    picl_status (*list)(sdb_conn *c, const sdb_query *q, srv_buf *out, int64_t *count, char **next);
    picl_status (*batch_create)(sdb_conn *c, int64_t uid, const char *coll, int64_t expires, const char *id);
    picl_status (*batch_check)(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t now,
                               int64_t *records, int64_t *bytes);
    picl_status (*batch_add)(sdb_conn *c, const char *id, const sdb_bso *b);
    picl_status (*batch_count)(sdb_conn *c, int64_t uid, int64_t now, int64_t *open);
    picl_status (*batch_apply)(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t t,
                               int64_t now);
    picl_status (*prune)(sdb_conn *c, int64_t now, int64_t *removed);
    picl_status (*history_evict)(sdb_conn *c, int64_t uid, int64_t bytes);
};

extern const sdb_ops sdb_sqlite_ops;
extern const sdb_ops sdb_pg_ops;

/* Sort key of a BSO without sortindex: below every valid (9-digit) value. */
#define SDB_NULL_SORTINDEX "-1000000000"

/* One row of a listing or an item, as a backend read it. */
typedef struct sdb_row {
    const char *id;
    size_t idlen;
    int64_t modified;
    const char *payload; /* NULL when the listing is not full */
    size_t payload_len;
    int has_sortindex;
    int64_t sortindex;
    int64_t key; /* the sort key of the query's order (offset tokens) */
} sdb_row;

/* Writes {"id":..,"modified":..,"payload":..[,"sortindex":..]}. */
void sdb__render_bso(srv_buf *out, const sdb_row *row);

/* One "name":value of a {name: value} map (kind 0: timestamp, 1: integer,
 * 2: kilobytes from bytes); first says whether it opens the map. */
void sdb__map_entry(srv_buf *out, int first, const char *name, size_t len, int64_t v, int kind);

/* Offset tokens: <mode char><sort key>_<hex of id>.  parse: *id malloc()ed
 * (caller frees), PICL_ERROR_INVALID_ARGUMENT when malformed or of another
 * sort order. */
picl_status sdb__offset_parse(const char *tok, sdb_sort sort, int64_t *key, char **id);

/* The paging of a listing, the same for every backend: init (opens the
 * array), row for each row in order (1 to go on, 0 when the page is full or
 * failed), end with the backend's own status (closes the array, sets
 * *count and *next, frees what it held). */
typedef struct sdb_pager {
    const sdb_query *q;
    srv_buf *out;
    int64_t n, lastkey;
    char *lastid, *next;
    picl_status st;
} sdb_pager;
void sdb__pager_init(sdb_pager *p, const sdb_query *q, srv_buf *out);
int sdb__pager_row(sdb_pager *p, const sdb_row *row);
picl_status sdb__pager_end(sdb_pager *p, picl_status st, int64_t *count, char **next);

#endif
