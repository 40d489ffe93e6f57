/* SPDX-License-Identifier: MPL-2.0 */
/* test_classmap_anchor.c -- the class map anchor rules and loud integrity
 * failures (records.md 3-4, client.md 7) through the picl command against a
 * real `picl server`, with the storage server's database edited behind its
 * back as a hostile storage server would: a forged map, a replayed map, a
 * deleted map, tampered records, and a password reset. */
#include "testutil.h"
#include "testutil_cli.h"
#include "testutil_ks.h"
#include "client/keyserver_client.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tucli T;

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)

static void setup(void) { tucli_start(&T); }

static void teardown(void) { tucli_stop(&T); }

/* An account, verified, signed in on two devices (state dirs s1, s2), each
 * with its own store directory (f1, f2). */
static void account(void)
{
    char code[256];
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account create --server %s --email a@x.org", T.url), 0);
    ck_assert_int_eq(
        run(code, sizeof code, "grep -h '^X-Verify-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2"), 0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account verify --code %s", code), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q login --email a@x.org"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q login --server %s --email a@x.org", T.url), 0);
    ck_assert_int_eq(run(NULL, 0, "mkdir -p f1 f2"), 0);
}

/* ---- the storage server's database, as its operator sees it ------------ */

static sqlite3 *db_open(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/data/storage/storage.db", T.dir);
    if (access(path, F_OK) != 0)
        snprintf(path, sizeof path, "%s/data/storage.db", T.dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    return db;
}

static void db_exec(sqlite3 *db, const char *sql, const char *a, const char *b, const char *c)
{
    sqlite3_stmt *q;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    const char *args[3] = {a, b, c};
    for (int i = 0; i < 3 && args[i]; i++)
        sqlite3_bind_text(q, i + 1, args[i], -1, SQLITE_TRANSIENT);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
}

/* The collection's timestamp moves on, as after any write the server makes. */
static void db_touch(sqlite3 *db, const char *coll)
{
    db_exec(db,
            "UPDATE collections SET modified = (SELECT max(m) + 1 FROM (SELECT max(modified) AS m FROM "
            "collections UNION SELECT max(modified) FROM users)) WHERE name = ?",
            coll, NULL, NULL);
    db_exec(db, "UPDATE users SET modified = (SELECT max(modified) FROM collections)", NULL, NULL, NULL);
}

/* The payload of a BSO (malloc()ed), or NULL. */
static char *db_payload(const char *coll, const char *id)
{
    sqlite3 *db = db_open();
    sqlite3_stmt *q;
    ck_assert_int_eq(
        sqlite3_prepare_v2(db, "SELECT payload FROM bsos WHERE coll = ? AND id = ?", -1, &q, NULL),
        SQLITE_OK);
    sqlite3_bind_text(q, 1, coll, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, id, -1, SQLITE_STATIC);
    char *p = sqlite3_step(q) == SQLITE_ROW ? strdup((const char *)sqlite3_column_text(q, 0)) : NULL;
    sqlite3_finalize(q);
    sqlite3_close(db);
    return p;
}

static void db_set_payload(const char *coll, const char *id, const char *payload)
{
    sqlite3 *db = db_open();
    db_exec(db, "UPDATE bsos SET payload = ?, payload_size = length(?1) WHERE coll = ?2 AND id = ?3", payload,
            coll, id);
    ck_assert_int_eq(sqlite3_changes(db), 1);
    db_touch(db, coll);
    db_exec(
        db,
        "UPDATE bsos SET modified = (SELECT modified FROM collections WHERE name = ?1) WHERE coll = ?1 AND "
        "id = ?2",
        coll, id, NULL);
    sqlite3_close(db);
}

static void db_delete(const char *coll, const char *id)
{
    sqlite3 *db = db_open();
    db_exec(db, "DELETE FROM bsos WHERE coll = ? AND id = ?", coll, id, NULL);
    ck_assert_int_eq(sqlite3_changes(db), 1);
    db_touch(db, coll);
    sqlite3_close(db);
}

/* Moves a BSO to another id (the payload unchanged). */
static void db_rename(const char *coll, const char *id, const char *to)
{
    sqlite3 *db = db_open();
    db_exec(db, "UPDATE bsos SET id = ?3 WHERE coll = ?1 AND id = ?2", coll, id, to);
    ck_assert_int_eq(sqlite3_changes(db), 1);
    db_touch(db, coll);
    db_exec(
        db,
        "UPDATE bsos SET modified = (SELECT modified FROM collections WHERE name = ?1) WHERE coll = ?1 AND "
        "id = ?2",
        coll, to, NULL);
    sqlite3_close(db);
}

/* How many BSOs of coll there are, and how many have kid `kid` (NULL: any). */
static int db_count(const char *coll, const char *kid)
{
    sqlite3 *db = db_open();
    sqlite3_stmt *q;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT payload FROM bsos WHERE coll = ?", -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(q, 1, coll, -1, SQLITE_STATIC);
    int n = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        json_t *p = json_loads((const char *)sqlite3_column_text(q, 0), 0, NULL);
        const char *k = json_string_value(json_object_get(p, "kid"));
        if (!kid || (k && !strcmp(k, kid)))
            n++;
        json_decref(p);
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

static const char *map_class(json_t *map, const char *c)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(map, "collections"), c), "class"));
}

