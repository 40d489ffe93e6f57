/* SPDX-License-Identifier: MPL-2.0 */
/* storage_client_write.c -- the storage client's writes: PUT, POST with
 * batching within the server's limits, DELETE (see storage_client.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/storage_client_internal.h"
#include "crypto/alloc.h"

picl_status picl__stc_put(picl_stc *c, const char *coll, const char *id, const json_t *bso, int64_t ius,
                          int64_t *modified)
{
    if (modified)
        *modified = -1;
    if (!json_is_object(bso) || strlen(coll) > 32 || strlen(id) > 64)
        return PICL_ERROR_INVALID_ARGUMENT;
    char rel[512], ec[128], ei[256];
    picl__stc_encode(ec, sizeof ec, coll);
    picl__stc_encode(ei, sizeof ei, id);
    snprintf(rel, sizeof rel, "/storage/%s/%s", ec, ei);
    char *body = picl__json_dumps(bso, JSON_COMPACT);
    if (!body)
        return PICL_ERROR_NO_MEMORY;
    stc_reply r = {0};
    picl_status st =
        picl__stc_request(c, "PUT", rel, "application/json", body, strlen(body), -1, ius, NULL, &r);
    free(body);
    if (st == PICL_OK && modified)
        *modified = c->last.last_modified;
    picl__stc_reply_free(&r);
    return st;
}

void picl__stc_post_result_clear(picl_stc_post_result *r)
{
    json_decref(r->success);
    json_decref(r->failed);
    memset(r, 0, sizeof *r);
}

/* One POST of bsos[from..to) with the given query; merges its answer into out. */
static picl_status post_part(picl_stc *c, const char *ecoll, const json_t *bsos, size_t from, size_t to,
                             const char *query, int64_t ius, picl_stc_post_result *out, char **batch)
{
    json_t *part = json_array();
    if (!part)
        return PICL_ERROR_NO_MEMORY;
    for (size_t i = from; i < to; i++)
        json_array_append(part, json_array_get(bsos, i));
    char *body = picl__json_dumps(part, JSON_COMPACT);
    json_decref(part);
    if (!body)
        return PICL_ERROR_NO_MEMORY;
    char rel[256];
    snprintf(rel, sizeof rel, "/storage/%s%s", ecoll, query);
    char h1[48];
    snprintf(h1, sizeof h1, "X-Weave-Records: %zu", to - from);
    const char *const extra[] = {h1, NULL};
    stc_reply r = {0};
    picl_status st =
        picl__stc_request(c, "POST", rel, "application/json", body, strlen(body), -1, ius, extra, &r);
    free(body);
    json_t *ans = NULL;
    if (st == PICL_OK)
        st = picl__stc_parse_json(&r, &ans, JSON_OBJECT);
    picl__stc_reply_free(&r);
    if (st != PICL_OK)
        return st;
    json_t *s = json_object_get(ans, "success"), *f = json_object_get(ans, "failed");
    if (!json_is_array(s) || !json_is_object(f)) {
        json_decref(ans);
        return PICL_ERROR_PROTOCOL;
    }
    json_array_extend(out->success, s);
    json_object_update(out->failed, f);
    if (batch && !*batch) {
        json_t *b = json_object_get(ans, "batch");
        if (!json_is_string(b) || !(*batch = strdup(json_string_value(b))))
            st = PICL_ERROR_PROTOCOL;
    }
    if (c->last.last_modified >= 0)
        out->modified = c->last.last_modified;
    json_decref(ans);
    return st;
}

/* What each record adds to a request body (cost) and its payload (pay);
 * TOO_LARGE when one record cannot fit any request, or all of them exceed
 * the server's totals. */
static picl_status measure_records(const json_t *bsos, size_t n, const picl_stc_limits *lim, size_t *cost,
                                   size_t *pay)
{
    int64_t total_payload = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *b = json_array_get(bsos, i);
        char *t = picl__json_dumps(b, JSON_COMPACT);
        if (!json_is_object(b) || !t) {
            free(t);
            return t ? PICL_ERROR_INVALID_ARGUMENT : PICL_ERROR_NO_MEMORY;
        }
        cost[i] = strlen(t) + 1;
        free(t);
        json_t *p = json_object_get(b, "payload");
        pay[i] = json_is_string(p) ? json_string_length(p) : 0;
        /* one record must fit one request, else no cut can ever send it */
        if ((int64_t)pay[i] > lim->max_record_payload_bytes || (int64_t)pay[i] > lim->max_post_bytes ||
            (int64_t)cost[i] + 2 > lim->max_request_bytes)
            return PICL_ERROR_TOO_LARGE;
        total_payload += (int64_t)pay[i];
    }
    if ((int64_t)n > lim->max_total_records || total_payload > lim->max_total_bytes)
        return PICL_ERROR_TOO_LARGE;
    return PICL_OK;
}

/* The end of the request that starts at record `from`: as many records as
 * fit max_post_records / max_post_bytes / max_request_bytes ("[" and "]"
 * included); == from when not even one does. */
