/* SPDX-License-Identifier: MPL-2.0 */
/* keyserver_client.c -- libcurl keyserver client (see keyserver_client.h). */
#include "client/keyserver_client.h"
#include "client/http_exchange.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crypto/codec.h"
#include "crypto/util.h"
#include "protocol/bundle.h"
#include "protocol/hawk.h"
#include "protocol/ks_errno.h"
#include "protocol/tokens.h"
#include "crypto/alloc.h"

#define MAX_ANSWER (64u * 1024u)
#define SRP_TYPE "SRP-6a/SHA256/2048/v1"

struct picl_ks_client {
    char *base;   /* without a trailing '/' */
    char *host;   /* for the Hawk MAC */
    char *prefix; /* path prefix of base ("" or "/x") */
    unsigned port;
    int64_t offset; /* clock correction */
    int64_t not_before;
    int64_t max_wait;
    picl_ksc_result last;
    CURL *curl;
    char dev_name[65], dev_type[16]; /* sent with session/create ("" = none) */
};

void picl__ksc_set_device(picl_ks_client *c, const char *name, const char *type)
{
    snprintf(c->dev_name, sizeof c->dev_name, "%s", name ? name : "");
    snprintf(c->dev_type, sizeof c->dev_type, "%s", type ? type : "");
}

static int64_t now_s(void) { return (int64_t)time(NULL); }

