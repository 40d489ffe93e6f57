/* SPDX-License-Identifier: MPL-2.0 */
/* storage_client.c -- libcurl client of a SyncStorage 1.5 server (see storage_client.h). */
#include "client/storage_client_internal.h"
#include "client/http_exchange.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/util.h"
#include "protocol/hawk.h"
#include "protocol/synctime.h"

#define MAX_BODY ((size_t)512 * 1024 * 1024)
#define MAX_IDS 100
#define MAX_SPARE ((size_t)8 * 1024 * 1024) /* a body buffer kept for the next answer: up to this */
#define DEFAULT_PAGE 1000
#define SKEW_RETRY_S 30

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- endpoint and credentials ----------------------------------------- */

/* Splits the endpoint with libcurl's URL parser (IPv6 literals included):
 * http(s) only, a host, a path below it, no user, query or fragment. */
static picl_status set_endpoint(picl_stc *c, const char *endpoint)
{
    picl_status st = PICL_ERROR_INVALID_ARGUMENT;
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *extra = NULL;
    char *origin = NULL, *base = NULL, *ep = NULL;
    if (!u)
        return PICL_ERROR_NO_MEMORY;
    if (curl_url_set(u, CURLUPART_URL, endpoint, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") && strcmp(scheme, "https")) ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0] ||
        strlen(host) >= sizeof c->host ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK || path[0] != '/' || !path[1])
        goto done;
    if (curl_url_get(u, CURLUPART_USER, &extra, 0) != CURLUE_NO_USER ||
        curl_url_get(u, CURLUPART_QUERY, &extra, 0) != CURLUE_NO_QUERY ||
        curl_url_get(u, CURLUPART_FRAGMENT, &extra, 0) != CURLUE_NO_FRAGMENT)
        goto done;
    char *end;
    unsigned long pv = strtoul(port, &end, 10);
    if (*end || pv == 0 || pv > 65535)
        goto done;
    /* host keeps an IPv6 literal's brackets, as the Host header (and so the
     * Hawk MAC on both sides) carries it */
    size_t ol = strlen(scheme) + strlen(host) + 16;
    origin = malloc(ol);
    base = strdup(path);
    ep = strdup(endpoint);
    if (!origin || !base || !ep) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    snprintf(origin, ol, "%s://%s:%lu", scheme, host, pv);
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/')
        base[--bl] = 0;
    free(c->origin);
    free(c->base_path);
    free(c->endpoint);
    c->origin = origin;
    c->base_path = base;
    c->endpoint = ep;
    origin = base = ep = NULL;
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = (unsigned)pv;
    st = PICL_OK;
done:
    free(origin);
    free(base);
    free(ep);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(extra);
    curl_url_cleanup(u);
    return st;
}

static void clear_creds(picl_stc *c)
{
    free(c->id);
    if (c->key)
        picl__zfree(c->key, strlen(c->key));
    c->id = c->key = NULL;
}

picl_status picl__stc_new(picl_stc **out, const char *api_endpoint, const char *id, const char *key)
{
    *out = NULL;
    if (!api_endpoint || !id || !key)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_stc *c = calloc(1, sizeof *c);
    if (!c)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = set_endpoint(c, api_endpoint);
    if (st == PICL_OK) {
        c->id = strdup(id);
        c->key = strdup(key);
        c->curl = curl_easy_init();
        if (!c->id || !c->key || !c->curl)
            st = PICL_ERROR_NO_MEMORY;
    }
    if (st != PICL_OK) {
        picl__stc_free(c);
        return st;
    }
    *out = c;
    return PICL_OK;
}

static void prefetch_drop(picl_stc *c);

void picl__stc_free(picl_stc *c)
{
    if (!c)
        return;
    prefetch_drop(c);
    if (c->pf.curl)
        curl_easy_cleanup(c->pf.curl);
    if (c->pf.multi)
        curl_multi_cleanup(c->pf.multi);
    free(c->spare);
    clear_creds(c);
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->endpoint);
    free(c->origin);
    free(c->base_path);
    free(c);
}

void picl__stc_set_refresh(picl_stc *c, picl_stc_refresh_fn fn, void *ctx)
{
    c->refresh = fn;
    c->refresh_ctx = ctx;
}

const picl_stc_result *picl__stc_last(const picl_stc *c) { return &c->last; }

int64_t picl__stc_clock_offset(const picl_stc *c) { return c->clock_offset; }

void picl__stc_set_clock_offset(picl_stc *c, int64_t offset) { c->clock_offset = offset; }

void picl__stc_clear_backoff(picl_stc *c) { c->backoff_until = 0; }

/* Wipes the strings of j and of the values only j holds (a value also
 * referenced elsewhere lives on and is left alone). */
static void json_wipe_owned(json_t *j, int depth)
{
    if (!j || j->refcount != 1 || depth > 64)
        return;
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_object(j)) {
        json_object_foreach (j, k, v)
            json_wipe_owned(v, depth + 1);
    } else if (json_is_array(j)) {
        json_array_foreach (j, i, v)
            json_wipe_owned(v, depth + 1);
    } else if (json_is_string(j)) {
        picl__wipe((char *)json_string_value(j), json_string_length(j));
    }
}

void picl__json_zdecref(json_t *j)
{
    json_wipe_owned(j, 0);
    json_decref(j);
}

int picl__stc_node_changed(const picl_stc *c) { return c && c->node_changed; }

const char *picl__stc_endpoint(const picl_stc *c) { return c->endpoint; }

/* ---- HTTP ------------------------------------------------------------- */

