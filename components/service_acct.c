/* SPDX-License-Identifier: MPL-2.0 */
/* service_acct.c -- the service's account additions of client.md section 7: this device's name, the account's devices and sessions, security events, the recovery key. */
#include "service_int.h"
#include "client/recovery_key.h"
#include "protocol/tokens.h"
#include "crypto/hash.h"
#include "crypto/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int device_type_ok(const char *t)
{
    return !strcmp(t, "cli") || !strcmp(t, "browser") || !strcmp(t, "desktop") || !strcmp(t, "mobile");
}

/* A keyserver client for a signed-in device (the message says what is missing). */
static picl_status open_session(service *s, picl_ks_client **c)
{
    *c = NULL;
    if (!s->st->has_session)
        return picl__svc_done(s, PICL_ERROR_STATE, "not signed in: sign in first (picl login)");
    return picl__svc_ks_open(s, c);
}

/* The message for a failure of a session call. */
static picl_status session_fail(service *s, picl_status st, const char *what)
{
    if (st == PICL_ERROR_TOKEN)
        return picl__svc_done(s, st,
                              "%s: this device is signed out (removed from the account, or the password "
                              "changed): sign in again",
                              what);
    return picl__svc_flow_fail(s, st, what);
}

/* GET path with the session; *out the answer's array under key as {key: [...]} text. */
static picl_status get_list(service *s, const char *path, const char *key, const char *what, char **out)
{
    picl_ks_client *c;
    json_t *ans = NULL;
    *out = NULL;
    picl_status st = open_session(s, &c);
    if (st != PICL_OK)
        return st;
    st = picl__ksc_call(c, "GET", path, s->st->session, PICL_TOKEN_SESSION, NULL, &ans);
    picl__ksc_free(c);
    if (st != PICL_OK) {
        json_decref(ans);
        return session_fail(s, st, what);
    }
    if (!json_is_array(json_object_get(ans, key))) {
        json_decref(ans);
        return picl__svc_done(s, PICL_ERROR_PROTOCOL, "%s: the keyserver answered something malformed", what);
    }
    *out = json_dumps(ans, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(ans);
    return *out ? picl__svc_done(s, PICL_OK, NULL) : picl__svc_done(s, PICL_ERROR_NO_MEMORY, NULL);
}

PICL_EXPORT picl_status picl_service_set_device(picl_service *self, const char *name, const char *type)
{
    service *s = SVC(self);
    if (name && (strlen(name) > 64 || strchr(name, '\n')))
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "a device name has 1 to 64 characters on one line");
    if (type && *type && !device_type_ok(type))
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "a device type is cli, browser, desktop or mobile");
    snprintf(s->device_name, sizeof s->device_name, "%s", name ? name : "");
    snprintf(s->device_type, sizeof s->device_type, "%s", type ? type : "");
    return picl__svc_done(s, PICL_OK, NULL);
}

PICL_EXPORT picl_status picl_service_get_devices_json(picl_service *self, char **json)
{
    return get_list(SVC(self), "/v1/account/devices", "devices", "listing the devices failed", json);
}

PICL_EXPORT picl_status picl_service_get_security_events_json(picl_service *self, char **json)
{
    return get_list(SVC(self), "/v1/account/events", "events", "listing the security events failed", json);
}

PICL_EXPORT picl_status picl_service_rename_device(picl_service *self, const char *name)
{
    service *s = SVC(self);
    if (!name || !*name || strlen(name) > 64 || strchr(name, '\n'))
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "a device name has 1 to 64 characters on one line");
    picl_ks_client *c;
    picl_status st = open_session(s, &c);
    if (st != PICL_OK)
        return st;
    char old[65], type[16];
    picl__svc_device_of(s, old, type);
    st = picl__svc_post_device(s, c, name, type);
    picl__ksc_free(c);
    if (st != PICL_OK)
        return session_fail(s, st, "renaming this device failed");
    snprintf(s->device_name, sizeof s->device_name, "%s", name);
    return picl__svc_done(s, PICL_OK, NULL);
}

PICL_EXPORT picl_status picl_service_sign_out_device(picl_service *self, const char *id)
{
    service *s = SVC(self);
    if (!id || strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "a device id is 32 hex characters (picl device list)");
    picl_ks_client *c;
    picl_status st = open_session(s, &c);
    if (st != PICL_OK)
        return st;
    json_t *body = json_pack("{s:s}", "id", id);
    st = body ? picl__ksc_call(c, "POST", "/v1/account/device/destroy", s->st->session, PICL_TOKEN_SESSION,
                               body, NULL)
              : PICL_ERROR_NO_MEMORY;
    json_decref(body);
    picl__ksc_free(c);
    if (st == PICL_ERROR_NOT_FOUND)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "no device %s on this account (picl device list)", id);
    if (st != PICL_OK)
        return session_fail(s, st, "signing the device out failed");
    return picl__svc_done(s, PICL_OK, NULL);
}

PICL_EXPORT picl_status picl_service_get_recovery_key_exists(picl_service *self, int *exists)
{
    service *s = SVC(self);
    *exists = 0;
    picl_ks_client *c;
    json_t *ans = NULL;
    picl_status st = open_session(s, &c);
    if (st != PICL_OK)
        return st;
    st = picl__ksc_call(c, "GET", "/v1/recoveryKey/exists", s->st->session, PICL_TOKEN_SESSION, NULL, &ans);
    picl__ksc_free(c);
    json_t *v = json_object_get(ans, "exists");
    if (st == PICL_OK && !json_is_boolean(v))
        st = PICL_ERROR_PROTOCOL;
    if (st == PICL_OK)
        *exists = json_is_true(v);
    json_decref(ans);
    return st == PICL_OK ? picl__svc_done(s, st, NULL)
                         : session_fail(s, st, "asking for the recovery key failed");
}

