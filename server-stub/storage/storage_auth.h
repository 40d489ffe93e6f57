/* SPDX-License-Identifier: MPL-2.0 */
/* storage_auth.h -- the one authentication check of the storage server:
 * tokenlib token (signature, expiry, node, uid) + Hawk (MAC, skew, nonce). */
#ifndef PICL_STORAGE_AUTH_H
#define PICL_STORAGE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "picl.h"

typedef struct storage_auth storage_auth;

/* secret is copied (wiped on free); secretlen < 32 is PICL_ERROR_INVALID_ARGUMENT.
 * skew_s: allowed Hawk clock skew.  Caller frees with storage_auth_free(). */
picl_status storage_auth_new(storage_auth **out, const uint8_t *secret, size_t secretlen, int64_t skew_s);
/* The same with a nonce cache of nonce_entries live entries (0 = the
 * default, 2^19); each user (uid) may hold 1/32 of them (at least 1): past
 * its share a user's requests get PICL_ERROR_BACKOFF (503), others' not. */
picl_status storage_auth_new_sized(storage_auth **out, const uint8_t *secret, size_t secretlen,
                                   int64_t skew_s, size_t nonce_entries);
void storage_auth_free(storage_auth *a);

/* Several storage processes on one database: once a request passed the
 * in-memory nonce cache, its nonce is also taken in a store they share
 * (storage_db.h sdb_nonce_take): fn records `key` (hex SHA-256 of the
 * token, ts and nonce) until `expires` (unix seconds) and answers
 * PICL_ERROR_CONFLICT when a sibling saw it already, so a request captured
 * at one process is refused at the others (401); any other failure is 503
 * (fail closed: a check that cannot be made lets nothing through).  fn
 * NULL: the in-memory cache alone (one process per database). */
typedef picl_status (*storage_nonce_store)(void *ctx, const char *key, int64_t expires);
void storage_auth_share_nonces(storage_auth *a, storage_nonce_store fn, void *ctx);

/*
 * Authenticates req for the user `path_uid` of the URL:
 *   Authorization missing / not Hawk / malformed, token invalid or tampered,
 *   expired (beyond grace_s), node != `node`, uid != path_uid, bad MAC or
 *   payload hash, stale ts, reused nonce          -> PICL_ERROR_TOKEN (401)
 *   nonce cache full, or this uid's share of it   -> PICL_ERROR_BACKOFF (503)
 * The Hawk MAC covers req->target exactly as sent and the Host header's
 * host and port (80 when absent).  now_s: unix seconds.  Needs NSS.
 */
picl_status storage_auth_check(storage_auth *a, const srv_http_request *req, const char *node,
                               int64_t path_uid, int64_t grace_s, int64_t now_s);

/* The same from the headers alone, before a body is read (http.h
 * before_body): token, node, uid, MAC over the announced payload hash, ts.
 * It neither checks the payload hash nor records the nonce, so a request
 * it lets through still goes through storage_auth_check with its body. */
picl_status storage_auth_check_headers(storage_auth *a, const srv_http_request *req, const char *node,
                                       int64_t path_uid, int64_t grace_s, int64_t now_s);

/* The WWW-Authenticate value of a 401 into out: Hawk ts="<now_s>", and when
 * the request's token is genuine (expired or not) tsm="<HMAC-SHA256 of
 * 'hawk.1.ts\n<ts>\n' under its Hawk key, base64>", so that a client with a
 * wrong clock learns the server's time from an answer it can trust. */
void storage_auth_challenge(storage_auth *a, const srv_http_request *req, int64_t now_s, char *out,
                            size_t cap);

/* The Host header is parsed by protocol/hostport.h (picl__hostport_parse). */

#endif