picl_status picl__ksc_new(picl_ks_client **out, const char *base_url)
{
    *out = NULL;
    if (!base_url)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_ks_client *c = calloc(1, sizeof *c);
    if (!c)
        return PICL_ERROR_NO_MEMORY;
    picl_status rc = PICL_ERROR_INVALID_ARGUMENT;
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    if (!u || curl_url_set(u, CURLUPART_URL, base_url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        goto done;
    if (strcmp(scheme, "http") && strcmp(scheme, "https"))
        goto done;
    char *end;
    long p = strtol(port, &end, 10);
    if (*end || p <= 0 || p > 65535)
        goto done;
    c->port = (unsigned)p;
    size_t plen = strlen(path);
    while (plen && path[plen - 1] == '/')
        plen--;
    rc = PICL_ERROR_NO_MEMORY;
    c->host = strdup(host);
    c->prefix = strndup(path, plen);
    c->base = strdup(base_url);
    c->curl = curl_easy_init();
    if (!c->host || !c->prefix || !c->base || !c->curl)
        goto done;
    size_t bl = strlen(c->base);
    while (bl && c->base[bl - 1] == '/')
        c->base[--bl] = 0;
    /* base ends with the prefix; cut it so base + prefix + path is the URL */
    if (plen && bl >= plen && !memcmp(c->base + bl - plen, c->prefix, plen))
        c->base[bl - plen] = 0;
    rc = PICL_OK;
done:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    if (rc != PICL_OK)
        picl__ksc_free(c);
    else
        *out = c;
    return rc;
}

void picl__ksc_free(picl_ks_client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->base);
    free(c->host);
    free(c->prefix);
    free(c);
}

int64_t picl__ksc_clock_offset(const picl_ks_client *c) { return c->offset; }
void picl__ksc_set_clock_offset(picl_ks_client *c, int64_t offset) { c->offset = offset; }
void picl__ksc_set_max_wait(picl_ks_client *c, int64_t seconds) { c->max_wait = seconds; }
const picl_ksc_result *picl__ksc_last(const picl_ks_client *c) { return &c->last; }

/* ---- transport ---------------------------------------------------------- */

static picl_status map_errno(int http, int errnum)
{
    switch (errnum) {
    case KS_ERR_EXISTS:
        return PICL_ERROR_ACCOUNT_EXISTS;
    case KS_ERR_UNKNOWN:
        return PICL_ERROR_UNKNOWN_ACCOUNT;
    case KS_ERR_PASSWORD:
        return PICL_ERROR_WRONG_PASSWORD;
    case KS_ERR_UNVERIFIED:
        return PICL_ERROR_UNVERIFIED;
    case KS_ERR_CODE:
        return PICL_ERROR_INVALID_CODE;
    case KS_ERR_SIGNATURE:
    case KS_ERR_TOKEN:
    case KS_ERR_SKEW:
    case KS_ERR_NONCE:
        return PICL_ERROR_TOKEN;
    case KS_ERR_THROTTLED:
    case KS_ERR_OVERLOADED:
        return PICL_ERROR_BACKOFF;
    case KS_ERR_JSON:
    case KS_ERR_PARAM:
    case KS_ERR_MISSING:
    case KS_ERR_LENGTH:
    case KS_ERR_TOO_LARGE:
        return PICL_ERROR_PROTOCOL;
    case KS_ERR_RECOVERY_KEY:
        return PICL_ERROR_INVALID_CODE; /* unknown recovery key */
    case KS_ERR_RECENT_LOGIN:
        return PICL_ERROR_TOKEN; /* sign in again first */
    case KS_ERR_UNKNOWN_DEVICE:
        return PICL_ERROR_NOT_FOUND; /* unknown device */
    default:
        break;
    }
    if (http == 429 || http == 503)
        return PICL_ERROR_BACKOFF;
    if (http == 401)
        return PICL_ERROR_TOKEN;
    return http >= 500 ? PICL_ERROR_SERVER : PICL_ERROR_PROTOCOL;
}

/* The Hawk Authorization line of a request with token (of token_type) into
 * *line (the caller zfrees it). */
static picl_status hawk_line(picl_ks_client *c, char **line, const char *method, const char *resource,
                             const uint8_t *token, int token_type, const char *body)
{
    picl_token_keys k;
    char id[PICL_TOKEN_ID_HEX_BYTES + 1];
    memset(&k, 0, sizeof k);
    picl_status rc = picl__token_derive(&k, (picl_token_type)token_type, token);
    if (rc == PICL_OK) {
        picl__token_id_hex(id, &k);
        picl_hawk_request hr = {.method = method,
                                .resource = resource,
                                .host = c->host,
                                .port = c->port,
                                .content_type = body ? "application/json" : NULL,
                                .body = body,
                                .bodylen = body ? strlen(body) : 0};
        rc = picl__hx_hawk_line(line, id, k.hmac_key, sizeof k.hmac_key, &hr, now_s() + c->offset);
    }
    picl__token_keys_wipe(&k);
    return rc;
}

/* An error answer (status != 200, JSON j or NULL): the errno, the clock
 * fixed from serverTime (111) and the Retry-After honoured; *again set when
 * a retry is worth it. */
static picl_status error_answer(picl_ks_client *c, long status, const json_t *j, int64_t retry_after,
                                int signed_req, int *again, int attempt)
{
    json_t *en = json_is_object(j) ? json_object_get(j, "errno") : NULL;
    json_t *st = json_is_object(j) ? json_object_get(j, "serverTime") : NULL;
    json_t *ra = json_is_object(j) ? json_object_get(j, "retryAfter") : NULL;
    c->last.errnum = json_is_integer(en) ? (int)json_integer_value(en) : 0;
    /* Retry-After in seconds below a week; else the body's retryAfter */
    c->last.retry_after = retry_after > 0 && retry_after < 86400 * 7 ? retry_after : 0;
    if (!c->last.retry_after && json_is_integer(ra) && json_integer_value(ra) > 0)
        c->last.retry_after = json_integer_value(ra);
    picl_status rc = map_errno((int)status, c->last.errnum);
    if (c->last.errnum == KS_ERR_SKEW && json_is_integer(st)) {
        c->last.server_time = json_integer_value(st);
        /* a serverTime before 1970 or more than a year away is no clock to
         * follow (the storage client's bound): the 111 stays a TOKEN error
         * instead of a retry signed with a time Hawk refuses (found by
         * fuzz_ks_client_calls) */
        if (attempt == 0 && signed_req && c->last.server_time > 0 &&
            llabs((long long)(c->last.server_time - now_s())) <= 366LL * 86400) {
            c->offset = c->last.server_time - now_s();
            *again = 1;
        }
    }
    if (rc == PICL_ERROR_BACKOFF && c->last.retry_after > 0) {
        if (attempt == 0 && c->last.retry_after <= c->max_wait) {
            sleep((unsigned)c->last.retry_after);
            *again = 1;
        } else {
            c->not_before = now_s() + c->last.retry_after;
        }
    }
    return rc;
}

/* One HTTP exchange (http_exchange.h); *again set when a retry is worth it
 * (clock fixed or a short Retry-After waited out). */
static picl_status exchange(picl_ks_client *c, const char *method, const char *path, const uint8_t *token,
                            int token_type, const char *body, json_t **out, int *again, int attempt)
{
    picl_status rc = PICL_ERROR_NO_MEMORY;
    char *authz = NULL, *url = NULL, *resource = NULL;
    picl_hx_response rs;
    memset(&rs, 0, sizeof rs);
    *again = 0;
    size_t rl = strlen(c->prefix) + strlen(path) + 1;
    resource = malloc(rl);
    url = malloc(strlen(c->base) + rl);
    if (!resource || !url)
        goto done;
    snprintf(resource, rl, "%s%s", c->prefix, path);
    snprintf(url, strlen(c->base) + rl, "%s%s", c->base, resource);
    if (token && (rc = hawk_line(c, &authz, method, resource, token, token_type, body)) != PICL_OK)
        goto done;
    const char *headers[3] = {NULL, NULL, NULL};
    size_t nh = 0;
    if (authz)
        headers[nh++] = authz;
    if (body)
        headers[nh++] = "Content-Type: application/json";
    picl_hx_request rq = {.method = method,
                          .url = url,
                          .headers = headers,
                          .body = body,
                          .body_len = body ? strlen(body) : 0,
                          .max_answer = MAX_ANSWER,
                          .timeout_s = 120L};
    rc = picl__hx_perform(c->curl, &rq, &rs);
    if (rc != PICL_OK) {
        /* more than MAX_ANSWER is no keyserver answer: a protocol failure */
        rc = rc == PICL_ERROR_TOO_LARGE ? PICL_ERROR_PROTOCOL : rc;
        goto done;
    }
    c->last.http_status = (int)rs.status;
    json_t *j = rs.body ? json_loadb(rs.body, rs.len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (rs.status == 200 && json_is_object(j) && out) {
        *out = j;
        j = NULL;
        rc = PICL_OK;
    } else if (rs.status == 200) {
        rc = json_is_object(j) ? PICL_OK : PICL_ERROR_PROTOCOL;
    } else {
        rc = error_answer(c, rs.status, j, rs.retry_after_s, token != NULL, again, attempt);
    }
    json_decref(j);
done:
    if (authz)
        picl__zfree(authz, strlen(authz));
    free(url);
    free(resource);
    picl__hx_response_free(&rs);
    return rc;
}

picl_status picl__ksc_call(picl_ks_client *c, const char *method, const char *path, const uint8_t *token,
                           int token_type, const json_t *body, json_t **out)
{
    if (out)
        *out = NULL;
    if (!c || !method || !path || path[0] != '/')
        return PICL_ERROR_INVALID_ARGUMENT;
    memset(&c->last, 0, sizeof c->last);
    if (c->not_before && now_s() < c->not_before) {
        c->last.retry_after = c->not_before - now_s();
        return PICL_ERROR_BACKOFF;
    }
    c->not_before = 0;
    char *text = NULL;
    if (body) {
        text = picl__json_dumps(body, JSON_COMPACT);
        if (!text)
            return PICL_ERROR_NO_MEMORY;
    }
    picl_status rc;
    int again = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = exchange(c, method, path, token, token_type, text, out, &again, attempt);
        if (!again)
            break;
        memset(&c->last, 0, sizeof c->last);
    }
    if (text)
        picl__zfree(text, strlen(text));
    return rc;
}

/* ---- answer readers ----------------------------------------------------- */

static picl_status get_hex(const json_t *obj, const char *key, uint8_t *out, size_t n)
{
    json_t *v = json_object_get(obj, key);
    size_t got = 0;
    if (!json_is_string(v) || json_string_length(v) != 2 * n ||
        picl__hex_decode(out, n, &got, json_string_value(v), 2 * n) != PICL_OK || got != n) {
        memset(out, 0, n);
        return PICL_ERROR_PROTOCOL;
    }
    return PICL_OK;
}

static picl_status get_uint(const json_t *obj, const char *key, uint64_t max, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || (uint64_t)json_integer_value(v) > max)
        return PICL_ERROR_PROTOCOL;
    *out = (uint64_t)json_integer_value(v);
    return PICL_OK;
}

