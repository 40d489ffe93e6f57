/* SPDX-License-Identifier: MPL-2.0 */
/* test_store_logins.c -- the passwords store on logins.json + key4.db of
 * profiles made by the real Firefox (AES-256 key), by old NSS (3DES key),
 * both at once, none, and with a primary password; read back by Firefox. */
#include "testutil.h"
#include "testutil_profile.h"
#include "stores/logins.h"
#include "crypto/nss.h"
#include "crypto/codec.h"

#include <limits.h>
#include <nss.h>
#include <pk11pub.h>
#include <pk11sdr.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *state_dir;

static picl_status give_pw(void *arg, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", (const char *)arg);
    return PICL_OK;
}

static picl_store *open_ok(const char *dir, const char *pw)
{
    picl_store *s = NULL;
    char err[256] = "";
    picl_status st = picl__logins_open(&s, dir, state_dir, pw ? give_pw : NULL, (void *)pw, err, sizeof err);
    ck_assert_msg(st == PICL_OK, "open: %d %s", st, err);
    ck_assert_str_eq(s->collection, "passwords");
    return s;
}

static const char *str(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "(null)";
}

static json_t *load_json(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_t *j = json_load_file(path, 0, NULL);
    ck_assert_msg(j != NULL, "%s", path);
    return j;
}

static void save_json(const char *dir, const char *name, const json_t *j)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_int_eq(json_dump_file(j, path, JSON_COMPACT), 0);
}

static void setup(void) { state_dir = tup_tmpdir(); }

/* ---- reading a Firefox profile ------------------------------------------- */

START_TEST(test_read_firefox_profile)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    picl_store *s = open_ok(d, NULL);
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 2);
    json_t *alice = tup_find(a, "username", "alice@example.com");
    ck_assert_ptr_nonnull(alice);
    ck_assert_str_eq(str(alice, "password"), "s3cret-p\xc3\xa4ss");
    ck_assert_str_eq(str(alice, "hostname"), "https://accounts.example.com");
    ck_assert_str_eq(str(alice, "formSubmitURL"), "https://accounts.example.com");
    ck_assert(json_is_null(json_object_get(alice, "httpRealm")));
    ck_assert_str_eq(str(alice, "usernameField"), "email");
    ck_assert_str_eq(str(alice, "passwordField"), "pw");
    ck_assert(json_integer_value(json_object_get(alice, "timePasswordChanged")) > 1700000000000LL);
    ck_assert_int_eq(json_integer_value(json_object_get(alice, "timesUsed")), 1);
    json_t *bob = tup_find(a, "username", "bob");
    ck_assert_str_eq(str(bob, "password"), "hunter2");
    ck_assert_str_eq(str(bob, "httpRealm"), "Intranet Realm");
    ck_assert(json_is_null(json_object_get(bob, "formSubmitURL")));
    /* the id is Firefox's GUID */
    json_t *file = load_json(d, "logins.json");
    json_t *e0 = json_array_get(json_object_get(file, "logins"), 0);
    json_t *one = NULL;
    ck_assert_int_eq(picl__store_get(s, str(e0, "guid"), &one), PICL_OK);
    ck_assert_str_eq(str(one, "username"), "alice@example.com");
    json_decref(one);
    ck_assert_int_eq(picl__store_get(s, "{no-such-guid}", &one), PICL_OK);
    ck_assert_ptr_null(one);
    /* first sync: both are changes; then none, also for a new store */
    json_t *c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 2);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    picl__store_close(s);
    s = open_ok(d, NULL);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    /* Firefox-side edits: a changed password (new ciphertext + time), a removal */
    picl__store_close(s);
    json_t *list = json_object_get(file, "logins");
    json_t *e1 = json_array_get(list, 1);
    char *bob_guid = strdup(str(e1, "guid"));
    json_object_set(e0, "encryptedPassword", json_object_get(e1, "encryptedPassword"));
    json_object_set_new(e0, "timePasswordChanged", json_integer(1800000000000LL));
    json_array_remove(list, 1);
    save_json(d, "logins.json", file);
    s = open_ok(d, NULL);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 2);
    ck_assert_str_eq(str(tup_find(c, "username", "alice@example.com"), "password"), "hunter2");
    ck_assert(json_is_true(json_object_get(tup_find(c, "id", bob_guid), "deleted")));
    /* reported, then edited again before mark_synced: stays a change */
    json_object_set_new(e0, "timePasswordChanged", json_integer(1800000000001LL));
    picl__store_close(s);
    s = open_ok(d, NULL);
    json_t *c2 = tup_changes(s);
    picl__store_close(s);
    save_json(d, "logins.json", file);
    s = open_ok(d, NULL);
    json_t *c3 = tup_changes(s); /* sees ...001 */
    json_object_set_new(e0, "timePasswordChanged", json_integer(1800000000002LL));
    save_json(d, "logins.json", file);
    ck_assert_int_eq(picl__store_mark_synced(s, c3), PICL_OK); /* store's copy is ...001: synced */
    picl__store_close(s);
    s = open_ok(d, NULL);
    json_t *c4 = tup_changes(s);
    ck_assert_int_eq(json_array_size(c4), 1); /* ...002 is new */
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(c4, 0), "timePasswordChanged")),
                     1800000000002LL);
    ck_assert_int_eq(picl__store_reset(s), PICL_OK);
    json_t *c5 = tup_changes(s);
    ck_assert_int_eq(json_array_size(c5), 1); /* one live login left */
    free(bob_guid);
    json_decref(c);
    json_decref(c2);
    json_decref(c3);
    json_decref(c4);
    json_decref(c5);
    json_decref(file);
    json_decref(a);
    picl__store_close(s);
}
END_TEST

