/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_batch.c -- batch uploads of the storage server: open, append,
 * commit at one timestamp, refusals, size announcements and limits. */
#include <time.h>

#include "storage_fixture.h"
#include "testutil.h"

static tu_resp post_h(const char *path, const char *body, const char *const *headers)
{
    return sf_req_h("POST", path, "application/json", body, headers);
}

/* Opens a batch on coll with body; returns the batch id (malloc()ed). */
static char *open_batch(const char *coll, const char *body)
{
    char path[128];
    snprintf(path, sizeof path, "/storage/%s?batch=true", coll);
    tu_resp r = post_h(path, body, NULL);
    sf_expect(&r, 202, -1);
    json_t *j = sf_json(&r);
    const char *id = json_string_value(json_object_get(j, "batch"));
    ck_assert_ptr_nonnull(id);
    ck_assert_uint_eq(strlen(id), 22);
    ck_assert_uint_eq(strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"), 22);
    char *out = strdup(id);
    json_decref(j);
    tu_resp_free(&r);
    return out;
}

START_TEST(test_batch_lifecycle)
{
    char *id = open_batch("hist", "[{\"id\":\"a\",\"payload\":\"1\"},{\"id\":\"b\",\"payload\":\"2\","
                                  "\"sortindex\":4},{\"id\":\"bad\",\"ttl\":0}]");
    /* nothing visible yet */
    tu_resp r = sf_req("GET", "/storage/hist", NULL);
    ck_assert_str_eq(r.body, "[]");
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collections", NULL);
    ck_assert_str_eq(r.body, "{}");
    tu_resp_free(&r);
    /* append; a later copy of "a" merges with the first */
    char path[128];
    snprintf(path, sizeof path, "/storage/hist?batch=%s", id);
    r = post_h(path, "[{\"id\":\"c\",\"payload\":\"3\"},{\"id\":\"a\",\"sortindex\":9}]", NULL);
    sf_expect(&r, 202, -1);
    json_t *j = sf_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "batch")), id);
    ck_assert_int_eq(json_array_size(json_object_get(j, "success")), 2);
    json_decref(j);
    tu_resp_free(&r);
    /* commit with one more record */
    snprintf(path, sizeof path, "/storage/hist?batch=%s&commit=true", id);
    r = post_h(path, "[{\"id\":\"d\",\"payload\":\"4\"}]", NULL);
    sf_expect(&r, 200, -1);
    int64_t t = sf_ts_header(&r, "X-Last-Modified");
    j = sf_json(&r);
    ck_assert_int_eq(json_array_size(json_object_get(j, "success")), 1);
    ck_assert_msg(strstr(r.body, "\"modified\":") != NULL, "%s", r.body);
    json_decref(j);
    tu_resp_free(&r);
    /* every record at the commit's timestamp */
    r = sf_req("GET", "/storage/hist?full=1", NULL);
    j = sf_json(&r);
    ck_assert_int_eq(json_array_size(j), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *b = json_array_get(j, i);
        ck_assert_int_eq((int64_t)(json_real_value(json_object_get(b, "modified")) * 100 + 0.5), t);
    }
    json_t *a = json_array_get(j, 0);
    ck_assert_str_eq(json_string_value(json_object_get(a, "payload")), "1");
    ck_assert_int_eq(json_integer_value(json_object_get(a, "sortindex")), 9);
    json_decref(j);
    tu_resp_free(&r);
    /* the batch is gone after the commit */
    r = post_h(path, "[]", NULL);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
    free(id);
}
END_TEST

