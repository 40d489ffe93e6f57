/* SPDX-License-Identifier: MPL-2.0 */
/* storage_db.c -- picks the storage server's database backend (SQLite for a
 * directory, PostgreSQL for a postgresql:// URL), dispatches the
 * storage_db.h calls to its table of functions, and holds what the backends
 * share: offset tokens, rendering, paging (see storage_db_impl.h). */
#include "storage/storage_db_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "protocol/synctime.h"

struct sdb {
    const sdb_ops *ops;
    sdb_impl *impl;
};

int sdb_is_url(const char *target)
{
    return target && (!strncmp(target, "postgresql://", 13) || !strncmp(target, "postgres://", 11));
}

picl_status sdb_open(sdb **out, const char *target, int busy_timeout_ms, unsigned pool, const char **why)
{
    *out = NULL;
    const char *reason = NULL;
    if (why)
        *why = NULL;
    if (!target)
        return PICL_ERROR_IO;
    sdb *db = calloc(1, sizeof *db);
    if (!db)
        return PICL_ERROR_NO_MEMORY;
    db->ops = sdb_is_url(target) ? &sdb_pg_ops : &sdb_sqlite_ops;
    picl_status st = db->ops->open(&db->impl, target, busy_timeout_ms, pool, &reason);
    if (why)
        *why = reason;
    if (st != PICL_OK) {
        free(db);
        return st;
    }
    *out = db;
    return PICL_OK;
}

void sdb_close(sdb *db)
{
    if (!db)
        return;
    db->ops->close(db->impl);
    free(db);
}

const char *sdb_backend(const sdb *db) { return db->ops->name; }

const char *sdb_where(const sdb *db) { return db->ops->where(db->impl); }

picl_status sdb_check_writable(sdb *db, const char **why) { return db->ops->check_writable(db->impl, why); }

picl_status sdb_acquire(sdb *db, sdb_conn **conn) { return db->ops->acquire(db->impl, conn); }

void sdb_release(sdb *db, sdb_conn *conn)
{
    if (conn)
        db->ops->release(db->impl, conn);
}

picl_status sdb_history_configure(sdb *db, int64_t days)
{
    return db->ops->history_configure(db->impl, days);
}

picl_status sdb_nonce_take(sdb *db, const char *key, int64_t expires)
{
    return db->ops->nonce_take(db->impl, key, expires);
}

int sdb_shares_nonces(const sdb *db) { return db->ops->shares_nonces; }

/* ---- per-connection calls ---------------------------------------------- */

picl_status sdb_ping(sdb_conn *c) { return c->ops->ping(c); }

picl_status sdb_begin_write(sdb_conn *c, int64_t uid, int64_t *m) { return c->ops->begin_write(c, uid, m); }

picl_status sdb_begin_read(sdb_conn *c, int64_t uid, int64_t *m) { return c->ops->begin_read(c, uid, m); }

picl_status sdb_begin_maint(sdb_conn *c) { return c->ops->begin_maint(c); }

picl_status sdb_commit(sdb_conn *c) { return c->ops->commit(c); }

void sdb_rollback(sdb_conn *c) { c->ops->rollback(c); }

int sdb_in_tx(sdb_conn *c) { return c->ops->in_tx(c); }

void sdb_set_write_time(sdb_conn *c, int64_t t) { c->ops->set_write_time(c, t); }

picl_status sdb_coll_modified(sdb_conn *c, int64_t uid, const char *coll, int64_t *modified)
{
    return c->ops->coll_modified(c, uid, coll, modified);
}

picl_status sdb_item_modified(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                              int64_t *modified)
{
    return c->ops->item_modified(c, uid, coll, id, now, modified);
}

picl_status sdb_upserter_init(sdb_conn *c, sdb_upserter *u)
{
    memset(u, 0, sizeof *u);
    u->c = c;
    return c->ops->upserter_init(c, u);
}

picl_status sdb_upserter_run(sdb_upserter *u, int64_t uid, const char *coll, const sdb_bso *b, int64_t t,
                             int64_t now)
{
    return u->c->ops->upserter_run(u, uid, coll, b, t, now);
}

