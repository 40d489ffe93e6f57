/* service.c -- the object behind picl.h and nsIPiCLService: account flows,
 * classes and sync on top of the client modules, with one message per failure. */
#include "picl.h"
#include "client/account.h"
#include "client/engine.h"
#include "client/keyserver_client.h"
#include "client/records.h"
#include "client/state.h"
#include "client/storage_client.h"
#include "crypto/nss.h"
#include "crypto/util.h"
#include "stores/logins.h"
#include "stores/places.h"
#include "stores/store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_OBSERVERS 16
#define MAX_CUSTOM 16
static const char *const DEFAULT_COLLECTIONS[] = {"bookmarks", "history", "passwords"};

typedef struct observer {
    picl_observer_fn fn;
    void *ctx;
} observer;

typedef struct custom_store {
    char collection[33];
    picl_store_callbacks cb;
    void *ctx;
} custom_store;

typedef struct service {
    picl_service base;
    uint32_t refs;
    picl_state *st;
    char error[512];
    picl_stretch_params floor;
    int floor_set;
    observer obs[MAX_OBSERVERS];
    size_t nobs;
    char *profile_dir;
    char *store_dir;
    custom_store custom[MAX_CUSTOM];
    size_t ncustom;
    char *primary; /* the profile's primary password, wiped on release */
} service;

#define SVC(self) ((service *)(self))

/* ---- errors and helpers ----------------------------------------------------- */

static picl_status done(service *s, picl_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static picl_status done(service *s, picl_status st, const char *fmt, ...)
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

static char *dup_out(const char *v)
{
    return strdup(v ? v : "");
}

static void fanout(void *ctx, const char *phase, const char *coll, int64_t d, int64_t t, const char *msg)
{
    service *s = ctx;
    for (size_t i = 0; i < s->nobs; i++)
        s->obs[i].fn(s->obs[i].ctx, phase, coll, d, t, msg);
}

static const picl_stretch_params *floor_of(service *s)
{
    return s->floor_set ? &s->floor : NULL;
}

/* What new passwords are registered with: the spec's parameters, or the
 * floor when a test lowered it (a floor above the defaults raises them). */
static const picl_stretch_params *params_of(service *s)
{
    return s->floor_set ? &s->floor : NULL;
}

static picl_status ks_open(service *s, picl_ks_client **c)
{
    if (!*s->st->keyserver)
        return done(s, PICL_ERROR_STATE, "no keyserver configured: set keyserverURL (picl --server URL)");
    picl_status st = picl__ksc_new(c, s->st->keyserver);
    return st == PICL_OK ? st : done(s, st, "invalid keyserver URL %s", s->st->keyserver);
}

/* A message for an account-flow failure. */
static picl_status flow_fail(service *s, picl_status st, const char *what)
{
    switch (st) {
    case PICL_ERROR_WRONG_PASSWORD:
        return done(s, st, "%s: incorrect password", what);
    case PICL_ERROR_UNKNOWN_ACCOUNT:
        return done(s, st, "%s: no account with this email", what);
    case PICL_ERROR_ACCOUNT_EXISTS:
        return done(s, st, "%s: an account with this email already exists", what);
    case PICL_ERROR_UNVERIFIED:
        return done(s, st, "%s: verify the email address first (the code was mailed)", what);
    case PICL_ERROR_INVALID_CODE:
        return done(s, st, "%s: the code is wrong or expired", what);
    case PICL_ERROR_NETWORK:
        return done(s, st, "%s: cannot reach the keyserver %s", what, s->st->keyserver);
    case PICL_ERROR_BACKOFF:
        return done(s, st, "%s: too many attempts, the server asks to wait and retry later", what);
    case PICL_ERROR_WEAK_PARAMS:
        return done(s, st, "%s: the server asked for weak password stretching: refused", what);
    default:
        return done(s, st, "%s: %s", what, picl_strerror(st));
    }
}

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
    }
    json_decref(st->storage_token);
    st->storage_token = NULL;
    picl__account_wipe(a);
    picl_status rc = picl__state_save(st);
    return rc == PICL_OK ? rc : done(s, rc, "cannot save the local state in %s", st->dir);
}

/* ---- nsISupports ---------------------------------------------------------- */

static int iid_eq(const picl_iid *a, const picl_iid *b)
{
    return a->m0 == b->m0 && a->m1 == b->m1 && a->m2 == b->m2 && !memcmp(a->m3, b->m3, 8);
}

static uint32_t svc_addref(picl_service *self)
{
    return ++SVC(self)->refs;
}

