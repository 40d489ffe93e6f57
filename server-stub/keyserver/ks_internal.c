/* SPDX-License-Identifier: MPL-2.0 */
/* ks_internal.c -- the request machinery every keyserver route shares, above
 * the database and mail: a request body that names an account, Hawk
 * authentication, issuing tokens, the token's account, single-use tokens,
 * rate limits and the periodic sweep (declared in ks_internal.h).  The route
 * files (ks_routes.c, ks_account_ext.c, ks_recovery.c) call it; it calls
 * none of them (scripts/filecycles.py). */
#include "keyserver/ks_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/kdf.h"
#include "crypto/util.h"
#include "keyserver/ks_mail.h"
#include "keyserver/ks_parse.h"
#include "protocol/hostport.h"
#include "protocol/tokens.h"

/* ---- request bodies ---------------------------------------------------- */

picl_status ks_body_account(ks_server *s, srv_http_request *req, srv_http_response *resp, json_t **body,
                            ks_account *a)
{
    *body = ks_body(req, resp);
    if (!*body)
        return PICL_ERROR_ENCODING;
    picl_status rc = ks_parse_email(*body, "email", a->email, &a->email_len);
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        return rc;
    }
    rc = ks_db_account_by_email(s->db, a->email, a->email_len, a);
    if (rc == PICL_ERROR_NOT_FOUND)
        ks_error(resp, 400, KS_ERR_UNKNOWN, "unknown account");
    else if (rc != PICL_OK)
        ks_error_internal(resp);
    return rc;
}

/* ---- Hawk ------------------------------------------------------------- */

/* The live token of `type` a Hawk id (64 hex characters) names, into *tok
 * (after the periodic sweep; *now the time it was looked up at); 0 with the
 * answer set when there is none. */
static int hawk_token(ks_server *s, srv_http_response *resp, const picl_hawk_auth *auth, int type,
                      int64_t *now, ks_token *tok)
{
    uint8_t id[32];
    size_t idlen = strlen(auth->id), got = 0;
    if (idlen != 64 || picl__hex_decode(id, sizeof id, &got, auth->id, idlen) != PICL_OK || got != 32) {
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid token");
        return 0;
    }
    ks_sweep(s);
    *now = ks_now(s);
    picl_status rc = ks_db_token_get(s->db, id, type, *now, tok);
    if (rc == PICL_ERROR_NOT_FOUND || rc == PICL_ERROR_TOKEN) {
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
        return 0;
    }
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        return 0;
    }
    return 1;
}

/* Checks the request's Hawk MAC with the token's key and takes its nonce
 * (in memory, then in the database: several keyservers on one PostgreSQL
 * database refuse a request replayed on a sibling too); *rc the outcome.
 * 0 with the answer set when the Host header is unusable. */
static int hawk_verify_request(ks_server *s, srv_http_request *req, srv_http_response *resp,
                               const picl_hawk_auth *auth, const ks_token *tok, int64_t now, picl_status *rc)
{
    const char *hosthdr = srv_http_header(req, "Host");
    picl_hostport hp;
    if (!hosthdr || picl__hostport_parse(hosthdr, strlen(hosthdr), 80, 0, &hp) != PICL_OK) {
        ks_error(resp, 401, KS_ERR_SIGNATURE, "invalid Host header");
        return 0;
    }
    int has_body = !strcmp(req->method, "POST") || !strcmp(req->method, "PUT") || req->body_len > 0;
    const char *ctype = srv_http_header(req, "Content-Type");
    picl_hawk_request hr = {
        .method = req->method,
        .resource = req->target,
        .host = hp.host,
        .port = hp.port,
        .content_type = has_body ? (ctype ? ctype : "") : NULL,
        .body = req->body,
        .bodylen = req->body_len,
    };
    /* the nonce cache share is the account's, whatever token it uses */
    char who[32];
    snprintf(who, sizeof who, "account:%lld", (long long)tok->account);
    picl_hawk_verify_opts opts = {
        .now = now, .skew = s->skew, .require_hash = has_body, .nonces = s->nonces, .identity = who};
    *rc = picl__hawk_verify(auth, tok->hmac_key, sizeof tok->hmac_key, &hr, &opts);
    if (*rc == PICL_OK) {
        picl_status nrc = ks_db_nonce_take(s->db, auth->id, auth->ts, auth->nonce, now + 2 * s->skew);
        *rc = nrc == PICL_ERROR_CONFLICT ? PICL_HAWK_ERROR_REPLAY : nrc;
    }
    return 1;
}

