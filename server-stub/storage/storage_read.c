/* SPDX-License-Identifier: MPL-2.0 */
/* storage_read.c -- the storage server's reads of collections and items:
 * query parameters, paging, conditional headers (see storage_internal.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/storage_internal.h"

#define MAX_IDS 100

/* Splits the ids parameter: 1..100 valid ids.  Returns 0 (answered) on error. */
int storage__parse_ids(sreq *r, char ***ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    char *v = NULL;
    picl_status st = srv_http_query(r->req, "ids", &v);
    if (st == PICL_ERROR_NOT_FOUND)
        return 1;
    if (st != PICL_OK) {
        storage__error(r->resp, 400, st == PICL_ERROR_NO_MEMORY ? 0 : 8);
        return 0;
    }
    size_t count = 1;
    for (char *p = v; *p; p++)
        count += *p == ',';
    if (count > MAX_IDS) {
        free(v);
        storage__error(r->resp, 400, 17);
        return 0;
    }
    char **arr = calloc(count, sizeof *arr);
    if (!arr) {
        free(v);
        storage__error(r->resp, 500, 0);
        return 0;
    }
    size_t k = 0;
    char *p = v;
    for (;;) {
        char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (!storage__valid_id(p, len))
            break;
        arr[k] = strndup(p, len);
        if (!arr[k])
            break;
        k++;
        if (!comma)
            break;
        p = comma + 1;
    }
    free(v);
    if (k != count) {
        for (size_t i = 0; i < k; i++)
            free(arr[i]);
        free(arr);
        storage__error(r->resp, 400, 8);
        return 0;
    }
    *ids = arr;
    *n = count;
    return 1;
}

