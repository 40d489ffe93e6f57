/* SPDX-License-Identifier: MPL-2.0 */
/* hawk.c -- Hawk 1.1 SHA-256 header MAC, client header, strict server
 * parser, verification and nonce cache: see hawk.h. */
#include "protocol/hawk.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/util.h"

#define MAX_SKEW (86400 * 366)
#define MAX_ABS_TIME ((int64_t)1 << 60)

/* Hawk's attribute value characters: printable ASCII without '"' and '\'. */
static int value_char(unsigned char c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; }

static int valid_value(const char *s, size_t max, int allow_empty)
{
    size_t n = strnlen(s, max + 1);
    if (n > max || (n == 0 && !allow_empty))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!value_char((unsigned char)s[i]))
            return 0;
    return 1;
}

static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

static char upper(char c) { return (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c; }

/* RFC 7230 tchar. */
static int token_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* 0 ok, else the status for a field: control characters (a newline would
 * let one field pose as two) or over the cap. */
static picl_status check_field(const char *s, size_t max, size_t *len)
{
    size_t n = strnlen(s, max + 1);
    if (n > max)
        return PICL_ERROR_TOO_LARGE;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return PICL_ERROR_INVALID_ARGUMENT;
    }
    *len = n;
    return PICL_OK;
}

picl_status picl__hawk_payload_hash(char out[PICL_HAWK_B64_BYTES + 1], const char *content_type,
                                    const void *body, size_t bodylen)
{
    char ct[PICL_HAWK_MAX_CONTENT_TYPE + 1];
    size_t n = 0, start = 0, end;
    uint8_t digest[32];
    picl_sha256_ctx *ctx = NULL;
    picl_status st;

    if (!out || (!body && bodylen))
        return PICL_ERROR_INVALID_ARGUMENT;
    out[0] = 0;
    if (content_type) {
        st = check_field(content_type, PICL_HAWK_MAX_CONTENT_TYPE, &n);
        if (st != PICL_OK)
            return st;
    }
    /* "type/subtype; charset=..." -> "type/subtype", trimmed, lower case */
    end = 0;
    while (end < n && content_type[end] != ';')
        end++;
    while (start < end && (content_type[start] == ' ' || content_type[start] == '\t'))
        start++;
    while (end > start && (content_type[end - 1] == ' ' || content_type[end - 1] == '\t'))
        end--;
    for (size_t i = start; i < end; i++)
        ct[i - start] = lower(content_type[i]);
    ct[end - start] = 0;

    st = picl__sha256_init(&ctx);
    if (st != PICL_OK)
        return st;
    st = picl__sha256_update(ctx, "hawk.1.payload\n", 15);
    if (st == PICL_OK)
        st = picl__sha256_update(ctx, ct, end - start);
    if (st == PICL_OK)
        st = picl__sha256_update(ctx, "\n", 1);
    if (st == PICL_OK && bodylen)
        st = picl__sha256_update(ctx, body, bodylen);
    if (st == PICL_OK)
        st = picl__sha256_update(ctx, "\n", 1);
    if (st != PICL_OK) {
        picl__sha256_abort(ctx);
        return st;
    }
    st = picl__sha256_final(ctx, digest);
    if (st == PICL_OK)
        picl__base64_encode(out, digest, sizeof digest);
    return st;
}

