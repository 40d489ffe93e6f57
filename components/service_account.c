/* SPDX-License-Identifier: MPL-2.0 */
/* service_account.c -- the account methods of the service object (create,
 * verify, sign in/out, password change and reset, destroy, status) over the
 * account flows of client/account.h. */
#include "service_int.h"
#include "client/records.h"
#include "client/recovery_key.h"
#include "client/storage_client.h"
#include "protocol/ks_errno.h"
#include "crypto/util.h"
#include "crypto/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Takes a fresh sign-in into the state (wiping the account struct). */
static picl_status adopt(service *s, picl_account *a)
{
    picl_state *st = s->st;
    if (*st->uid && strcmp(st->uid, a->uid))
        picl__state_sign_out(st); /* another account: forget the old one's state */
    picl__state_set_str(&st->uid, a->uid);
    picl__state_set_str(&st->email, a->email);
    st->verified = a->verified;
    if (a->have_session) {
        memcpy(st->session, a->session_token, 32);
        st->has_session = 1;
    }
    if (a->have_keys) {
        memcpy(st->ka, a->ka, 32);
        memcpy(st->kb, a->kb, 32);
        st->has_ka = st->has_kb = 1;
        picl__state_drop_kft(st);
        picl__svc_learn_key_epoch(s, NULL);
    } else if (a->have_kft) {
        /* signed up or signed in unverified: keys later, without the password */
        memcpy(st->kft, a->kft, 32);
        memcpy(st->unwrap, a->unwrap, 32);
        st->has_kft = 1;
    }
    picl__json_zdecref(st->storage_token);
    st->storage_token = NULL;
    int named = a->have_session;
    picl__account_wipe(a);
    picl_status rc = picl__state_save(st);
    if (rc == PICL_OK && named)
        picl__svc_name_device(s, NULL); /* client.md 7: each device names itself */
    return rc == PICL_OK ? rc : picl__svc_done(s, rc, "cannot save the local state in %s", st->dir);
}

/* The stretching new passwords get: the configured one, else the floor's
 * (the spec's when no floor was set). */
static const picl_stretch_params *stretch_target(service *s, picl_stretch_params *def)
{
    if (s->stretch_set)
        return &s->stretch;
    if (s->floor_set)
        return &s->floor;
    picl__stretch_default_params(def);
    return def;
}

static int weaker(const picl_stretch_params *a, const picl_stretch_params *b)
{
    return a->pbkdf2_rounds_1 < b->pbkdf2_rounds_1 || a->scrypt_n < b->scrypt_n ||
           a->scrypt_r < b->scrypt_r || a->scrypt_p < b->scrypt_p || a->pbkdf2_rounds_2 < b->pbkdf2_rounds_2;
}

/* ---- account ------------------------------------------------------------------ */

picl_status picl__svc_create(picl_service *self, const char *email, const char *password)
{
    service *s = SVC(self);
    if (!email || !*email || !password || !*password)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "an email and a password are needed");
    picl_ks_client *c;
    picl_status st = picl__svc_ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    char uid[33];
    picl__svc_fanout(s, "account", "", 0, -1, "stretching the password");
    st =
        picl__account_create(c, email, strlen(email), password, strlen(password), picl__svc_floor_of(s), uid);
    if (st == PICL_OK) {
        picl_account a;
        st = picl__account_login(c, email, strlen(email), password, strlen(password), picl__svc_floor_of(s),
                                 &a);
        if (st == PICL_OK)
            st = adopt(s, &a);
        else
            picl__svc_flow_fail(s, st, "account created, but signing in failed");
    } else {
        picl__svc_flow_fail(s, st, "creating the account failed");
    }
    picl__ksc_free(c);
    return st == PICL_OK ? picl__svc_done(s, st, NULL) : st;
}

