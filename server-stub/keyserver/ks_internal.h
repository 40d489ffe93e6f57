/* SPDX-License-Identifier: MPL-2.0 */
/* ks_internal.h -- what the keyserver's files share: the server object,
 * error answers, Hawk authentication, random draws and mail.  Who defines
 * what: ks_reply.c time, random, answers, JSON wiping, the HTTP hooks, rate
 * keys, client addresses, stretching bounds, ks_set_hex (it calls no other
 * keyserver file); ks_internal.c request bodies, Hawk, tokens, rate limits,
 * the sweep; ks_mail.c ks_send_code; the handlers their own files.  Calls go
 * from the routes down to these, never back up (scripts/filecycles.py). */
#ifndef PICL_KS_INTERNAL_H
#define PICL_KS_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "crypto/hash.h"
#include "http/http.h"
#include "keyserver/keyserver.h"
#include "keyserver/ks_db.h"
#include "protocol/hawk.h"
#include "protocol/stretch.h"

struct ks_server {
    char *listen, *data_dir, *maildir, *storage_node, *smtp_url, *mail_from;
    char *database; /* NULL = SQLite in data_dir */
    unsigned db_pool;
    int64_t purge_grace, purge_every;
    pthread_t purger; /* the periodic purge (ks_nodes.c) */
    int purger_running;
    pthread_mutex_t purge_mu; /* purger sleeps on purge_cv until stop */
    pthread_cond_t purge_cv;
    int purge_stop;
    uint8_t *secret;
    size_t secret_len;
    uint8_t hashed_uid_key[32];
    int64_t skew, srp_ttl, login_max, login_window, reset_max, reset_window;
    int64_t addr_login_max, start_max, addr_start_max;
    int64_t next_sweep; /* ks_sweep's clock, atomic */
    int limit_loopback;
    picl_stretch_params stretch_floor, stretch_ceiling;
    unsigned threads, timeout_s;
    void (*log)(void *ctx, const char *line);
    int64_t (*now_hook)(void *ctx);
    picl_status (*random_hook)(void *ctx, const char *what, uint8_t *out, size_t len);
    void *hook_ctx;
    ks_db *db;
    picl_hawk_nonce_cache *nonces;
    srv_http_server *http; /* only when ks_server_start made it */
    srv_http_hooks hooks;
    int nss;
};

/* keyserver errnos: KS_ERR_* of protocol/ks_errno.h (shared with the client) */
#include "protocol/ks_errno.h"

int64_t ks_now(const ks_server *s);
/* Random bytes for `what` (the test hook first, else NSS). */
picl_status ks_random(const ks_server *s, const char *what, uint8_t *out, size_t len);

/* Token lifetimes (keyserver.md section 9), seconds; 0 = until revoked. */
#define KS_TTL_AUTH 300
#define KS_TTL_KEY_FETCH 86400
#define KS_TTL_ACCOUNT_RESET 900 /* from /password/change/start and the reset code */
#define KS_TTL_SESSION 0
/* Accounts not verified within 48 hours are deleted. */
#define KS_UNVERIFIED_TTL (48 * 3600)
#define KS_SWEEP_EVERY 60

/* Class map versions are JSON integers 1 .. 2^53 - 1 (exact in a double). */
#define KS_CLASSMAP_MAX_VERSION 9007199254740991LL

/* The JSON error {code, errno, error, message} (NULL = out of memory). */
json_t *ks_error_json(int code, int errnum, const char *message);
/* Sets resp to the JSON error {code, errno, error, message}. */
void ks_error(srv_http_response *resp, int code, int errnum, const char *message);
/* 429/114 (or 503/201) with Retry-After and retryAfter. */
void ks_error_retry(srv_http_response *resp, int code, int errnum, int64_t retry_after);
/* The errno answer for a parse result (107 / 108 / 106) or a status. */
void ks_error_parse(srv_http_response *resp, picl_status rc);
/* 500/999 for an unexpected status.  Where it happened (function, line)
 * is remembered for this thread and added to the request's log line, never
 * to the answer. */
void ks_error_internal_(srv_http_response *resp, const char *func, int line);
#define ks_error_internal(resp) ks_error_internal_((resp), __func__, __LINE__)
/* Releases a JSON value that may hold secrets (request bodies, answers with
 * tokens or keys): when this is the last reference its strings are zeroed
 * first.  NULL is allowed. */
void ks_json_free(json_t *j);
/* Makes jansson wipe every block it frees (process-wide, once; both
 * allocators are malloc's, so blocks from before stay compatible). */
void ks_json_wipe_on_free(void);
/* Answers json (stolen reference, released with ks_json_free; NULL = out of
 * memory) with 200. */
void ks_reply(srv_http_response *resp, json_t *json);
/* The HTTP glue's hooks (srv_http_hooks, ctx = the ks_server): an error
 * the glue answers itself as a keyserver error, and after every answer the
 * Timestamp header, a storage fault's 503 + Retry-After and the log line of
 * an internal error. */
void ks_hook_error(srv_http_request *req, srv_http_response *resp, int status, srv_http_error why, void *ctx);
void ks_hook_finish(srv_http_request *req, srv_http_response *resp, void *ctx);

/* Authenticates a Hawk request with a live token of `type`: on success fills
 * *tok (caller wipes) and returns 1; else answers the error and returns 0. */
