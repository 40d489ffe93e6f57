/* SPDX-License-Identifier: MPL-2.0 */
/* service_int.c -- what every file of the service object uses (service_int.h):
 * the outcome message, observers, the keyserver client, this device's name,
 * the keys fetched after verification, the storage connection and the engine
 * over it.  It calls no other service file, so none of them calls back into
 * another (scripts/filecycles.py). */
#include "service_int.h"
#include "client/account.h"
#include "client/keyserver_client.h"
#include "client/state.h"
#include "client/storage_client.h"
#include "crypto/util.h"
#include "protocol/tokens.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- errors and helpers ----------------------------------------------------- */

picl_status picl__svc_done(service *s, picl_status st, const char *fmt, ...)
{
    if (st == PICL_OK) {
        s->error[0] = 0;
        return st;
    }
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->error, sizeof s->error, fmt, ap);
        va_end(ap);
    } else {
        snprintf(s->error, sizeof s->error, "%s", picl_strerror(st));
    }
    return st;
}

char *picl__svc_dup_out(const char *v) { return strdup(v ? v : ""); }

void picl__svc_fanout(void *ctx, const char *phase, const char *coll, int64_t d, int64_t t, const char *msg)
{
    service *s = ctx;
    for (size_t i = 0; i < s->nobs; i++)
        s->obs[i].fn(s->obs[i].ctx, phase, coll, d, t, msg);
}

/* ---- the keyserver ---------------------------------------------------------- */

/* The stretching floor the client accepts (NULL = the spec's), which is
 * also what new passwords are registered with: the spec's parameters, or the
 * floor when a test lowered it (a floor above the defaults raises them). */
const picl_stretch_params *picl__svc_floor_of(service *s) { return s->floor_set ? &s->floor : NULL; }

picl_status picl__svc_ks_open(service *s, picl_ks_client **c)
{
    if (!*s->st->keyserver)
        return picl__svc_done(s, PICL_ERROR_STATE,
                              "no keyserver configured: set keyserverURL (picl --server URL)");
    picl_status st = picl__ksc_new(c, s->st->keyserver);
    if (st == PICL_OK) {
        char name[65], type[16];
        picl__svc_device_of(s, name, type);
        picl__ksc_set_device(*c, name, type);
    }
    return st == PICL_OK ? st : picl__svc_done(s, st, "invalid keyserver URL %s", s->st->keyserver);
}

/* A message for an account-flow failure. */
picl_status picl__svc_flow_fail(service *s, picl_status st, const char *what)
{
    switch (st) {
    case PICL_ERROR_WRONG_PASSWORD:
        return picl__svc_done(s, st, "%s: incorrect password", what);
    case PICL_ERROR_UNKNOWN_ACCOUNT:
        return picl__svc_done(s, st, "%s: no account with this email", what);
    case PICL_ERROR_ACCOUNT_EXISTS:
        return picl__svc_done(s, st, "%s: an account with this email already exists", what);
    case PICL_ERROR_UNVERIFIED:
        return picl__svc_done(s, st, "%s: verify the email address first (the code was mailed)", what);
    case PICL_ERROR_INVALID_CODE:
        return picl__svc_done(s, st, "%s: the code is wrong or expired", what);
    case PICL_ERROR_NETWORK:
        return picl__svc_done(s, st, "%s: cannot reach the keyserver %s", what, s->st->keyserver);
    case PICL_ERROR_BACKOFF:
        return picl__svc_done(s, st, "%s: too many attempts, the server asks to wait and retry later", what);
    case PICL_ERROR_WEAK_PARAMS:
        return picl__svc_done(s, st, "%s: the server asked for weak password stretching: refused", what);
    default:
        return picl__svc_done(s, st, "%s: %s", what, picl_strerror(st));
    }
}

/* This device's name and type: the configured ones, else $PICL_DEVICE_NAME or
 * the host name, and "cli". */