picl_status picl__hawk_normalized(char **out, size_t *outlen, const char *ts, const char *nonce,
                                  const char *method, const char *resource, const char *host, unsigned port,
                                  const char *hash, const char *ext)
{
    size_t lts, lnonce, lmethod, lres, lhost, lhash = 0, lext = 0, total, pos = 0;
    char portbuf[8];
    char *s;
    picl_status st;

    if (!out || !outlen)
        return PICL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    *outlen = 0;
    if (!ts || !nonce || !method || !resource || !host || port > 65535)
        return PICL_ERROR_INVALID_ARGUMENT;
    if ((st = check_field(ts, PICL_HAWK_MAX_TS_DIGITS, &lts)) != PICL_OK ||
        (st = check_field(nonce, PICL_HAWK_MAX_NONCE, &lnonce)) != PICL_OK ||
        (st = check_field(method, PICL_HAWK_MAX_METHOD, &lmethod)) != PICL_OK ||
        (st = check_field(resource, PICL_HAWK_MAX_RESOURCE, &lres)) != PICL_OK ||
        (st = check_field(host, PICL_HAWK_MAX_HOST, &lhost)) != PICL_OK ||
        (hash && (st = check_field(hash, PICL_HAWK_B64_BYTES, &lhash)) != PICL_OK) ||
        (ext && (st = check_field(ext, PICL_HAWK_MAX_EXT, &lext)) != PICL_OK))
        return st;
    if (lmethod == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < lmethod; i++)
        if (!token_char((unsigned char)method[i]))
            return PICL_ERROR_INVALID_ARGUMENT;
    snprintf(portbuf, sizeof portbuf, "%u", port);

    total = 14 + lts + 1 + lnonce + 1 + lmethod + 1 + lres + 1 + lhost + 1 + strlen(portbuf) + 1 + lhash + 1 +
            lext + 1;
    s = malloc(total + 1);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
#define PUT(p, n)                                                                                            \
    do {                                                                                                     \
        memcpy(s + pos, (p), (n));                                                                           \
        pos += (n);                                                                                          \
        s[pos++] = '\n';                                                                                     \
    } while (0)
    PUT("hawk.1.header", 13);
    PUT(ts, lts);
    PUT(nonce, lnonce);
    for (size_t i = 0; i < lmethod; i++)
        s[pos++] = upper(method[i]);
    s[pos++] = '\n';
    PUT(resource, lres);
    for (size_t i = 0; i < lhost; i++)
        s[pos++] = lower(host[i]);
    s[pos++] = '\n';
    PUT(portbuf, strlen(portbuf));
    PUT(hash ? hash : "", lhash);
    PUT(ext ? ext : "", lext);
#undef PUT
    s[pos] = 0;
    *out = s;
    *outlen = pos;
    return PICL_OK;
}

/* The MAC under ctx (restarted for the next MAC) or, ctx NULL, under key
 * imported for this one. */
static picl_status mac_with(char out[PICL_HAWK_B64_BYTES + 1], picl_hmac_ctx *ctx, const void *key,
                            size_t keylen, const char *ts, const char *nonce, const picl_hawk_request *req,
                            const char *hash, const char *ext)
{
    char *norm = NULL;
    size_t normlen = 0;
    uint8_t mac[32];
    picl_status st;

    if (!out || !req || (!ctx && !key && keylen))
        return PICL_ERROR_INVALID_ARGUMENT;
    out[0] = 0;
    st = picl__hawk_normalized(&norm, &normlen, ts, nonce, req->method, req->resource, req->host, req->port,
                               hash, ext);
    if (st != PICL_OK)
        return st;
    if (ctx) {
        st = picl__hmac_sha256_update(ctx, norm, normlen);
        if (st == PICL_OK)
            st = picl__hmac_sha256_result(ctx, mac);
    } else {
        st = picl__hmac_sha256(mac, key, keylen, norm, normlen);
    }
    if (st == PICL_OK)
        picl__base64_encode(out, mac, sizeof mac);
    picl__wipe(mac, sizeof mac);
    free(norm);
    return st;
}

picl_status picl__hawk_mac(char out[PICL_HAWK_B64_BYTES + 1], const void *key, size_t keylen, const char *ts,
                           const char *nonce, const picl_hawk_request *req, const char *hash, const char *ext)
{
    return mac_with(out, NULL, key, keylen, ts, nonce, req, hash, ext);
}

