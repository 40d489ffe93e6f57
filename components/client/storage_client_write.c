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

/* The X-Weave-Records line of a request of n records into h (48 bytes). */
static void records_line(char *h, size_t n) { snprintf(h, 48, "X-Weave-Records: %zu", n); }

/* The answer of one POST of a part (body of n records; sent now, or taken
 * from the same request made ahead), merged into out. */
static picl_status part_answer(picl_stc *c, const char *rel, const char *body, size_t blen, size_t n,
                               int64_t ius, picl_stc_post_result *out, char **batch)
{
    char h1[48];
    records_line(h1, n);
    const char *const extra[] = {h1, NULL};
    stc_reply r = {0};
    picl_status st = picl__stc_request(c, "POST", rel, "application/json", body, blen, -1, ius, extra, &r);
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
    picl_status st = part_answer(c, rel, body, strlen(body), to - from, ius, out, batch);
    free(body);
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

/* ---- the streamed upload (picl__stc_post_stream) ---------------------------- */

/* One request's worth of BSOs: the body "[bso,bso,...]" being made. */
typedef struct up_part {
    char *body;
    size_t len, cap, count;
    int64_t pay;     /* payload bytes */
    int64_t cost;    /* what the records add to the request ("[" and "]" included) */
    int first, last; /* of its batch */
    size_t end;      /* the index after its last record */
} up_part;

typedef struct up_run {
    picl_stc *c;
    const picl_stc_stream *s;
    picl_stc_limits lim;
    char ecoll[128];
    picl_stc_post_result *out;
    int64_t ius;  /* the condition of the batch being sent */
    char *batch;  /* its ID, once its first part was answered */
    up_part p[2]; /* the part being made and the one in flight */
    up_part *cur, *sent;
    size_t batch_start, batch_parts; /* of the batch being made */
    int64_t batch_pay;
    char rel[256];
} up_run;

static picl_status part_add(up_part *p, const char *bso, size_t len, size_t pay)
{
    if (p->len + len + 2 > p->cap) {
        size_t cap = (p->len + len + 2) * 2;
        char *b = realloc(p->body, cap);
        if (!b)
            return PICL_ERROR_NO_MEMORY;
        p->body = b;
        p->cap = cap;
    }
    p->body[p->len++] = p->count ? ',' : '[';
    memcpy(p->body + p->len, bso, len);
    p->len += len;
    p->count++;
    p->pay += (int64_t)pay;
    p->cost += (int64_t)len + 1;
    return PICL_OK;
}

/* The answer of the part in flight (none: PICL_OK): merged into out; after
 * a batch's last part, the next batch is conditional on its timestamp. */
static picl_status up_answer(up_run *u)
{
    up_part *p = u->sent;
    if (!p)
        return PICL_OK;
    u->sent = NULL;
    if (p->first)
        u->out->modified = 0; /* each batch's own, as picl__stc_post's */
    picl_status st = part_answer(u->c, u->rel, p->body, p->len, p->count, (p->first || p->last) ? u->ius : -1,
                                 u->out, p->first && !p->last ? &u->batch : NULL);
    if (st != PICL_OK || !p->last)
        return st;
    free(u->batch);
    u->batch = NULL;
    u->ius = u->out->modified;
    if (p->end < u->s->n && u->s->done)
        u->s->done(u->s->ctx, p->end);
    return PICL_OK;
}

/* Closes the part being made (last: of its batch), waits for the one in
 * flight, then sends this one ahead; the other buffer is made next. */
static picl_status up_send(up_run *u, size_t end, int last)
{
    up_part *p = u->cur;
    p->body[p->len] = ']';
    p->len++;
    p->first = u->batch_parts++ == 0;
    p->last = last;
    p->end = end;
    picl_status st = up_answer(u);
    if (st != PICL_OK)
        return st;
    const char *commit = last ? "&commit=true" : "";
    if (p->first && last)
        snprintf(u->rel, sizeof u->rel, "/storage/%s", u->ecoll);
    else if (p->first)
        snprintf(u->rel, sizeof u->rel, "/storage/%s?batch=true", u->ecoll);
    else
        snprintf(u->rel, sizeof u->rel, "/storage/%s?batch=%s%s", u->ecoll, u->batch ? u->batch : "", commit);
    char h1[48];
    records_line(h1, p->count);
    const char *const extra[] = {h1, NULL};
    picl__stc_ahead(u->c, "POST", u->rel, "application/json", p->body, p->len, -1,
                    (p->first || last) ? u->ius : -1, extra);
    u->sent = p;
    u->cur = p == &u->p[0] ? &u->p[1] : &u->p[0];
    u->cur->len = u->cur->count = 0;
    u->cur->pay = 0;
    u->cur->cost = 2;
    if (last)
        u->batch_parts = 0;
    return PICL_OK;
}

/* Adds BSO i (its text bso, payload pay) to the part being made, sending
 * that part first when the record does not fit it or starts a batch. */
static picl_status up_record(up_run *u, size_t i, const char *bso, size_t pay)
{
    const picl_stc_limits *lim = &u->lim;
    size_t len = strlen(bso);
    if ((int64_t)pay > lim->max_record_payload_bytes || (int64_t)pay > lim->max_post_bytes ||
        (int64_t)len + 3 > lim->max_request_bytes || lim->max_post_records < 1)
        return PICL_ERROR_TOO_LARGE; /* fits no request (picl__stc_post: measure_records) */
    int new_batch = i > u->batch_start &&
                    ((u->s->per && i % u->s->per == 0) || u->batch_pay + (int64_t)pay > u->s->byte_cap);
    up_part *p = u->cur;
    int fits = (int64_t)p->count + 1 <= lim->max_post_records &&
               p->pay + (int64_t)pay <= lim->max_post_bytes &&
               p->cost + (int64_t)len + 1 <= lim->max_request_bytes;
    picl_status st = PICL_OK;
    if (p->count && (new_batch || !fits))
        st = up_send(u, i, new_batch);
    if (st != PICL_OK)
        return st;
    if (new_batch) {
        u->batch_start = i;
        u->batch_pay = 0;
    }
    u->batch_pay += (int64_t)pay;
    if ((int64_t)(i - u->batch_start + 1) > lim->max_total_records || u->batch_pay > lim->max_total_bytes)
        return PICL_ERROR_TOO_LARGE;
    return part_add(u->cur, bso, len, pay);
}

/* Makes and sends every record; the last part, then its answer. */
static picl_status up_all(up_run *u)
{
    picl_status st = PICL_OK;
    for (size_t i = 0; st == PICL_OK && i < u->s->n; i++) {
        char *bso = NULL;
        size_t pay = 0;
        picl_status made = u->s->next(u->s->ctx, i, &bso, &pay);
        if (made == PICL_OK && !bso)
            made = PICL_ERROR_NO_MEMORY;
        if (made != PICL_OK) {
            st = made;
            break;
        }
        st = up_record(u, i, bso, pay);
        free(bso);
        if ((i & 7) == 0)
            picl__stc_pump(u->c);
    }
    if (st == PICL_OK && u->cur->count)
        st = up_send(u, u->s->n, 1);
    /* the part in flight is always answered (never left half-sent); its
     * failure came before any found here */
    picl_status a = up_answer(u);
    return a != PICL_OK ? a : st;
}

picl_status picl__stc_post_stream(picl_stc *c, const char *coll, const picl_stc_stream *s, int64_t ius,
                                  picl_stc_post_result *out)
{
    memset(out, 0, sizeof *out);
    if (!s->next || strlen(coll) > 32)
        return PICL_ERROR_INVALID_ARGUMENT;
    up_run u = {.c = c, .s = s, .out = out, .ius = ius};
    picl_status st = picl__stc_limits(c, &u.lim);
    if (st != PICL_OK)
        return st;
    out->success = json_array();
    out->failed = json_object();
    if (!out->success || !out->failed)
        st = PICL_ERROR_NO_MEMORY;
    picl__stc_encode(u.ecoll, sizeof u.ecoll, coll);
    u.cur = &u.p[0];
    u.p[0].cost = 2;
    if (st == PICL_OK)
        st = up_all(&u);
    free(u.batch);
    free(u.p[0].body);
    free(u.p[1].body);
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
