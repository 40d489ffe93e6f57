/* SPDX-License-Identifier: MPL-2.0 */
/* test_restore.c -- the undo extension: the storage server keeps previous versions (as_of listings, counted in the quota and given way when over it, pruned, gone with the user's data, off with --restore-days 0: nothing kept, as_of refused), `picl server --restore-days N` (0 = off and refused, 7 advertised and honoured, bad values a usage error), and over picl server `picl restore bookmarks --as-of T` brings 1 000 bookmarks deleted by a sync back on both devices (a preview answered "no" changes nothing; a time before the server's window or a server without history is refused). */
#include "testutil.h"
#include "testutil_cli.h"
#include "storage_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static tucli T;

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)
#define SYNC(dev) "$P --state s" #dev " -q sync --store-dir f" #dev " --collections bookmarks"

/* picl server (with extra arguments, may be NULL), an account, devices 0 and 1. */
static void setup_with(const char *const *extra)
{
    tucli_start_with(&T, extra);
    char code[256];
    ck_assert_int_eq(run(NULL, 0, "$P --state s0 -q account create --server %s --email rs@x.org", T.url), 0);
    ck_assert_int_eq(
        run(code, sizeof code, "grep -h '^X-Verify-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2"), 0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "$P --state s0 -q account verify --code %s", code), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s0 -q login --email rs@x.org"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q login --server %s --email rs@x.org", T.url), 0);
    ck_assert_int_eq(run(NULL, 0, "mkdir f0 f1 && echo '[]' > f1/bookmarks.json"), 0);
}

static void setup(void) { setup_with(NULL); }

static void teardown(void) { tucli_stop(&T); }

static void write_bookmarks(int n)
{
    char path[700];
    snprintf(path, sizeof path, "%s/f0/bookmarks.json", T.dir);
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        char id[32], uri[64], title[32];
        snprintf(id, sizeof id, "bmk%09d", i);
        snprintf(uri, sizeof uri, "https://site%d.example/", i);
        snprintf(title, sizeof title, "Site %d", i);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", id, "type", "bookmark",
                                           "parentid", "unfiled", "parentName", "Other Bookmarks", "title",
                                           title, "bmkUri", uri));
    }
    ck_assert_int_eq(json_dump_file(a, path, 0), 0);
    json_decref(a);
}

/* The bookmark ids (bmk...) in DEV/bookmarks.json, and that each has its title. */
static size_t count(const char *dev)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s/bookmarks.json", T.dir, dev);
    json_t *a = json_load_file(path, 0, NULL);
    ck_assert(json_is_array(a));
    size_t n = 0, i;
    json_t *r;
    json_array_foreach (a, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        if (id && !strncmp(id, "bmk", 3) && !json_is_true(json_object_get(r, "deleted"))) {
            char want[32];
            snprintf(want, sizeof want, "Site %ld", strtol(id + 3, NULL, 10));
            ck_assert_str_eq(json_string_value(json_object_get(r, "title")), want);
            n++;
        }
    }
    json_decref(a);
    return n;
}

START_TEST(restore_1000_bookmarks_on_two_devices)
{
    char out[8192];
    write_bookmarks(1000);
    ck_assert_int_eq(run(NULL, 0, SYNC(0)), 0);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 1000);
    /* T: after the upload (whole seconds), before the deletion */
    char t[32];
    sleep(1);
    snprintf(t, sizeof t, "%lld", (long long)time(NULL));
    sleep(1);
    /* every bookmark deleted on device 0, let through, and device 1 follows */
    ck_assert_int_eq(run(NULL, 0, "echo '[]' > f0/bookmarks.json"), 0);
    ck_assert_int_eq(run(NULL, 0, SYNC(0) " 2>/dev/null"), 5); /* the guard first */
    ck_assert_int_eq(run(NULL, 0, SYNC(0) " --allow-mass-delete"), 0);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 0);
    ck_assert_uint_eq(count("f0"), 0);
    /* a preview answered "no" changes nothing */
    ck_assert_int_eq(
        run(out, sizeof out, "echo n | $P --state s0 restore bookmarks --as-of %s --store-dir f0", t), 1);
    ck_assert_ptr_nonnull(strstr(out, "1000 record(s) to bring back, 0 record(s) made since to delete"));
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 0);
    ck_assert_uint_eq(count("f0"), 0);
    /* the restore, in ISO 8601 UTC */
    char iso[40];
    time_t tt = (time_t)strtoll(t, NULL, 10);
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
    ck_assert_int_eq(
        run(out, sizeof out, "$P --state s0 restore bookmarks --as-of %s --yes --store-dir f0", iso), 0);
    ck_assert_ptr_nonnull(strstr(out, "1000 brought back, 0 deleted"));
    ck_assert_uint_eq(count("f0"), 1000);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 1000);
    /* nothing left to restore afterwards */
    ck_assert_int_eq(
        run(out, sizeof out, "$P --state s0 restore bookmarks --as-of %s --yes --store-dir f0", t), 0);
    ck_assert_ptr_nonnull(strstr(out, "nothing to restore"));
}
END_TEST