picl_status picl__hawk_mac_ctx(char out[PICL_HAWK_B64_BYTES + 1], picl_hmac_ctx *ctx, const char *ts,
                               const char *nonce, const picl_hawk_request *req, const char *hash,
                               const char *ext)
{
    if (!ctx)
        return PICL_ERROR_INVALID_ARGUMENT;
    return mac_with(out, ctx, NULL, 0, ts, nonce, req, hash, ext);
}

/* ---- client ------------------------------------------------------------ */

picl_status picl__hawk_client_header(char **out, const char *id, const void *key, size_t keylen,
                                     const picl_hawk_request *req, int64_t ts, const char *nonce,
                                     const char *ext)
{
    char tsbuf[24], noncebuf[16], hash[PICL_HAWK_B64_BYTES + 1], mac[PICL_HAWK_B64_BYTES + 1];
    const char *h = NULL;
    char *s;
    size_t cap;
    int n;
    picl_status st;

    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!id || !req || ts < 0 || ts > 999999999999999LL || !valid_value(id, PICL_HAWK_MAX_ID, 0) ||
        (nonce && !valid_value(nonce, PICL_HAWK_MAX_NONCE, 0)) ||
        (ext && !valid_value(ext, PICL_HAWK_MAX_EXT, 1)))
        return PICL_ERROR_INVALID_ARGUMENT;
    if (ext && !*ext)
        ext = NULL;
    snprintf(tsbuf, sizeof tsbuf, "%lld", (long long)ts);
    if (!nonce) {
        uint8_t raw[9];
        st = picl__random_bytes(raw, sizeof raw);
        if (st != PICL_OK)
            return st;
        picl__base64_encode(noncebuf, raw, sizeof raw); /* 12 characters, no padding */
        nonce = noncebuf;
    }
    if (req->content_type) {
        st = picl__hawk_payload_hash(hash, req->content_type, req->body, req->bodylen);
        if (st != PICL_OK)
            return st;
        h = hash;
    }
    st = picl__hawk_mac(mac, key, keylen, tsbuf, nonce, req, h, ext);
    if (st != PICL_OK)
        return st;

    cap = 64 + strlen(id) + strlen(tsbuf) + strlen(nonce) + (h ? strlen(h) : 0) + (ext ? strlen(ext) : 0) +
          strlen(mac);
    s = malloc(cap);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    n = snprintf(s, cap, "Hawk id=\"%s\", ts=\"%s\", nonce=\"%s\", %s%s%s%s%s%smac=\"%s\"", id, tsbuf, nonce,
                 h ? "hash=\"" : "", h ? h : "", h ? "\", " : "", ext ? "ext=\"" : "", ext ? ext : "",
                 ext ? "\", " : "", mac);
    if (n < 0 || (size_t)n >= cap) {
        free(s);
        return PICL_ERROR_INTERNAL;
    }
    *out = s;
    return PICL_OK;
}

/* ---- server: the parser ------------------------------------------------ */

enum { A_ID, A_TS, A_NONCE, A_HASH, A_EXT, A_MAC, A_COUNT };

static const struct {
    const char *name;
    size_t max;
} attrs[A_COUNT] = {
    [A_ID] = {"id", PICL_HAWK_MAX_ID},          [A_TS] = {"ts", PICL_HAWK_MAX_TS_DIGITS},
    [A_NONCE] = {"nonce", PICL_HAWK_MAX_NONCE}, [A_HASH] = {"hash", PICL_HAWK_B64_BYTES},
    [A_EXT] = {"ext", PICL_HAWK_MAX_EXT},       [A_MAC] = {"mac", PICL_HAWK_B64_BYTES},
};

static char *attr_buf(picl_hawk_auth *a, int which)
{
    switch (which) {
    case A_ID:
        return a->id;
    case A_TS:
        return a->ts_text;
    case A_NONCE:
        return a->nonce;
    case A_HASH:
        return a->hash;
    case A_EXT:
        return a->ext;
    default:
        return a->mac;
    }
}

