/* SPDX-License-Identifier: MPL-2.0 */
/* service.c -- the object behind picl.h and nsIPiCLService: its life cycle,
 * configuration, classes, stores and sync (the account methods are in
 * service_account.c, the flat FFI forms in service_ffi.c). */
#include "picl.h"
#include "service_int.h"
#include "client/account.h"
#include "client/engine.h"
#include "client/keyserver_client.h"
#include "client/records.h"
#include "client/state.h"
#include "client/storage_client.h"
#include "crypto/nss.h"
#include "crypto/util.h"
#include "stores/devices.h"
#include "stores/forms.h"
#include "stores/logins.h"
#include "stores/places.h"
#include "stores/store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- nsISupports ---------------------------------------------------------- */

static int iid_eq(const picl_iid *a, const picl_iid *b)
{
    return a->m0 == b->m0 && a->m1 == b->m1 && a->m2 == b->m2 && !memcmp(a->m3, b->m3, 8);
}

static uint32_t svc_addref(picl_service *self) { return ++SVC(self)->refs; }

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
    return picl__svc_done(SVC(self), PICL_ERROR_NOT_FOUND, "no such interface");
}

/* ---- configuration ---------------------------------------------------------- */

static picl_status svc_set_keyserver(picl_service *self, const char *url)
{
    service *s = SVC(self);
    if (!url || (*url && strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "the keyserver URL must start with http:// or https://");
    /* the base URL, as picl server prints it; ".../v1" and a trailing / too */
    char base[1024];
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    if (n >= 3 && !strncmp(url + n - 3, "/v1", 3))
        n -= 3;
    while (n && url[n - 1] == '/')
        n--;
    if (n >= sizeof base)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "the keyserver URL is too long");
    memcpy(base, url, n);
    base[n] = 0;
    url = base;
    if (strcmp(url, s->st->keyserver) && *s->st->uid)
        picl__state_sign_out(s->st); /* another server: another account */
    picl__state_set_str(&s->st->keyserver, url);
    picl_status rc = picl__state_save(s->st);
    return picl__svc_done(s, rc, rc ? "cannot save the local state" : NULL);
}