/* A delay the server asks for, capped: a hostile or broken server cannot
 * silence the client for more than a day (last()->backoff_capped says so). */
static void note_backoff(picl_stc_result *res, int64_t secs)
{
    if (secs > PICL_STC_MAX_BACKOFF_S) {
        secs = PICL_STC_MAX_BACKOFF_S;
        res->backoff_capped = 1;
    }
    if (secs > res->backoff_s)
        res->backoff_s = secs;
}

/* The request headers of one exchange into h[] (cap entries, NULL-terminated):
 * Hawk, the X-If-* conditions, the caller's extras, the Content-Type line.
 * lines[] receives what is allocated here (the caller zfrees it). */
static picl_status request_headers(picl_stc *c, const char *method, const char *resource, const char *ctype,
                                   int64_t ims, int64_t ius, const char *const *extra, char *lines[3],
                                   const char **h, size_t cap)
{
    picl_hawk_request hr = {
        .method = method, .resource = resource, .host = c->host, .port = c->port, .content_type = NULL};
    picl_status st = picl__hx_hawk_line(&lines[0], c->id, c->key, strlen(c->key), &hr,
                                        (int64_t)time(NULL) + c->clock_offset);
    if (st != PICL_OK)
        return st;
    size_t n = 0;
    h[n++] = lines[0];
    char ts[PICL_SYNCTIME_BUF];
    const char *names[2] = {"X-If-Modified-Since", "X-If-Unmodified-Since"};
    int64_t vals[2] = {ims, ius};
    for (int i = 0; i < 2; i++) {
        if (vals[i] < 0)
            continue;
        picl__synctime_format(ts, vals[i]);
        size_t l = strlen(names[i]) + strlen(ts) + 3;
        if (!(lines[1 + i] = malloc(l)))
            return PICL_ERROR_NO_MEMORY;
        snprintf(lines[1 + i], l, "%s: %s", names[i], ts);
        h[n++] = lines[1 + i];
    }
    for (const char *const *x = extra; x && *x; x++) {
        if (n + 2 >= cap)
            return PICL_ERROR_INVALID_ARGUMENT; /* more extras than any call passes */
        h[n++] = *x;
    }
    if (ctype)
        h[n++] = ctype;
    h[n] = NULL;
    return PICL_OK;
}

/* What the storage client keeps of an answer (http_exchange.h): the body
 * and the headers of storage_client.h, moved into r. */
static void take_answer(picl_stc_result *res, stc_reply *r, picl_hx_response *rs)
{
    res->http_status = (int)rs->status;
    res->last_modified = rs->last_modified;
    res->timestamp = rs->weave_timestamp;
    res->records = rs->records;
    res->quota_remaining_kb = rs->quota_remaining_kb;
    if (rs->weave_backoff_s >= 0)
        note_backoff(res, rs->weave_backoff_s);
    if (rs->retry_after_s >= 0)
        note_backoff(res, rs->retry_after_s);
    /* an offset we cannot send back is an error, not the end of the list */
    r->bad_offset =
        rs->has_next_offset && (!rs->next_offset || strlen(rs->next_offset) >= PICL_STC_MAX_OFFSET);
    if (!r->bad_offset) {
        r->next_offset = rs->next_offset;
        rs->next_offset = NULL;
    }
    r->www_auth = rs->www_auth;
    rs->www_auth = NULL;
    r->body = rs->body;
    r->len = rs->len;
    r->cap = rs->cap;
    rs->body = NULL;
}

/* A request's pieces: resource, URL and header lines (held by x until
 * request_free). */
typedef struct stc_req {
    char *resource, *url, *lines[3], ct[160];
    const char *h[24];
    picl_hx_request rq;
} stc_req;

static void request_free(stc_req *x)
{
    for (int i = 0; i < 3; i++)
        if (x->lines[i])
            picl__zfree(x->lines[i], strlen(x->lines[i]));
    free(x->resource);
    free(x->url);
    memset(x, 0, sizeof *x);
}

/* Builds the request (Hawk signed now).  rel is the path?query below the
 * endpoint, already percent-encoded. */
static picl_status request_build(picl_stc *c, const char *method, const char *rel, const char *ctype,
                                 const char *body, size_t blen, int64_t ims, int64_t ius,
                                 const char *const *extra, stc_req *x)
{
    memset(x, 0, sizeof *x);
    size_t rl = strlen(c->base_path) + strlen(rel) + 1;
    size_t ul = strlen(c->origin) + rl;
    x->resource = malloc(rl);
    x->url = malloc(ul);
    if (!x->resource || !x->url)
        return PICL_ERROR_NO_MEMORY;
    snprintf(x->resource, rl, "%s%s", c->base_path, rel);
    snprintf(x->url, ul, "%s%s", c->origin, x->resource);
    if (ctype)
        snprintf(x->ct, sizeof x->ct, "Content-Type: %s", ctype);
    picl_status st = request_headers(c, method, x->resource, ctype ? x->ct : NULL, ims, ius, extra, x->lines,
                                     x->h, sizeof x->h / sizeof x->h[0]);
    if (st != PICL_OK)
        return st;
    x->rq = (picl_hx_request){.method = method,
                              .url = x->url,
                              .headers = x->h,
                              .body = body,
                              .body_len = body ? blen : 0,
                              .max_answer = MAX_BODY,
                              .timeout_s = 300L,
                              .spare = &c->spare,
                              .spare_cap = &c->spare_cap};
    return PICL_OK;
}