static int is_ows(char c) { return c == ' ' || c == '\t'; }

/* Strict base64 of exactly 32 bytes. */
static int b64_32(const char *s)
{
    uint8_t tmp[33];
    size_t n = 0;
    int ok = strlen(s) == PICL_HAWK_B64_BYTES &&
             picl__base64_decode(tmp, sizeof tmp, &n, s, PICL_HAWK_B64_BYTES) == PICL_OK && n == 32;
    picl__wipe(tmp, sizeof tmp);
    return ok;
}

static picl_status parse(picl_hawk_auth *a, const char *h, size_t len)
{
    size_t i = 0, end = len;
    int seen[A_COUNT] = {0};

    if (len > PICL_HAWK_MAX_HEADER)
        return PICL_HAWK_ERROR_TOO_LARGE;
    while (i < end && is_ows(h[i]))
        i++;
    while (end > i && is_ows(h[end - 1]))
        end--;
    /* scheme */
    if (end - i < 4 || lower(h[i]) != 'h' || lower(h[i + 1]) != 'a' || lower(h[i + 2]) != 'w' ||
        lower(h[i + 3]) != 'k')
        return PICL_HAWK_ERROR_MALFORMED;
    i += 4;
    if (i >= end || !is_ows(h[i]))
        return PICL_HAWK_ERROR_MALFORMED;
    while (i < end && is_ows(h[i]))
        i++;

    for (;;) {
        size_t nstart = i, vstart, vlen;
        int which = -1;
        char *buf;

        while (i < end && h[i] >= 'a' && h[i] <= 'z')
            i++;
        for (int k = 0; k < A_COUNT; k++)
            if (strlen(attrs[k].name) == i - nstart && !memcmp(attrs[k].name, h + nstart, i - nstart))
                which = k;
        if (which < 0 || seen[which])
            return PICL_HAWK_ERROR_MALFORMED;
        seen[which] = 1;
        if (i + 1 >= end || h[i] != '=' || h[i + 1] != '"')
            return PICL_HAWK_ERROR_MALFORMED;
        i += 2;
        vstart = i;
        while (i < end && h[i] != '"') {
            if (!value_char((unsigned char)h[i]))
                return PICL_HAWK_ERROR_MALFORMED;
            i++;
        }
        if (i >= end)
            return PICL_HAWK_ERROR_MALFORMED; /* no closing quote */
        vlen = i - vstart;
        i++;
        if (vlen > attrs[which].max)
            return PICL_HAWK_ERROR_TOO_LARGE;
        if (vlen == 0 && which != A_EXT)
            return PICL_HAWK_ERROR_MALFORMED;
        buf = attr_buf(a, which);
        memcpy(buf, h + vstart, vlen);
        buf[vlen] = 0;

        while (i < end && is_ows(h[i]))
            i++;
        if (i == end)
            break;
        if (h[i] != ',')
            return PICL_HAWK_ERROR_MALFORMED;
        i++;
        while (i < end && is_ows(h[i]))
            i++;
        if (i == end)
            return PICL_HAWK_ERROR_MALFORMED; /* trailing comma */
    }

    if (!seen[A_ID] || !seen[A_TS] || !seen[A_NONCE] || !seen[A_MAC])
        return PICL_HAWK_ERROR_MALFORMED;
    a->ts = 0;
    for (const char *p = a->ts_text; *p; p++) {
        if (*p < '0' || *p > '9')
            return PICL_HAWK_ERROR_MALFORMED;
        a->ts = a->ts * 10 + (*p - '0'); /* at most 15 digits: no overflow */
    }
    if (!b64_32(a->mac) || (seen[A_HASH] && !b64_32(a->hash)))
        return PICL_HAWK_ERROR_MALFORMED;
    a->has_hash = seen[A_HASH];
    a->has_ext = seen[A_EXT];
    return PICL_OK;
}

