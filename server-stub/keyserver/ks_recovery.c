/* SPDX-License-Identifier: MPL-2.0 */
/* ks_recovery.c -- the keyserver's recovery-email and forgotten-password
 * endpoints (keyserver.md section 6): status, resend and verify of the
 * verification code; send, resend and verify of the reset code. */
#include "keyserver/ks_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/util.h"
#include "keyserver/ks_parse.h"
#include "protocol/tokens.h"

#define RESET_CODE_TTL 900
#define RESET_CODE_TRIES 3

/* ---- recovery email ----------------------------------------------------- */

void ks_h_email_status(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    ks_account *a = calloc(1, sizeof *a);
    if (!a)
        ks_error_internal(resp);
    else if (ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t) && ks_token_account(s, resp, &t, a)) {
        json_t *j = json_pack("{s:b}", "verified", a->verified);
        if (j && ks_set_hex(j, "email", (const uint8_t *)a->email, a->email_len)) {
            json_decref(j);
            j = NULL;
        }
        ks_reply(resp, j);
    }
    picl__wipe(&t, sizeof t);
    if (a)
        picl__zfree(a, sizeof *a);
}

void ks_h_email_resend(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    ks_account *a = calloc(1, sizeof *a);
    json_t *body = NULL;
    char code[65];
    memset(&t, 0, sizeof t);
    memset(code, 0, sizeof code);
    if (!a) {
        ks_error_internal(resp);
        goto done;
    }
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t) || !(body = ks_body(req, resp)) ||
        !ks_token_account(s, resp, &t, a))
        goto done;
    if (!a->verified) {
        /* at most reset_max mails an hour: no mail bombing through resend */
        ks_rate lim;
        ks_rate_set(&lim, s->reset_max, s->reset_window, 1, "verify:%lld", (long long)a->id);
        if (!ks_take(s, resp, &lim, 1))
            goto done;
        picl__hex_encode(code, a->verify_code, 32);
        if (ks_send_code(s, a, 0, code) != PICL_OK) {
            ks_error_internal(resp);
            goto done;
        }
    }
    ks_reply(resp, json_object());
done:
    picl__wipe(code, sizeof code);
    ks_json_free(body);
    picl__wipe(&t, sizeof t);
    if (a)
        picl__zfree(a, sizeof *a);
}

void ks_h_email_verify(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_account *a = calloc(1, sizeof *a);
    uint8_t uid[KS_UID_BYTES], code[32];
    json_t *body = a ? ks_body(req, resp) : NULL;
    if (!a)
        ks_error_internal(resp);
    if (!body)
        goto done;
    picl_status rc = ks_parse_hex(body, "uid", uid, sizeof uid);
    if (rc == PICL_OK)
        rc = ks_parse_hex(body, "code", code, sizeof code);
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        goto done;
    }
    rc = ks_db_account_by_uid(s->db, uid, a);
    if (rc == PICL_ERROR_NOT_FOUND)
        ks_error(resp, 400, KS_ERR_UNKNOWN, "unknown account");
    else if (rc != PICL_OK)
        ks_error_internal(resp);
    else if (!picl__memeq_ct(code, a->verify_code, sizeof code))
        ks_error(resp, 400, KS_ERR_CODE, "invalid verification code");
    else if (!a->verified && ks_db_account_set_verified(s->db, a->id) != PICL_OK)
        ks_error_internal(resp);
    else {
        if (!a->verified)
            ks_event_log(s, req, a->id, "account.verified", NULL);
        ks_reply(resp, json_object());
    }
done:
    picl__wipe(code, sizeof code);
    ks_json_free(body);
    if (a)
        picl__zfree(a, sizeof *a);
}

/* ---- forgotten password ------------------------------------------------- */

/* 8 uniformly random decimal digits (rejection sampling on 32-bit draws). */
static picl_status reset_code(ks_server *s, char out[9])
{
    uint32_t x;
    do {
        uint8_t r[4];
        picl_status rc = ks_random(s, "recoveryCode", r, sizeof r);
        if (rc != PICL_OK)
            return rc;
        x = (uint32_t)r[0] << 24 | (uint32_t)r[1] << 16 | (uint32_t)r[2] << 8 | r[3];
    } while (x >= 4200000000u);
    snprintf(out, 9, "%08u", (unsigned)(x % 100000000u));
    return PICL_OK;
}

static json_t *forgot_json(const uint8_t *token, int64_t ttl, int tries)
{
    json_t *j =
        json_pack("{s:I, s:i, s:i}", "ttl", (json_int_t)(ttl > 0 ? ttl : 0), "codeLength", 8, "tries", tries);
    if (j && token && ks_set_hex(j, "forgotPasswordToken", token, 32)) {
        ks_json_free(j);
        j = NULL;
    }
    return j;
}