/* What an exchange's answer (or its failure) leaves in r and c. */
static picl_status exchange_result(picl_stc *c, picl_status st, picl_hx_response *rs, stc_reply *r)
{
    if (st == PICL_OK)
        take_answer(r->res, r, rs);
    else
        snprintf(c->neterr, sizeof c->neterr, "%s", rs->neterr);
    r->too_large = rs->too_large;
    picl__hx_response_free(rs);
    return st;
}

/* One HTTP exchange, no retry.  rel is the path?query below the endpoint,
 * already percent-encoded. */
static picl_status exchange(picl_stc *c, const char *method, const char *rel, const char *ctype,
                            const char *body, size_t blen, int64_t ims, int64_t ius, const char *const *extra,
                            stc_reply *r)
{
    stc_req x;
    picl_hx_response rs;
    memset(&rs, 0, sizeof rs);
    picl_status st = request_build(c, method, rel, ctype, body, blen, ims, ius, extra, &x);
    if (st == PICL_OK) {
        c->requests++;
        st = exchange_result(c, picl__hx_perform(c->curl, &x.rq, &rs), &rs, r);
    }
    picl__hx_response_free(&rs);
    request_free(&x);
    return st;
}

/* ---- the next page, requested ahead --------------------------------------- */

/* Drops a request made ahead that nobody will read (unfinished: aborted). */
static void prefetch_drop(picl_stc *c)
{
    if (!c->pf.active)
        return;
    picl__hx_abort(&c->pf.x);
    picl__hx_response_free(&c->pf.rs);
    free(c->pf.rel);
    free(c->pf.extra);
    c->pf.rel = c->pf.extra = NULL;
    c->pf.active = 0;
}

/* The extra header lines as one string, each followed by '\n' (NULL for
 * want of memory). */
static char *extra_join(const char *const *extra)
{
    size_t n = 1;
    for (const char *const *x = extra; x && *x; x++)
        n += strlen(*x) + 1;
    char *s = malloc(n), *p = s;
    for (const char *const *x = extra; s && x && *x; x++) {
        size_t l = strlen(*x);
        memcpy(p, *x, l);
        p[l] = '\n';
        p += l + 1;
    }
    if (s)
        *p = 0;
    return s;
}

void picl__stc_ahead(picl_stc *c, const char *method, const char *rel, const char *ctype, const char *body,
                     size_t blen, int64_t ims, int64_t ius, const char *const *extra)
{
    prefetch_drop(c);
    if (c->backoff_until > mono_now() || c->node_changed)
        return;
    if (!c->pf.multi)
        c->pf.multi = curl_multi_init();
    if (!c->pf.curl)
        c->pf.curl = curl_easy_init();
    stc_req x;
    memset(&x, 0, sizeof x);
    picl_status st = PICL_ERROR_NO_MEMORY;
    if (!c->pf.multi || !c->pf.curl || !(c->pf.rel = strdup(rel)) || !(c->pf.extra = extra_join(extra)))
        goto done;
    if ((st = request_build(c, method, rel, ctype, body, blen, ims, ius, extra, &x)) == PICL_OK)
        st = picl__hx_begin(&c->pf.x, c->pf.multi, c->pf.curl, &x.rq, &c->pf.rs);
    if (st == PICL_OK) {
        c->requests++;
        c->pf.ims = ims;
        c->pf.ius = ius;
        c->pf.method = method;
        c->pf.ctype = ctype;
        c->pf.body = body;
        c->pf.blen = body ? blen : 0;
        c->pf.active = 1;
    }
done:
    request_free(&x);
    if (st != PICL_OK) {
        picl__hx_response_free(&c->pf.rs);
        free(c->pf.rel);
        free(c->pf.extra);
        c->pf.rel = c->pf.extra = NULL;
    }
}

/* Sends GET rel (with these X-If-* values) now (picl__stc_ahead). */
static void prefetch_start(picl_stc *c, const char *rel, int64_t ims, int64_t ius)
{
    picl__stc_ahead(c, "GET", rel, NULL, NULL, 0, ims, ius, NULL);
}

void picl__stc_pump(picl_stc *c)
{
    if (c && c->pf.active)
        picl__hx_pump(&c->pf.x);
}

/* 1 when the request made ahead is this very request. */
static int ahead_matches(const picl_stc *c, const char *method, const char *rel, const char *ctype,
                         const char *body, size_t blen, int64_t ims, int64_t ius, const char *const *extra)
{
    if (strcmp(method, c->pf.method) || strcmp(rel, c->pf.rel) || ims != c->pf.ims || ius != c->pf.ius ||
        !ctype != !c->pf.ctype || (ctype && strcmp(ctype, c->pf.ctype)) || body != c->pf.body ||
        (body && blen != c->pf.blen))
        return 0;
    const char *p = c->pf.extra;
    for (const char *const *x = extra; x && *x; x++) {
        size_t l = strlen(*x);
        if (strncmp(p, *x, l) || p[l] != '\n')
            return 0;
        p += l + 1;
    }
    return *p == 0;
}

/* The answer of the request made ahead, when it is this very request (else
 * that one is dropped): 1 and r filled as exchange() fills it, *st its
 * status; 0 when there is none to use. */