static uint32_t svc_release(picl_service *self)
{
    service *s = SVC(self);
    if (--s->refs > 0)
        return s->refs;
    picl__state_free(s->st);
    if (s->primary)
        picl__zfree(s->primary, strlen(s->primary));
    free(s->profile_dir);
    free(s->store_dir);
    picl__wipe(s, sizeof *s);
    free(s);
    picl__nss_release();
    return 0;
}

static picl_status svc_qi(picl_service *self, const picl_iid *iid, void **out)
{
    static const picl_iid isupports = PICL_ISUPPORTS_IID, iservice = PICL_ISERVICE_IID;
    *out = NULL;
    if (!iid)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (iid_eq(iid, &isupports) || iid_eq(iid, &iservice)) {
        svc_addref(self);
        *out = self;
        return PICL_OK;
    }
    return done(SVC(self), PICL_ERROR_NOT_FOUND, "no such interface");
}

/* ---- configuration ---------------------------------------------------------- */

static picl_status svc_set_keyserver(picl_service *self, const char *url)
{
    service *s = SVC(self);
    if (!url || (*url && strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "the keyserver URL must start with http:// or https://");
    if (strcmp(url, s->st->keyserver) && *s->st->uid)
        picl__state_sign_out(s->st); /* another server: another account */
    picl__state_set_str(&s->st->keyserver, url);
    picl_status rc = picl__state_save(s->st);
    return done(s, rc, rc ? "cannot save the local state" : NULL);
}

static picl_status svc_get_keyserver(picl_service *self, char **url)
{
    *url = dup_out(SVC(self)->st->keyserver);
    return *url ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status svc_set_storage(picl_service *self, const char *url)
{
    service *s = SVC(self);
    picl__state_set_str(&s->st->storage_override, url);
    json_decref(s->st->storage_token);
    s->st->storage_token = NULL;
    picl_status rc = picl__state_save(s->st);
    return done(s, rc, rc ? "cannot save the local state" : NULL);
}

static picl_status svc_set_persist(picl_service *self, int persist)
{
    service *s = SVC(self);
    s->st->persist_keys = persist != 0;
    picl_status rc = picl__state_save(s->st);
    return done(s, rc, rc ? "cannot save the local state" : NULL);
}

static picl_status svc_set_floor(picl_service *self, uint32_t r1, uint64_t n, uint32_t r, uint32_t p, uint32_t r2)
{
    service *s = SVC(self);
    if (!r1 || !r2 || n < 2 || (n & (n - 1)) || !r || !p)
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid stretching floor");
    s->floor = (picl_stretch_params){r1, n, r, p, r2};
    s->floor_set = 1;
    return done(s, PICL_OK, NULL);
}

/* ---- account ------------------------------------------------------------------ */

static picl_status svc_create(picl_service *self, const char *email, const char *password)
{
    service *s = SVC(self);
    if (!email || !*email || !password || !*password)
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "an email and a password are needed");
    picl_ks_client *c;
    picl_status st = ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    char uid[33];
    fanout(s, "account", "", 0, -1, "stretching the password");
    st = picl__account_create(c, email, strlen(email), password, strlen(password), params_of(s), uid);
    if (st == PICL_OK) {
        picl_account a;
        st = picl__account_login(c, email, strlen(email), password, strlen(password), floor_of(s), &a);
        if (st == PICL_OK)
            st = adopt(s, &a);
        else
            flow_fail(s, st, "account created, but signing in failed");
    } else {
        flow_fail(s, st, "creating the account failed");
    }
    picl__ksc_free(c);
    return st == PICL_OK ? done(s, st, NULL) : st;
}

static picl_status svc_verify(picl_service *self, const char *code)
{
    service *s = SVC(self);
    if (!*s->st->uid)
        return done(s, PICL_ERROR_STATE, "no account: create one or sign in first");
    if (!code || !*code)
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "the verification code is missing");
    if (strlen(code) != 64 || strspn(code, "0123456789abcdefABCDEF") != 64)
        return done(s, PICL_ERROR_INVALID_CODE, "verifying the email failed: the code is wrong (64 hex characters)");
    picl_ks_client *c;
    picl_status st = ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    st = picl__account_verify(c, s->st->uid, code);
    picl__ksc_free(c);
    if (st != PICL_OK)
        return flow_fail(s, st, "verifying the email failed");
    s->st->verified = 1;
    st = picl__state_save(s->st);
    return done(s, st, st ? "cannot save the local state" : NULL);
}