/* ---- writing, read back by Firefox --------------------------------------- */

START_TEST(test_apply_read_back_by_firefox)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    picl_store *s = open_ok(d, NULL);
    json_t *a = tup_all(s);
    char *alice = strdup(str(tup_find(a, "username", "alice@example.com"), "id"));
    char *bob = strdup(str(tup_find(a, "username", "bob"), "id"));
    json_decref(a);
    char *batch = NULL;
    ck_assert(
        asprintf(
            &batch,
            "[{\"id\":\"{11111111-2222-4333-8444-555555555555}\",\"hostname\":\"https://new.example.net\","
            "  \"formSubmitURL\":\"https://new.example.net\",\"httpRealm\":null,\"username\":\"carol\","
            "  \"password\":\"p\\u00e4ss w\\u00f6rd "
            "\\ud83d\\udd11\",\"usernameField\":\"user\",\"passwordField\":\"pass\","
            "  "
            "\"timeCreated\":1600000000000,\"timePasswordChanged\":1600000000001,\"timeLastUsed\":"
            "1600000000002,"
            "  \"timesUsed\":7,\"futureField\":{\"x\":[1,2]}},"
            " {\"id\":\"%s\",\"hostname\":\"https://accounts.example.com\",\"formSubmitURL\":\"https://"
            "accounts.example.com\","
            "  "
            "\"username\":\"alice@example.com\",\"password\":\"changed-remotely\",\"usernameField\":"
            "\"email\","
            "  \"passwordField\":\"pw\",\"timePasswordChanged\":1900000000000},"
            " {\"id\":\"%s\",\"deleted\":true}]",
            alice, bob) > 0);
    tup_apply_ok(s, batch);
    free(batch);
    json_t *c = tup_changes(s);
    ck_assert_msg(json_array_size(c) == 0, "applied logins reported as local: %s", json_dumps(c, 0));
    json_decref(c);
    json_t *carol = NULL;
    ck_assert_int_eq(picl__store_get(s, "{11111111-2222-4333-8444-555555555555}", &carol), PICL_OK);
    ck_assert_str_eq(str(carol, "password"), "p\xc3\xa4ss w\xc3\xb6rd \xf0\x9f\x94\x91");
    ck_assert_int_eq(
        json_integer_value(json_array_get(json_object_get(json_object_get(carol, "futureField"), "x"), 1)),
        2);
    json_decref(carol);
    picl__store_close(s);

    json_t *file = load_json(d, "logins.json");
    ck_assert_int_eq(json_integer_value(json_object_get(file, "nextId")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(file, "version")), 3);
    ck_assert_ptr_nonnull(json_object_get(file, "potentiallyVulnerablePasswords"));
    json_t *list = json_object_get(file, "logins");
    ck_assert_int_eq(json_array_size(list), 3); /* carol, alice and bob's tombstone */
    ck_assert(json_is_true(json_object_get(tup_find(list, "guid", bob), "deleted")));
    ck_assert_ptr_null(json_object_get(tup_find(list, "guid", bob), "encryptedPassword"));
    json_t *ne = tup_find(list, "guid", "{11111111-2222-4333-8444-555555555555}");
    ck_assert_int_eq(json_integer_value(json_object_get(ne, "id")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(ne, "encType")), 1);
    ck_assert_ptr_nonnull(json_object_get(ne, "encryptedUnknownFields"));
    /* Firefox's fields of the updated entry are kept */
    json_t *ae = tup_find(list, "guid", alice);
    ck_assert_int_eq(json_integer_value(json_object_get(ae, "timeLastBreachAlertDismissed")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(ae, "id")), 1);
    json_decref(file);
    struct stat st;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/logins.json", d);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);

    json_t *dump = tup_dump_profile(d);
    json_t *lg = json_object_get(dump, "logins");
    ck_assert_int_eq(json_array_size(lg), 2);
    json_t *fc = tup_find(lg, "guid", "{11111111-2222-4333-8444-555555555555}");
    ck_assert_ptr_nonnull(fc);
    ck_assert_str_eq(str(fc, "username"), "carol");
    ck_assert_str_eq(str(fc, "password"), "p\xc3\xa4ss w\xc3\xb6rd \xf0\x9f\x94\x91");
    ck_assert_str_eq(str(fc, "usernameField"), "user");
    ck_assert_int_eq(json_integer_value(json_object_get(fc, "timeCreated")), 1600000000000LL);
    ck_assert_int_eq(json_integer_value(json_object_get(fc, "timesUsed")), 7);
    json_t *fa = tup_find(lg, "guid", alice);
    ck_assert_str_eq(str(fa, "password"), "changed-remotely");
    ck_assert_int_eq(json_integer_value(json_object_get(fa, "timePasswordChanged")), 1900000000000LL);
    ck_assert_ptr_null(tup_find(lg, "guid", bob));
    json_decref(dump);
    free(alice);
    free(bob);
}
END_TEST

/* ---- deletions as Firefox keeps them (tombstone entries) ------------------ */

