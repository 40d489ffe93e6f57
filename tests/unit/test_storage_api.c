/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_api.c -- the storage server's endpoints, parameters, headers
 * and statuses (storage.md section 3) over HTTP against an in-process server. */
#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

#include "storage_fixture.h"
#include "testutil.h"

#include "protocol/synctime.h"
#include "storage/storage_db.h"
#include "storage/storage_db_sqlite.h"

#define POST_JSON(path, body) sf_req_h("POST", path, "application/json", body, NULL)

static void put_ok(const char *path, const char *body)
{
    tu_resp r = sf_req("PUT", path, body);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
}

/* ---- heartbeat, configuration ------------------------------------------ */

START_TEST(test_heartbeat)
{
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, "GET", SF.base, "/__heartbeat__", NULL), 0);
    sf_expect(&r, 200, -1);
    ck_assert_str_eq(r.body, "{}");
    sf_ts_header(&r, "X-Weave-Timestamp");
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_info_configuration)
{
    tu_resp r = sf_req("GET", "/info/configuration", NULL);
    sf_expect(&r, 200, -1);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "max_request_bytes")), 2 * 1024 * 1024 + 4096);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "max_post_records")), 100);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "max_post_bytes")), 2 * 1024 * 1024);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "max_total_records")), 10000);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "max_total_bytes")), 100 * 1024 * 1024);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "max_record_payload_bytes")), 2 * 1024 * 1024);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "picl_restore_days")), 30); /* PiCL undo */
    ck_assert_int_eq(json_object_size(j), 7);
    ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), 0);
    json_decref(j);
    tu_resp_free(&r);
}
END_TEST

/* ---- items -------------------------------------------------------------- */

START_TEST(test_put_get_item)
{
    tu_resp r = sf_req("PUT", "/storage/bookmarks/abcdefghijkl",
                       "{\"id\":\"abcdefghijkl\",\"payload\":\"hello\",\"sortindex\":5,\"ttl\":3600}");
    sf_expect(&r, 200, -1);
    int64_t t = sf_ts_header(&r, "X-Last-Modified");
    ck_assert_int_eq(sf_ts_header(&r, "X-Weave-Timestamp"), t);
    char want[32];
    snprintf(want, sizeof want, "%lld.%02lld", (long long)(t / 100), (long long)(t % 100));
    ck_assert_str_eq(r.body, want);
    tu_resp_free(&r);

    r = sf_req("GET", "/storage/bookmarks/abcdefghijkl", NULL);
    sf_expect(&r, 200, -1);
    char expect[256];
    snprintf(expect, sizeof expect,
             "{\"id\":\"abcdefghijkl\",\"modified\":%s,\"payload\":\"hello\",\"sortindex\":5}", want);
    ck_assert_str_eq(r.body, expect);
    ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), t);
    ck_assert_int_ge(sf_ts_header(&r, "X-Weave-Timestamp"), t);
    tu_resp_free(&r);

    r = sf_req("GET", "/storage/bookmarks/nothere", NULL);
    sf_expect(&r, 404, 0);
    sf_ts_header(&r, "X-Weave-Timestamp");
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_put_merges_and_null_resets)
{
    put_ok("/storage/tabs/x", "{\"payload\":\"one\",\"sortindex\":7}");
    put_ok("/storage/tabs/x", "{\"sortindex\":9}");
    tu_resp r = sf_req("GET", "/storage/tabs/x", NULL);
    json_t *j = sf_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "payload")), "one");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "sortindex")), 9);
    json_decref(j);
    tu_resp_free(&r);
    put_ok("/storage/tabs/x", "{\"sortindex\":null,\"payload\":null}");
    r = sf_req("GET", "/storage/tabs/x", NULL);
    j = sf_json(&r);
    ck_assert_ptr_null(json_object_get(j, "sortindex"));
    ck_assert_str_eq(json_string_value(json_object_get(j, "payload")), "");
    json_decref(j);
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_put_bad_inputs_change_nothing)
{
    put_ok("/storage/tabs/keep", "{\"payload\":\"keep\"}");
    char *before = sf_snapshot();
    char id65[80];
    memset(id65, 'a', 65);
    id65[65] = 0;
    char path[200];
    struct {
        const char *path, *body, *ctype;
        long status;
        int code;
    } cases[] = {
        {NULL, "{\"payload\":\"x\"}", "application/json", 400, 8}, /* id of 65 chars */
        {"/storage/tabs/a%01b", "{\"payload\":\"x\"}", "application/json", 400, 8},
        {"/storage/a%2Fb/x", "{\"payload\":\"x\"}", "application/json", 400, 13},
        {"/storage/abcdefghijklmnopqrstuvwxyz0123456/x", "{\"payload\":\"x\"}", "application/json", 400, 13},
        {"/storage/a%20b/x", "{\"payload\":\"x\"}", "application/json", 400, 13},
        {"/storage/tabs/x", "{\"sortindex\":1234567890}", "application/json", 400, 8},
        {"/storage/tabs/x", "{\"sortindex\":\"5\"}", "application/json", 400, 8},
        {"/storage/tabs/x", "{\"ttl\":-1}", "application/json", 400, 8},
        {"/storage/tabs/x", "{\"ttl\":0}", "application/json", 400, 8},
        {"/storage/tabs/x", "{\"ttl\":1234567890}", "application/json", 400, 8},
        {"/storage/tabs/x", "{\"payload\":5}", "application/json", 400, 8},
        {"/storage/tabs/x", "{\"id\":\"other\",\"payload\":\"x\"}", "application/json", 400, 8},
        {"/storage/tabs/x", "{\"colour\":\"red\"}", "application/json", 400, 8},
        {"/storage/tabs/x", "[{\"payload\":\"x\"}]", "application/json", 400, 8}, /* JSON, not a BSO */
        {"/storage/tabs/x", "\"text\"", "application/json", 400, 8},
        {"/storage/tabs/x", "42", "application/json", 400, 8},
        {"/storage/tabs/x", "{\"payload\":", "application/json", 400, 6},
        {"/storage/tabs/x", "{\"payload\":\"x\"}", "text/html", 415, 0},
        {"/storage/tabs/keep", "{\"payload\":\"x\"}", "application/newlines", 415, 0},
    };
    snprintf(path, sizeof path, "/storage/tabs/%s", id65);
    cases[0].path = path;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_resp r = sf_req_h("PUT", cases[i].path, cases[i].ctype, cases[i].body, NULL);
        ck_assert_msg(r.status == cases[i].status && (int)strtol(r.body, NULL, 10) == cases[i].code,
                      "case %zu: %ld %s", i, r.status, r.body);
        sf_ts_header(&r, "X-Weave-Timestamp");
        tu_resp_free(&r);
    }
    char *after = sf_snapshot();
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
}
END_TEST

