/* SPDX-License-Identifier: MPL-2.0 */
/* ks_routes.c -- the keyserver endpoints of keyserver.md section 6. */
#include "keyserver/ks_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/srp.h"
#include "crypto/util.h"
#include "keyserver/ks_mail.h"
#include "keyserver/ks_parse.h"
#include "protocol/bundle.h"
#include "protocol/tokenlib.h"
#include "protocol/tokens.h"

/* Seals payload under key/context and answers {bundle} (plus extra). */
static void reply_bundle(srv_http_response *resp, json_t *extra, const uint8_t key[32], const char *context,
                         const uint8_t *payload, size_t len)
{
    char *hex = NULL;
    json_t *j = extra ? extra : json_object();
    if (!j || picl__bundle_seal_hex(&hex, key, context, payload, len) != PICL_OK ||
        json_object_set_new(j, "bundle", json_string(hex))) {
        free(hex);
        json_decref(j);
        ks_error_internal(resp);
        return;
    }
    free(hex);
    ks_reply(resp, j);
}

static json_t *stretch_json(const ks_account *a)
{
    json_t *p =
        json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "type", PICL_STRETCH_TYPE, "PBKDF2_rounds_1",
                  (json_int_t)a->params.pbkdf2_rounds_1, "scrypt_N", (json_int_t)a->params.scrypt_n,
                  "scrypt_r", (json_int_t)a->params.scrypt_r, "scrypt_p", (json_int_t)a->params.scrypt_p,
                  "PBKDF2_rounds_2", (json_int_t)a->params.pbkdf2_rounds_2);
    if (p && ks_set_hex(p, "salt", a->main_salt, 32)) {
        json_decref(p);
        p = NULL;
    }
    return p;
}

/* The login limits of an account and the client's address: failed proofs
 * (lim[0..1], counted at /auth/finish) and /auth/start calls (lim[2..3],
 * counted at /auth/start).  An address limit is "" when it does not apply. */
static void login_limits(ks_server *s, srv_http_request *req, int64_t account, int at_start, ks_rate lim[4])
{
    char addr[64];
    int by_addr = ks_client_addr(s, req, addr, sizeof addr);
    ks_rate_set(&lim[0], s->login_max, s->login_window, !at_start, "login:%lld", (long long)account);
    ks_rate_set(&lim[1], s->addr_login_max, s->login_window, !at_start, "ip:%s", addr);
    ks_rate_set(&lim[2], s->start_max, s->login_window, at_start, "start:%lld", (long long)account);
    ks_rate_set(&lim[3], s->addr_start_max, s->login_window, at_start, "start-ip:%s", addr);
    if (!by_addr)
        lim[1].key[0] = lim[3].key[0] = 0;
}

/* ---- POST /v1/account/create ------------------------------------------ */

static void h_account_create(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_account *a = calloc(1, sizeof *a);
    json_t *body = a ? ks_body(req, resp) : NULL;
    if (!a)
        ks_error_internal(resp);
    if (!body)
        goto done;
    picl_status rc = ks_parse_email(body, "email", a->email, &a->email_len);
    if (rc == PICL_OK)
        rc = ks_parse_srp(body, a->srp_salt, a->verifier);
    if (rc == PICL_OK)
        rc = ks_parse_stretch(body, &a->params, a->main_salt);
    if (rc == PICL_OK)
        rc = ks_stretch_ok(s, &a->params);
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        goto done;
    }
    ks_sweep(s); /* also frees the emails of accounts never verified in time */
    a->created = ks_now(s);
    rc = ks_random(s, "uid", a->uid, KS_UID_BYTES);
    if (rc == PICL_OK)
        rc = ks_random(s, "kA", a->ka, 32);
    if (rc == PICL_OK)
        rc = ks_random(s, "wrapKb", a->wrap_kb, 32);
    if (rc == PICL_OK)
        rc = ks_random(s, "verifyCode", a->verify_code, 32);
    if (rc == PICL_OK)
        rc = ks_db_account_create(s->db, a);
    if (rc == PICL_ERROR_ACCOUNT_EXISTS) {
        ks_error(resp, 400, KS_ERR_EXISTS, "account already exists");
        goto done;
    }
    char code[65];
    picl__hex_encode(code, a->verify_code, 32);
    /* the account and its mail's outbox row are committed together: a crash
     * from here on leaves the mail to the next start (ks_outbox_deliver) */
    if (rc == PICL_OK) {
        ks_crash_point("ks-create-committed");
        rc = ks_send_code(s, a, 0, code);
        /* no mail, no account: the user can simply try again */
        if (rc != PICL_OK)
            ks_db_account_delete(s->db, a->id);
    }
    if (rc == PICL_OK) {
        ks_crash_point("ks-create-mailed");
        ks_db_outbox_done(s->db, a->id); /* if this fails: mailed again later */
    }
    picl__wipe(code, sizeof code);
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    ks_event_log(s, req, a->id, "account.created", NULL);
    json_t *j = json_object();
    if (j && ks_set_hex(j, "uid", a->uid, KS_UID_BYTES)) {
        json_decref(j);
        j = NULL;
    }
    ks_reply(resp, j);