static picl_status svc_get_keyserver(picl_service *self, char **url)
{
    *url = picl__svc_dup_out(SVC(self)->st->keyserver);
    return *url ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status svc_set_storage(picl_service *self, const char *url)
{
    service *s = SVC(self);
    picl__state_set_str(&s->st->storage_override, url);
    picl__json_zdecref(s->st->storage_token);
    s->st->storage_token = NULL;
    picl_status rc = picl__state_save(s->st);
    return picl__svc_done(s, rc, rc ? "cannot save the local state" : NULL);
}

static picl_status svc_set_persist(picl_service *self, int persist)
{
    service *s = SVC(self);
    s->st->persist_keys = persist != 0;
    picl_status rc = picl__state_save(s->st);
    return picl__svc_done(s, rc, rc ? "cannot save the local state" : NULL);
}

static picl_status svc_set_floor(picl_service *self, uint32_t r1, uint64_t n, uint32_t r, uint32_t p,
                                 uint32_t r2)
{
    service *s = SVC(self);
    if (!r1 || !r2 || n < 2 || (n & (n - 1)) || !r || !p)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid stretching floor");
    s->floor = (picl_stretch_params){r1, n, r, p, r2};
    s->floor_set = 1;
    return picl__svc_done(s, PICL_OK, NULL);
}

/* ---- classes ------------------------------------------------------------------ */

static picl_status svc_get_class(picl_service *self, const char *coll, char **cls)
{
    service *s = SVC(self);
    *cls = NULL;
    if (!picl__collection_name_ok(coll))
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid collection name");
    /* the server's map (another device may have moved it), verified; when
     * the server cannot be asked, the last map this device accepted */
    picl_class_entry ce = {'B', 1};
    svc_conn c;
    picl_status st = picl__svc_conn_open(s, &c);
    if (st == PICL_OK) {
        picl_engine e;
        picl__svc_engine_setup(s, &c, &e);
        st = picl__engine_get_class(&e, coll, &ce);
        if (st != PICL_OK)
            picl__svc_done(s, st, "%s", e.error);
        else
            picl__state_save(s->st);
        picl__engine_done(&e);
        picl__svc_conn_close(&c);
    }
    if (st == PICL_ERROR_NETWORK || st == PICL_ERROR_BACKOFF || st == PICL_ERROR_STATE) {
        picl_classmap m;
        if (*s->st->classmap_payload &&
            picl__classmap_parse_trusted(&m, s->st->classmap_payload) == PICL_OK) {
            const picl_class_entry *x = picl__classmap_get(&m, coll);
            ce.cls = x ? x->cls : 'B';
            st = PICL_OK;
        }
    }
    if (st != PICL_OK)
        return st;
    *cls = strdup(ce.cls == 'A' ? "A" : "B");
    return *cls ? picl__svc_done(s, PICL_OK, NULL) : PICL_ERROR_NO_MEMORY;
}

static picl_status svc_set_class(picl_service *self, const char *coll, const char *cls)
{
    service *s = SVC(self);
    if (!picl__collection_name_ok(coll) || !cls || (strcmp(cls, "A") && strcmp(cls, "B")))
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "usage: a collection name and class \"A\" or \"B\"");
    svc_conn c;
    picl_status st = picl__svc_conn_open(s, &c);
    if (st != PICL_OK)
        return st;
    picl_engine e;
    picl__svc_engine_setup(s, &c, &e);
    st = picl__engine_set_class(&e, coll, cls[0]);
    if (st != PICL_OK)
        picl__svc_done(s, st, "%s", e.error);
    picl__engine_done(&e);
    picl__svc_conn_close(&c);
    return st == PICL_OK ? picl__svc_done(s, st, NULL) : st;
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
    return *out ? picl__svc_done(s, PICL_OK, NULL) : PICL_ERROR_NO_MEMORY;
}

/* ---- stores and sync ------------------------------------------------------------ */

static picl_status svc_use_profile(picl_service *self, const char *dir)
{
    service *s = SVC(self);
    free(s->profile_dir);
    s->profile_dir = dir && *dir ? strdup(dir) : NULL;
    return picl__svc_done(s, PICL_OK, NULL);
}

static picl_status svc_set_primary(picl_service *self, const char *pw)
{
    service *s = SVC(self);
    if (s->primary)
        picl__zfree(s->primary, strlen(s->primary));
    s->primary = pw ? strdup(pw) : NULL;
    return picl__svc_done(s, pw && !s->primary ? PICL_ERROR_NO_MEMORY : PICL_OK, NULL);
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
    return picl__svc_done(s, PICL_OK, NULL);
}

static picl_status svc_set_store(picl_service *self, const char *coll, const picl_store_callbacks *cb,
                                 void *ctx)
{
    service *s = SVC(self);
    if (!picl__collection_name_ok(coll))
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid collection name");
    size_t i;
    for (i = 0; i < s->ncustom && strcmp(s->custom[i].collection, coll); i++)
        ;
    if (!cb) { /* removal */
        if (i < s->ncustom)
            s->custom[i] = s->custom[--s->ncustom];
        return picl__svc_done(s, PICL_OK, NULL);
    }
    if (!cb->changes || !cb->all || !cb->apply || !cb->mark_synced)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT,
                              "a store needs changes, all, apply and mark_synced");
    if (i == s->ncustom) {
        if (s->ncustom == MAX_CUSTOM)
            return picl__svc_done(s, PICL_ERROR_TOO_LARGE, "too many stores");
        s->ncustom++;
    }
    snprintf(s->custom[i].collection, sizeof s->custom[i].collection, "%s", coll);
    s->custom[i].cb = *cb;
    s->custom[i].ctx = ctx;
    return picl__svc_done(s, PICL_OK, NULL);
}

