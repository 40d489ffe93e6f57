/* SPDX-License-Identifier: MPL-2.0 */
/* storage_auth.c -- tokenlib + Hawk authentication of storage requests (see storage_auth.h). */
#include "storage/storage_auth.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/util.h"
#include "protocol/hawk.h"
#include "protocol/hostport.h"
#include "protocol/tokenlib.h"

/* Live nonces are kept for ts + skew: with the 60 s default this serves about
 * 4000 authenticated requests/s sustained before answering 503 (fail closed).
 * One user (uid, whatever tokens it holds) may hold 1/NONCE_SHARE_DIV of it:
 * a user who floods the cache gets 503 itself, never the others. */
#define NONCE_CACHE_ENTRIES (1u << 19)
#define NONCE_SHARE_DIV 32

/* Verified tokens and their derived keys, so that a client's requests do
 * not pay the signature check and the HKDF again (the token text is the
 * cache key: a tampered token is never found and goes the full way). */
#define TOKEN_CACHE_SETS 1024 /* of TOKEN_CACHE_WAYS tokens each */
#define TOKEN_CACHE_WAYS 2

/* Per token also what each of its requests would otherwise redo: the Hawk
 * key imported into an HMAC context (lent to one request at a time: a
 * request that finds it lent imports the key itself), and the nonce
 * cache's digests of the token and of its user.  All wiped with the slot. */
typedef struct token_slot {
    char *token;
    picl_tokenlib_payload p;
    char key[PICL_TOKENLIB_KEY_CHARS + 1];
    picl_hmac_ctx *mac;
    uint8_t id_digest[32], who_digest[32];
    uint64_t used; /* the cache's tick when last found: the older way goes */
} token_slot;

/* What a request takes from the cache: copies of what it checks, and the
 * HMAC context lent (NULL: none was free); p only while a token is verified
 * from scratch. */
typedef struct token_view {
    picl_tokenlib_payload *p;
    int64_t uid, expires;
    int node_ok; /* the token names the node asked for */
    char key[PICL_TOKENLIB_KEY_CHARS + 1];
    picl_hmac_ctx *mac;
    uint8_t id_digest[32], who_digest[32];
} token_view;

struct storage_auth {
    uint8_t *secret;
    size_t secretlen;
    int64_t skew;
    picl_hawk_nonce_cache *nonces;
    storage_nonce_store shared; /* NULL, or the store sibling processes share */
    void *shared_ctx;
    pthread_mutex_t mu;
    uint64_t tick;
    token_slot *cache[TOKEN_CACHE_SETS * TOKEN_CACHE_WAYS]; /* NULL: empty */
};

/* The first way of token's set: a hash of its text eight bytes at a time
 * (a token is some 700 characters, hashed at every lookup). */
static size_t set_of(const char *token)
{
    size_t n = strlen(token), i = 0;
    uint64_t h = 1469598103934665603u ^ n, w;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, token + i, 8);
        h = (h ^ w) * 1099511628211u;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ (uint8_t)token[i]) * 1099511628211u;
    h ^= h >> 32;
    return (size_t)(h % TOKEN_CACHE_SETS) * TOKEN_CACHE_WAYS;
}

static void slot_free(token_slot *t)
{
    if (!t)
        return;
    free(t->token);
    picl__hmac_sha256_abort(t->mac);
    picl__zfree(t, sizeof *t);
}

/* The slot holding token, or NULL.  Lock held. */
static token_slot *slot_find(storage_auth *a, const char *token)
{
    size_t s = set_of(token);
    for (size_t w = 0; w < TOKEN_CACHE_WAYS; w++) {
        token_slot *t = a->cache[s + w];
        if (t && !strcmp(t->token, token)) {
            t->used = ++a->tick;
            return t;
        }
    }
    return NULL;
}

/* The nonce-cache share is the user's, whatever token it uses (a user can
 * get any number of tokens). */
static void who_of(char who[40], int64_t uid) { snprintf(who, 40, "uid:%lld", (long long)uid); }

/* 1 and v filled when token was verified before (its HMAC context lent to
 * the caller, who gives it back with cache_return). */
static int cache_get(storage_auth *a, const char *token, const char *node, token_view *v)
{
    pthread_mutex_lock(&a->mu);
    token_slot *t = slot_find(a, token);
    if (t) {
        v->uid = t->p.uid;
        v->expires = t->p.expires;
        v->node_ok = !strcmp(t->p.node, node);
        memcpy(v->key, t->key, sizeof t->key);
        memcpy(v->id_digest, t->id_digest, sizeof v->id_digest);
        memcpy(v->who_digest, t->who_digest, sizeof v->who_digest);
        v->mac = t->mac;
        t->mac = NULL;
    }
    pthread_mutex_unlock(&a->mu);
    return t != NULL;
}