static json_t *server_map(void)
{
    char *p = db_payload("meta", "classes");
    ck_assert_ptr_nonnull(p);
    json_t *m = json_loads(p, 0, NULL);
    free(p);
    ck_assert_ptr_nonnull(m);
    return m;
}

static json_t *sync_json(const char *state, const char *store, int want_rc)
{
    char out[16384];
    int rc = run(out, sizeof out, "$P --state %s sync --store-dir %s --json 2>/dev/null", state, store);
    ck_assert_msg(rc == want_rc, "sync %s: exit %d, not %d: %s", state, rc, want_rc, out);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_msg(j != NULL, "sync --json printed %s", out);
    return j;
}

static const char *BM =
    "{\"id\":\"bm1_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"One\","
    "\"bmkUri\":\"https://one.example/\",\"tags\":[],\"dateAdded\":1}";

/* A storage server serves meta/classes with another kB field and any hmac
 * (the old client took that for a reset elsewhere and rebuilt the map from
 * the defaults, downgrading a collection the user had moved to B). */
START_TEST(test_forged_map_refused)
{
    account();
    ck_assert_int_eq(run(NULL, 0, "echo '[%s]' > f1/bookmarks.json", BM), 0);
    json_decref(sync_json("s1", "f1", 0));
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q class set bookmarks B"), 0);
    ck_assert_int_eq(db_count("bookmarks", "B:2"), 1);
    char *genuine = db_payload("meta", "classes");
    json_t *forged = json_loads(genuine, 0, NULL);
    json_object_set_new(json_object_get(json_object_get(forged, "collections"), "bookmarks"), "class",
                        json_string("A"));
    json_object_set_new(json_object_get(json_object_get(forged, "collections"), "passwords"), "class",
                        json_string("A"));
    json_object_set_new(forged, "kB", json_string("00112233445566778899aabbccddeeff"));
    json_object_set_new(forged, "hmac",
                        json_string("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
    json_object_set_new(forged, "version",
                        json_integer(json_integer_value(json_object_get(forged, "version")) + 5));
    char *text = json_dumps(forged, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(forged);
    db_set_payload("meta", "classes", text);
    /* the other device, with a new bookmark: refused, exit 5, nothing uploaded */
    ck_assert_int_eq(run(NULL, 0,
                         "echo '[{\"id\":\"bm2_________\",\"type\":\"bookmark\",\"parentid\":\"menu\","
                         "\"title\":\"Two\"}]' > f2/bookmarks.json"),
                     0);
    json_t *j = sync_json("s2", "f2", 5);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "error");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "message")), "forged"));
    json_decref(j);
    ck_assert_ptr_null(db_payload("bookmarks", "bm2_________"));
    /* the device that made the move refuses too, and does not "repair" */
    char out[8192];
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --store-dir f1 2>&1"), 5);
    ck_assert_ptr_nonnull(strstr(out, "forged"));
    char *now = db_payload("meta", "classes");
    ck_assert_str_eq(now, text);
    free(now);
    ck_assert_int_eq(db_count("bookmarks", NULL), 1);
    ck_assert_int_eq(db_count("bookmarks", "B:2"), 1);
    /* the server gives the genuine map back: bookmarks are still class B */
    db_set_payload("meta", "classes", genuine);
    json_decref(sync_json("s2", "f2", 0));
    ck_assert_int_eq(db_count("bookmarks", "B:2"), 2);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 class get bookmarks"), 0);
    ck_assert_str_eq(out, "B\n");
    free(text);
    free(genuine);
}
END_TEST