void picl__svc_device_of(service *s, char name[65], char type[16])
{
    snprintf(type, 16, "%s", *s->device_type ? s->device_type : "cli");
    if (*s->device_name) {
        snprintf(name, 65, "%s", s->device_name);
        return;
    }
    const char *env = getenv("PICL_DEVICE_NAME"); /* as the clients record (stores/clients.c) */
    if (env && *env && strlen(env) <= 64 && !strchr(env, '\n')) {
        snprintf(name, 65, "%s", env);
        return;
    }
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !*host)
        snprintf(host, sizeof host, "picl");
    snprintf(name, 65, "%s", host);
}

picl_status picl__svc_post_device(service *s, picl_ks_client *c, const char *name, const char *type)
{
    json_t *body = json_pack("{s:s, s:s}", "name", name, "type", type);
    picl_status st =
        body ? picl__ksc_call(c, "POST", "/v1/account/device", s->st->session, PICL_TOKEN_SESSION, body, NULL)
             : PICL_ERROR_NO_MEMORY;
    json_decref(body);
    return st;
}

void picl__svc_name_device(service *s, picl_ks_client *c)
{
    char name[65], type[16];
    if (!s->st->has_session)
        return;
    picl__svc_device_of(s, name, type);
    picl_ks_client *own = NULL;
    if (!c && picl__ksc_new(&own, s->st->keyserver) != PICL_OK)
        return;
    picl__svc_post_device(s, c ? c : own, name, type); /* best effort: an unnamed device still works */
    picl__ksc_free(own);
}

/* ---- the keys ---------------------------------------------------------------- */

/* The epoch of the keys just fetched (records.md 4): the account's current
 * key epoch, read with the session that came with the keys.  A password
 * reset in between revokes that session, so the answer cannot name a newer
 * epoch than the keys'; when it cannot be read the epoch stays unknown (0)
 * and the engine decides from the anchored map (or asks to sign in again). */
void picl__svc_learn_key_epoch(service *s, picl_ks_client *c)
{
    picl_state *st = s->st;
    st->key_epoch = 0;
    picl_ks_client *own = NULL;
    if (!st->has_session || (!c && picl__ksc_new(&own, st->keyserver) != PICL_OK))
        return;
    picl_ksc_classmap cm;
    if (picl__ksc_classmap_get(c ? c : own, st->session, &cm) == PICL_OK)
        st->key_epoch = cm.current_epoch;
    picl__ksc_free(own);
}

/* Fetches kA/kB with the keyFetchToken kept since an unverified sign-in,
 * once the email is verified (the server consumes the token even on failure,
 * so the verification is asked first with the session).  PICL_OK when the
 * keys are here or nothing can be fetched without the password. */
picl_status picl__svc_ensure_keys(service *s, picl_ks_client *c)
{
    picl_state *st = s->st;
    if ((st->has_ka && st->has_kb) || !st->has_kft || !st->has_session)
        return PICL_OK;
    char email[256];
    int verified = 0;
    picl_status rc = picl__ksc_email_status(c, st->session, email, &verified);
    if (rc == PICL_ERROR_TOKEN) {
        picl__state_drop_kft(st);
        picl__state_save(st);
        return picl__svc_done(s, rc, "the session has ended: sign in again (picl login)");
    }
    if (rc != PICL_OK)
        return picl__svc_flow_fail(s, rc, "asking whether the email is verified failed");
    if (!verified)
        return picl__svc_done(
            s, PICL_ERROR_UNVERIFIED,
            "verify the email address first (picl account verify --code CODE, the code was mailed)");
    st->verified = 1;
    uint8_t ka[32], kb[32];
    picl__svc_fanout(s, "account", "", 0, -1, "fetching the keys");
    rc = picl__account_keys_from_token(c, st->kft, st->unwrap, ka, kb);
    if (rc == PICL_OK) {
        memcpy(st->ka, ka, 32);
        memcpy(st->kb, kb, 32);
        st->has_ka = st->has_kb = 1;
        picl__svc_learn_key_epoch(s, c);
    }
    picl__wipe(ka, sizeof ka);
    picl__wipe(kb, sizeof kb);
    if (rc == PICL_OK || rc == PICL_ERROR_TOKEN || rc == PICL_ERROR_UNVERIFIED)
        picl__state_drop_kft(st); /* used: the server consumed it either way */
    picl_status sv = picl__state_save(st);
    if (rc == PICL_ERROR_TOKEN || rc == PICL_ERROR_UNVERIFIED)
        return picl__svc_done(s, PICL_ERROR_STATE,
                              "the key fetch token from signing up expired (after 24 hours): "
                              "enter the password once (picl login)");
    if (rc != PICL_OK)
        return picl__svc_flow_fail(s, rc, "fetching the keys failed");
    return sv == PICL_OK ? PICL_OK : picl__svc_done(s, sv, "cannot save the local state in %s", st->dir);
}