static picl_status open_store(service *s, const char *coll, picl_store **out)
{
    char err[256] = "";
    *out = NULL;
    for (size_t i = 0; i < s->ncustom; i++)
        if (!strcmp(s->custom[i].collection, coll))
            return picl__cbstore_open(out, coll, &s->custom[i].cb, s->custom[i].ctx);
    if (!strcmp(coll, "clients")) { /* this device's record: the same whatever holds the data */
        picl_status st = picl__clients_open(out, s->st->dir, err, sizeof err);
        return st == PICL_OK ? st : picl__svc_done(s, st, "clients: %s", *err ? err : picl_strerror(st));
    }
    if (s->profile_dir) {
        picl_status st;
        if (!strcmp(coll, "tabs"))
            st = picl__tabs_open(out, s->profile_dir, s->st->dir, err, sizeof err);
        else if (!strcmp(coll, "forms"))
            st = picl__forms_open(out, s->profile_dir, s->st->dir, err, sizeof err);
        else if (!strcmp(coll, "prefs"))
            st = picl__prefs_open(out, s->profile_dir, s->st->dir, err, sizeof err);
        else if (!strcmp(coll, "bookmarks") || !strcmp(coll, "history"))
            st = picl__places_open(out, s->profile_dir, coll, err, sizeof err);
        else if (!strcmp(coll, "passwords"))
            st = picl__logins_open(out, s->profile_dir, s->st->dir, ask_primary, s, err, sizeof err);
        else
            return picl__svc_done(s, PICL_ERROR_UNSUPPORTED, "a Firefox profile has no %s store", coll);
        return st == PICL_OK ? st : picl__svc_done(s, st, "%s: %s", coll, *err ? err : picl_strerror(st));
    }
    if (s->store_dir) {
        picl_status st = picl__filestore_open(out, s->store_dir, coll);
        return st == PICL_OK ? st
                             : picl__svc_done(s, st, "%s/%s.json: %s", s->store_dir, coll,
                                              st == PICL_ERROR_ENCODING ? "not a JSON array of records"
                                                                        : picl_strerror(st));
    }
    return picl__svc_done(s, PICL_ERROR_STATE, "no store for %s: use a profile or a store directory", coll);
}

/* Opens the store of each of the count collections of list into stores
 * (passwords first: logins.json and key4.db are checked before places.sqlite
 * is opened at all, so a refused profile is left exactly as it was).  With
 * the default list (named == 0) a forms store whose file the profile does
 * not have yet is left out and told in skipped ({collection, reason});
 * *count becomes the number opened, stores[0..*count) in the list's order. */
static picl_status open_stores(service *s, const char *const *list, size_t *count, size_t named,
                               picl_store **stores, json_t *skipped)
{
    picl_status st = PICL_OK;
    for (int pass = 0; pass < 2 && st == PICL_OK; pass++)
        for (size_t i = 0; i < *count && st == PICL_OK; i++)
            if ((pass == 0) == !strcmp(list[i], "passwords")) {
                st = open_store(s, list[i], &stores[i]);
                if (st == PICL_ERROR_NOT_FOUND && !named && !strcmp(list[i], "forms")) {
                    json_array_append_new(skipped,
                                          json_pack("{s:s, s:s}", "collection", list[i], "reason", s->error));
                    st = PICL_OK;
                }
            }
    size_t used = 0;
    for (size_t i = 0; i < *count; i++)
        if (stores[i])
            stores[used++] = stores[i];
    *count = used;
    return st;
}

/* Commands handled this run: this device's clients record goes up again
 * without them (conditional on what was downloaded); the summary's clients
 * entry adds up both runs. */
