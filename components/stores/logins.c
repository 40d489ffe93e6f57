/* SPDX-License-Identifier: MPL-2.0 */
/* logins.c -- the passwords store: logins.json entries encrypted with the profile's key4.db (see logins.h). */
#include "stores/logins_int.h"

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <nss.h>
#include <pk11pub.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/nss.h"
#include "crypto/util.h"
#include "stores/fileutil.h"
#include "stores/key4.h"
#include "stores/profile.h"
#include "crypto/alloc.h"

#define LOGINS_MAX_FILE (64u << 20) /* logins.json over 64 MiB is not Firefox's */
#define LOGINS_MAX_FIELD 65536      /* any string of an incoming record */
#define LOGINS_MAX_PASSWORD 1024    /* primary password buffer */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- logins.json entries <-> records ------------------------------------- */

static const char *const record_fields[] = {
    "hostname",      "formSubmitURL", "httpRealm",           "username",     "password", "usernameField",
    "passwordField", "timeCreated",   "timePasswordChanged", "timeLastUsed", "timesUsed"};

static int is_record_field(const char *k)
{
    if (strcmp(k, "id") == 0 || strcmp(k, "deleted") == 0)
        return 1;
    for (size_t i = 0; i < sizeof record_fields / sizeof record_fields[0]; i++)
        if (strcmp(k, record_fields[i]) == 0)
            return 1;
    return 0;
}

/* Decrypts a blob into a JSON string (NULL when it cannot be read). */
static json_t *decrypted_string(logins *l, const char *b64)
{
    char *s = NULL;
    size_t n = 0;
    if ((!l->slot && !l->direct) || picl__logins_decrypt(l, b64, &s, &n) != PICL_OK)
        return NULL;
    json_t *j = json_stringn(s, n); /* NULL if not UTF-8 */
    picl__zfree(s, n + 1);
    return j;
}

static json_t *copy_or_null(const json_t *e, const char *k)
{
    json_t *v = json_object_get(e, k);
    return v ? json_deep_copy(v) : json_null();
}

