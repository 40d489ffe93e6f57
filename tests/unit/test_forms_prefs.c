/* SPDX-License-Identifier: MPL-2.0 */
/* test_forms_prefs.c -- form history and preferences between two Firefox
 * profiles made, edited and read back by firefox-esr (FormHistory, the
 * preference service): round trips both ways with deletions, preferences
 * not on Firefox's allow-list refused with nothing changed, both collections
 * moved to class B and back, and a running browser's profile left alone. */
#include "testutil.h"
#include "testutil_cli.h"
#include "testutil_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tucli T;
#define dir (T.dir)
#define url (T.url)

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)
#define FP                                                                                                   \
    "firefox-esr --xpcshell -g /usr/lib/firefox-esr -a /usr/lib/firefox-esr/browser "                        \
    "$PICL_SRCDIR/tests/xpcshell/forms_prefs.js"
#define PREFS_ID "ZWM4MDMwZjctYzIwYS00NjRmLTliMGUtMTNhM2E5ZTk3Mzg0"
#define SESSION                                                                                              \
    "firefox-esr --xpcshell -g /usr/lib/firefox-esr -a /usr/lib/firefox-esr/browser "                        \
    "$PICL_SRCDIR/tests/xpcshell/write_session.js"

static void setup(void)
{
    tucli_start(&T);
    ck_assert_msg(run(NULL, 0, "command -v firefox-esr >/dev/null") == 0, "firefox-esr is missing");
}

static void teardown(void) { tucli_stop(&T); }

static void account(void)
{
    char code[256];
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account create --server %s --email f@x.org", url), 0);
    ck_assert_int_eq(
        run(code, sizeof code, "grep -h '^X-Verify-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2"), 0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account verify --code %s", code), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q login --email f@x.org"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q login --server %s --email f@x.org", url), 0);
}

/* Form history of profile p as Firefox reads it: "name=value" lines, sorted. */
static void forms_of(const char *p, char *out, size_t cap)
{
    ck_assert_int_eq(run(NULL, 0, FP " $PWD/%s forms-dump $PWD/%s-forms.json >/dev/null 2>&1", p, p), 0);
    ck_assert_int_eq(run(out, cap,
                         "python3 -c \"import json; [print(r['fieldname'] + '=' + r['value']) for r in "
                         "json.load(open('%s-forms.json'))]\"",
                         p),
                     0);
}

/* Preferences of profile p as Firefox reads them: compact JSON. */
static json_t *prefs_of(const char *p)
{
    char path[256];
    ck_assert_int_eq(run(NULL, 0,
                         FP " $PWD/%s prefs-dump $PWD/%s-prefs.json browser.tabs.warnOnClose "
                            "browser.tabs.loadInBackground layout.spellcheckDefault intl.accept_languages "
                            "browser.download.dir "
                            "network.proxy.http services.sync.prefs.sync.browser.download.dir "
                            "browser.startup.homepage >/dev/null 2>&1",
                         p, p),
                     0);
    snprintf(path, sizeof path, "%s/%s-prefs.json", dir, p);
    json_t *j = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(j);
    return j;
}

static void sync_both(const char *colls)
{
    ck_assert_int_eq(run(NULL, 0,
                         "$P --state s1 -q sync --profile p1 --collections %s && "
                         "$P --state s2 -q sync --profile p2 --collections %s && "
                         "$P --state s1 -q sync --profile p1 --collections %s",
                         colls, colls, colls),
                     0);
}

START_TEST(test_forms_round_trip)
{
    char a[4096], b[4096];
    account();
    ck_assert_int_eq(
        run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1 && $MKP --dump $PWD/p2 $PWD/e.json >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0,
                         FP " $PWD/p1 forms-add email a@b.org q 'hello world' q 'caf%%C3%%A9 %%22x%%22' "
                            ">/dev/null 2>&1"),
                     0);
    ck_assert_int_eq(run(NULL, 0, FP " $PWD/p2 forms-add city Paris >/dev/null 2>&1"), 0);
    sync_both("forms");
    forms_of("p1", a, sizeof a);
    forms_of("p2", b, sizeof b);
    ck_assert_str_eq(a, "city=Paris\nemail=a@b.org\nq=caf\xc3\xa9 \"x\"\nq=hello world\n");
    ck_assert_str_eq(a, b);
    /* the same guids on both sides */
    ck_assert_int_eq(run(NULL, 0, "cmp -s p1-forms.json p2-forms.json"), 0);
    /* deleted in the browser on profile 2, gone from profile 1; an entry
     * added on profile 1 meanwhile arrives on profile 2 */
    ck_assert_int_eq(run(NULL, 0, FP " $PWD/p2 forms-remove q 'hello world' >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, FP " $PWD/p1 forms-add zip 75001 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0,
                         "$P --state s2 -q sync --profile p2 --collections forms && "
                         "$P --state s1 -q sync --profile p1 --collections forms && "
                         "$P --state s2 -q sync --profile p2 --collections forms"),
                     0);
    forms_of("p1", a, sizeof a);
    forms_of("p2", b, sizeof b);
    ck_assert_str_eq(a, "city=Paris\nemail=a@b.org\nq=caf\xc3\xa9 \"x\"\nzip=75001\n");
    ck_assert_str_eq(a, b);

    /* class B and back: the entries follow, new ones too */
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q class set forms %s", round ? "A" : "B"), 0);
        ck_assert_int_eq(run(NULL, 0, FP " $PWD/p1 forms-add round%d yes >/dev/null 2>&1", round), 0);
        sync_both("forms");
        forms_of("p2", b, sizeof b);
        char want[32];
        snprintf(want, sizeof want, "round%d=yes\n", round);
        ck_assert_msg(strstr(b, want) != NULL, "round %d: %s", round, b);
        forms_of("p1", a, sizeof a);
        ck_assert_str_eq(a, b);
        ck_assert_int_eq(run(a, sizeof a, "$P --state s2 class get forms"), 0);
        ck_assert_str_eq(a, round ? "A\n" : "B\n");
    }
}
END_TEST