static picl_status sync_clients_again(picl_engine *e, picl_store **stores, size_t count, json_t *sum)
{
    picl_status st = PICL_OK;
    for (size_t i = 0; st == PICL_OK && i < count; i++) {
        if (!picl__clients_pending(stores[i]))
            continue;
        json_t *pass1 = json_deep_copy(json_object_get(sum, "clients"));
        st = picl__engine_sync(e, &stores[i], 1, sum);
        json_t *again = json_object_get(sum, "clients");
        if (pass1 && json_is_object(again)) {
            json_object_set_new(pass1, "uploaded",
                                json_integer(json_integer_value(json_object_get(pass1, "uploaded")) +
                                             json_integer_value(json_object_get(again, "uploaded"))));
            json_object_set(pass1, "status", json_object_get(again, "status"));
            json_object_set(sum, "clients", pass1);
        }
        json_decref(pass1);
    }
    return st;
}

/* One sync of the stores over a fresh connection.  *ran: the connection
 * opened; *moved: the storage client saw the account move to another node. */
static picl_status sync_once(service *s, picl_store **stores, size_t count, json_t *sum, json_t *failed,
                             int *ran, int *moved)
{
    svc_conn c;
    picl_status st = picl__svc_conn_open(s, &c);
    *moved = 0;
    *ran = st == PICL_OK;
    if (*ran) {
        picl_engine e;
        picl__svc_engine_setup(s, &c, &e);
        st = picl__engine_sync(&e, stores, count, sum);
        if (st == PICL_OK)
            st = sync_clients_again(&e, stores, count, sum);
        if (e.failures)
            json_array_extend(failed, e.failures);
        *moved = st != PICL_OK && picl__stc_node_changed(c.stc);
        const picl_stc_result *lr = picl__stc_last(c.stc);
        if (st == PICL_ERROR_BACKOFF && lr->backoff_s > 0)
            picl__svc_done(s, st, "the storage server asks to wait %lld s before the next sync%s",
                           (long long)lr->backoff_s,
                           lr->backoff_capped ? " (it asked for more than a day: capped)" : "");
        else if (st != PICL_OK)
            picl__svc_done(s, st, "%s", *e.error ? e.error : picl_strerror(st));
        picl__engine_done(&e);
    }
    picl__svc_conn_close(&c);
    return st;
}

/* The new node may hold nothing (or a copy): a full merge of every
 * collection, as after a server wipe; nothing local is deleted. */
static void restart_after_move(service *s, json_t *sum, json_t *failed)
{
    const char *k;
    json_t *v;
    json_object_foreach (s->st->collections, k, v) {
        json_object_set_new(v, "lastSync", json_string("0"));
        json_object_set_new(v, "reset", json_true());
    }
    picl__state_save(s->st);
    json_object_clear(sum);
    json_array_clear(failed);
    picl__svc_fanout(s, "status", "", 0, -1, "the account moved to another storage node: syncing again");
}

/* What the stores have to say beyond the counts: saved logins this profile
 * cannot decrypt (into sum, kept as they are: said, not hidden); tabs
 * received and commands refused (clients) and preferences refused (not on
 * the allow-list) as a new object, or NULL. */
static json_t *store_reports(picl_store **stores, size_t count, json_t *sum)
{
    for (size_t i = 0; i < count; i++) {
        size_t unreadable = picl__logins_unreadable(stores[i]);
        json_t *cs = unreadable ? json_object_get(sum, stores[i]->collection) : NULL;
        if (json_is_object(cs))
            json_object_set_new(cs, "unreadable", json_integer((json_int_t)unreadable));
    }
    json_t *report = NULL;
    for (size_t i = 0; i < count && !report; i++)
        report = picl__clients_report(stores[i]);
    for (size_t i = 0; i < count; i++) {
        json_t *refused = picl__prefs_refused(stores[i]);
        if (refused && !report)
            report = json_object();
        if (refused)
            json_object_set_new(report, "refused", refused);
    }
    return report;
}