static size_t part_end(size_t from, size_t n, const size_t *cost, const size_t *pay,
                       const picl_stc_limits *lim)
{
    int64_t b = 2, p = 0;
    size_t to = from;
    while (to < n && (int64_t)(to - from + 1) <= lim->max_post_records &&
           p + (int64_t)pay[to] <= lim->max_post_bytes && b + (int64_t)cost[to] <= lim->max_request_bytes) {
        b += (int64_t)cost[to];
        p += (int64_t)pay[to];
        to++;
    }
    return to;
}

/* The records in several requests of one batch (storage.md: ?batch=true,
 * then ?batch=ID, the last with &commit=true); X-If-Unmodified-Since on the
 * first and the last. */
static picl_status post_batched(picl_stc *c, const char *ecoll, const json_t *bsos, size_t n,
                                const size_t *cost, const size_t *pay, const picl_stc_limits *lim,
                                int64_t ius, picl_stc_post_result *out)
{
    char *batch = NULL;
    picl_status st = PICL_OK;
    size_t from = 0;
    for (int parts = 0; from < n; parts++) {
        size_t to = part_end(from, n, cost, pay, lim);
        if (to == from) {
            /* no progress possible (limits below one record): never loop */
            st = PICL_ERROR_TOO_LARGE;
            break;
        }
        int last = to >= n;
        char query[96];
        if (!batch)
            snprintf(query, sizeof query, "?batch=true%s", last ? "&commit=true" : "");
        else
            snprintf(query, sizeof query, "?batch=%s%s", batch, last ? "&commit=true" : "");
        st = post_part(c, ecoll, bsos, from, to, query, (parts == 0 || last) ? ius : -1, out,
                       last ? NULL : &batch);
        if (st != PICL_OK || last)
            break;
        from = to;
    }
    free(batch);
    return st;
}

picl_status picl__stc_post(picl_stc *c, const char *coll, const json_t *bsos, int64_t ius,
                           picl_stc_post_result *out)
{
    memset(out, 0, sizeof *out);
    if (!json_is_array(bsos) || strlen(coll) > 32)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_stc_limits lim;
    picl_status st = picl__stc_limits(c, &lim);
    if (st != PICL_OK)
        return st;
    size_t n = json_array_size(bsos);
    size_t *cost = calloc(n ? n : 1, sizeof *cost);
    size_t *pay = calloc(n ? n : 1, sizeof *pay);
    out->success = json_array();
    out->failed = json_object();
    if (!cost || !pay || !out->success || !out->failed) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    st = measure_records(bsos, n, &lim, cost, pay);
    if (st != PICL_OK)
        goto done;
    char ecoll[128];
    picl__stc_encode(ecoll, sizeof ecoll, coll);
    /* one request when everything fits, else a batch of several */
    if (part_end(0, n, cost, pay, &lim) == n)
        st = post_part(c, ecoll, bsos, 0, n, "", ius, out, NULL);
    else
        st = post_batched(c, ecoll, bsos, n, cost, pay, &lim, ius, out);
done:
    free(cost);
    free(pay);
    if (st != PICL_OK)
        picl__stc_post_result_clear(out);
    return st;
}

static picl_status do_delete(picl_stc *c, const char *rel, int64_t ius, int64_t *modified)
{
    if (modified)
        *modified = -1;
    stc_reply r = {0};
    picl_status st = picl__stc_request(c, "DELETE", rel, NULL, NULL, 0, -1, ius, NULL, &r);
    if (st == PICL_OK && modified)
        *modified = c->last.last_modified;
    picl__stc_reply_free(&r);
    return st;
}

picl_status picl__stc_delete(picl_stc *c, const char *coll, const char *const *ids, size_t nids, int64_t ius,
                             int64_t *modified)
{
    picl_stc_query q = {.ids = ids, .nids = ids ? nids : 0, .newer = -1, .older = -1};
    if (ids && !nids)
        return PICL_ERROR_INVALID_ARGUMENT;
    char *rel;
    picl_status st = picl__stc_build_get(coll, &q, &rel);
    if (st != PICL_OK)
        return st;
    st = do_delete(c, rel, ius, modified);
    free(rel);
    return st;
}

picl_status picl__stc_delete_item(picl_stc *c, const char *coll, const char *id, int64_t ius,
                                  int64_t *modified)
{
    if (strlen(coll) > 32 || strlen(id) > 64)
        return PICL_ERROR_INVALID_ARGUMENT;
    char rel[512], ec[128], ei[256];
    picl__stc_encode(ec, sizeof ec, coll);
    picl__stc_encode(ei, sizeof ei, id);
    snprintf(rel, sizeof rel, "/storage/%s/%s", ec, ei);
    return do_delete(c, rel, ius, modified);
}

picl_status picl__stc_delete_all(picl_stc *c, int64_t ius, int64_t *modified)
{
    return do_delete(c, "/storage", ius, modified);
}

picl_status picl__stc_delete_user(picl_stc *c, int64_t *modified) { return do_delete(c, "", -1, modified); }