START_TEST(test_prefs_round_trip_and_refusals)
{
    char out[16384];
    account();
    ck_assert_int_eq(
        run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1 && $MKP --dump $PWD/p2 $PWD/e.json >/dev/null 2>&1"), 0);
    /* set in the browser on profile 1: three synced preferences and one that never is */
    ck_assert_int_eq(run(NULL, 0,
                         FP " $PWD/p1 prefs-set browser.tabs.warnOnClose bool true layout.spellcheckDefault "
                            "int 2 intl.accept_languages string 'fr, en-\"US\"' browser.download.dir string "
                            "/home/u/dl >/dev/null 2>&1"),
                     0);
    ck_assert_int_eq(
        run(NULL, 0, FP " $PWD/p2 prefs-set browser.download.dir string /home/other >/dev/null 2>&1"), 0);
    sync_both("prefs");
    json_t *p2 = prefs_of("p2");
    ck_assert(json_is_true(json_object_get(p2, "browser.tabs.warnOnClose")));
    ck_assert_int_eq(json_integer_value(json_object_get(p2, "layout.spellcheckDefault")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(p2, "intl.accept_languages")), "fr, en-\"US\"");
    ck_assert_str_eq(json_string_value(json_object_get(p2, "browser.download.dir")),
                     "/home/other"); /* its own */
    json_decref(p2);

    /* a device (here a store directory) puts preferences that are not on
     * the allow-list into the record: refused one by one, never written;
     * the allowed one in the same record is applied */
    ck_assert_int_eq(run(NULL, 0, "$P --state s3 -q login --server %s --email f@x.org", url), 0);
    ck_assert_int_eq(run(NULL, 0, "mkdir st3 && $P --state s3 -q sync --store-dir st3 --collections prefs"),
                     0);
    ck_assert_int_eq(run(NULL, 0,
                         "python3 -c \"import json; a = json.load(open('st3/prefs.json')); "
                         "v = a[0]['value']; v.update({'browser.download.dir': '/tmp/evil', "
                         "'network.proxy.http': 'evil.example', "
                         "'services.sync.prefs.sync.browser.download.dir': True, "
                         "'browser.startup.homepage': 'https://evil.example/', "
                         "'browser.tabs.loadInBackground': False, 'layout.spellcheckDefault': 'two'}); "
                         "json.dump(a, open('st3/prefs.json', 'w'))\""),
                     0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s3 -q sync --store-dir st3 --collections prefs"), 0);
    /* profile 2's own control prefs name the path and the server: still never applied */
    ck_assert_int_eq(run(NULL, 0,
                         FP " $PWD/p2 prefs-set services.sync.prefs.sync.browser.download.dir bool true "
                            "services.sync.prefs.sync.network.proxy.http bool true >/dev/null 2>&1"),
                     0);
    ck_assert_int_eq(run(NULL, 0, "cp p2/prefs.js p2-prefs-before.js"), 0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 sync --profile p2 --collections prefs 2>/dev/null"),
                     0);
    static const char *const refused[] = {"browser.download.dir", "network.proxy.http",
                                          "services.sync.prefs.sync.browser.download.dir",
                                          "browser.startup.homepage"};
    for (size_t i = 0; i < 4; i++) {
        char want[128];
        snprintf(want, sizeof want, "refused pref: %s: not a preference Firefox syncs", refused[i]);
        ck_assert_msg(strstr(out, want) != NULL, "%s not refused: %s", refused[i], out);
    }
    ck_assert_ptr_nonnull(strstr(out, "refused pref: layout.spellcheckDefault: a value of another type"));
    p2 = prefs_of("p2");
    ck_assert(json_is_false(json_object_get(p2, "browser.tabs.loadInBackground"))); /* allowed: applied */
    ck_assert_int_eq(json_integer_value(json_object_get(p2, "layout.spellcheckDefault")), 2); /* kept */
    ck_assert_str_eq(json_string_value(json_object_get(p2, "browser.download.dir")), "/home/other");
    ck_assert(json_is_null(json_object_get(p2, "network.proxy.http")));
    ck_assert(
        json_is_true(json_object_get(p2, "services.sync.prefs.sync.browser.download.dir"))); /* p2's own */
    ck_assert(json_is_null(json_object_get(p2, "browser.startup.homepage")));
    json_decref(p2);
    /* prefs.js changed by exactly one line */
    ck_assert_int_eq(run(out, sizeof out, "diff p2-prefs-before.js p2/prefs.js | grep '^[<>]'"), 0);
    ck_assert_str_eq(out, "> user_pref(\"browser.tabs.loadInBackground\", false);\n");

    /* class B and back */
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q class set prefs %s", round ? "A" : "B"), 0);
        ck_assert_int_eq(
            run(NULL, 0, FP " $PWD/p1 prefs-set layout.spellcheckDefault int %d >/dev/null 2>&1", round * 3),
            0);
        /* a change made while the server's copy changed too (round 0: the
         * store directory's record wins, round 1: the copy the move
         * re-encrypted, which is kept off) goes up at the next sync */
        ck_assert_int_eq(run(NULL, 0,
                             "$P --state s1 -q sync --profile p1 --collections prefs && "
                             "$P --state s1 -q sync --profile p1 --collections prefs && "
                             "$P --state s2 -q sync --profile p2 --collections prefs"),
                         0);
        p2 = prefs_of("p2");
        ck_assert_int_eq(json_integer_value(json_object_get(p2, "layout.spellcheckDefault")), round * 3);
        ck_assert_int_eq(run(out, sizeof out, "$P --state s2 class get prefs"), 0);
        ck_assert_str_eq(out, round ? "A\n" : "B\n");
        json_decref(p2);
    }
}
END_TEST

/* The class map on the storage server and the version the keyserver anchors. */
static json_t *map_and_anchor(long long *anchored)
{
    char out[8192];
    ck_assert_int_eq(run(out, sizeof out, "sqlite3 data/keyserver.db 'SELECT cm_version FROM accounts'"), 0);
    *anchored = strtoll(out, NULL, 10);
    ck_assert_int_eq(run(out, sizeof out,
                         "sqlite3 data/storage.db \"SELECT payload FROM bsos WHERE coll = 'meta' "
                         "AND id = 'classes'\""),
                     0);
    json_t *m = json_loads(out, 0, NULL);
    ck_assert_msg(json_is_object(json_object_get(m, "collections")), "meta/classes: %s", out);
    return m;
}

static const char *class_of(json_t *map, const char *c)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(map, "collections"), c), "class"));
}