static picl_status svc_sign_in(picl_service *self, const char *email, const char *password)
{
    service *s = SVC(self);
    if (!email || !*email || !password)
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "an email and a password are needed");
    picl_ks_client *c;
    picl_status st = ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    picl_account a;
    fanout(s, "account", "", 0, -1, "stretching the password");
    st = picl__account_login(c, email, strlen(email), password, strlen(password), floor_of(s), &a);
    picl__ksc_free(c);
    if (st != PICL_OK)
        return flow_fail(s, st, "signing in failed");
    st = adopt(s, &a);
    return st == PICL_OK ? done(s, st, NULL) : st;
}

static picl_status svc_sign_out(picl_service *self)
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
    return done(s, st, st ? "cannot save the local state" : NULL);
}

static picl_status svc_change_password(picl_service *self, const char *old_pw, const char *new_pw)
{
    service *s = SVC(self);
    if (!*s->st->email)
        return done(s, PICL_ERROR_STATE, "not signed in");
    if (!old_pw || !new_pw || !*new_pw)
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "the old and the new password are needed");
    picl_ks_client *c;
    picl_status st = ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    picl_account a;
    const char *email = s->st->email;
    st = picl__account_change_password(c, email, strlen(email), old_pw, strlen(old_pw), new_pw, strlen(new_pw), params_of(s),
                                       floor_of(s), &a);
    picl__ksc_free(c);
    if (st != PICL_OK)
        return flow_fail(s, st, "changing the password failed");
    st = adopt(s, &a);
    return st == PICL_OK ? done(s, st, NULL) : st;
}

static picl_status svc_forgot(picl_service *self, const char *email)
{
    service *s = SVC(self);
    if (!email || !*email)
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "the email is needed");
    picl_ks_client *c;
    picl_status st = ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    st = picl__account_forgot_start(c, email, strlen(email), s->st->forgot);
    picl__ksc_free(c);
    if (st != PICL_OK)
        return flow_fail(s, st, "asking for a reset code failed");
    s->st->has_forgot = 1;
    picl__state_set_str(&s->st->forgot_email, email);
    st = picl__state_save(s->st);
    return done(s, st, st ? "cannot save the local state" : NULL);
}

static picl_status svc_reset(picl_service *self, const char *code, const char *new_pw)
{
    service *s = SVC(self);
    if (!s->st->has_forgot)
        return done(s, PICL_ERROR_STATE, "ask for a reset code first (forgotPassword)");
    if (!code || !*code || !new_pw || !*new_pw)
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "the code and a new password are needed");
    if (strlen(code) != 8 || strspn(code, "0123456789") != 8)
        return done(s, PICL_ERROR_INVALID_CODE, "resetting the password failed: the code is wrong (8 digits)");
    picl_ks_client *c;
    picl_status st = ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    char email[256];
    snprintf(email, sizeof email, "%s", s->st->forgot_email);
    st = picl__account_forgot_finish(c, s->st->forgot, code, email, strlen(email), new_pw, strlen(new_pw),
                                     params_of(s));
    if (st == PICL_OK) {
        picl__wipe(s->st->forgot, 32);
        s->st->has_forgot = 0;
        picl_account a;
        st = picl__account_login(c, email, strlen(email), new_pw, strlen(new_pw), floor_of(s), &a);
        if (st == PICL_OK) {
            /* kB is new: everything class B must be re-keyed at the next sync */
            st = adopt(s, &a);
            fanout(s, "account", "", 0, -1,
                   "password reset: class-A data is kept; class-B data on the server is lost by design");
        } else {
            flow_fail(s, st, "the password was reset, but signing in failed");
        }
    } else {
        flow_fail(s, st, "resetting the password failed");
    }
    picl__ksc_free(c);
    return st == PICL_OK ? done(s, st, NULL) : st;
}

static picl_status svc_destroy(picl_service *self, const char *password)
{
    service *s = SVC(self);
    if (!*s->st->email)
        return done(s, PICL_ERROR_STATE, "not signed in");
    picl_ks_client *c;
    picl_status st = ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    st = picl__account_destroy(c, s->st->email, strlen(s->st->email), password ? password : "",
                               password ? strlen(password) : 0, floor_of(s));
    picl__ksc_free(c);
    if (st != PICL_OK)
        return flow_fail(s, st, "destroying the account failed");
    picl__state_sign_out(s->st);
    st = picl__state_save(s->st);
    return done(s, st, st ? "cannot save the local state" : NULL);
}