static json_int_t int_or(const json_t *r, const char *k, json_int_t dflt)
{
    json_t *v = json_object_get(r, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* Firefox keeps a login that was ever synced, once deleted, as a tombstone
 * entry {id, guid, timePasswordChanged, timeLastBreachAlertDismissed,
 * syncCounter, everSynced, deleted: true} without encrypted fields. */
static int is_tombstone(const json_t *e) { return json_is_true(json_object_get(e, "deleted")); }

/* What Firefox's removeLoginAsync(login, fromSync) makes of an entry: every
 * field but the id, the GUID and the sync and breach fields goes. */
static void make_tombstone(json_t *e)
{
    static const char *const gone[] = {"hostname",          "httpRealm",     "formSubmitURL",
                                       "usernameField",     "passwordField", "encryptedUsername",
                                       "encryptedPassword", "encType",       "timeCreated",
                                       "timeLastUsed",      "timesUsed",     "encryptedUnknownFields"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        json_object_del(e, gone[i]);
    json_object_set_new(e, "deleted", json_true());
}

/* Firefox's resetSyncCounter(guid, counter) after an upload: the changes
 * counted when the record was read are done; returns 1 if e changed. */
static int reset_sync_counter(json_t *e, json_int_t counter)
{
    json_int_t now = int_or(e, "syncCounter", 0);
    if (now <= 0)
        return 0;
    json_object_set_new(e, "syncCounter", json_integer(now > counter ? now - counter : 0));
    json_object_set_new(e, "everSynced", json_true());
    return 1;
}

/* The record of a logins.json entry, or NULL when it cannot be decrypted. */
static json_t *entry_record(logins *l, const json_t *e)
{
    const char *guid = json_string_value(json_object_get(e, "guid"));
    if (!guid || is_tombstone(e))
        return NULL;
    json_t *user = decrypted_string(l, json_string_value(json_object_get(e, "encryptedUsername")));
    json_t *pass = decrypted_string(l, json_string_value(json_object_get(e, "encryptedPassword")));
    if (!user || !pass) {
        json_decref(user);
        json_decref(pass);
        return NULL;
    }
    json_t *r = json_object();
    json_object_set_new(r, "id", json_string(guid));
    json_object_set_new(r, "hostname", copy_or_null(e, "hostname"));
    json_object_set_new(r, "formSubmitURL", copy_or_null(e, "formSubmitURL"));
    json_object_set_new(r, "httpRealm", copy_or_null(e, "httpRealm"));
    json_object_set_new(r, "username", user);
    json_object_set_new(r, "password", pass);
    json_object_set_new(r, "usernameField", copy_or_null(e, "usernameField"));
    json_object_set_new(r, "passwordField", copy_or_null(e, "passwordField"));
    json_object_set_new(r, "timeCreated", copy_or_null(e, "timeCreated"));
    json_object_set_new(r, "timePasswordChanged", copy_or_null(e, "timePasswordChanged"));
    json_object_set_new(r, "timeLastUsed", copy_or_null(e, "timeLastUsed"));
    json_object_set_new(r, "timesUsed", copy_or_null(e, "timesUsed"));
    /* fields of a record we did not know, kept encrypted beside */
    json_t *uf = decrypted_string(l, json_string_value(json_object_get(e, "encryptedUnknownFields")));
    if (uf) {
        json_t *o = json_loads(json_string_value(uf), 0, NULL);
        const char *k;
        json_t *v;
        if (json_is_object(o))
            json_object_foreach (o, k, v)
                if (!is_record_field(k))
                    json_object_set(r, k, v);
        json_decref(o);
        json_decref(uf);
    }
    return r;
}

/* 1 when the username and password of a (live) entry can be decrypted;
 * the cleartexts are wiped at once. */
static int entry_readable(logins *l, const json_t *e)
{
    static const char *const keys[] = {"encryptedUsername", "encryptedPassword"};
    if (!l->slot && !l->direct)
        return 0;
    for (size_t i = 0; i < 2; i++) {
        char *s = NULL;
        size_t n = 0;
        if (picl__logins_decrypt(l, json_string_value(json_object_get(e, keys[i])), &s, &n) != PICL_OK)
            return 0;
        picl__zfree(s, n + 1);
    }
    return 1;
}

/* Digest of what sync cares about in an entry: ciphertexts, not cleartexts. */
static picl_status entry_digest(const json_t *e, char out[33])
{
    static const char *const keys[] = {"guid",
                                       "hostname",
                                       "formSubmitURL",
                                       "httpRealm",
                                       "usernameField",
                                       "passwordField",
                                       "encryptedUsername",
                                       "encryptedPassword",
                                       "encryptedUnknownFields",
                                       "timePasswordChanged"};
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(e, keys[i]);
        if (v)
            json_object_set(o, keys[i], v);
    }
    char *s = picl__json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    uint8_t h[32];
    picl_status rc = picl__sha256(h, s, strlen(s));
    free(s);
    if (rc == PICL_OK)
        picl__hex_encode(out, h, 16);
    return rc;
}

static json_t *entries(logins *l) { return json_object_get(l->doc, "logins"); }

static json_t *entry_by_guid(logins *l, const char *guid, size_t *index)
{
    size_t i;
    json_t *e;
    json_array_foreach (entries(l), i, e) {
        const char *g = json_string_value(json_object_get(e, "guid"));
        if (g && strcmp(g, guid) == 0) {
            if (index)
                *index = i;
            return e;
        }
    }
    return NULL;
}

/* Opens key4.db read-only for a read when the profile has one. */
static picl_status read_begin(logins *l)
{
    struct stat st;
    if (l->direct || stat(l->key_path, &st) != 0)
        return PICL_OK; /* keys at hand, or no key4.db: nothing can be decrypted */
    picl_status rc = picl__logins_slot_open(l, 0);
    if (rc != PICL_OK)
        picl__logins_slot_close(l);
    return rc;
}

/* ---- the state file ------------------------------------------------------ */

static picl_status save_state(logins *l)
{
    json_t *o = json_pack("{s:i, s:s, s:O}", "version", 1, "profile", picl__profile_dir(l->profile), "synced",
                          l->synced);
    char *s = o ? picl__json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!s)
        return picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory");
    picl_status rc = picl__write_file_atomic(l->state_path, s, strlen(s), 0600);
    free(s);
    return rc == PICL_OK ? rc : picl__logins_fail(l, rc, "cannot write %s", l->state_path);
}

static picl_status save_doc(logins *l, const json_t *doc)
{
    char *s = picl__json_dumps(doc, JSON_COMPACT);
    if (!s)
        return picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory");
    picl_status rc = picl__write_file_atomic(l->json_path, s, strlen(s), 0600);
    free(s);
    return rc == PICL_OK ? rc : picl__logins_fail(l, rc, "cannot write logins.json");
}

static picl_status load_doc(logins *l, json_t **out);

/* ---- store operations ---------------------------------------------------- */

static picl_status lg_all(picl_store *s, json_t **out)
{
    logins *l = (logins *)s;
    *out = NULL;
    picl_status rc = read_begin(l);
    if (rc != PICL_OK)
        return rc;
    json_t *a = json_array();
    size_t i;
    json_t *e;
    l->unreadable = 0;
    json_array_foreach (entries(l), i, e) {
        if (is_tombstone(e))
            continue;
        json_t *r = entry_record(l, e);
        if (r)
            json_array_append_new(a, r);
        else
            l->unreadable++;
    }
    picl__logins_slot_close(l);
    *out = a;
    return PICL_OK;
}

static picl_status lg_get(picl_store *s, const char *id, json_t **out)
{
    logins *l = (logins *)s;
    *out = NULL;
    json_t *e = id ? entry_by_guid(l, id, NULL) : NULL;
    if (!e || is_tombstone(e))
        return PICL_OK;
    picl_status rc = read_begin(l);
    if (rc == PICL_OK)
        *out = entry_record(l, e);
    picl__logins_slot_close(l);
    return rc;
}

static picl_status lg_changes(picl_store *s, json_t **out)
{
    logins *l = (logins *)s;
    *out = NULL;
    picl_status rc = read_begin(l);
    if (rc != PICL_OK)
        return rc;
    json_t *a = json_array(), *rep = json_object();
    size_t i;
    json_t *e;
    l->unreadable = 0;
    json_array_foreach (entries(l), i, e) {
        const char *guid = json_string_value(json_object_get(e, "guid"));
        json_int_t counter = int_or(e, "syncCounter", 0);
        char d[33];
        if (!guid || json_object_get(rep, guid))
            continue;
        if (is_tombstone(e)) {
            /* deleted in Firefox: news when we had synced it or Firefox
             * counts it as not yet uploaded */
            if (counter > 0 || json_object_get(l->synced, guid)) {
                json_array_append_new(a, json_pack("{s:s, s:b}", "id", guid, "deleted", 1));
                json_object_set_new(rep, guid, json_pack("{s:n, s:I}", "digest", "counter", counter));
            }
            continue;
        }
        if ((rc = entry_digest(e, d)) != PICL_OK)
            continue;
        const char *was = json_string_value(json_object_get(l->synced, guid));
        if (was && strcmp(was, d) == 0)
            continue;
        json_t *r = entry_record(l, e);
        if (!r) {
            l->unreadable++; /* kept as it is: never uploaded, never deleted */
            continue;
        }
        json_array_append_new(a, r);
        json_object_set_new(rep, guid, json_pack("{s:s, s:I}", "digest", d, "counter", counter));
    }
    const char *guid;
    json_t *v;
    json_object_foreach (l->synced, guid, v) {
        if (!entry_by_guid(l, guid, NULL)) { /* removed from the file (a login never marked everSynced) */
            json_array_append_new(a, json_pack("{s:s, s:b}", "id", guid, "deleted", 1));
            json_object_set_new(rep, guid, json_pack("{s:n, s:i}", "digest", "counter", 0));
        }
    }
    picl__logins_slot_close(l);
    if (rc != PICL_OK) {
        json_decref(a);
        json_decref(rep);
        return picl__logins_fail(l, rc, "digest failed");
    }
    json_decref(l->reported);
    l->reported = rep;
    *out = a;
    return PICL_OK;
}

/* What Firefox's sync does after an upload (resetSyncCounter), on
 * logins.json as it is now: each entry still as it was reported (the same
 * digest, or still a tombstone) has the counted changes taken off its
 * syncCounter and everSynced set; a tombstone stays, as Firefox keeps it.
 * resets: guid -> {"digest": reported digest or null, "counter": n}. */
static picl_status reset_counters(logins *l, const json_t *resets)
{
    json_t *fresh = NULL;
    picl_status rc = load_doc(l, &fresh);
    if (rc != PICL_OK)
        return rc;
    int changed = 0;
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(fresh, "logins"), i, e) {
        const char *guid = json_string_value(json_object_get(e, "guid"));
        json_t *rep = guid ? json_object_get(resets, guid) : NULL;
        if (!rep)
            continue;
        const char *was = json_string_value(json_object_get(rep, "digest"));
        char d[33];
        int same =
            was ? !is_tombstone(e) && entry_digest(e, d) == PICL_OK && strcmp(d, was) == 0 : is_tombstone(e);
        if (same)
            changed |= reset_sync_counter(e, int_or(rep, "counter", 0));
    }
    if (changed && (rc = save_doc(l, fresh)) == PICL_OK) {
        json_decref(l->doc);
        l->doc = fresh;
        fresh = NULL;
    }
    json_decref(fresh);
    return rc;
}