picl_status picl__hawk_parse(picl_hawk_auth *auth, const char *header, size_t len)
{
    picl_status st;

    if (!auth)
        return PICL_ERROR_INVALID_ARGUMENT;
    memset(auth, 0, sizeof *auth);
    if (!header)
        return PICL_ERROR_INVALID_ARGUMENT;
    st = parse(auth, header, len);
    if (st != PICL_OK)
        memset(auth, 0, sizeof *auth);
    return st;
}

/* ---- server: verification ---------------------------------------------- */

static picl_status nonce_check(picl_hawk_nonce_cache *c, const uint8_t who[32], const uint8_t id_digest[32],
                               const char *nonce, int64_t expires, int64_t now);

/* Malformed request fields (not the caller's mistake: they came off the
 * wire) are reported as a malformed request. */
static picl_status wire_status(picl_status st)
{
    return st == PICL_ERROR_INVALID_ARGUMENT ? PICL_HAWK_ERROR_MALFORMED : st;
}

picl_status picl__hawk_verify(const picl_hawk_auth *auth, const void *key, size_t keylen,
                              const picl_hawk_request *req, const picl_hawk_verify_opts *opts)
{
    char mac[PICL_HAWK_B64_BYTES + 1], hash[PICL_HAWK_B64_BYTES + 1];
    picl_status st;
    int ok;

    if (!auth || !req || !opts || (!key && keylen) || !req->method || !req->resource || !req->host ||
        req->port > 65535 || (!req->body && req->bodylen) || opts->skew < 0 || opts->skew > MAX_SKEW ||
        opts->now > MAX_ABS_TIME || opts->now < -MAX_ABS_TIME)
        return PICL_ERROR_INVALID_ARGUMENT;

    /* 1. MAC over what the client says it sent (its hash, its ext). */
    st = mac_with(mac, opts->mac_ctx, key, keylen, auth->ts_text, auth->nonce, req,
                  auth->has_hash ? auth->hash : NULL, auth->has_ext ? auth->ext : NULL);
    if (st != PICL_OK)
        return wire_status(st);
    ok = strlen(auth->mac) == PICL_HAWK_B64_BYTES && picl__memeq_ct(mac, auth->mac, PICL_HAWK_B64_BYTES);
    if (!ok)
        return PICL_HAWK_ERROR_BAD_MAC;

    /* 2. payload hash */
    if (auth->has_hash) {
        st = picl__hawk_payload_hash(hash, req->content_type, req->body, req->bodylen);
        if (st != PICL_OK)
            return wire_status(st);
        if (!picl__memeq_ct(hash, auth->hash, PICL_HAWK_B64_BYTES))
            return PICL_HAWK_ERROR_BAD_MAC;
    } else if (opts->require_hash) {
        return PICL_HAWK_ERROR_BAD_MAC;
    }

    /* 3. timestamp */
    if (auth->ts > opts->now + opts->skew || auth->ts < opts->now - opts->skew)
        return PICL_HAWK_ERROR_STALE;

    /* 4. nonce: live exactly as long as the timestamp would be accepted */
    if (opts->nonces) {
        uint8_t iddig[32], who[32];
        const uint8_t *idd = opts->id_digest, *w = opts->identity_digest;
        if (!idd && (st = picl__hawk_nonce_id_digest(iddig, auth->id)) != PICL_OK)
            return st;
        if (!w && (st = picl__hawk_nonce_identity_digest(who, opts->identity ? opts->identity : auth->id)) !=
                      PICL_OK)
            return st;
        return nonce_check(opts->nonces, w ? w : who, idd ? idd : iddig, auth->nonce, auth->ts + opts->skew,
                           opts->now);
    }
    return PICL_OK;
}

/* ---- nonce cache --------------------------------------------------------- */

enum { SLOT_EMPTY = 0, SLOT_USED = 1, SLOT_DEAD = 2 };