static picl_status svc_get_email(picl_service *self, char **email)
{
    *email = dup_out(SVC(self)->st->email);
    return *email ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status svc_get_verified(picl_service *self, int *v)
{
    *v = SVC(self)->st->verified;
    return PICL_OK;
}

static picl_status svc_get_uid(picl_service *self, char **uid)
{
    *uid = dup_out(SVC(self)->st->uid);
    return *uid ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status svc_status(picl_service *self, char **out)
{
    service *s = SVC(self);
    picl_state *st = s->st;
    char fa[33] = "", fb[33] = "";
    if (st->has_ka)
        picl__key_fingerprint(fa, st->ka);
    if (st->has_kb)
        picl__key_fingerprint(fb, st->kb);
    const char *storage = *st->storage_override ? st->storage_override
                                                : json_string_value(json_object_get(st->storage_token, "api_endpoint"));
    json_t *o = json_pack("{s:b, s:s, s:s, s:b, s:s, s:s, s:s, s:s, s:b, s:b}", "signedIn", *st->uid != 0, "email",
                          st->email, "uid", st->uid, "verified", st->verified, "kA_fp", fa, "kB_fp", fb, "keyserver",
                          st->keyserver, "storage", storage ? storage : "", "persistKeys", st->persist_keys,
                          "hasKeys", st->has_ka && st->has_kb);
    *out = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return *out ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

/* ---- storage ---------------------------------------------------------------- */

typedef struct conn {
    service *s;
    picl_ks_client *ks;
    picl_stc *stc;
} conn;

/* A storage token: the cached one while valid, else a fresh one. */
static picl_status fetch_token(conn *c, int force)
{
    picl_state *st = c->s->st;
    json_t *tok = st->storage_token;
    json_int_t expires = json_integer_value(json_object_get(tok, "expires"));
    if (!force && tok && expires > (json_int_t)time(NULL) + 60)
        return PICL_OK;
    if (!st->has_session)
        return done(c->s, PICL_ERROR_TOKEN, "not signed in: sign in again");
    json_t *creds = NULL;
    picl_status rc = picl__ksc_storage_token(c->ks, st->session, &creds);
    if (rc == PICL_ERROR_UNVERIFIED)
        return done(c->s, rc, "verify the email address before syncing");
    if (rc == PICL_ERROR_TOKEN)
        return done(c->s, rc, "the session has ended (password changed or reset?): sign in again");
    if (rc != PICL_OK)
        return flow_fail(c->s, rc, "getting a storage token failed");
    json_int_t duration = json_integer_value(json_object_get(creds, "duration"));
    json_object_set_new(creds, "expires", json_integer((json_int_t)time(NULL) + (duration > 0 ? duration : 300)));
    json_decref(st->storage_token);
    st->storage_token = creds;
    picl__state_save(st);
    return PICL_OK;
}

static picl_status refresh_cb(void *ctx, char **ep, char **id, char **key)
{
    conn *c = ctx;
    picl_status rc = fetch_token(c, 1);
    if (rc != PICL_OK)
        return rc;
    json_t *t = c->s->st->storage_token;
    const char *api = *c->s->st->storage_override ? c->s->st->storage_override
                                                  : json_string_value(json_object_get(t, "api_endpoint"));
    *ep = strdup(api ? api : "");
    *id = strdup(json_string_value(json_object_get(t, "id")) ? json_string_value(json_object_get(t, "id")) : "");
    *key = strdup(json_string_value(json_object_get(t, "key")) ? json_string_value(json_object_get(t, "key")) : "");
    return (*ep && *id && *key) ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static void conn_close(conn *c)
{
    picl__stc_free(c->stc);
    picl__ksc_free(c->ks);
    c->stc = NULL;
    c->ks = NULL;
}

static picl_status conn_open(service *s, conn *c)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    if (!*s->st->uid)
        return done(s, PICL_ERROR_STATE, "not signed in");
    picl_status rc = ks_open(s, &c->ks);
    if (rc != PICL_OK)
        return rc;
    if ((rc = fetch_token(c, 0)) != PICL_OK) {
        conn_close(c);
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
        conn_close(c);
        return done(s, PICL_ERROR_PROTOCOL, "the keyserver gave malformed storage credentials");
    }
    rc = picl__stc_new(&c->stc, ep, id, key);
    if (rc != PICL_OK) {
        conn_close(c);
        return done(s, rc, "invalid storage endpoint %s", ep);
    }
    picl__stc_set_refresh(c->stc, refresh_cb, c);
    return PICL_OK;
}

/* Before acting on a class map made under another kB: is ours current? */
static picl_status confirm_keys(void *ctx)
{
    conn *c = ctx;
    char email[256];
    int verified;
    return picl__ksc_email_status(c->ks, c->s->st->session, email, &verified);
}

static void engine_setup(service *s, conn *c, picl_engine *e)
{
    picl__engine_init(e, c->stc, s->st);
    e->notify = fanout;
    e->notify_ctx = s;
    e->confirm_keys = confirm_keys;
    e->confirm_ctx = c;
}

/* ---- classes ------------------------------------------------------------------ */

static picl_status svc_get_class(picl_service *self, const char *coll, char **cls)
{
    service *s = SVC(self);
    *cls = NULL;
    if (!picl__collection_name_ok(coll))
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid collection name");
    /* the server's map (another device may have moved it), verified; when
     * the server cannot be asked, the last map this device accepted */
    picl_class_entry ce = {'B', 1};
    conn c;
    picl_status st = conn_open(s, &c);
    if (st == PICL_OK) {
        picl_engine e;
        engine_setup(s, &c, &e);
        st = picl__engine_get_class(&e, coll, &ce);
        if (st != PICL_OK)
            done(s, st, "%s", e.error);
        else
            picl__state_save(s->st);
        picl__engine_done(&e);
        conn_close(&c);
    }
    if (st == PICL_ERROR_NETWORK || st == PICL_ERROR_BACKOFF || st == PICL_ERROR_STATE) {
        picl_classmap m;
        if (*s->st->classmap_payload && picl__classmap_parse_trusted(&m, s->st->classmap_payload) == PICL_OK) {
            const picl_class_entry *x = picl__classmap_get(&m, coll);
            ce.cls = x ? x->cls : 'B';
            st = PICL_OK;
        }
    }
    if (st != PICL_OK)
        return st;
    *cls = strdup(ce.cls == 'A' ? "A" : "B");
    return *cls ? done(s, PICL_OK, NULL) : PICL_ERROR_NO_MEMORY;
}

static picl_status svc_set_class(picl_service *self, const char *coll, const char *cls)
{
    service *s = SVC(self);
    if (!picl__collection_name_ok(coll) || !cls || (strcmp(cls, "A") && strcmp(cls, "B")))
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "usage: a collection name and class \"A\" or \"B\"");
    conn c;
    picl_status st = conn_open(s, &c);
    if (st != PICL_OK)
        return st;
    picl_engine e;
    engine_setup(s, &c, &e);
    st = picl__engine_set_class(&e, coll, cls[0]);
    if (st != PICL_OK)
        done(s, st, "%s", e.error);
    picl__engine_done(&e);
    conn_close(&c);
    return st == PICL_OK ? done(s, st, NULL) : st;
}

static picl_status svc_collections(picl_service *self, char **out)
{
    service *s = SVC(self);
    json_t *a = json_array();
    picl_classmap m;
    memset(&m, 0, sizeof m);
    if (*s->st->classmap_payload)
        picl__classmap_parse_trusted(&m, s->st->classmap_payload);
    for (size_t i = 0; i < m.n; i++) {
        char cls[2] = {m.items[i].e.cls, 0};
        json_array_append_new(a, json_pack("{s:s, s:s, s:i, s:s}", "name", m.items[i].name, "class", cls,
                                           "generation", (int)m.items[i].e.generation, "lastSync",
                                           picl__state_last_sync(s->st, m.items[i].name)));
    }
    *out = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return *out ? done(s, PICL_OK, NULL) : PICL_ERROR_NO_MEMORY;
}

/* ---- stores and sync ------------------------------------------------------------ */

static picl_status svc_use_profile(picl_service *self, const char *dir)
{
    service *s = SVC(self);
    free(s->profile_dir);
    s->profile_dir = dir && *dir ? strdup(dir) : NULL;
    return done(s, PICL_OK, NULL);
}

static picl_status svc_set_primary(picl_service *self, const char *pw)
{
    service *s = SVC(self);
    if (s->primary)
        picl__zfree(s->primary, strlen(s->primary));
    s->primary = pw ? strdup(pw) : NULL;
    return done(s, pw && !s->primary ? PICL_ERROR_NO_MEMORY : PICL_OK, NULL);
}

/* The logins store asks for the primary password only when key4.db has one. */
static picl_status ask_primary(void *arg, char *buf, size_t cap)
{
    service *s = arg;
    if (!s->primary)
        return PICL_ERROR_STATE;
    if (strlen(s->primary) >= cap)
        return PICL_ERROR_TOO_LARGE;
    snprintf(buf, cap, "%s", s->primary);
    return PICL_OK;
}

static picl_status svc_use_store_dir(picl_service *self, const char *dir)
{
    service *s = SVC(self);
    free(s->store_dir);
    s->store_dir = dir && *dir ? strdup(dir) : NULL;
    return done(s, PICL_OK, NULL);
}

static picl_status svc_set_store(picl_service *self, const char *coll, const picl_store_callbacks *cb, void *ctx)
{
    service *s = SVC(self);
    if (!picl__collection_name_ok(coll))
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid collection name");
    size_t i;
    for (i = 0; i < s->ncustom && strcmp(s->custom[i].collection, coll); i++)
        ;
    if (!cb) { /* removal */
        if (i < s->ncustom)
            s->custom[i] = s->custom[--s->ncustom];
        return done(s, PICL_OK, NULL);
    }
    if (!cb->changes || !cb->all || !cb->apply || !cb->mark_synced)
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "a store needs changes, all, apply and mark_synced");
    if (i == s->ncustom) {
        if (s->ncustom == MAX_CUSTOM)
            return done(s, PICL_ERROR_TOO_LARGE, "too many stores");
        s->ncustom++;
    }
    snprintf(s->custom[i].collection, sizeof s->custom[i].collection, "%s", coll);
    s->custom[i].cb = *cb;
    s->custom[i].ctx = ctx;
    return done(s, PICL_OK, NULL);
}

static picl_status open_store(service *s, const char *coll, picl_store **out)
{
    char err[256] = "";
    *out = NULL;
    for (size_t i = 0; i < s->ncustom; i++)
        if (!strcmp(s->custom[i].collection, coll))
            return picl__cbstore_open(out, coll, &s->custom[i].cb, s->custom[i].ctx);
    if (s->profile_dir) {
        picl_status st;
        if (!strcmp(coll, "bookmarks") || !strcmp(coll, "history"))
            st = picl__places_open(out, s->profile_dir, coll, err, sizeof err);
        else if (!strcmp(coll, "passwords"))
            st = picl__logins_open(out, s->profile_dir, s->st->dir, ask_primary, s, err, sizeof err);
        else
            return done(s, PICL_ERROR_UNSUPPORTED, "a Firefox profile has no %s store", coll);
        return st == PICL_OK ? st : done(s, st, "%s: %s", coll, *err ? err : picl_strerror(st));
    }
    if (s->store_dir) {
        picl_status st = picl__filestore_open(out, s->store_dir, coll);
        return st == PICL_OK ? st
                             : done(s, st, "%s/%s.json: %s", s->store_dir, coll,
                                    st == PICL_ERROR_ENCODING ? "not a JSON array of records" : picl_strerror(st));
    }
    return done(s, PICL_ERROR_STATE, "no store for %s: use a profile or a store directory", coll);
}

static picl_status do_sync(service *s, const char *const *colls, size_t n, char **summary)
{
    if (summary)
        *summary = NULL;
    const char *const *list = n ? colls : DEFAULT_COLLECTIONS;
    size_t count = n ? n : sizeof DEFAULT_COLLECTIONS / sizeof DEFAULT_COLLECTIONS[0];
    picl_store **stores = calloc(count, sizeof *stores);
    if (!stores)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = PICL_OK;
    for (size_t i = 0; i < count && st == PICL_OK; i++)
        if (!picl__collection_name_ok(list[i]))
            st = done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid collection name \"%s\"", list[i]);
    /* passwords first: logins.json and key4.db are checked before places.sqlite
     * is opened at all, so a refused profile is left exactly as it was */
    for (int pass = 0; pass < 2 && st == PICL_OK; pass++)
        for (size_t i = 0; i < count && st == PICL_OK; i++)
            if ((pass == 0) == !strcmp(list[i], "passwords"))
                st = open_store(s, list[i], &stores[i]);
    conn c;
    memset(&c, 0, sizeof c);
    if (st == PICL_OK)
        st = conn_open(s, &c);
    json_t *sum = json_object();
    if (st == PICL_OK) {
        picl_engine e;
        engine_setup(s, &c, &e);
        st = picl__engine_sync(&e, stores, count, sum);
        if (st != PICL_OK)
            done(s, st, "%s", *e.error ? e.error : picl_strerror(st));
        picl__engine_done(&e);
    }
    conn_close(&c);
    for (size_t i = 0; i < count; i++)
        picl__store_close(stores[i]);
    free(stores);
    json_t *top = json_pack("{s:o, s:s, s:s}", "collections", sum, "status", st == PICL_OK ? "ok" : "error",
                            "message", st == PICL_OK ? "" : s->error);
    if (summary && top)
        *summary = json_dumps(top, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(top);
    fanout(s, "status", "", 0, -1, st == PICL_OK ? "sync finished" : s->error);
    return st == PICL_OK ? done(s, st, NULL) : st;
}

static picl_status svc_sync(picl_service *self, const char *const *colls, size_t n, char **summary)
{
    return do_sync(SVC(self), colls, n, summary);
}

static picl_status svc_wipe(picl_service *self, const char *coll)
{
    service *s = SVC(self);
    conn c;
    picl_status st = conn_open(s, &c);
    if (st != PICL_OK)
        return st;
    picl_engine e;
    engine_setup(s, &c, &e);
    st = picl__engine_wipe_server(&e, coll);
    if (st != PICL_OK)
        done(s, st, "%s", e.error);
    picl__engine_done(&e);
    conn_close(&c);
    return st == PICL_OK ? done(s, st, NULL) : st;
}

static picl_status svc_reset_local(picl_service *self)
{
    service *s = SVC(self);
    const char *k;
    json_t *v;
    json_object_foreach(s->st->collections, k, v) {
        json_object_set_new(v, "lastSync", json_string("0"));
        json_object_set_new(v, "reset", json_true());
    }
    picl_status st = picl__state_save(s->st);
    return done(s, st, st ? "cannot save the local state" : NULL);
}

static picl_status svc_add_obs(picl_service *self, picl_observer_fn fn, void *ctx)
{
    service *s = SVC(self);
    if (!fn)
        return done(s, PICL_ERROR_INVALID_ARGUMENT, "no observer");
    if (s->nobs == MAX_OBSERVERS)
        return done(s, PICL_ERROR_TOO_LARGE, "too many observers");
    s->obs[s->nobs++] = (observer){fn, ctx};
    return done(s, PICL_OK, NULL);
}

static picl_status svc_remove_obs(picl_service *self, picl_observer_fn fn, void *ctx)
{
    service *s = SVC(self);
    for (size_t i = 0; i < s->nobs; i++)
        if (s->obs[i].fn == fn && s->obs[i].ctx == ctx) {
            memmove(&s->obs[i], &s->obs[i + 1], (s->nobs - i - 1) * sizeof s->obs[0]);
            s->nobs--;
            return done(s, PICL_OK, NULL);
        }
    return done(s, PICL_ERROR_NOT_FOUND, "no such observer");
}

static const char *svc_last_error(picl_service *self)
{
    return SVC(self)->error;
}

static const picl_service_vtbl vtbl = {
    svc_qi, svc_addref, svc_release, svc_set_keyserver, svc_get_keyserver, svc_set_storage, svc_set_persist,
    svc_set_floor, svc_create, svc_verify, svc_sign_in, svc_sign_out, svc_change_password, svc_forgot, svc_reset,
    svc_destroy, svc_get_email, svc_get_verified, svc_get_uid, svc_status, svc_get_class, svc_set_class,
    svc_collections, svc_use_profile, svc_use_store_dir, svc_set_store, svc_sync, svc_wipe, svc_reset_local,
    svc_add_obs, svc_remove_obs, svc_last_error, svc_set_primary,
};

/* ---- creation and the flat FFI forms --------------------------------------------- */

picl_status picl_service_create(const char *state_dir, picl_service **out)
{
    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!state_dir || !*state_dir)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_status st = picl__nss_acquire_dir(state_dir);
    if (st == PICL_ERROR_NSS_INIT) {
        /* the directory may not exist yet: state_load creates it */
        picl_state *probe;
        if (picl__state_load(&probe, state_dir, 1) == PICL_OK)
            picl__state_free(probe);
        st = picl__nss_acquire_dir(state_dir);
    }
    if (st != PICL_OK)
        return st;
    service *s = calloc(1, sizeof *s);
    if (!s) {
        picl__nss_release();
        return PICL_ERROR_NO_MEMORY;
    }
    s->base.vtbl = &vtbl;
    s->refs = 1;
    st = picl__state_load(&s->st, state_dir, 1);
    if (st != PICL_OK) {
        free(s);
        picl__nss_release();
        return st;
    }
    *out = &s->base;
    return PICL_OK;
}