START_TEST(test_batch_single_shot)
{
    tu_resp r = post_h("/storage/one?batch=true&commit=true", "[{\"id\":\"x\",\"payload\":\"p\"}]", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/one", NULL);
    ck_assert_str_eq(r.body, "[\"x\"]");
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_batch_refusals_change_nothing)
{
    char *id = open_batch("mine", "[{\"id\":\"a\",\"payload\":\"1\"}]");
    tu_resp r = sf_req("PUT", "/storage/mine/keep", "{\"payload\":\"k\"}");
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    char *before = sf_snapshot();
    char path[160];
    /* another collection */
    snprintf(path, sizeof path, "/storage/other?batch=%s&commit=true", id);
    r = post_h(path, "[]", NULL);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
    /* another user's batch */
    tu_cred other;
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, SF.node, 77, 3600);
    char target[200];
    snprintf(target, sizeof target, "/1.5/77/storage/mine?batch=%s&commit=true", id);
    tu_req o = {.ctype = "application/json", .body = "[]", .len = 2, .cred = &other};
    ck_assert_int_eq(tu_http(&r, "POST", SF.base, target, &o), 0);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
    tu_cred_free(&other);
    /* unknown and malformed ids, bad parameters */
    const char *bad[] = {"/storage/mine?batch=AAAAAAAAAAAAAAAAAAAAAA", "/storage/mine?batch=short",
                         "/storage/mine?batch=", "/storage/mine?commit=true",
                         "/storage/mine?batch=true&commit=yes"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = post_h(bad[i], "[{\"id\":\"z\"}]", NULL);
        ck_assert_msg(r.status == 400 && !strcmp(r.body, "1"), "%s: %ld %s", bad[i], r.status, r.body);
        tu_resp_free(&r);
    }
    char *after = sf_snapshot();
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    /* the batch itself still commits */
    snprintf(path, sizeof path, "/storage/mine?batch=%s&commit=true", id);
    r = post_h(path, "[]", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/mine", NULL);
    ck_assert_str_eq(r.body, "[\"a\",\"keep\"]");
    tu_resp_free(&r);
    free(id);
}
END_TEST

START_TEST(test_batch_deleted_with_collection)
{
    char *id = open_batch("gone", "[{\"id\":\"a\"}]");
    tu_resp r = sf_req("PUT", "/storage/gone/x", "{}");
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage/gone", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    char path[128];
    snprintf(path, sizeof path, "/storage/gone?batch=%s&commit=true", id);
    r = post_h(path, "[]", NULL);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
    free(id);
}
END_TEST

START_TEST(test_weave_headers)
{
    const char *const over_rec[] = {"X-Weave-Records: 101", NULL};
    const char *const over_bytes[] = {"X-Weave-Bytes: 2097153", NULL};
    const char *const bad_rec[] = {"X-Weave-Records: ten", NULL};
    const char *const total_no_batch[] = {"X-Weave-Total-Records: 5", NULL};
    const char *const total_over[] = {"X-Weave-Total-Records: 10001", NULL};
    const char *const total_bytes_over[] = {"X-Weave-Total-Bytes: 104857601", NULL};
    const char *const total_ok[] = {"X-Weave-Total-Records: 10", "X-Weave-Total-Bytes: 100",
                                    "X-Weave-Records: 1", "X-Weave-Bytes: 1", NULL};
    struct {
        const char *path;
        const char *const *h;
        long status;
        int code;
    } v[] = {
        {"/storage/w", over_rec, 400, 17},
        {"/storage/w", over_bytes, 400, 17},
        {"/storage/w", bad_rec, 400, 1},
        {"/storage/w", total_no_batch, 400, 1},
        {"/storage/w?batch=true", total_over, 400, 17},
        {"/storage/w?batch=true", total_bytes_over, 400, 17},
        {"/storage/w?batch=true", total_ok, 202, -1},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        tu_resp r = post_h(v[i].path, "[{\"id\":\"a\",\"payload\":\"x\"}]", v[i].h);
        ck_assert_msg(r.status == v[i].status, "case %zu: %ld %s", i, r.status, r.body);
        if (v[i].code >= 0)
            ck_assert_int_eq((int)strtol(r.body, NULL, 10), v[i].code);
        tu_resp_free(&r);
    }
    tu_resp r = sf_req("GET", "/info/collections", NULL);
    ck_assert_str_eq(r.body, "{}");
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_post_byte_limit)
{
    /* max_post_bytes (2 MiB) over several records is 400/17 */
    size_t rec = 512 * 1024 + 1; /* 4 of them: 4 bytes over max_post_bytes, under max_request_bytes */
    char *body = malloc(4 * (rec + 64) + 8);
    size_t o = (size_t)snprintf(body, 8, "[");
    for (int i = 0; i < 4; i++) {
        o += (size_t)snprintf(body + o, 64, "%s{\"id\":\"b%d\",\"payload\":\"", i ? "," : "", i);
        memset(body + o, 'x', rec);
        o += rec;
        o += (size_t)snprintf(body + o, 8, "\"}");
    }
    snprintf(body + o, 8, "]");
    tu_resp r = post_h("/storage/big", body, NULL);
    sf_expect(&r, 400, 17);
    tu_resp_free(&r);
    free(body);
    r = sf_req("GET", "/info/collections", NULL);
    ck_assert_str_eq(r.body, "{}");
    tu_resp_free(&r);
}
END_TEST

/* ---- small total limits and a short batch lifetime -------------------- */

static void small_setup(void)
{
    storage_config c = {.limits = {.max_total_records = 3, .max_total_bytes = 10}, .batch_ttl_s = 1};
    sf_setup_with(&c);
}

START_TEST(test_batch_totals)
{
    char *id = open_batch("t", "[{\"id\":\"a\",\"payload\":\"12345\"},{\"id\":\"b\"}]");
    char path[128];
    snprintf(path, sizeof path, "/storage/t?batch=%s", id);
    /* a 4th record is over max_total_records */
    tu_resp r = post_h(path, "[{\"id\":\"c\"},{\"id\":\"d\"}]", NULL);
    sf_expect(&r, 400, 17);
    tu_resp_free(&r);
    /* over max_total_bytes */
    r = post_h(path, "[{\"id\":\"c\",\"payload\":\"123456\"}]", NULL);
    sf_expect(&r, 400, 17);
    tu_resp_free(&r);
    /* the refused appends left the batch as it was */
    snprintf(path, sizeof path, "/storage/t?batch=%s&commit=true", id);
    r = post_h(path, "[{\"id\":\"c\",\"payload\":\"12345\"}]", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/t", NULL);
    ck_assert_str_eq(r.body, "[\"a\",\"b\",\"c\"]");
    tu_resp_free(&r);
    free(id);
}
END_TEST

/* The totals an append is checked against follow merges: a record sent
 * again in a later append replaces the earlier one's bytes and counts once
 * (the server keeps them as it goes instead of summing the items). */
START_TEST(test_batch_totals_follow_merges)
{
    char *id = open_batch("m", "[{\"id\":\"a\",\"payload\":\"12345\"}]");
    char path[128];
    snprintf(path, sizeof path, "/storage/m?batch=%s", id);
    /* a shrinks to 1 byte: 1 record, 1 byte */
    tu_resp r = post_h(path, "[{\"id\":\"a\",\"payload\":\"1\"}]", NULL);
    sf_expect(&r, 202, -1);
    tu_resp_free(&r);
    /* 10 bytes exactly (5 + 1 + 9 would be over) */
    r = post_h(path, "[{\"id\":\"b\",\"payload\":\"123456789\"}]", NULL);
    sf_expect(&r, 202, -1);
    tu_resp_free(&r);
    /* a again, twice, without a payload: its byte stays, still 2 records */
    r = post_h(path, "[{\"id\":\"a\",\"sortindex\":7}]", NULL);
    sf_expect(&r, 202, -1);
    tu_resp_free(&r);
    r = post_h(path, "[{\"id\":\"a\",\"sortindex\":8}]", NULL);
    sf_expect(&r, 202, -1);
    tu_resp_free(&r);
    /* one byte more is over max_total_bytes, and changes nothing */
    r = post_h(path, "[{\"id\":\"c\",\"payload\":\"x\"}]", NULL);
    sf_expect(&r, 400, 17);
    tu_resp_free(&r);
    /* the third record fits (3 = max_total_records), a fourth does not */
    r = post_h(path, "[{\"id\":\"c\"}]", NULL);
    sf_expect(&r, 202, -1);
    tu_resp_free(&r);
    r = post_h(path, "[{\"id\":\"d\"}]", NULL);
    sf_expect(&r, 400, 17);
    tu_resp_free(&r);
    snprintf(path, sizeof path, "/storage/m?batch=%s&commit=true", id);
    r = post_h(path, "[]", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/m?full=1&sort=index", NULL);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_array_size(j), 3);
    json_t *a = json_array_get(j, 0);
    ck_assert_str_eq(json_string_value(json_object_get(a, "id")), "a");
    ck_assert_str_eq(json_string_value(json_object_get(a, "payload")), "1");
    ck_assert_int_eq(json_integer_value(json_object_get(a, "sortindex")), 8);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 1), "payload")), "123456789");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 2), "id")), "c");
    json_decref(j);
    tu_resp_free(&r);
    free(id);
}
END_TEST