PICL_EXPORT picl_status picl_service_remove_recovery_key(picl_service *self)
{
    service *s = SVC(self);
    picl_ks_client *c;
    picl_status st = open_session(s, &c);
    if (st != PICL_OK)
        return st;
    st = picl__ksc_call(c, "DELETE", "/v1/recoveryKey", s->st->session, PICL_TOKEN_SESSION, NULL, NULL);
    picl__ksc_free(c);
    return st == PICL_OK ? picl__svc_done(s, st, NULL)
                         : session_fail(s, st, "removing the recovery key failed");
}

/* Signs in again with password (the keyserver makes a recovery key only
 * for a recent sign-in, keyserver.md 9): this device's session becomes the
 * new one (named like the old, which is signed out).  The kB of the sign-in
 * must be this device's (else the password was reset elsewhere). */
static picl_status fresh_session(service *s, picl_ks_client *c, const char *password)
{
    picl_account a;
    const char *email = s->st->email;
    picl__svc_fanout(s, "account", "", 0, -1, "stretching the password");
    picl_status st =
        picl__account_login(c, email, strlen(email), password, strlen(password), picl__svc_floor_of(s), &a);
    if (st != PICL_OK)
        return picl__svc_flow_fail(s, st, "checking the password failed");
    if (!a.have_keys || !picl__memeq_ct(a.kb, s->st->kb, 32)) {
        picl__account_logout(c, &a);
        picl__account_wipe(&a);
        return picl__svc_done(s, PICL_ERROR_KEYS_CHANGED,
                              "the password was reset on another device: sign in again (picl login) first");
    }
    picl_account old;
    memset(&old, 0, sizeof old);
    memcpy(old.session_token, s->st->session, 32);
    old.have_session = 1;
    memcpy(s->st->session, a.session_token, 32);
    picl__account_wipe(&a);
    st = picl__state_save(s->st);
    if (st != PICL_OK) {
        picl__account_wipe(&old);
        return picl__svc_done(s, st, "cannot save the local state in %s", s->st->dir);
    }
    picl__svc_name_device(s, c);
    picl__account_logout(c, &old); /* best effort */
    picl__account_wipe(&old);
    return PICL_OK;
}

PICL_EXPORT picl_status picl_service_create_recovery_key(picl_service *self, const char *password, char **key)
{
    service *s = SVC(self);
    uint8_t rk[32];
    char id[33], text[PICL_RK_TEXT_LEN + 1];
    char *data = NULL;
    json_t *body = NULL;
    picl_ks_client *c = NULL;
    *key = NULL;
    memset(rk, 0, sizeof rk);
    memset(text, 0, sizeof text);
    picl_status st;
    if (!password || !*password) {
        st = picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "the password is needed to make a recovery key");
        goto done;
    }
    if (!s->st->has_kb) {
        st = picl__svc_done(s, PICL_ERROR_STATE,
                            "this device has no keys yet: verify the email and sign in first");
        goto done;
    }
    if ((st = open_session(s, &c)) != PICL_OK)
        goto done;
    if ((st = fresh_session(s, c, password)) != PICL_OK)
        goto done;
    st = picl__random_bytes(rk, sizeof rk);
    if (st == PICL_OK)
        st = picl__rk_id(id, rk);
    if (st == PICL_OK)
        st = picl__rk_seal(&data, rk, s->st->kb);
    if (st == PICL_OK) {
        body = json_pack("{s:s, s:s}", "recoveryKeyId", id, "recoveryData", data);
        st = body ? picl__ksc_call(c, "POST", "/v1/recoveryKey", s->st->session, PICL_TOKEN_SESSION, body,
                                   NULL)
                  : PICL_ERROR_NO_MEMORY;
    }
    if (st != PICL_OK) {
        session_fail(s, st, "making the recovery key failed");
        goto done;
    }
    picl__rk_format(text, rk);
    *key = picl__svc_dup_out(text);
    st = picl__svc_done(s, *key ? PICL_OK : PICL_ERROR_NO_MEMORY, NULL);
done:
    picl__ksc_free(c);
    json_decref(body);
    free(data);
    picl__wipe(rk, sizeof rk);
    picl__wipe(text, sizeof text);
    return st;
}

PICL_EXPORT picl_status picl_service_complete_password_reset_with_recovery_key(picl_service *self,
                                                                               const char *code,
                                                                               const char *new_pw,
                                                                               const char *recovery_key)
{
    return picl__svc_reset_rk(self, code, new_pw, recovery_key);
}

PICL_EXPORT picl_status picl_service_set_stretching(picl_service *self, uint32_t r1, uint64_t n, uint32_t r,
                                                    uint32_t p, uint32_t r2)
{
    service *s = SVC(self);
    picl_stretch_params want = {r1, n, r, p, r2};
    picl_status st = picl__stretch_check_params(&want, picl__svc_floor_of(s));
    if (st != PICL_OK)
        return picl__svc_done(s, st, "these stretching parameters are outside the accepted range");
    s->stretch = want;
    s->stretch_set = 1;
    return picl__svc_done(s, PICL_OK, NULL);
}