done:
    ks_json_free(body);
    if (a)
        picl__zfree(a, sizeof *a);
}

/* ---- POST /v1/auth/start ------------------------------------------------ */

/* The request whose login limits a database call fills once it knows the
 * account (ks_db_account_rate_take, ks_db_srp_take). */
typedef struct finish_ctx {
    ks_server *s;
    srv_http_request *req;
} finish_ctx;

static void start_limits(void *ctx, int64_t account, ks_rate *lim)
{
    finish_ctx *f = ctx;
    login_limits(f->s, f->req, account, 1, lim);
}

static void h_auth_start(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_account *a = calloc(1, sizeof *a);
    picl_srp_server *srp = NULL;
    uint8_t b[256], B[256], token[32], key[32];
    json_t *body = NULL;
    if (!a) {
        ks_error_internal(resp);
        goto done;
    }
    /* the body and its email as ks_body_account answers them */
    body = ks_body(req, resp);
    if (!body)
        goto done;
    picl_status rc = ks_parse_email(body, "email", a->email, &a->email_len);
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        goto done;
    }
    /* the account and its limits in one transaction: failed logins are only
     * checked here; this call itself is counted */
    ks_rate lim[4];
    int ok = 0;
    int64_t retry = 0;
    finish_ctx fc = {s, req};
    rc = ks_db_account_rate_take(s->db, a->email, a->email_len, a, start_limits, &fc, lim, 4, ks_now(s), &ok,
                                 &retry);
    if (rc == PICL_ERROR_NOT_FOUND) {
        ks_error(resp, 400, KS_ERR_UNKNOWN, "unknown account");
        goto done;
    }
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    if (!ok) {
        ks_error_retry(resp, 429, KS_ERR_THROTTLED, retry);
        goto done;
    }
    const picl_srp_group *g = picl__srp_group_picl();
    size_t blen = PICL_SRP_SECRET_BYTES;
    /* A test hook may force any b (asked as 256 bytes); NSS draws 256 bits. */
    if (s->random_hook && s->random_hook(s->hook_ctx, "b", b, sizeof b) == PICL_OK) {
        /* a forced b is public anyway: drop its leading zero bytes so a
         * short one costs what a real one does */
        size_t z = 0;
        while (z < sizeof b - 1 && !b[z])
            z++;
        memmove(b, b + z, sizeof b - z);
        blen = sizeof b - z;
    } else
        rc = picl__random_bytes(b, blen);
    if (rc == PICL_OK)
        rc = picl__srp_server_new_with_b(g, a->verifier, KS_VERIFIER_BYTES, b, blen, &srp);
    if (rc == PICL_OK)
        rc = picl__srp_server_B(srp, B, sizeof B);
    if (rc == PICL_OK)
        rc = ks_random(s, "srpToken", token, sizeof token);
    if (rc == PICL_OK)
        rc = picl__sha256(key, token, sizeof token);
    if (rc == PICL_OK)
        rc = ks_db_srp_put(s->db, key, a->id, b, blen, B, ks_now(s), ks_now(s) + s->srp_ttl);
    json_t *j = NULL, *srpj = NULL, *ps = NULL;
    if (rc == PICL_OK) {
        j = json_object();
        srpj = json_pack("{s:s}", "type", KS_SRP_TYPE);
        ps = stretch_json(a);
    }
    if (!j || !srpj || !ps || ks_set_hex(j, "srpToken", token, 32) ||
        ks_set_hex(srpj, "salt", a->srp_salt, 32) || ks_set_hex(srpj, "B", B, sizeof B) ||
        json_object_set(j, "srp", srpj) || json_object_set(j, "passwordStretching", ps)) {
        ks_json_free(j);
        ks_error_internal(resp);
    } else {
        ks_reply(resp, j);
    }
    json_decref(srpj);
    json_decref(ps);