START_TEST(test_batch_expires)
{
    char *id = open_batch("e", "[{\"id\":\"a\"}]");
    struct timespec ts = {1, 300000000};
    nanosleep(&ts, NULL);
    char path[128];
    snprintf(path, sizeof path, "/storage/e?batch=%s&commit=true", id);
    tu_resp r = post_h(path, "[]", NULL);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/e", NULL);
    ck_assert_str_eq(r.body, "[]");
    tu_resp_free(&r);
    free(id);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_batch");
    TCase *tc = tcase_create("batch");
    tcase_add_checked_fixture(tc, sf_setup, sf_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_batch_lifecycle);
    tcase_add_test(tc, test_batch_single_shot);
    tcase_add_test(tc, test_batch_refusals_change_nothing);
    tcase_add_test(tc, test_batch_deleted_with_collection);
    tcase_add_test(tc, test_weave_headers);
    tcase_add_test(tc, test_post_byte_limit);
    suite_add_tcase(s, tc);
    TCase *sm = tcase_create("small");
    tcase_add_checked_fixture(sm, small_setup, sf_teardown);
    tcase_set_timeout(sm, 60);
    tcase_add_test(sm, test_batch_totals);
    tcase_add_test(sm, test_batch_totals_follow_merges);
    tcase_add_test(sm, test_batch_expires);
    suite_add_tcase(s, sm);
    return s;
}

int main(void) { return tu_run(suite()); }
