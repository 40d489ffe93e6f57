/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_client.c -- the libcurl storage client against the in-process
 * storage server: every call, paging, batching, conditions, backoff, refresh. */
#include <locale.h>
#include <sqlite3.h>

#include "client/storage_client.h"
#include "protocol/synctime.h"
#include "http/http.h"
#include "storage_fixture.h"
#include "testutil.h"

static picl_stc *C;
static char endpoint[160];

static void client_setup_with(const storage_config *cfg)
{
    sf_setup_with(cfg);
    snprintf(endpoint, sizeof endpoint, "%s/1.5/%d", SF.node, SF_UID);
    ck_assert_int_eq(picl__stc_new(&C, endpoint, SF.cred.token, SF.cred.key), PICL_OK);
}

static void client_setup(void) { client_setup_with(NULL); }

static void client_teardown(void)
{
    picl__stc_free(C);
    C = NULL;
    sf_teardown();
}

static json_t *bso(const char *id, const char *payload, int sortindex)
{
    return json_pack("{s:s, s:s, s:i}", "id", id, "payload", payload, "sortindex", sortindex);
}

START_TEST(test_roundtrip_all_calls)
{
    json_t *j = NULL;
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_OK);
    ck_assert_int_eq(json_object_size(j), 0);
    json_decref(j);
    picl_stc_limits lim;
    ck_assert_int_eq(picl__stc_limits(C, &lim), PICL_OK);
    ck_assert_int_eq(lim.max_post_records, 100);
    ck_assert_int_eq(lim.max_total_bytes, 100 * 1024 * 1024);

    json_t *b = bso("a b/c", "first", 3);
    int64_t m1 = 0;
    ck_assert_int_eq(picl__stc_put(C, "tabs", "a b/c", b, -1, &m1), PICL_OK);
    ck_assert_int_gt(m1, 0);
    json_decref(b);
    ck_assert_int_eq(picl__stc_get_item(C, "tabs", "a b/c", &j), PICL_OK);
    ck_assert_str_eq(json_string_value(json_object_get(j, "payload")), "first");
    ck_assert_int_eq(picl__stc_last(C)->last_modified, m1);
    json_decref(j);

    json_t *list = json_array();
    for (int i = 0; i < 5; i++) {
        char id[8];
        snprintf(id, sizeof id, "p%d", i);
        json_array_append_new(list, bso(id, "x", i));
    }
    json_array_append_new(list, json_pack("{s:s, s:i}", "id", "bad", "ttl", -1));
    picl_stc_post_result pr;
    ck_assert_int_eq(picl__stc_post(C, "tabs", list, -1, &pr), PICL_OK);
    ck_assert_int_eq(json_array_size(pr.success), 5);
    ck_assert_int_eq(json_object_size(pr.failed), 1);
    ck_assert_int_gt(pr.modified, m1);
    picl__stc_post_result_clear(&pr);
    json_decref(list);

    picl_stc_query q = {.newer = -1,
                        .older = -1,
                        .if_modified_since = -1,
                        .if_unmodified_since = -1,
                        .sort = "index",
                        .full = 1};
    ck_assert_int_eq(picl__stc_get(C, "tabs", &q, &j, NULL), PICL_OK);
    ck_assert_int_eq(json_array_size(j), 6);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "id")), "p4");
    ck_assert_int_eq(picl__stc_last(C)->records, 6);
    json_decref(j);

    const char *names[] = {"quota", "collection_usage", "collection_counts", "configuration"};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(picl__stc_info(C, names[i], -1, &j), PICL_OK);
        ck_assert_ptr_nonnull(j);
        json_decref(j);
    }
    ck_assert_int_eq(picl__stc_info(C, "nonsense", -1, &j), PICL_ERROR_INVALID_ARGUMENT);

    const char *ids[] = {"p0", "p1"};
    int64_t m;
    ck_assert_int_eq(picl__stc_delete(C, "tabs", ids, 2, -1, &m), PICL_OK);
    ck_assert_int_eq(picl__stc_delete_item(C, "tabs", "a b/c", -1, &m), PICL_OK);
    ck_assert_int_eq(picl__stc_get_item(C, "tabs", "a b/c", &j), PICL_ERROR_NOT_FOUND);
    ck_assert_ptr_null(j);
    ck_assert_int_eq(picl__stc_last(C)->http_status, 404);
    ck_assert_int_eq(picl__stc_info(C, "collection_counts", -1, &j), PICL_OK);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "tabs")), 3);
    json_decref(j);
    ck_assert_int_eq(picl__stc_delete(C, "tabs", NULL, 0, -1, &m), PICL_OK);
    ck_assert_int_eq(picl__stc_delete(C, "tabs", NULL, 0, -1, &m), PICL_OK); /* gone: 200, as Mozilla */
    b = bso("z", "z", 1);
    ck_assert_int_eq(picl__stc_put(C, "other", "z", b, -1, NULL), PICL_OK);
    json_decref(b);
    ck_assert_int_eq(picl__stc_delete_all(C, -1, &m), PICL_OK);
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_OK);
    ck_assert_int_eq(json_object_size(j), 0);
    json_decref(j);
}
END_TEST