static picl_status lg_mark_synced(picl_store *s, const json_t *records)
{
    logins *l = (logins *)s;
    if (!json_is_array(records))
        return picl__logins_fail(l, PICL_ERROR_INVALID_ARGUMENT, "records must be an array");
    size_t i;
    json_t *r;
    int dirty = 0;
    json_t *resets = json_object(); /* guid -> what was reported, for Firefox's counters */
    json_array_foreach (records, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        json_t *rep = id ? json_object_get(l->reported, id) : NULL;
        if (!rep)
            continue;
        const char *was = json_string_value(json_object_get(rep, "digest"));
        json_t *e = entry_by_guid(l, id, NULL);
        if (!was) {
            /* a deletion is on the server (unless apply() brought the login back) */
            if (!e || is_tombstone(e)) {
                json_object_del(l->synced, id);
                dirty = 1;
            }
        } else {
            char d[33];
            /* only if unchanged since it was reported */
            if (e && !is_tombstone(e) && entry_digest(e, d) == PICL_OK && strcmp(d, was) == 0) {
                json_object_set_new(l->synced, id, json_string(d));
                dirty = 1;
            }
        }
        if (int_or(rep, "counter", 0) > 0)
            json_object_set(resets, id, rep);
        json_object_del(l->reported, id);
    }
    picl_status rc = json_object_size(resets) ? reset_counters(l, resets) : PICL_OK;
    json_decref(resets);
    if (rc == PICL_OK && dirty)
        rc = save_state(l);
    return rc;
}

