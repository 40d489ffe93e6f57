/* SPDX-License-Identifier: MPL-2.0 */
/* test_profile_sync.c -- real Firefox profiles (made, edited and read back by
 * firefox-esr itself) synced with `picl sync --profile` through picl server:
 * profile 1 -> server -> empty profile 2 equal as Firefox sees them, edits
 * travel both ways, and every bad profile is a clear error with no byte of it
 * changed. */
#include "testutil.h"
#include "testutil_cli.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static tucli T;
#define dir (T.dir)
#define url (T.url)
#define picl (T.picl)

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)

static void setup(void)
{
    tucli_start(&T);
    /* the browser must be here: bootstrap installs it */
    ck_assert_msg(run(NULL, 0, "command -v firefox-esr >/dev/null") == 0, "firefox-esr is missing");
}

static void teardown(void) { tucli_stop(&T); }

static void account(const char *email)
{
    char code[256];
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account create --server %s --email %s", url, email), 0);
    ck_assert_int_eq(
        run(code, sizeof code, "grep -h '^X-Verify-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2"), 0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account verify --code %s", code), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q login --email %s", email), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q login --server %s --email %s", url, email), 0);
}

START_TEST(test_profile_to_profile_and_back)
{
    char out[16384];
    account("p@x.org");
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, "$MKP --dump $PWD/p2 $PWD/empty.json >/dev/null 2>&1"),
                     0); /* a new, empty profile */
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --json"), 0);
    json_t *sum = json_loads(out, 0, NULL);
    ck_assert_ptr_nonnull(sum);
    json_t *cols = json_object_get(sum, "collections");
    ck_assert_int_gt(json_integer_value(json_object_get(json_object_get(cols, "bookmarks"), "uploaded")), 5);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(cols, "passwords"), "uploaded")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(cols, "history"), "uploaded")), 3);
    json_decref(sum);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --profile p2"), 0);
    /* Firefox opens profile 2 and sees what it saw in profile 1 */
    ck_assert_int_eq(run(NULL, 0,
                         "$MKP --dump $PWD/p1 $PWD/d1.json >/dev/null 2>&1 && $MKP --dump $PWD/p2 "
                         "$PWD/d2.json >/dev/null 2>&1"),
                     0);
    int rc = run(out, sizeof out, "python3 $CMP d1.json d2.json");
    ck_assert_msg(rc == 0, "profiles differ after the first sync:\n%s", out);
    ck_assert_ptr_nonnull(strstr(out, "0 differences"));
    ck_assert_ptr_null(strstr(out, " 0 logins"));
    /* edits in the browser on profile 2 travel to profile 1 */
    ck_assert_int_eq(run(NULL, 0, "$MKP --edit $PWD/p2 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --profile p2 && $P --state s1 -q sync --profile p1"),
                     0);
    ck_assert_int_eq(run(NULL, 0,
                         "$MKP --dump $PWD/p1 $PWD/d1.json >/dev/null 2>&1 && $MKP --dump $PWD/p2 "
                         "$PWD/d2.json >/dev/null 2>&1"),
                     0);
    rc = run(out, sizeof out, "python3 $CMP d1.json d2.json");
    ck_assert_msg(rc == 0, "profiles differ after the edits on profile 2:\n%s", out);
    ck_assert_int_eq(run(out, sizeof out, "grep -c 'new-hunter3\\|Added later\\|New page' d1.json"), 0);
    ck_assert_int_eq(strtol(out, NULL, 10), 3);
    ck_assert_int_eq(run(NULL, 0, "! grep -q bmkToolbar01 d1.json"), 0); /* the deletion too */
    /* and the other way: edits on profile 1 reach profile 2 */
    ck_assert_int_eq(run(NULL, 0, "$MKP --edit $PWD/p1 2 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --profile p1 && $P --state s2 -q sync --profile p2"),
                     0);
    ck_assert_int_eq(run(NULL, 0,
                         "$MKP --dump $PWD/p1 $PWD/d1.json >/dev/null 2>&1 && $MKP --dump $PWD/p2 "
                         "$PWD/d2.json >/dev/null 2>&1"),
                     0);
    rc = run(out, sizeof out, "python3 $CMP d1.json d2.json");
    ck_assert_msg(rc == 0, "profiles differ after the edits on profile 1:\n%s", out);
    ck_assert_int_eq(
        run(out, sizeof out, "grep -c 'changed-again\\|Added on the other device\\|New page 2' d2.json"), 0);
    ck_assert_int_eq(strtol(out, NULL, 10), 3);
    ck_assert_int_eq(run(NULL, 0, "! grep -q bmkUnfiled01 d2.json"), 0);
}
END_TEST