/* An older genuine map shown to a device that never saw the newer one, and
 * a map deleted from the server: refused, nothing written. */
START_TEST(test_replay_and_deletion_refused)
{
    account();
    json_decref(sync_json("s1", "f1", 0));
    char *v1 = db_payload("meta", "classes");
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q class set history B"), 0);
    json_t *m = server_map();
    ck_assert_int_eq(json_integer_value(json_object_get(m, "version")), 2);
    json_decref(m);
    db_set_payload("meta", "classes", v1); /* the replay */
    ck_assert_int_eq(run(NULL, 0,
                         "echo '[{\"id\":\"hi1_________\",\"histUri\":\"https://h.example/\",\"visits\":[]}]'"
                         " > f2/history.json"),
                     0);
    json_t *j = sync_json("s2", "f2", 5); /* s2 has never synced: min version 0 */
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "message")), "old version"));
    json_decref(j);
    ck_assert_int_eq(db_count("history", NULL), 0);
    /* deleted: no defaults written, nothing uploaded */
    db_delete("meta", "classes");
    j = sync_json("s2", "f2", 5);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "message")), "missing"));
    json_decref(j);
    ck_assert_ptr_null(db_payload("meta", "classes"));
    ck_assert_int_eq(db_count("history", NULL), 0);
    /* s1 holds exactly the anchored map: it puts it back; then s2 syncs,
     * history in class B */
    json_decref(sync_json("s1", "f1", 0));
    m = server_map();
    ck_assert_int_eq(json_integer_value(json_object_get(m, "version")), 2);
    ck_assert_str_eq(map_class(m, "history"), "B");
    json_decref(m);
    json_decref(sync_json("s2", "f2", 0));
    ck_assert_int_eq(db_count("history", "B:2"), 1);
    free(v1);
}
END_TEST

static const char *failure_reason(json_t *sum, const char *coll, const char *id)
{
    size_t i;
    json_t *f;
    json_array_foreach (json_object_get(sum, "failed"), i, f) {
        if (!strcmp(json_string_value(json_object_get(f, "collection")), coll) &&
            !strcmp(json_string_value(json_object_get(f, "id")), id))
            return json_string_value(json_object_get(f, "reason"));
    }
    return NULL;
}

/* Flips one base64 character of a payload field. */
static char *tamper(const char *payload, const char *field, size_t at)
{
    json_t *p = json_loads(payload, 0, NULL);
    char *v = strdup(json_string_value(json_object_get(p, field)));
    v[at] = v[at] == 'A' ? 'B' : 'A';
    json_object_set_new(p, field, json_string(v));
    char *out = json_dumps(p, JSON_COMPACT);
    free(v);
    json_decref(p);
    return out;
}

/* The IV rewritten (the first cleartext block changed under an
 * unauthenticated IV), a record moved to another id sharing its last
 * characters, a ciphertext changed: each refused and named, exit 5, the
 * rest applied. */