picl_status picl__svc_verify(picl_service *self, const char *code)
{
    service *s = SVC(self);
    if (!*s->st->uid)
        return picl__svc_done(s, PICL_ERROR_STATE, "no account: create one or sign in first");
    if (!code || !*code)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "the verification code is missing");
    if (strlen(code) != 64 || strspn(code, "0123456789abcdefABCDEF") != 64)
        return picl__svc_done(s, PICL_ERROR_INVALID_CODE,
                              "verifying the email failed: the code is wrong (64 hex characters)");
    picl_ks_client *c;
    picl_status st = picl__svc_ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    st = picl__account_verify(c, s->st->uid, code);
    if (st != PICL_OK) {
        picl__ksc_free(c);
        return picl__svc_flow_fail(s, st, "verifying the email failed");
    }
    s->st->verified = 1;
    /* signed up on this device: the keys come now, without the password;
     * if that fails (network) the next call that needs them tries again */
    picl__svc_ensure_keys(s, c);
    picl__ksc_free(c);
    st = picl__state_save(s->st);
    return picl__svc_done(s, st, st ? "cannot save the local state" : NULL);
}

picl_status picl__svc_sign_in(picl_service *self, const char *email, const char *password)
{
    service *s = SVC(self);
    if (!email || !*email || !password)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "an email and a password are needed");
    picl_ks_client *c;
    picl_status st = picl__svc_ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    picl_account a;
    picl__svc_fanout(s, "account", "", 0, -1, "stretching the password");
    st = picl__account_login(c, email, strlen(email), password, strlen(password), picl__svc_floor_of(s), &a);
    if (st != PICL_OK) {
        picl__ksc_free(c);
        return picl__svc_flow_fail(s, st, "signing in failed");
    }
    /* Stretch upgrade (keyserver.md 9): an account stretched more weakly
     * than this client's configuration is re-stretched and kB re-wrapped
     * with the same password, silently; kB and every record are kept.
     * When it fails the sign-in stands as it was. */
    picl_stretch_params def;
    const picl_stretch_params *want = stretch_target(s, &def);
    if (a.have_keys && weaker(&a.params, want)) {
        picl_account b;
        uint8_t kb[32];
        memcpy(kb, a.kb, 32);
        picl__svc_fanout(s, "account", "", 0, -1, "strengthening the password stretching");
        if (picl__account_change_password(c, email, strlen(email), password, strlen(password), password,
                                          strlen(password), want, picl__svc_floor_of(s), &b) == PICL_OK) {
            if (b.have_keys && picl__memeq_ct(b.kb, kb, 32)) {
                picl__account_wipe(&a);
                a = b;
            }
            picl__account_wipe(&b);
        }
        picl__wipe(kb, sizeof kb);
    }
    picl__ksc_free(c);
    st = adopt(s, &a);
    return st == PICL_OK ? picl__svc_done(s, st, NULL) : st;
}

picl_status picl__svc_sign_out(picl_service *self)
{
    service *s = SVC(self);
    if (s->st->has_session && *s->st->keyserver) {
        picl_ks_client *c;
        if (picl__ksc_new(&c, s->st->keyserver) == PICL_OK) {
            picl_account a;
            memset(&a, 0, sizeof a);
            memcpy(a.session_token, s->st->session, 32);
            a.have_session = 1;
            picl__account_logout(c, &a); /* best effort: the local state goes anyway */
            picl__account_wipe(&a);
            picl__ksc_free(c);
        }
    }
    picl__state_sign_out(s->st);
    picl_status st = picl__state_save(s->st);
    return picl__svc_done(s, st, st ? "cannot save the local state" : NULL);
}

picl_status picl__svc_change_password(picl_service *self, const char *old_pw, const char *new_pw)
{
    service *s = SVC(self);
    if (!*s->st->email)
        return picl__svc_done(s, PICL_ERROR_STATE, "not signed in");
    if (!old_pw || !new_pw || !*new_pw)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "the old and the new password are needed");
    picl_ks_client *c;
    picl_status st = picl__svc_ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    picl_account a;
    const char *email = s->st->email;
    st = picl__account_change_password(c, email, strlen(email), old_pw, strlen(old_pw), new_pw,
                                       strlen(new_pw), picl__svc_floor_of(s), picl__svc_floor_of(s), &a);
    picl__ksc_free(c);
    if (st != PICL_OK)
        return picl__svc_flow_fail(s, st, "changing the password failed");
    st = adopt(s, &a);
    return st == PICL_OK ? picl__svc_done(s, st, NULL) : st;
}

