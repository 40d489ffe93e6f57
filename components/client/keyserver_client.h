/* SPDX-License-Identifier: MPL-2.0 */
/* keyserver_client.h -- libcurl client for every keyserver endpoint
 * (keyserver.md section 6): Hawk signing, bundles, clock skew, backoff. */
#ifndef PICL_CLIENT_KEYSERVER_CLIENT_H
#define PICL_CLIENT_KEYSERVER_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "picl.h"
#include "protocol/stretch.h"

/*
 * A picl_ks_client talks to one keyserver (base URL "http://host:port",
 * optionally with a path prefix; the "/v1/..." paths are appended).  It is
 * not thread-safe: use one per thread.  Tokens are passed as their 32 raw
 * bytes; the client derives the Hawk id/key and bundle keys itself.
 *
 * Error mapping (every call): the keyserver's errno becomes a status --
 * 101 ACCOUNT_EXISTS, 102 UNKNOWN_ACCOUNT, 103 WRONG_PASSWORD, 104
 * UNVERIFIED, 105 INVALID_CODE, 109/110/115 TOKEN, 111 TOKEN after one retry
 * with the clock corrected from serverTime, 114/201 (429/503) BACKOFF with
 * the Retry-After remembered (calls before it has passed fail with BACKOFF
 * without touching the network), 106/107/108 PROTOCOL (a client bug or a
 * server disagreement), 123 (409, stale class map) CONFLICT from
 * picl__ksc_classmap_post (PROTOCOL elsewhere), 124 INVALID_CODE (unknown
 * recovery key), 125 TOKEN (sign in again first), 126 NOT_FOUND (unknown
 * device), 5xx/999 SERVER; a server that cannot be reached
 * NETWORK; an answer that is not the documented JSON, or a bundle whose MAC
 * fails, PROTOCOL.  picl__ksc_last() tells the details of the last answer.
 * Outputs are zeroed on any failure; secrets in them are the caller's to wipe.
 */

typedef struct picl_ks_client picl_ks_client;

typedef struct picl_ksc_result {
    int http_status;     /* last HTTP status, 0 when no answer */
    int errnum;          /* keyserver errno of the last error answer, else 0 */
    int64_t retry_after; /* seconds, from Retry-After / retryAfter */
    int64_t server_time; /* serverTime of a 401/111 */
} picl_ksc_result;

/* Creates a client for base_url (http or https).  *out is freed with
 * picl__ksc_free.  Requires NSS (picl__nss_acquire) to be held by the caller
 * for as long as the client is used. */
picl_status picl__ksc_new(picl_ks_client **out, const char *base_url);
void picl__ksc_free(picl_ks_client *c);

/* Seconds added to the local clock for Hawk timestamps (learned from 111). */
int64_t picl__ksc_clock_offset(const picl_ks_client *c);
void picl__ksc_set_clock_offset(picl_ks_client *c, int64_t offset);
/* Retry-After at most this many seconds is waited out and retried once
 * (default 0 = never wait: BACKOFF at once). */
void picl__ksc_set_max_wait(picl_ks_client *c, int64_t seconds);
const picl_ksc_result *picl__ksc_last(const picl_ks_client *c);
/* The name (1..64 characters) and type ("cli", "browser", ...) sent with
 * every session/create of this client; NULL/"" = none. */
void picl__ksc_set_device(picl_ks_client *c, const char *name, const char *type);

/*
 * Generic call: method, path ("/v1/..."), optional Hawk credentials of a
 * token (raw token + its type, picl_token_type; token NULL = no Hawk),
 * optional JSON body (borrowed; NULL = none for GET, "{}" is sent as is).
 * On PICL_OK *out (may be NULL) receives the answer object (caller decrefs).
 */
picl_status picl__ksc_call(picl_ks_client *c, const char *method, const char *path, const uint8_t *token,
                           int token_type, const json_t *body, json_t **out);

/* ---- one function per endpoint ------------------------------------------ */

typedef struct picl_ksc_auth_start {
    uint8_t srp_token[32];
    uint8_t srp_salt[32];
    uint8_t B[256];
    picl_stretch_params params;
    uint8_t main_salt[32];
} picl_ksc_auth_start;

/* uid receives 32 hex characters + NUL. */
picl_status picl__ksc_account_create(picl_ks_client *c, const char *email, size_t emaillen,
                                     const uint8_t verifier[256], const uint8_t srp_salt[32],
                                     const picl_stretch_params *params, const uint8_t main_salt[32],
                                     char uid[33]);
/* Refuses an unknown srp or stretching type (PICL_ERROR_UNSUPPORTED). */
picl_status picl__ksc_auth_start(picl_ks_client *c, const char *email, size_t emaillen,
                                 picl_ksc_auth_start *out);