void storage__free_ids(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* Parses an optional query parameter as a timestamp / a non-negative int.
 * Returns 0 (answered 400/1) when malformed. */
static int query_ts(sreq *r, const char *name, int *has, int64_t *v)
{
    char *s = NULL;
    picl_status st = srv_http_query(r->req, name, &s);
    *has = 0;
    if (st == PICL_ERROR_NOT_FOUND)
        return 1;
    if (st == PICL_OK)
        st = picl__synctime_parse(s, strlen(s), v);
    free(s);
    if (st != PICL_OK) {
        storage__error(r->resp, 400, 1);
        return 0;
    }
    *has = 1;
    return 1;
}

static int query_int(sreq *r, const char *name, int64_t *v)
{
    char *s = NULL;
    picl_status st = srv_http_query(r->req, name, &s);
    if (st == PICL_ERROR_NOT_FOUND)
        return 1;
    int ok = st == PICL_OK && s[0] && strlen(s) <= 12 && strspn(s, "0123456789") == strlen(s);
    if (ok) {
        char *end;
        *v = strtoll(s, &end, 10);
    }
    free(s);
    if (!ok) {
        storage__error(r->resp, 400, 1);
        return 0;
    }
    return 1;
}

/* The listing's query parameters into q (*sort, *offset: what the caller
 * frees).  1 to go on, 0 when it answered 400. */
static int listing_params(sreq *r, sdb_query *q, char **sort, char **offset)
{
    if (!storage__parse_ids(r, &q->ids, &q->nids) || !query_ts(r, "newer", &q->has_newer, &q->newer) ||
        !query_ts(r, "older", &q->has_older, &q->older) || !query_int(r, "limit", &q->limit) ||
        !query_ts(r, "as_of", &q->has_as_of, &q->as_of)) /* PiCL undo: as it was at as_of */
        return 0;
    if (q->has_as_of && r->s->restore_days <= 0) {
        /* undo off (picl_restore_days 0): no earlier versions to list from,
         * and the live rows alone are not the collection as it was */
        storage__error(r->resp, 400, 1);
        return 0;
    }
    q->full = srv_http_query_has(r->req, "full");
    picl_status sq = srv_http_query(r->req, "sort", sort);
    if (sq != PICL_OK && sq != PICL_ERROR_NOT_FOUND) {
        storage__error(r->resp, 400, sq == PICL_ERROR_NO_MEMORY ? 0 : 1);
        return 0;
    }
    if (sq == PICL_OK) {
        if (!strcmp(*sort, "newest"))
            q->sort = SDB_SORT_NEWEST;
        else if (!strcmp(*sort, "oldest"))
            q->sort = SDB_SORT_OLDEST;
        else if (!strcmp(*sort, "index"))
            q->sort = SDB_SORT_INDEX;
        else {
            storage__error(r->resp, 400, 1);
            return 0;
        }
    }
    picl_status oq = srv_http_query(r->req, "offset", offset);
    if (oq != PICL_OK && oq != PICL_ERROR_NOT_FOUND) {
        /* a bad escape is an error, not "no offset" (that would restart the
         * listing from the top and loop a paging client) */
        storage__error(r->resp, 400, oq == PICL_ERROR_NO_MEMORY ? 0 : 1);
        return 0;
    }
    q->offset = *offset;
    q->max_bytes = r->s->lim.max_request_bytes;
    const char *accept = srv_http_header(r->req, "Accept");
    q->newlines = accept && strstr(accept, "application/newlines") != NULL;
    return 1;
}

void storage__get_coll(sreq *r, const char *coll)
{
    sdb_query q;
    memset(&q, 0, sizeof q);
    q.uid = r->uid;
    q.coll = coll;
    q.now = r->now;
    char *sort = NULL, *offset = NULL, *full = NULL;
    sdb_conn *c = NULL;
    srv_buf out;
    /* a page stops before max_request_bytes; one item alone may pass it by
     * its JSON escaping (at most 6 bytes per payload byte) */
    srv_buf_init(&out,
                 (size_t)r->s->lim.max_request_bytes + (size_t)r->s->lim.max_record_payload_bytes * 6 + 4096);
    char *next = NULL;
    picl_status st = PICL_OK;

    if (!listing_params(r, &q, &sort, &offset))
        goto done;

    int64_t umod = 0, cmod = 0;
    if ((st = sdb_acquire(r->s->db, &c)) != PICL_OK || (st = sdb_begin_read(c, r->uid, &umod)) != PICL_OK)
        goto done;
    st = sdb_coll_modified(c, r->uid, coll, &cmod);
    if (st == PICL_ERROR_NOT_FOUND)
        st = PICL_OK, cmod = 0;
    if (st != PICL_OK)
        goto done;
    int64_t wts = storage__max64(r->now, umod);
    if (!storage__read_preconditions(r, cmod, wts))
        goto done;
    int64_t count = 0;
    st = sdb_list(c, &q, &out, &count, &next);
    if (st == PICL_ERROR_INVALID_ARGUMENT) {
        st = PICL_OK;
        storage__error(r->resp, 400, 1);
        goto done;
    }
    if (st != PICL_OK)
        goto done;
    size_t len;
    char *body = srv_buf_take(&out, &len);
    if (!body) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    srv_http_respond_owned(r->resp, 200, q.newlines ? "application/newlines" : "application/json", body, len);
    storage__set_modified(r, cmod, wts);
    char n[24];
    snprintf(n, sizeof n, "%" PRId64, count);
    srv_http_set_header(r->resp, "X-Weave-Records", n);
    if (next)
        srv_http_set_header(r->resp, "X-Weave-Next-Offset", next);
done:
    if (st != PICL_OK)
        storage__db_error(r, st);
    storage__free_ids(q.ids, q.nids);
    free(sort);
    free(offset);
    free(full);
    free(next);
    srv_buf_free(&out);
    sdb_release(r->s->db, c);
}

void storage__get_item(sreq *r, const char *coll, const char *id)
{
    sdb_conn *c = NULL;
    srv_buf out;
    srv_buf_init(&out, 0);
    int64_t umod = 0, m = 0;
    picl_status st = sdb_acquire(r->s->db, &c);
    if (st == PICL_OK)
        st = sdb_begin_read(c, r->uid, &umod);
    if (st != PICL_OK)
        goto done;
    int64_t wts = storage__max64(r->now, umod);
    st = sdb_get_item(c, r->uid, coll, id, r->now, &out, &m);
    if (st == PICL_ERROR_NOT_FOUND) {
        st = PICL_OK;
        storage__error(r->resp, 404, 0);
        storage__set_ts(r->resp, "X-Weave-Timestamp", wts);
        goto done;
    }
    if (st != PICL_OK || !storage__read_preconditions(r, m, wts))
        goto done;
    size_t len;
    char *body = srv_buf_take(&out, &len);
    if (!body) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    srv_http_respond_owned(r->resp, 200, "application/json", body, len);
    storage__set_modified(r, m, wts);
done:
    if (st != PICL_OK)
        storage__db_error(r, st);
    srv_buf_free(&out);
    sdb_release(r->s->db, c);
}