/* 1 and copies of the payload and key when token was verified before. */
static int cache_get_key(storage_auth *a, const char *token, picl_tokenlib_payload *p, char *key)
{
    pthread_mutex_lock(&a->mu);
    token_slot *t = slot_find(a, token);
    if (t) {
        *p = t->p;
        memcpy(key, t->key, sizeof t->key);
    }
    pthread_mutex_unlock(&a->mu);
    return t != NULL;
}

/* Gives a lent (or new) HMAC context of token back to its slot; freed when
 * the token is no longer cached or its slot has one already. */
static void cache_return(storage_auth *a, const char *token, picl_hmac_ctx *mac)
{
    if (!mac)
        return;
    pthread_mutex_lock(&a->mu);
    token_slot *t = slot_find(a, token);
    if (t && !t->mac) {
        t->mac = mac;
        mac = NULL;
    }
    pthread_mutex_unlock(&a->mu);
    picl__hmac_sha256_abort(mac);
}

/* Caches a verified token: in an empty way of its set, else in place of
 * the way found least recently (wiped). */
static void cache_put(storage_auth *a, const char *token, const token_view *v)
{
    token_slot *n = calloc(1, sizeof *n);
    if (!n || !(n->token = strdup(token))) {
        free(n);
        return;
    }
    n->p = *v->p;
    memcpy(n->key, v->key, sizeof n->key);
    memcpy(n->id_digest, v->id_digest, sizeof n->id_digest);
    memcpy(n->who_digest, v->who_digest, sizeof n->who_digest);
    size_t s = set_of(token), victim = s;
    token_slot *old = NULL;
    pthread_mutex_lock(&a->mu);
    for (size_t w = 0; w < TOKEN_CACHE_WAYS; w++) {
        token_slot *t = a->cache[s + w];
        if (!t || !strcmp(t->token, token)) {
            victim = s + w;
            break;
        }
        if (t->used < a->cache[victim]->used)
            victim = s + w;
    }
    old = a->cache[victim];
    n->used = ++a->tick;
    a->cache[victim] = n;
    pthread_mutex_unlock(&a->mu);
    slot_free(old);
}

/* v for token from scratch: signature, expiry, the key's HKDF, the
 * digests.  PICL_OK or PICL_ERROR_TOKEN. */
static picl_status token_verify(storage_auth *a, const char *token, const char *node, int64_t now_s,
                                int64_t grace_s, token_view *v)
{
    char who[40];
    size_t n = strlen(token);
    if (picl__tokenlib_parse(v->p, a->secret, a->secretlen, token, n, now_s, grace_s) != PICL_OK ||
        picl__tokenlib_derive_key(v->key, a->secret, a->secretlen, token, n, v->p->salt) != PICL_OK)
        return PICL_ERROR_TOKEN;
    who_of(who, v->p->uid);
    if (picl__hawk_nonce_id_digest(v->id_digest, token) != PICL_OK ||
        picl__hawk_nonce_identity_digest(v->who_digest, who) != PICL_OK)
        return PICL_ERROR_TOKEN;
    v->uid = v->p->uid;
    v->expires = v->p->expires;
    v->node_ok = !strcmp(v->p->node, node);
    return PICL_OK;
}

picl_status storage_auth_new(storage_auth **out, const uint8_t *secret, size_t secretlen, int64_t skew_s)
{
    return storage_auth_new_sized(out, secret, secretlen, skew_s, 0);
}