static int prefetch_take(picl_stc *c, const char *method, const char *rel, const char *ctype,
                         const char *body, size_t blen, int64_t ims, int64_t ius, const char *const *extra,
                         stc_reply *r, picl_status *st)
{
    if (!c->pf.active)
        return 0;
    if (!ahead_matches(c, method, rel, ctype, body, blen, ims, ius, extra)) {
        prefetch_drop(c);
        return 0;
    }
    picl_status hs = picl__hx_end(&c->pf.x, &c->pf.rs);
    *st = exchange_result(c, hs, &c->pf.rs, r);
    free(c->pf.rel);
    free(c->pf.extra);
    c->pf.rel = c->pf.extra = NULL;
    c->pf.active = 0;
    return 1;
}

/* The value of attribute `name` ("ts") of a Hawk challenge into out. */
static int challenge_attr(const char *www, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *p = www; (p = strstr(p, name)) != NULL; p += nl) {
        if ((p != www && p[-1] != ' ' && p[-1] != ',') || strncmp(p + nl, "=\"", 2))
            continue;
        const char *v = p + nl + 2, *e = strchr(v, '"');
        if (!e || (size_t)(e - v) >= cap)
            return 0;
        memcpy(out, v, (size_t)(e - v));
        out[e - v] = 0;
        return 1;
    }
    return 0;
}

/* The server time of a 401's "Hawk ts=..., tsm=..." when the tsm is the
 * HMAC of "hawk.1.ts\n<ts>\n" under our key (only our storage node can
 * make it), else -1. */
static int64_t verified_server_ts(const picl_stc *c, const char *www)
{
    char ts[24], tsm[64], want[PICL_HAWK_B64_BYTES + 1], text[48];
    uint8_t mac[32];
    if (!www || strncmp(www, "Hawk", 4) || !c->key || !challenge_attr(www, "ts", ts, sizeof ts) ||
        !challenge_attr(www, "tsm", tsm, sizeof tsm) || strlen(tsm) != PICL_HAWK_B64_BYTES)
        return -1;
    char *end;
    long long t = strtoll(ts, &end, 10);
    if (*end || end == ts || t <= 0 || t > 100000000000LL)
        return -1;
    int n = snprintf(text, sizeof text, "hawk.1.ts\n%lld\n", t);
    if (picl__hmac_sha256(mac, c->key, strlen(c->key), text, (size_t)n) != PICL_OK)
        return -1;
    picl__base64_encode(want, mac, sizeof mac);
    picl__wipe(mac, sizeof mac);
    return picl__memeq_ct(want, tsm, PICL_HAWK_B64_BYTES) ? (int64_t)t : -1;
}

/* Maps a finished exchange to a status (see the header). */
static picl_status map_status(picl_stc *c, stc_reply *r)
{
    picl_stc_result *res = r->res;
    int s = res->http_status;
    if (res->backoff_s > 0 && s != 409)
        c->backoff_until = mono_now() + (double)res->backoff_s;
    if (s >= 200 && s < 300)
        return PICL_OK;
    if (s == 304) {
        res->not_modified = 1;
        return PICL_OK;
    }
    if (s == 400 && r->body) {
        char *end;
        long v = strtol(r->body, &end, 10);
        if (end != r->body)
            res->error_code = (int)v;
    }
    switch (s) {
    case 400:
        return res->error_code == 14   ? PICL_ERROR_QUOTA
               : res->error_code == 17 ? PICL_ERROR_TOO_LARGE
                                       : PICL_ERROR_INVALID_ARGUMENT;
    case 401:
        return PICL_ERROR_TOKEN;
    case 404:
        return PICL_ERROR_NOT_FOUND;
    case 409:
    case 412:
        return PICL_ERROR_CONFLICT;
    case 413:
        return PICL_ERROR_TOO_LARGE;
    case 415:
        return PICL_ERROR_INVALID_ARGUMENT;
    case 429:
    case 503:
        if (res->backoff_s <= 0)
            note_backoff(res, 60);
        c->backoff_until = mono_now() + (double)res->backoff_s;
        return PICL_ERROR_BACKOFF;
    default:
        return s >= 500 ? PICL_ERROR_SERVER : PICL_ERROR_PROTOCOL;
    }
}

/* A request with the 401 handling (clock skew, then token refresh).  On
 * PICL_OK r->body holds the answer (may be NULL when empty). */