void picl_free(void *p)
{
    free(p);
}

char *picl_alloc_string(const char *s)
{
    return s ? strdup(s) : NULL;
}

#define CALL(svc, m, ...) ((svc) ? (svc)->vtbl->m((svc), __VA_ARGS__) : PICL_ERROR_INVALID_ARGUMENT)
#define CALL0(svc, m) ((svc) ? (svc)->vtbl->m((svc)) : PICL_ERROR_INVALID_ARGUMENT)

uint32_t picl_service_release(picl_service *s) { return s ? s->vtbl->Release(s) : 0; }
const char *picl_service_last_error(picl_service *s) { return s ? s->vtbl->GetLastError(s) : "no service"; }
picl_status picl_service_set_keyserver_url(picl_service *s, const char *u) { return CALL(s, SetKeyserverURL, u); }
picl_status picl_service_get_keyserver_url(picl_service *s, char **u) { return CALL(s, GetKeyserverURL, u); }
picl_status picl_service_set_storage_url(picl_service *s, const char *u) { return CALL(s, SetStorageURL, u); }
picl_status picl_service_set_persist_keys(picl_service *s, int p) { return CALL(s, SetPersistKeys, p); }
picl_status picl_service_set_stretching_floor(picl_service *s, uint32_t r1, uint64_t n, uint32_t r, uint32_t p,
                                              uint32_t r2)
{
    return CALL(s, SetStretchingFloor, r1, n, r, p, r2);
}
picl_status picl_service_create_account(picl_service *s, const char *e, const char *p) { return CALL(s, CreateAccount, e, p); }
picl_status picl_service_verify_email(picl_service *s, const char *c) { return CALL(s, VerifyEmail, c); }
picl_status picl_service_sign_in(picl_service *s, const char *e, const char *p) { return CALL(s, SignIn, e, p); }
picl_status picl_service_sign_out(picl_service *s) { return CALL0(s, SignOut); }
picl_status picl_service_change_password(picl_service *s, const char *o, const char *n) { return CALL(s, ChangePassword, o, n); }
picl_status picl_service_forgot_password(picl_service *s, const char *e) { return CALL(s, ForgotPassword, e); }
picl_status picl_service_complete_password_reset(picl_service *s, const char *c, const char *n)
{
    return CALL(s, CompletePasswordReset, c, n);
}
picl_status picl_service_destroy_account(picl_service *s, const char *p) { return CALL(s, DestroyAccount, p); }
picl_status picl_service_get_signed_in_email(picl_service *s, char **e) { return CALL(s, GetSignedInEmail, e); }
picl_status picl_service_get_verified(picl_service *s, int *v) { return CALL(s, GetVerified, v); }
picl_status picl_service_get_status_json(picl_service *s, char **j) { return CALL(s, GetStatusJSON, j); }
picl_status picl_service_get_collection_class(picl_service *s, const char *c, char **k) { return CALL(s, GetCollectionClass, c, k); }
picl_status picl_service_set_collection_class(picl_service *s, const char *c, const char *k) { return CALL(s, SetCollectionClass, c, k); }
picl_status picl_service_get_collections_json(picl_service *s, char **j) { return CALL(s, GetCollectionsJSON, j); }
picl_status picl_service_use_profile(picl_service *s, const char *d) { return CALL(s, UseProfile, d); }
picl_status picl_service_use_store_dir(picl_service *s, const char *d) { return CALL(s, UseStoreDir, d); }
picl_status picl_service_set_primary_password(picl_service *s, const char *p) { return CALL(s, SetPrimaryPassword, p); }
picl_status picl_service_set_store(picl_service *s, const char *c, const picl_store_callbacks *cb, void *ctx)
{
    return CALL(s, SetStore, c, cb, ctx);
}
picl_status picl_service_wipe_server(picl_service *s, const char *c) { return CALL(s, WipeServer, c); }
picl_status picl_service_reset_local_state(picl_service *s) { return CALL0(s, ResetLocalState); }
picl_status picl_service_add_observer(picl_service *s, picl_observer_fn f, void *c) { return CALL(s, AddObserver, f, c); }
picl_status picl_service_remove_observer(picl_service *s, picl_observer_fn f, void *c) { return CALL(s, RemoveObserver, f, c); }

picl_status picl_service_sync(picl_service *s, const char *csv, char **summary)
{
    if (!s)
        return PICL_ERROR_INVALID_ARGUMENT;
    const char *list[64];
    char buf[2048];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s", csv ? csv : "");
    if (strlen(csv ? csv : "") >= sizeof buf)
        return PICL_ERROR_TOO_LARGE;
    char *p = buf;
    while (*p && n < 64) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        if (*p)
            list[n++] = p;
        if (!comma)
            break;
        p = comma + 1;
    }
    return s->vtbl->Sync(s, list, n, summary);
}