START_TEST(test_payload_limit)
{
    /* exactly max_record_payload_bytes is accepted, one more is not */
    int64_t max = storage_server_limits(SF.srv)->max_record_payload_bytes;
    ck_assert_int_eq(max, 2048);
    char *body = malloc((size_t)max + 64);
    int n = snprintf(body, 64, "{\"payload\":\"");
    memset(body + n, 'p', (size_t)max);
    snprintf(body + n + max, 64, "\"}");
    put_ok("/storage/tabs/big", body);
    char *before = sf_snapshot();
    memset(body + n, 'q', (size_t)max);
    snprintf(body + n + max, 64, "q\"}");
    tu_resp r = sf_req("PUT", "/storage/tabs/big", body);
    sf_expect(&r, 400, 17);
    tu_resp_free(&r);
    /* in a POST only that record fails */
    char *post = malloc((size_t)max + 128);
    n = snprintf(post, 128, "[{\"id\":\"ok\",\"payload\":\"s\"},{\"id\":\"big2\",\"payload\":\"");
    memset(post + n, 'z', (size_t)max + 1);
    snprintf(post + n + max + 1, 64, "\"}]");
    r = POST_JSON("/storage/other", post);
    sf_expect(&r, 200, -1);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_array_size(json_object_get(j, "success")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "failed"), "big2")),
                     "payload too large");
    json_decref(j);
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage/other", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    char *after = sf_snapshot();
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    free(body);
    free(post);
}
END_TEST

START_TEST(test_request_size_limit)
{
    /* A body over max_request_bytes: 413 before it is read, nothing stored. */
    int64_t max = storage_server_limits(SF.srv)->max_request_bytes;
    size_t len = (size_t)max + 1;
    char *body = malloc(len + 1);
    memset(body, ' ', len);
    body[0] = '[';
    body[len - 1] = ']';
    body[len] = 0;
    tu_resp r = POST_JSON("/storage/tabs", body);
    sf_expect(&r, 413, 17);
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collections", NULL);
    ck_assert_str_eq(r.body, "{}");
    tu_resp_free(&r);
    free(body);
}
END_TEST

START_TEST(test_length_required_and_method)
{
    static const char *const chunked[] = {"Transfer-Encoding: chunked", NULL};
    tu_resp r = sf_req_h("POST", "/storage/tabs", "application/json", "[]", chunked);
    sf_expect(&r, 411, 0);
    tu_resp_free(&r);
    r = sf_req("POST", "/storage/tabs/item", "[]");
    sf_expect(&r, 405, 0);
    char *allow = tu_resp_header(&r, "Allow");
    ck_assert_ptr_nonnull(allow);
    ck_assert_ptr_nonnull(strstr(allow, "PUT"));
    free(allow);
    sf_ts_header(&r, "X-Weave-Timestamp");
    tu_resp_free(&r);
    r = sf_req("PUT", "/storage/tabs", "{}");
    sf_expect(&r, 405, 0);
    tu_resp_free(&r);
    r = sf_req("POST", "/info/collections", "{}");
    sf_expect(&r, 405, 0);
    tu_resp_free(&r);
    r = sf_req("GET", "/nothing/here", NULL);
    sf_expect(&r, 404, 0);
    tu_resp_free(&r);
}
END_TEST

/* ---- collections ------------------------------------------------------- */

static void post_n(const char *coll, int first, int n)
{
    char body[8192];
    size_t o = 0;
    o += (size_t)snprintf(body + o, sizeof body - o, "[");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(body + o, sizeof body - o,
                              "%s{\"id\":\"i%03d\",\"payload\":\"p%d\",\"sortindex\":%d}", i ? "," : "",
                              first + i, first + i, (first + i) % 7);
    snprintf(body + o, sizeof body - o, "]");
    char path[64];
    snprintf(path, sizeof path, "/storage/%s", coll);
    tu_resp r = POST_JSON(path, body);
    sf_expect(&r, 200, -1);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_array_size(json_object_get(j, "success")), (size_t)n);
    ck_assert_int_eq(json_object_size(json_object_get(j, "failed")), 0);
    json_decref(j);
    tu_resp_free(&r);
}