static picl_status lg_reset(picl_store *s)
{
    logins *l = (logins *)s;
    json_object_clear(l->synced);
    json_object_clear(l->reported);
    return save_state(l);
}

/* One incoming passwords record, checked (the one parser of login input). */
typedef struct login_in {
    const char *id;
    int deleted;
    json_t *unknown; /* fields beyond records.md's, or NULL */
} login_in;

static int text_ok(const json_t *v, int nullable, int empty_ok)
{
    if (!v)
        return nullable;
    if (json_is_null(v))
        return nullable;
    if (!json_is_string(v) || json_string_length(v) > LOGINS_MAX_FIELD)
        return 0;
    if (!empty_ok && json_string_length(v) == 0)
        return 0;
    return memchr(json_string_value(v), '\0', json_string_length(v)) == NULL;
}

static int time_ok(const json_t *v)
{
    return !v || json_is_null(v) || (json_is_integer(v) && json_integer_value(v) >= 0);
}

static picl_status parse_login(logins *l, const json_t *r, size_t i, login_in *in)
{
    memset(in, 0, sizeof *in);
    if (!json_is_object(r))
        return picl__logins_fail(l, PICL_ERROR_ENCODING, "passwords record %zu is not an object", i);
    in->id = json_string_value(json_object_get(r, "id"));
    if (!in->id || !*in->id || strlen(in->id) > 128 || strpbrk(in->id, "\"\\\r\n\t"))
        return picl__logins_fail(l, PICL_ERROR_ENCODING, "passwords record %zu: bad id", i);
    json_t *del = json_object_get(r, "deleted");
    if (del && !json_is_boolean(del))
        return picl__logins_fail(l, PICL_ERROR_ENCODING, "passwords record %zu: bad deleted", i);
    if (json_is_true(del)) {
        in->deleted = 1;
        return PICL_OK;
    }
    json_t *form = json_object_get(r, "formSubmitURL"), *realm = json_object_get(r, "httpRealm");
    if (!text_ok(json_object_get(r, "hostname"), 0, 0) || !text_ok(form, 1, 1) || !text_ok(realm, 1, 1) ||
        !text_ok(json_object_get(r, "username"), 0, 1) || !text_ok(json_object_get(r, "password"), 0, 0) ||
        !text_ok(json_object_get(r, "usernameField"), 1, 1) ||
        !text_ok(json_object_get(r, "passwordField"), 1, 1))
        return picl__logins_fail(l, PICL_ERROR_ENCODING, "passwords record %zu: bad field", i);
    /* Firefox: a login is a form login or an HTTP-auth login, never both or neither */
    int has_form = form && json_is_string(form), has_realm = realm && json_is_string(realm);
    if (has_form == has_realm)
        return picl__logins_fail(l, PICL_ERROR_ENCODING,
                                 "passwords record %zu: needs formSubmitURL or httpRealm", i);
    if (!time_ok(json_object_get(r, "timeCreated")) || !time_ok(json_object_get(r, "timePasswordChanged")) ||
        !time_ok(json_object_get(r, "timeLastUsed")) || !time_ok(json_object_get(r, "timesUsed")))
        return picl__logins_fail(l, PICL_ERROR_ENCODING, "passwords record %zu: bad time", i);
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)r, k, v) {
        if (is_record_field(k))
            continue;
        if (!in->unknown)
            in->unknown = json_object();
        json_object_set(in->unknown, k, v);
    }
    return PICL_OK;
}