START_TEST(test_paging)
{
    json_t *list = json_array();
    for (int i = 0; i < 25; i++) {
        char id[8];
        snprintf(id, sizeof id, "r%02d", i);
        json_array_append_new(list, bso(id, "x", i));
    }
    picl_stc_post_result pr;
    ck_assert_int_eq(picl__stc_post(C, "h", list, -1, &pr), PICL_OK);
    picl__stc_post_result_clear(&pr);
    json_decref(list);
    picl_stc_query q = {.newer = -1,
                        .older = -1,
                        .if_modified_since = -1,
                        .if_unmodified_since = -1,
                        .limit = 4,
                        .sort = "oldest"};
    json_t *all;
    ck_assert_int_eq(picl__stc_get_all(C, "h", &q, 0, &all), PICL_OK);
    ck_assert_int_eq(json_array_size(all), 25);
    for (int i = 0; i < 25; i++) {
        char id[8];
        snprintf(id, sizeof id, "r%02d", i);
        ck_assert_str_eq(json_string_value(json_array_get(all, (size_t)i)), id);
    }
    json_decref(all);
    ck_assert_int_eq(picl__stc_get_all(C, "h", &q, 10, &all), PICL_ERROR_TOO_LARGE);
    ck_assert_ptr_null(all);
    /* one page by hand */
    json_t *page;
    char *next = NULL;
    ck_assert_int_eq(picl__stc_get(C, "h", &q, &page, &next), PICL_OK);
    ck_assert_int_eq(json_array_size(page), 4);
    ck_assert_ptr_nonnull(next);
    json_decref(page);
    free(next);
}
END_TEST

START_TEST(test_conditions)
{
    json_t *b = bso("a", "x", 1), *j;
    int64_t m;
    ck_assert_int_eq(picl__stc_put(C, "c", "a", b, -1, &m), PICL_OK);
    ck_assert_int_eq(picl__stc_put(C, "c", "a", b, m - 1, NULL), PICL_ERROR_CONFLICT);
    ck_assert_int_eq(picl__stc_last(C)->http_status, 412);
    json_decref(b);
    b = bso("b", "x", 1);
    ck_assert_int_eq(picl__stc_put(C, "c", "b", b, 0, NULL), PICL_OK);
    ck_assert_int_eq(picl__stc_put(C, "c", "b", b, 0, NULL), PICL_ERROR_CONFLICT);
    json_decref(b);
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_OK);
    int64_t now = picl__stc_last(C)->last_modified;
    json_decref(j);
    ck_assert_int_eq(picl__stc_info(C, "collections", now, &j), PICL_OK);
    ck_assert_ptr_null(j);
    ck_assert_int_eq(picl__stc_last(C)->not_modified, 1);
    picl_stc_query q = {.newer = -1, .older = -1, .if_modified_since = -1, .if_unmodified_since = m - 1};
    ck_assert_int_eq(picl__stc_get(C, "c", &q, &j, NULL), PICL_ERROR_CONFLICT);
    ck_assert_ptr_null(j);
}
END_TEST

START_TEST(test_backoff)
{
    json_t *j;
    storage_server_set_backoff(SF.srv, 7);
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_OK);
    json_decref(j);
    ck_assert_int_eq(picl__stc_last(C)->backoff_s, 7);
    storage_server_set_backoff(SF.srv, 0);
    /* remembered: no request is sent until it has passed */
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_ERROR_BACKOFF);
    ck_assert_int_eq(picl__stc_last(C)->http_status, 0);
    ck_assert_int_ge(picl__stc_last(C)->backoff_s, 6);
    picl__stc_clear_backoff(C);
    storage_server_set_unavailable(SF.srv, 42);
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_ERROR_BACKOFF);
    ck_assert_int_eq(picl__stc_last(C)->http_status, 503);
    ck_assert_int_eq(picl__stc_last(C)->backoff_s, 42);
    storage_server_set_unavailable(SF.srv, 0);
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_ERROR_BACKOFF);
    picl__stc_clear_backoff(C);
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_OK);
    json_decref(j);
}
END_TEST

static int refreshes;
static picl_status refresh_ok(void *ctx, char **ep, char **id, char **key)
{
    refreshes++;
    *ep = strdup(endpoint);
    *id = strdup(SF.cred.token);
    *key = strdup(SF.cred.key);
    return PICL_OK;
}

static picl_status refresh_fail(void *ctx, char **ep, char **id, char **key)
{
    refreshes++;
    return PICL_ERROR_NETWORK;
}

START_TEST(test_token_refresh)
{
    tu_cred old;
    tu_mint(&old, SF_SECRET, SF_SECRET_LEN, SF.node, SF_UID, -3600);
    picl_stc *c;
    ck_assert_int_eq(picl__stc_new(&c, endpoint, old.token, old.key), PICL_OK);
    json_t *j;
    ck_assert_int_eq(picl__stc_get(c, "x", NULL, &j, NULL), PICL_ERROR_TOKEN);
    ck_assert_int_eq(picl__stc_last(c)->http_status, 401);
    picl__stc_set_refresh(c, refresh_fail, NULL);
    refreshes = 0;
    ck_assert_int_eq(picl__stc_get(c, "x", NULL, &j, NULL), PICL_ERROR_NETWORK);
    ck_assert_int_eq(refreshes, 1);
    picl__stc_set_refresh(c, refresh_ok, NULL);
    refreshes = 0;
    ck_assert_int_eq(picl__stc_get(c, "x", NULL, &j, NULL), PICL_OK);
    ck_assert_int_eq(refreshes, 1);
    json_decref(j);
    /* now the new credentials are used without a refresh */
    ck_assert_int_eq(picl__stc_get(c, "x", NULL, &j, NULL), PICL_OK);
    ck_assert_int_eq(refreshes, 1);
    json_decref(j);
    picl__stc_free(c);
    tu_cred_free(&old);
}
END_TEST

START_TEST(test_clock_skew_corrected)
{
    picl__stc_set_clock_offset(C, -600);
    json_t *j;
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_OK);
    json_decref(j);
    int64_t off = picl__stc_clock_offset(C);
    ck_assert_msg(off > -3 && off < 3, "offset %lld", (long long)off);
    /* within the server's 60 s window: accepted as it is, offset kept */
    picl__stc_set_clock_offset(C, 20);
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_OK);
    json_decref(j);
    ck_assert_int_eq(picl__stc_clock_offset(C), 20);
}
END_TEST

