/* SPDX-License-Identifier: MPL-2.0 */
/* ks_migrate.c -- `picl-keyserver node migrate URL`: the users of a drained
 * node copied server-side to the nodes they are assigned next (storage.md
 * 6), so that their devices find their records there instead of
 * re-uploading them (see keyserver.h for the contract). */
#include <curl/curl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "client/http_exchange.h"
#include "crypto/util.h"
#include "http/http.h"
#include "keyserver/ks_internal.h"
#include "protocol/hawk.h"
#include "protocol/tokenlib.h"

#define PAGE 500  /* records per GET */
#define CHUNK 100 /* records per POST (max_post_records' default) */
#define BODY_MAX (64u * 1024 * 1024)

/* One side of a copy: a node, a uid there, the node's current secret. */
typedef struct side {
    const char *node;
    int64_t uid;
    char secret[65];
    char *token, *key;
} side;

typedef struct reply {
    srv_buf body;
    char next[256]; /* X-Weave-Next-Offset, or "" */
} reply;

/* A token for the side's uid under its node's secret (5 minutes). */
static picl_status side_open(ks_server *s, side *d)
{
    picl_status rc = ks_server_node_secret(s, d->node, d->secret);
    if (rc != PICL_OK)
        return rc;
    picl_tokenlib_payload *p = calloc(1, sizeof *p);
    if (!p)
        return PICL_ERROR_NO_MEMORY;
    p->uid = d->uid;
    snprintf(p->node, sizeof p->node, "%s", d->node);
    p->expires = (int64_t)time(NULL) + 300; /* the node's clock */
    snprintf(p->fxa_uid, sizeof p->fxa_uid, "migrate");
    rc = picl__tokenlib_mint(&d->token, &d->key, (const uint8_t *)d->secret, 64, p);
    free(p);
    return rc;
}

static void side_close(side *d)
{
    free(d->token);
    if (d->key)
        picl__zfree(d->key, strlen(d->key));
    picl__wipe(d->secret, sizeof d->secret);
    d->token = d->key = NULL;
}

/* One Hawk-signed request to <node>/1.5/<uid><suffix> through the clients'
 * one HTTP exchange (client/http_exchange.h); the HTTP status (0 when it
 * could not be made), the body and next offset into r. */