static json_t *text_or_null(const json_t *r, const char *k)
{
    json_t *v = json_object_get(r, k);
    return json_is_string(v) ? json_copy(v) : json_null();
}

/* Encrypts a JSON string value into obj[key]. */
static picl_status put_encrypted(logins *l, json_t *obj, const char *key, PK11SymKey *k, int aes,
                                 const char *s, size_t n)
{
    char *b64 = NULL;
    picl_status rc = picl__logins_encrypt(l, k, aes, s, n, &b64);
    if (rc == PICL_OK) {
        json_object_set_new(obj, key, json_string(b64));
        free(b64);
    }
    return rc;
}

/* Writes record r into the entry list of doc (new entry or update). */
/* 1 when entry e has every member a login of ours has, with its type: the
 * sets above do not stop on a failed allocation, this check does (a login
 * written without its id or its encrypted password would make logins.json
 * unreadable or lose the password). */
static int entry_whole(const json_t *e, const char *guid)
{
    static const char *const strs[] = {"hostname",          "usernameField",     "passwordField",
                                       "encryptedUsername", "encryptedPassword", "guid"};
    static const char *const ints[] = {"id", "encType", "syncCounter"};
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
        if (!json_is_string(json_object_get(e, strs[k])))
            return 0;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if (!json_is_integer(json_object_get(e, ints[k])))
            return 0;
    return json_object_get(e, "httpRealm") && json_object_get(e, "formSubmitURL") &&
           json_is_boolean(json_object_get(e, "everSynced")) &&
           strcmp(json_string_value(json_object_get(e, "guid")), guid) == 0;
}

static picl_status upsert(logins *l, json_t *doc, const json_t *r, const login_in *in, PK11SymKey *key,
                          int aes)
{
    json_t *list = json_object_get(doc, "logins");
    json_t *e = NULL;
    size_t i;
    json_t *x;
    size_t at = 0;
    json_array_foreach (list, i, x) {
        const char *g = json_string_value(json_object_get(x, "guid"));
        if (g && strcmp(g, in->id) == 0) {
            e = x;
            at = i;
        }
    }
    if (e && is_tombstone(e)) {
        /* a login deleted here comes back: as Firefox's addLogin does, the
         * tombstone makes way for a new entry */
        json_array_remove(list, at);
        e = NULL;
    }
    int64_t now = now_ms();
    if (!e) {
        json_int_t next = int_or(doc, "nextId", 1);
        json_array_foreach (list, i, x)
            if (int_or(x, "id", 0) >= next)
                next = int_or(x, "id", 0) + 1;
        e = json_object();
        if (!e)
            return picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory");
        json_object_set_new(e, "id", json_integer(next));
        if (json_object_set_new(doc, "nextId", json_integer(next + 1)) != 0) {
            json_decref(e);
            return picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory");
        }
        /* Firefox's member order, so a diff of the file stays readable */
        static const char *const order[] = {"hostname",          "httpRealm",     "formSubmitURL",
                                            "usernameField",     "passwordField", "encryptedUsername",
                                            "encryptedPassword", "guid"};
        for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
            json_object_set_new(e, order[k], json_null());
        json_object_set_new(e, "encType", json_integer(1));
        json_object_set_new(e, "timeCreated", json_integer(now));
        json_object_set_new(e, "timeLastUsed", json_integer(now));
        json_object_set_new(e, "timePasswordChanged", json_integer(now));
        json_object_set_new(e, "timesUsed", json_integer(1));
        json_object_set_new(e, "timeLastBreachAlertDismissed", json_integer(0));
        json_object_set_new(e, "syncCounter", json_integer(0));
        json_object_set_new(e, "everSynced", json_true());
        if (json_array_append_new(list, e) != 0) /* (e is freed) */
            return picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory");
    }
    json_object_set_new(e, "hostname", json_copy(json_object_get(r, "hostname")));
    json_object_set_new(e, "httpRealm", text_or_null(r, "httpRealm"));
    json_object_set_new(e, "formSubmitURL", text_or_null(r, "formSubmitURL"));
    json_t *uf = json_object_get(r, "usernameField"), *pf = json_object_get(r, "passwordField");
    json_object_set_new(e, "usernameField", json_string(json_is_string(uf) ? json_string_value(uf) : ""));
    json_object_set_new(e, "passwordField", json_string(json_is_string(pf) ? json_string_value(pf) : ""));
    json_object_set_new(e, "guid", json_string(in->id));
    json_object_set_new(e, "encType", json_integer(1));
    static const char *const times[] = {"timeCreated", "timeLastUsed", "timePasswordChanged", "timesUsed"};
    for (size_t k = 0; k < 4; k++) {
        json_t *v = json_object_get(r, times[k]);
        if (json_is_integer(v))
            json_object_set_new(e, times[k], json_integer(json_integer_value(v)));
    }
    json_object_set_new(e, "syncCounter", json_integer(0));
    json_object_set_new(e, "everSynced", json_true());
    json_t *u = json_object_get(r, "username"), *p = json_object_get(r, "password");
    picl_status rc =
        put_encrypted(l, e, "encryptedUsername", key, aes, json_string_value(u), json_string_length(u));
    if (rc == PICL_OK)
        rc = put_encrypted(l, e, "encryptedPassword", key, aes, json_string_value(p), json_string_length(p));
    if (rc == PICL_OK && in->unknown) {
        char *s = picl__json_dumps(in->unknown, JSON_COMPACT);
        rc = s ? put_encrypted(l, e, "encryptedUnknownFields", key, aes, s, strlen(s)) : PICL_ERROR_NO_MEMORY;
        free(s);
    } else if (rc == PICL_OK) {
        json_object_del(e, "encryptedUnknownFields");
    }
    if (rc == PICL_OK && !entry_whole(e, in->id))
        rc = picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory");
    return rc;
}