START_TEST(test_post_and_list)
{
    tu_resp r =
        POST_JSON("/storage/history",
                  "[{\"id\":\"b\",\"payload\":\"2\"},{\"id\":\"a\",\"payload\":\"1\",\"sortindex\":3},"
                  "{\"id\":\"bad\\u0001\",\"payload\":\"x\"},{\"id\":\"c\",\"ttl\":-5},"
                  "{\"id\":\"d\",\"sortindex\":12345678901},5]");
    sf_expect(&r, 200, -1);
    int64_t t = sf_ts_header(&r, "X-Last-Modified");
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "modified")) * 0, 0);
    ck_assert_msg(strstr(r.body, "\"modified\":") != NULL, "%s", r.body);
    json_t *s = json_object_get(j, "success"), *f = json_object_get(j, "failed");
    ck_assert_int_eq(json_array_size(s), 2);
    ck_assert_str_eq(json_string_value(json_array_get(s, 0)), "b");
    ck_assert_str_eq(json_string_value(json_array_get(s, 1)), "a");
    ck_assert_int_eq(json_object_size(f), 4);
    ck_assert_str_eq(json_string_value(json_object_get(f, "bad\x01")), "invalid id");
    ck_assert_str_eq(json_string_value(json_object_get(f, "c")), "invalid ttl");
    ck_assert_str_eq(json_string_value(json_object_get(f, "d")), "invalid sortindex");
    ck_assert_str_eq(json_string_value(json_object_get(f, "#5")), "not an object");
    json_decref(j);
    tu_resp_free(&r);

    r = sf_req("GET", "/storage/history", NULL);
    sf_expect(&r, 200, -1);
    ck_assert_str_eq(r.body, "[\"a\",\"b\"]");
    ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), t);
    char *n = tu_resp_header(&r, "X-Weave-Records");
    ck_assert_str_eq(n, "2");
    free(n);
    tu_resp_free(&r);

    r = sf_req("GET", "/storage/history?full=1&sort=index", NULL);
    j = sf_json(&r);
    ck_assert_int_eq(json_array_size(j), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "id")), "a");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 1), "payload")), "2");
    json_decref(j);
    tu_resp_free(&r);

    /* newline-separated output */
    static const char *const nl[] = {"Accept: application/newlines", NULL};
    r = sf_req_h("GET", "/storage/history?full=1", NULL, NULL, nl);
    char *ct = tu_resp_header(&r, "Content-Type");
    ck_assert_str_eq(ct, "application/newlines");
    free(ct);
    ck_assert_int_eq(r.body[r.len - 1], '\n');
    size_t lines = 0;
    for (size_t i = 0; i < r.len; i++)
        lines += r.body[i] == '\n';
    ck_assert_int_eq(lines, 2);
    tu_resp_free(&r);

    /* a collection that does not exist */
    r = sf_req("GET", "/storage/nothing", NULL);
    sf_expect(&r, 200, -1);
    ck_assert_str_eq(r.body, "[]");
    ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), 0);
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_post_bad_bodies)
{
    post_n("tabs", 0, 3);
    char *before = sf_snapshot();
    struct {
        const char *ctype, *body;
        int code;
    } bad[] = {
        /* JSON but not a list of BSOs: 8 (as Mozilla's servers); not JSON: 6 */
        {"application/json", "{\"id\":\"a\"}", 8},
        {"application/json", "\"text\"", 8},
        {"application/json", "42", 8},
        {"application/json", "[{\"id\":\"a\"", 6},
        {"text/plain", "nope", 6},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_resp r = sf_req_h("POST", "/storage/tabs", bad[i].ctype, bad[i].body, NULL);
        ck_assert_msg(r.status == 400 && (int)strtol(r.body, NULL, 10) == bad[i].code, "case %zu: %ld %s", i,
                      r.status, r.body);
        tu_resp_free(&r);
    }
    tu_resp r = sf_req_h("POST", "/storage/tabs", "application/xml", "[]", NULL);
    sf_expect(&r, 415, 0);
    tu_resp_free(&r);
    r = sf_req_h("POST", "/storage/a%2Fb", "application/json", "[]", NULL);
    sf_expect(&r, 400, 13);
    tu_resp_free(&r);
    /* all items invalid: 200, nothing written */
    r = POST_JSON("/storage/tabs", "[{\"id\":\"i000\",\"ttl\":-1}]");
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    /* 101 records */
    char *big = malloc(101 * 32 + 8);
    size_t o = (size_t)snprintf(big, 8, "[");
    for (int i = 0; i < 101; i++)
        o += (size_t)snprintf(big + o, 40, "%s{\"id\":\"n%d\"}", i ? "," : "", i);
    snprintf(big + o, 8, "]");
    r = POST_JSON("/storage/tabs", big);
    sf_expect(&r, 400, 17);
    tu_resp_free(&r);
    free(big);
    char *after = sf_snapshot();
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
}
END_TEST

