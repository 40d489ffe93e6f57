/* SPDX-License-Identifier: MPL-2.0 */
/* test_mass_delete.c -- the mass-deletion guard over picl server: a sync that would delete more than half of a collection (and at least 20) changes nothing, exits 5 naming --allow-mass-delete and saves a restore point; with the flag it goes through, and picl restore to the restore point brings the records back on both devices; smaller deletions are never held. */
#include "testutil.h"
#include "testutil_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tucli T;

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)
#define SYNC(dev) "$P --state s" #dev " -q sync --store-dir f" #dev " --collections passwords"

static void setup(void)
{
    tucli_start(&T);
    char code[256];
    ck_assert_int_eq(run(NULL, 0, "$P --state s0 -q account create --server %s --email md@x.org", T.url), 0);
    ck_assert_int_eq(
        run(code, sizeof code, "grep -h '^X-Verify-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2"), 0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "$P --state s0 -q account verify --code %s", code), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s0 -q login --email md@x.org"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q login --server %s --email md@x.org", T.url), 0);
    ck_assert_int_eq(run(NULL, 0, "mkdir f0 f1 && echo '[]' > f1/passwords.json"), 0);
}

static void teardown(void) { tucli_stop(&T); }

/* f0/passwords.json := logins number from..to-1 */
static void write_logins(int from, int to)
{
    char path[700];
    snprintf(path, sizeof path, "%s/f0/passwords.json", T.dir);
    json_t *a = json_array();
    for (int i = from; i < to; i++) {
        char id[32], host[64];
        snprintf(id, sizeof id, "login%07d", i);
        snprintf(host, sizeof host, "https://%s.example", id);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "id", id, "hostname", host,
                                           "formSubmitURL", host, "username", "u", "password", "p",
                                           "timePasswordChanged", 1));
    }
    ck_assert_int_eq(json_dump_file(a, path, 0), 0);
    json_decref(a);
}

static size_t count(const char *dev)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s/passwords.json", T.dir, dev);
    json_t *a = json_load_file(path, 0, NULL);
    ck_assert(json_is_array(a));
    size_t n = json_array_size(a);
    json_decref(a);
    return n;
}

START_TEST(guard_both_ways)
{
    char out[4096];
    write_logins(0, 60);
    ck_assert_int_eq(run(NULL, 0, SYNC(0)), 0);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 60);
    /* 19 deletions: under the minimum, never held */
    write_logins(19, 60);
    ck_assert_int_eq(run(NULL, 0, SYNC(0)), 0);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 41);
    /* 21 of 41: more than half and at least 20 -> held, exit 5, nothing uploaded */
    write_logins(40, 60);
    ck_assert_int_eq(run(out, sizeof out, SYNC(0) " 2>&1"), 5);
    ck_assert_ptr_nonnull(strstr(out, "--allow-mass-delete"));
    ck_assert_ptr_nonnull(strstr(out, "21 of the 41"));
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 41); /* the other device lost nothing */
    ck_assert_uint_eq(count("f0"), 20); /* and the local file was not touched */
    /* the restore point was saved in the state */
    char rp[64];
    ck_assert_int_eq(run(rp, sizeof rp,
                         "python3 -c 'import json; print(json.load(open(\"s0/state.json\"))"
                         "[\"collections\"][\"passwords\"][\"restorePoint\"])'"),
                     0);
    rp[strcspn(rp, "\n")] = 0;
    ck_assert(strtod(rp, NULL) > 1e9);
    /* again without the flag: still held */
    ck_assert_int_eq(run(NULL, 0, SYNC(0) " 2>/dev/null"), 5);
    /* --json: the collection's status says held */
    ck_assert_int_eq(run(out, sizeof out, SYNC(0) " --json 2>/dev/null"), 5);
    ck_assert_ptr_nonnull(strstr(out, "\"status\":\"held\""));
    /* allowed: the deletions go through and the other device follows */
    ck_assert_int_eq(run(NULL, 0, SYNC(0) " --allow-mass-delete"), 0);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 20);
    ck_assert_uint_eq(count("f0"), 20);
    /* the restore point brings the 41 back on both devices */
    ck_assert_int_eq(
        run(out, sizeof out, "$P --state s0 restore passwords --as-of %s --yes --store-dir f0", rp), 0);
    ck_assert_ptr_nonnull(strstr(out, "21 brought back, 0 deleted"));
    ck_assert_uint_eq(count("f0"), 41);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 41);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mass_delete");
    TCase *tc = tcase_create("guard");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, guard_both_ways);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