START_TEST(test_tampered_records_named)
{
    account();
    ck_assert_int_eq(
        run(NULL, 0,
            "echo '[{\"id\":\"{aaa-111}\",\"hostname\":\"https://1.example\",\"password\":\"p1\","
            "\"timePasswordChanged\":1},{\"id\":\"{bbb-222}\",\"hostname\":\"https://2.example\","
            "\"password\":\"p2\",\"timePasswordChanged\":2},{\"id\":\"{ccc-333}\",\"hostname\":"
            "\"https://3.example\",\"password\":\"p3\",\"timePasswordChanged\":3},{\"id\":"
            "\"{ddd-444}\",\"hostname\":\"https://4.example\",\"password\":\"p4\","
            "\"timePasswordChanged\":4}]' > f1/passwords.json && echo '[%s]' > f1/bookmarks.json",
            BM),
        0);
    json_decref(sync_json("s1", "f1", 0));
    char *p1 = db_payload("passwords", "{aaa-111}"), *p3 = db_payload("passwords", "{ccc-333}");
    char *t1 = tamper(p1, "IV", 0), *t3 = tamper(p3, "ciphertext", 5);
    db_set_payload("passwords", "{aaa-111}", t1);
    db_set_payload("passwords", "{ccc-333}", t3);
    db_rename("passwords", "{bbb-222}", "{xyz-222}");
    json_t *sum = sync_json("s2", "f2", 5);
    ck_assert_uint_eq(json_array_size(json_object_get(sum, "failed")), 3);
    ck_assert_str_eq(failure_reason(sum, "passwords", "{aaa-111}"), "hmac mismatch");
    ck_assert_str_eq(failure_reason(sum, "passwords", "{xyz-222}"), "hmac mismatch");
    ck_assert_str_eq(failure_reason(sum, "passwords", "{ccc-333}"), "hmac mismatch");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(sum, "message")), "integrity"));
    json_t *ps = json_object_get(json_object_get(sum, "collections"), "passwords");
    ck_assert_int_eq(json_integer_value(json_object_get(ps, "applied")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(sum, "collections"), "bookmarks"), "applied")),
                     1);
    json_decref(sum);
    /* the rest applied, the refused ones not */
    ck_assert_int_eq(run(NULL, 0, "grep -q 'ddd-444' f2/passwords.json && grep -q bm1_ f2/bookmarks.json"),
                     0);
    ck_assert_int_ne(run(NULL, 0, "grep -q -e aaa-111 -e 222 -e ccc-333 f2/passwords.json"), 0);
    /* on the terminal: one line per record, and exit 5 */
    char out[8192];
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 sync --store-dir f2 2>/dev/null"), 5);
    ck_assert_ptr_nonnull(strstr(out, "integrity: passwords/{aaa-111}: hmac mismatch"));
    ck_assert_ptr_nonnull(strstr(out, "integrity: passwords/{xyz-222}: hmac mismatch"));
    ck_assert_ptr_nonnull(strstr(out, "integrity: passwords/{ccc-333}: hmac mismatch"));
    free(p1);
    free(p3);
    free(t1);
    free(t3);
}
END_TEST

/* A password reset on s2: every class-B choice is kept, the dead class-B
 * records are gone from the server and nobody reports them; s1, which held
 * the old keys, is told to sign in again and uploads nothing. */
START_TEST(test_password_reset_keeps_class_b)
{
    account();
    ck_assert_int_eq(run(NULL, 0,
                         "echo '[%s]' > f1/bookmarks.json && echo '[{\"id\":\"{pw-1}\",\"hostname\":"
                         "\"https://1.example\",\"password\":\"p1\",\"timePasswordChanged\":1}]' > "
                         "f1/passwords.json",
                         BM),
                     0);
    json_decref(sync_json("s1", "f1", 0));
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q class set bookmarks B"), 0); /* the user's choice */
    json_decref(sync_json("s2", "f2", 0));
    ck_assert_int_eq(db_count("bookmarks", "B:2"), 1);
    /* s2 forgets the password and resets it */
    char code[64], out[16384];
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q password forgot --email a@x.org"), 0);
    ck_assert_int_eq(run(code, sizeof code,
                         "grep -h '^X-Recovery-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2 "
                         "| tail -1"),
                     0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(
        run(NULL, 0, "PICL_NEW_PASSWORD=password2 $P --state s2 -q password reset --code %s", code), 0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 sync --store-dir f2"), 0);
    ck_assert_ptr_nonnull(strstr(out, "Class B: [\"bookmarks\",\"passwords\"]"));
    json_t *m = server_map();
    ck_assert_str_eq(map_class(m, "bookmarks"), "B");
    ck_assert_str_eq(map_class(m, "passwords"), "B");
    ck_assert_str_eq(map_class(m, "history"), "A");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "epoch")), 2);
    json_decref(m);
    /* the dead records (old kB) are gone: only the new generations remain */
    ck_assert_int_eq(db_count("bookmarks", "B:2"), 0);
    ck_assert_int_eq(db_count("bookmarks", NULL), db_count("bookmarks", "B:3"));
    ck_assert_int_eq(db_count("bookmarks", "B:3"), 1);
    ck_assert_int_eq(db_count("passwords", "B:1"), 0);
    ck_assert_int_eq(db_count("passwords", NULL), db_count("passwords", "B:2"));
    /* s1 still holds the old keys: exit 3, sign in again, nothing uploaded */
    ck_assert_int_eq(run(NULL, 0,
                         "echo '[%s,{\"id\":\"bm9_________\",\"type\":\"bookmark\",\"parentid\":\"menu\","
                         "\"title\":\"Nine\"}]' > f1/bookmarks.json",
                         BM),
                     0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --store-dir f1 2>&1"), 3);
    ck_assert_ptr_nonnull(strstr(out, "sign in again"));
    ck_assert_ptr_null(db_payload("bookmarks", "bm9_________"));
    /* s1 signs in with the new password: its data goes up under the new
     * keys, nobody reports a failure, bookmarks stay in class B */
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD=password2 $P --state s1 -q login --email a@x.org"), 0);
    for (int round = 0; round < 2; round++) {
        const char *who[2][2] = {{"s1", "f1"}, {"s2", "f2"}};
        for (int i = 0; i < 2; i++) {
            json_t *sum = sync_json(who[i][0], who[i][1], 0);
            ck_assert_uint_eq(json_array_size(json_object_get(sum, "failed")), 0);
            json_decref(sum);
        }
    }
    ck_assert_int_eq(db_count("bookmarks", "B:3"), 2);
    ck_assert_int_eq(db_count("bookmarks", NULL), 2);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 class get bookmarks"), 0);
    ck_assert_str_eq(out, "B\n");
    ck_assert_int_eq(run(NULL, 0, "grep -q bm9_ f2/bookmarks.json && grep -q pw-1 f2/passwords.json"), 0);
}
END_TEST