START_TEST(test_post_text_plain_and_slash_delete)
{
    tu_resp r = sf_req_h("POST", "/storage/tp", "text/plain; charset=utf-8",
                         "[{\"id\":\"t\",\"payload\":\"x\"}]", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/tp", NULL);
    ck_assert_str_eq(r.body, "[\"t\"]");
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage/", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collections", NULL);
    ck_assert_str_eq(r.body, "{}");
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_post_newlines)
{
    const char *body = "{\"id\":\"n1\",\"payload\":\"a\"}\n{\"id\":\"n2\",\"payl\n"
                       "{\"id\":\"n3\",\"payload\":\"c\"}\r\n\n";
    tu_resp r = sf_req_h("POST", "/storage/forms", "application/newlines", body, NULL);
    sf_expect(&r, 200, -1);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_array_size(json_object_get(j, "success")), 2);
    ck_assert_int_eq(json_object_size(json_object_get(j, "failed")), 1);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(j, "failed"), "#1"));
    json_decref(j);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/forms", NULL);
    ck_assert_str_eq(r.body, "[\"n1\",\"n3\"]");
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_get_params)
{
    post_n("c", 0, 5); /* t1 */
    tu_resp r = sf_req("GET", "/info/collections", NULL);
    int64_t t1 = sf_ts_header(&r, "X-Last-Modified");
    tu_resp_free(&r);
    post_n("c", 5, 3); /* t2 */
    char q[128], t1s[32];
    snprintf(t1s, sizeof t1s, "%lld.%02lld", (long long)(t1 / 100), (long long)(t1 % 100));

    snprintf(q, sizeof q, "/storage/c?newer=%s", t1s);
    r = sf_req("GET", q, NULL);
    ck_assert_str_eq(r.body, "[\"i005\",\"i006\",\"i007\"]");
    tu_resp_free(&r);
    snprintf(q, sizeof q, "/storage/c?older=%s&sort=newest", t1s);
    r = sf_req("GET", q, NULL);
    ck_assert_str_eq(r.body, "[]");
    tu_resp_free(&r);
    snprintf(q, sizeof q, "/storage/c?older=%lld.%02lld", (long long)((t1 + 1) / 100),
             (long long)((t1 + 1) % 100));
    r = sf_req("GET", q, NULL);
    ck_assert_str_eq(r.body, "[\"i000\",\"i001\",\"i002\",\"i003\",\"i004\"]");
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/c?ids=i001,i007,zzz", NULL);
    ck_assert_str_eq(r.body, "[\"i001\",\"i007\"]");
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/c?sort=newest&limit=3", NULL);
    ck_assert_str_eq(r.body, "[\"i005\",\"i006\",\"i007\"]");
    char *next = tu_resp_header(&r, "X-Weave-Next-Offset");
    ck_assert_ptr_nonnull(next);
    ck_assert_uint_eq(strspn(next, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"),
                      strlen(next));
    tu_resp_free(&r);
    snprintf(q, sizeof q, "/storage/c?sort=newest&limit=3&offset=%s", next);
    r = sf_req("GET", q, NULL);
    ck_assert_str_eq(r.body, "[\"i000\",\"i001\",\"i002\"]");
    tu_resp_free(&r);
    /* an offset of another sort order is refused */
    snprintf(q, sizeof q, "/storage/c?sort=oldest&limit=3&offset=%s", next);
    r = sf_req("GET", q, NULL);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
    free(next);
    /* sort=index: sortindex desc (i%7), ties by id */
    r = sf_req("GET", "/storage/c?sort=index&limit=2", NULL);
    ck_assert_str_eq(r.body, "[\"i006\",\"i005\"]");
    tu_resp_free(&r);
    /* exactly the limit: no next offset */
    r = sf_req("GET", "/storage/c?limit=8", NULL);
    next = tu_resp_header(&r, "X-Weave-Next-Offset");
    ck_assert_ptr_null(next);
    tu_resp_free(&r);
    /* malformed parameters */
    const char *badq[] = {"?newer=abc",   "?older=-1",   "?limit=-2",    "?limit=x",
                          "?sort=random", "?offset=zzz", "?newer=1.2.3", "?offset=n12_zz"};
    for (size_t i = 0; i < sizeof badq / sizeof badq[0]; i++) {
        snprintf(q, sizeof q, "/storage/c%s", badq[i]);
        r = sf_req("GET", q, NULL);
        ck_assert_msg(r.status == 400 && !strcmp(r.body, "1"), "%s: %ld %s", badq[i], r.status, r.body);
        tu_resp_free(&r);
    }
    /* ids: an invalid id, 101 ids */
    r = sf_req("GET", "/storage/c?ids=a,,b", NULL);
    sf_expect(&r, 400, 8);
    tu_resp_free(&r);
    char many[1200] = "/storage/c?ids=";
    for (int i = 0; i < 101; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%sx%d", i ? "," : "", i);
    r = sf_req("GET", many, NULL);
    sf_expect(&r, 400, 17);
    tu_resp_free(&r);
}
END_TEST

/* Pages through c with limit 2 while new items are written between pages:
 * every item that existed at the start is seen exactly once. */
START_TEST(test_paging_while_writing)
{
    const char *sorts[] = {"oldest", "newest", "index", NULL};
    for (int si = 0; si < 4; si++) {
        char coll[16];
        snprintf(coll, sizeof coll, "pg%d", si);
        for (int k = 0; k < 4; k++)
            post_n(coll, k * 3, 3);
        int seen[100] = {0};
        char *offset = NULL;
        int pages = 0, extra = 200;
        do {
            char q[256];
            snprintf(q, sizeof q, "/storage/%s?limit=2%s%s%s%s", coll, sorts[si] ? "&sort=" : "",
                     sorts[si] ? sorts[si] : "", offset ? "&offset=" : "", offset ? offset : "");
            free(offset);
            tu_resp r = sf_req("GET", q, NULL);
            sf_expect(&r, 200, -1);
            json_t *j = sf_json(&r);
            for (size_t i = 0; i < json_array_size(j); i++) {
                int id = (int)strtol(json_string_value(json_array_get(j, i)) + 1, NULL, 10);
                if (id < 12)
                    seen[id]++;
            }
            json_decref(j);
            offset = tu_resp_header(&r, "X-Weave-Next-Offset");
            tu_resp_free(&r);
            /* another client writes new items meanwhile */
            post_n(coll, extra, 1);
            extra++;
            pages++;
        } while (offset && pages < 50);
        free(offset);
        for (int i = 0; i < 12; i++)
            ck_assert_msg(seen[i] == 1, "sort %s: item %d seen %d times", sorts[si] ? sorts[si] : "none", i,
                          seen[i]);
    }
}
END_TEST

/* ---- conditional headers ---------------------------------------------- */

START_TEST(test_if_modified_since)
{
    put_ok("/storage/tabs/a", "{\"payload\":\"x\"}");
    tu_resp r = sf_req("GET", "/storage/tabs", NULL);
    int64_t t = sf_ts_header(&r, "X-Last-Modified");
    tu_resp_free(&r);
    char h[64], h2[64];
    snprintf(h, sizeof h, "X-If-Modified-Since: %lld.%02lld", (long long)(t / 100), (long long)(t % 100));
    snprintf(h2, sizeof h2, "X-If-Modified-Since: %lld.%02lld", (long long)((t - 1) / 100),
             (long long)((t - 1) % 100));
    const char *paths[] = {"/storage/tabs", "/storage/tabs/a", "/info/collections",
                           "/info/collection_counts"};
    for (size_t i = 0; i < 4; i++) {
        const char *hs[] = {h, NULL};
        r = sf_req_h("GET", paths[i], NULL, NULL, hs);
        ck_assert_msg(r.status == 304, "%s: %ld", paths[i], r.status);
        ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), t);
        ck_assert_int_eq(r.len, 0);
        tu_resp_free(&r);
        const char *hs2[] = {h2, NULL};
        r = sf_req_h("GET", paths[i], NULL, NULL, hs2);
        ck_assert_msg(r.status == 200, "%s: %ld", paths[i], r.status);
        tu_resp_free(&r);
    }
    /* both headers, malformed values */
    const char *both[] = {h, "X-If-Unmodified-Since: 1.00", NULL};
    r = sf_req_h("GET", "/storage/tabs", NULL, NULL, both);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
    const char *badv[] = {"X-If-Modified-Since: yesterday", NULL};
    r = sf_req_h("GET", "/storage/tabs", NULL, NULL, badv);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
    const char *badu[] = {"X-If-Unmodified-Since: -5", NULL};
    r = sf_req_h("PUT", "/storage/tabs/a", "application/json", "{}", badu);
    sf_expect(&r, 400, 1);
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_if_unmodified_since)
{
    put_ok("/storage/tabs/a", "{\"payload\":\"x\"}");
    tu_resp r = sf_req("GET", "/storage/tabs/a", NULL);
    int64_t t = sf_ts_header(&r, "X-Last-Modified");
    tu_resp_free(&r);
    char old[64], cur[64];
    snprintf(old, sizeof old, "X-If-Unmodified-Since: %lld.%02lld", (long long)((t - 1) / 100),
             (long long)((t - 1) % 100));
    snprintf(cur, sizeof cur, "X-If-Unmodified-Since: %lld.%02lld", (long long)(t / 100),
             (long long)(t % 100));
    const char *ho[] = {old, NULL}, *hc[] = {cur, NULL}, *h0[] = {"X-If-Unmodified-Since: 0", NULL};
    char *before = sf_snapshot();
    struct {
        const char *m, *p, *body;
    } w[] = {{"PUT", "/storage/tabs/a", "{\"payload\":\"y\"}"},
             {"POST", "/storage/tabs", "[{\"id\":\"b\"}]"},
             {"DELETE", "/storage/tabs/a", NULL},
             {"DELETE", "/storage/tabs", NULL},
             {"DELETE", "/storage/tabs?ids=a", NULL},
             {"DELETE", "/storage", NULL},
             {"GET", "/storage/tabs", NULL},
             {"GET", "/storage/tabs/a", NULL}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        r = sf_req_h(w[i].m, w[i].p, w[i].body ? "application/json" : NULL, w[i].body, ho);
        ck_assert_msg(r.status == 412, "%s %s: %ld", w[i].m, w[i].p, r.status);
        ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), t);
        tu_resp_free(&r);
    }
    /* 0: create only if absent */
    r = sf_req_h("PUT", "/storage/tabs/a", "application/json", "{\"payload\":\"y\"}", h0);
    sf_expect(&r, 412, 0);
    tu_resp_free(&r);
    char *after = sf_snapshot();
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    r = sf_req_h("PUT", "/storage/tabs/new", "application/json", "{\"payload\":\"y\"}", h0);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    /* the current value passes (the collection moved on: use the item's) */
    r = sf_req_h("PUT", "/storage/tabs/a", "application/json", "{\"payload\":\"z\"}", hc);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
}
END_TEST