done:
    picl__srp_server_free(srp);
    picl__wipe(b, sizeof b);
    picl__wipe(token, sizeof token);
    ks_json_free(body);
    if (a)
        picl__zfree(a, sizeof *a);
}

/* ---- POST /v1/auth/finish ----------------------------------------------- */

/* ks_srp_login.limits: the failed-proof limits of the session's account. */

static void finish_limits(void *ctx, int64_t account, ks_rate *lim)
{
    finish_ctx *f = ctx;
    ks_rate all[4];
    login_limits(f->s, f->req, account, 0, all);
    memcpy(lim, all, 2 * sizeof all[0]);
}

static void h_auth_finish(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_srp_login *l = calloc(1, sizeof *l);
    picl_srp_server *srp = NULL;
    uint8_t token[32], key[32], A[256], M[32], K[32], auth[32];
    ks_token issue;
    memset(K, 0, sizeof K);
    memset(auth, 0, sizeof auth);
    memset(&issue, 0, sizeof issue);
    finish_ctx fc = {s, req};
    json_t *body = l ? ks_body(req, resp) : NULL;
    if (!l)
        ks_error_internal(resp);
    if (!body)
        goto done;
    picl_status rc = ks_parse_hex(body, "srpToken", token, sizeof token);
    if (rc == PICL_OK)
        rc = ks_parse_hex(body, "A", A, sizeof A);
    if (rc == PICL_OK)
        rc = ks_parse_hex(body, "M", M, sizeof M);
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        goto done;
    }
    /* The token is spent here, whatever follows: no second try on it.  The
     * guess is counted BEFORE it is evaluated, in the same transaction that
     * takes the session and checks the limits: n concurrent guesses never
     * pass a limit below n.  A right proof is refunded below.  The
     * authToken is made now and stored by that transaction too (one
     * commit per login, ks_db.h); raw `auth` leaves only sealed under K,
     * and a wrong proof deletes the row. */
    l->limits = finish_limits;
    l->ctx = &fc;
    l->n = 2;
    l->issue = &issue;
    rc = picl__sha256(key, token, sizeof token);
    if (rc == PICL_OK)
        rc = ks_token_make(s, PICL_TOKEN_AUTH, 0, auth, NULL, NULL, NULL, 0, 0, ks_now(s) + KS_TTL_AUTH,
                           &issue);
    if (rc == PICL_OK)
        rc = ks_db_srp_take(s->db, key, ks_now(s), l);
    if (rc == PICL_ERROR_TOKEN || rc == PICL_ERROR_NOT_FOUND) {
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
        goto done;
    }
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    if (!l->ok) {
        ks_error_retry(resp, 429, KS_ERR_THROTTLED, l->retry_after);
        goto done;
    }
    const ks_account *a = &l->account;
    /* the B auth/start sent: no g^b again (a session from before schema v6
     * has none and computes it) */
    if (l->Blen)
        rc = picl__srp_server_restore(picl__srp_group_picl(), a->verifier, KS_VERIFIER_BYTES, l->b, l->blen,
                                      l->B, l->Blen, &srp);
    else
        rc = picl__srp_server_new_with_b(picl__srp_group_picl(), a->verifier, KS_VERIFIER_BYTES, l->b,
                                         l->blen, &srp);
    if (rc == PICL_OK)
        rc = picl__srp_server_verify(srp, A, sizeof A, M, sizeof M, K, sizeof K);
    if (rc == PICL_ERROR_SRP_BAD_A) {
        ks_error(resp, 400, KS_ERR_PARAM, "invalid parameter: A");
        goto done;
    }
    if (rc == PICL_ERROR_SRP_PROOF) {
        ks_event_log(s, req, a->id, "login.failed", NULL);
        ks_error(resp, 400, KS_ERR_PASSWORD, "incorrect password");
        goto done;
    }
    /* a right proof is no failure: its guess refunded */
    if (rc == PICL_OK)
        rc = ks_db_rate_refund(s->db, l->lim, 2);
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    l->issued = 0; /* it stays: the client is given it */
    reply_bundle(resp, NULL, K, PICL_BUNDLE_AUTH_FINISH, auth, sizeof auth);