/* summary.collections.passwords[key] of a `sync --json` output */
static long long pw_count(const char *out, const char *key)
{
    json_t *sum = json_loads(out, 0, NULL);
    ck_assert_msg(sum != NULL, "not a JSON summary: %s", out);
    json_t *v = json_object_get(json_object_get(json_object_get(sum, "collections"), "passwords"), key);
    ck_assert_msg(json_is_integer(v), "no passwords.%s in %s", key, out);
    long long n = json_integer_value(v);
    json_decref(sum);
    return n;
}

/* Logins deleted in the browser (Services.logins.removeLoginAsync) are
 * deleted on the other profile, both ways, and never come back. */
START_TEST(test_login_deletions_both_ways)
{
    char out[16384];
    account("del@x.org");
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, "$MKP --dump $PWD/p2 $PWD/empty.json >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --profile p1 && $P --state s2 -q sync --profile p2"),
                     0);
    ck_assert_int_eq(run(NULL, 0, "$MKP --dump $PWD/p2 $PWD/d2.json >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, "grep -q hunter2 d2.json"), 0); /* bob's login reached p2 */
    /* the user deletes bob in Firefox on profile 1: a tombstone in logins.json */
    ck_assert_int_eq(run(NULL, 0, "$MKP --edit $PWD/p1 remove-login bob >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(out, sizeof out,
                         "python3 -c 'import json; l=json.load(open(\"p1/logins.json\"))[\"logins\"]; "
                         "print(sum(1 for e in l if e.get(\"deleted\")))'"),
                     0);
    ck_assert_int_eq(strtol(out, NULL, 10), 1);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --json --collections passwords"),
                     0);
    ck_assert_int_eq(pw_count(out, "uploaded"), 1);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 sync --profile p2 --json --collections passwords"),
                     0);
    ck_assert_int_eq(pw_count(out, "applied"), 1);
    ck_assert_int_eq(pw_count(out, "uploaded"), 0);
    /* Firefox reading profile 2: bob is gone, alice is there, nothing to upload */
    ck_assert_int_eq(run(NULL, 0, "$MKP --dump $PWD/p2 $PWD/d2.json >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(out, sizeof out,
                         "python3 -c 'import json; d=json.load(open(\"d2.json\")); "
                         "print(sorted(l[\"username\"] for l in d[\"logins\"]), "
                         "sorted((s[\"deleted\"], s[\"syncCounter\"]) for s in d[\"loginsSync\"]))'"),
                     0);
    ck_assert_str_eq(out, "['alice@example.com'] [(False, 0), (True, 0)]\n");
    /* the other way: alice deleted in Firefox on profile 2 */
    ck_assert_int_eq(run(NULL, 0, "$MKP --edit $PWD/p2 remove-login alice@example.com >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 sync --profile p2 --json --collections passwords"),
                     0);
    ck_assert_int_eq(pw_count(out, "uploaded"), 1);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --json --collections passwords"),
                     0);
    ck_assert_int_eq(pw_count(out, "applied"), 1);
    ck_assert_int_eq(run(NULL, 0,
                         "$MKP --dump $PWD/p1 $PWD/d1.json >/dev/null 2>&1 && $MKP --dump $PWD/p2 "
                         "$PWD/d2.json >/dev/null 2>&1"),
                     0);
    int rc = run(out, sizeof out, "python3 $CMP d1.json d2.json");
    ck_assert_msg(rc == 0, "profiles differ after the deletions:\n%s", out);
    ck_assert_ptr_nonnull(strstr(out, "0 differences"));
    ck_assert_ptr_nonnull(strstr(out, " 0 logins"));
    /* and nothing comes back: no more uploads either side */
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --json --collections passwords"),
                     0);
    ck_assert_int_eq(pw_count(out, "uploaded"), 0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 sync --profile p2 --json --collections passwords"),
                     0);
    ck_assert_int_eq(pw_count(out, "uploaded"), 0);
    ck_assert_int_eq(pw_count(out, "applied"), 0);
    /* a saved login this profile cannot decrypt: said, kept as it is, not uploaded */
    ck_assert_int_eq(
        run(NULL, 0,
            "python3 -c 'import json; d=json.load(open(\"p1/logins.json\")); "
            "d[\"logins\"].append({\"id\": 99, \"guid\": \"{unreadable-1}\", "
            "\"hostname\": \"https://u.example\", \"httpRealm\": \"R\", "
            "\"encryptedUsername\": \"bm90IGEgYmxvYg==\", \"encryptedPassword\": \"bm90IGEgYmxvYg==\"}); "
            "json.dump(d, open(\"p1/logins.json\", \"w\"))' && sha256sum p1/logins.json > lj.sum"),
        0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --json --collections passwords"),
                     0);
    ck_assert_int_eq(pw_count(out, "unreadable"), 1);
    ck_assert_int_eq(pw_count(out, "uploaded"), 0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections passwords"), 0);
    ck_assert_ptr_nonnull(strstr(out, "1 saved login(s) cannot be decrypted"));
    ck_assert_int_eq(run(NULL, 0, "sha256sum -c lj.sum >/dev/null"), 0);
}
END_TEST