/* Two clients write the same collection with the same X-If-Unmodified-Since:
 * exactly one wins. */
typedef struct racer {
    const char *hdr;
    int idx;
    long status;
} racer;

static void *race(void *arg)
{
    racer *rc = arg;
    const char *h[] = {rc->hdr, NULL};
    char body[64];
    snprintf(body, sizeof body, "[{\"id\":\"r%d\",\"payload\":\"x\"}]", rc->idx);
    char target[64];
    snprintf(target, sizeof target, "/1.5/%d/storage/race", SF_UID);
    tu_req o = {
        .ctype = "application/json", .body = body, .len = strlen(body), .headers = h, .cred = &SF.cred};
    tu_resp r;
    if (tu_http(&r, "POST", SF.base, target, &o) == 0)
        rc->status = r.status;
    tu_resp_free(&r);
    return NULL;
}

START_TEST(test_concurrent_writers)
{
    for (int round = 0; round < 10; round++) {
        tu_resp r = sf_req("GET", "/storage/race", NULL);
        int64_t t = sf_ts_header(&r, "X-Last-Modified");
        tu_resp_free(&r);
        char hdr[64];
        snprintf(hdr, sizeof hdr, "X-If-Unmodified-Since: %lld.%02lld", (long long)(t / 100),
                 (long long)(t % 100));
        racer a = {hdr, round * 2, 0}, b = {hdr, round * 2 + 1, 0};
        pthread_t ta, tb;
        pthread_create(&ta, NULL, race, &a);
        pthread_create(&tb, NULL, race, &b);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        ck_assert_msg((a.status == 200 && b.status == 412) || (a.status == 412 && b.status == 200),
                      "round %d: %ld %ld", round, a.status, b.status);
    }
    tu_resp r = sf_req("GET", "/storage/race", NULL);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_array_size(j), 10);
    json_decref(j);
    tu_resp_free(&r);
}
END_TEST

/* Many writers at once: every write gets its own timestamp. */
typedef struct writer {
    int idx;
    int64_t ts[15];
} writer;

static void *write_many(void *arg)
{
    writer *w = arg;
    for (int i = 0; i < 15; i++) {
        char target[96];
        snprintf(target, sizeof target, "/1.5/%d/storage/w%d/i%d", SF_UID, w->idx, i);
        tu_req o = {.ctype = "application/json", .body = "{\"payload\":\"p\"}", .len = 15, .cred = &SF.cred};
        tu_resp r;
        w->ts[i] = -1;
        if (tu_http(&r, "PUT", SF.base, target, &o) == 0 && r.status == 200) {
            char *v = tu_resp_header(&r, "X-Last-Modified");
            if (v) {
                size_t n = strlen(v);
                w->ts[i] = strtoll(v, NULL, 10) * 100 + strtoll(v + n - 2, NULL, 10);
                free(v);
            }
        }
        tu_resp_free(&r);
    }
    return NULL;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

START_TEST(test_concurrent_timestamps_unique)
{
    writer w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i].idx = i;
        pthread_create(&t[i], NULL, write_many, &w[i]);
    }
    int64_t all[60];
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        for (int k = 0; k < 15; k++) {
            ck_assert_int_gt(w[i].ts[k], 0);
            if (k)
                ck_assert_int_gt(w[i].ts[k], w[i].ts[k - 1]);
            all[i * 15 + k] = w[i].ts[k];
        }
    }
    qsort(all, 60, sizeof all[0], cmp64);
    for (int i = 1; i < 60; i++)
        ck_assert_int_gt(all[i], all[i - 1]);
    tu_resp r = sf_req("GET", "/info/collections", NULL);
    ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), all[59]);
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_mount_on_shared_server)
{
    /* `picl server`: the storage routes on a server someone else owns. */
    storage_server *s = NULL;
    storage_config c = {
        .data_dir = SF.dir, .secret = SF_SECRET, .secret_len = SF_SECRET_LEN, .prune_interval_s = -1};
    ck_assert_int_eq(storage_server_new(&s, &c), PICL_OK);
    srv_http_server *h;
    srv_http_config hc = {.listen = "127.0.0.1:0", .max_body = 16384};
    ck_assert_int_eq(srv_http_server_new(&h, &hc), PICL_OK);
    ck_assert_int_eq(storage_server_mount(s, h, 1), PICL_ERROR_INVALID_ARGUMENT); /* no node */
    storage_server_free(s);
    c.node = "http://127.0.0.1:1";
    ck_assert_int_eq(storage_server_new(&s, &c), PICL_OK);
    ck_assert_int_eq(storage_server_mount(s, h, 1), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(h), PICL_OK);
    tu_cred cr;
    tu_mint(&cr, SF_SECRET, SF_SECRET_LEN, "http://127.0.0.1:1", SF_UID, 3600);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%u", srv_http_server_port(h));
    /* a body over the server's 16 KiB but within max_request_bytes */
    size_t len = 100000;
    char *body = malloc(len + 64);
    int n = snprintf(body, 64, "{\"payload\":\"");
    memset(body + n, 'a', len);
    snprintf(body + n + len, 8, "\"}");
    tu_req o = {.ctype = "application/json", .body = body, .len = strlen(body), .cred = &cr};
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, "PUT", base, "/1.5/42/storage/tabs/big", &o), 0);
    ck_assert_int_eq(r.status, 200);
    tu_resp_free(&r);
    /* the heartbeat was left to the owner */
    ck_assert_int_eq(tu_http(&r, "GET", base, "/__heartbeat__", NULL), 0);
    ck_assert_int_eq(r.status, 404);
    tu_resp_free(&r);
    free(body);
    tu_cred_free(&cr);
    srv_http_server_free(h);
    storage_server_free(s);
}
END_TEST