/* The members of an entry, sorted, comma-separated: "a,b,c". */
static char *keys_of(const json_t *e)
{
    json_t *names = json_array();
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)e, k, v)
        json_array_append_new(names, json_string(k));
    size_t n = json_array_size(names);
    for (size_t i = 0; i < n; i++) /* tiny: insertion sort */
        for (size_t j = i; j > 0 && strcmp(json_string_value(json_array_get(names, j - 1)),
                                           json_string_value(json_array_get(names, j))) > 0;
             j--) {
            json_t *a = json_incref(json_array_get(names, j - 1));
            json_array_set(names, j - 1, json_array_get(names, j));
            json_array_set_new(names, j, a);
        }
    char *out = calloc(1, 1024);
    size_t len = 0;
    for (size_t i = 0; i < n && len < 1000; i++)
        len += (size_t)snprintf(out + len, 1024 - len, "%s%s", i ? "," : "",
                                json_string_value(json_array_get(names, i)));
    json_decref(names);
    return out;
}

static const char *TOMBSTONE_KEYS = "deleted,everSynced,guid,id,syncCounter,timeLastBreachAlertDismissed,"
                                    "timePasswordChanged";

static json_int_t ival(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    ck_assert_msg(json_is_integer(v), "%s is not an integer", k);
    return json_integer_value(v);
}

/* Firefox's own password sync, reading the profile (dump_profile.js): the
 * entry of guid, or NULL. */
static json_t *ff_sync_view(json_t *dump, const char *guid)
{
    return tup_find(json_object_get(dump, "loginsSync"), "guid", guid);
}

/* A login deleted in Firefox after a sync: the browser's tombstone entry is
 * uploaded as {id, deleted: true}, then kept with the counter reset, as
 * Firefox's own sync leaves it. */
START_TEST(test_browser_deletion_is_uploaded)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    picl_store *s = open_ok(d, NULL);
    json_t *c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 2);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    picl__store_close(s);
    /* what Firefox's sync does after an upload: counters reset, everSynced */
    json_t *file = load_json(d, "logins.json");
    json_t *list = json_object_get(file, "logins");
    ck_assert_int_eq(json_array_size(list), 2);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(ival(json_array_get(list, i), "syncCounter"), 0);
        ck_assert(json_is_true(json_object_get(json_array_get(list, i), "everSynced")));
    }
    char *bob = strdup(str(json_array_get(list, 1), "guid"));
    json_int_t bob_id = ival(json_array_get(list, 1), "id");
    json_int_t bob_changed = ival(json_array_get(list, 1), "timePasswordChanged");
    json_t *alice_before = json_deep_copy(json_array_get(list, 0));
    json_decref(file);

    /* the user deletes bob in the browser: Firefox writes a tombstone */
    tup_remove_login(d, "bob");
    file = load_json(d, "logins.json");
    list = json_object_get(file, "logins");
    ck_assert_int_eq(json_array_size(list), 2);
    json_t *t = tup_find(list, "guid", bob);
    char *keys = keys_of(t);
    ck_assert_str_eq(keys, TOMBSTONE_KEYS);
    free(keys);
    ck_assert(json_is_true(json_object_get(t, "deleted")));
    ck_assert_int_eq(ival(t, "syncCounter"), 1);
    json_decref(file);

    s = open_ok(d, NULL);
    c = tup_changes(s);
    ck_assert_msg(json_array_size(c) == 1, "changes: %s", json_dumps(c, 0));
    ck_assert_str_eq(str(json_array_get(c, 0), "id"), bob);
    ck_assert(json_is_true(json_object_get(json_array_get(c, 0), "deleted")));
    ck_assert_int_eq(json_object_size(json_array_get(c, 0)), 2);
    ck_assert_int_eq(picl__logins_unreadable(s), 0); /* a tombstone is not an unreadable login */
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 1);
    ck_assert_str_eq(str(json_array_get(a, 0), "username"), "alice@example.com");
    json_decref(a);
    json_t *one = NULL;
    ck_assert_int_eq(picl__store_get(s, bob, &one), PICL_OK);
    ck_assert_ptr_null(one);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    picl__store_close(s);

    /* exactly Firefox's tombstone after its own upload: counter 0, rest as it was */
    file = load_json(d, "logins.json");
    list = json_object_get(file, "logins");
    ck_assert_int_eq(json_array_size(list), 2);
    ck_assert(json_equal(json_array_get(list, 0), alice_before));
    t = tup_find(list, "guid", bob);
    keys = keys_of(t);
    ck_assert_str_eq(keys, TOMBSTONE_KEYS);
    free(keys);
    ck_assert_int_eq(ival(t, "id"), bob_id);
    ck_assert_int_eq(ival(t, "syncCounter"), 0);
    ck_assert_int_eq(ival(t, "timePasswordChanged"), bob_changed);
    ck_assert_int_eq(ival(t, "timeLastBreachAlertDismissed"), 0);
    ck_assert(json_is_true(json_object_get(t, "everSynced")));
    ck_assert(json_is_true(json_object_get(t, "deleted")));
    json_decref(file);

    /* a new store, and one after reset(): the uploaded tombstone is no news */
    s = open_ok(d, NULL);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    ck_assert_int_eq(picl__store_reset(s), PICL_OK);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 1);
    ck_assert_str_eq(str(json_array_get(c, 0), "username"), "alice@example.com");
    json_decref(c);
    picl__store_close(s);

    /* Firefox sees bob gone, and its own sync has nothing left to upload */
    json_t *dump = tup_dump_profile(d);
    ck_assert_int_eq(json_array_size(json_object_get(dump, "logins")), 1);
    ck_assert_ptr_null(tup_find(json_object_get(dump, "logins"), "guid", bob));
    json_t *fs = ff_sync_view(dump, bob);
    ck_assert_ptr_nonnull(fs);
    ck_assert(json_is_true(json_object_get(fs, "deleted")));
    ck_assert_int_eq(ival(fs, "syncCounter"), 0);
    json_decref(dump);
    json_decref(alice_before);
    free(bob);
}
END_TEST