/* 1 for a verified request (a session's last access noted); else the
 * answer for why not (401 with serverTime for a stale timestamp, 401/115 a
 * replay, 503 a full nonce cache, 401/109 a bad signature) and 0. */
static int hawk_answer(ks_server *s, srv_http_response *resp, picl_status rc, int type, const ks_token *tok,
                       int64_t now)
{
    switch (rc) {
    case PICL_OK:
        /* a device's last access (keyserver.md section 9); best effort */
        if (type == PICL_TOKEN_SESSION)
            ks_db_session_touch(s->db, tok->id, now);
        return 1;
    case PICL_HAWK_ERROR_STALE: {
        json_t *j = ks_error_json(401, KS_ERR_SKEW, "timestamp outside the allowed skew");
        if (j && !json_object_set_new(j, "serverTime", json_integer(now)))
            srv_http_respond_json(resp, 401, j);
        else
            resp->failed = 1;
        json_decref(j);
        break;
    }
    case PICL_HAWK_ERROR_REPLAY:
        ks_error(resp, 401, KS_ERR_NONCE, "nonce reused");
        break;
    case PICL_HAWK_ERROR_BUSY:
        ks_error_retry(resp, 503, KS_ERR_OVERLOADED, s->skew);
        break;
    case PICL_HAWK_ERROR_BAD_MAC:
    case PICL_HAWK_ERROR_MALFORMED:
    case PICL_HAWK_ERROR_TOO_LARGE:
        ks_error(resp, 401, KS_ERR_SIGNATURE, "invalid request signature");
        break;
    default:
        ks_error_internal(resp);
    }
    return 0;
}

int ks_hawk_auth(ks_server *s, srv_http_request *req, srv_http_response *resp, int type, ks_token *tok)
{
    memset(tok, 0, sizeof *tok);
    picl_hawk_auth *auth = calloc(1, sizeof *auth);
    int ok = 0;
    int64_t now = 0;
    picl_status rc = PICL_ERROR_INTERNAL;
    if (!auth) {
        ks_error_internal(resp);
        return 0;
    }
    const char *hdr = srv_http_header(req, "Authorization");
    if (!hdr) {
        ks_error(resp, 401, KS_ERR_SIGNATURE, "missing Hawk Authorization header");
        goto done;
    }
    if (picl__hawk_parse(auth, hdr, strlen(hdr)) != PICL_OK) {
        ks_error(resp, 401, KS_ERR_SIGNATURE, "invalid Hawk Authorization header");
        goto done;
    }
    if (hawk_token(s, resp, auth, type, &now, tok) && hawk_verify_request(s, req, resp, auth, tok, now, &rc))
        ok = hawk_answer(s, resp, rc, type, tok, now);
done:
    picl__zfree(auth, sizeof *auth);
    if (!ok)
        picl__wipe(tok, sizeof *tok);
    return ok;
}

/* ---- tokens, rate limits, housekeeping ---------------------------------- */