START_TEST(test_page_conflict)
{
    json_t *list = json_array();
    for (int i = 0; i < 6; i++) {
        char id[8];
        snprintf(id, sizeof id, "c%d", i);
        json_array_append_new(list, bso(id, "x", i));
    }
    picl_stc_post_result pr;
    ck_assert_int_eq(picl__stc_post(C, "pc", list, -1, &pr), PICL_OK);
    picl__stc_post_result_clear(&pr);
    json_decref(list);
    picl_stc_query q = {
        .newer = -1, .older = -1, .if_modified_since = -1, .if_unmodified_since = -1, .limit = 2};
    json_t *page;
    char *next;
    ck_assert_int_eq(picl__stc_get(C, "pc", &q, &page, &next), PICL_OK);
    json_decref(page);
    int64_t first = picl__stc_last(C)->last_modified;
    json_t *b = bso("new", "y", 1);
    ck_assert_int_eq(picl__stc_put(C, "pc", "new", b, -1, NULL), PICL_OK);
    json_decref(b);
    q.offset = next;
    q.if_unmodified_since = first;
    ck_assert_int_eq(picl__stc_get(C, "pc", &q, &page, NULL), PICL_ERROR_CONFLICT);
    ck_assert_ptr_null(page);
    free(next);
}
END_TEST

START_TEST(test_errors)
{
    picl_stc *c;
    ck_assert_int_eq(picl__stc_new(&c, "ftp://x/1.5/1", "a", "b"), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__stc_new(&c, "http://127.0.0.1:1/1.5/42", SF.cred.token, SF.cred.key), PICL_OK);
    json_t *j;
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_ERROR_NETWORK);
    picl__stc_free(c);
    json_t *b = json_pack("{s:i}", "ttl", -1);
    ck_assert_int_eq(picl__stc_put(C, "c", "a", b, -1, NULL), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__stc_last(C)->error_code, 8);
    json_decref(b);
    b = bso("a", "x", 1);
    ck_assert_int_eq(picl__stc_put(C, "bad/name", "a", b, -1, NULL), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__stc_last(C)->error_code, 13);
    json_decref(b);
}
END_TEST

/* ---- batching within small limits ------------------------------------- */

static void small_setup(void)
{
    storage_config c = {
        .limits = {
            .max_post_records = 3, .max_post_bytes = 100, .max_total_records = 20, .max_total_bytes = 1000}};
    client_setup_with(&c);
}

START_TEST(test_batching)
{
    json_t *list = json_array();
    for (int i = 0; i < 10; i++) {
        char id[8];
        snprintf(id, sizeof id, "b%d", i);
        json_array_append_new(list, bso(id, "0123456789012345678901234567890123456789", i));
    }
    picl_stc_post_result pr;
    ck_assert_int_eq(picl__stc_post(C, "many", list, -1, &pr), PICL_OK);
    ck_assert_int_eq(json_array_size(pr.success), 10);
    int64_t t = pr.modified;
    picl__stc_post_result_clear(&pr);
    picl_stc_query q = {
        .newer = -1, .older = -1, .if_modified_since = -1, .if_unmodified_since = -1, .full = 1};
    json_t *all;
    ck_assert_int_eq(picl__stc_get(C, "many", &q, &all, NULL), PICL_OK);
    ck_assert_int_eq(json_array_size(all), 10);
    for (size_t i = 0; i < 10; i++) {
        double mod = json_real_value(json_object_get(json_array_get(all, i), "modified"));
        ck_assert_int_eq((int64_t)(mod * 100 + 0.5), t);
    }
    json_decref(all);
    /* over max_total_records: refused before anything is sent */
    for (int i = 10; i < 21; i++) {
        char id[8];
        snprintf(id, sizeof id, "b%d", i);
        json_array_append_new(list, bso(id, "x", i));
    }
    json_t *before;
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &before), PICL_OK);
    ck_assert_int_eq(picl__stc_post(C, "many", list, -1, &pr), PICL_ERROR_TOO_LARGE);
    ck_assert_ptr_null(pr.success);
    json_t *after;
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &after), PICL_OK);
    ck_assert(json_equal(before, after));
    json_decref(before);
    json_decref(after);
    json_decref(list);
}
END_TEST

static void busy_setup(void)
{
    storage_config c = {.busy_timeout_ms = 100};
    client_setup_with(&c);
}