START_TEST(restore_refusals)
{
    char out[4096];
    write_bookmarks(3);
    ck_assert_int_eq(run(NULL, 0, SYNC(0)), 0);
    /* 40 days ago: older than the server keeps (30) */
    ck_assert_int_eq(run(out, sizeof out,
                         "$P --state s0 restore bookmarks --as-of %lld --yes --store-dir f0 2>&1",
                         (long long)time(NULL) - 40 * 86400),
                     1);
    ck_assert_ptr_nonnull(strstr(out, "30 days only"));
    /* not a time */
    ck_assert_int_eq(
        run(out, sizeof out, "$P --state s0 restore bookmarks --as-of yesterday --store-dir f0 2>&1"), 2);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s0 restore bookmarks --store-dir f0 2>&1"), 2);
    ck_assert_uint_eq(count("f0"), 3);
}
END_TEST

/* ---- picl server --restore-days N ------------------------------------------ */

static void days0_setup(void)
{
    static const char *const extra[] = {"--restore-days", "0", NULL};
    setup_with(extra);
}

static void days7_setup(void)
{
    static const char *const extra[] = {"--restore-days", "7", NULL};
    setup_with(extra);
}

/* Rows in the storage server's bso_history (the kept earlier versions). */
static int kept_versions(void)
{
    char out[64];
    ck_assert_int_eq(run(out, sizeof out, "sqlite3 data/storage.db 'SELECT count(*) FROM bso_history'"), 0);
    return (int)strtol(out, NULL, 10);
}

/* --restore-days 0: the server advertises 0, keeps no earlier version of a
 * deleted or overwritten record, and a restore is refused (exit 1, nothing
 * changed on either device). */
START_TEST(picl_server_restore_days_off)
{
    char out[4096];
    write_bookmarks(30);
    ck_assert_int_eq(run(NULL, 0, SYNC(0)), 0);
    time_t t = time(NULL);
    sleep(1);
    write_bookmarks(20); /* 10 deleted */
    ck_assert_int_eq(run(NULL, 0, SYNC(0)), 0);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 20);
    ck_assert_int_eq(kept_versions(), 0);
    ck_assert_int_eq(run(out, sizeof out,
                         "$P --state s0 restore bookmarks --as-of %lld --yes --store-dir f0 2>&1",
                         (long long)t),
                     1);
    ck_assert_msg(strstr(out, "keeps no earlier versions (picl_restore_days is 0)") != NULL, "%s", out);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f0"), 20);
    ck_assert_uint_eq(count("f1"), 20);
    /* the server said so when it started */
    ck_assert_int_eq(run(out, sizeof out, "cat server.log"), 0);
    ck_assert_ptr_nonnull(strstr(out, "not kept (--restore-days 0)"));
}
END_TEST

/* --restore-days 7: advertised (a time 8 days back is refused naming 7
 * days), earlier versions kept, and a restore within the window works. */
START_TEST(picl_server_restore_days_7)
{
    char out[4096];
    write_bookmarks(30);
    ck_assert_int_eq(run(NULL, 0, SYNC(0)), 0);
    sleep(1);
    time_t t = time(NULL);
    sleep(1);
    write_bookmarks(20);
    ck_assert_int_eq(run(NULL, 0, SYNC(0)), 0);
    ck_assert_int_eq(kept_versions(), 10);
    ck_assert_int_eq(run(out, sizeof out,
                         "$P --state s0 restore bookmarks --as-of %lld --yes --store-dir f0 2>&1",
                         (long long)t - 8 * 86400),
                     1);
    ck_assert_msg(strstr(out, "7 days only") != NULL, "%s", out);
    ck_assert_uint_eq(count("f0"), 20);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s0 restore bookmarks --as-of %lld --yes --store-dir f0",
                         (long long)t),
                     0);
    ck_assert_msg(strstr(out, "10 brought back, 0 deleted") != NULL, "%s", out);
    ck_assert_int_eq(run(NULL, 0, SYNC(1)), 0);
    ck_assert_uint_eq(count("f1"), 30);
}
END_TEST