START_TEST(test_timestamps_strictly_increase)
{
    int64_t last = 0;
    for (int i = 0; i < 30; i++) {
        tu_resp r = sf_req("PUT", i % 2 ? "/storage/a/x" : "/storage/b/y", "{\"payload\":\"p\"}");
        sf_expect(&r, 200, -1);
        int64_t t = sf_ts_header(&r, "X-Last-Modified");
        ck_assert_int_gt(t, last);
        last = t;
        tu_resp_free(&r);
    }
    sf_restart();
    tu_resp r = sf_req("GET", "/storage/a/x", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    for (int i = 0; i < 5; i++) {
        r = sf_req("DELETE", "/storage/a/x", NULL);
        if (i == 0)
            sf_expect(&r, 200, -1);
        tu_resp_free(&r);
        r = sf_req("PUT", "/storage/a/x", "{\"payload\":\"q\"}");
        int64_t t = sf_ts_header(&r, "X-Last-Modified");
        ck_assert_int_gt(t, last);
        last = t;
        tu_resp_free(&r);
    }
    /* /info/collections reports the last writes */
    r = sf_req("GET", "/info/collections", NULL);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_object_size(j), 2);
    ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), last);
    ck_assert_int_ge(sf_ts_header(&r, "X-Weave-Timestamp"), last);
    json_decref(j);
    tu_resp_free(&r);
}
END_TEST

/* ---- deletes ---------------------------------------------------------- */

START_TEST(test_deletes)
{
    post_n("one", 0, 4);
    post_n("two", 0, 2);
    tu_resp r = sf_req("DELETE", "/storage/one?ids=i000,i002", NULL);
    sf_expect(&r, 200, -1);
    int64_t t = sf_ts_header(&r, "X-Last-Modified");
    json_t *j = sf_json(&r);
    ck_assert_msg(strstr(r.body, "\"modified\":") != NULL, "%s", r.body);
    json_decref(j);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/one", NULL);
    ck_assert_str_eq(r.body, "[\"i001\",\"i003\"]");
    ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), t);
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage/one/i001", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage/one/i001", NULL);
    sf_expect(&r, 404, 0);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/one/i001", NULL);
    sf_expect(&r, 404, 0);
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage/one", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    /* a collection that is gone: 200, like Mozilla's servers, writing nothing */
    int64_t before_all = 0;
    r = sf_req("GET", "/info/collections", NULL);
    before_all = sf_ts_header(&r, "X-Last-Modified");
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage/one", NULL);
    sf_expect(&r, 200, -1);
    ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), before_all);
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage/never?ids=a,b", NULL);
    sf_expect(&r, 200, -1);
    ck_assert_int_eq(sf_ts_header(&r, "X-Last-Modified"), before_all);
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collections", NULL);
    j = sf_json(&r);
    ck_assert_ptr_null(json_object_get(j, "one"));
    ck_assert_ptr_nonnull(json_object_get(j, "two"));
    json_decref(j);
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage", NULL);
    sf_expect(&r, 200, -1);
    int64_t td = sf_ts_header(&r, "X-Last-Modified");
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collections", NULL);
    ck_assert_str_eq(r.body, "{}");
    tu_resp_free(&r);
    post_n("three", 0, 1);
    r = sf_req("DELETE", "", NULL); /* DELETE / of the endpoint */
    sf_expect(&r, 200, -1);
    ck_assert_int_gt(sf_ts_header(&r, "X-Last-Modified"), td);
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collection_counts", NULL);
    ck_assert_str_eq(r.body, "{}");
    tu_resp_free(&r);
}
END_TEST

/* ---- info, quota, ttl, backoff ---------------------------------------- */

START_TEST(test_info_counts_usage)
{
    put_ok("/storage/a/1", "{\"payload\":\"12345678\"}");
    put_ok("/storage/a/2", "{\"payload\":\"1234\"}");
    put_ok("/storage/b/1", "{\"payload\":\"\"}");
    tu_resp r = sf_req("GET", "/info/collection_counts", NULL);
    ck_assert_str_eq(r.body, "{\"a\":2,\"b\":1}");
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collection_usage", NULL);
    ck_assert_str_eq(r.body, "{\"a\":0.01,\"b\":0.00}");
    tu_resp_free(&r);
    r = sf_req("GET", "/info/quota", NULL);
    ck_assert_str_eq(r.body, "[0.01,null]");
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collections", NULL);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_object_size(j), 2);
    /* values carry exactly two decimals */
    ck_assert_msg(strstr(r.body, "\"a\":") && r.body[strlen(r.body) - 4] == '.', "%s", r.body);
    json_decref(j);
    tu_resp_free(&r);
}
END_TEST

START_TEST(test_ttl_expiry_and_prune)
{
    put_ok("/storage/t/short", "{\"payload\":\"x\",\"ttl\":1}");
    put_ok("/storage/t/long", "{\"payload\":\"y\",\"ttl\":1000}");
    tu_resp r = sf_req("GET", "/storage/t/short", NULL);
    sf_expect(&r, 200, -1);
    ck_assert_ptr_null(strstr(r.body, "ttl"));
    tu_resp_free(&r);
    struct timespec ts = {1, 200000000};
    nanosleep(&ts, NULL);
    r = sf_req("GET", "/storage/t/short", NULL);
    sf_expect(&r, 404, 0);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/t", NULL);
    ck_assert_str_eq(r.body, "[\"long\"]");
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collection_counts", NULL);
    ck_assert_str_eq(r.body, "{\"t\":1}");
    tu_resp_free(&r);
    /* an update of an expired record does not resurrect its payload */
    put_ok("/storage/t/short", "{\"sortindex\":1}");
    r = sf_req("GET", "/storage/t/short", NULL);
    json_t *j = sf_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "payload")), "");
    json_decref(j);
    tu_resp_free(&r);
    put_ok("/storage/t/gone", "{\"payload\":\"x\",\"ttl\":1}");
    nanosleep(&ts, NULL);
    int64_t removed = -1;
    ck_assert_int_eq(storage_server_prune(SF.srv, &removed), PICL_OK);
    ck_assert_int_eq(removed, 1);
}
END_TEST