typedef struct nonce_slot {
    uint8_t key[16];
    uint8_t who[8]; /* the identity's hash: whose share the entry uses */
    int64_t expires;
    uint8_t state;
} nonce_slot;

/* Live entries per identity (an open-addressing table without deletion:
 * emptied and refilled by rebuild()). */
typedef struct id_slot {
    uint8_t who[8];
    uint32_t count;
    uint8_t used;
} id_slot;

struct picl_hawk_nonce_cache {
    pthread_mutex_t lock;
    size_t max;   /* live entries allowed */
    size_t share; /* live entries allowed per identity */
    size_t cap;   /* slots, a power of two >= 2 * max */
    size_t used;  /* SLOT_USED slots */
    size_t dead;  /* SLOT_DEAD slots (tombstones) */
    nonce_slot *slots, *spare;
    id_slot *ids; /* cap entries */
    size_t ids_used;
    int64_t share_rebuilt; /* when a full share last forced a rebuild */
};

picl_status picl__hawk_nonce_cache_new(picl_hawk_nonce_cache **cache, size_t max_entries)
{
    picl_hawk_nonce_cache *c;
    size_t cap = 4;

    if (!cache)
        return PICL_ERROR_INVALID_ARGUMENT;
    *cache = NULL;
    if (max_entries < 1 || max_entries > ((size_t)1 << 24))
        return PICL_ERROR_INVALID_ARGUMENT;
    while (cap < 2 * max_entries)
        cap *= 2;
    c = calloc(1, sizeof *c);
    if (!c)
        return PICL_ERROR_NO_MEMORY;
    c->slots = calloc(cap, sizeof *c->slots);
    c->spare = calloc(cap, sizeof *c->spare);
    c->ids = calloc(cap, sizeof *c->ids);
    if (!c->slots || !c->spare || !c->ids || pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c->slots);
        free(c->spare);
        free(c->ids);
        free(c);
        return PICL_ERROR_NO_MEMORY;
    }
    c->max = max_entries;
    c->share = max_entries / PICL_HAWK_DEFAULT_SHARE_DIV ? max_entries / PICL_HAWK_DEFAULT_SHARE_DIV : 1;
    c->cap = cap;
    c->share_rebuilt = INT64_MIN;
    *cache = c;
    return PICL_OK;
}

picl_status picl__hawk_nonce_cache_set_share(picl_hawk_nonce_cache *c, size_t per_identity)
{
    if (!c || per_identity < 1 || per_identity > c->max)
        return PICL_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&c->lock);
    c->share = per_identity;
    pthread_mutex_unlock(&c->lock);
    return PICL_OK;
}

void picl__hawk_nonce_cache_free(picl_hawk_nonce_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c->slots);
    free(c->spare);
    free(c->ids);
    free(c);
}

size_t picl__hawk_nonce_cache_count(picl_hawk_nonce_cache *c)
{
    size_t n;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->lock);
    n = c->used;
    pthread_mutex_unlock(&c->lock);
    return n;
}

static size_t slot_index(const uint8_t key[8], size_t cap)
{
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h = h << 8 | key[i];
    return (size_t)(h & (cap - 1));
}

/* The identity's counter; created when `create` (NULL when the table is
 * 3/4 full: the caller rebuilds).  Lock held. */
static id_slot *id_get(picl_hawk_nonce_cache *c, const uint8_t who[8], int create)
{
    size_t i = slot_index(who, c->cap);
    for (size_t probes = 0; probes < c->cap; probes++, i = (i + 1) & (c->cap - 1)) {
        id_slot *e = &c->ids[i];
        if (!e->used) {
            if (!create || c->ids_used + 1 > c->cap / 4 * 3)
                return NULL;
            memcpy(e->who, who, 8);
            e->used = 1;
            e->count = 0;
            c->ids_used++;
            return e;
        }
        if (memcmp(e->who, who, 8) == 0)
            return e;
    }
    return NULL;
}