done:
    /* an authToken stored for a proof that failed: deleted (if that fails,
     * nobody ever learns its raw value and it expires) */
    if (l && l->issued)
        ks_db_token_consume(s->db, issue.id);
    picl__wipe(&issue, sizeof issue);
    picl__srp_server_free(srp);
    picl__wipe(K, sizeof K);
    picl__wipe(auth, sizeof auth);
    picl__wipe(token, sizeof token);
    ks_json_free(body);
    if (l)
        picl__zfree(l, sizeof *l);
}

/* ---- POST /v1/session/create, /v1/password/change/start ----------------- */

/* Both spend an authToken and answer a 64-byte bundle of two new tokens. */
static void two_tokens(ks_server *s, srv_http_request *req, srv_http_response *resp, int second_type,
                       const char *context)
{
    ks_token t;
    ks_account *a = calloc(1, sizeof *a);
    uint8_t pair[64];
    json_t *body = NULL;
    char name[65] = "", type[65] = "";
    memset(pair, 0, sizeof pair);
    if (!a) {
        ks_error_internal(resp);
        return;
    }
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_AUTH, &t))
        goto done;
    if (!(body = ks_body(req, resp)))
        goto done;
    if (second_type == PICL_TOKEN_SESSION) {
        picl_status rc = ks_parse_label(body, "name", name);
        if (rc == PICL_OK)
            rc = ks_parse_label(body, "type", type);
        if (rc != PICL_OK) {
            ks_error_parse(resp, rc);
            goto done;
        }
    }
    if (!ks_token_account(s, resp, &t, a) || !ks_consume(s, resp, &t))
        goto done;
    int64_t now = ks_now(s);
    picl_status rc = ks_token_issue(s, PICL_TOKEN_KEY_FETCH, a->id, pair, NULL, NULL, NULL, 0, 0,
                                    now + KS_TTL_KEY_FETCH, NULL);
    if (rc == PICL_OK)
        rc = ks_token_issue(s, second_type, a->id, pair + 32, name, type, NULL, 0, 0,
                            second_type == PICL_TOKEN_SESSION ? KS_TTL_SESSION : now + KS_TTL_ACCOUNT_RESET,
                            NULL);
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    json_t *extra = NULL;
    if (second_type == PICL_TOKEN_SESSION) {
        ks_event_log(s, req, a->id, "login", name);
        extra = json_object();
        if (!extra || ks_set_hex(extra, "uid", a->uid, KS_UID_BYTES) ||
            json_object_set_new(extra, "verified", json_boolean(a->verified))) {
            json_decref(extra);
            ks_error_internal(resp);
            goto done;
        }
    }
    reply_bundle(resp, extra, t.request_key, context, pair, sizeof pair);
done:
    picl__wipe(pair, sizeof pair);
    picl__wipe(&t, sizeof t);
    ks_json_free(body);
    picl__zfree(a, sizeof *a);
}

static void h_session_create(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    two_tokens(ctx, req, resp, PICL_TOKEN_SESSION, PICL_BUNDLE_SESSION_CREATE);
}

static void h_password_change_start(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    two_tokens(ctx, req, resp, PICL_TOKEN_ACCOUNT_RESET, PICL_BUNDLE_PASSWORD_CHANGE);
}

/* ---- POST /v1/session/destroy ------------------------------------------ */

static void h_session_destroy(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    json_t *body = NULL;
    if (ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t) && (body = ks_body(req, resp)) &&
        ks_consume(s, resp, &t))
        ks_reply(resp, json_object());
    ks_json_free(body);
    picl__wipe(&t, sizeof t);
}