/* Applies or wipes (records == NULL) on a copy, writes it, then adopts it. */
static picl_status write_logins(logins *l, const json_t *records)
{
    size_t n = records ? json_array_size(records) : 0;
    login_in *in = calloc(n ? n : 1, sizeof *in);
    json_t *doc = json_deep_copy(l->doc), *synced = json_deep_copy(l->synced);
    PK11SymKey *key = NULL;
    int aes = 1;
    picl_status rc =
        (!in || !doc || !synced) ? picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory") : PICL_OK;
    for (size_t i = 0; rc == PICL_OK && i < n; i++)
        rc = parse_login(l, json_array_get(records, i), i, &in[i]);
    int need_key = 0, need_read = 0;
    for (size_t i = 0; rc == PICL_OK && i < n; i++) {
        json_t *x = in[i].deleted && in[i].id ? entry_by_guid(l, in[i].id, NULL) : NULL;
        need_key |= !in[i].deleted;
        need_read |= x && !is_tombstone(x);
    }
    struct stat kst;
    if (rc == PICL_OK && need_key && (l->direct || (rc = picl__logins_slot_open(l, 1)) == PICL_OK))
        rc = picl__logins_write_key(l, &key, &aes);
    else if (rc == PICL_OK && need_read && !l->direct && stat(l->key_path, &kst) == 0)
        rc = picl__logins_slot_open(l, 0); /* is the login to delete readable? */
    json_t *list = json_object_get(doc, "logins");
    if (rc == PICL_OK && !records) {
        json_array_clear(list);
        json_object_clear(synced);
    }
    l->unreadable = 0;
    for (size_t i = 0; rc == PICL_OK && i < n; i++) {
        if (in[i].deleted) {
            size_t k;
            json_t *x;
            json_array_foreach (list, k, x) {
                const char *g = json_string_value(json_object_get(x, "guid"));
                if (!g || strcmp(g, in[i].id) != 0)
                    continue;
                if (!is_tombstone(x) && !entry_readable(l, x)) {
                    l->unreadable++; /* a login we cannot read is never deleted */
                    break;
                }
                /* as Firefox's sync deletes a login: a tombstone, nothing left to upload */
                make_tombstone(x);
                if (json_object_set_new(x, "syncCounter", json_integer(0)) != 0 ||
                    json_object_set_new(x, "everSynced", json_true()) != 0 || !is_tombstone(x))
                    rc = picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory");
                break;
            }
            json_object_del(synced, in[i].id);
        } else {
            rc = upsert(l, doc, json_array_get(records, i), &in[i], key, aes);
        }
    }
    /* what we wrote is in sync: digests of the new entries */
    for (size_t i = 0; rc == PICL_OK && i < n; i++) {
        if (in[i].deleted)
            continue;
        size_t k;
        json_t *x;
        json_array_foreach (list, k, x) {
            const char *g = json_string_value(json_object_get(x, "guid"));
            char d[33];
            if (g && strcmp(g, in[i].id) == 0 && (rc = entry_digest(x, d)) == PICL_OK &&
                json_object_set_new(synced, g, json_string(d)) != 0)
                rc = picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory");
        }
    }
    if (key)
        PK11_FreeSymKey(key);
    picl__logins_slot_close(l);
    if (rc == PICL_OK)
        rc = save_doc(l, doc);
    if (rc == PICL_OK) {
        json_decref(l->doc);
        l->doc = doc;
        doc = NULL;
        json_decref(l->synced);
        l->synced = synced;
        synced = NULL;
        rc = save_state(l);
    }
    for (size_t i = 0; in && i < n; i++)
        json_decref(in[i].unknown);
    free(in);
    json_decref(doc);
    json_decref(synced);
    return rc;
}

