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
#define TOKEN_CACHE_SLOTS 256

typedef struct token_slot {
    char *token;
    picl_tokenlib_payload p;
    char key[PICL_TOKENLIB_KEY_CHARS + 1];
} token_slot;

struct storage_auth {
    uint8_t *secret;
    size_t secretlen;
    int64_t skew;
    picl_hawk_nonce_cache *nonces;
    storage_nonce_store shared; /* NULL, or the store sibling processes share */
    void *shared_ctx;
    pthread_mutex_t mu;
    token_slot cache[TOKEN_CACHE_SLOTS];
};

static size_t slot_of(const char *token)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *token; token++)
        h = (h ^ (uint8_t)*token) * 1099511628211u;
    return (size_t)(h % TOKEN_CACHE_SLOTS);
}

static void slot_clear(token_slot *t)
{
    free(t->token);
    picl__wipe(t, sizeof *t);
}

/* 1 and copies of the payload and key when token was verified before. */
static int cache_get(storage_auth *a, const char *token, picl_tokenlib_payload *p, char *key)
{
    token_slot *t = &a->cache[slot_of(token)];
    int hit = 0;
    pthread_mutex_lock(&a->mu);
    if (t->token && !strcmp(t->token, token)) {
        *p = t->p;
        memcpy(key, t->key, sizeof t->key);
        hit = 1;
    }
    pthread_mutex_unlock(&a->mu);
    return hit;
}

static void cache_put(storage_auth *a, const char *token, const picl_tokenlib_payload *p, const char *key)
{
    char *copy = strdup(token);
    if (!copy)
        return;
    token_slot *t = &a->cache[slot_of(token)];
    pthread_mutex_lock(&a->mu);
    slot_clear(t);
    t->token = copy;
    t->p = *p;
    memcpy(t->key, key, sizeof t->key);
    pthread_mutex_unlock(&a->mu);
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
    for (size_t i = 0; i < TOKEN_CACHE_SLOTS; i++)
        slot_clear(&a->cache[i]);
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
    picl_tokenlib_payload *p = NULL;
    char key[PICL_TOKENLIB_KEY_CHARS + 1];
    memset(key, 0, sizeof key);

    const char *hdr = srv_http_header(req, "Authorization");
    const char *hosthdr = srv_http_header(req, "Host");
    picl_hostport hp;
    if (!hdr || !hosthdr || picl__hostport_parse(hosthdr, strlen(hosthdr), 80, 0, &hp) != PICL_OK)
        goto done;
    auth = malloc(sizeof *auth);
    p = malloc(sizeof *p);
    if (!auth || !p) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    if (picl__hawk_parse(auth, hdr, strlen(hdr)) != PICL_OK)
        goto done;
    if (cache_get(a, auth->id, p, key)) {
        if (now_s > p->expires + grace_s)
            goto done;
    } else {
        if (picl__tokenlib_parse(p, a->secret, a->secretlen, auth->id, strlen(auth->id), now_s, grace_s) !=
            PICL_OK)
            goto done;
        if (picl__tokenlib_derive_key(key, a->secret, a->secretlen, auth->id, strlen(auth->id), p->salt) !=
            PICL_OK)
            goto done;
        cache_put(a, auth->id, p, key);
    }
    if (strcmp(p->node, node) != 0 || p->uid != path_uid)
        goto done;
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
    /* the nonce cache share is the user's, whatever token it uses (a user
     * can get any number of tokens) */
    char who[40];
    snprintf(who, sizeof who, "uid:%lld", (long long)p->uid);
    if (headers_only) {
        char mac[PICL_HAWK_B64_BYTES + 1];
        hr.body = NULL;
        hr.bodylen = 0;
        if (picl__hawk_mac(mac, key, strlen(key), auth->ts_text, auth->nonce, &hr,
                           auth->has_hash ? auth->hash : NULL, auth->has_ext ? auth->ext : NULL) == PICL_OK &&
            strlen(auth->mac) == PICL_HAWK_B64_BYTES && picl__memeq_ct(mac, auth->mac, PICL_HAWK_B64_BYTES) &&
            auth->ts <= now_s + a->skew && auth->ts >= now_s - a->skew)
            st = PICL_OK;
        goto done;
    }
    picl_hawk_verify_opts opts = {
        .now = now_s, .skew = a->skew, .require_hash = 0, .nonces = a->nonces, .identity = who};
    picl_status v = picl__hawk_verify(auth, key, strlen(key), &hr, &opts);
    if (v == PICL_OK)
        st = take_shared(a, auth);
    else if (v == PICL_HAWK_ERROR_BUSY)
        st = PICL_ERROR_BACKOFF;
done:
    picl__wipe(key, sizeof key);
    if (p)
        picl__zfree(p, sizeof *p);
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
    if (cache_get(a, auth->id, p, key))
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