/* A login added here by apply() (everSynced) and deleted in the browser:
 * a tombstone change; a login the browser never synced and deleted is gone. */
START_TEST(test_browser_deletion_of_applied_login)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    picl_store *s = open_ok(d, NULL);
    tup_apply_ok(s, "[{\"id\":\"{dddddddd-0000-4000-8000-000000000001}\",\"hostname\":\"https://d.example\","
                    "\"formSubmitURL\":\"https://d.example\",\"username\":\"dora\",\"password\":\"dpw\"}]");
    json_t *c = tup_changes(s); /* alice and bob: Firefox's, not yet synced */
    ck_assert_int_eq(json_array_size(c), 2);
    json_decref(c);
    picl__store_close(s);
    tup_remove_login(d, "dora");
    tup_remove_login(d, "bob"); /* never synced: Firefox removes it outright */
    json_t *file = load_json(d, "logins.json");
    json_t *list = json_object_get(file, "logins");
    ck_assert_int_eq(json_array_size(list), 2);
    json_t *t = tup_find(list, "guid", "{dddddddd-0000-4000-8000-000000000001}");
    ck_assert(json_is_true(json_object_get(t, "deleted")));
    ck_assert_ptr_null(tup_find(list, "guid", "bob"));
    json_decref(file);
    s = open_ok(d, NULL);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 2);
    json_t *dt = tup_find(c, "id", "{dddddddd-0000-4000-8000-000000000001}");
    ck_assert_ptr_nonnull(dt);
    ck_assert(json_is_true(json_object_get(dt, "deleted")));
    ck_assert_ptr_nonnull(tup_find(c, "username", "alice@example.com"));
    ck_assert_ptr_null(tup_find(c, "username", "bob"));
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    picl__store_close(s);
}
END_TEST

/* An incoming tombstone: the login becomes Firefox's tombstone entry (as its
 * sync makes it), so Firefox sees it gone and does not upload it; a record
 * for that GUID later replaces the tombstone. */
START_TEST(test_incoming_tombstone_as_firefox)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    picl_store *s = open_ok(d, NULL);
    json_t *c = tup_changes(s);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    json_t *before = load_json(d, "logins.json");
    json_t *list = json_object_get(before, "logins");
    const char *bob = str(json_array_get(list, 1), "guid");
    char *batch = NULL;
    ck_assert(asprintf(&batch, "[{\"id\":\"%s\",\"deleted\":true}]", bob) > 0);
    tup_apply_ok(s, batch);
    c = tup_changes(s);
    ck_assert_msg(json_array_size(c) == 0, "an applied tombstone reported as local: %s", json_dumps(c, 0));
    json_decref(c);
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 1);
    json_decref(a);
    picl__store_close(s);

    /* the file: alice untouched, bob's entry is exactly the tombstone */
    json_t *file = load_json(d, "logins.json");
    json_t *want = json_deep_copy(before);
    json_t *wt = json_array_get(json_object_get(want, "logins"), 1);
    static const char *const gone[] = {"hostname",          "httpRealm",     "formSubmitURL",
                                       "usernameField",     "passwordField", "encryptedUsername",
                                       "encryptedPassword", "encType",       "timeCreated",
                                       "timeLastUsed",      "timesUsed",     "encryptedUnknownFields"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        json_object_del(wt, gone[i]);
    json_object_set_new(wt, "syncCounter", json_integer(0));
    json_object_set_new(wt, "everSynced", json_true());
    json_object_set_new(wt, "deleted", json_true());
    ck_assert_msg(json_equal(file, want), "logins.json after the tombstone:\n%s\nwanted:\n%s",
                  json_dumps(file, JSON_INDENT(1)), json_dumps(want, JSON_INDENT(1)));
    char *keys = keys_of(json_array_get(json_object_get(file, "logins"), 1));
    ck_assert_str_eq(keys, TOMBSTONE_KEYS);
    free(keys);
    json_decref(want);

    /* Firefox: bob gone, nothing of it to upload */
    json_t *dump = tup_dump_profile(d);
    ck_assert_int_eq(json_array_size(json_object_get(dump, "logins")), 1);
    ck_assert_str_eq(str(json_array_get(json_object_get(dump, "logins"), 0), "username"),
                     "alice@example.com");
    json_t *fs = ff_sync_view(dump, bob);
    ck_assert(json_is_true(json_object_get(fs, "deleted")));
    ck_assert_int_eq(ival(fs, "syncCounter"), 0);
    json_decref(dump);

    /* the same tombstone again, and one for a GUID we never had: no change */
    s = open_ok(d, NULL);
    free(batch);
    ck_assert(
        asprintf(&batch, "[{\"id\":\"%s\",\"deleted\":true},{\"id\":\"{nope}\",\"deleted\":true}]", bob) > 0);
    tup_apply_ok(s, batch);
    json_t *again = load_json(d, "logins.json");
    ck_assert(json_equal(again, file));
    json_decref(again);
    /* the login comes back from another device: a new entry replaces the tombstone */
    free(batch);
    ck_assert(asprintf(&batch,
                       "[{\"id\":\"%s\",\"hostname\":\"https://back.example\",\"httpRealm\":\"R\","
                       "\"username\":\"bob\",\"password\":\"back-again\"}]",
                       bob) > 0);
    tup_apply_ok(s, batch);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    picl__store_close(s);
    json_decref(file);
    file = load_json(d, "logins.json");
    list = json_object_get(file, "logins");
    ck_assert_int_eq(json_array_size(list), 2);
    json_t *back = tup_find(list, "guid", bob);
    ck_assert_ptr_null(json_object_get(back, "deleted"));
    ck_assert_int_eq(ival(back, "id"), 3); /* a new entry, as Firefox's addLogin makes it */
    ck_assert_int_eq(ival(file, "nextId"), 4);
    json_decref(file);
    dump = tup_dump_profile(d);
    ck_assert_str_eq(str(tup_find(json_object_get(dump, "logins"), "guid", bob), "password"), "back-again");
    json_decref(dump);
    json_decref(before);
    free(batch);
}
END_TEST