/* The summary of a sync (steals sum, failed, skipped and report); st
 * becomes INTEGRITY when records were refused by an integrity check. */
static picl_status finish_sync(service *s, picl_status st, json_t *sum, json_t *failed, json_t *skipped,
                               json_t *report, char **summary)
{
    if (st == PICL_OK && json_array_size(failed)) {
        json_t *f0 = json_array_get(failed, 0);
        st = picl__svc_done(s, PICL_ERROR_INTEGRITY,
                            "%zu record(s) failed their integrity check and were not applied (%s/%s: %s%s)",
                            json_array_size(failed), json_string_value(json_object_get(f0, "collection")),
                            json_string_value(json_object_get(f0, "id")),
                            json_string_value(json_object_get(f0, "reason")),
                            json_array_size(failed) > 1 ? ", ..." : "");
    }
    json_t *top = json_pack("{s:o, s:o, s:s, s:s}", "collections", sum, "failed", failed, "status",
                            st == PICL_OK ? "ok" : "error", "message", st == PICL_OK ? "" : s->error);
    if (top && report)
        json_object_update(top, report);
    if (top && json_array_size(skipped))
        json_object_set(top, "skipped", skipped);
    json_decref(skipped);
    json_decref(report);
    if (summary && top)
        *summary = json_dumps(top, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(top);
    picl__svc_fanout(s, "status", "", 0, -1, st == PICL_OK ? "sync finished" : s->error);
    return st == PICL_OK ? picl__svc_done(s, st, NULL) : st;
}

static picl_status do_sync(service *s, const char *const *colls, size_t n, char **summary)
{
    if (summary)
        *summary = NULL;
    const char *const *list = n ? colls : s->profile_dir ? PROFILE_DEFAULT_COLLECTIONS : DEFAULT_COLLECTIONS;
    size_t count = n ? n
                   : s->profile_dir
                       ? sizeof PROFILE_DEFAULT_COLLECTIONS / sizeof PROFILE_DEFAULT_COLLECTIONS[0]
                       : sizeof DEFAULT_COLLECTIONS / sizeof DEFAULT_COLLECTIONS[0];
    picl_store **stores = calloc(count, sizeof *stores);
    if (!stores)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = PICL_OK;
    for (size_t i = 0; i < count && st == PICL_OK; i++)
        if (!picl__collection_name_ok(list[i]))
            st = picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid collection name \"%s\"", list[i]);
    json_t *skipped = json_array(); /* default collections this profile has nothing for yet */
    if (st == PICL_OK)
        st = open_stores(s, list, &count, n, stores, skipped);
    json_t *sum = json_object();
    json_t *failed = json_array(); /* records refused by an integrity check (client.md 7) */
    /* Node reassignment (storage.md 6, client.md 7): when a 401's new token
     * names another node the storage client aborts; the sync starts once
     * more, from the top, against the new node.  A second 401 right after
     * backs off with an error instead of looping. */
    picl_status first = st;
    for (int attempt = 0; first == PICL_OK && attempt < 2; attempt++) {
        int ran, moved;
        st = sync_once(s, stores, count, sum, failed, &ran, &moved);
        if (attempt == 1 && ran && (moved || st == PICL_ERROR_TOKEN)) {
            st = picl__svc_done(s, PICL_ERROR_BACKOFF,
                                "the storage server refused the new token right after "
                                "moving this account to another node: try again later");
            break;
        }
        if (!moved)
            break;
        restart_after_move(s, sum, failed);
    }
    json_t *report = store_reports(stores, count, sum);
    for (size_t i = 0; i < count; i++)
        picl__store_close(stores[i]);
    free(stores);
    return finish_sync(s, st, sum, failed, skipped, report, summary);
}

static picl_status svc_sync(picl_service *self, const char *const *colls, size_t n, char **summary)
{
    return do_sync(SVC(self), colls, n, summary);
}