picl_status picl__svc_forgot(picl_service *self, const char *email)
{
    service *s = SVC(self);
    if (!email || !*email)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "the email is needed");
    picl_ks_client *c;
    picl_status st = picl__svc_ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    st = picl__account_forgot_start(c, email, strlen(email), s->st->forgot);
    picl__ksc_free(c);
    if (st != PICL_OK)
        return picl__svc_flow_fail(s, st, "asking for a reset code failed");
    s->st->has_forgot = 1;
    picl__state_set_str(&s->st->forgot_email, email);
    st = picl__state_save(s->st);
    return picl__svc_done(s, st, st ? "cannot save the local state" : NULL);
}

picl_status picl__svc_reset(picl_service *self, const char *code, const char *new_pw)
{
    service *s = SVC(self);
    if (!s->st->has_forgot)
        return picl__svc_done(s, PICL_ERROR_STATE, "ask for a reset code first (forgotPassword)");
    if (!code || !*code || !new_pw || !*new_pw)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "the code and a new password are needed");
    if (strlen(code) != 8 || strspn(code, "0123456789") != 8)
        return picl__svc_done(s, PICL_ERROR_INVALID_CODE,
                              "resetting the password failed: the code is wrong (8 digits)");
    picl_ks_client *c;
    picl_status st = picl__svc_ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    char email[256];
    snprintf(email, sizeof email, "%s", s->st->forgot_email);
    st = picl__account_forgot_finish(c, s->st->forgot, code, email, strlen(email), new_pw, strlen(new_pw),
                                     picl__svc_floor_of(s));
    if (st == PICL_OK) {
        picl__wipe(s->st->forgot, 32);
        s->st->has_forgot = 0;
        picl_account a;
        st = picl__account_login(c, email, strlen(email), new_pw, strlen(new_pw), picl__svc_floor_of(s), &a);
        if (st == PICL_OK) {
            /* kB is new: everything class B must be re-keyed at the next sync */
            st = adopt(s, &a);
            picl__svc_fanout(
                s, "account", "", 0, -1,
                "password reset: class-A data is kept; class-B data on the server is lost by design");
        } else {
            picl__svc_flow_fail(s, st, "the password was reset, but signing in failed");
        }
    } else {
        picl__svc_flow_fail(s, st, "resetting the password failed");
    }
    picl__ksc_free(c);
    return st == PICL_OK ? picl__svc_done(s, st, NULL) : st;
}

picl_status picl__svc_reset_rk(picl_service *self, const char *code, const char *new_pw,
                               const char *recovery_key)
{
    service *s = SVC(self);
    uint8_t rk[32];
    if (!code || !*code || !new_pw || !*new_pw || !recovery_key)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "the code, a new password and the recovery key are needed");
    if (picl__rk_parse(rk, recovery_key) != PICL_OK)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "this is not a recovery key: 52 characters A-Z and 2-7 in groups of 4");
    if (!s->st->has_forgot) {
        picl__wipe(rk, sizeof rk);
        return picl__svc_done(s, PICL_ERROR_STATE, "ask for a reset code first (forgotPassword)");
    }
    if (strlen(code) != 8 || strspn(code, "0123456789") != 8) {
        picl__wipe(rk, sizeof rk);
        return picl__svc_done(s, PICL_ERROR_INVALID_CODE,
                              "resetting the password failed: the code is wrong (8 digits)");
    }
    picl_ks_client *c;
    picl_status st = picl__svc_ks_open(s, &c);
    if (st != PICL_OK) {
        picl__wipe(rk, sizeof rk);
        return st;
    }
    char email[256];
    snprintf(email, sizeof email, "%s", s->st->forgot_email);
    picl_stretch_params def;
    st = picl__account_forgot_finish_rk(c, s->st->forgot, code, email, strlen(email), new_pw, strlen(new_pw),
                                        stretch_target(s, &def), rk);
    picl__wipe(rk, sizeof rk);
    /* the code is spent whatever followed it */
    if (st == PICL_OK || st == PICL_ERROR_DECRYPT ||
        (st == PICL_ERROR_INVALID_CODE && picl__ksc_last(c)->errnum == KS_ERR_RECOVERY_KEY)) {
        picl__wipe(s->st->forgot, 32);
        s->st->has_forgot = 0;
        picl__state_save(s->st);
    }
    if (st == PICL_OK) {
        picl_account a;
        st = picl__account_login(c, email, strlen(email), new_pw, strlen(new_pw), picl__svc_floor_of(s), &a);
        if (st == PICL_OK) {
            st = adopt(s, &a);
            picl__svc_fanout(s, "account", "", 0, -1,
                             "password reset with the recovery key: class-A and class-B data are kept; "
                             "the recovery key is used up: make a new one");
        } else {
            picl__svc_flow_fail(s, st, "the password was reset, but signing in failed");
        }
    } else if (st == PICL_ERROR_DECRYPT ||
               (st == PICL_ERROR_INVALID_CODE && picl__ksc_last(c)->errnum == KS_ERR_RECOVERY_KEY)) {
        st = picl__svc_done(s, PICL_ERROR_INVALID_CODE,
                            "resetting the password failed: the recovery key is wrong (nothing was changed; "
                            "ask for a new code with 'picl password forgot')");
    } else {
        picl__svc_flow_fail(s, st, "resetting the password failed");
    }
    picl__ksc_free(c);
    return st == PICL_OK ? picl__svc_done(s, st, NULL) : st;
}