/* ---- the storage connection ---------------------------------------------------------------- */

/* A storage token: the cached one while valid, else a fresh one. */
static picl_status fetch_token(svc_conn *c, int force)
{
    picl_state *st = c->s->st;
    json_t *tok = st->storage_token;
    json_int_t expires = json_integer_value(json_object_get(tok, "expires"));
    if (!force && tok && expires > (json_int_t)time(NULL) + 60)
        return PICL_OK;
    if (!st->has_session)
        return picl__svc_done(c->s, PICL_ERROR_TOKEN, "not signed in: sign in again");
    json_t *creds = NULL;
    picl_status rc = picl__ksc_storage_token(c->ks, st->session, &creds);
    if (rc == PICL_ERROR_UNVERIFIED)
        return picl__svc_done(c->s, rc, "verify the email address before syncing");
    if (rc == PICL_ERROR_TOKEN)
        return picl__svc_done(c->s, rc, "the session has ended (password changed or reset?): sign in again");
    if (rc != PICL_OK)
        return picl__svc_flow_fail(c->s, rc, "getting a storage token failed");
    json_int_t duration = json_integer_value(json_object_get(creds, "duration"));
    json_object_set_new(creds, "expires",
                        json_integer((json_int_t)time(NULL) + (duration > 0 ? duration : 300)));
    picl__json_zdecref(st->storage_token);
    st->storage_token = creds;
    picl__state_save(st);
    return PICL_OK;
}

static picl_status refresh_cb(void *ctx, char **ep, char **id, char **key)
{
    svc_conn *c = ctx;
    picl_status rc = fetch_token(c, 1);
    if (rc != PICL_OK)
        return rc;
    json_t *t = c->s->st->storage_token;
    const char *api = *c->s->st->storage_override ? c->s->st->storage_override
                                                  : json_string_value(json_object_get(t, "api_endpoint"));
    *ep = strdup(api ? api : "");
    *id = strdup(json_string_value(json_object_get(t, "id")) ? json_string_value(json_object_get(t, "id"))
                                                             : "");
    *key = strdup(json_string_value(json_object_get(t, "key")) ? json_string_value(json_object_get(t, "key"))
                                                               : "");
    return (*ep && *id && *key) ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

void picl__svc_conn_close(svc_conn *c)
{
    /* keep the storage node's clock offset the client learned: the next
     * sync signs with it at once instead of paying a 401 again */
    if (c->stc && c->s && picl__stc_clock_offset(c->stc) != c->s->st->clock_offset &&
        llabs((long long)picl__stc_clock_offset(c->stc)) <= 366LL * 86400) {
        c->s->st->clock_offset = picl__stc_clock_offset(c->stc);
        picl__state_save(c->s->st);
    }
    picl__stc_free(c->stc);
    picl__ksc_free(c->ks);
    c->stc = NULL;
    c->ks = NULL;
}

picl_status picl__svc_conn_open(service *s, svc_conn *c)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    if (!*s->st->uid)
        return picl__svc_done(s, PICL_ERROR_STATE, "not signed in");
    picl_status rc = picl__svc_ks_open(s, &c->ks);
    if (rc != PICL_OK)
        return rc;
    if ((rc = picl__svc_ensure_keys(s, c->ks)) != PICL_OK || (rc = fetch_token(c, 0)) != PICL_OK) {
        picl__svc_conn_close(c);
        return rc;
    }
    char *ep, *id, *key;
    json_t *t = s->st->storage_token;
    const char *api = *s->st->storage_override ? s->st->storage_override
                                               : json_string_value(json_object_get(t, "api_endpoint"));
    ep = (char *)api;
    id = (char *)json_string_value(json_object_get(t, "id"));
    key = (char *)json_string_value(json_object_get(t, "key"));
    if (!ep || !id || !key) {
        picl__svc_conn_close(c);
        return picl__svc_done(s, PICL_ERROR_PROTOCOL, "the keyserver gave malformed storage credentials");
    }
    rc = picl__stc_new(&c->stc, ep, id, key);
    if (rc != PICL_OK) {
        picl__svc_conn_close(c);
        return picl__svc_done(s, rc, "invalid storage endpoint %s", ep);
    }
    picl__stc_set_refresh(c->stc, refresh_cb, c);
    picl__stc_set_clock_offset(c->stc, s->st->clock_offset);
    return PICL_OK;
}