START_TEST(test_conflict_409)
{
    char path[128];
    snprintf(path, sizeof path, "%s/storage.db", SF.dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    json_t *b = bso("a", "x", 1);
    ck_assert_int_eq(picl__stc_put(C, "c", "a", b, -1, NULL), PICL_ERROR_CONFLICT);
    ck_assert_int_eq(picl__stc_last(C)->http_status, 409);
    ck_assert_int_eq(picl__stc_last(C)->backoff_s, 1);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    /* a 409 is not remembered as a backoff: the retry goes through */
    ck_assert_int_eq(picl__stc_put(C, "c", "a", b, -1, NULL), PICL_OK);
    json_decref(b);
}
END_TEST

/* ---- a malformed server ------------------------------------------------ */

static void bad_answer(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    const char *what = ctx;
    if (!strcmp(what, "config1"))
        srv_http_respond(resp, 200, "application/json", "{\"max_post_records\":\"x\"}", 25);
    else if (!strcmp(what, "config2")) {
        static const char cfg[] =
            "{\"max_request_bytes\":1000,\"max_post_records\":10,\"max_post_bytes\":1000,"
            "\"max_total_records\":10,\"max_total_bytes\":1000,\"max_record_payload_bytes\":100}";
        srv_http_respond(resp, 200, "application/json", cfg, sizeof cfg - 1);
    } else if (!strcmp(what, "notjson"))
        srv_http_respond(resp, 200, "application/json", "not json", 8);
    else if (!strcmp(what, "object")) {
        srv_http_respond(resp, 200, "application/json", "{\"a\":1}", 7);
        srv_http_add_header(resp, "X-Last-Modified", "abc");
        srv_http_add_header(resp, "X-Weave-Records", "-5");
    } else if (!strcmp(what, "array"))
        srv_http_respond(resp, 200, "application/json", "[1]", 3);
    else if (!strcmp(what, "nosuccess"))
        srv_http_respond(resp, 200, "application/json", "{\"modified\":1}", 14);
    else if (!strcmp(what, "500"))
        srv_http_respond(resp, 500, "text/plain", "oops", 4);
    else if (!strcmp(what, "418"))
        srv_http_respond(resp, 418, "text/plain", "teapot", 6);
    else
        srv_http_respond(resp, 429, "text/plain", "slow down", 9);
}

START_TEST(test_malformed_server)
{
    srv_http_server *h;
    srv_http_config hc = {.listen = "127.0.0.1:0"};
    ck_assert_int_eq(srv_http_server_new(&h, &hc), PICL_OK);
    struct {
        const char *m, *p, *what;
    } routes[] = {
        {"GET", "/1.5/1/info/configuration", "config1"}, {"GET", "/1.5/1/info/collections", "notjson"},
        {"GET", "/1.5/1/storage/c", "object"},           {"GET", "/1.5/1/storage/c/i", "array"},
        {"GET", "/1.5/1/storage/e500", "500"},           {"GET", "/1.5/1/storage/e418", "418"},
        {"GET", "/1.5/1/storage/e429", "429"},           {"GET", "/1.5/2/info/configuration", "config2"},
        {"POST", "/1.5/2/storage/c", "nosuccess"}};
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        ck_assert_int_eq(
            srv_http_route(h, routes[i].m, routes[i].p, bad_answer, (void *)routes[i].what, NULL), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(h), PICL_OK);
    char ep[96];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%u/1.5/1", srv_http_server_port(h));
    picl_stc *c;
    ck_assert_int_eq(picl__stc_new(&c, ep, "id", "key"), PICL_OK);
    picl_stc_limits lim;
    ck_assert_int_eq(picl__stc_limits(c, &lim), PICL_ERROR_PROTOCOL);
    json_t *j = (json_t *)1;
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_ERROR_PROTOCOL);
    ck_assert_ptr_null(j);
    j = (json_t *)1;
    ck_assert_int_eq(picl__stc_get(c, "c", NULL, &j, NULL), PICL_ERROR_PROTOCOL);
    ck_assert_ptr_null(j);
    ck_assert_int_eq(picl__stc_last(c)->last_modified, -1);
    ck_assert_int_eq(picl__stc_get_item(c, "c", "i", &j), PICL_ERROR_PROTOCOL);
    ck_assert_int_eq(picl__stc_get(c, "e500", NULL, &j, NULL), PICL_ERROR_SERVER);
    ck_assert_int_eq(picl__stc_get(c, "e418", NULL, &j, NULL), PICL_ERROR_PROTOCOL);
    ck_assert_int_eq(picl__stc_get(c, "e429", NULL, &j, NULL), PICL_ERROR_BACKOFF);
    ck_assert_int_eq(picl__stc_last(c)->backoff_s, 60); /* no Retry-After: a default */
    picl__stc_free(c);

    snprintf(ep, sizeof ep, "http://127.0.0.1:%u/1.5/2", srv_http_server_port(h));
    ck_assert_int_eq(picl__stc_new(&c, ep, "id", "key"), PICL_OK);
    json_t *list = json_array();
    json_array_append_new(list, bso("a", "x", 1));
    picl_stc_post_result pr;
    ck_assert_int_eq(picl__stc_post(c, "c", list, -1, &pr), PICL_ERROR_PROTOCOL);
    ck_assert_ptr_null(pr.success);
    ck_assert_int_eq(picl__stc_limits(c, &lim), PICL_OK);
    ck_assert_int_eq(lim.max_record_payload_bytes, 100);
    /* over the advertised limits: refused before sending */
    char big[200];
    memset(big, 'p', sizeof big - 1);
    big[sizeof big - 1] = 0;
    json_array_append_new(list, bso("b", big, 1));
    ck_assert_int_eq(picl__stc_post(c, "c", list, -1, &pr), PICL_ERROR_TOO_LARGE);
    json_decref(list);
    picl__stc_free(c);
    srv_http_server_free(h);
}
END_TEST

/* ---- a download page by page, and the listing reader ------------------------ */

typedef struct collected {
    json_t *ids, *mods, *payloads;
    int pages;
    int fail_at;          /* the page whose function fails (0: none) */
    picl_stc *write_with; /* writes a record from inside the first page */
} collected;

static picl_status collect(void *ctx, const picl_bso_view *items, size_t n)
{
    collected *k = ctx;
    k->pages++;
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(k->ids, json_string(items[i].id));
        json_array_append_new(k->mods, json_integer(items[i].modified));
        json_array_append_new(k->payloads, json_string(items[i].payload));
    }
    if (k->write_with && k->pages == 1) {
        json_t *b = bso("late", "z", 1);
        ck_assert_int_eq(picl__stc_put(k->write_with, "dl", "late", b, -1, NULL), PICL_OK);
        json_decref(b);
    }
    return k->pages == k->fail_at ? PICL_ERROR_STATE : PICL_OK;
}