picl_status picl__stc_request(picl_stc *c, const char *method, const char *rel, const char *ctype,
                              const char *body, size_t blen, int64_t ims, int64_t ius,
                              const char *const *extra, stc_reply *r)
{
    int ahead = c->pf.active; /* the first exchange may be the request made ahead */
    if (ahead && (c->backoff_until > mono_now() || c->node_changed))
        prefetch_drop(c);
    if (c->backoff_until > mono_now()) {
        memset(&c->last, 0, sizeof c->last);
        c->last.last_modified = c->last.timestamp = c->last.records = -1;
        c->last.quota_remaining_kb = -1;
        c->last.backoff_s = (int64_t)(c->backoff_until - mono_now()) + 1;
        return PICL_ERROR_BACKOFF;
    }
    if (c->node_changed) {
        /* the user was moved to another node: this client's work is over;
         * the caller starts again against the new node */
        memset(&c->last, 0, sizeof c->last);
        c->last.last_modified = c->last.timestamp = c->last.records = -1;
        c->last.quota_remaining_kb = -1;
        return PICL_ERROR_TOKEN;
    }
    int skew_tried = 0, refreshed = 0;
    for (;;) {
        free(r->body);
        free(r->next_offset);
        free(r->www_auth);
        memset(r, 0, sizeof *r);
        memset(&c->last, 0, sizeof c->last);
        c->last.last_modified = c->last.timestamp = c->last.records = -1;
        c->last.quota_remaining_kb = -1;
        r->res = &c->last;
        picl_status st;
        if (!ahead || !prefetch_take(c, method, rel, ctype, body, blen, ims, ius, extra, r, &st))
            st = exchange(c, method, rel, ctype, body, blen, ims, ius, extra, r);
        ahead = 0;
        if (st != PICL_OK)
            return st;
        st = map_status(c, r);
        if (st != PICL_ERROR_TOKEN)
            return st;
        int64_t now = (int64_t)time(NULL) + c->clock_offset;
        /* a server time we can trust (its tsm is under our key) first */
        int64_t server_ts = verified_server_ts(c, r->www_auth);
        if (!skew_tried && server_ts > 0 && llabs(server_ts - now) > SKEW_RETRY_S) {
            c->clock_offset += server_ts - now;
            skew_tried = 1;
            continue;
        }
        if (!skew_tried && server_ts < 0 && c->last.timestamp >= 0 &&
            llabs(c->last.timestamp / 100 - now) > SKEW_RETRY_S) {
            c->clock_offset += c->last.timestamp / 100 - now;
            skew_tried = 1;
            continue;
        }
        if (c->refresh && !refreshed) {
            char *ep = NULL, *id = NULL, *key = NULL;
            refreshed = 1;
            picl_status rs = c->refresh(c->refresh_ctx, &ep, &id, &key);
            int moved = rs == PICL_OK && ep && strcmp(ep, c->endpoint) != 0;
            if (rs == PICL_OK && ep && id && key && set_endpoint(c, ep) == PICL_OK) {
                clear_creds(c);
                c->id = id;
                c->key = key;
                free(ep);
                if (moved) {
                    /* node reassignment (storage.md 6): never carry a sync
                     * over to another node half-way; abort, the caller
                     * restarts against the new one */
                    c->node_changed = 1;
                    return PICL_ERROR_TOKEN;
                }
                continue;
            }
            free(ep);
            free(id);
            if (key)
                picl__zfree(key, strlen(key));
            return rs == PICL_OK ? PICL_ERROR_TOKEN : rs;
        }
        return PICL_ERROR_TOKEN;
    }
}

void picl__stc_reply_free(stc_reply *r)
{
    free(r->body);
    free(r->next_offset);
    free(r->www_auth);
    memset(r, 0, sizeof *r);
}

picl_status picl__stc_parse_json(stc_reply *r, json_t **out, int want_type)
{
    json_error_t err;
    *out = r->body ? json_loadb(r->body, r->len, JSON_DECODE_ANY, &err) : NULL;
    if (!*out || (want_type >= 0 && (int)json_typeof(*out) != want_type)) {
        json_decref(*out);
        *out = NULL;
        return PICL_ERROR_PROTOCOL;
    }
    return PICL_OK;
}

/* Percent-encodes s (everything but unreserved characters). */
void picl__stc_encode(char *out, size_t cap, const char *s)
{
    static const char hexd[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
            ch == '.' || ch == '_' || ch == '~') {
            out[o++] = (char)ch;
        } else {
            out[o++] = '%';
            out[o++] = hexd[ch >> 4];
            out[o++] = hexd[ch & 15];
        }
    }
    out[o] = 0;
}

/* ---- /info ------------------------------------------------------------ */

picl_status picl__stc_info(picl_stc *c, const char *which, int64_t ims, json_t **out)
{
    *out = NULL;
    static const char *const ok[] = {"collections", "quota", "collection_usage", "collection_counts",
                                     "configuration"};
    int known = 0;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        known |= !strcmp(which, ok[i]);
    if (!known)
        return PICL_ERROR_INVALID_ARGUMENT;
    char rel[64];
    snprintf(rel, sizeof rel, "/info/%s", which);
    stc_reply r = {0};
    picl_status st = picl__stc_request(c, "GET", rel, NULL, NULL, 0, ims, -1, NULL, &r);
    if (st == PICL_OK && !c->last.not_modified)
        st = picl__stc_parse_json(&r, out, -1);
    picl__stc_reply_free(&r);
    return st;
}

picl_status picl__stc_limits(picl_stc *c, picl_stc_limits *out)
{
    if (!c->have_limits) {
        json_t *j;
        picl_status st = picl__stc_info(c, "configuration", -1, &j);
        if (st != PICL_OK)
            return st;
        picl_stc_limits l;
        int64_t *f[] = {&l.max_request_bytes, &l.max_post_records, &l.max_post_bytes,
                        &l.max_total_records, &l.max_total_bytes,  &l.max_record_payload_bytes};
        const char *names[] = {"max_request_bytes", "max_post_records", "max_post_bytes",
                               "max_total_records", "max_total_bytes",  "max_record_payload_bytes"};
        for (size_t i = 0; i < 6; i++) {
            json_t *v = json_object_get(j, names[i]);
            if (!json_is_integer(v) || json_integer_value(v) <= 0) {
                json_decref(j);
                return PICL_ERROR_PROTOCOL;
            }
            *f[i] = json_integer_value(v);
        }
        json_decref(j);
        c->limits = l;
        c->have_limits = 1;
    }
    *out = c->limits;
    return PICL_OK;
}

/* ---- reads ------------------------------------------------------------ */