/* Entries that cannot be decrypted (and are not tombstones) are kept as they
 * are on every save, counted, never uploaded and never deleted. */
START_TEST(test_unreadable_entries_kept)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    picl_store *s = open_ok(d, NULL);
    json_t *c = tup_changes(s);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    picl__store_close(s);
    /* alice's password under a key id this profile does not have, and a
     * foreign entry whose username is no SDR blob at all */
    json_t *file = load_json(d, "logins.json");
    json_t *list = json_object_get(file, "logins");
    json_t *alice = json_array_get(list, 0);
    char *alice_guid = strdup(str(alice, "guid"));
    uint8_t *der = NULL;
    size_t derlen = 0;
    const char *pw = str(alice, "encryptedPassword");
    ck_assert_int_eq(picl__base64_decode_alloc(&der, &derlen, pw, strlen(pw)), PICL_OK);
    ck_assert(derlen > 20 && der[4] == 0xf8 && der[19] == 0x01); /* SEQ { OCTET STRING f8 00 .. 01 */
    der[19] = 0x02;
    char *other_key = picl__base64_encode_alloc(der, derlen);
    free(der);
    json_object_set_new(alice, "encryptedPassword", json_string(other_key));
    free(other_key);
    json_t *junk = json_deep_copy(json_array_get(list, 1));
    json_object_set_new(junk, "id", json_integer(7));
    json_object_set_new(junk, "guid", json_string("{junk0000-0000-4000-8000-000000000001}"));
    json_object_set_new(junk, "encryptedUsername", json_string("bm90IGFuIFNEUiBibG9i"));
    json_object_set_new(junk, "futureMember", json_string("kept"));
    json_array_append_new(list, junk);
    save_json(d, "logins.json", file);

    s = open_ok(d, NULL);
    c = tup_changes(s);
    ck_assert_msg(json_array_size(c) == 0, "unreadable entries reported: %s", json_dumps(c, 0));
    json_decref(c);
    ck_assert_int_eq(picl__logins_unreadable(s), 2);
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 1);
    ck_assert_str_eq(str(json_array_get(a, 0), "username"), "bob");
    json_decref(a);
    ck_assert_int_eq(picl__logins_unreadable(s), 2);
    /* a tombstone for the unreadable alice, and a new login: alice is kept */
    char *batch = NULL;
    ck_assert(
        asprintf(&batch,
                 "[{\"id\":\"%s\",\"deleted\":true},"
                 "{\"id\":\"{nnnnnnnn-0000-4000-8000-000000000001}\",\"hostname\":\"https://n.example\","
                 "\"httpRealm\":\"r\",\"username\":\"n\",\"password\":\"np\"}]",
                 alice_guid) > 0);
    tup_apply_ok(s, batch);
    free(batch);
    ck_assert_int_eq(picl__logins_unreadable(s), 1);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    picl__store_close(s);
    json_t *after = load_json(d, "logins.json");
    json_t *al = json_object_get(after, "logins");
    ck_assert_int_eq(json_array_size(al), 4);
    ck_assert(json_equal(json_array_get(al, 0), alice)); /* byte for byte */
    ck_assert(json_equal(tup_find(al, "guid", "{junk0000-0000-4000-8000-000000000001}"), junk));
    ck_assert_ptr_null(json_object_get(json_array_get(al, 0), "deleted"));
    json_decref(after);
    json_decref(file);
    free(alice_guid);
}
END_TEST

/* OID 2.16.840.1.101.3.4.1.42 (aes256-CBC) and 1.2.840.113549.3.7 (des-ede3-cbc) */
static const uint8_t OID_AES256[] = {0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x2a};
static const uint8_t OID_DES3[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x03, 0x07};

static int blob_has(const char *b64, const uint8_t *oid, size_t n)
{
    uint8_t *der = NULL;
    size_t len = 0;
    ck_assert_int_eq(picl__base64_decode_alloc(&der, &len, b64, strlen(b64)), PICL_OK);
    int found = len >= n && memmem(der, len, oid, n) != NULL;
    free(der);
    return found;
}

START_TEST(test_profile_without_key4db)
{
    const char *d = tup_tmpdir();
    tup_sh("echo '// prefs' > '%s/prefs.js'", d);
    picl_store *s = open_ok(d, NULL);
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 0);
    json_decref(a);
    tup_apply_ok(s,
                 "[{\"id\":\"{aaaaaaaa-0000-4000-8000-000000000001}\",\"hostname\":\"https://first.example\","
                 "\"formSubmitURL\":\"\",\"username\":\"\",\"password\":\"only-a-password\"}]");
    picl__store_close(s);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/key4.db", d);
    ck_assert_int_eq(access(path, F_OK), 0);
    json_t *file = load_json(d, "logins.json");
    json_t *e = json_array_get(json_object_get(file, "logins"), 0);
    ck_assert(blob_has(str(e, "encryptedPassword"), OID_AES256, sizeof OID_AES256));
    ck_assert_int_eq(json_integer_value(json_object_get(file, "nextId")), 2);
    json_decref(file);
    json_t *dump = tup_dump_profile(d);
    json_t *lg = json_object_get(dump, "logins");
    ck_assert_int_eq(json_array_size(lg), 1);
    ck_assert_str_eq(str(json_array_get(lg, 0), "password"), "only-a-password");
    ck_assert_str_eq(str(json_array_get(lg, 0), "username"), "");
    json_decref(dump);
}
END_TEST