picl_status ks_token_make(ks_server *s, int type, int64_t account, uint8_t raw[32], const char *device_name,
                          const char *device_type, const char *code, int tries, int mailbox, int64_t expires,
                          ks_token *t)
{
    picl_token_keys k;
    memset(t, 0, sizeof *t);
    picl_status rc = ks_random(s, picl__token_type_name((picl_token_type)type), raw, 32);
    if (rc == PICL_OK)
        rc = picl__token_derive(&k, (picl_token_type)type, raw);
    if (rc == PICL_OK) {
        memcpy(t->id, k.id, 32);
        memcpy(t->hmac_key, k.hmac_key, 32);
        memcpy(t->request_key, k.request_key, 32);
        t->type = type;
        t->account = account;
        t->created = ks_now(s);
        t->expires = expires;
        t->tries = tries;
        t->mailbox = mailbox;
        if (code)
            snprintf(t->code, sizeof t->code, "%s", code);
        if (type == PICL_TOKEN_SESSION) {
            uint8_t dev[16];
            rc = ks_random(s, "deviceId", dev, sizeof dev);
            picl__hex_encode(t->device_id, dev, sizeof dev);
            snprintf(t->device_name, sizeof t->device_name, "%s",
                     device_name && *device_name ? device_name : "PiCL device");
            snprintf(t->device_type, sizeof t->device_type, "%s",
                     device_type && *device_type ? device_type : "desktop");
        }
    }
    if (rc != PICL_OK) {
        picl__wipe(raw, 32);
        picl__wipe(t, sizeof *t);
    }
    picl__token_keys_wipe(&k);
    return rc;
}

picl_status ks_token_issue(ks_server *s, int type, int64_t account, uint8_t raw[32], const char *device_name,
                           const char *device_type, const char *code, int tries, int mailbox, int64_t expires,
                           ks_token *out)
{
    ks_token t;
    picl_status rc =
        ks_token_make(s, type, account, raw, device_name, device_type, code, tries, mailbox, expires, &t);
    if (rc == PICL_OK)
        rc = ks_db_token_put(s->db, &t);
    if (rc == PICL_OK && out)
        *out = t;
    if (rc != PICL_OK)
        picl__wipe(raw, 32);
    picl__wipe(&t, sizeof t);
    return rc;
}

int ks_take(ks_server *s, srv_http_response *resp, ks_rate *limits, size_t n)
{
    int ok = 0;
    int64_t retry = 0;
    if (ks_db_rate_take(s->db, limits, n, ks_now(s), &ok, &retry) != PICL_OK) {
        ks_error_internal(resp);
        return 0;
    }
    if (!ok)
        ks_error_retry(resp, 429, KS_ERR_THROTTLED, retry);
    return ok;
}

void ks_sweep(ks_server *s)
{
    int64_t now = ks_now(s);
    int64_t next = __atomic_load_n(&s->next_sweep, __ATOMIC_RELAXED);
    if (now < next || !__atomic_compare_exchange_n(&s->next_sweep, &next, now + KS_SWEEP_EVERY, 0,
                                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    int64_t longest = s->login_window > s->reset_window ? s->login_window : s->reset_window;
    /* a failure only delays the next sweep: requests never depend on it */
    ks_db_sweep(s->db, now, now - KS_UNVERIFIED_TTL, now - longest);
    /* verification mails whose request did not deliver them (a crash) */
    ks_outbox_deliver(s, 0, 8, NULL);
}

/* Loads the token's account; answers 401/110 when it is gone. */
int ks_token_account(ks_server *s, srv_http_response *resp, const ks_token *t, ks_account *a)
{
    picl_status rc = ks_db_account_by_id(s->db, t->account, a);
    if (rc == PICL_OK)
        return 1;
    if (rc == PICL_ERROR_NOT_FOUND)
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
    else
        ks_error_internal(resp);
    return 0;
}

/* Consumes a single-use token; answers 401/110 if someone else did first. */
int ks_consume(ks_server *s, srv_http_response *resp, const ks_token *t)
{
    picl_status rc = ks_db_token_consume(s->db, t->id);
    if (rc == PICL_OK)
        return 1;
    if (rc == PICL_ERROR_TOKEN)
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
    else
        ks_error_internal(resp);
    return 0;
}