/* Builds "/storage/<coll>?..." for a query into a malloc()ed string. */
picl_status picl__stc_build_get(const char *coll, const picl_stc_query *q, char **out)
{
    *out = NULL;
    if (q->nids > MAX_IDS || strlen(coll) > 32)
        return PICL_ERROR_INVALID_ARGUMENT;
    size_t cap = 256 + q->nids * (64 * 3 + 1) + (q->offset ? strlen(q->offset) * 3 : 0);
    char *s = malloc(cap), enc[200];
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    picl__stc_encode(enc, sizeof enc, coll);
    size_t o = (size_t)snprintf(s, cap, "/storage/%s", enc);
    char sep = '?';
#define ADD(...) (o += (size_t)snprintf(s + o, cap - o, __VA_ARGS__), sep = '&')
    if (q->full)
        ADD("%cfull=1", sep);
    char ts[PICL_SYNCTIME_BUF];
    if (q->newer >= 0) {
        picl__synctime_format(ts, q->newer);
        ADD("%cnewer=%s", sep, ts);
    }
    if (q->older >= 0) {
        picl__synctime_format(ts, q->older);
        ADD("%colder=%s", sep, ts);
    }
    if (q->limit > 0)
        ADD("%climit=%" PRId64, sep, q->limit);
    if (q->has_as_of) {
        picl__synctime_format(ts, q->as_of);
        ADD("%cas_of=%s", sep, ts);
    }
    if (q->sort)
        ADD("%csort=%s", sep, q->sort);
    if (q->offset) {
        char *e = malloc(strlen(q->offset) * 3 + 1);
        if (!e) {
            free(s);
            return PICL_ERROR_NO_MEMORY;
        }
        picl__stc_encode(e, strlen(q->offset) * 3 + 1, q->offset);
        ADD("%coffset=%s", sep, e);
        free(e);
    }
    if (q->nids) {
        ADD("%cids=", sep);
        for (size_t i = 0; i < q->nids; i++) {
            if (strlen(q->ids[i]) > 64) {
                free(s);
                return PICL_ERROR_INVALID_ARGUMENT;
            }
            picl__stc_encode(enc, sizeof enc, q->ids[i]);
            o += (size_t)snprintf(s + o, cap - o, "%s%s", i ? "," : "", enc);
        }
    }
#undef ADD
    *out = s;
    return PICL_OK;
}

picl_status picl__stc_get(picl_stc *c, const char *coll, const picl_stc_query *q, json_t **items,
                          char **next_offset)
{
    static const picl_stc_query none = {
        .newer = -1, .older = -1, .if_modified_since = -1, .if_unmodified_since = -1};
    if (!q)
        q = &none;
    *items = NULL;
    if (next_offset)
        *next_offset = NULL;
    char *rel;
    picl_status st = picl__stc_build_get(coll, q, &rel);
    if (st != PICL_OK)
        return st;
    stc_reply r = {0};
    st = picl__stc_request(c, "GET", rel, NULL, NULL, 0, q->if_modified_since, q->if_unmodified_since, NULL,
                           &r);
    free(rel);
    if (st == PICL_OK && r.bad_offset)
        st = PICL_ERROR_PROTOCOL;
    if (st == PICL_OK && !c->last.not_modified)
        st = picl__stc_parse_json(&r, items, JSON_ARRAY);
    if (st != PICL_OK) {
        json_decref(*items);
        *items = NULL;
    }
    if (st == PICL_OK && next_offset) {
        *next_offset = r.next_offset;
        r.next_offset = NULL;
    }
    if (r.body && r.cap > c->spare_cap && r.cap <= MAX_SPARE) {
        /* parsed: the buffer serves the next answer (a listing's pages are
         * alike in size: no new block to grow and fault in each time) */
        free(c->spare);
        c->spare = r.body;
        c->spare_cap = r.cap;
        r.body = NULL;
    }
    picl__stc_reply_free(&r);
    return st;
}

/* A listing page read into views (storage_client_list.h), its body kept
 * for them until page_release. */
typedef struct stc_page {
    picl_bso_list list;
    char *body;
    size_t cap;
    int present; /* an answer with a list (not a 304) */
} stc_page;

static void page_release(picl_stc *c, stc_page *pg)
{
    picl__bso_list_free(&pg->list);
    if (pg->body && pg->cap > c->spare_cap && pg->cap <= MAX_SPARE) {
        free(c->spare); /* the buffer serves a later answer */
        c->spare = pg->body;
        c->spare_cap = pg->cap;
    } else {
        free(pg->body);
    }
    memset(pg, 0, sizeof *pg);
}

/* picl__stc_get into views. */
static picl_status get_page(picl_stc *c, const char *coll, const picl_stc_query *q, stc_page *pg,
                            char **next_offset)
{
    memset(pg, 0, sizeof *pg);
    *next_offset = NULL;
    char *rel;
    picl_status st = picl__stc_build_get(coll, q, &rel);
    if (st != PICL_OK)
        return st;
    stc_reply r = {0};
    st = picl__stc_request(c, "GET", rel, NULL, NULL, 0, q->if_modified_since, q->if_unmodified_since, NULL,
                           &r);
    free(rel);
    if (st == PICL_OK && r.bad_offset)
        st = PICL_ERROR_PROTOCOL;
    if (st == PICL_OK && !c->last.not_modified) {
        st = picl__bso_list_parse(r.body, r.len, &pg->list);
        if (st == PICL_OK) {
            pg->present = 1;
            pg->body = r.body;
            pg->cap = r.cap;
            r.body = NULL;
        }
    }
    if (st == PICL_OK) {
        *next_offset = r.next_offset;
        r.next_offset = NULL;
    } else {
        page_release(c, pg);
    }
    picl__stc_reply_free(&r);
    return st;
}