/* --restore-days takes whole days from 0 to 3650: anything else is a usage
 * error before anything starts. */
START_TEST(picl_server_restore_days_usage)
{
    char out[4096];
    static const char *const bad[] = {"-1", "abc", "3651", "1.5", "7d"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(run(out, sizeof out,
                             "$P server --data d%zu --listen 127.0.0.1:0 --restore-days %s 2>&1", i, bad[i]),
                         2);
        ck_assert_msg(strstr(out, "--restore-days takes a number of days") != NULL, "%s: %s", bad[i], out);
        ck_assert_int_eq(run(NULL, 0, "test ! -e d%zu", i), 0); /* nothing created */
    }
    ck_assert_int_eq(run(out, sizeof out, "$P help server"), 0);
    ck_assert_ptr_nonnull(strstr(out, "--restore-days N"));
}
END_TEST

/* ---- the storage server (in-process fixture) ---------------------------- */

/* PUT of a payload of n copies of ch; answers the new last-modified. */
static int64_t put(const char *path, char ch, int n)
{
    char body[2200];
    int k = snprintf(body, sizeof body, "{\"payload\":\"");
    memset(body + k, ch, (size_t)n);
    snprintf(body + k + n, 16, "\"}");
    tu_resp r = sf_req("PUT", path, body);
    sf_expect(&r, 200, -1);
    int64_t m = sf_ts_header(&r, "X-Last-Modified");
    tu_resp_free(&r);
    usleep(30000); /* distinct timestamps */
    return m;
}

static int64_t del(const char *path)
{
    tu_resp r = sf_req("DELETE", path, NULL);
    sf_expect(&r, 200, -1);
    int64_t m = sf_ts_header(&r, "X-Weave-Timestamp");
    tu_resp_free(&r);
    usleep(30000);
    return m;
}

/* "id:first payload char:length,..." of GET /storage/c?full=1[&as_of=T] (T < 0: none) */
static void listing(int64_t as_of, char *out, size_t cap)
{
    char path[128];
    if (as_of >= 0)
        snprintf(path, sizeof path, "/storage/c?full=1&sort=oldest&as_of=%lld.%02d", (long long)(as_of / 100),
                 (int)(as_of % 100));
    else
        snprintf(path, sizeof path, "/storage/c?full=1&sort=oldest");
    tu_resp r = sf_req("GET", path, NULL);
    sf_expect(&r, 200, -1);
    json_t *a = sf_json(&r);
    out[0] = 0;
    size_t i;
    json_t *b;
    json_array_foreach (a, i, b) {
        const char *p = json_string_value(json_object_get(b, "payload"));
        char one[64];
        snprintf(one, sizeof one, "%s%s:%c:%zu", i ? "," : "", json_string_value(json_object_get(b, "id")),
                 p[0], strlen(p));
        tu_append(out, cap, one);
    }
    json_decref(a);
    tu_resp_free(&r);
}

static void body_is(const char *path, const char *want)
{
    tu_resp r = sf_req("GET", path, NULL);
    sf_expect(&r, 200, -1);
    ck_assert_str_eq(r.body, want);
    tu_resp_free(&r);
}

static void sf_default_setup(void) { sf_setup(); }

START_TEST(server_as_of_listing)
{
    char l[512];
    int64_t t1 = put("/storage/c/a", '1', 1024);
    int64_t t2 = put("/storage/c/a", '2', 1024);
    int64_t t3 = put("/storage/c/b", 'b', 1024);
    int64_t t4 = del("/storage/c/a");
    ck_assert(t1 < t2 && t2 < t3 && t3 < t4);
    listing(t1 - 1, l, sizeof l);
    ck_assert_str_eq(l, "");
    listing(t1, l, sizeof l);
    ck_assert_str_eq(l, "a:1:1024");
    listing(t2, l, sizeof l);
    ck_assert_str_eq(l, "a:2:1024");
    listing(t3, l, sizeof l);
    ck_assert_str_eq(l, "a:2:1024,b:b:1024");
    listing(t4, l, sizeof l);
    ck_assert_str_eq(l, "b:b:1024");
    listing(-1, l, sizeof l);
    ck_assert_str_eq(l, "b:b:1024");
    /* a whole collection deleted is kept too */
    del("/storage/c");
    listing(t3, l, sizeof l);
    ck_assert_str_eq(l, "a:2:1024,b:b:1024");
    /* the kept versions count: v1, v2 and b (the live data is gone) */
    body_is("/info/quota", "[3.00,null]");
    /* a malformed as_of is 400/1 */
    tu_resp r = sf_req("GET", "/storage/c?as_of=yesterday", NULL);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
    /* pruning drops versions whose time is up (made so here in the file) */
    sf_sql("UPDATE bso_history SET keep_until=1 WHERE id='a'", NULL, 0);
    ck_assert_int_eq(storage_server_prune(SF.srv, NULL), PICL_OK);
    listing(t3, l, sizeof l);
    ck_assert_str_eq(l, "b:b:1024");
    body_is("/info/quota", "[1.00,null]");
    /* DELETE /storage (the user's data) takes the kept versions with it */
    del("/storage");
    listing(t3, l, sizeof l);
    ck_assert_str_eq(l, "");
    body_is("/info/quota", "[0.00,null]");
}
END_TEST

