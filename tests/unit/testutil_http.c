/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_http.c -- test helpers for the HTTP servers (see testutil_http.h). */
#include "testutil_http.h"

#include <check.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "crypto/util.h"
#include "protocol/hawk.h"
#include "protocol/hostport.h"
#include "protocol/tokenlib.h"

void tu_mint(tu_cred *c, const uint8_t *secret, size_t secretlen, const char *node, int64_t uid,
             int64_t expires_in)
{
    picl_tokenlib_payload p;
    memset(&p, 0, sizeof p);
    p.uid = uid;
    ck_assert_uint_lt(strlen(node), sizeof p.node);
    memcpy(p.node, node, strlen(node) + 1);
    p.expires = (int64_t)time(NULL) + expires_in;
    snprintf(p.fxa_uid, sizeof p.fxa_uid, "fxa%" PRId64, uid);
    snprintf(p.fxa_kid, sizeof p.fxa_kid, "kid%" PRId64, uid);
    snprintf(p.hashed_fxa_uid, sizeof p.hashed_fxa_uid, "h%" PRId64, uid);
    snprintf(p.hashed_device_id, sizeof p.hashed_device_id, "dev");
    ck_assert_int_eq(picl__tokenlib_mint(&c->token, &c->key, secret, secretlen, &p), 0);
}

void tu_cred_free(tu_cred *c)
{
    free(c->token);
    if (c->key)
        picl__zfree(c->key, strlen(c->key));
    c->token = c->key = NULL;
}

typedef struct growbuf {
    char *p;
    size_t n;
} growbuf;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    growbuf *b = ud;
    size_t add = size * nmemb;
    char *np = realloc(b->p, b->n + add + 1);
    if (!np)
        return 0;
    memcpy(np + b->n, ptr, add);
    b->n += add;
    np[b->n] = 0;
    b->p = np;
    return add;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    growbuf *b = ud;
    size_t add = size * nmemb;
    /* A new status line starts a new header block (after 100 Continue). */
    if (add >= 5 && !strncmp(ptr, "HTTP/", 5)) {
        free(b->p);
        b->p = NULL;
        b->n = 0;
    }
    return on_data(ptr, size, nmemb, ud);
}

int tu_http(tu_resp *r, const char *method, const char *base, const char *target, const tu_req *o)
{
    static const tu_req none;
    if (!o)
        o = &none;
    memset(r, 0, sizeof *r);
    CURL *h = curl_easy_init();
    ck_assert_ptr_nonnull(h);
    size_t ul = strlen(base) + strlen(target) + 1;
    char *url = malloc(ul);
    ck_assert_ptr_nonnull(url);
    snprintf(url, ul, "%s%s", base, target);
    struct curl_slist *hl = NULL;
    char *auth = NULL;
    if (o->cred) {
        /* host and port from base "http://host:port" */
        picl_hostport hp;
        const char *auth_part = base + 7;
        ck_assert_int_eq(picl__hostport_parse(auth_part, strcspn(auth_part, "/"), 80, 0, &hp), PICL_OK);
        picl_hawk_request hr = {.method = method,
                                .resource = o->sign_target ? o->sign_target : target,
                                .host = hp.host,
                                .port = hp.port,
                                .content_type = o->hawk_hash ? (o->ctype ? o->ctype : "") : NULL,
                                .body = o->body,
                                .bodylen = o->len};
        char *hv = NULL;
        ck_assert_int_eq(picl__hawk_client_header(&hv, o->cred->token, o->cred->key, strlen(o->cred->key),
                                                  &hr, (int64_t)time(NULL) + o->hawk_ts_offset, o->hawk_nonce,
                                                  NULL),
                         0);
        size_t al = strlen(hv) + 32;
        auth = malloc(al);
        snprintf(auth, al, "Authorization: %s", hv);
        free(hv);
        hl = curl_slist_append(hl, auth);
    }
    char ctbuf[300];
    if (o->ctype) {
        snprintf(ctbuf, sizeof ctbuf, "Content-Type: %s", o->ctype);
        hl = curl_slist_append(hl, ctbuf);
    } else if (o->body) {
        hl = curl_slist_append(hl, "Content-Type:");
    }
    for (const char *const *x = o->headers; x && *x; x++)
        hl = curl_slist_append(hl, *x);
    growbuf body = {0}, hdrs = {0};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    if (o->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, o->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->len);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(h);
    if (cc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(h);
    curl_slist_free_all(hl);
    free(url);
    free(auth);
    r->body = body.p ? body.p : strdup("");
    r->len = body.n;
    r->headers = hdrs.p ? hdrs.p : strdup("");
    return cc == CURLE_OK ? 0 : -1;
}

void tu_resp_free(tu_resp *r)
{
    free(r->body);
    free(r->headers);
    memset(r, 0, sizeof *r);
}

char *tu_resp_header(const tu_resp *r, const char *name)
{
    size_t nl = strlen(name);
    const char *p = r->headers;
    while (p && *p) {
        const char *eol = strstr(p, "\r\n");
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            return strndup(v, ll - (size_t)(v - p));
        }
        p = eol ? eol + 2 : NULL;
    }
    return NULL;
}