/* The client side of GET/POST /v1/account/classmap against the keyserver:
 * the anchor starts empty, a higher version is registered, the same one
 * again is fine, another hmac for it or a lower version is 409/123 =
 * PICL_ERROR_CONFLICT. */
START_TEST(test_keyserver_client_anchor_calls)
{
    tu_nss_setup();
    tuks_srv ks;
    tuks_start(&ks, NULL);
    tuks_account(&ks, "k@x.org", "pw", 1, NULL);
    uint8_t kft[32], session[32];
    tuks_session(&ks, "k@x.org", "pw", kft, session);
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, ks.base), PICL_OK);
    picl_ksc_classmap a;
    ck_assert_int_eq(picl__ksc_classmap_get(c, session, &a), PICL_OK);
    ck_assert_uint_eq(a.version, 0);
    ck_assert_str_eq(a.hmac, "");
    ck_assert_uint_eq(a.current_epoch, 1);
    const char *h1 = "1111111111111111111111111111111111111111111111111111111111111111";
    const char *h2 = "2222222222222222222222222222222222222222222222222222222222222222";
    ck_assert_int_eq(picl__ksc_classmap_post(c, session, 1, h1), PICL_OK);
    ck_assert_int_eq(picl__ksc_classmap_post(c, session, 1, h1), PICL_OK); /* the same again */
    ck_assert_int_eq(picl__ksc_classmap_post(c, session, 1, h2), PICL_ERROR_CONFLICT);
    ck_assert_int_eq(picl__ksc_last(c)->errnum, 123);
    ck_assert_int_eq(picl__ksc_classmap_post(c, session, 3, h2), PICL_OK);
    ck_assert_int_eq(picl__ksc_classmap_post(c, session, 2, h1), PICL_ERROR_CONFLICT);
    ck_assert_int_eq(picl__ksc_classmap_post(c, session, 0, h1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__ksc_classmap_post(c, session, 4, "zz"), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__ksc_classmap_get(c, session, &a), PICL_OK);
    ck_assert_uint_eq(a.version, 3);
    ck_assert_str_eq(a.hmac, h2);
    ck_assert_uint_eq(a.epoch, 1);
    ck_assert_uint_eq(a.current_epoch, 1);
    /* another session's token is not this one: a wrong token is TOKEN */
    uint8_t bad[32];
    memset(bad, 0x42, sizeof bad);
    ck_assert_int_eq(picl__ksc_classmap_get(c, bad, &a), PICL_ERROR_TOKEN);
    ck_assert_uint_eq(a.version, 0);
    picl__ksc_free(c);
    tuks_stop(&ks);
    tu_nss_teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("classmap_anchor");
    TCase *tc = tcase_create("classmap_anchor");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_forged_map_refused);
    tcase_add_test(tc, test_replay_and_deletion_refused);
    tcase_add_test(tc, test_tampered_records_named);
    tcase_add_test(tc, test_password_reset_keeps_class_b);
    suite_add_tcase(s, tc);
    TCase *kc = tcase_create("keyserver_client");
    tcase_add_test(kc, test_keyserver_client_anchor_calls);
    suite_add_tcase(s, kc);
    return tu_run(s);
}