/* A live entry of `who` is gone.  Lock held. */
static void id_drop(picl_hawk_nonce_cache *c, const uint8_t who[8])
{
    id_slot *e = id_get(c, who, 0);
    if (e && e->count)
        e->count--;
}

/* Rehashes the live entries into the spare table, dropping expired ones and
 * tombstones, and recounts the identities.  Called with the lock held. */
static void rebuild(picl_hawk_nonce_cache *c, int64_t now)
{
    size_t used = 0;
    memset(c->spare, 0, c->cap * sizeof *c->spare);
    memset(c->ids, 0, c->cap * sizeof *c->ids);
    c->ids_used = 0;
    for (size_t i = 0; i < c->cap; i++) {
        const nonce_slot *s = &c->slots[i];
        if (s->state != SLOT_USED || s->expires < now)
            continue;
        size_t j = slot_index(s->key, c->cap);
        while (c->spare[j].state != SLOT_EMPTY)
            j = (j + 1) & (c->cap - 1);
        c->spare[j] = *s;
        used++;
        /* at most max <= cap / 2 identities: id_get cannot fail here */
        id_slot *e = id_get(c, s->who, 1);
        if (e)
            e->count++;
    }
    nonce_slot *t = c->slots;
    c->slots = c->spare;
    c->spare = t;
    c->used = used;
    c->dead = 0;
}

/* out = SHA-256(len(a) || a || b): unambiguous for any a/b. */
static picl_status pair_digest(uint8_t out[32], const char *a, const char *b)
{
    uint8_t lenbuf[8];
    picl_sha256_ctx *ctx = NULL;
    size_t alen = strlen(a);
    for (int k = 0; k < 8; k++)
        lenbuf[k] = (uint8_t)((uint64_t)alen >> (56 - 8 * k));
    picl_status st = picl__sha256_init(&ctx);
    if (st != PICL_OK)
        return st;
    if ((st = picl__sha256_update(ctx, lenbuf, sizeof lenbuf)) != PICL_OK ||
        (st = picl__sha256_update(ctx, a, alen)) != PICL_OK ||
        (st = picl__sha256_update(ctx, b, strlen(b))) != PICL_OK) {
        picl__sha256_abort(ctx);
        return st;
    }
    return picl__sha256_final(ctx, out);
}

picl_status picl__hawk_nonce_check(picl_hawk_nonce_cache *c, const char *id, const char *nonce,
                                   int64_t expires, int64_t now)
{
    return picl__hawk_nonce_check_for(c, id, id, nonce, expires, now);
}

picl_status picl__hawk_nonce_id_digest(uint8_t out[32], const char *id)
{
    if (!out || !id)
        return PICL_ERROR_INVALID_ARGUMENT;
    return pair_digest(out, "picl-hawk-id", id);
}

picl_status picl__hawk_nonce_identity_digest(uint8_t out[32], const char *identity)
{
    if (!out || !identity)
        return PICL_ERROR_INVALID_ARGUMENT;
    return pair_digest(out, "picl-hawk-identity", identity);
}

picl_status picl__hawk_nonce_check_for(picl_hawk_nonce_cache *c, const char *identity, const char *id,
                                       const char *nonce, int64_t expires, int64_t now)
{
    uint8_t iddig[32], who[32];
    picl_status st;

    if (!c || !identity || !id || !nonce)
        return PICL_ERROR_INVALID_ARGUMENT;
    if ((st = picl__hawk_nonce_id_digest(iddig, id)) != PICL_OK ||
        (st = picl__hawk_nonce_identity_digest(who, identity)) != PICL_OK)
        return st;
    return nonce_check(c, who, iddig, nonce, expires, now);
}