static picl_status lg_apply(picl_store *s, const json_t *records)
{
    logins *l = (logins *)s;
    if (!json_is_array(records))
        return picl__logins_fail(l, PICL_ERROR_INVALID_ARGUMENT, "records must be an array");
    return write_logins(l, records);
}

static picl_status lg_wipe(picl_store *s) { return write_logins((logins *)s, NULL); }

static void lg_close(picl_store *s)
{
    logins *l = (logins *)s;
    if (!l)
        return;
    picl__logins_slot_close(l);
    if (l->k_aes)
        PK11_FreeSymKey(l->k_aes);
    if (l->k_des3)
        PK11_FreeSymKey(l->k_des3);
    if (l->password)
        picl__zfree(l->password, strlen(l->password));
    json_decref(l->doc);
    json_decref(l->synced);
    json_decref(l->reported);
    picl__profile_close(l->profile);
    if (l->nss)
        picl__nss_release();
    free(l);
}

static const picl_store_ops logins_ops = {
    .changes = lg_changes,
    .all = lg_all,
    .get = lg_get,
    .apply = lg_apply,
    .mark_synced = lg_mark_synced,
    .reset = lg_reset,
    .wipe = lg_wipe,
    .close = lg_close,
};

size_t picl__logins_unreadable(const picl_store *s)
{
    return s && s->ops == &logins_ops ? ((const logins *)s)->unreadable : 0;
}

/* ---- open ------------------------------------------------------------------ */

/* Reads logins.json: the whole file must be Firefox's shape. */
static picl_status load_doc(logins *l, json_t **out)
{
    char *text = NULL;
    size_t len = 0;
    json_t *doc = NULL;
    *out = NULL;
    picl_status rc = picl__read_file(l->json_path, LOGINS_MAX_FILE, &text, &len);
    if (rc == PICL_ERROR_NOT_FOUND) {
        *out = json_pack("{s:i, s:[], s:[], s:{}, s:i}", "nextId", 1, "logins",
                         "potentiallyVulnerablePasswords", "dismissedBreachAlertsByLoginGUID", "version", 3);
        return *out ? PICL_OK : picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory");
    }
    if (rc != PICL_OK)
        return picl__logins_fail(l, rc, "cannot read logins.json");
    json_error_t je;
    int oom;
    doc = picl__json_loadb(text, len, JSON_REJECT_DUPLICATES, &je, &oom);
    free(text);
    if (oom) {
        rc = picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory reading logins.json");
        goto done;
    }
    if (!json_is_object(doc)) {
        rc = picl__logins_fail(l, PICL_ERROR_ENCODING, "logins.json is corrupt (line %d: %s)", je.line,
                               je.text);
        goto done;
    }
    json_t *list = json_object_get(doc, "logins");
    json_t *next = json_object_get(doc, "nextId");
    if (!json_is_array(list) || (next && !json_is_integer(next))) {
        rc = picl__logins_fail(l, PICL_ERROR_ENCODING, "logins.json is corrupt (no logins array)");
        goto done;
    }
    size_t i;
    json_t *e;
    json_array_foreach (list, i, e) {
        json_t *g = json_object_get(e, "guid");
        if (!json_is_object(e) || (g && !json_is_string(g)) || !json_is_integer(json_object_get(e, "id"))) {
            rc = picl__logins_fail(l, PICL_ERROR_ENCODING, "logins.json is corrupt (entry %zu)", i);
            goto done;
        }
    }
    *out = doc;
    doc = NULL;
done:
    json_decref(doc);
    return rc;
}

static picl_status load_state(logins *l)
{
    char *text = NULL;
    size_t len = 0;
    picl_status rc = picl__read_file(l->state_path, 16u << 20, &text, &len);
    if (rc == PICL_ERROR_NOT_FOUND) {
        l->synced = json_object();
        return PICL_OK;
    }
    if (rc != PICL_OK)
        return picl__logins_fail(l, rc, "cannot read %s", l->state_path);
    int oom;
    json_t *o = picl__json_loadb(text, len, 0, NULL, &oom);
    free(text);
    if (oom)
        return picl__logins_fail(l, PICL_ERROR_NO_MEMORY, "out of memory reading %s", l->state_path);
    json_t *s = json_object_get(o, "synced");
    if (!json_is_object(s)) {
        json_decref(o);
        return picl__logins_fail(l, PICL_ERROR_ENCODING, "%s is corrupt", l->state_path);
    }
    l->synced = json_incref(s);
    json_decref(o);
    return PICL_OK;
}