/* ---- GET /v1/account/keys ----------------------------------------------- */

static void h_account_keys(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    ks_account *a = calloc(1, sizeof *a);
    uint8_t keys[64];
    if (!a) {
        ks_error_internal(resp);
        return;
    }
    /* Consumed before anything else is looked at: "even on failure". */
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_KEY_FETCH, &t) || !ks_consume(s, resp, &t) ||
        !ks_token_account(s, resp, &t, a))
        goto done;
    if (!a->verified) {
        ks_error(resp, 400, KS_ERR_UNVERIFIED, "unverified account");
        goto done;
    }
    memcpy(keys, a->ka, 32);
    memcpy(keys + 32, a->wrap_kb, 32);
    reply_bundle(resp, NULL, t.request_key, PICL_BUNDLE_ACCOUNT_KEYS, keys, sizeof keys);
    picl__wipe(keys, sizeof keys);
done:
    picl__wipe(&t, sizeof t);
    picl__zfree(a, sizeof *a);
}

/* ---- GET /v1/account/devices -------------------------------------------- */

struct device_list {
    json_t *list;
    const uint8_t *caller; /* the caller's token id */
};

static void add_device(void *ctx, const ks_token *t)
{
    struct device_list *d = ctx;
    int64_t last = t->last_access > t->created ? t->last_access : t->created;
    json_array_append_new(d->list, json_pack("{s:s, s:s, s:s, s:I, s:I, s:b}", "id", t->device_id, "type",
                                             t->device_type, "name", t->device_name, "createdAt",
                                             (json_int_t)t->created, "lastAccessAt", (json_int_t)last,
                                             "current", picl__memeq_ct(t->id, d->caller, 32)));
}

static void h_account_devices(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t))
        return;
    json_t *list = json_array();
    struct device_list d = {.list = list, .caller = t.id};
    if (!list || ks_db_sessions(s->db, t.account, ks_now(s), add_device, &d) != PICL_OK) {
        json_decref(list);
        ks_error_internal(resp);
    } else {
        ks_reply(resp, json_pack("{s:o}", "devices", list));
    }
    picl__wipe(&t, sizeof t);
}

/* ---- POST /v1/account/reset --------------------------------------------- */

