/* SPDX-License-Identifier: MPL-2.0 */
/* ks_account_ext.c -- the keyserver additions of keyserver.md section 9: devices and sessions, security events, recovery key. */
#include "keyserver/ks_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/util.h"
#include "keyserver/ks_parse.h"
#include "protocol/tokens.h"

/* Wrong recovery key ids per account within the window before 429. */
#define RK_GUESS_MAX 5
#define RK_GUESS_WINDOW 900

void ks_event_log(ks_server *s, srv_http_request *req, int64_t account, const char *type, const char *device)
{
    ks_event e;
    memset(&e, 0, sizeof e);
    snprintf(e.type, sizeof e.type, "%s", type);
    snprintf(e.device, sizeof e.device, "%s", device ? device : "");
    if (req)
        ks_client_addr(s, req, e.address, sizeof e.address);
    e.time = ks_now(s);
    /* an event that cannot be written never fails the request it records */
    if (ks_db_event_add(s->db, account, &e) != PICL_OK && s->log)
        srvlog(s->log, s->hook_ctx, SRVLOG_ERROR, "keyserver: cannot record a security event");
}

/* ---- POST /v1/account/device ------------------------------------------- */

static int device_type_ok(const char *t)
{
    static const char *const types[] = {"desktop", "mobile", "cli", "browser"};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcmp(t, types[i]))
            return 1;
    return 0;
}

void ks_h_device_name(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    json_t *body = NULL;
    char name[65] = "", type[65] = "";
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t) || !(body = ks_body(req, resp)))
        goto done;
    picl_status rc = ks_parse_label(body, "name", name);
    if (rc == PICL_OK)
        rc = ks_parse_label(body, "type", type);
    if (rc == PICL_OK && !*name)
        rc = PICL_ERROR_NOT_FOUND;
    if (rc == PICL_OK && !*type)
        snprintf(type, sizeof type, "%s", t.device_type);
    if (rc == PICL_OK && !device_type_ok(type))
        rc = PICL_ERROR_INVALID_ARGUMENT;
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        goto done;
    }
    rc = ks_db_session_rename(s->db, t.id, name, type);
    if (rc == PICL_ERROR_NOT_FOUND)
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
    else if (rc != PICL_OK)
        ks_error_internal(resp);
    else
        ks_reply(resp, json_object());
done:
    ks_json_free(body);
    picl__wipe(&t, sizeof t);
}

/* ---- POST /v1/account/device/destroy ------------------------------------ */

struct find_dev {
    const char *id;
    char name[65];
    int found;
};

static void find_device(void *ctx, const ks_token *t)
{
    struct find_dev *f = ctx;
    if (!f->found && *t->device_id && !strcmp(t->device_id, f->id)) {
        f->found = 1;
        snprintf(f->name, sizeof f->name, "%s", t->device_name);
    }
}

void ks_h_device_destroy(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    json_t *body = NULL;
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t) || !(body = ks_body(req, resp)))
        goto done;
    json_t *idv = json_object_get(body, "id");
    if (!idv) {
        ks_error_parse(resp, PICL_ERROR_NOT_FOUND);
        goto done;
    }
    const char *id = json_string_value(idv);
    if (!id || strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32) {
        ks_error(resp, 400, KS_ERR_PARAM, "invalid parameter: id");
        goto done;
    }
    struct find_dev f = {.id = id};
    picl_status rc = ks_db_sessions(s->db, t.account, ks_now(s), find_device, &f);
    if (rc == PICL_OK)
        rc = f.found ? ks_db_session_destroy(s->db, t.account, id) : PICL_ERROR_NOT_FOUND;
    if (rc == PICL_ERROR_NOT_FOUND) {
        ks_error(resp, 400, KS_ERR_UNKNOWN_DEVICE, "unknown device");
        goto done;
    }
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    ks_event_log(s, req, t.account, "device.destroyed", f.name);
    ks_reply(resp, json_object());
done:
    ks_json_free(body);
    picl__wipe(&t, sizeof t);
}

/* ---- GET /v1/account/events --------------------------------------------- */

static void add_event(void *ctx, const ks_event *e)
{
    json_array_append_new(ctx, json_pack("{s:s, s:I, s:s, s:s}", "type", e->type, "time", (json_int_t)e->time,
                                         "device", e->device, "address", e->address));
}

void ks_h_events(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t))
        return;
    json_t *list = json_array();
    if (!list || ks_db_events(s->db, t.account, add_event, list) != PICL_OK) {
        json_decref(list);
        ks_error_internal(resp);
    } else {
        ks_reply(resp, json_pack("{s:o}", "events", list));
    }
    picl__wipe(&t, sizeof t);
}

/* ---- /v1/recoveryKey ----------------------------------------------------- */

static int hex32_ok(const char *id) { return id && strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32; }