START_TEST(test_download_each_matches_download)
{
    /* 2100 records: three pages of the download's 1000 */
    json_t *list = json_array();
    for (int i = 0; i < 2100; i++) {
        char id[8], pl[40];
        snprintf(id, sizeof id, "d%04d", i);
        snprintf(pl, sizeof pl, "{\"n\":%d,\"q\":\"a\\\"b\"}", i);
        json_array_append_new(list, bso(id, pl, i));
    }
    picl_stc_post_result pr;
    ck_assert_int_eq(picl__stc_post(C, "dl", list, -1, &pr), PICL_OK);
    picl__stc_post_result_clear(&pr);
    json_decref(list);

    json_t *items;
    int64_t listed = -1, listed2 = -1;
    uint64_t r0 = picl__stc_request_count(C);
    ck_assert_int_eq(picl__stc_download(C, "dl", 0, 0, &items, &listed), PICL_OK);
    uint64_t r1 = picl__stc_request_count(C);
    ck_assert_uint_eq(json_array_size(items), 2100);
    ck_assert_uint_eq(r1 - r0, 4); /* three pages and the probe */

    collected k = {json_array(), json_array(), json_array(), 0, 0, NULL};
    ck_assert_int_eq(picl__stc_download_each(C, "dl", 0, 0, collect, &k, &listed2), PICL_OK);
    ck_assert_uint_eq(picl__stc_request_count(C) - r1, 4); /* each page asked once, ahead or not */
    ck_assert_int_eq(k.pages, 3);
    ck_assert_int_eq(listed2, listed);
    ck_assert_uint_eq(json_array_size(k.ids), 2100);
    for (size_t i = 0; i < 2100; i++) {
        json_t *b = json_array_get(items, i);
        ck_assert_str_eq(json_string_value(json_array_get(k.ids, i)),
                         json_string_value(json_object_get(b, "id")));
        ck_assert_str_eq(json_string_value(json_array_get(k.payloads, i)),
                         json_string_value(json_object_get(b, "payload")));
        ck_assert_int_eq(json_integer_value(json_array_get(k.mods, i)),
                         picl__synctime_from_json(json_object_get(b, "modified"), -2));
    }
    char want[40];
    snprintf(want, sizeof want, "{\"n\":%d,\"q\":\"a\\\"b\"}", 2099);
    ck_assert_str_eq(json_string_value(json_array_get(k.payloads, 2099)), want);
    json_decref(items);

    /* a page function that fails ends the download with its status; the
     * page asked ahead is dropped, the client goes on normally */
    json_array_clear(k.ids);
    json_array_clear(k.mods);
    json_array_clear(k.payloads);
    k.pages = 0;
    k.fail_at = 2;
    ck_assert_int_eq(picl__stc_download_each(C, "dl", 0, 0, collect, &k, &listed2), PICL_ERROR_STATE);
    ck_assert_int_eq(listed2, -1);
    ck_assert_int_eq(k.pages, 2);
    json_t *j;
    ck_assert_int_eq(picl__stc_info(C, "collections", -1, &j), PICL_OK);
    json_decref(j);

    /* a write between two pages (here by this very client: the page asked
     * ahead is dropped and asked again) makes the next page a conflict */
    k.pages = 0;
    k.fail_at = 0;
    k.write_with = C;
    ck_assert_int_eq(picl__stc_download_each(C, "dl", 0, 0, collect, &k, &listed2), PICL_ERROR_CONFLICT);
    ck_assert_int_eq(k.pages, 1);
    ck_assert_int_eq(listed2, -1);
    json_decref(k.ids);
    json_decref(k.mods);
    json_decref(k.payloads);
}
END_TEST

/* The one-pass reader and the tree agree on text (status, items, fields). */
static void list_same(const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = 0;
    picl_bso_list a, b;
    picl_status sa = picl__bso_list_parse(copy, len, &a);
    picl_status sb = picl__bso_list_parse_tree(text, len, &b);
    ck_assert_msg(sa == sb, "status %d vs tree %d for %.*s", sa, sb, (int)len, text);
    ck_assert_uint_eq(a.n, b.n);
    for (size_t i = 0; i < a.n; i++) {
        ck_assert_int_eq(a.items[i].modified, b.items[i].modified);
        ck_assert((a.items[i].id == NULL) == (b.items[i].id == NULL));
        ck_assert((a.items[i].payload == NULL) == (b.items[i].payload == NULL));
        if (a.items[i].id)
            ck_assert_str_eq(a.items[i].id, b.items[i].id);
        if (a.items[i].payload)
            ck_assert_str_eq(a.items[i].payload, b.items[i].payload);
    }
    picl__bso_list_free(&a);
    picl__bso_list_free(&b);
    free(copy);
}

static void list_same_s(const char *text) { list_same(text, strlen(text)); }