static picl_status open_bundle(const json_t *obj, const uint8_t key[32], const char *context, uint8_t *out,
                               size_t len)
{
    json_t *v = json_object_get(obj, "bundle");
    if (!json_is_string(v) || picl__bundle_open_hex(out, len, key, context, json_string_value(v),
                                                    json_string_length(v)) != PICL_OK) {
        memset(out, 0, len);
        return PICL_ERROR_PROTOCOL;
    }
    return PICL_OK;
}

static json_t *hex_json(const void *b, size_t n)
{
    char *h = picl__hex_encode_alloc(b, n);
    json_t *j = h ? json_string(h) : NULL;
    if (h)
        picl__zfree(h, 2 * n);
    return j;
}

static json_t *stretch_json(const picl_stretch_params *p, const uint8_t salt[32])
{
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "type", PICL_STRETCH_TYPE, "PBKDF2_rounds_1",
                     (json_int_t)p->pbkdf2_rounds_1, "scrypt_N", (json_int_t)p->scrypt_n, "scrypt_r",
                     (json_int_t)p->scrypt_r, "scrypt_p", (json_int_t)p->scrypt_p, "PBKDF2_rounds_2",
                     (json_int_t)p->pbkdf2_rounds_2, "salt", hex_json(salt, 32));
}