void ks_h_recovery_key_post(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    json_t *body = NULL;
    ks_account *a = calloc(1, sizeof *a);
    if (!a) {
        ks_error_internal(resp);
        return;
    }
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t) || !(body = ks_body(req, resp)))
        goto done;
    json_t *idv = json_object_get(body, "recoveryKeyId");
    json_t *dv = json_object_get(body, "recoveryData");
    if (!idv || !dv) {
        ks_error_parse(resp, PICL_ERROR_NOT_FOUND);
        goto done;
    }
    const char *id = json_string_value(idv), *data = json_string_value(dv);
    if (!hex32_ok(id)) {
        ks_error(resp, 400, KS_ERR_PARAM, "invalid parameter: recoveryKeyId");
        goto done;
    }
    if (!data || !*data || json_string_length(dv) > KS_RECOVERY_DATA_MAX ||
        strlen(data) != json_string_length(dv)) {
        ks_error(resp, 400, KS_ERR_PARAM, "invalid parameter: recoveryData");
        goto done;
    }
    if (!ks_token_account(s, resp, &t, a))
        goto done;
    if (!a->verified) {
        ks_error(resp, 400, KS_ERR_UNVERIFIED, "unverified account");
        goto done;
    }
    if (ks_now(s) - t.created > KS_RECENT_LOGIN) {
        ks_error(resp, 403, KS_ERR_RECENT_LOGIN, "sign in again to make a recovery key");
        goto done;
    }
    picl_status rc = ks_db_recovery_put(s->db, t.account, id, data);
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    ks_event_log(s, req, t.account, "recoveryKey.created", t.device_name);
    ks_reply(resp, json_object());
done:
    ks_json_free(body);
    picl__wipe(&t, sizeof t);
    picl__zfree(a, sizeof *a);
}

void ks_h_recovery_key_delete(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    ks_token t;
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t))
        return;
    picl_status rc = ks_db_recovery_delete(s->db, t.account);
    if (rc == PICL_OK || rc == PICL_ERROR_NOT_FOUND)
        ks_reply(resp, json_object());
    else
        ks_error_internal(resp);
    picl__wipe(&t, sizeof t);
}

static void recovery_exists(ks_server *s, srv_http_request *req, srv_http_response *resp)
{
    ks_token t;
    char id[33];
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_SESSION, &t))
        return;
    picl_status rc = ks_db_recovery_get(s->db, t.account, id, NULL, 0);
    if (rc == PICL_OK || rc == PICL_ERROR_NOT_FOUND)
        ks_reply(resp, json_pack("{s:b}", "exists", rc == PICL_OK));
    else
        ks_error_internal(resp);
    picl__wipe(&t, sizeof t);
}

/* GET /v1/recoveryKey/exists (sessionToken) or /v1/recoveryKey/{id}
 * (accountResetToken of the forgot-password flow). */
void ks_h_recovery_key_get(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    const char *want = req->nparams == 1 ? req->params[0] : "";
    if (!strcmp(want, "exists")) {
        recovery_exists(s, req, resp);
        return;
    }
    ks_token t;
    char id[33];
    char *data = calloc(1, KS_RECOVERY_DATA_MAX + 1);
    if (!data) {
        ks_error_internal(resp);
        return;
    }
    if (!ks_hawk_auth(s, req, resp, PICL_TOKEN_ACCOUNT_RESET, &t))
        goto done;
    /* every look-up counts; the right key is refunded below */
    ks_rate lim;
    ks_rate_set(&lim, RK_GUESS_MAX, RK_GUESS_WINDOW, 1, "recoverykey:%lld", (long long)t.account);
    if (!ks_take(s, resp, &lim, 1))
        goto done;
    picl_status rc = ks_db_recovery_get(s->db, t.account, id, data, KS_RECOVERY_DATA_MAX + 1);
    if (rc == PICL_OK && (!hex32_ok(want) || !picl__memeq_ct(id, want, 32)))
        rc = PICL_ERROR_NOT_FOUND;
    if (rc == PICL_ERROR_NOT_FOUND) {
        ks_error(resp, 404, KS_ERR_RECOVERY_KEY, "unknown recovery key");
        goto done;
    }
    if (rc == PICL_OK)
        rc = ks_db_rate_refund(s->db, &lim, 1);
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    ks_reply(resp, json_pack("{s:s}", "recoveryData", data));
done:
    picl__wipe(&t, sizeof t);
    picl__zfree(data, KS_RECOVERY_DATA_MAX + 1);
}

picl_status ks_recovery_key_used(ks_server *s, int64_t account, const char *id)
{
    char have[33];
    picl_status rc = ks_db_recovery_get(s->db, account, have, NULL, 0);
    if (rc == PICL_OK && (!hex32_ok(id) || !picl__memeq_ct(have, id, 32)))
        rc = PICL_ERROR_NOT_FOUND;
    return rc;
}