picl_status sdb_upserter_flush(sdb_upserter *u) { return u->c->ops->upserter_flush(u); }

void sdb_upserter_done(sdb_upserter *u)
{
    if (u->c)
        u->c->ops->upserter_done(u);
}

picl_status sdb_upsert(sdb_conn *c, int64_t uid, const char *coll, const sdb_bso *b, int64_t t, int64_t now)
{
    sdb_upserter u;
    picl_status st = sdb_upserter_init(c, &u);
    if (st == PICL_OK)
        st = sdb_upserter_run(&u, uid, coll, b, t, now);
    if (st == PICL_OK)
        st = sdb_upserter_flush(&u);
    sdb_upserter_done(&u);
    return st;
}

picl_status sdb_touch(sdb_conn *c, int64_t uid, const char *coll, int64_t t)
{
    return c->ops->touch(c, uid, coll, t);
}

picl_status sdb_delete_coll(sdb_conn *c, int64_t uid, const char *coll)
{
    return c->ops->delete_coll(c, uid, coll);
}

picl_status sdb_delete_item(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                            int *deleted)
{
    return c->ops->delete_item(c, uid, coll, id, now, deleted);
}

picl_status sdb_delete_all(sdb_conn *c, int64_t uid) { return c->ops->delete_all(c, uid); }

picl_status sdb_usage(sdb_conn *c, int64_t uid, int64_t now, int64_t *bytes)
{
    return c->ops->usage(c, uid, now, bytes);
}

picl_status sdb_info_collections(sdb_conn *c, int64_t uid, srv_buf *out)
{
    return c->ops->info_collections(c, uid, out);
}

picl_status sdb_info_counts(sdb_conn *c, int64_t uid, int64_t now, srv_buf *out)
{
    return c->ops->info_counts(c, uid, now, out);
}

picl_status sdb_info_usage(sdb_conn *c, int64_t uid, int64_t now, srv_buf *out)
{
    return c->ops->info_usage(c, uid, now, out);
}

picl_status sdb_get_item(sdb_conn *c, int64_t uid, const char *coll, const char *id, int64_t now,
                         srv_buf *out, int64_t *modified)
{
    return c->ops->get_item(c, uid, coll, id, now, out, modified);
}

picl_status sdb_list(sdb_conn *c, const sdb_query *q, srv_buf *out, int64_t *count, char **next)
{
    return c->ops->list(c, q, out, count, next);
}

picl_status sdb_batch_create(sdb_conn *c, int64_t uid, const char *coll, int64_t expires,
                             char id[SDB_BATCH_ID_LEN + 1])
{
    uint8_t raw[16];
    picl_status st = picl__random_bytes(raw, sizeof raw);
    if (st != PICL_OK)
        return st;
    picl__base64url_encode(id, raw, sizeof raw, 0);
    return c->ops->batch_create(c, uid, coll, expires, id);
}

picl_status sdb_batch_check(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t now,
                            int64_t *records, int64_t *bytes)
{
    return c->ops->batch_check(c, id, uid, coll, now, records, bytes);
}

picl_status sdb_batch_add(sdb_conn *c, const char *id, const sdb_bso *b)
{
    return c->ops->batch_add(c, id, b);
}

picl_status sdb_batch_count(sdb_conn *c, int64_t uid, int64_t now, int64_t *open)
{
    return c->ops->batch_count(c, uid, now, open);
}

picl_status sdb_batch_apply(sdb_conn *c, const char *id, int64_t uid, const char *coll, int64_t t,
                            int64_t now)
{
    return c->ops->batch_apply(c, id, uid, coll, t, now);
}

picl_status sdb_prune(sdb_conn *c, int64_t now, int64_t *removed) { return c->ops->prune(c, now, removed); }

picl_status sdb_history_evict(sdb_conn *c, int64_t uid, int64_t bytes)
{
    return c->ops->history_evict(c, uid, bytes);
}

/* ---- shared by the backends ---------------------------------------------- */

int64_t sdb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 100 + ts.tv_nsec / 10000000;
}