/* A deletion is kept at the deleting write's own timestamp, the one its
 * answer gives -- not at the database's clock when the row goes, which
 * can be later (a listing "as of" the deletion then still showed what it
 * deleted) or, as here, earlier: the user's last-modified is moved 20 s
 * ahead in the database, so each write's timestamp is that plus 0.01 s. */
START_TEST(server_deletion_kept_at_its_timestamp)
{
    char l[512], sql[256];
    int64_t t1 = put("/storage/c/a", 'a', 10);
    put("/storage/c/b", 'b', 10);
    put("/storage/c/x", 'x', 10);
    int64_t ahead = t1 + 2000;
    snprintf(sql, sizeof sql, "UPDATE users SET modified = %lld", (long long)ahead);
    sf_sql(sql, NULL, 0);
    /* DELETE of an item */
    int64_t ta = del("/storage/c/a");
    ck_assert_int_eq(ta, ahead + 1);
    ck_assert_int_eq(sf_sql_int("SELECT replaced FROM bso_history WHERE id = 'a'"), ta);
    ck_assert_int_eq(sf_sql_int("SELECT keep_until - replaced FROM bso_history WHERE id = 'a'"),
                     (int64_t)30 * 86400 * 100);
    listing(ta - 1, l, sizeof l);
    ck_assert_str_eq(l, "a:a:10,b:b:10,x:x:10");
    listing(ta, l, sizeof l);
    ck_assert_str_eq(l, "b:b:10,x:x:10");
    /* DELETE of ids in a collection: one time for each */
    int64_t tb = del("/storage/c?ids=b,x");
    ck_assert_int_eq(tb, ta + 1);
    ck_assert_int_eq(sf_sql_int("SELECT count(*) FROM bso_history WHERE id IN ('b', 'x')"), 2);
    ck_assert_int_eq(sf_sql_int("SELECT min(replaced) FROM bso_history WHERE id IN ('b', 'x')"), tb);
    ck_assert_int_eq(sf_sql_int("SELECT max(replaced) FROM bso_history WHERE id IN ('b', 'x')"), tb);
    listing(tb - 1, l, sizeof l);
    ck_assert_str_eq(l, "b:b:10,x:x:10");
    listing(tb, l, sizeof l);
    ck_assert_str_eq(l, "");
    /* DELETE of a whole collection */
    put("/storage/c/y", 'y', 10);
    int64_t ty = sf_sql_int("SELECT modified FROM bsos WHERE id = 'y'");
    int64_t tc = del("/storage/c");
    ck_assert_int_eq(tc, ty + 1);
    ck_assert_int_eq(sf_sql_int("SELECT replaced FROM bso_history WHERE id = 'y'"), tc);
    listing(tc - 1, l, sizeof l);
    ck_assert_str_eq(l, "y:y:10");
    listing(tc, l, sizeof l);
    ck_assert_str_eq(l, "");
    if (SF.pgurl[0])
        return;
    /* SQLite: the timestamp was the transaction's only; another program's
     * deletion is kept at SQLite's clock (the version's modified + 0.01 s
     * at the least) */
    ck_assert_int_eq(sf_sql_int("SELECT count(*) FROM history_write_time WHERE t IS NULL"), 1);
    ck_assert_int_eq(sf_sql_int("SELECT max(version) FROM schema_version"), 5);
    put("/storage/d/z", 'z', 10);
    int64_t tz = sf_sql_int("SELECT modified FROM bsos WHERE id = 'z'");
    sf_sql("DELETE FROM bsos WHERE id = 'z'", NULL, 0);
    int64_t rz = sf_sql_int("SELECT replaced FROM bso_history WHERE id = 'z'");
    ck_assert_int_eq(rz, tz + 1); /* tz is 20 s ahead of the clock */
}
END_TEST