/* The paging loop of get_all and download.  strict: every page must carry
 * X-Last-Modified and an X-Weave-Records equal to its item count; the first
 * page's X-Last-Modified goes to *listed (may be NULL).  fn NULL: the items
 * into *items; else each page to fn as views, the next page requested
 * before fn runs (*items stays NULL). */
static picl_status list_pages(picl_stc *c, const char *coll, const picl_stc_query *q, size_t max_items,
                              int strict, json_t **items, int64_t *listed, picl_stc_page_fn fn, void *ctx)
{
    *items = NULL;
    picl_stc_query page = *q;
    if (page.limit <= 0)
        page.limit = DEFAULT_PAGE;
    if (!max_items)
        max_items = 1000000;
    json_t *all = fn ? NULL : json_array();
    if (!fn && !all)
        return PICL_ERROR_NO_MEMORY;
    char *offset = NULL;
    picl_status st;
    int first = 1;
    size_t count = 0;
    for (size_t pages = 0;; pages++) {
        json_t *part = NULL;
        stc_page pg;
        memset(&pg, 0, sizeof pg);
        char *next = NULL;
        if (pages == PICL_STC_MAX_PAGES) {
            /* a server that pages forever ends the listing with an error */
            st = PICL_ERROR_PROTOCOL;
            break;
        }
        page.offset = offset;
        if (fn)
            st = get_page(c, coll, &page, &pg, &next);
        else
            st = picl__stc_get(c, coll, &page, &part, &next);
        int have = fn ? pg.present : part != NULL;
        size_t got = fn ? pg.list.n : json_array_size(part);
        if (st == PICL_OK && next && (!have || !got || (offset && !strcmp(next, offset)))) {
            /* "more" without progress: an empty page, or the same offset again */
            free(next);
            next = NULL;
            have = 0;
            st = PICL_ERROR_PROTOCOL;
        }
        if (st == PICL_OK && strict && have &&
            (c->last.last_modified < 0 || c->last.records < 0 ||
             (uint64_t)c->last.records != (uint64_t)got)) {
            /* an answer that does not say what it holds cannot move a cursor */
            have = 0;
            st = PICL_ERROR_PROTOCOL;
        }
        free(offset);
        offset = next;
        if (st == PICL_OK && have && first) {
            if (listed)
                *listed = c->last.last_modified;
            /* later pages must see the same state */
            page.if_unmodified_since = c->last.last_modified;
            page.if_modified_since = -1;
            first = 0;
        }
        if (st == PICL_OK && have && count + got > max_items)
            st = PICL_ERROR_TOO_LARGE;
        if (st == PICL_OK && have) {
            count += got;
            if (fn) {
                char *rel = NULL;
                page.offset = offset;
                if (offset && picl__stc_build_get(coll, &page, &rel) == PICL_OK)
                    prefetch_start(c, rel, page.if_modified_since, page.if_unmodified_since);
                free(rel);
                st = fn(ctx, pg.list.items, got);
            } else if (json_array_extend(all, part) != 0) {
                st = PICL_ERROR_NO_MEMORY;
            }
        }
        json_decref(part);
        page_release(c, &pg);
        if (st != PICL_OK || !have || !offset)
            break;
    }
    free(offset);
    prefetch_drop(c); /* a listing that ended early leaves none behind */
    if (st != PICL_OK) {
        json_decref(all);
        return st;
    }
    *items = all;
    return PICL_OK;
}

picl_status picl__stc_get_all(picl_stc *c, const char *coll, const picl_stc_query *q, size_t max_items,
                              json_t **items)
{
    return list_pages(c, coll, q, max_items, 0, items, NULL, NULL, NULL);
}

/* What the completeness probe needs of the pages, gathered as they pass. */
typedef struct dl_track {
    picl_stc_page_fn fn;
    void *ctx;
    int64_t top;   /* the newest "modified" seen */
    size_t at_top; /* how many records carry it */
    json_t *tail;  /* ids of the trailing run of records at top */
    size_t n;
    int bad; /* a BSO without a valid modified or id */
} dl_track;

static picl_status dl_add(dl_track *t, const char *id, int64_t m)
{
    t->n++;
    if (m < 0 || !id) {
        t->bad = 1;
        return PICL_OK;
    }
    if (m > t->top) {
        t->top = m;
        t->at_top = 0;
    }
    if (m == t->top) {
        t->at_top++;
        return json_object_set_new(t->tail, id, json_true()) == 0 ? PICL_OK : PICL_ERROR_NO_MEMORY;
    }
    json_object_clear(t->tail); /* oldest first: an older one ends the run */
    return PICL_OK;
}

static picl_status dl_page(void *ctx, const picl_bso_view *items, size_t n)
{
    dl_track *t = ctx;
    for (size_t i = 0; i < n; i++) {
        picl_status st = dl_add(t, items[i].id, items[i].modified);
        if (st != PICL_OK)
            return st;
    }
    return t->fn ? t->fn(t->ctx, items, n) : PICL_OK;
}

/* After a listing whose first page said lm: the checks of a complete
 * download (see the header). */