/* A profile synced before issue 18 (the old default: bookmarks, history,
 * passwords) syncs clients, tabs and prefs by default from then on, added
 * to the class map as class A, all three in one new version the keyserver
 * anchors;
 * forms is skipped, and said so, while the profile has no form history, and
 * joins once it has one.  A store directory's default is unchanged. */
START_TEST(test_new_collections_by_default)
{
    char out[16384];
    long long anchored;
    account();
    ck_assert_int_eq(run(NULL, 0,
                         "$MKP $PWD/p1 >/dev/null 2>&1 && " SESSION " $PWD/p1 sessionstore.jsonlz4 "
                         "'https://a.example/one|One' >/dev/null 2>&1"),
                     0);
    ck_assert_int_eq(run(NULL, 0, FP " $PWD/p1 prefs-set browser.tabs.warnOnClose bool true >/dev/null 2>&1"),
                     0);
    ck_assert_int_eq(run(NULL, 0, "test ! -e p1/formhistory.sqlite"), 0);
    ck_assert_int_eq(
        run(NULL, 0, "$P --state s1 -q sync --profile p1 --collections bookmarks,history,passwords"), 0);
    json_t *m = map_and_anchor(&anchored);
    long long v0 = json_integer_value(json_object_get(m, "version"));
    ck_assert_int_eq(anchored, v0);
    ck_assert_ptr_null(class_of(m, "tabs"));
    json_decref(m);

    /* the next plain sync: the new collections go up, forms is skipped with a reason */
    ck_assert_int_eq(run(out, sizeof out, "PICL_DEVICE_NAME=laptop $P --state s1 sync --profile p1 --json"),
                     0);
    json_t *sum = json_loads(out, 0, NULL);
    json_t *cols = json_object_get(sum, "collections");
    ck_assert_msg(sum != NULL, "%s", out);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(cols, "clients"), "uploaded")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(cols, "tabs"), "uploaded")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(cols, "prefs"), "uploaded")), 1);
    ck_assert_ptr_null(json_object_get(cols, "forms"));
    json_t *sk = json_object_get(sum, "skipped");
    ck_assert_uint_eq(json_array_size(sk), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(sk, 0), "collection")), "forms");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(sk, 0), "reason")),
                                 "formhistory.sqlite does not exist"));
    json_decref(sum);
    m = map_and_anchor(&anchored);
    ck_assert_int_eq(json_integer_value(json_object_get(m, "version")),
                     v0 + 1); /* the three in one version */
    ck_assert_int_eq(anchored, v0 + 1);
    ck_assert_str_eq(class_of(m, "clients"), "A");
    ck_assert_str_eq(class_of(m, "tabs"), "A");
    ck_assert_str_eq(class_of(m, "prefs"), "A");
    ck_assert_str_eq(class_of(m, "passwords"), "B");
    ck_assert_ptr_null(class_of(m, "forms"));
    json_decref(m);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1"), 0);
    ck_assert_ptr_nonnull(strstr(out, "skipped forms: "));

    /* the other device (a store directory: its default is as before) sees the tabs and the prefs */
    ck_assert_int_eq(
        run(NULL, 0, "mkdir st2 && $P --state s2 -q sync --store-dir st2 --collections clients,prefs"), 0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 tabs"), 0);
    ck_assert_msg(strstr(out, "laptop (") && strstr(out, "    https://a.example/one\n"), "%s", out);
    ck_assert_int_eq(run(NULL, 0, "grep -q '\"browser.tabs.warnOnClose\": *true' st2/prefs.json"), 0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 sync --store-dir st2 --json"), 0);
    sum = json_loads(out, 0, NULL);
    ck_assert_ptr_null(json_object_get(json_object_get(sum, "collections"), "tabs"));
    json_decref(sum);

    /* a form filled in: forms joins at the next plain sync */
    ck_assert_int_eq(run(NULL, 0, FP " $PWD/p1 forms-add email a@b.org >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --json"), 0);
    sum = json_loads(out, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(sum, "collections"), "forms"), "uploaded")),
                     1);
    ck_assert_ptr_null(json_object_get(sum, "skipped"));
    json_decref(sum);
    m = map_and_anchor(&anchored);
    ck_assert_int_eq(json_integer_value(json_object_get(m, "version")), v0 + 2);
    ck_assert_int_eq(anchored, v0 + 2);
    ck_assert_str_eq(class_of(m, "forms"), "A");
    json_decref(m);
}
END_TEST

/* Firefox running on the profile: forms and prefs refuse, no byte changes. */
START_TEST(test_running_browser)
{
    char out[4096];
    account();
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, FP " $PWD/p1 forms-add email a@b.org >/dev/null 2>&1"), 0);
    char p1[256];
    snprintf(p1, sizeof p1, "%s/p1", dir);
    pid_t holder = tup_hold_lock(p1);
    uint64_t before = tup_dir_digest(p1);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections forms,prefs 2>&1"),
                     6);
    ck_assert_ptr_nonnull(strstr(out, "Firefox is running on"));
    tup_release_lock(holder);
    ck_assert_uint_eq(tup_dir_digest(p1), before);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("forms_prefs");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_forms_round_trip);
    tcase_add_test(tc, test_prefs_round_trip_and_refusals);
    tcase_add_test(tc, test_running_browser);
    tcase_add_test(tc, test_new_collections_by_default);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