static void h_account_reset(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    json_t *body = NULL;
    uint8_t srp_salt[32], main_salt[32], payload[288], fresh[64];
    picl_stretch_params p;
    memset(payload, 0, sizeof payload);
    memset(fresh, 0, sizeof fresh);
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_ACCOUNT_RESET, &t))
        return;
    if (!(body = ks_body(req, resp)) || !ks_consume(s, resp, &t))
        goto done;
    json_t *bv = json_object_get(body, "bundle");
    picl_status rc = PICL_OK;
    if (!bv || json_is_null(bv))
        rc = PICL_ERROR_NOT_FOUND;
    else if (!json_is_string(bv))
        rc = PICL_ERROR_INVALID_ARGUMENT;
    if (rc == PICL_OK)
        rc = ks_parse_srp(body, srp_salt, NULL);
    if (rc == PICL_OK)
        rc = ks_parse_stretch(body, &p, main_salt);
    if (rc == PICL_OK)
        rc = ks_stretch_ok(s, &p);
    if (rc == PICL_OK &&
        picl__bundle_open_hex(payload, sizeof payload, t.request_key, PICL_BUNDLE_ACCOUNT_RESET,
                              json_string_value(bv), json_string_length(bv)) != PICL_OK)
        rc = PICL_ERROR_INVALID_ARGUMENT;
    if (rc == PICL_OK && !ks_srp_value_ok(payload + 32))
        rc = PICL_ERROR_INVALID_ARGUMENT;
    /* "recoveryKeyId": the wrapKb carries the kB a recovery key restored */
    json_t *rkv = json_object_get(body, "recoveryKeyId");
    const char *rk = NULL;
    if (rc == PICL_OK && rkv && !json_is_null(rkv) &&
        (!(rk = json_string_value(rkv)) || picl__iszero_ct(payload, 32)))
        rc = PICL_ERROR_INVALID_ARGUMENT;
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        goto done;
    }
    if (rk) {
        rc = ks_recovery_key_used(s, t.account, rk);
        if (rc == PICL_ERROR_NOT_FOUND) {
            ks_error(resp, 400, KS_ERR_RECOVERY_KEY, "unknown recovery key");
            goto done;
        }
        if (rc != PICL_OK) {
            ks_error_internal(resp);
            goto done;
        }
    }
    /* An all-zero wrapKb asks for a fresh one: kB changes (forgotten password). */
    int kb_changed = picl__iszero_ct(payload, 32);
    if (kb_changed)
        rc = ks_random(s, "wrapKb", payload, 32);
    /* drawn always, used only when the account was never verified */
    if (rc == PICL_OK)
        rc = ks_random(s, "kA", fresh, 32);
    if (rc == PICL_OK)
        rc = ks_random(s, "wrapKb", fresh + 32, 32);
    ks_reset r = {
        .verifier = payload + 32,
        .srp_salt = srp_salt,
        .main_salt = main_salt,
        .params = &p,
        .wrap_kb = payload,
        .kb_changed = kb_changed,
        .fresh_keys = fresh,
        .mailbox = t.mailbox,
    };
    if (rc == PICL_OK)
        rc = ks_db_account_reset(s->db, t.account, &r);
    /* a used recovery key is single-use; one that wraps a kB that just
     * changed is useless */
    if (rc == PICL_OK && (rk || kb_changed)) {
        picl_status drc = ks_db_recovery_delete(s->db, t.account);
        if (drc != PICL_OK && drc != PICL_ERROR_NOT_FOUND)
            rc = drc;
    }
    if (rc == PICL_OK) {
        ks_event_log(s, req, t.account, t.mailbox ? "password.reset" : "password.changed", NULL);
        if (rk)
            ks_event_log(s, req, t.account, "recoveryKey.used", NULL);
    }
    if (rc == PICL_ERROR_NOT_FOUND)
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
    else if (rc != PICL_OK)
        ks_error_internal(resp);
    else
        ks_reply(resp, json_object());
done:
    picl__wipe(payload, sizeof payload);
    picl__wipe(fresh, sizeof fresh);
    picl__wipe(&t, sizeof t);
    ks_json_free(body);
}

/* ---- POST /v1/account/destroy ------------------------------------------- */

static void h_account_destroy(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    json_t *body = NULL;
    if (ks_hawk_auth(s, req, resp, PICL_TOKEN_AUTH, &t) && (body = ks_body(req, resp)) &&
        ks_consume(s, resp, &t)) {
        picl_status rc = ks_db_account_delete(s->db, t.account);
        if (rc == PICL_OK)
            ks_reply(resp, json_object());
        else if (rc == PICL_ERROR_NOT_FOUND)
            ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
        else
            ks_error_internal(resp);
    }
    ks_json_free(body);
    picl__wipe(&t, sizeof t);
}

/* ---- misc ---------------------------------------------------------------- */

static void h_random(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    uint8_t r[32];
    json_t *j = json_object();
    if (!j || ks_random(s, "random", r, sizeof r) != PICL_OK || ks_set_hex(j, "data", r, 32)) {
        json_decref(j);
        ks_error_internal(resp);
    } else {
        ks_reply(resp, j);
    }
}

static void h_heartbeat(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    if (ks_db_ping(s->db) == PICL_OK)
        ks_reply(resp, json_object());
    else
        ks_error_retry(resp, 503, KS_ERR_OVERLOADED, 30);
}