static picl_status download_complete(picl_stc *c, const char *coll, const dl_track *t, int64_t lm)
{
    if (lm < 0 || t->bad)
        return PICL_ERROR_PROTOCOL;
    if (!t->n)
        return PICL_OK;
    /* Completeness: oldest first, so what came is a prefix of the listing.
     * Ask for the records at or after the newest one received, one more
     * than we hold there: an id we do not have means the listing ended
     * early (a lost X-Weave-Next-Offset, a cut page).  The ids held are
     * those of the last records, at the newest time (a batch shares one
     * timestamp: looking each probe id up by a scan was quadratic). */
    picl_stc_query pq = {0};
    pq.newer = t->top > 0 ? t->top - 1 : 0;
    pq.older = -1;
    pq.limit = (int64_t)t->at_top + 1;
    pq.sort = "oldest";
    pq.if_modified_since = -1;
    pq.if_unmodified_since = lm;
    char *next = NULL;
    json_t *probe = NULL;
    picl_status st = picl__stc_get(c, coll, &pq, &probe, &next);
    free(next);
    if (st == PICL_OK && !probe)
        st = PICL_ERROR_PROTOCOL;
    json_t *pid;
    size_t k;
    json_array_foreach (st == PICL_OK ? probe : NULL, k, pid) {
        const char *want = json_string_value(pid);
        if (!want || !json_object_get(t->tail, want)) {
            st = PICL_ERROR_PROTOCOL;
            break;
        }
    }
    json_decref(probe);
    return st;
}

static picl_stc_query download_query(int64_t newer)
{
    picl_stc_query q = {0};
    q.newer = newer;
    q.older = -1;
    q.full = 1;
    q.limit = DEFAULT_PAGE;
    q.sort = "oldest";
    q.if_modified_since = q.if_unmodified_since = -1;
    return q;
}

picl_status picl__stc_download_each(picl_stc *c, const char *coll, int64_t newer, size_t max_items,
                                    picl_stc_page_fn fn, void *ctx, int64_t *listed)
{
    *listed = -1;
    picl_stc_query q = download_query(newer);
    json_t *none = NULL;
    int64_t lm = -1;
    dl_track t = {.fn = fn, .ctx = ctx, .top = -1, .tail = json_object()};
    picl_status st = PICL_ERROR_NO_MEMORY;
    if (t.tail)
        st = list_pages(c, coll, &q, max_items, 1, &none, &lm, dl_page, &t);
    if (st == PICL_OK)
        st = download_complete(c, coll, &t, lm);
    if (st == PICL_OK)
        *listed = lm;
    json_decref(t.tail);
    json_decref(none);
    return st;
}

picl_status picl__stc_download(picl_stc *c, const char *coll, int64_t newer, size_t max_items, json_t **items,
                               int64_t *listed)
{
    *items = NULL;
    *listed = -1;
    picl_stc_query q = download_query(newer);
    json_t *all = NULL;
    int64_t lm = -1;
    dl_track t = {.top = -1, .tail = json_object()};
    picl_status st = PICL_ERROR_NO_MEMORY;
    if (t.tail)
        st = list_pages(c, coll, &q, max_items, 1, &all, &lm, NULL, NULL);
    size_t i;
    json_t *b;
    json_array_foreach (st == PICL_OK ? all : NULL, i, b) {
        st = dl_add(&t, json_string_value(json_object_get(b, "id")),
                    picl__synctime_from_json(json_object_get(b, "modified"), -1));
        if (st != PICL_OK)
            break;
    }
    if (st == PICL_OK)
        st = download_complete(c, coll, &t, lm);
    if (st == PICL_OK) {
        *items = all;
        *listed = lm;
        all = NULL;
    }
    json_decref(t.tail);
    picl__json_zdecref(all);
    return st;
}

picl_status picl__stc_get_item(picl_stc *c, const char *coll, const char *id, json_t **bso)
{
    *bso = NULL;
    char rel[512], ec[128], ei[256];
    if (strlen(coll) > 32 || strlen(id) > 64)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl__stc_encode(ec, sizeof ec, coll);
    picl__stc_encode(ei, sizeof ei, id);
    snprintf(rel, sizeof rel, "/storage/%s/%s", ec, ei);
    stc_reply r = {0};
    picl_status st = picl__stc_request(c, "GET", rel, NULL, NULL, 0, -1, -1, NULL, &r);
    if (st == PICL_OK)
        st = picl__stc_parse_json(&r, bso, JSON_OBJECT);
    picl__stc_reply_free(&r);
    return st;
}

uint64_t picl__stc_request_count(const picl_stc *c) { return c ? c->requests : 0; }

void picl__stc_describe(const picl_stc *c, picl_status st, char *out, size_t cap)
{
    const picl_stc_result *l = &c->last;
    const char *ep = c->endpoint ? c->endpoint : "?";
    if (st == PICL_ERROR_NETWORK)
        snprintf(out, cap, "cannot reach the storage server %s: %s", ep,
                 *c->neterr ? c->neterr : "no answer");
    else if (st == PICL_ERROR_BACKOFF && l->http_status)
        snprintf(out, cap, "the storage server %s is unavailable (HTTP %d); try again in %lld s", ep,
                 l->http_status, (long long)l->backoff_s);
    else if (st == PICL_ERROR_BACKOFF)
        snprintf(out, cap, "the storage server %s asked to wait %lld s before the next request", ep,
                 (long long)l->backoff_s);
    else if (st == PICL_ERROR_SERVER)
        snprintf(out, cap, "the storage server %s failed (HTTP %d)", ep, l->http_status);
    else if (st == PICL_ERROR_PROTOCOL)
        snprintf(out, cap, "the storage server %s sent an answer that does not follow the protocol (HTTP %d)",
                 ep, l->http_status);
    else if (l->http_status)
        snprintf(out, cap, "the storage server %s answered HTTP %d: %s", ep, l->http_status,
                 picl_strerror(st));
    else
        snprintf(out, cap, "storage server %s: %s", ep, picl_strerror(st));
}