void sdb_fmt_kib(char out[32], int64_t bytes) { snprintf(out, 32, "%.2f", (double)bytes / 1024.0); }

void sdb__render_bso(srv_buf *out, const sdb_row *row)
{
    /* the rows of one write share its timestamp: formatted once per run of
     * them on this thread */
    static __thread int have_last;
    static __thread int64_t last;
    static __thread char ts[PICL_SYNCTIME_BUF];
    if (!have_last || row->modified != last) {
        picl__synctime_format(ts, row->modified);
        last = row->modified;
        have_last = 1;
    }
    srv_buf_puts(out, "{\"id\":");
    srv_buf_json_string(out, row->id, row->idlen);
    srv_buf_puts(out, ",\"modified\":");
    srv_buf_puts(out, ts);
    srv_buf_puts(out, ",\"payload\":");
    srv_buf_json_string(out, row->payload ? row->payload : "", row->payload_len);
    if (row->has_sortindex)
        srv_buf_printf(out, ",\"sortindex\":%" PRId64, row->sortindex);
    srv_buf_puts(out, "}");
}

void sdb__map_entry(srv_buf *out, int first, const char *name, size_t len, int64_t v, int kind)
{
    char ts[32];
    if (!first)
        srv_buf_puts(out, ",");
    srv_buf_json_string(out, name, len);
    if (kind == 0) {
        picl__synctime_format(ts, v);
        srv_buf_printf(out, ":%s", ts);
    } else if (kind == 1) {
        srv_buf_printf(out, ":%" PRId64, v);
    } else {
        char kb[32];
        sdb_fmt_kib(kb, v);
        srv_buf_printf(out, ":%s", kb);
    }
}

static const char sort_mode[] = {'d', 'n', 'o', 'i'};

picl_status sdb__offset_parse(const char *tok, sdb_sort sort, int64_t *key, char **id)
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

void sdb__pager_init(sdb_pager *p, const sdb_query *q, srv_buf *out)
{
    memset(p, 0, sizeof *p);
    p->q = q;
    p->out = out;
    if (!q->newlines)
        srv_buf_puts(out, "[");
}

int sdb__pager_row(sdb_pager *p, const sdb_row *row)
{
    const sdb_query *q = p->q;
    srv_buf *out = p->out;
    if (q->limit > 0 && p->n == q->limit) {
        p->next = p->lastid ? make_offset(q->sort, p->lastkey, p->lastid) : NULL;
        if (!p->next)
            p->st = PICL_ERROR_NO_MEMORY;
        return 0;
    }
    size_t before = out->len;
    if (p->n && !q->newlines)
        srv_buf_puts(out, ",");
    if (q->full)
        sdb__render_bso(out, row);
    else
        srv_buf_json_string(out, row->id, row->idlen);
    if (q->newlines)
        srv_buf_puts(out, "\n");
    if (p->n && q->max_bytes > 0 && !out->failed && (int64_t)out->len + 1 > q->max_bytes) {
        /* this item would take the page past max_bytes: it starts the next one */
        out->len = before;
        out->data[before] = 0;
        p->next = make_offset(q->sort, p->lastkey, p->lastid);
        if (!p->next)
            p->st = PICL_ERROR_NO_MEMORY;
        return 0;
    }
    p->n++;
    if (q->limit > 0 || q->max_bytes > 0) {
        free(p->lastid);
        p->lastid = strndup(row->id, row->idlen);
        p->lastkey = row->key;
        if (!p->lastid) {
            p->st = PICL_ERROR_NO_MEMORY;
            return 0;
        }
    }
    return 1;
}

picl_status sdb__pager_end(sdb_pager *p, picl_status st, int64_t *count, char **next)
{
    if (p->st != PICL_OK)
        st = p->st;
    if (!p->q->newlines)
        srv_buf_puts(p->out, "]");
    if (st == PICL_OK && p->out->failed)
        st = PICL_ERROR_TOO_LARGE;
    free(p->lastid);
    p->lastid = NULL;
    if (st != PICL_OK) {
        free(p->next);
        p->next = NULL;
    }
    *count = p->n;
    *next = p->next;
    return st;
}