static void h_storage_token(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    ks_account *a = calloc(1, sizeof *a);
    picl_tokenlib_payload *p = calloc(1, sizeof *p);
    char *token = NULL, *key = NULL;
    uint8_t *node_secret = NULL;
    size_t node_secret_len = 0;
    int64_t uid = 0;
    if (!a || !p) {
        ks_error_internal(resp);
        goto done;
    }
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t))
        goto done;
    if (!ks_token_account(s, resp, &t, a))
        goto done;
    if (!a->verified) {
        ks_error(resp, 400, KS_ERR_UNVERIFIED, "unverified account");
        goto done;
    }
    if (!s->secret) {
        ks_error_retry(resp, 503, KS_ERR_OVERLOADED, 3600);
        goto done;
    }
    /* its node: the --storage-node, or its assignment (storage.md 6) */
    picl_status nrc =
        ks_nodes_credentials(s, a->id, p->node, sizeof p->node, &uid, &node_secret, &node_secret_len);
    if (nrc == PICL_ERROR_BACKOFF || nrc == PICL_ERROR_NOT_FOUND) {
        ks_error_retry(resp, 503, KS_ERR_OVERLOADED, nrc == PICL_ERROR_BACKOFF ? 300 : 3600);
        goto done;
    }
    if (nrc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    const char *kid = srv_http_header(req, "X-KeyID");
    if (kid) {
        size_t kl = strlen(kid);
        int ok = kl <= PICL_TOKENLIB_MAX_ID;
        for (size_t i = 0; ok && i < kl; i++)
            ok = kid[i] > 0x20 && kid[i] < 0x7f;
        if (!ok) {
            ks_error(resp, 400, KS_ERR_PARAM, "invalid parameter: X-KeyID");
            goto done;
        }
    }
    uint8_t h[32];
    char uidhex[33];
    picl__hex_encode(uidhex, a->uid, KS_UID_BYTES);
    int64_t now = ks_now(s);
    p->uid = uid;
    p->expires = now + 3600;
    snprintf(p->fxa_uid, sizeof p->fxa_uid, "%s", uidhex);
    snprintf(p->fxa_kid, sizeof p->fxa_kid, "%s", kid ? kid : "");
    picl_status rc = picl__hmac_sha256(h, s->hashed_uid_key, 32, uidhex, 32);
    if (rc == PICL_OK) {
        picl__hex_encode(p->hashed_fxa_uid, h, 16);
        rc = picl__hmac_sha256(h, s->hashed_uid_key, 32, t.device_id, strlen(t.device_id));
    }
    if (rc == PICL_OK) {
        picl__hex_encode(p->hashed_device_id, h, 16);
        rc = picl__tokenlib_mint(&token, &key, node_secret, node_secret_len, p);
    }
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    char endpoint[PICL_TOKENLIB_MAX_NODE + 64];
    snprintf(endpoint, sizeof endpoint, "%s/1.5/%lld", p->node, (long long)uid);
    ks_reply(resp,
             json_pack("{s:s, s:s, s:I, s:s, s:i, s:s}", "id", token, "key", key, "uid", (json_int_t)uid,
                       "api_endpoint", endpoint, "duration", 3600, "hashed_fxa_uid", p->hashed_fxa_uid));
done:
    free(token);
    if (key)
        picl__zfree(key, strlen(key));
    if (node_secret)
        picl__zfree(node_secret, node_secret_len);
    picl__wipe(&t, sizeof t);
    if (a)
        picl__zfree(a, sizeof *a);
    free(p);
}

/* ---- GET/POST /v1/account/classmap (keyserver.md section 9) ------------ */

static void h_classmap_get(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    ks_classmap cm;
    memset(&cm, 0, sizeof cm);
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t))
        return;
    picl_status rc = ks_db_classmap_get(s->db, t.account, &cm);
    json_t *j = NULL;
    if (rc == PICL_OK)
        j = json_pack("{s:I, s:I, s:I}", "version", (json_int_t)cm.version, "epoch", (json_int_t)cm.epoch,
                      "currentEpoch", (json_int_t)cm.current_epoch);
    if (j && (cm.has_hmac ? ks_set_hex(j, "hmac", cm.hmac, sizeof cm.hmac)
                          : json_object_set_new(j, "hmac", json_null()))) {
        json_decref(j);
        j = NULL;
    }
    if (rc == PICL_ERROR_NOT_FOUND)
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
    else if (!j)
        ks_error_internal(resp);
    else
        ks_reply(resp, j);
    picl__wipe(&t, sizeof t);
}