static void quota_setup(void)
{
    storage_config c = {.quota_kb = 3};
    sf_setup_with(&c);
}

START_TEST(server_quota_gives_way)
{
    char l[512];
    int64_t t1 = put("/storage/c/x1", '1', 1000);
    put("/storage/c/x2", '2', 1000);
    del("/storage/c/x1"); /* kept: 2000 bytes counted */
    body_is("/info/quota", "[1.95,3]");
    put("/storage/c/x3", '3', 1000); /* 3000 <= 3072 */
    listing(t1, l, sizeof l);
    ck_assert_str_eq(l, "x1:1:1000");
    put("/storage/c/x4", '4', 1000); /* 4000: x1's old version gives way */
    listing(t1, l, sizeof l);
    ck_assert_str_eq(l, "");
    listing(-1, l, sizeof l);
    ck_assert_str_eq(l, "x2:2:1000,x3:3:1000,x4:4:1000");
    /* live data alone over the quota is still refused */
    tu_resp r = sf_req("PUT", "/storage/c/x5",
                       "{\"payload\":\"0123456789012345678901234567890123456789"
                       "0123456789012345678901234567890123456789012345678901234567890\"}");
    sf_expect(&r, 400, 14);
    tu_resp_free(&r);
}
END_TEST

static void off_setup(void)
{
    storage_config c = {.restore_days = -1};
    sf_setup_with(&c);
}

START_TEST(server_restore_off)
{
    char l[512];
    tu_resp r = sf_req("GET", "/info/configuration", NULL);
    sf_expect(&r, 200, -1);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "picl_restore_days")), 0);
    json_decref(j);
    tu_resp_free(&r);
    int64_t t1 = put("/storage/c/a", '1', 10);
    put("/storage/c/b", '1', 10);
    put("/storage/c/b", '2', 10);
    del("/storage/c/a");
    /* nothing kept: the quota counts only the live b (10 bytes; with the
     * two earlier versions it would be 30) */
    body_is("/info/quota", "[0.01,null]");
    ck_assert_int_eq(sf_sql_int("SELECT count(*) FROM bso_history"), 0);
    /* as_of is refused: the live rows alone are not the collection as it was */
    char p[128];
    snprintf(p, sizeof p, "/storage/c?full=1&as_of=%lld.%02d", (long long)(t1 / 100), (int)(t1 % 100));
    tu_resp r2 = sf_req("GET", p, NULL);
    sf_expect(&r2, 400, 1);
    tu_resp_free(&r2);
    listing(-1, l, sizeof l);
    ck_assert_str_eq(l, "b:2:10");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("restore");
    TCase *srv = tcase_create("server");
    tcase_add_checked_fixture(srv, sf_default_setup, sf_teardown);
    tcase_add_test(srv, server_as_of_listing);
    tcase_add_test(srv, server_deletion_kept_at_its_timestamp);
    suite_add_tcase(s, srv);
    TCase *q = tcase_create("server_quota");
    tcase_add_checked_fixture(q, quota_setup, sf_teardown);
    tcase_add_test(q, server_quota_gives_way);
    suite_add_tcase(s, q);
    TCase *off = tcase_create("server_off");
    tcase_add_checked_fixture(off, off_setup, sf_teardown);
    tcase_add_test(off, server_restore_off);
    suite_add_tcase(s, off);
    /* on PostgreSQL (PICL_TEST_BACKEND) the server cases only: the rest runs
     * `picl server`, whose storage is SQLite (the SQLite pass covers it) */
    if (tupg_enabled())
        return tu_run(s);
    TCase *d0 = tcase_create("picl_server_days_0");
    tcase_add_checked_fixture(d0, days0_setup, teardown);
    tcase_set_timeout(d0, 120);
    tcase_add_test(d0, picl_server_restore_days_off);
    tcase_add_test(d0, picl_server_restore_days_usage);
    suite_add_tcase(s, d0);
    TCase *d7 = tcase_create("picl_server_days_7");
    tcase_add_checked_fixture(d7, days7_setup, teardown);
    tcase_set_timeout(d7, 120);
    tcase_add_test(d7, picl_server_restore_days_7);
    suite_add_tcase(s, d7);
    TCase *tc = tcase_create("restore");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, restore_1000_bookmarks_on_two_devices);
    tcase_add_test(tc, restore_refusals);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