void ks_h_forgot_send(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_account *a = calloc(1, sizeof *a);
    uint8_t token[32];
    char code[9] = "";
    memset(token, 0, sizeof token);
    json_t *body = NULL;
    if (!a) {
        ks_error_internal(resp);
        goto done;
    }
    picl_status rc = ks_body_account(s, req, resp, &body, a);
    if (rc != PICL_OK)
        goto done;
    /* checked and counted in one transaction: concurrent calls never mail
     * more than reset_max codes an hour */
    ks_rate lim;
    ks_rate_set(&lim, s->reset_max, s->reset_window, 1, "reset:%lld", (long long)a->id);
    if (!ks_take(s, resp, &lim, 1))
        goto done;
    int64_t now = ks_now(s);
    rc = ks_db_token_delete_account(s->db, a->id, PICL_TOKEN_FORGOT_PASSWORD);
    if (rc == PICL_OK)
        rc = reset_code(s, code);
    if (rc == PICL_OK)
        rc = ks_token_issue(s, PICL_TOKEN_FORGOT_PASSWORD, a->id, token, NULL, NULL, code, RESET_CODE_TRIES,
                            0, now + RESET_CODE_TTL, NULL);
    if (rc == PICL_OK)
        rc = ks_send_code(s, a, 1, code);
    if (rc != PICL_OK)
        ks_error_internal(resp);
    else
        ks_reply(resp, forgot_json(token, RESET_CODE_TTL, RESET_CODE_TRIES));
done:
    picl__wipe(code, sizeof code);
    picl__wipe(token, sizeof token);
    ks_json_free(body);
    if (a)
        picl__zfree(a, sizeof *a);
}

void ks_h_forgot_resend(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    ks_account *a = calloc(1, sizeof *a);
    json_t *body = NULL;
    char email[256];
    size_t elen = 0;
    if (!a) {
        ks_error_internal(resp);
        return;
    }
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_FORGOT_PASSWORD, &t) || !(body = ks_body(req, resp)))
        goto done;
    picl_status rc = ks_parse_email(body, "email", email, &elen);
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        goto done;
    }
    if (!ks_token_account(s, resp, &t, a))
        goto done;
    if (elen != a->email_len || memcmp(email, a->email, elen)) {
        ks_error(resp, 400, KS_ERR_PARAM, "invalid parameter: email");
        goto done;
    }
    ks_rate lim;
    ks_rate_set(&lim, s->reset_max, s->reset_window, 1, "reset:%lld", (long long)a->id);
    if (!ks_take(s, resp, &lim, 1))
        goto done;
    int64_t now = ks_now(s);
    rc = ks_send_code(s, a, 1, t.code);
    if (rc != PICL_OK)
        ks_error_internal(resp);
    else
        ks_reply(resp, forgot_json(NULL, t.expires - now, t.tries));
done:
    ks_json_free(body);
    picl__wipe(&t, sizeof t);
    picl__zfree(a, sizeof *a);
}

void ks_h_forgot_verify(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    json_t *body = NULL;
    char code[9];
    uint8_t reset[32];
    memset(reset, 0, sizeof reset);
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_FORGOT_PASSWORD, &t) || !(body = ks_body(req, resp)))
        goto done;
    picl_status rc = ks_parse_digits8(body, "code", code);
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        goto done;
    }
    int ok = 0, left = 0;
    rc = ks_db_forgot_guess(s->db, t.id, code, ks_now(s), &ok, &left);
    if (rc == PICL_ERROR_NOT_FOUND || rc == PICL_ERROR_TOKEN) {
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
        goto done;
    }
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    if (!ok) {
        json_t *j = json_pack("{s:i, s:i, s:s, s:s, s:i}", "code", 400, "errno", KS_ERR_CODE, "error",
                              "Bad Request", "message", "invalid verification code", "tries", left);
        if (!j) {
            resp->failed = 1;
        } else {
            srv_http_respond_json(resp, 400, j);
            json_decref(j);
        }
        goto done;
    }
    /* The code proved the mailbox, but the email becomes verified only when
     * the reset completes (keyserver.md 9, pre-hijacking): until then an
     * account someone else registered keeps its keys out of reach. */
    rc = ks_token_issue(s, PICL_TOKEN_ACCOUNT_RESET, t.account, reset, NULL, NULL, NULL, 0, 1,
                        ks_now(s) + RESET_CODE_TTL, NULL);
    json_t *j = rc == PICL_OK ? json_object() : NULL;
    if (!j || ks_set_hex(j, "accountResetToken", reset, 32)) {
        ks_json_free(j);
        ks_error_internal(resp);
    } else {
        ks_reply(resp, j);
    }
done:
    picl__wipe(reset, sizeof reset);
    picl__wipe(code, sizeof code);
    picl__wipe(&t, sizeof t);
    ks_json_free(body);
}