picl_status storage_auth_new_sized(storage_auth **out, const uint8_t *secret, size_t secretlen,
                                   int64_t skew_s, size_t nonce_entries)
{
    if (!nonce_entries)
        nonce_entries = NONCE_CACHE_ENTRIES;
    *out = NULL;
    if (!secret || secretlen < 32 || secretlen > PICL_TOKENLIB_MAX_SECRET || skew_s <= 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    storage_auth *a = calloc(1, sizeof *a);
    if (!a)
        return PICL_ERROR_NO_MEMORY;
    a->secret = malloc(secretlen);
    if (!a->secret) {
        free(a);
        return PICL_ERROR_NO_MEMORY;
    }
    memcpy(a->secret, secret, secretlen);
    a->secretlen = secretlen;
    a->skew = skew_s;
    pthread_mutex_init(&a->mu, NULL);
    picl_status st = picl__hawk_nonce_cache_new(&a->nonces, nonce_entries);
    if (st == PICL_OK)
        st = picl__hawk_nonce_cache_set_share(
            a->nonces, nonce_entries / NONCE_SHARE_DIV ? nonce_entries / NONCE_SHARE_DIV : 1);
    if (st != PICL_OK) {
        storage_auth_free(a);
        return st;
    }
    *out = a;
    return PICL_OK;
}

void storage_auth_free(storage_auth *a)
{
    if (!a)
        return;
    picl__zfree(a->secret, a->secretlen);
    picl__hawk_nonce_cache_free(a->nonces);
    for (size_t i = 0; i < TOKEN_CACHE_SETS * TOKEN_CACHE_WAYS; i++)
        slot_free(a->cache[i]);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

void storage_auth_share_nonces(storage_auth *a, storage_nonce_store fn, void *ctx)
{
    a->shared = fn;
    a->shared_ctx = ctx;
}

/* The verified request's nonce taken in the shared store: PICL_OK, TOKEN
 * (a sibling saw it: a replay) or BACKOFF (the store failed). */
static picl_status take_shared(storage_auth *a, const picl_hawk_auth *auth)
{
    if (!a->shared)
        return PICL_OK;
    uint8_t h[32];
    char key[65], ts[24];
    picl_sha256_ctx *sc = NULL;
    snprintf(ts, sizeof ts, "\n%lld\n", (long long)auth->ts);
    picl_status st = picl__sha256_init(&sc);
    if (st == PICL_OK)
        st = picl__sha256_update(sc, auth->id, strlen(auth->id));
    if (st == PICL_OK)
        st = picl__sha256_update(sc, ts, strlen(ts));
    if (st == PICL_OK)
        st = picl__sha256_update(sc, auth->nonce, strlen(auth->nonce));
    if (st == PICL_OK) {
        st = picl__sha256_final(sc, h);
        sc = NULL;
    }
    picl__sha256_abort(sc);
    if (st != PICL_OK)
        return PICL_ERROR_BACKOFF;
    static const char hexd[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof h; i++) {
        key[2 * i] = hexd[h[i] >> 4];
        key[2 * i + 1] = hexd[h[i] & 15];
    }
    key[64] = 0;
    /* a replay is accepted while its ts is within the skew: remembered that long */
    st = a->shared(a->shared_ctx, key, auth->ts + a->skew + 1);
    return st == PICL_OK ? PICL_OK : st == PICL_ERROR_CONFLICT ? PICL_ERROR_TOKEN : PICL_ERROR_BACKOFF;
}

/* headers_only: the body has not been read: the MAC is checked over the
 * payload hash the client announced, the hash itself and the nonce are left
 * for the full check once the body is in. */
static picl_status check(storage_auth *a, const srv_http_request *req, const char *node, int64_t path_uid,
                         int64_t grace_s, int64_t now_s, int headers_only)
{
    picl_status st = PICL_ERROR_TOKEN;
    picl_hawk_auth *auth = NULL;
    token_view *v = NULL;

    const char *hdr = srv_http_header(req, "Authorization");
    const char *hosthdr = srv_http_header(req, "Host");
    picl_hostport hp;
    if (!hdr || !hosthdr || picl__hostport_parse(hosthdr, strlen(hosthdr), 80, 0, &hp) != PICL_OK)
        goto done;
    auth = malloc(sizeof *auth);
    v = calloc(1, sizeof *v);
    if (!auth || !v) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    if (picl__hawk_parse(auth, hdr, strlen(hdr)) != PICL_OK)
        goto done;
    if (cache_get(a, auth->id, node, v)) {
        if (now_s > v->expires + grace_s)
            goto done;
    } else {
        v->p = malloc(sizeof *v->p);
        if (!v->p) {
            st = PICL_ERROR_NO_MEMORY;
            goto done;
        }
        if (token_verify(a, auth->id, node, now_s, grace_s, v) != PICL_OK)
            goto done;
        cache_put(a, auth->id, v);
    }
    if (!v->node_ok || v->uid != path_uid)
        goto done;
    /* the key in an HMAC context: imported once per token, not per request
     * (when NSS cannot, the request is refused as a failed MAC was) */
    if (!v->mac && picl__hmac_sha256_init(&v->mac, v->key, strlen(v->key)) != PICL_OK) {
        v->mac = NULL;
        goto done;
    }
    picl_hawk_request hr = {
        .method = req->method,
        .resource = req->target,
        .host = hp.host,
        .port = hp.port,
        .content_type = req->body_len ? srv_http_header(req, "Content-Type") : NULL,
        .body = req->body,
        .bodylen = req->body_len,
    };
    if (!hr.content_type && auth->has_hash)
        hr.content_type = srv_http_header(req, "Content-Type");
    picl_status v_st;
    if (headers_only) {
        char mac[PICL_HAWK_B64_BYTES + 1];
        hr.body = NULL;
        hr.bodylen = 0;
        v_st = picl__hawk_mac_ctx(mac, v->mac, auth->ts_text, auth->nonce, &hr,
                                  auth->has_hash ? auth->hash : NULL, auth->has_ext ? auth->ext : NULL);
        if (v_st == PICL_OK && strlen(auth->mac) == PICL_HAWK_B64_BYTES &&
            picl__memeq_ct(mac, auth->mac, PICL_HAWK_B64_BYTES) && auth->ts <= now_s + a->skew &&
            auth->ts >= now_s - a->skew)
            st = PICL_OK;
        picl__wipe(mac, sizeof mac);
    } else {
        /* the share is the user's (the digest of "uid:<uid>", who_of) */
        picl_hawk_verify_opts opts = {.now = now_s,
                                      .skew = a->skew,
                                      .require_hash = 0,
                                      .nonces = a->nonces,
                                      .mac_ctx = v->mac,
                                      .id_digest = v->id_digest,
                                      .identity_digest = v->who_digest};
        v_st = picl__hawk_verify(auth, v->key, strlen(v->key), &hr, &opts);
        if (v_st == PICL_OK)
            st = take_shared(a, auth);
        else if (v_st == PICL_HAWK_ERROR_BUSY)
            st = PICL_ERROR_BACKOFF;
    }
    /* a context that failed inside NSS is not lent again */
    if (v_st == PICL_ERROR_CRYPTO) {
        picl__hmac_sha256_abort(v->mac);
        v->mac = NULL;
    }
done:
    /* a context lent (or made) for this request goes back to its token,
     * also when the request was refused before using it */
    if (v && v->mac && auth) {
        cache_return(a, auth->id, v->mac);
        v->mac = NULL;
    }
    if (v) {
        picl__hmac_sha256_abort(v->mac);
        if (v->p)
            picl__zfree(v->p, sizeof *v->p);
        picl__zfree(v, sizeof *v);
    }
    free(auth);
    return st;
}

picl_status storage_auth_check(storage_auth *a, const srv_http_request *req, const char *node,
                               int64_t path_uid, int64_t grace_s, int64_t now_s)
{
    return check(a, req, node, path_uid, grace_s, now_s, 0);
}

picl_status storage_auth_check_headers(storage_auth *a, const srv_http_request *req, const char *node,
                                       int64_t path_uid, int64_t grace_s, int64_t now_s)
{
    return check(a, req, node, path_uid, grace_s, now_s, 1);
}

void storage_auth_challenge(storage_auth *a, const srv_http_request *req, int64_t now_s, char *out,
                            size_t cap)
{
    picl_hawk_auth *auth = malloc(sizeof *auth);
    picl_tokenlib_payload *p = malloc(sizeof *p);
    char key[PICL_TOKENLIB_KEY_CHARS + 1];
    memset(key, 0, sizeof key);
    int have_key = 0;
    const char *hdr = srv_http_header(req, "Authorization");
    snprintf(out, cap, "Hawk ts=\"%lld\"", (long long)now_s);
    if (!auth || !p || !hdr || picl__hawk_parse(auth, hdr, strlen(hdr)) != PICL_OK)
        goto done;
    /* the key of a genuine token, expired or not: only its holder can
     * check the tsm, and so trust the ts */
    if (cache_get_key(a, auth->id, p, key))
        have_key = 1;
    else if (picl__tokenlib_parse(p, a->secret, a->secretlen, auth->id, strlen(auth->id), now_s,
                                  (int64_t)3650 * 86400) == PICL_OK &&
             picl__tokenlib_derive_key(key, a->secret, a->secretlen, auth->id, strlen(auth->id), p->salt) ==
                 PICL_OK)
        have_key = 1;
    if (have_key) {
        char text[48], tsm[PICL_HAWK_B64_BYTES + 1];
        uint8_t mac[32];
        int n = snprintf(text, sizeof text, "hawk.1.ts\n%lld\n", (long long)now_s);
        if (picl__hmac_sha256(mac, key, strlen(key), text, (size_t)n) == PICL_OK) {
            picl__base64_encode(tsm, mac, sizeof mac);
            snprintf(out, cap, "Hawk ts=\"%lld\", tsm=\"%s\", error=\"Unauthorized\"", (long long)now_s, tsm);
        }
        picl__wipe(mac, sizeof mac);
    }
done:
    picl__wipe(key, sizeof key);
    if (p)
        picl__zfree(p, sizeof *p);
    free(auth);
}
