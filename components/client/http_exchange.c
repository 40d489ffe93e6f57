/* SPDX-License-Identifier: MPL-2.0 */
/* http_exchange.c -- one HTTP exchange through libcurl (see http_exchange.h). */
#include "client/http_exchange.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crypto/alloc.h"
#include "crypto/util.h"
#include "protocol/synctime.h"

typedef struct hx_sink {
    picl_hx_response *rs;
    size_t max;
    char **spare; /* the request's spare buffer (see picl_hx_request) */
    size_t *spare_cap;
} hx_sink;

static void response_init(picl_hx_response *rs)
{
    memset(rs, 0, sizeof *rs);
    rs->last_modified = rs->weave_timestamp = rs->weave_backoff_s = rs->retry_after_s = -1;
    rs->records = rs->quota_remaining_kb = -1;
}

void picl__hx_response_free(picl_hx_response *rs)
{
    if (rs->body)
        picl__zfree(rs->body, rs->cap);
    free(rs->www_auth);
    free(rs->next_offset);
    response_init(rs);
}

/* The buffer size that holds len bytes + NUL: a power of two (at least 4 KiB,
 * at most max + 1), so a large answer is copied O(log n) times as it grows. */
static size_t body_cap(size_t len, size_t max)
{
    size_t c = 4096;
    while (c < len + 1 && c <= max)
        c *= 2;
    return c < max + 1 ? c : max + 1;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    hx_sink *s = ud;
    picl_hx_response *rs = s->rs;
    size_t n = size * nmemb;
    if (rs->len + n > s->max) {
        rs->too_large = 1;
        return 0;
    }
    if (!rs->body && s->spare && *s->spare) {
        rs->body = *s->spare; /* taken: the answer owns it now */
        rs->cap = *s->spare_cap;
        *s->spare = NULL;
        *s->spare_cap = 0;
    }
    if (!rs->body || rs->len + n + 1 > rs->cap) {
        size_t cap = body_cap(rs->len + n, s->max);
        char *p = malloc(cap);
        if (!p)
            return 0;
        if (rs->body) {
            memcpy(p, rs->body, rs->len);
            picl__zfree(rs->body, rs->cap); /* not realloc: the old block is wiped */
        }
        rs->body = p;
        rs->cap = cap;
    }
    memcpy(rs->body + rs->len, ptr, n);
    rs->len += n;
    rs->body[rs->len] = 0;
    return n;
}

/* A header number as centis (-1 when malformed). */
static int64_t header_centis(const char *v, size_t n)
{
    int64_t x = -1;
    return picl__synctime_parse(v, n, &x) == PICL_OK ? x : -1;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    picl_hx_response *rs = ((hx_sink *)ud)->rs;
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
    int64_t x = header_centis(v, vl);
#define IS(name) (nl == sizeof name - 1 && !strncasecmp(ptr, name, nl))
    if (IS("X-Last-Modified"))
        rs->last_modified = x;
    else if (IS("X-Weave-Timestamp"))
        rs->weave_timestamp = x;
    else if (IS("X-Weave-Backoff"))
        rs->weave_backoff_s = x < 0 ? -1 : x / 100;
    else if (IS("Retry-After"))
        rs->retry_after_s = x < 0 ? -1 : x / 100;
    else if (IS("X-Weave-Records"))
        rs->records = x < 0 ? -1 : x / 100;
    else if (IS("X-Weave-Quota-Remaining"))
        rs->quota_remaining_kb = x < 0 ? -1 : x / 100;
    else if (IS("WWW-Authenticate") && vl < PICL_HX_MAX_WWW_AUTH) {
        free(rs->www_auth);
        rs->www_auth = strndup(v, vl);
    } else if (IS("X-Weave-Next-Offset")) {
        free(rs->next_offset);
        rs->has_next_offset = 1;
        rs->next_offset = vl && vl < PICL_HX_MAX_OFFSET ? strndup(v, vl) : NULL;
    }
#undef IS
    return n;
}

/* The request's header list: the caller's lines plus the fixed ones. */
static struct curl_slist *header_list(const picl_hx_request *rq)
{
    struct curl_slist *hl = NULL, *t;
    static const char *const fixed[] = {"Accept: application/json", "Expect:"};
    for (const char *const *x = rq->headers; x && *x; x++) {
        if (!(t = curl_slist_append(hl, *x)))
            goto fail;
        hl = t;
    }
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (!(t = curl_slist_append(hl, fixed[i])))
            goto fail;
        hl = t;
    }
    return hl;
fail:
    curl_slist_free_all(hl);
    return NULL;
}