picl_status picl__hawk_nonce_check_digests(picl_hawk_nonce_cache *c, const uint8_t identity_digest[32],
                                           const uint8_t id_digest[32], const char *nonce, int64_t expires,
                                           int64_t now)
{
    if (!c || !identity_digest || !id_digest || !nonce)
        return PICL_ERROR_INVALID_ARGUMENT;
    return nonce_check(c, identity_digest, id_digest, nonce, expires, now);
}

/* The entry's key: SHA-256(id digest || nonce), the id digest a fixed 32
 * bytes (so unambiguous); who: whose share it counts in. */
static picl_status nonce_check(picl_hawk_nonce_cache *c, const uint8_t who[32], const uint8_t id_digest[32],
                               const char *nonce, int64_t expires, int64_t now)
{
    uint8_t digest[32];
    size_t i, free_slot;
    int have_free = 0;
    picl_status st;
    picl_sha256_ctx *ctx = NULL;

    if ((st = picl__sha256_init(&ctx)) != PICL_OK)
        return st;
    if ((st = picl__sha256_update(ctx, id_digest, 32)) != PICL_OK ||
        (st = picl__sha256_update(ctx, nonce, strlen(nonce))) != PICL_OK) {
        picl__sha256_abort(ctx);
        return st;
    }
    if ((st = picl__sha256_final(ctx, digest)) != PICL_OK)
        return st;

    pthread_mutex_lock(&c->lock);
    i = slot_index(digest, c->cap);
    free_slot = 0;
    for (size_t probes = 0; probes < c->cap; probes++, i = (i + 1) & (c->cap - 1)) {
        nonce_slot *s = &c->slots[i];
        if (s->state == SLOT_EMPTY) {
            if (!have_free) {
                free_slot = i;
                have_free = 1;
            }
            break;
        }
        if (s->state == SLOT_USED && memcmp(s->key, digest, 16) == 0) {
            if (s->expires >= now) {
                st = PICL_HAWK_ERROR_REPLAY;
                goto done;
            }
            /* expired: the same nonce again is a new entry, below */
        }
        if (s->state == SLOT_USED && s->expires < now) {
            s->state = SLOT_DEAD; /* expired: drop it on the way */
            c->used--;
            c->dead++;
            id_drop(c, s->who);
        }
        if (s->state == SLOT_DEAD && !have_free) {
            free_slot = i;
            have_free = 1;
        }
    }
    id_slot *mine = id_get(c, who, 1);
    /* a full share may hold expired entries not met yet: a rebuild (at most
     * once a second for this reason, it walks the whole table) drops them */
    int share_full = mine && mine->count >= c->share && c->share_rebuilt != now;
    if (c->used >= c->max || c->used + c->dead + 1 > c->cap / 4 * 3 || !have_free || !mine || share_full) {
        rebuild(c, now);
        if (share_full)
            c->share_rebuilt = now;
        if (c->used >= c->max) {
            st = PICL_HAWK_ERROR_BUSY;
            goto done;
        }
        free_slot = slot_index(digest, c->cap);
        while (c->slots[free_slot].state != SLOT_EMPTY)
            free_slot = (free_slot + 1) & (c->cap - 1);
        mine = id_get(c, who, 1);
    } else if (c->slots[free_slot].state == SLOT_DEAD) {
        c->dead--;
    }
    /* one identity (an account) never holds more than its share: it can
     * fill its own part of the cache, not everyone's */
    if (!mine || mine->count >= c->share) {
        if (c->slots[free_slot].state == SLOT_DEAD)
            c->dead++; /* the tombstone stays */
        st = PICL_HAWK_ERROR_BUSY;
        goto done;
    }
    memcpy(c->slots[free_slot].key, digest, 16);
    memcpy(c->slots[free_slot].who, who, 8);
    c->slots[free_slot].expires = expires;
    c->slots[free_slot].state = SLOT_USED;
    c->used++;
    mine->count++;
    st = PICL_OK;
done:
    pthread_mutex_unlock(&c->lock);
    return st;
}