picl_status picl__svc_delete_storage(void *ctx)
{
    service *s = ctx;
    svc_conn c;
    picl_status st = picl__svc_conn_open(s, &c);
    if (st == PICL_ERROR_UNVERIFIED)
        return picl__svc_done(s, PICL_OK, NULL); /* never verified: no token, no data */
    if (st != PICL_OK)
        return picl__svc_done(s, st,
                              "cannot reach the storage server to delete the data there (%s): "
                              "the account was not destroyed",
                              *s->error ? s->error : picl_strerror(st));
    st = picl__stc_delete_user(c.stc, NULL);
    int moved = st != PICL_OK && picl__stc_node_changed(c.stc);
    picl__svc_conn_close(&c);
    if (moved) { /* the account moved to another node: delete there */
        if ((st = picl__svc_conn_open(s, &c)) == PICL_OK)
            st = picl__stc_delete_user(c.stc, NULL);
        picl__svc_conn_close(&c);
    }
    if (st != PICL_OK)
        return picl__svc_done(
            s, st, "deleting the data on the storage server failed (%s): the account was not destroyed",
            picl_strerror(st));
    picl__json_zdecref(s->st->storage_token);
    s->st->storage_token = NULL;
    return picl__svc_done(s, PICL_OK, NULL);
}

/* The class map anchor on the keyserver (records.md 4), for the engine. */
static picl_status anchor_get(void *ctx, picl_anchor *out)
{
    svc_conn *c = ctx;
    picl_ksc_classmap cm;
    memset(out, 0, sizeof *out);
    if (!c->s->st->has_session)
        return PICL_ERROR_TOKEN;
    picl_status st = picl__ksc_classmap_get(c->ks, c->s->st->session, &cm);
    if (st == PICL_OK) {
        out->version = cm.version;
        memcpy(out->hmac, cm.hmac, sizeof out->hmac);
        out->epoch = cm.epoch;
        out->current_epoch = cm.current_epoch;
    }
    return st;
}

static picl_status anchor_post(void *ctx, uint64_t version, const char *hmac)
{
    svc_conn *c = ctx;
    if (!c->s->st->has_session)
        return PICL_ERROR_TOKEN;
    return picl__ksc_classmap_post(c->ks, c->s->st->session, version, hmac);
}

void picl__svc_engine_setup(service *s, svc_conn *c, picl_engine *e)
{
    picl__engine_init(e, c->stc, s->st);
    e->notify = picl__svc_fanout;
    e->notify_ctx = s;
    e->anchor_get = anchor_get;
    e->anchor_post = anchor_post;
    e->anchor_ctx = c;
    e->allow_mass_delete = s->allow_mass_delete;
}

picl_status picl__svc_with_engine(service *s, picl_status (*fn)(service *s, picl_engine *e, void *arg),
                                  void *arg)
{
    svc_conn c;
    picl_status st = picl__svc_conn_open(s, &c);
    if (st != PICL_OK)
        return st;
    picl_engine e;
    picl__svc_engine_setup(s, &c, &e);
    st = fn(s, &e, arg);
    if (st != PICL_OK)
        picl__svc_done(s, st, "%s", *e.error ? e.error : picl_strerror(st));
    picl__engine_done(&e);
    picl__svc_conn_close(&c);
    return st;
}