static long call(const side *d, const char *method, const char *suffix, const char *body, reply *r)
{
    long status = 0;
    char url[1024], resource[1024];
    char *host = NULL, *port = NULL, *path = NULL, *query = NULL, *authz = NULL;
    CURL *c = NULL;
    CURLU *u = NULL;
    picl_hx_response rs;
    memset(&rs, 0, sizeof rs);
    srv_buf_free(&r->body);
    srv_buf_init(&r->body, BODY_MAX);
    r->next[0] = 0;
    if ((size_t)snprintf(url, sizeof url, "%s/1.5/%" PRId64 "%s", d->node, d->uid, suffix) >= sizeof url)
        goto done;
    if (!(u = curl_url()) || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        goto done;
    curl_url_get(u, CURLUPART_QUERY, &query, 0);
    snprintf(resource, sizeof resource, "%s%s%s", path, query ? "?" : "", query ? query : "");
    picl_hawk_request hr = {.method = method,
                            .resource = resource,
                            .host = host,
                            .port = (unsigned)strtoul(port, NULL, 10),
                            .content_type = body ? "application/json" : NULL,
                            .body = body,
                            .bodylen = body ? strlen(body) : 0};
    if (picl__hx_hawk_line(&authz, d->token, d->key, strlen(d->key), &hr, (int64_t)time(NULL)) != PICL_OK ||
        !(c = curl_easy_init()))
        goto done;
    const char *headers[] = {authz, body ? "Content-Type: application/json" : NULL, NULL};
    picl_hx_request rq = {.method = method,
                          .url = url,
                          .headers = headers,
                          .body = body,
                          .body_len = body ? strlen(body) : 0,
                          .max_answer = BODY_MAX,
                          .timeout_s = 60L};
    if (picl__hx_perform(c, &rq, &rs) != PICL_OK)
        goto done;
    if (rs.body)
        srv_buf_append(&r->body, rs.body, rs.len);
    srv_buf_puts(&r->body, ""); /* NUL-terminated, also when empty */
    if (rs.next_offset && strlen(rs.next_offset) < sizeof r->next)
        memcpy(r->next, rs.next_offset, strlen(rs.next_offset) + 1);
    status = r->body.failed ? 0 : rs.status;
done:
    if (c)
        curl_easy_cleanup(c);
    picl__hx_response_free(&rs);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_url_cleanup(u);
    if (authz)
        picl__zfree(authz, strlen(authz));
    return status;
}

/* POSTs records (modified dropped: the new node sets its own) to the
 * collection on `to`; 0 when every record was taken. */
static int post_chunk(const side *to, const char *coll, json_t *records, reply *r)
{
    size_t i;
    json_t *v;
    json_array_foreach (records, i, v)
        json_object_del(v, "modified");
    char *text = json_dumps(records, JSON_COMPACT);
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/storage/%s", coll);
    long st = text ? call(to, "POST", suffix, text, r) : 0;
    free(text);
    if (st != 200)
        return -1;
    json_t *j = json_loads(r->body.data, 0, NULL);
    json_t *failed = j ? json_object_get(j, "failed") : NULL;
    int ok = failed && json_object_size(failed) == 0;
    json_decref(j);
    return ok ? 0 : -1;
}

/* Copies one collection page by page; *records counts what was copied. */
static int copy_coll(const side *from, const side *to, const char *coll, reply *r, int64_t *records)
{
    char next[256] = "";
    do {
        char suffix[400];
        snprintf(suffix, sizeof suffix, "/storage/%s?full=1&sort=oldest&limit=%d%s%s", coll, PAGE,
                 next[0] ? "&offset=" : "", next);
        if (call(from, "GET", suffix, NULL, r) != 200)
            return -1;
        snprintf(next, sizeof next, "%s", r->next);
        json_t *page = json_loads(r->body.data, 0, NULL);
        if (!json_is_array(page)) {
            json_decref(page);
            return -1;
        }
        int rc = 0;
        for (size_t off = 0; off < json_array_size(page) && rc == 0; off += CHUNK) {
            json_t *chunk = json_array();
            for (size_t k = off; k < off + CHUNK && k < json_array_size(page); k++)
                json_array_append(chunk, json_array_get(page, k));
            rc = chunk ? post_chunk(to, coll, chunk, r) : -1;
            if (rc == 0)
                *records += (int64_t)json_array_size(chunk);
            json_decref(chunk);
        }
        json_decref(page);
        if (rc)
            return -1;
    } while (next[0]);
    return 0;
}

/* Every collection of `from` to `to`, meta last: a copy that stops half
 * way leaves no meta/global on the new node, so its devices start a fresh
 * first sync there (they upload what they hold) rather than trust a
 * partial copy. */
static int copy_user(const side *from, const side *to, int64_t *records)
{
    reply r;
    memset(&r, 0, sizeof r);
    srv_buf_init(&r.body, BODY_MAX);
    int rc = -1, has_meta = 0;
    json_t *cols = NULL;
    if (call(from, "GET", "/info/collections", NULL, &r) != 200)
        goto done;
    cols = json_loads(r.body.data, 0, NULL); /* json_is_object evaluates its argument twice */
    if (!json_is_object(cols))
        goto done;
    const char *name;
    json_t *v;
    rc = 0;
    json_object_foreach (cols, name, v) {
        if (!strcmp(name, "meta"))
            has_meta = 1;
        else if (rc == 0)
            rc = copy_coll(from, to, name, &r, records);
    }
    if (rc == 0 && has_meta)
        rc = copy_coll(from, to, "meta", &r, records);
done:
    json_decref(cols);
    srv_buf_free(&r.body);
    return rc;
}

/* The replaced assignments on one node (collected before any is moved). */
typedef struct mig_list {
    const char *node;
    ks_assignment *a;
    size_t n, cap;
    int oom;
} mig_list;

static int collect(void *ctx, const ks_assignment *a)
{
    mig_list *l = ctx;
    if (strcmp(a->node, l->node) || !a->account)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        ks_assignment *g = realloc(l->a, cap * sizeof *g);
        if (!g) {
            l->oom = 1;
            return 1;
        }
        l->a = g;
        l->cap = cap;
    }
    l->a[l->n++] = *a;
    return 0;
}

picl_status ks_server_node_migrate(ks_server *s, const char *url, int64_t *users, int64_t *records,
                                   int64_t *failed)
{
    *users = *records = *failed = 0;
    ks_node node;
    mig_list l = {.node = url};
    picl_status rc = s && url ? ks_db_node_get(s->db, url, &node) : PICL_ERROR_INVALID_ARGUMENT;
    if (rc == PICL_OK && !node.downed)
        rc = PICL_ERROR_STATE; /* drain it first: its users must be frozen there */
    if (rc == PICL_OK)
        rc = ks_db_purgeable(s->db, INT64_MAX, collect, &l);
    if (rc == PICL_OK && l.oom)
        rc = PICL_ERROR_NO_MEMORY;
    for (size_t i = 0; rc == PICL_OK && i < l.n; i++) {
        ks_assignment na;
        int created = 0;
        rc = ks_db_assign(s->db, l.a[i].account, ks_now(s), &na, &created);
        if (rc != PICL_OK || !created)
            continue; /* moved already: their devices upload on their own */
        side from = {.node = url, .uid = l.a[i].uid};
        side to = {.node = na.node, .uid = na.uid};
        int64_t n = 0;
        if (side_open(s, &from) == PICL_OK && side_open(s, &to) == PICL_OK &&
            copy_user(&from, &to, &n) == 0) {
            (*users)++;
            *records += n;
        } else {
            (*failed)++; /* the user keeps the new node; devices re-upload */
        }
        side_close(&from);
        side_close(&to);
    }
    free(l.a);
    return rc;
}