int ks_hawk_auth(ks_server *s, srv_http_request *req, srv_http_response *resp, int type, ks_token *tok);

/* Parses the body as a JSON object, answering 400/106 when it is not. */
json_t *ks_body(srv_http_request *req, srv_http_response *resp);

/* A request that names an account by "email": its body (into *body, which
 * the caller decrefs, NULL when it did not parse) and that account (into a).
 * On failure the answer is set (413/106, 400/107-108, 400/102, 500/999) and
 * the status returned. */
picl_status ks_body_account(ks_server *s, srv_http_request *req, srv_http_response *resp, json_t **body,
                            ks_account *a);

/* Makes and derives a token of `type` for account into t without storing
 * it; writes the raw token to raw (caller wipes raw and t).  device fields
 * may be NULL.  mailbox marks an accountResetToken that a reset code
 * earned.  On failure raw and t are wiped. */
picl_status ks_token_make(ks_server *s, int type, int64_t account, uint8_t raw[32], const char *device_name,
                          const char *device_type, const char *code, int tries, int mailbox, int64_t expires,
                          ks_token *t);
/* The same, and stores it (a copy to out when not NULL). */
picl_status ks_token_issue(ks_server *s, int type, int64_t account, uint8_t raw[32], const char *device_name,
                           const char *device_type, const char *code, int tries, int mailbox, int64_t expires,
                           ks_token *out);

/* Mails a verification (recovery = 0) or reset code (recovery = 1). */
picl_status ks_send_code(ks_server *s, const ks_account *a, int recovery, const char *code);

/* Sets one limit (key printf-style, at most 95 characters). */
void ks_rate_set(ks_rate *l, int64_t max, int64_t window, int count, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Checks and counts the limits in one transaction (ks_db_rate_take): 1 when
 * the request may go on; else answers 429/114 with Retry-After (or 500) and
 * returns 0. */
int ks_take(ks_server *s, srv_http_response *resp, ks_rate *limits, size_t n);
/* The client address into out; returns 1 when per-address limits apply to
 * it (not loopback, or limit_loopback). */
int ks_client_addr(ks_server *s, srv_http_request *req, char *out, size_t cap);
/* The stretching range the server accepts: the spec's values up to 4x
 * them (in test builds, PICL_TEST_STRETCH_FLOOR=cheap lowers the floor). */
void ks_stretch_bounds(picl_stretch_params *floor, picl_stretch_params *ceiling);
/* PICL_OK inside that range, else INVALID_ARGUMENT (400/107). */
picl_status ks_stretch_ok(const ks_server *s, const picl_stretch_params *p);
/* Housekeeping at most every KS_SWEEP_EVERY seconds: expired tokens and SRP
 * sessions, old rate events, accounts not verified within KS_UNVERIFIED_TTL. */
void ks_sweep(ks_server *s);

/* Adds hex(b[0..n)) to obj under key: 0, or -1 on failure. */
int ks_set_hex(json_t *obj, const char *key, const uint8_t *b, size_t n);

/* Loads the token's account into *a; answers 401/110 (gone) or 500 and
 * returns 0 on failure. */
int ks_token_account(ks_server *s, srv_http_response *resp, const ks_token *t, ks_account *a);

/* Consumes a single-use token; answers 401/110 when someone else did
 * first (or 500) and returns 0. */
int ks_consume(ks_server *s, srv_http_response *resp, const ks_token *t);

/* Recovery email and forgotten password handlers (ks_recovery.c). */
void ks_h_email_status(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_email_resend(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_email_verify(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_forgot_send(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_forgot_resend(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_forgot_verify(srv_http_request *req, srv_http_response *resp, void *ctx);

/* Storage nodes (ks_nodes.c).  The credentials /storage/token hands out
 * for the account: its node (the --storage-node, else its assignment), the
 * uid, and the secret to sign with (*secret malloc()ed, caller
 * picl__zfree()s it).  BACKOFF when no node can take the user. */
picl_status ks_nodes_credentials(ks_server *s, int64_t account, char *node, size_t node_cap, int64_t *uid,
                                 uint8_t **secret, size_t *secret_len);
/* The purge thread: started by ks_server_start, stopped (and joined) by
 * ks_server_free. */
picl_status ks_nodes_start_purger(ks_server *s);
void ks_nodes_stop_purger(ks_server *s);

/* Devices, security events and the recovery key (ks_account_ext.c,
 * keyserver.md section 9). */
/* A recovery key is made only by a session younger than this (seconds). */
#define KS_RECENT_LOGIN 600
/* Records an event of type for the account (device name may be NULL; the
 * address is req's client, none when req is NULL).  A failure is logged,
 * never answered. */
void ks_event_log(ks_server *s, srv_http_request *req, int64_t account, const char *type, const char *device);
void ks_h_device_name(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_device_destroy(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_events(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_recovery_key_post(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_recovery_key_get(srv_http_request *req, srv_http_response *resp, void *ctx);
void ks_h_recovery_key_delete(srv_http_request *req, srv_http_response *resp, void *ctx);
/* PICL_OK when id (32 hex) is the account's recovery key, NOT_FOUND when
 * it is not (or there is none), else the database's status. */
picl_status ks_recovery_key_used(ks_server *s, int64_t account, const char *id);

/* Registers every route on http with the keyserver hooks. */
picl_status ks_routes_mount(ks_server *s, srv_http_server *http, int skip_heartbeat);

#endif