START_TEST(test_bso_list_matches_tree)
{
    /* exact values of the usual page, read in one pass */
    char page[] = "[{\"id\":\"a1\",\"modified\":1234.56,\"payload\":\"{\\\"k\\\":\\\"v\\\\\\/\\n\\\"}\","
                  "\"sortindex\":7},\n {\"id\":\"b2\", \"modified\": 12, \"ttl\": 5}]";
    picl_bso_list l;
    ck_assert_int_eq(picl__bso_list_parse(page, strlen(page), &l), PICL_OK);
    ck_assert_ptr_null(l.tree);
    ck_assert_uint_eq(l.n, 2);
    ck_assert_str_eq(l.items[0].id, "a1");
    ck_assert_int_eq(l.items[0].modified, 123456);
    ck_assert_str_eq(l.items[0].payload, "{\"k\":\"v\\/\n\"}");
    ck_assert_str_eq(l.items[1].id, "b2");
    ck_assert_int_eq(l.items[1].modified, 1200);
    ck_assert_ptr_null(l.items[1].payload);
    picl__bso_list_free(&l);
    /* a \u escape goes through the tree, with the same values */
    char uni[] = "[{\"id\":\"\\u00e9\",\"modified\":1}]";
    ck_assert_int_eq(picl__bso_list_parse(uni, strlen(uni), &l), PICL_OK);
    ck_assert_ptr_nonnull(l.tree);
    ck_assert_str_eq(l.items[0].id, "\xc3\xa9");
    picl__bso_list_free(&l);
    ck_assert_int_eq(picl__bso_list_parse(NULL, 0, &l), PICL_ERROR_PROTOCOL);

    static const char *const pages[] = {
        "[]",
        " [ ] ",
        "[\n]\n",
        "[{}]",
        "[{ }, {}]",
        "[{\"id\":\"x\"}]",
        "[{\"modified\":0}]",
        "[{\"modified\":0.0}]",
        "[{\"modified\":0.005}]",
        "[{\"modified\":0.004999}]",
        "[{\"modified\":1234567890.12}]",
        "[{\"modified\":123456789012345}]",
        "[{\"modified\":1234567890123456}]",
        "[{\"modified\":999999999999.99}]",
        "[{\"modified\":1000000000000}]",
        "[{\"modified\":123456789012345678901234567890}]",
        "[{\"modified\":1e999}]",
        "[{\"modified\":1.5e3}]",
        "[{\"modified\":1E3}]",
        "[{\"modified\":-1}]",
        "[{\"modified\":-0}]",
        "[{\"modified\":01}]",
        "[{\"modified\":1.}]",
        "[{\"modified\":.5}]",
        "[{\"modified\":1.12345678901234567890123}]",
        "[{\"modified\":\"12.00\"}]",
        "[{\"modified\":null}]",
        "[{\"modified\":true}]",
        "[{\"modified\":[1]}]",
        "[{\"id\":5}]",
        "[{\"id\":null,\"payload\":{}}]",
        "[{\"id\":\"a\",\"id\":\"b\"}]",
        "[{\"id\":\"a\",\"modified\":1,\"modified\":2}]",
        "[{\"id\":\"a\",\"other\":1}]",
        "[{\"id\":\"a\",\"sortindex\":-5}]",
        "[{\"id\":\"a\",\"ttl\":null}]",
        "[{\"i\\u0064\":\"a\"}]",
        "[{\"id\":\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"}]",
        "[{\"id\":\"\\u0041\"}]",
        "[{\"id\":\"\\ud83d\\ude00\"}]",
        "[{\"id\":\"\\ud800\"}]",
        "[{\"id\":\"\\u0000\"}]",
        "[{\"id\":\"\\x\"}]",
        "[{\"id\":\"\\\"}]",
        "[{\"id\":\"caf\xc3\xa9\"}]",
        "[{\"id\":\"bad\xff\"}]",
        "[{\"id\":\"bad\xc3\"}]",
        "[{\"id\":\"tab\there\"}]",
        "[{\"id\":\"a\"},]",
        "[{\"id\":\"a\"} {\"id\":\"b\"}]",
        "[{\"id\":\"a\",}]",
        "[{\"id\" \"a\"}]",
        "[{\"id\":\"a\"}",
        "[{\"id\":\"a\"}] x",
        "[{\"id\":\"a\"}]]",
        "[1, \"x\", null, [], true]",
        "[[{\"id\":\"a\"}]]",
        "{\"id\":\"a\"}",
        "\"x\"",
        "5",
        "null",
        "",
        "   ",
        "[",
        "]",
        "\xef\xbb\xbf[]",
        "[]\x0b",
        "[{\"id\":\"a\",\"modified\":1.5,\"payload\":\"p\",\"sortindex\":1,\"ttl\":2}]",
    };
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        list_same_s(pages[i]);
    list_same("[{\"id\":\"a\0b\"}]", 15);
    list_same("[{\"id\":\"a\"}]\0", 13);

    /* a page as the server writes it: every cut, every byte changed */
    const char *real =
        "[{\"id\":\"r1\",\"modified\":1733280000.25,\"payload\":\"{\\\"ciphertext\\\":\\\"q+/w==\\\","
        "\\\"IV\\\":\\\"aa==\\\",\\\"hmac\\\":\\\"0f\\\",\\\"kid\\\":\\\"A:1\\\"}\",\"sortindex\":100},"
        "{\"id\":\"r2\",\"modified\":1733280000.3,\"payload\":\"{}\"}]";
    size_t n = strlen(real);
    for (size_t cut = 0; cut <= n; cut++)
        list_same(real, cut);
    const char subst[] = {'"', '\\', ',', ':', '{', '}', '[',    ']',
                          ' ', '0',  '.', 'e', '-', 'u', '\x01', '\x80'};
    char *t = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < sizeof subst; j++) {
            memcpy(t, real, n + 1);
            t[i] = subst[j];
            list_same(t, n);
        }
    free(t);
}
END_TEST

/* A locale whose decimal point is ',' (jansson reads reals with the
 * locale's point): an installed one, else one built with glibc's
 * localedef under dir (then LOCPATH points there).  0 when none can be had. */