/* sha256 of every file of a profile (sorted), to prove nothing changed */
#define HASH "find %s -type f | sort | xargs sha256sum | sha256sum"

static void expect_refused(const char *what, const char *profile, int want_rc, const char *want_msg)
{
    char before[256], after[256], out[4096];
    ck_assert_int_eq(run(before, sizeof before, HASH, profile), 0);
    int rc = run(out, sizeof out, "$P --state s1 sync --profile %s 2>&1", profile);
    ck_assert_msg(rc == want_rc, "%s: exit %d, want %d (%s)", what, rc, want_rc, out);
    ck_assert_msg(strstr(out, want_msg) != NULL, "%s: message '%s' lacks '%s'", what, out, want_msg);
    ck_assert_int_eq(run(after, sizeof after, HASH, profile), 0);
    ck_assert_msg(!strcmp(before, after), "%s: the profile was changed", what);
}

START_TEST(test_bad_profiles)
{
    char out[4096];
    account("bad@x.org");
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile nonexistent 2>&1"), 6);
    ck_assert_ptr_nonnull(strstr(out, "profile directory nonexistent does not exist"));
    ck_assert_int_eq(run(NULL, 0, "mkdir notprofile && echo hello > notprofile/readme.txt"), 0);
    expect_refused("not a profile", "notprofile", 2, "profile");
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/good >/dev/null 2>&1"), 0);
    /* a running Firefox holds the fcntl lock on .parentlock */
    ck_assert_int_eq(
        run(NULL, 0,
            "(python3 -c 'import fcntl,time,sys; f=open(\"good/.parentlock\",\"a\"); "
            "fcntl.lockf(f, fcntl.LOCK_EX); print(\"locked\", flush=True); time.sleep(20)' "
            "> lock.out & echo $! > lock.pid) && for i in $(seq 50); do grep -q locked lock.out && break; "
            "sleep 0.1; done; grep -q locked lock.out"),
        0);
    expect_refused("locked", "good", 6, "running");
    ck_assert_int_eq(run(NULL, 0, "kill $(cat lock.pid) && sleep 0.3"), 0);
    /* corrupt logins.json */
    ck_assert_int_eq(run(NULL, 0, "cp -a good corrupt && printf '{\"logins\": [' > corrupt/logins.json"), 0);
    expect_refused("corrupt logins.json", "corrupt", 6, "logins.json");
    /* places.sqlite of an unknown schema version */
    ck_assert_int_eq(
        run(NULL, 0, "cp -a good schema && sqlite3 schema/places.sqlite 'PRAGMA user_version = 999'"), 0);
    expect_refused("unknown schema", "schema", 6, "schema");
    /* a primary password set and not given */
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/primary 'my primary' >/dev/null 2>&1"), 0);
    expect_refused("primary password", "primary", 3, "primary password");
    char out2[4096];
    ck_assert_int_eq(
        run(out2, sizeof out2, "PICL_PRIMARY_PASSWORD=wrong $P --state s1 sync --profile primary 2>&1"), 3);
    /* with the right one, the logins are read and uploaded */
    ck_assert_int_eq(run(out2, sizeof out2,
                         "echo 'my primary' > pp && $P --state s1 sync --profile primary "
                         "--primary-password-file pp --json"),
                     0);
    json_t *sum = json_loads(out2, 0, NULL);
    ck_assert_ptr_nonnull(sum);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(sum, "collections"), "passwords"), "uploaded")),
                     2);
    json_decref(sum);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("profile_sync");
    TCase *tc = tcase_create("profile_sync");
    tcase_set_timeout(tc, 240);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_profile_to_profile_and_back);
    tcase_add_test(tc, test_bad_profiles);
    tcase_add_test(tc, test_login_deletions_both_ways);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