static void h_classmap_post(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    ks_account *a = calloc(1, sizeof *a);
    json_t *body = NULL;
    uint8_t hmac[32];
    if (!a) {
        ks_error_internal(resp);
        return;
    }
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t) || !(body = ks_body(req, resp)))
        goto done;
    json_t *v = json_object_get(body, "version");
    picl_status rc = PICL_OK;
    if (!v || json_is_null(v))
        rc = PICL_ERROR_NOT_FOUND;
    else if (!json_is_integer(v) || json_integer_value(v) < 1 ||
             json_integer_value(v) > KS_CLASSMAP_MAX_VERSION)
        rc = PICL_ERROR_INVALID_ARGUMENT;
    if (rc == PICL_OK)
        rc = ks_parse_hex(body, "hmac", hmac, sizeof hmac);
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        goto done;
    }
    if (!ks_token_account(s, resp, &t, a))
        goto done;
    if (!a->verified) {
        ks_error(resp, 400, KS_ERR_UNVERIFIED, "unverified account");
        goto done;
    }
    ks_classmap before;
    memset(&before, 0, sizeof before);
    rc = ks_db_classmap_get(s->db, a->id, &before);
    if (rc == PICL_OK)
        rc = ks_db_classmap_put(s->db, a->id, (int64_t)json_integer_value(v), hmac);
    if (rc == PICL_OK && json_integer_value(v) > before.version)
        ks_event_log(s, req, a->id, "classmap.changed", t.device_name);
    if (rc == PICL_OK)
        ks_reply(resp, json_object());
    else if (rc == PICL_ERROR_CONFLICT)
        ks_error(resp, 409, KS_ERR_STALE_CLASSMAP, "stale class map");
    else if (rc == PICL_ERROR_NOT_FOUND)
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
    else
        ks_error_internal(resp);
done:
    ks_json_free(body);
    picl__wipe(&t, sizeof t);
    picl__zfree(a, sizeof *a);
}

/* ---- routing ----------------------------------------------------------- */

picl_status ks_routes_mount(ks_server *s, srv_http_server *http, int skip_heartbeat)
{
    static const struct {
        const char *method, *path;
        srv_http_handler fn;
    } routes[] = {
        {"POST", "/v1/account/create", h_account_create},
        {"POST", "/v1/auth/start", h_auth_start},
        {"POST", "/v1/auth/finish", h_auth_finish},
        {"POST", "/v1/session/create", h_session_create},
        {"POST", "/v1/session/destroy", h_session_destroy},
        {"GET", "/v1/account/keys", h_account_keys},
        {"GET", "/v1/account/devices", h_account_devices},
        {"POST", "/v1/account/reset", h_account_reset},
        {"POST", "/v1/account/destroy", h_account_destroy},
        {"GET", "/v1/recovery_email/status", ks_h_email_status},
        {"POST", "/v1/recovery_email/resend_code", ks_h_email_resend},
        {"POST", "/v1/recovery_email/verify_code", ks_h_email_verify},
        {"POST", "/v1/password/change/start", h_password_change_start},
        {"POST", "/v1/password/forgot/send_code", ks_h_forgot_send},
        {"POST", "/v1/password/forgot/resend_code", ks_h_forgot_resend},
        {"POST", "/v1/password/forgot/verify_code", ks_h_forgot_verify},
        {"POST", "/v1/get_random_bytes", h_random},
        {"GET", "/v1/storage/token", h_storage_token},
        {"GET", "/v1/account/classmap", h_classmap_get},
        {"POST", "/v1/account/classmap", h_classmap_post},
        {"POST", "/v1/account/device", ks_h_device_name},
        {"POST", "/v1/account/device/destroy", ks_h_device_destroy},
        {"GET", "/v1/account/events", ks_h_events},
        {"POST", "/v1/recoveryKey", ks_h_recovery_key_post},
        {"DELETE", "/v1/recoveryKey", ks_h_recovery_key_delete},
        {"GET", "/v1/recoveryKey/*", ks_h_recovery_key_get},
    };
    picl_status rc = PICL_OK;
    for (size_t i = 0; rc == PICL_OK && i < sizeof routes / sizeof routes[0]; i++)
        rc = srv_http_route(http, routes[i].method, routes[i].path, routes[i].fn, s, &s->hooks);
    if (rc == PICL_OK && !skip_heartbeat)
        rc = srv_http_route(http, "GET", "/__heartbeat__", h_heartbeat, s, &s->hooks);
    return rc;
}