static int comma_locale(char *dir, size_t cap)
{
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"};
    dir[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (setlocale(LC_NUMERIC, names[i]) && localeconv()->decimal_point[0] == ',')
            return 1;
    snprintf(dir, cap, "/tmp/picl-locale-XXXXXX");
    if (!mkdtemp(dir)) {
        dir[0] = 0;
        return 0;
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1", dir);
    if (system(cmd) == -1)
        return 0;
    setenv("LOCPATH", dir, 1);
    return setlocale(LC_NUMERIC, "de_DE.UTF-8") && localeconv()->decimal_point[0] == ',';
}

START_TEST(test_bso_list_comma_locale)
{
    char dir[64];
    int have = comma_locale(dir, sizeof dir);
    if (!have) {
        fprintf(stderr, "test_bso_list_comma_locale: no locale with a decimal comma here; skipped\n");
    } else {
        /* the tree reads 1234.56 as 1234.56 under any locale: so must the reader */
        list_same_s("[{\"id\":\"a\",\"modified\":1234.56},{\"id\":\"b\",\"modified\":7.5,\"sortindex\":1}]");
        char page[] = "[{\"id\":\"a\",\"modified\":1234.56}]";
        picl_bso_list l;
        ck_assert_int_eq(picl__bso_list_parse(page, strlen(page), &l), PICL_OK);
        ck_assert_ptr_null(l.tree);
        ck_assert_int_eq(l.items[0].modified, 123456);
        picl__bso_list_free(&l);
    }
    setlocale(LC_NUMERIC, "C");
    if (dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        ck_assert_int_ne(system(cmd), -1);
    }
}
END_TEST

/* ---- the streamed upload sends what picl__stc_post sends ------------------ */

/* A fake node that logs every POST (query, X-If-Unmodified-Since,
 * X-Weave-Records, body) and answers it: its ids succeed, a new batch ID on
 * batch=true, X-Last-Modified one second later each time; the POST numbered
 * fail_at (from 1) gets fail_status. */
typedef struct post_log {
    json_t *log;
    int posts, fail_at, fail_status;
} post_log;

static void logging_node(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    post_log *l = ctx;
    if (!strcmp(req->method, "GET")) {
        static const char cfg[] =
            "{\"max_request_bytes\":100000,\"max_post_records\":3,\"max_post_bytes\":1000,"
            "\"max_total_records\":7,\"max_total_bytes\":100000,\"max_record_payload_bytes\":1000}";
        srv_http_respond(resp, 200, "application/json", cfg, sizeof cfg - 1);
        return;
    }
    const char *ius = srv_http_header(req, "X-If-Unmodified-Since");
    const char *recs = srv_http_header(req, "X-Weave-Records");
    json_array_append_new(l->log, json_pack("[s, s, s, s]", req->query, ius ? ius : "-", recs ? recs : "-",
                                            (const char *)req->body));
    if (++l->posts == l->fail_at) {
        srv_http_respond(resp, l->fail_status, "text/plain", "no", 2);
        return;
    }
    json_t *body = json_loads((const char *)req->body, 0, NULL), *ids = json_array(), *b;
    size_t i;
    json_array_foreach (body, i, b)
        json_array_append(ids, json_object_get(b, "id"));
    json_t *ans = json_pack("{s:o, s:{}}", "success", ids, "failed");
    if (strstr(req->query, "batch=true"))
        json_object_set_new(ans, "batch", json_sprintf("B%d", l->posts));
    char *text = json_dumps(ans, JSON_COMPACT), lm[32];
    snprintf(lm, sizeof lm, "%d.00", 1000 + l->posts);
    srv_http_respond(resp, 200, "application/json", text, strlen(text));
    srv_http_add_header(resp, "X-Last-Modified", lm);
    free(text);
    json_decref(ans);
    json_decref(body);
}

#define UP_N 17
#define UP_PER 7
#define UP_CAP 280

/* The BSOs: payloads of 40 bytes, but record 9's of 90 (a batch cut by
 * bytes in the middle of a max_total_records part). */
static json_t *up_bsos(void)
{
    json_t *list = json_array();
    for (int i = 0; i < UP_N; i++) {
        char id[8], pay[100];
        snprintf(id, sizeof id, "r%02d", i);
        memset(pay, 'a' + i, sizeof pay);
        pay[i == 9 ? 90 : 40] = 0;
        json_array_append_new(list, bso(id, pay, i));
    }
    return list;
}

/* The upload as the engine made it before the stream: batches of at most
 * UP_PER records and UP_CAP payload bytes, each a picl__stc_post
 * conditional on the batch before. */
static picl_status up_reference(picl_stc *c, json_t *all, json_t *ends, picl_stc_post_result *out)
{
    int64_t ius = 0;
    picl_status st = PICL_OK;
    memset(out, 0, sizeof *out);
    out->success = json_array();
    out->failed = json_object();
    for (size_t from = 0; from < UP_N;) {
        json_t *part = json_array();
        size_t to = from, bytes = 0;
        while (to < UP_N && (to == from || to % UP_PER)) {
            size_t len = strlen(json_string_value(json_object_get(json_array_get(all, to), "payload")));
            if (to > from && bytes + len > UP_CAP)
                break;
            bytes += len;
            json_array_append(part, json_array_get(all, to++));
        }
        picl_stc_post_result pr;
        st = picl__stc_post(c, "c", part, ius, &pr);
        json_decref(part);
        if (st != PICL_OK)
            break;
        json_array_extend(out->success, pr.success);
        json_object_update(out->failed, pr.failed);
        out->modified = ius = pr.modified;
        picl__stc_post_result_clear(&pr);
        if (to < UP_N)
            json_array_append_new(ends, json_integer((json_int_t)to));
        from = to;
    }
    return st;
}

typedef struct up_ctx {
    json_t *all, *ends;
} up_ctx;

static picl_status up_make(void *ctx, size_t i, char **text, size_t *pay)
{
    up_ctx *u = ctx;
    json_t *b = json_array_get(u->all, i);
    *pay = strlen(json_string_value(json_object_get(b, "payload")));
    *text = json_dumps(b, JSON_COMPACT);
    return PICL_OK;
}

static void up_end(void *ctx, size_t end)
{
    json_array_append_new(((up_ctx *)ctx)->ends, json_integer((json_int_t)end));
}

/* One run against a fresh logging node: the reference or the stream; the
 * log, the status and the result. */
static picl_status up_run(int stream, int fail_at, int fail_status, json_t **log, json_t **ends,
                          picl_stc_post_result *pr)
{
    srv_http_server *h;
    srv_http_config hc = {.listen = "127.0.0.1:0"};
    post_log l = {.log = json_array(), .fail_at = fail_at, .fail_status = fail_status};
    ck_assert_int_eq(srv_http_server_new(&h, &hc), PICL_OK);
    ck_assert_int_eq(srv_http_route(h, "GET", "/1.5/3/info/configuration", logging_node, &l, NULL), PICL_OK);
    ck_assert_int_eq(srv_http_route(h, "POST", "/1.5/3/storage/c", logging_node, &l, NULL), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(h), PICL_OK);
    char ep[96];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%u/1.5/3", srv_http_server_port(h));
    picl_stc *c;
    ck_assert_int_eq(picl__stc_new(&c, ep, "id", "key"), PICL_OK);
    up_ctx u = {.all = up_bsos(), .ends = json_array()};
    picl_stc_stream s = {
        .n = UP_N, .per = UP_PER, .byte_cap = UP_CAP, .next = up_make, .done = up_end, .ctx = &u};
    picl_status st = stream ? picl__stc_post_stream(c, "c", &s, 0, pr) : up_reference(c, u.all, u.ends, pr);
    if (st != PICL_OK && !stream)
        picl__stc_post_result_clear(pr);
    picl__stc_free(c);
    srv_http_server_free(h);
    json_decref(u.all);
    *log = l.log;
    *ends = u.ends;
    return st;
}

START_TEST(test_post_stream_same_requests)
{
    json_t *log0, *log1, *ends0, *ends1;
    picl_stc_post_result p0, p1;
    ck_assert_int_eq(up_run(0, 0, 0, &log0, &ends0, &p0), PICL_OK);
    ck_assert_int_eq(up_run(1, 0, 0, &log1, &ends1, &p1), PICL_OK);
    /* batches [0,5) [5,7) | [7,9) [9,12) [12,14) | [14,17): 4 + 1 + 1 + 2 + 1 + 2 POSTs */
    ck_assert_int_eq(json_array_size(log0), 7);
    ck_assert(json_equal(log0, log1)); /* paths, queries, conditions, bodies */
    char *t = json_dumps(ends1, JSON_COMPACT);
    ck_assert_str_eq(t, "[7,12,14]");
    free(t);
    ck_assert(json_equal(ends0, ends1));
    /* batches [0,7) | [7,12) [12,14) | [14,17): 3 + 2 + 1 + 1 POSTs */
    static const char *const want[7][3] = {{"batch=true", "0.00", "3"},
                                           {"batch=B1", "-", "3"},
                                           {"batch=B1&commit=true", "0.00", "1"},
                                           {"batch=true", "1003.00", "3"},
                                           {"batch=B4&commit=true", "1003.00", "2"},
                                           {"", "1005.00", "2"},
                                           {"", "1006.00", "3"}};
    for (size_t i = 0; i < 7; i++)
        for (size_t j = 0; j < 3; j++)
            ck_assert_str_eq(json_string_value(json_array_get(json_array_get(log1, i), j)), want[i][j]);
    ck_assert_int_eq(json_array_size(p1.success), UP_N);
    ck_assert(json_equal(p0.success, p1.success));
    ck_assert_int_eq(json_object_size(p1.failed), 0);
    ck_assert(json_equal(p0.failed, p1.failed));
    ck_assert_int_eq(p1.modified, 100700);
    ck_assert_int_eq(p0.modified, p1.modified);
    picl__stc_post_result_clear(&p0);
    picl__stc_post_result_clear(&p1);
    json_decref(log0);
    json_decref(log1);
    json_decref(ends0);
    json_decref(ends1);
    /* a part failing (412 in a batch's middle part, 500 on a commit, 412 on
     * a plain POST, 503 on the first part of a later batch) ends both the
     * same way: the same requests, nothing after, no result */
    int fails[][2] = {{2, 412}, {3, 500}, {6, 412}, {4, 503}};
    for (size_t k = 0; k < sizeof fails / sizeof fails[0]; k++) {
        picl_status s0 = up_run(0, fails[k][0], fails[k][1], &log0, &ends0, &p0);
        picl_status s1 = up_run(1, fails[k][0], fails[k][1], &log1, &ends1, &p1);
        ck_assert_int_eq(s0, s1);
        ck_assert_int_eq(s1, fails[k][1] == 412   ? PICL_ERROR_CONFLICT
                             : fails[k][1] == 500 ? PICL_ERROR_SERVER
                                                  : PICL_ERROR_BACKOFF);
        ck_assert_int_eq(json_array_size(log1), fails[k][0]);
        ck_assert(json_equal(log0, log1));
        ck_assert(json_equal(ends0, ends1));
        ck_assert_ptr_null(p1.success);
        ck_assert_ptr_null(p1.failed);
        json_decref(log0);
        json_decref(log1);
        json_decref(ends0);
        json_decref(ends1);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_client");
    TCase *tc = tcase_create("client");
    tcase_add_checked_fixture(tc, client_setup, client_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_roundtrip_all_calls);
    tcase_add_test(tc, test_paging);
    tcase_add_test(tc, test_conditions);
    tcase_add_test(tc, test_backoff);
    tcase_add_test(tc, test_token_refresh);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_clock_skew_corrected);
    tcase_add_test(tc, test_page_conflict);
    tcase_add_test(tc, test_download_each_matches_download);
    suite_add_tcase(s, tc);
    TCase *lp = tcase_create("list_parse");
    tcase_set_timeout(lp, 60); /* localedef may build a locale */
    tcase_add_test(lp, test_bso_list_matches_tree);
    tcase_add_test(lp, test_bso_list_comma_locale);
    suite_add_tcase(s, lp);
    TCase *busy = tcase_create("busy");
    tcase_add_checked_fixture(busy, busy_setup, client_teardown);
    tcase_set_timeout(busy, 60);
    tcase_add_test(busy, test_conflict_409);
    suite_add_tcase(s, busy);
    TCase *bad = tcase_create("malformed");
    tcase_add_checked_fixture(bad, client_setup, client_teardown);
    tcase_set_timeout(bad, 60);
    tcase_add_test(bad, test_malformed_server);
    tcase_add_test(bad, test_post_stream_same_requests);
    suite_add_tcase(s, bad);
    TCase *sm = tcase_create("small");
    tcase_add_checked_fixture(sm, small_setup, client_teardown);
    tcase_set_timeout(sm, 60);
    tcase_add_test(sm, test_batching);
    suite_add_tcase(s, sm);
    return s;
}

int main(void) { return tu_run(suite()); }