picl_status picl__logins_open(picl_store **out, const char *profile_dir, const char *state_dir,
                              picl_password_cb ask, void *ask_arg, char *err, size_t errlen)
{
    *out = NULL;
    if (!state_dir || !*state_dir) {
        if (err && errlen)
            snprintf(err, errlen, "no state directory given");
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    logins *l = calloc(1, sizeof *l);
    if (!l)
        return PICL_ERROR_NO_MEMORY;
    l->base.ops = &logins_ops;
    snprintf(l->base.collection, sizeof l->base.collection, "passwords");
    picl_status rc = picl__profile_open(profile_dir, &l->profile, err, errlen);
    if (rc != PICL_OK)
        goto fail;
    if ((rc = picl__nss_acquire()) != PICL_OK) {
        picl__logins_fail(l, rc, "NSS could not be initialised");
        goto fail_msg;
    }
    l->nss = 1;
    uint8_t h[32];
    char hex[17];
    char real[PATH_MAX];
    const char *canon = realpath(profile_dir, real) ? real : profile_dir;
    if ((rc = picl__sha256(h, canon, strlen(canon))) != PICL_OK)
        goto fail_msg;
    picl__hex_encode(hex, h, 8);
    if (picl__profile_path(l->profile, "logins.json", l->json_path, sizeof l->json_path) != PICL_OK ||
        picl__profile_path(l->profile, "key4.db", l->key_path, sizeof l->key_path) != PICL_OK ||
        snprintf(l->state_path, sizeof l->state_path, "%s/passwords-%s.json", state_dir, hex) >=
            (int)sizeof l->state_path) {
        rc = picl__logins_fail(l, PICL_ERROR_TOO_LARGE, "path too long");
        goto fail_msg;
    }
    if ((rc = load_doc(l, &l->doc)) != PICL_OK || (rc = load_state(l)) != PICL_OK)
        goto fail_msg;
    l->reported = json_object();
    /* a primary password is asked for now, so a wrong one fails before any work */
    struct stat st;
    if (stat(l->key_path, &st) == 0) {
        if ((rc = picl__logins_slot_open(l, 0)) == PICL_ERROR_STATE) {
            if (!ask) {
                rc = picl__logins_fail(l, PICL_ERROR_STATE,
                                       "the profile has a primary password and none was given");
                goto fail_msg;
            }
            char *pw = calloc(1, LOGINS_MAX_PASSWORD);
            if (!pw) {
                rc = PICL_ERROR_NO_MEMORY;
                goto fail_msg;
            }
            rc = ask(ask_arg, pw, LOGINS_MAX_PASSWORD);
            pw[LOGINS_MAX_PASSWORD - 1] = '\0';
            if (rc == PICL_OK) {
                l->password = strdup(pw);
                if (!l->password)
                    rc = PICL_ERROR_NO_MEMORY;
            }
            picl__zfree(pw, LOGINS_MAX_PASSWORD);
            if (rc != PICL_OK) {
                picl__logins_fail(l, rc, "no primary password");
                goto fail_msg;
            }
            if (PK11_CheckUserPassword(l->slot, l->password) != SECSuccess) {
                /* maybe the right password in Firefox 146+'s scheme, which this NSS lacks */
                picl__logins_slot_close(l);
                rc = picl__key4_unlock(l->key_path, l->password, &l->k_aes, &l->k_des3);
                if (rc == PICL_ERROR_UNSUPPORTED || rc == PICL_ERROR_WRONG_PASSWORD) {
                    rc = picl__logins_fail(l, PICL_ERROR_WRONG_PASSWORD, "wrong primary password");
                    goto fail_msg;
                }
                if (rc != PICL_OK) {
                    picl__logins_fail(l, rc, "cannot read key4.db");
                    goto fail_msg;
                }
                l->direct = 1;
            }
            rc = PICL_OK;
        }
        picl__logins_slot_close(l);
        if (rc != PICL_OK)
            goto fail_msg;
    }
    *out = &l->base;
    return PICL_OK;
fail_msg:
    if (err && errlen)
        snprintf(err, errlen, "%s", l->base.error);
fail:
    lg_close(&l->base);
    return rc;
}