/* Opens the bundle with srpK: authToken. */
picl_status picl__ksc_auth_finish(picl_ks_client *c, const uint8_t srp_token[32], const uint8_t A[256],
                                  const uint8_t M[32], const uint8_t srp_k[32], uint8_t auth_token[32]);
picl_status picl__ksc_session_create(picl_ks_client *c, const uint8_t auth_token[32],
                                     uint8_t key_fetch_token[32], uint8_t session_token[32], char uid[33],
                                     int *verified);
picl_status picl__ksc_session_destroy(picl_ks_client *c, const uint8_t session_token[32]);
picl_status picl__ksc_account_keys(picl_ks_client *c, const uint8_t key_fetch_token[32], uint8_t ka[32],
                                   uint8_t wrap_kb[32]);
/* *devices: the answer's array (caller decrefs). */
picl_status picl__ksc_account_devices(picl_ks_client *c, const uint8_t session_token[32], json_t **devices);
picl_status picl__ksc_account_reset(picl_ks_client *c, const uint8_t account_reset_token[32],
                                    const uint8_t wrap_kb[32], const uint8_t verifier[256],
                                    const uint8_t srp_salt[32], const picl_stretch_params *params,
                                    const uint8_t main_salt[32]);
/* The same, for a reset that keeps kB with a recovery key: wrap_kb is the
 * recovered kB xor the new unwrapBKey and the body names the key
 * (keyserver.md section 9); recovery_key_id NULL = a plain reset. */
picl_status picl__ksc_account_reset_rk(picl_ks_client *c, const uint8_t account_reset_token[32],
                                       const uint8_t wrap_kb[32], const uint8_t verifier[256],
                                       const uint8_t srp_salt[32], const picl_stretch_params *params,
                                       const uint8_t main_salt[32], const char *recovery_key_id);
/* GET /v1/recoveryKey/{id} with the forgot flow's accountResetToken:
 * *data = recoveryData (malloc()ed, caller frees); a wrong id is
 * PICL_ERROR_INVALID_CODE (404/124, and it costs one of the account's tries). */
picl_status picl__ksc_recovery_key_get(picl_ks_client *c, const uint8_t account_reset_token[32],
                                       const char *recovery_key_id, char **data);
picl_status picl__ksc_account_destroy(picl_ks_client *c, const uint8_t auth_token[32]);
/* email receives the raw email (NUL-terminated, <= 255 bytes). */
picl_status picl__ksc_email_status(picl_ks_client *c, const uint8_t session_token[32], char email[256],
                                   int *verified);
picl_status picl__ksc_email_resend(picl_ks_client *c, const uint8_t session_token[32]);
picl_status picl__ksc_email_verify(picl_ks_client *c, const char *uid_hex, const char *code_hex);
picl_status picl__ksc_password_change_start(picl_ks_client *c, const uint8_t auth_token[32],
                                            uint8_t key_fetch_token[32], uint8_t account_reset_token[32]);
picl_status picl__ksc_forgot_send(picl_ks_client *c, const char *email, size_t emaillen,
                                  uint8_t forgot_token[32]);
picl_status picl__ksc_forgot_resend(picl_ks_client *c, const uint8_t forgot_token[32], const char *email,
                                    size_t emaillen);
picl_status picl__ksc_forgot_verify(picl_ks_client *c, const uint8_t forgot_token[32], const char *code,
                                    uint8_t account_reset_token[32]);
/* *creds: the answer object {id, key, uid, api_endpoint, duration,
 * hashed_fxa_uid} (caller decrefs; "key" is a secret). */
picl_status picl__ksc_storage_token(picl_ks_client *c, const uint8_t session_token[32], json_t **creds);

/* The class map anchor (keyserver.md section 9, records.md section 4). */
typedef struct picl_ksc_classmap {
    uint64_t version;       /* newest registered map's version, 0 = none */
    char hmac[65];          /* its hmac, lowercase hex; "" when none */
    uint64_t epoch;         /* the key epoch it was registered in */
    uint64_t current_epoch; /* the account's key epoch now (>= 1) */
} picl_ksc_classmap;
/* GET /v1/account/classmap; a malformed answer is PICL_ERROR_PROTOCOL. */
picl_status picl__ksc_classmap_get(picl_ks_client *c, const uint8_t session_token[32],
                                   picl_ksc_classmap *out);
/* POST /v1/account/classmap {version, hmac}: PICL_ERROR_CONFLICT when the
 * keyserver holds a newer map or the same version with another hmac (409,
 * errno 123 "stale class map"). */
picl_status picl__ksc_classmap_post(picl_ks_client *c, const uint8_t session_token[32], uint64_t version,
                                    const char *hmac_hex);

#endif