picl_status picl__svc_destroy(picl_service *self, const char *password)
{
    service *s = SVC(self);
    if (!*s->st->email)
        return picl__svc_done(s, PICL_ERROR_STATE, "not signed in");
    picl_ks_client *c;
    picl_status st = picl__svc_ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    /* once the password is proven, the data on the storage server goes
     * first (client.md 7): a failure there leaves the account in place */
    s->error[0] = 0;
    st = picl__account_destroy_with(c, s->st->email, strlen(s->st->email), password ? password : "",
                                    password ? strlen(password) : 0, picl__svc_floor_of(s),
                                    picl__svc_delete_storage, s);
    picl__ksc_free(c);
    if (st != PICL_OK && *s->error)
        return st; /* the storage step said what failed */
    if (st != PICL_OK)
        return picl__svc_flow_fail(s, st, "destroying the account failed");
    picl__state_sign_out(s->st);
    st = picl__state_save(s->st);
    return picl__svc_done(s, st, st ? "cannot save the local state" : NULL);
}

picl_status picl__svc_get_email(picl_service *self, char **email)
{
    *email = picl__svc_dup_out(SVC(self)->st->email);
    return *email ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

picl_status picl__svc_get_verified(picl_service *self, int *v)
{
    *v = SVC(self)->st->verified;
    return PICL_OK;
}

picl_status picl__svc_get_uid(picl_service *self, char **uid)
{
    *uid = picl__svc_dup_out(SVC(self)->st->uid);
    return *uid ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

picl_status picl__svc_status(picl_service *self, char **out)
{
    service *s = SVC(self);
    picl_state *st = s->st;
    char fa[33] = "", fb[33] = "";
    if (st->has_ka)
        picl__key_fingerprint(fa, st->ka);
    if (st->has_kb)
        picl__key_fingerprint(fb, st->kb);
    const char *storage = *st->storage_override
                              ? st->storage_override
                              : json_string_value(json_object_get(st->storage_token, "api_endpoint"));
    json_t *o = json_pack("{s:b, s:s, s:s, s:b, s:s, s:s, s:s, s:s, s:b, s:b}", "signedIn", *st->uid != 0,
                          "email", st->email, "uid", st->uid, "verified", st->verified, "kA_fp", fa, "kB_fp",
                          fb, "keyserver", st->keyserver, "storage", storage ? storage : "", "persistKeys",
                          st->persist_keys, "hasKeys", st->has_ka && st->has_kb);
    *out = o ? picl__json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return *out ? PICL_OK : PICL_ERROR_NO_MEMORY;
}