START_TEST(test_backoff_and_unavailable)
{
    storage_server_set_backoff(SF.srv, 30);
    tu_resp r = sf_req("GET", "/info/collections", NULL);
    sf_expect(&r, 200, -1);
    char *b = tu_resp_header(&r, "X-Weave-Backoff");
    ck_assert_str_eq(b, "30");
    free(b);
    tu_resp_free(&r);
    storage_server_set_backoff(SF.srv, 0);
    storage_server_set_unavailable(SF.srv, 120);
    r = sf_req("PUT", "/storage/x/y", "{}");
    sf_expect(&r, 503, 0);
    b = tu_resp_header(&r, "Retry-After");
    ck_assert_str_eq(b, "120");
    free(b);
    sf_ts_header(&r, "X-Weave-Timestamp");
    tu_resp_free(&r);
    storage_server_set_unavailable(SF.srv, 0);
    r = sf_req("GET", "/storage/x/y", NULL);
    sf_expect(&r, 404, 0);
    b = tu_resp_header(&r, "X-Weave-Backoff");
    ck_assert_ptr_null(b);
    tu_resp_free(&r);
}
END_TEST

/* ---- quota (own fixture) ---------------------------------------------- */

static void quota_setup(void)
{
    storage_config c = {.quota_kb = 2,
                        .restore_days = -1}; /* SyncStorage's own quota rules (undo: test_restore) */
    sf_setup_with(&c);
}

START_TEST(test_quota)
{
    char body[1200];
    int n = snprintf(body, sizeof body, "{\"payload\":\"");
    memset(body + n, 'a', 1000);
    snprintf(body + n + 1000, 16, "\"}");
    tu_resp r = sf_req("PUT", "/storage/q/1", body);
    sf_expect(&r, 200, -1);
    char *rem = tu_resp_header(&r, "X-Weave-Quota-Remaining");
    ck_assert_str_eq(rem, "1.02");
    free(rem);
    tu_resp_free(&r);
    r = sf_req("PUT", "/storage/q/2", body);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    char *before = sf_snapshot();
    r = sf_req("PUT", "/storage/q/3", body);
    sf_expect(&r, 400, 14);
    tu_resp_free(&r);
    r = POST_JSON(
        "/storage/q",
        "[{\"id\":\"4\",\"payload\":\"0123456789012345678901234567890123456789012345678901234567890\"}]");
    sf_expect(&r, 400, 14);
    tu_resp_free(&r);
    char *after = sf_snapshot();
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    r = sf_req("GET", "/info/quota", NULL);
    ck_assert_str_eq(r.body, "[1.95,2]");
    tu_resp_free(&r);
    /* freeing space allows writes again */
    r = sf_req("DELETE", "/storage/q/1", NULL);
    sf_expect(&r, 200, -1);
    rem = tu_resp_header(&r, "X-Weave-Quota-Remaining");
    ck_assert_str_eq(rem, "1.02");
    free(rem);
    tu_resp_free(&r);
    r = sf_req("PUT", "/storage/q/3", body);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
}
END_TEST

static void prune_setup(void)
{
    storage_config c = {.prune_interval_s = 1};
    sf_setup_with(&c);
}

/* Rows in bsos, counted behind the server's back. */
static int64_t raw_rows(void) { return sf_sql_int("SELECT count(*) FROM bsos"); }

START_TEST(test_prune_thread)
{
    put_ok("/storage/t/a", "{\"payload\":\"x\",\"ttl\":1}");
    put_ok("/storage/t/b", "{\"payload\":\"y\"}");
    ck_assert_int_eq(raw_rows(), 2);
    struct timespec ts = {0, 200000000};
    for (int i = 0; i < 25 && raw_rows() != 1; i++)
        nanosleep(&ts, NULL);
    ck_assert_int_eq(raw_rows(), 1);
}
END_TEST

static void busy_setup(void)
{
    storage_config c = {.busy_timeout_ms = 200};
    sf_setup_with(&c);
}

/* Another writer holds the database: 409 with Retry-After, nothing written;
 * reads go on; once it is gone the write succeeds. */
START_TEST(test_conflict_409)
{
    put_ok("/storage/t/a", "{\"payload\":\"x\"}");
    char *before = sf_snapshot();
    char path[128];
    snprintf(path, sizeof path, "%s/storage.db", SF.dir);
    sqlite3 *db = NULL;
    void *held = NULL;
    if (SF.pgurl[0]) /* PostgreSQL: another writer holds the user's row */
        held = tupg_hold(SF.pgurl, "BEGIN; SELECT 1 FROM users WHERE uid = 42 FOR UPDATE");
    else
        ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    if (db)
        ck_assert_int_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    tu_resp r = sf_req("PUT", "/storage/t/a", "{\"payload\":\"y\"}");
    sf_expect(&r, 409, 0);
    char *ra = tu_resp_header(&r, "Retry-After");
    ck_assert_str_eq(ra, "1");
    free(ra);
    sf_ts_header(&r, "X-Weave-Timestamp");
    tu_resp_free(&r);
    r = POST_JSON("/storage/t", "[{\"id\":\"b\"}]");
    sf_expect(&r, 409, 0);
    tu_resp_free(&r);
    r = sf_req("DELETE", "/storage", NULL);
    sf_expect(&r, 409, 0);
    tu_resp_free(&r);
    char *during = sf_snapshot(); /* readers are not blocked (WAL) */
    ck_assert_str_eq(before, during);
    free(during);
    if (db)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    tupg_release(held);
    char *after = sf_snapshot();
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    put_ok("/storage/t/a", "{\"payload\":\"y\"}");
}
END_TEST

static void small_setup(void)
{
    storage_config c = {.limits = {.max_record_payload_bytes = 2048, .max_request_bytes = 8192}};
    sf_setup_with(&c);
}