/* An old profile: key4.db made by Debian's NSS (3DES SDR key), one login. */
static void make_old_profile(const char *d)
{
    tup_sh("echo '// prefs' > '%s/prefs.js'", d);
    picl_nss_profile *ctx = NULL;
    ck_assert_int_eq(picl__nss_profile_open(d, 1, &ctx), PICL_OK);
    PK11SlotInfo *slot = PK11_GetInternalKeySlot();
    if (PK11_NeedUserInit(slot))
        ck_assert_int_eq(PK11_InitPin(slot, NULL, ""), SECSuccess);
    SECItem keyid = {siBuffer, NULL, 0}, in = {siBuffer, (unsigned char *)"oldpass", 7},
            out = {siBuffer, NULL, 0};
    ck_assert_int_eq(PK11SDR_Encrypt(&keyid, &in, &out, NULL), SECSuccess);
    char *b64 = picl__base64_encode_alloc(out.data, out.len);
    SECITEM_FreeItem(&out, PR_FALSE);
    in.data = (unsigned char *)"olduser";
    ck_assert_int_eq(PK11SDR_Encrypt(&keyid, &in, &out, NULL), SECSuccess);
    char *ub64 = picl__base64_encode_alloc(out.data, out.len);
    SECITEM_FreeItem(&out, PR_FALSE);
    PK11_FreeSlot(slot);
    picl__nss_profile_close(ctx);
    ck_assert(blob_has(b64, OID_DES3, sizeof OID_DES3));
    json_t *doc = json_pack(
        "{s:i, s:[{s:i, s:s, s:n, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:i}], "
        "s:[], s:i}",
        "nextId", 2, "logins", "id", 1, "hostname", "https://old.example", "httpRealm", "formSubmitURL",
        "https://old.example", "usernameField", "u", "passwordField", "p", "encryptedUsername", ub64,
        "encryptedPassword", b64, "guid", "{0ld00000-0000-4000-8000-000000000001}", "encType", 1,
        "timeCreated", (json_int_t)1500000000000LL, "timeLastUsed", (json_int_t)1500000000000LL,
        "timePasswordChanged", (json_int_t)1500000000000LL, "timesUsed", 1, "potentiallyVulnerablePasswords",
        "version", 3);
    save_json(d, "logins.json", doc);
    json_decref(doc);
    free(b64);
    free(ub64);
}

START_TEST(test_old_3des_profile_then_firefox_adds_aes)
{
    const char *d = tup_tmpdir();
    make_old_profile(d);
    picl_store *s = open_ok(d, NULL);
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 1);
    ck_assert_str_eq(str(json_array_get(a, 0), "password"), "oldpass");
    ck_assert_str_eq(str(json_array_get(a, 0), "username"), "olduser");
    json_decref(a);
    /* a profile with only the 3DES key keeps using it */
    tup_apply_ok(s,
                 "[{\"id\":\"{0ld00000-0000-4000-8000-000000000002}\",\"hostname\":\"https://old2.example\","
                 "\"httpRealm\":\"r\",\"username\":\"u2\",\"password\":\"p2\"}]");
    picl__store_close(s);
    json_t *file = load_json(d, "logins.json");
    ck_assert(blob_has(str(json_array_get(json_object_get(file, "logins"), 1), "encryptedPassword"), OID_DES3,
                       sizeof OID_DES3));
    json_decref(file);
    /* the real Firefox adds its logins: it creates an AES key under the same id */
    tup_make_profile(d, NULL);
    file = load_json(d, "logins.json");
    json_t *list = json_object_get(file, "logins");
    ck_assert_int_eq(json_array_size(list), 4);
    ck_assert(blob_has(str(json_array_get(list, 2), "encryptedPassword"), OID_AES256, sizeof OID_AES256));
    json_decref(file);
    s = open_ok(d, NULL);
    a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 4); /* both key types, chosen by type */
    ck_assert_str_eq(str(tup_find(a, "username", "olduser"), "password"), "oldpass");
    ck_assert_str_eq(str(tup_find(a, "username", "u2"), "password"), "p2");
    ck_assert_str_eq(str(tup_find(a, "username", "bob"), "password"), "hunter2");
    json_decref(a);
    /* now new blobs use the AES key */
    tup_apply_ok(s,
                 "[{\"id\":\"{0ld00000-0000-4000-8000-000000000003}\",\"hostname\":\"https://old3.example\","
                 "\"httpRealm\":\"r\",\"username\":\"u3\",\"password\":\"p3\"}]");
    picl__store_close(s);
    file = load_json(d, "logins.json");
    list = json_object_get(file, "logins");
    ck_assert(
        blob_has(str(tup_find(list, "guid", "{0ld00000-0000-4000-8000-000000000003}"), "encryptedPassword"),
                 OID_AES256, sizeof OID_AES256));
    json_decref(file);
    json_t *dump = tup_dump_profile(d);
    json_t *lg = json_object_get(dump, "logins");
    ck_assert_int_eq(json_array_size(lg), 5);
    ck_assert_str_eq(str(tup_find(lg, "username", "olduser"), "password"), "oldpass");
    ck_assert_str_eq(str(tup_find(lg, "username", "u2"), "password"), "p2");
    ck_assert_str_eq(str(tup_find(lg, "username", "u3"), "password"), "p3");
    json_decref(dump);
}
END_TEST