static picl_status svc_wipe(picl_service *self, const char *coll)
{
    service *s = SVC(self);
    svc_conn c;
    picl_status st = picl__svc_conn_open(s, &c);
    if (st != PICL_OK)
        return st;
    picl_engine e;
    picl__svc_engine_setup(s, &c, &e);
    st = picl__engine_wipe_server(&e, coll);
    if (st != PICL_OK)
        picl__svc_done(s, st, "%s", e.error);
    picl__engine_done(&e);
    picl__svc_conn_close(&c);
    return st == PICL_OK ? picl__svc_done(s, st, NULL) : st;
}

static picl_status svc_reset_local(picl_service *self)
{
    service *s = SVC(self);
    const char *k;
    json_t *v;
    json_object_foreach (s->st->collections, k, v) {
        json_object_set_new(v, "lastSync", json_string("0"));
        json_object_set_new(v, "reset", json_true());
    }
    picl_status st = picl__state_save(s->st);
    return picl__svc_done(s, st, st ? "cannot save the local state" : NULL);
}

static picl_status svc_add_obs(picl_service *self, picl_observer_fn fn, void *ctx)
{
    service *s = SVC(self);
    if (!fn)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "no observer");
    if (s->nobs == MAX_OBSERVERS)
        return picl__svc_done(s, PICL_ERROR_TOO_LARGE, "too many observers");
    s->obs[s->nobs++] = (observer){fn, ctx};
    return picl__svc_done(s, PICL_OK, NULL);
}

static picl_status svc_remove_obs(picl_service *self, picl_observer_fn fn, void *ctx)
{
    service *s = SVC(self);
    for (size_t i = 0; i < s->nobs; i++)
        if (s->obs[i].fn == fn && s->obs[i].ctx == ctx) {
            memmove(&s->obs[i], &s->obs[i + 1], (s->nobs - i - 1) * sizeof s->obs[0]);
            s->nobs--;
            return picl__svc_done(s, PICL_OK, NULL);
        }
    return picl__svc_done(s, PICL_ERROR_NOT_FOUND, "no such observer");
}

static const char *svc_last_error(picl_service *self) { return SVC(self)->error; }

static const picl_service_vtbl vtbl = {
    .QueryInterface = svc_qi,
    .AddRef = svc_addref,
    .Release = svc_release,
    .SetKeyserverURL = svc_set_keyserver,
    .GetKeyserverURL = svc_get_keyserver,
    .SetStorageURL = svc_set_storage,
    .SetPersistKeys = svc_set_persist,
    .SetStretchingFloor = svc_set_floor,
    .CreateAccount = picl__svc_create,
    .VerifyEmail = picl__svc_verify,
    .SignIn = picl__svc_sign_in,
    .SignOut = picl__svc_sign_out,
    .ChangePassword = picl__svc_change_password,
    .ForgotPassword = picl__svc_forgot,
    .CompletePasswordReset = picl__svc_reset,
    .DestroyAccount = picl__svc_destroy,
    .GetSignedInEmail = picl__svc_get_email,
    .GetVerified = picl__svc_get_verified,
    .GetUid = picl__svc_get_uid,
    .GetStatusJSON = picl__svc_status,
    .GetCollectionClass = svc_get_class,
    .SetCollectionClass = svc_set_class,
    .GetCollectionsJSON = svc_collections,
    .UseProfile = svc_use_profile,
    .UseStoreDir = svc_use_store_dir,
    .SetStore = svc_set_store,
    .Sync = svc_sync,
    .WipeServer = svc_wipe,
    .ResetLocalState = svc_reset_local,
    .AddObserver = svc_add_obs,
    .RemoveObserver = svc_remove_obs,
    .GetLastError = svc_last_error,
    .SetPrimaryPassword = svc_set_primary,
    .SendTab = picl__svc_send_tab,
    .GetRemoteTabsJSON = picl__svc_remote_tabs,
    .GetReceivedTabsJSON = picl__svc_received_tabs,
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