/* ---- endpoints ----------------------------------------------------------- */

picl_status picl__ksc_account_create(picl_ks_client *c, const char *email, size_t emaillen,
                                     const uint8_t verifier[256], const uint8_t srp_salt[32],
                                     const picl_stretch_params *params, const uint8_t main_salt[32],
                                     char uid[33])
{
    uid[0] = 0;
    json_t *ans = NULL;
    json_t *body = json_pack("{s:o, s:{s:s, s:o, s:o}, s:o}", "email", hex_json(email, emaillen), "srp",
                             "type", SRP_TYPE, "verifier", hex_json(verifier, 256), "salt",
                             hex_json(srp_salt, 32), "passwordStretching", stretch_json(params, main_salt));
    if (!body)
        return PICL_ERROR_NO_MEMORY;
    picl_status rc = picl__ksc_call(c, "POST", "/v1/account/create", NULL, 0, body, &ans);
    json_decref(body);
    if (rc == PICL_OK) {
        uint8_t u[16];
        rc = get_hex(ans, "uid", u, sizeof u);
        if (rc == PICL_OK)
            picl__hex_encode(uid, u, sizeof u);
    }
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_auth_start(picl_ks_client *c, const char *email, size_t emaillen,
                                 picl_ksc_auth_start *out)
{
    memset(out, 0, sizeof *out);
    json_t *ans = NULL;
    json_t *body = json_pack("{s:o}", "email", hex_json(email, emaillen));
    if (!body)
        return PICL_ERROR_NO_MEMORY;
    picl_status rc = picl__ksc_call(c, "POST", "/v1/auth/start", NULL, 0, body, &ans);
    json_decref(body);
    if (rc != PICL_OK)
        return rc;
    json_t *srp = json_object_get(ans, "srp");
    json_t *ps = json_object_get(ans, "passwordStretching");
    rc = get_hex(ans, "srpToken", out->srp_token, 32);
    if (rc == PICL_OK && (!json_is_object(srp) || !json_is_object(ps)))
        rc = PICL_ERROR_PROTOCOL;
    if (rc == PICL_OK) {
        json_t *t1 = json_object_get(srp, "type"), *t2 = json_object_get(ps, "type");
        if (!json_is_string(t1) || !json_is_string(t2))
            rc = PICL_ERROR_PROTOCOL;
        else if (strcmp(json_string_value(t1), SRP_TYPE) || strcmp(json_string_value(t2), PICL_STRETCH_TYPE))
            rc = PICL_ERROR_UNSUPPORTED;
    }
    if (rc == PICL_OK)
        rc = get_hex(srp, "salt", out->srp_salt, 32);
    if (rc == PICL_OK)
        rc = get_hex(srp, "B", out->B, 256);
    if (rc == PICL_OK)
        rc = get_hex(ps, "salt", out->main_salt, 32);
    uint64_t v[5] = {0};
    const char *names[5] = {"PBKDF2_rounds_1", "scrypt_N", "scrypt_r", "scrypt_p", "PBKDF2_rounds_2"};
    for (int i = 0; rc == PICL_OK && i < 5; i++)
        rc = get_uint(ps, names[i], i == 1 ? (1ull << 40) : 0xffffffffull, &v[i]);
    if (rc == PICL_OK) {
        out->params.pbkdf2_rounds_1 = (uint32_t)v[0];
        out->params.scrypt_n = v[1];
        out->params.scrypt_r = (uint32_t)v[2];
        out->params.scrypt_p = (uint32_t)v[3];
        out->params.pbkdf2_rounds_2 = (uint32_t)v[4];
    } else {
        picl__wipe(out, sizeof *out);
    }
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_auth_finish(picl_ks_client *c, const uint8_t srp_token[32], const uint8_t A[256],
                                  const uint8_t M[32], const uint8_t srp_k[32], uint8_t auth_token[32])
{
    json_t *ans = NULL;
    memset(auth_token, 0, 32);
    json_t *body = json_pack("{s:o, s:o, s:o}", "srpToken", hex_json(srp_token, 32), "A", hex_json(A, 256),
                             "M", hex_json(M, 32));
    if (!body)
        return PICL_ERROR_NO_MEMORY;
    picl_status rc = picl__ksc_call(c, "POST", "/v1/auth/finish", NULL, 0, body, &ans);
    json_decref(body);
    if (rc == PICL_OK)
        rc = open_bundle(ans, srp_k, PICL_BUNDLE_AUTH_FINISH, auth_token, 32);
    json_decref(ans);
    return rc;
}

/* POSTs {} (or body) with Hawk of token and opens a 64-byte bundle keyed by
 * the token's requestKey. */
static picl_status pair_call(picl_ks_client *c, const char *path, const uint8_t token[32], int type,
                             const char *context, uint8_t a[32], uint8_t b[32], json_t **ans)
{
    picl_token_keys k;
    uint8_t pair[64];
    json_t *body = json_object();
    /* the device names itself as it signs in (keyserver.md 9) */
    if (body && type == PICL_TOKEN_AUTH && !strcmp(path, "/v1/session/create") && *c->dev_name &&
        (json_object_set_new(body, "name", json_string(c->dev_name)) ||
         json_object_set_new(body, "type", json_string(c->dev_type)))) {
        json_decref(body);
        body = NULL;
    }
    picl_status rc = body ? picl__token_derive(&k, (picl_token_type)type, token) : PICL_ERROR_NO_MEMORY;
    if (rc == PICL_OK)
        rc = picl__ksc_call(c, "POST", path, token, type, body, ans);
    if (rc == PICL_OK)
        rc = open_bundle(*ans, k.request_key, context, pair, sizeof pair);
    if (rc == PICL_OK) {
        memcpy(a, pair, 32);
        memcpy(b, pair + 32, 32);
    } else {
        memset(a, 0, 32);
        memset(b, 0, 32);
    }
    picl__wipe(pair, sizeof pair);
    picl__token_keys_wipe(&k);
    json_decref(body);
    return rc;
}

picl_status picl__ksc_session_create(picl_ks_client *c, const uint8_t auth_token[32],
                                     uint8_t key_fetch_token[32], uint8_t session_token[32], char uid[33],
                                     int *verified)
{
    json_t *ans = NULL;
    uid[0] = 0;
    *verified = 0;
    picl_status rc = pair_call(c, "/v1/session/create", auth_token, PICL_TOKEN_AUTH,
                               PICL_BUNDLE_SESSION_CREATE, key_fetch_token, session_token, &ans);
    if (rc == PICL_OK) {
        uint8_t u[16];
        json_t *v = json_object_get(ans, "verified");
        rc = get_hex(ans, "uid", u, sizeof u);
        if (rc == PICL_OK && !json_is_boolean(v))
            rc = PICL_ERROR_PROTOCOL;
        if (rc == PICL_OK) {
            picl__hex_encode(uid, u, sizeof u);
            *verified = json_is_true(v);
        } else {
            memset(key_fetch_token, 0, 32);
            memset(session_token, 0, 32);
        }
    }
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_session_destroy(picl_ks_client *c, const uint8_t session_token[32])
{
    json_t *body = json_object();
    picl_status rc =
        body ? picl__ksc_call(c, "POST", "/v1/session/destroy", session_token, PICL_TOKEN_SESSION, body, NULL)
             : PICL_ERROR_NO_MEMORY;
    json_decref(body);
    return rc;
}

picl_status picl__ksc_account_keys(picl_ks_client *c, const uint8_t key_fetch_token[32], uint8_t ka[32],
                                   uint8_t wrap_kb[32])
{
    picl_token_keys k;
    uint8_t pair[64];
    json_t *ans = NULL;
    picl_status rc = picl__token_derive(&k, PICL_TOKEN_KEY_FETCH, key_fetch_token);
    if (rc == PICL_OK)
        rc = picl__ksc_call(c, "GET", "/v1/account/keys", key_fetch_token, PICL_TOKEN_KEY_FETCH, NULL, &ans);
    if (rc == PICL_OK)
        rc = open_bundle(ans, k.request_key, PICL_BUNDLE_ACCOUNT_KEYS, pair, sizeof pair);
    if (rc == PICL_OK) {
        memcpy(ka, pair, 32);
        memcpy(wrap_kb, pair + 32, 32);
    } else {
        memset(ka, 0, 32);
        memset(wrap_kb, 0, 32);
    }
    picl__wipe(pair, sizeof pair);
    picl__token_keys_wipe(&k);
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_account_devices(picl_ks_client *c, const uint8_t session_token[32], json_t **devices)
{
    json_t *ans = NULL;
    *devices = NULL;
    picl_status rc =
        picl__ksc_call(c, "GET", "/v1/account/devices", session_token, PICL_TOKEN_SESSION, NULL, &ans);
    if (rc == PICL_OK) {
        json_t *d = json_object_get(ans, "devices");
        if (json_is_array(d))
            *devices = json_incref(d);
        else
            rc = PICL_ERROR_PROTOCOL;
    }
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_account_reset(picl_ks_client *c, const uint8_t account_reset_token[32],
                                    const uint8_t wrap_kb[32], const uint8_t verifier[256],
                                    const uint8_t srp_salt[32], const picl_stretch_params *params,
                                    const uint8_t main_salt[32])
{
    return picl__ksc_account_reset_rk(c, account_reset_token, wrap_kb, verifier, srp_salt, params, main_salt,
                                      NULL);
}

picl_status picl__ksc_recovery_key_get(picl_ks_client *c, const uint8_t account_reset_token[32],
                                       const char *recovery_key_id, char **data)
{
    json_t *ans = NULL;
    char path[64];
    *data = NULL;
    if (strlen(recovery_key_id) != 32 || strspn(recovery_key_id, "0123456789abcdef") != 32)
        return PICL_ERROR_INVALID_ARGUMENT;
    snprintf(path, sizeof path, "/v1/recoveryKey/%s", recovery_key_id);
    picl_status rc =
        picl__ksc_call(c, "GET", path, account_reset_token, PICL_TOKEN_ACCOUNT_RESET, NULL, &ans);
    if (rc == PICL_OK) {
        const char *d = json_string_value(json_object_get(ans, "recoveryData"));
        *data = d ? strdup(d) : NULL;
        if (!d)
            rc = PICL_ERROR_PROTOCOL;
        else if (!*data)
            rc = PICL_ERROR_NO_MEMORY;
    }
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_account_reset_rk(picl_ks_client *c, const uint8_t account_reset_token[32],
                                       const uint8_t wrap_kb[32], const uint8_t verifier[256],
                                       const uint8_t srp_salt[32], const picl_stretch_params *params,
                                       const uint8_t main_salt[32], const char *recovery_key_id)
{
    picl_token_keys k;
    uint8_t payload[288];
    char *bundle = NULL;
    json_t *body = NULL;
    memcpy(payload, wrap_kb, 32);
    memcpy(payload + 32, verifier, 256);
    picl_status rc = picl__token_derive(&k, PICL_TOKEN_ACCOUNT_RESET, account_reset_token);
    if (rc == PICL_OK)
        rc =
            picl__bundle_seal_hex(&bundle, k.request_key, PICL_BUNDLE_ACCOUNT_RESET, payload, sizeof payload);
    if (rc == PICL_OK) {
        body = json_pack("{s:s, s:{s:s, s:o}, s:o}", "bundle", bundle, "srp", "type", SRP_TYPE, "salt",
                         hex_json(srp_salt, 32), "passwordStretching", stretch_json(params, main_salt));
        if (body && recovery_key_id &&
            json_object_set_new(body, "recoveryKeyId", json_string(recovery_key_id))) {
            json_decref(body);
            body = NULL;
        }
        rc = body ? picl__ksc_call(c, "POST", "/v1/account/reset", account_reset_token,
                                   PICL_TOKEN_ACCOUNT_RESET, body, NULL)
                  : PICL_ERROR_NO_MEMORY;
    }
    json_decref(body);
    free(bundle);
    picl__wipe(payload, sizeof payload);
    picl__token_keys_wipe(&k);
    return rc;
}

picl_status picl__ksc_account_destroy(picl_ks_client *c, const uint8_t auth_token[32])
{
    json_t *body = json_object();
    picl_status rc =
        body ? picl__ksc_call(c, "POST", "/v1/account/destroy", auth_token, PICL_TOKEN_AUTH, body, NULL)
             : PICL_ERROR_NO_MEMORY;
    json_decref(body);
    return rc;
}

picl_status picl__ksc_email_status(picl_ks_client *c, const uint8_t session_token[32], char email[256],
                                   int *verified)
{
    json_t *ans = NULL;
    email[0] = 0;
    *verified = 0;
    picl_status rc =
        picl__ksc_call(c, "GET", "/v1/recovery_email/status", session_token, PICL_TOKEN_SESSION, NULL, &ans);
    if (rc == PICL_OK) {
        json_t *e = json_object_get(ans, "email"), *v = json_object_get(ans, "verified");
        size_t got = 0;
        if (!json_is_string(e) || !json_is_boolean(v) ||
            picl__hex_decode((uint8_t *)email, 255, &got, json_string_value(e), json_string_length(e)) !=
                PICL_OK) {
            rc = PICL_ERROR_PROTOCOL;
            got = 0;
        } else {
            *verified = json_is_true(v);
        }
        email[got] = 0;
    }
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_email_resend(picl_ks_client *c, const uint8_t session_token[32])
{
    json_t *body = json_object();
    picl_status rc = body ? picl__ksc_call(c, "POST", "/v1/recovery_email/resend_code", session_token,
                                           PICL_TOKEN_SESSION, body, NULL)
                          : PICL_ERROR_NO_MEMORY;
    json_decref(body);
    return rc;
}

picl_status picl__ksc_email_verify(picl_ks_client *c, const char *uid_hex, const char *code_hex)
{
    json_t *body = json_pack("{s:s, s:s}", "uid", uid_hex, "code", code_hex);
    picl_status rc = body ? picl__ksc_call(c, "POST", "/v1/recovery_email/verify_code", NULL, 0, body, NULL)
                          : PICL_ERROR_NO_MEMORY;
    json_decref(body);
    return rc;
}

picl_status picl__ksc_password_change_start(picl_ks_client *c, const uint8_t auth_token[32],
                                            uint8_t key_fetch_token[32], uint8_t account_reset_token[32])
{
    json_t *ans = NULL;
    picl_status rc = pair_call(c, "/v1/password/change/start", auth_token, PICL_TOKEN_AUTH,
                               PICL_BUNDLE_PASSWORD_CHANGE, key_fetch_token, account_reset_token, &ans);
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_forgot_send(picl_ks_client *c, const char *email, size_t emaillen,
                                  uint8_t forgot_token[32])
{
    json_t *ans = NULL;
    json_t *body = json_pack("{s:o}", "email", hex_json(email, emaillen));
    memset(forgot_token, 0, 32);
    picl_status rc = body ? picl__ksc_call(c, "POST", "/v1/password/forgot/send_code", NULL, 0, body, &ans)
                          : PICL_ERROR_NO_MEMORY;
    if (rc == PICL_OK)
        rc = get_hex(ans, "forgotPasswordToken", forgot_token, 32);
    json_decref(body);
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_forgot_resend(picl_ks_client *c, const uint8_t forgot_token[32], const char *email,
                                    size_t emaillen)
{
    json_t *body = json_pack("{s:o}", "email", hex_json(email, emaillen));
    picl_status rc = body ? picl__ksc_call(c, "POST", "/v1/password/forgot/resend_code", forgot_token,
                                           PICL_TOKEN_FORGOT_PASSWORD, body, NULL)
                          : PICL_ERROR_NO_MEMORY;
    json_decref(body);
    return rc;
}

picl_status picl__ksc_forgot_verify(picl_ks_client *c, const uint8_t forgot_token[32], const char *code,
                                    uint8_t account_reset_token[32])
{
    json_t *ans = NULL;
    memset(account_reset_token, 0, 32);
    json_t *body = json_pack("{s:s}", "code", code);
    picl_status rc = body ? picl__ksc_call(c, "POST", "/v1/password/forgot/verify_code", forgot_token,
                                           PICL_TOKEN_FORGOT_PASSWORD, body, &ans)
                          : PICL_ERROR_NO_MEMORY;
    if (rc == PICL_OK)
        rc = get_hex(ans, "accountResetToken", account_reset_token, 32);
    json_decref(body);
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_storage_token(picl_ks_client *c, const uint8_t session_token[32], json_t **creds)
{
    *creds = NULL;
    picl_status rc =
        picl__ksc_call(c, "GET", "/v1/storage/token", session_token, PICL_TOKEN_SESSION, NULL, creds);
    if (rc == PICL_OK &&
        (!json_is_string(json_object_get(*creds, "id")) || !json_is_string(json_object_get(*creds, "key")) ||
         !json_is_string(json_object_get(*creds, "api_endpoint")))) {
        json_decref(*creds);
        *creds = NULL;
        rc = PICL_ERROR_PROTOCOL;
    }
    return rc;
}

/* ---- the class map anchor (keyserver.md section 9) ------------------------ */

/* An integer field 0..max. */
static picl_status get_count(const json_t *obj, const char *key, uint64_t max, uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
        return PICL_ERROR_PROTOCOL;
    *out = (uint64_t)json_integer_value(v);
    return PICL_OK;
}

picl_status picl__ksc_classmap_get(picl_ks_client *c, const uint8_t session_token[32], picl_ksc_classmap *out)
{
    memset(out, 0, sizeof *out);
    json_t *ans = NULL;
    picl_status rc =
        picl__ksc_call(c, "GET", "/v1/account/classmap", session_token, PICL_TOKEN_SESSION, NULL, &ans);
    if (rc == PICL_OK) {
        const uint64_t max = 9007199254740991ULL; /* 2^53 - 1 */
        json_t *h = json_object_get(ans, "hmac");
        uint8_t mac[32];
        if (get_count(ans, "version", max, &out->version) != PICL_OK ||
            get_count(ans, "epoch", max, &out->epoch) != PICL_OK ||
            get_uint(ans, "currentEpoch", max, &out->current_epoch) != PICL_OK)
            rc = PICL_ERROR_PROTOCOL;
        else if (out->version == 0 && !json_is_null(h) && h)
            rc = PICL_ERROR_PROTOCOL;
        else if (out->version > 0 && get_hex(ans, "hmac", mac, 32) != PICL_OK)
            rc = PICL_ERROR_PROTOCOL;
        else if (out->version > 0)
            picl__hex_encode(out->hmac, mac, 32);
    }
    if (rc != PICL_OK)
        memset(out, 0, sizeof *out);
    json_decref(ans);
    return rc;
}

picl_status picl__ksc_classmap_post(picl_ks_client *c, const uint8_t session_token[32], uint64_t version,
                                    const char *hmac_hex)
{
    uint8_t mac[32];
    if (version < 1 || !hmac_hex || picl__hex_decode_exact(mac, 32, hmac_hex) != PICL_OK)
        return PICL_ERROR_INVALID_ARGUMENT;
    char hex[65];
    picl__hex_encode(hex, mac, 32);
    json_t *body = json_pack("{s:I, s:s}", "version", (json_int_t)version, "hmac", hex);
    picl_status rc = body ? picl__ksc_call(c, "POST", "/v1/account/classmap", session_token,
                                           PICL_TOKEN_SESSION, body, NULL)
                          : PICL_ERROR_NO_MEMORY;
    json_decref(body);
    if (rc != PICL_OK && picl__ksc_last(c)->http_status == 409 &&
        picl__ksc_last(c)->errnum == KS_ERR_STALE_CLASSMAP)
        rc = PICL_ERROR_CONFLICT;
    return rc;
}