/* ---- primary password ---------------------------------------------------- */

START_TEST(test_primary_password)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, "pw-123");
    tup_sh("touch '%s/.parentlock'", d);
    uint64_t before = tup_dir_digest(d);
    picl_store *s = NULL;
    char err[256];
    ck_assert_int_eq(picl__logins_open(&s, d, state_dir, NULL, NULL, err, sizeof err), PICL_ERROR_STATE);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(err, "primary password"));
    ck_assert_int_eq(picl__logins_open(&s, d, state_dir, give_pw, (void *)"wrong", err, sizeof err),
                     PICL_ERROR_WRONG_PASSWORD);
    ck_assert_ptr_null(s);
    ck_assert(tup_dir_digest(d) == before);
    s = open_ok(d, "pw-123");
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 2);
    ck_assert_str_eq(str(tup_find(a, "username", "bob"), "password"), "hunter2");
    json_decref(a);
    tup_apply_ok(s, "[{\"id\":\"{pppppppp-0000-4000-8000-000000000001}\",\"hostname\":\"https://pp.example\","
                    "\"httpRealm\":\"r\",\"username\":\"pu\",\"password\":\"pp\"}]");
    picl__store_close(s);
    s = open_ok(d, "pw-123");
    json_t *r = NULL;
    ck_assert_int_eq(picl__store_get(s, "{pppppppp-0000-4000-8000-000000000001}", &r), PICL_OK);
    ck_assert_str_eq(str(r, "password"), "pp");
    json_decref(r);
    picl__store_close(s);
    /* Firefox without the password sees the profile locked, not broken */
    json_t *dump = tup_dump_profile(d);
    ck_assert(json_is_true(json_object_get(json_object_get(dump, "logins"), "locked")));
    json_decref(dump);
    /* Firefox with it reads what we wrote (key4.db untouched by us) */
    dump = tup_dump_profile_pw(d, "pw-123");
    json_t *lg = json_object_get(dump, "logins");
    ck_assert_int_eq(json_array_size(lg), 3);
    ck_assert_str_eq(str(tup_find(lg, "username", "pu"), "password"), "pp");
    ck_assert_str_eq(str(tup_find(lg, "username", "bob"), "password"), "hunter2");
    json_decref(dump);
}
END_TEST

/* A primary password set by Debian's NSS (SHA-1 scheme): NSS checks it. */
START_TEST(test_primary_password_old_scheme)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    picl_nss_profile *ctx = NULL;
    ck_assert_int_eq(picl__nss_profile_open(d, 1, &ctx), PICL_OK);
    PK11SlotInfo *slot = PK11_GetInternalKeySlot();
    ck_assert_int_eq(PK11_ChangePW(slot, "", "old-nss-pw"), SECSuccess);
    PK11_FreeSlot(slot);
    picl__nss_profile_close(ctx);
    uint64_t before = tup_dir_digest(d);
    picl_store *s = NULL;
    char err[256];
    ck_assert_int_eq(picl__logins_open(&s, d, state_dir, give_pw, (void *)"old-nss-pw!", err, sizeof err),
                     PICL_ERROR_WRONG_PASSWORD);
    ck_assert_int_eq(picl__logins_open(&s, d, state_dir, NULL, NULL, err, sizeof err), PICL_ERROR_STATE);
    ck_assert(tup_dir_digest(d) == before);
    s = open_ok(d, "old-nss-pw");
    tup_apply_ok(s, "[{\"id\":\"{oooooooo-0000-4000-8000-000000000001}\",\"hostname\":\"https://o.example\","
                    "\"httpRealm\":\"r\",\"username\":\"ou\",\"password\":\"op\"}]");
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 3);
    json_decref(a);
    picl__store_close(s);
    json_t *dump = tup_dump_profile_pw(d, "old-nss-pw");
    json_t *lg = json_object_get(dump, "logins");
    ck_assert_int_eq(json_array_size(lg), 3);
    ck_assert_str_eq(str(tup_find(lg, "username", "ou"), "password"), "op");
    json_decref(dump);
}
END_TEST

/* ---- refusals: nothing written -------------------------------------------- */

START_TEST(test_refusals_change_nothing)
{
    picl_store *s = NULL;
    char err[256];
    ck_assert_int_eq(picl__logins_open(&s, "/nonexistent/prof", state_dir, NULL, NULL, err, sizeof err),
                     PICL_ERROR_NOT_FOUND);
    const char *empty = tup_tmpdir();
    ck_assert_int_eq(picl__logins_open(&s, empty, state_dir, NULL, NULL, err, sizeof err),
                     PICL_ERROR_INVALID_ARGUMENT);
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    ck_assert_int_eq(picl__logins_open(&s, d, NULL, NULL, NULL, err, sizeof err),
                     PICL_ERROR_INVALID_ARGUMENT);
    /* locked by a running Firefox */
    pid_t holder = tup_hold_lock(d);
    uint64_t before = tup_dir_digest(d), sbefore = tup_dir_digest(state_dir);
    ck_assert_int_eq(picl__logins_open(&s, d, state_dir, NULL, NULL, err, sizeof err),
                     PICL_ERROR_PROFILE_LOCKED);
    ck_assert_ptr_null(s);
    ck_assert(tup_dir_digest(d) == before);
    tup_release_lock(holder);
    /* corrupt logins.json */
    static const char *corrupt[] = {"{\"logins\": [",
                                    "[]",
                                    "{\"logins\": 5}",
                                    "{\"logins\": [1]}",
                                    "{\"logins\": [{\"guid\": 7, \"id\": 1}]}",
                                    "{\"nextId\": \"x\", \"logins\": []}",
                                    "{\"logins\": [], \"logins\": []}",
                                    ""};
    for (size_t i = 0; i < sizeof corrupt / sizeof corrupt[0]; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/logins.json", d);
        FILE *f = fopen(path, "w");
        fputs(corrupt[i], f);
        fclose(f);
        before = tup_dir_digest(d);
        ck_assert_msg(picl__logins_open(&s, d, state_dir, NULL, NULL, err, sizeof err) == PICL_ERROR_ENCODING,
                      "case %zu", i);
        ck_assert_ptr_nonnull(strstr(err, "corrupt"));
        ck_assert(tup_dir_digest(d) == before);
    }
    ck_assert(tup_dir_digest(state_dir) == sbefore);
}
END_TEST