static void config_start_errors(void)
{
    storage_server *s = NULL;
    storage_config c = {.data_dir = "/tmp", .secret = SF_SECRET, .secret_len = 31};
    ck_assert_int_eq(storage_server_new(&s, &c), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(s);
    c.secret = NULL;
    c.secret_len = 0;
    ck_assert_int_eq(storage_server_new(&s, &c), PICL_ERROR_INVALID_ARGUMENT);
    c.secret = SF_SECRET;
    c.secret_len = SF_SECRET_LEN;
    c.data_dir = "/nonexistent/dir";
    ck_assert_int_eq(storage_server_new(&s, &c), PICL_ERROR_IO);
}

START_TEST(test_start_errors)
{
    config_start_errors();
    /* the same port twice */
    storage_server *s = NULL;
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", storage_server_port(SF.srv));
    storage_config c = {.listen = listen,
                        .data_dir = SF.dir,
                        .secret = SF_SECRET,
                        .secret_len = SF_SECRET_LEN,
                        .prune_interval_s = -1};
    ck_assert_int_eq(storage_server_new(&s, &c), PICL_OK);
    ck_assert_int_eq(storage_server_start(s), PICL_ERROR_NETWORK);
    storage_server_free(s);
}
END_TEST

START_TEST(test_parse_ts)
{
    struct {
        const char *in;
        int ok;
        int64_t want;
    } v[] = {{"0", 1, 0},         {"12", 1, 1200}, {"12.3", 1, 1230}, {"12.34", 1, 1234},
             {"12.349", 1, 1234}, {"", 0, 0},      {"-1", 0, 0},      {"1.", 0, 0},
             {".5", 0, 0},        {"1e3", 0, 0},   {"1 ", 0, 0},      {"1234567890123", 0, 0},
             {"0x10", 0, 0}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        int64_t c = -1;
        picl_status st = picl__synctime_parse(v[i].in, strlen(v[i].in), &c);
        ck_assert_msg((st == PICL_OK) == v[i].ok, "'%s'", v[i].in);
        if (v[i].ok)
            ck_assert_int_eq(c, v[i].want);
    }
}
END_TEST

/* One pragma's value on a connection of the SQLite pool, as text. */
static void pragma_text(sqlite3 *c, const char *pragma, char *out, size_t cap)
{
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA %s", pragma);
    sqlite3_stmt *q;
    ck_assert_int_eq(sqlite3_prepare_v2(c, sql, -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    snprintf(out, cap, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
}

/* Every pooled SQLite connection reads through a 256 MiB mmap (issue 15:
 * listings were pread copies) and keeps WAL with synchronous=FULL (2). */
START_TEST(test_sqlite_pragmas)
{
    if (SF.pgurl[0])
        return; /* the SQLite backend's connections only */
    char dir[64] = "/tmp/picl-sdb-pragma-XXXXXX", path[128], v[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    sdb *db = NULL;
    ck_assert_int_eq(sdb_open(&db, dir, 0, 0, NULL), PICL_OK);
    sdb_conn *c[3] = {NULL, NULL, NULL}; /* three at once: three handles */
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(sdb_acquire(db, &c[i]), PICL_OK);
        pragma_text(sq_of(c[i]), "mmap_size", v, sizeof v);
        ck_assert_str_eq(v, "268435456");
        pragma_text(sq_of(c[i]), "journal_mode", v, sizeof v);
        ck_assert_str_eq(v, "wal");
        pragma_text(sq_of(c[i]), "synchronous", v, sizeof v);
        ck_assert_str_eq(v, "2");
    }
    ck_assert_ptr_ne(sq_of(c[0]), sq_of(c[1]));
    for (int i = 0; i < 3; i++)
        sdb_release(db, c[i]);
    sdb_close(db);
    const char *files[] = {"storage.db", "storage.db-wal", "storage.db-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_api");
    TCase *tc = tcase_create("api");
    tcase_add_checked_fixture(tc, sf_setup, sf_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_heartbeat);
    tcase_add_test(tc, test_info_configuration);
    tcase_add_test(tc, test_put_get_item);
    tcase_add_test(tc, test_put_merges_and_null_resets);
    tcase_add_test(tc, test_put_bad_inputs_change_nothing);
    tcase_add_test(tc, test_length_required_and_method);
    tcase_add_test(tc, test_post_and_list);
    tcase_add_test(tc, test_post_bad_bodies);
    tcase_add_test(tc, test_post_newlines);
    tcase_add_test(tc, test_post_text_plain_and_slash_delete);
    tcase_add_test(tc, test_get_params);
    tcase_add_test(tc, test_paging_while_writing);
    tcase_add_test(tc, test_if_modified_since);
    tcase_add_test(tc, test_if_unmodified_since);
    tcase_add_test(tc, test_concurrent_writers);
    tcase_add_test(tc, test_timestamps_strictly_increase);
    tcase_add_test(tc, test_concurrent_timestamps_unique);
    tcase_add_test(tc, test_mount_on_shared_server);
    tcase_add_test(tc, test_deletes);
    tcase_add_test(tc, test_info_counts_usage);
    tcase_add_test(tc, test_ttl_expiry_and_prune);
    tcase_add_test(tc, test_backoff_and_unavailable);
    tcase_add_test(tc, test_start_errors);
    tcase_add_test(tc, test_parse_ts);
    tcase_add_test(tc, test_sqlite_pragmas);
    suite_add_tcase(s, tc);
    TCase *small = tcase_create("limits");
    tcase_add_checked_fixture(small, small_setup, sf_teardown);
    tcase_set_timeout(small, 60);
    tcase_add_test(small, test_payload_limit);
    tcase_add_test(small, test_request_size_limit);
    suite_add_tcase(s, small);
    TCase *busy = tcase_create("busy");
    tcase_add_checked_fixture(busy, busy_setup, sf_teardown);
    tcase_set_timeout(busy, 60);
    tcase_add_test(busy, test_conflict_409);
    suite_add_tcase(s, busy);
    TCase *pr = tcase_create("prune");
    tcase_add_checked_fixture(pr, prune_setup, sf_teardown);
    tcase_set_timeout(pr, 60);
    tcase_add_test(pr, test_prune_thread);
    suite_add_tcase(s, pr);
    TCase *q = tcase_create("quota");
    tcase_add_checked_fixture(q, quota_setup, sf_teardown);
    tcase_set_timeout(q, 60);
    tcase_add_test(q, test_quota);
    suite_add_tcase(s, q);
    return s;
}

int main(void) { return tu_run(suite()); }
