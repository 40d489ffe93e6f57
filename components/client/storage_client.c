/* storage_client.c -- libcurl client of a SyncStorage 1.5 server (see storage_client.h). */
#include "client/storage_client_internal.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "crypto/util.h"
#include "protocol/hawk.h"

#define MAX_BODY ((size_t)512 * 1024 * 1024)
#define MAX_IDS 100
#define DEFAULT_PAGE 1000
#define SKEW_RETRY_S 30

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- endpoint and credentials ----------------------------------------- */

static picl_status set_endpoint(picl_stc *c, const char *endpoint)
{
    const char *p;
    if (!strncmp(endpoint, "http://", 7))
        p = endpoint + 7;
    else if (!strncmp(endpoint, "https://", 8))
        p = endpoint + 8;
    else
        return PICL_ERROR_INVALID_ARGUMENT;
    const char *slash = strchr(p, '/');
    if (!slash)
        return PICL_ERROR_INVALID_ARGUMENT;
    size_t auth_len = (size_t)(slash - p);
    const char *colon = memchr(p, ':', auth_len);
    size_t hl = colon ? (size_t)(colon - p) : auth_len;
    if (!hl || hl >= sizeof c->host)
        return PICL_ERROR_INVALID_ARGUMENT;
    unsigned port = endpoint[4] == 's' ? 443 : 80;
    if (colon) {
        char *end;
        unsigned long v = strtoul(colon + 1, &end, 10);
        if (end != slash || v == 0 || v > 65535)
            return PICL_ERROR_INVALID_ARGUMENT;
        port = (unsigned)v;
    }
    char *origin = strndup(endpoint, (size_t)(slash - endpoint));
    char *base = strdup(slash);
    char *ep = strdup(endpoint);
    if (!origin || !base || !ep) {
        free(origin);
        free(base);
        free(ep);
        return PICL_ERROR_NO_MEMORY;
    }
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/')
        base[--bl] = 0;
    free(c->origin);
    free(c->base_path);
    free(c->endpoint);
    c->origin = origin;
    c->base_path = base;
    c->endpoint = ep;
    memcpy(c->host, p, hl);
    c->host[hl] = 0;
    c->port = port;
    return PICL_OK;
}

static void clear_creds(picl_stc *c)
{
    free(c->id);
    if (c->key)
        picl__zfree(c->key, strlen(c->key));
    c->id = c->key = NULL;
}

picl_status picl__stc_new(picl_stc **out, const char *api_endpoint, const char *id,
                          const char *key)
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