START_TEST(test_bad_records_change_nothing)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    picl_store *s = open_ok(d, NULL);
    json_t *c = tup_changes(s);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    picl__store_close(s);
    uint64_t before = tup_dir_digest(d), sbefore = tup_dir_digest(state_dir);
    s = open_ok(d, NULL);
    static const char *bad[] = {
        "[7]",
        "[{\"hostname\":\"https://a\",\"httpRealm\":\"r\",\"username\":\"u\",\"password\":\"p\"}]",
        "[{\"id\":\"\",\"hostname\":\"https://"
        "a\",\"httpRealm\":\"r\",\"username\":\"u\",\"password\":\"p\"}]",
        "[{\"id\":\"{x}\",\"httpRealm\":\"r\",\"username\":\"u\",\"password\":\"p\"}]",
        "[{\"id\":\"{x}\",\"hostname\":\"\",\"httpRealm\":\"r\",\"username\":\"u\",\"password\":\"p\"}]",
        "[{\"id\":\"{x}\",\"hostname\":\"https://a\",\"username\":\"u\",\"password\":\"p\"}]",
        "[{\"id\":\"{x}\",\"hostname\":\"https://a\",\"httpRealm\":\"r\",\"formSubmitURL\":\"https://a\","
        "\"username\":\"u\",\"password\":\"p\"}]",
        "[{\"id\":\"{x}\",\"hostname\":\"https://a\",\"httpRealm\":\"r\",\"password\":\"p\"}]",
        "[{\"id\":\"{x}\",\"hostname\":\"https://"
        "a\",\"httpRealm\":\"r\",\"username\":\"u\",\"password\":\"\"}]",
        "[{\"id\":\"{x}\",\"hostname\":\"https://a\",\"httpRealm\":\"r\",\"username\":3,\"password\":\"p\"}]",
        "[{\"id\":\"{x}\",\"hostname\":\"https://"
        "a\",\"httpRealm\":\"r\",\"username\":\"u\",\"password\":\"p\","
        "\"timesUsed\":-1}]",
        "[{\"id\":\"{x}\",\"hostname\":\"https://"
        "a\",\"httpRealm\":\"r\",\"username\":\"u\",\"password\":\"p\","
        "\"timeCreated\":\"yesterday\"}]",
        "[{\"id\":\"{x}\",\"deleted\":\"true\"}]",
        "[{\"id\":\"{ok}\",\"hostname\":\"https://"
        "a\",\"httpRealm\":\"r\",\"username\":\"u\",\"password\":\"p\"},"
        " {\"id\":\"{bad}\"}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *r = json_loads(bad[i], 0, NULL);
        ck_assert_ptr_nonnull(r);
        ck_assert_msg(picl__store_apply(s, r) == PICL_ERROR_ENCODING, "case %zu", i);
        json_decref(r);
    }
    json_t *notarray = json_object();
    ck_assert_int_eq(picl__store_apply(s, notarray), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(notarray);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    picl__store_close(s);
    ck_assert(tup_dir_digest(d) == before);
    ck_assert(tup_dir_digest(state_dir) == sbefore);
}
END_TEST

START_TEST(test_wipe)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    picl_store *s = open_ok(d, NULL);
    ck_assert_int_eq(picl__store_wipe(s), PICL_OK);
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 0);
    json_decref(a);
    picl__store_close(s);
    json_t *file = load_json(d, "logins.json");
    ck_assert_int_eq(json_array_size(json_object_get(file, "logins")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(file, "nextId")), 3);
    json_decref(file);
    json_t *dump = tup_dump_profile(d);
    ck_assert_int_eq(json_array_size(json_object_get(dump, "logins")), 0);
    json_decref(dump);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("store_logins");
    TCase *t = tcase_create("logins");
    tcase_set_timeout(t, 120);
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_add_test(t, test_read_firefox_profile);
    tcase_add_test(t, test_apply_read_back_by_firefox);
    tcase_add_test(t, test_profile_without_key4db);
    tcase_add_test(t, test_old_3des_profile_then_firefox_adds_aes);
    tcase_add_test(t, test_primary_password);
    tcase_add_test(t, test_primary_password_old_scheme);
    tcase_add_test(t, test_refusals_change_nothing);
    tcase_add_test(t, test_bad_records_change_nothing);
    tcase_add_test(t, test_wipe);
    tcase_add_test(t, test_browser_deletion_is_uploaded);
    tcase_add_test(t, test_browser_deletion_of_applied_login);
    tcase_add_test(t, test_incoming_tombstone_as_firefox);
    tcase_add_test(t, test_unreadable_entries_kept);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(suite()); }