/* Sets h up for rq (reset first); *hl receives the header list (the
 * caller frees it once the exchange is over). */
static picl_status setup(CURL *h, const picl_hx_request *rq, hx_sink *sink, struct curl_slist **hl)
{
    *hl = header_list(rq);
    if (!*hl)
        return PICL_ERROR_NO_MEMORY;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, rq->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, PICL_HX_PROTOCOLS);
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    if (rq->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
    } else if (!strcmp(rq->method, "GET")) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, sink);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, PICL_HX_CONNECT_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, rq->timeout_s);
    return PICL_OK;
}

/* The outcome of a finished transfer (the header list goes: it held the
 * Authorization value, not a secret once sent, but the caller's copy is
 * wiped and this one goes with it). */
static picl_status finish(CURL *h, struct curl_slist *hl, CURLcode cc, picl_hx_response *rs)
{
    curl_slist_free_all(hl);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    if (cc != CURLE_OK) {
        snprintf(rs->neterr, sizeof rs->neterr, "%s", curl_easy_strerror(cc));
        return rs->too_large ? PICL_ERROR_TOO_LARGE : PICL_ERROR_NETWORK;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &rs->status);
    return PICL_OK;
}

picl_status picl__hx_perform(CURL *h, const picl_hx_request *rq, picl_hx_response *rs)
{
    response_init(rs);
    hx_sink sink = {rs, rq->max_answer, rq->spare, rq->spare_cap};
    struct curl_slist *hl;
    picl_status st = setup(h, rq, &sink, &hl);
    if (st != PICL_OK)
        return st;
    return finish(h, hl, curl_easy_perform(h), rs);
}

picl_status picl__hx_begin(picl_hx_xfer *x, CURLM *m, CURL *h, const picl_hx_request *rq,
                           picl_hx_response *rs)
{
    memset(x, 0, sizeof *x);
    response_init(rs);
    struct curl_slist *hl = NULL;
    picl_status st = PICL_ERROR_NO_MEMORY;
    hx_sink *sink = malloc(sizeof *sink);
    if (!sink)
        goto done;
    *sink = (hx_sink){rs, rq->max_answer, rq->spare, rq->spare_cap};
    if ((st = setup(h, rq, sink, &hl)) != PICL_OK)
        goto done;
    if (curl_multi_add_handle(m, h) != CURLM_OK) {
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    x->m = m;
    x->h = h;
    x->hl = hl;
    x->sink = sink;
    hl = NULL;
    sink = NULL;
    picl__hx_pump(x);
done:
    curl_slist_free_all(hl);
    free(sink);
    return st;
}

void picl__hx_pump(picl_hx_xfer *x)
{
    if (!x->m || x->done)
        return;
    int running = 0;
    if (curl_multi_perform(x->m, &running) != CURLM_OK) {
        x->done = 1;
        x->result = CURLE_FAILED_INIT;
        return;
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(x->m, &left)) != NULL)
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == x->h) {
            x->done = 1;
            x->result = msg->data.result;
        }
}

/* Takes h out of the multi handle, frees what the exchange held. */
static void detach(picl_hx_xfer *x)
{
    curl_multi_remove_handle(x->m, x->h);
    free(x->sink);
    x->sink = NULL;
    x->m = NULL;
}

picl_status picl__hx_end(picl_hx_xfer *x, picl_hx_response *rs)
{
    while (!x->done) {
        if (curl_multi_poll(x->m, NULL, 0, 1000, NULL) != CURLM_OK) {
            x->done = 1;
            x->result = CURLE_FAILED_INIT;
            break;
        }
        picl__hx_pump(x);
    }
    CURL *h = x->h;
    struct curl_slist *hl = x->hl;
    detach(x);
    return finish(h, hl, x->result, rs);
}

void picl__hx_abort(picl_hx_xfer *x)
{
    if (!x->m)
        return;
    CURL *h = x->h;
    struct curl_slist *hl = x->hl;
    detach(x);
    curl_slist_free_all(hl);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
}

picl_status picl__hx_hawk_line(char **out, const char *id, const void *key, size_t keylen,
                               const picl_hawk_request *hr, int64_t now)
{
    char *hawk = NULL;
    *out = NULL;
    picl_status st = picl__hawk_client_header(&hawk, id, key, keylen, hr, now, NULL, NULL);
    if (st != PICL_OK)
        return st;
    size_t n = strlen(hawk) + sizeof "Authorization: ";
    char *line = malloc(n);
    if (line)
        snprintf(line, n, "Authorization: %s", hawk);
    picl__zfree(hawk, strlen(hawk));
    *out = line;
    return line ? PICL_OK : PICL_ERROR_NO_MEMORY;
}