void picl__stc_free(picl_stc *c)
{
    if (!c)
        return;
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

const picl_stc_result *picl__stc_last(const picl_stc *c)
{
    return &c->last;
}

int64_t picl__stc_clock_offset(const picl_stc *c)
{
    return c->clock_offset;
}

void picl__stc_set_clock_offset(picl_stc *c, int64_t offset)
{
    c->clock_offset = offset;
}

void picl__stc_clear_backoff(picl_stc *c)
{
    c->backoff_until = 0;
}

/* ---- HTTP ------------------------------------------------------------- */

static int parse_centis(const char *v, size_t n, int64_t *out)
{
    int64_t s = 0, f = 0;
    size_t i = 0, fd = 0;
    if (!n)
        return 0;
    for (; i < n && v[i] >= '0' && v[i] <= '9'; i++)
        s = s * 10 + (v[i] - '0');
    if (i < n && v[i] == '.') {
        for (i++; i < n && v[i] >= '0' && v[i] <= '9'; i++, fd++)
            if (fd < 2)
                f = f * 10 + (v[i] - '0');
        if (fd == 1)
            f *= 10;
    }
    if (i != n || i > 24)
        return 0;
    *out = s * 100 + f;
    return 1;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    stc_reply *r = ud;
    size_t n = size * nmemb;
    const char *colon = memchr(ptr, ':', n);
    if (!colon)
        return n;
    size_t nl = (size_t)(colon - ptr);
    const char *v = colon + 1;
    size_t vl = n - nl - 1;
    while (vl && (*v == ' ' || *v == '\t'))
        v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
        vl--;
    int64_t x;
#define IS(name) (nl == sizeof name - 1 && !strncasecmp(ptr, name, nl))
    if (IS("X-Last-Modified") && parse_centis(v, vl, &x))
        r->res->last_modified = x;
    else if (IS("X-Weave-Timestamp") && parse_centis(v, vl, &x))
        r->res->timestamp = x;
    else if ((IS("X-Weave-Backoff") || IS("Retry-After")) && parse_centis(v, vl, &x) &&
             x / 100 > r->res->backoff_s)
        r->res->backoff_s = x / 100;
    else if (IS("X-Weave-Records") && parse_centis(v, vl, &x))
        r->res->records = x / 100;
    else if (IS("X-Weave-Quota-Remaining") && parse_centis(v, vl, &x))
        r->res->quota_remaining_kb = x / 100;
    else if (IS("X-Weave-Next-Offset") && vl && vl < 1024) {
        free(r->next_offset);
        r->next_offset = strndup(v, vl);
    }
#undef IS
    return n;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    stc_reply *r = ud;
    size_t n = size * nmemb;
    if (r->len + n > MAX_BODY) {
        r->too_large = 1;
        return 0;
    }
    char *p = realloc(r->body, r->len + n + 1);
    if (!p)
        return 0;
    memcpy(p + r->len, ptr, n);
    r->len += n;
    p[r->len] = 0;
    r->body = p;
    return n;
}

static void fmt_ts(char *out, size_t cap, int64_t centis)
{
    snprintf(out, cap, "%" PRId64 ".%02d", centis / 100, (int)(centis % 100));
}

/* One HTTP exchange, no retry.  rel is the path?query below the endpoint,
 * already percent-encoded. */
static picl_status exchange(picl_stc *c, const char *method, const char *rel, const char *ctype,
                            const char *body, size_t blen, int64_t ims, int64_t ius,
                            const char *const *extra, stc_reply *r)
{
    picl_status st = PICL_OK;
    char *resource = NULL, *url = NULL, *auth = NULL, *hawk = NULL;
    struct curl_slist *hl = NULL;
    size_t rl = strlen(c->base_path) + strlen(rel) + 1;
    resource = malloc(rl);
    size_t ul = strlen(c->origin) + rl;
    url = malloc(ul);
    if (!resource || !url) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    snprintf(resource, rl, "%s%s", c->base_path, rel);
    snprintf(url, ul, "%s%s", c->origin, resource);
    picl_hawk_request hr = {.method = method, .resource = resource, .host = c->host,
                            .port = c->port, .content_type = NULL};
    st = picl__hawk_client_header(&hawk, c->id, c->key, strlen(c->key), &hr,
                                  (int64_t)time(NULL) + c->clock_offset, NULL, NULL);
    if (st != PICL_OK)
        goto done;
    size_t al = strlen(hawk) + 32;
    if (!(auth = malloc(al))) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    snprintf(auth, al, "Authorization: %s", hawk);
    hl = curl_slist_append(hl, auth);
    char h1[96], h2[96], ct[128];
    if (ims >= 0) {
        char ts[40];
        fmt_ts(ts, sizeof ts, ims);
        snprintf(h1, sizeof h1, "X-If-Modified-Since: %s", ts);
        hl = curl_slist_append(hl, h1);
    }
    if (ius >= 0) {
        char ts[40];
        fmt_ts(ts, sizeof ts, ius);
        snprintf(h2, sizeof h2, "X-If-Unmodified-Since: %s", ts);
        hl = curl_slist_append(hl, h2);
    }
    if (ctype) {
        snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
        hl = curl_slist_append(hl, ct);
    }
    hl = curl_slist_append(hl, "Accept: application/json");
    hl = curl_slist_append(hl, "Expect:");
    for (const char *const *x = extra; x && *x; x++)
        hl = curl_slist_append(hl, *x);
    if (!hl) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    CURL *h = c->curl;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 300L);
    c->requests++;
    CURLcode cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        st = r->too_large ? PICL_ERROR_TOO_LARGE : PICL_ERROR_NETWORK;
        goto done;
    }
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    r->res->http_status = (int)code;
done:
    curl_slist_free_all(hl);
    if (auth)
        picl__zfree(auth, strlen(auth));
    free(hawk);
    free(resource);
    free(url);
    return st;
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
        return res->error_code == 14 ? PICL_ERROR_QUOTA
               : res->error_code == 17 ? PICL_ERROR_TOO_LARGE
                                       : PICL_ERROR_INVALID_ARGUMENT;
    case 401: return PICL_ERROR_TOKEN;
    case 404: return PICL_ERROR_NOT_FOUND;
    case 409:
    case 412: return PICL_ERROR_CONFLICT;
    case 413: return PICL_ERROR_TOO_LARGE;
    case 415: return PICL_ERROR_INVALID_ARGUMENT;
    case 429:
    case 503:
        if (res->backoff_s <= 0)
            res->backoff_s = 60;
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
    if (c->backoff_until > mono_now()) {
        memset(&c->last, 0, sizeof c->last);
        c->last.last_modified = c->last.timestamp = c->last.records = -1;
        c->last.quota_remaining_kb = -1;
        c->last.backoff_s = (int64_t)(c->backoff_until - mono_now()) + 1;
        return PICL_ERROR_BACKOFF;
    }
    int skew_tried = 0, refreshed = 0;
    for (;;) {
        free(r->body);
        free(r->next_offset);
        memset(r, 0, sizeof *r);
        memset(&c->last, 0, sizeof c->last);
        c->last.last_modified = c->last.timestamp = c->last.records = -1;
        c->last.quota_remaining_kb = -1;
        r->res = &c->last;
        picl_status st = exchange(c, method, rel, ctype, body, blen, ims, ius, extra, r);
        if (st != PICL_OK)
            return st;
        st = map_status(c, r);
        if (st != PICL_ERROR_TOKEN)
            return st;
        int64_t now = (int64_t)time(NULL) + c->clock_offset;
        if (!skew_tried && c->last.timestamp >= 0 &&
            llabs(c->last.timestamp / 100 - now) > SKEW_RETRY_S) {
            c->clock_offset += c->last.timestamp / 100 - now;
            skew_tried = 1;
            continue;
        }
        if (c->refresh && !refreshed) {
            char *ep = NULL, *id = NULL, *key = NULL;
            refreshed = 1;
            picl_status rs = c->refresh(c->refresh_ctx, &ep, &id, &key);
            if (rs == PICL_OK && ep && id && key && set_endpoint(c, ep) == PICL_OK) {
                clear_creds(c);
                c->id = id;
                c->key = key;
                free(ep);
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
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
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
    static const char *const ok[] = {"collections", "quota", "collection_usage",
                                     "collection_counts", "configuration"};
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
                        &l.max_total_records, &l.max_total_bytes, &l.max_record_payload_bytes};
        const char *names[] = {"max_request_bytes", "max_post_records", "max_post_bytes",
                               "max_total_records", "max_total_bytes", "max_record_payload_bytes"};
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
    if (q->newer >= 0)
        ADD("%cnewer=%" PRId64 ".%02d", sep, q->newer / 100, (int)(q->newer % 100));
    if (q->older >= 0)
        ADD("%colder=%" PRId64 ".%02d", sep, q->older / 100, (int)(q->older % 100));
    if (q->limit > 0)
        ADD("%climit=%" PRId64, sep, q->limit);
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

picl_status picl__stc_get(picl_stc *c, const char *coll, const picl_stc_query *q,
                          json_t **items, char **next_offset)
{
    static const picl_stc_query none = {.newer = -1, .older = -1, .if_modified_since = -1,
                                        .if_unmodified_since = -1};
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
    st = picl__stc_request(c, "GET", rel, NULL, NULL, 0, q->if_modified_since, q->if_unmodified_since,
                 NULL, &r);
    free(rel);
    if (st == PICL_OK && !c->last.not_modified)
        st = picl__stc_parse_json(&r, items, JSON_ARRAY);
    if (st == PICL_OK && next_offset) {
        *next_offset = r.next_offset;
        r.next_offset = NULL;
    }
    picl__stc_reply_free(&r);
    return st;
}

picl_status picl__stc_get_all(picl_stc *c, const char *coll, const picl_stc_query *q,
                              size_t max_items, json_t **items)
{
    *items = NULL;
    picl_stc_query page = *q;
    if (page.limit <= 0)
        page.limit = DEFAULT_PAGE;
    if (!max_items)
        max_items = 1000000;
    json_t *all = json_array();
    if (!all)
        return PICL_ERROR_NO_MEMORY;
    char *offset = NULL;
    picl_status st;
    int first = 1;
    for (;;) {
        json_t *part = NULL;
        char *next = NULL;
        page.offset = offset;
        st = picl__stc_get(c, coll, &page, &part, &next);
        free(offset);
        offset = next;
        if (st != PICL_OK || !part)
            break;
        if (first) {
            /* later pages must see the same state */
            page.if_unmodified_since = c->last.last_modified;
            page.if_modified_since = -1;
            first = 0;
        }
        if (json_array_size(all) + json_array_size(part) > max_items) {
            json_decref(part);
            st = PICL_ERROR_TOO_LARGE;
            break;
        }
        json_array_extend(all, part);
        json_decref(part);
        if (!offset)
            break;
    }
    free(offset);
    if (st != PICL_OK) {
        json_decref(all);
        return st;
    }
    *items = all;
    return PICL_OK;
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


uint64_t picl__stc_request_count(const picl_stc *c)
{
    return c ? c->requests : 0;
}
