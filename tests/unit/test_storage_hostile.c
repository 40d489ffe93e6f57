/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_hostile.c -- the storage client against a hostile or broken
 * server (client.md 7): every loop bounded (endless X-Weave-Next-Offset,
 * limits below one record), header numbers that would overflow, backoffs of
 * years, a 401 whose new token names another node; and IPv6 endpoints. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "client/storage_client.h"
#include "http/http.h"
#include "storage_fixture.h"
#include "testutil.h"

/* ---- a fake storage node whose answers the test chooses ------------------ */

typedef enum mode {
    M_EMPTY_PAGES,  /* GET coll: [] and a new offset, forever */
    M_SAME_OFFSET,  /* GET coll: ["x"] and the same offset, forever */
    M_NEW_OFFSETS,  /* GET coll: ["x<n>"] and offset o<n>, forever */
    M_TINY_LIMITS,  /* /info/configuration: max_post_bytes 10; POST: 202 with no progress */
    M_BIG_NUMBERS,  /* every answer carries numbers that overflow int64 */
    M_LONG_BACKOFF, /* X-Weave-Backoff of ten years */
    M_LONG_RETRY,   /* 503 with Retry-After of 3000 years */
    M_UNAUTHORIZED, /* 401 to everything */
} mode;

static struct {
    srv_http_server *http;
    char base[64], endpoint[96];
    atomic_int mode;
    atomic_long gets, posts, requests;
} F;

static void fake(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    atomic_fetch_add(&F.requests, 1);
    int m = atomic_load(&F.mode);
    char v[64];
    snprintf(v, sizeof v, "%lld.00", (long long)time(NULL));
    srv_http_set_header(resp, "X-Weave-Timestamp", v); /* no clock skew to correct */
    if (m == M_UNAUTHORIZED) {
        srv_http_respond(resp, 401, "application/json", "0", 1);
        return;
    }
    if (m == M_BIG_NUMBERS) {
        srv_http_set_header(resp, "X-Weave-Timestamp", "99999999999999999999999.99");
        srv_http_set_header(resp, "X-Last-Modified", "922337203685477580.70");
        srv_http_set_header(resp, "X-Weave-Records", "99999999999999999999");
        srv_http_set_header(resp, "X-Weave-Quota-Remaining", "184467440737095516160");
        srv_http_set_header(resp, "X-Weave-Backoff", "9223372036854775807");
        srv_http_respond(resp, 200, "application/json", "{}", 2);
        return;
    }
    if (m == M_LONG_BACKOFF) {
        srv_http_set_header(resp, "X-Weave-Backoff", "315360000");
        srv_http_respond(resp, 200, "application/json", "{}", 2);
        return;
    }
    if (m == M_LONG_RETRY) {
        srv_http_set_header(resp, "Retry-After", "99999999999");
        srv_http_respond(resp, 503, "application/json", "0", 1);
        return;
    }
    if (strstr(req->path, "/info/configuration")) {
        const char *c =
            m == M_TINY_LIMITS
                ? "{\"max_request_bytes\":1000000,\"max_post_records\":100,\"max_post_bytes\":10,"
                  "\"max_total_records\":10000,\"max_total_bytes\":1000000,"
                  "\"max_record_payload_bytes\":1000000}"
                : "{\"max_request_bytes\":1000000,\"max_post_records\":100,\"max_post_bytes\":1000000,"
                  "\"max_total_records\":10000,\"max_total_bytes\":1000000,"
                  "\"max_record_payload_bytes\":1000000}";
        srv_http_respond(resp, 200, "application/json", c, strlen(c));
        return;
    }
    if (!strcmp(req->method, "POST")) {
        atomic_fetch_add(&F.posts, 1);
        const char *b = "{\"batch\":\"b\",\"success\":[],\"failed\":{}}";
        srv_http_respond(resp, 202, "application/json", b, strlen(b));
        return;
    }
    long n = atomic_fetch_add(&F.gets, 1);
    char body[64];
    if (m == M_EMPTY_PAGES) {
        snprintf(v, sizeof v, "o%ld", n);
        snprintf(body, sizeof body, "[]");
    } else if (m == M_SAME_OFFSET) {
        snprintf(v, sizeof v, "same");
        snprintf(body, sizeof body, "[\"x\"]");
    } else {
        snprintf(v, sizeof v, "o%ld", n);
        snprintf(body, sizeof body, "[\"x%ld\"]", n);
    }
    srv_http_set_header(resp, "X-Weave-Next-Offset", v);
    srv_http_set_header(resp, "X-Last-Modified", "1700000000.00");
    srv_http_respond(resp, 200, "application/json", body, strlen(body));
}

static void fake_start(void)
{
    memset(&F, 0, sizeof F);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    srv_http_config cfg = {.listen = "127.0.0.1:0", .max_body = 1 << 20, .threads = 2};
    ck_assert_int_eq(srv_http_server_new(&F.http, &cfg), PICL_OK);
    static const char *const pats[] = {"/1.5/*/info/*", "/1.5/*/storage/*", "/1.5/*/storage/*/*"};
    static const char *const methods[] = {"GET", "POST", "PUT", "DELETE"};
    for (size_t i = 0; i < 3; i++)
        for (size_t k = 0; k < 4; k++)
            ck_assert_int_eq(srv_http_route(F.http, methods[k], pats[i], fake, NULL, NULL), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(F.http), PICL_OK);
    snprintf(F.base, sizeof F.base, "http://127.0.0.1:%u", srv_http_server_port(F.http));
    snprintf(F.endpoint, sizeof F.endpoint, "%s/1.5/1", F.base);
}

static void fake_stop(void)
{
    srv_http_server_free(F.http);
    picl__nss_release();
}

static picl_stc *client(void)
{
    picl_stc *c;
    ck_assert_int_eq(picl__stc_new(&c, F.endpoint, "token-id", "key"), PICL_OK);
    return c;
}

/* ---- endless listings ---------------------------------------------------- */

static const picl_stc_query ALL = {
    .newer = -1, .older = -1, .if_modified_since = -1, .if_unmodified_since = -1};

START_TEST(test_endless_empty_pages)
{
    atomic_store(&F.mode, M_EMPTY_PAGES);
    picl_stc *c = client();
    json_t *items = (json_t *)1;
    ck_assert_int_eq(picl__stc_get_all(c, "coll", &ALL, 0, &items), PICL_ERROR_PROTOCOL);
    ck_assert_ptr_null(items);
    ck_assert_int_eq(atomic_load(&F.gets), 1); /* an empty page that says "more" ends it */
    picl__stc_free(c);
}
END_TEST

START_TEST(test_same_offset_forever)
{
    atomic_store(&F.mode, M_SAME_OFFSET);
    picl_stc *c = client();
    json_t *items = (json_t *)1;
    ck_assert_int_eq(picl__stc_get_all(c, "coll", &ALL, 0, &items), PICL_ERROR_PROTOCOL);
    ck_assert_ptr_null(items);
    ck_assert_int_eq(atomic_load(&F.gets), 2); /* the same offset twice ends it */
    picl__stc_free(c);
}
END_TEST

/* Pages that do progress, forever: at most PICL_STC_MAX_PAGES requests. */
START_TEST(test_page_count_bounded)
{
    atomic_store(&F.mode, M_NEW_OFFSETS);
    picl_stc *c = client();
    json_t *items = (json_t *)1;
    ck_assert_int_eq(picl__stc_get_all(c, "coll", &ALL, 0, &items), PICL_ERROR_PROTOCOL);
    ck_assert_ptr_null(items);
    ck_assert_int_eq(atomic_load(&F.gets), PICL_STC_MAX_PAGES);
    picl__stc_free(c);
}
END_TEST

/* max_post_bytes below one record: refused before anything is sent (the
 * old client posted empty batches forever). */
START_TEST(test_limits_below_one_record)
{
    atomic_store(&F.mode, M_TINY_LIMITS);
    picl_stc *c = client();
    json_t *bsos = json_pack("[{s:s, s:s}, {s:s, s:s}]", "id", "a", "payload", "01234567890123456789", "id",
                             "b", "payload", "x");
    picl_stc_post_result pr;
    ck_assert_int_eq(picl__stc_post(c, "coll", bsos, -1, &pr), PICL_ERROR_TOO_LARGE);
    ck_assert_ptr_null(pr.success);
    ck_assert_int_eq(atomic_load(&F.posts), 0);
    ck_assert_int_eq(atomic_load(&F.requests), 1); /* /info/configuration only */
    json_decref(bsos);
    picl__stc_free(c);
}
END_TEST

/* ---- header numbers and backoff ------------------------------------------ */

START_TEST(test_header_numbers_never_overflow)
{
    atomic_store(&F.mode, M_BIG_NUMBERS);
    picl_stc *c = client();
    json_t *j = NULL;
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_OK);
    json_decref(j);
    const picl_stc_result *r = picl__stc_last(c);
    ck_assert_int_eq(r->timestamp, -1);
    ck_assert_int_eq(r->last_modified, -1);
    ck_assert_int_eq(r->records, -1);
    ck_assert_int_eq(r->quota_remaining_kb, -1);
    ck_assert_int_eq(r->backoff_s, 0);
    picl__stc_free(c);
}
END_TEST

START_TEST(test_backoff_capped)
{
    atomic_store(&F.mode, M_LONG_BACKOFF);
    picl_stc *c = client();
    json_t *j = NULL;
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_OK);
    json_decref(j);
    ck_assert_int_eq(picl__stc_last(c)->backoff_s, 86400);
    ck_assert_int_eq(picl__stc_last(c)->backoff_capped, 1);
    /* honoured (no request) but for a day at most */
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_ERROR_BACKOFF);
    ck_assert_int_le(picl__stc_last(c)->backoff_s, 86401);
    ck_assert_int_eq(atomic_load(&F.requests), 1);
    picl__stc_clear_backoff(c);
    atomic_store(&F.mode, M_LONG_RETRY);
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_ERROR_BACKOFF);
    ck_assert_int_eq(picl__stc_last(c)->backoff_s, 86400);
    ck_assert_int_eq(picl__stc_last(c)->backoff_capped, 1);
    picl__stc_free(c);
}
END_TEST

/* ---- 401 and node reassignment ------------------------------------------- */

typedef struct refresher {
    const char *endpoint;
    int calls;
} refresher;

static picl_status refresh(void *ctx, char **ep, char **id, char **key)
{
    refresher *r = ctx;
    r->calls++;
    *ep = strdup(r->endpoint);
    *id = strdup("new-token");
    *key = strdup("new-key");
    return PICL_OK;
}

/* A 401 whose fresh token names another node: the client does not carry
 * on there; it stops, says so, and every later call fails without a request. */
START_TEST(test_401_new_node_aborts)
{
    atomic_store(&F.mode, M_UNAUTHORIZED);
    picl_stc *c = client();
    refresher rf = {"http://127.0.0.1:9/1.5/77", 0};
    picl__stc_set_refresh(c, refresh, &rf);
    json_t *j = NULL;
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_ERROR_TOKEN);
    ck_assert_int_eq(rf.calls, 1);
    ck_assert_int_eq(atomic_load(&F.requests), 1);
    ck_assert_int_eq(picl__stc_node_changed(c), 1);
    ck_assert_str_eq(picl__stc_endpoint(c), "http://127.0.0.1:9/1.5/77");
    json_t *bso = json_pack("{s:s}", "payload", "x");
    ck_assert_int_eq(picl__stc_put(c, "coll", "id", bso, -1, NULL), PICL_ERROR_TOKEN);
    json_decref(bso);
    ck_assert_int_eq(atomic_load(&F.requests), 1);
    ck_assert_int_eq(rf.calls, 1);
    picl__stc_free(c);
}
END_TEST

/* The same node keeps answering 401 to the fresh token: one retry, then an
 * error; never a loop. */
START_TEST(test_401_same_node_no_loop)
{
    atomic_store(&F.mode, M_UNAUTHORIZED);
    picl_stc *c = client();
    refresher rf = {F.endpoint, 0};
    picl__stc_set_refresh(c, refresh, &rf);
    json_t *j = NULL;
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_ERROR_TOKEN);
    ck_assert_int_eq(rf.calls, 1);
    ck_assert_int_eq(atomic_load(&F.requests), 2);
    ck_assert_int_eq(picl__stc_node_changed(c), 0);
    picl__stc_free(c);
}
END_TEST

/* ---- IPv6 ----------------------------------------------------------------- */

/* Endpoints are parsed by libcurl's URL parser: IPv6 literals work; what is
 * not an http(s) endpoint is refused. */
START_TEST(test_endpoint_urls)
{
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    static const char *const bad[] = {"ftp://h/1.5/1",
                                      "http://[::1/1.5/1",
                                      "http://h:0/1.5/1",
                                      "http://h:65536/1.5/1",
                                      "http://u:p@h/1.5/1",
                                      "http://h/1.5/1?x=1",
                                      "http://h/1.5/1#f",
                                      "http://h",
                                      "http://h/",
                                      "h/1.5/1",
                                      ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        picl_stc *c = NULL;
        ck_assert_msg(picl__stc_new(&c, bad[i], "i", "k") == PICL_ERROR_INVALID_ARGUMENT, "%s accepted",
                      bad[i]);
        ck_assert_ptr_null(c);
    }
    static const char *const good[] = {"http://[::1]:8012/1.5/1", "https://h.example/1.5/1/",
                                       "http://127.0.0.1:80/1.5/1", "http://[fe80::1]/1.5/1"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        picl_stc *c = NULL;
        ck_assert_msg(picl__stc_new(&c, good[i], "i", "k") == PICL_OK, "%s refused", good[i]);
        picl__stc_free(c);
    }
    picl__nss_release();
}
END_TEST

/* A sync against http://[::1]:PORT/1.5/UID works end to end (Hawk over the
 * bracketed host) when the machine has IPv6 loopback. */
START_TEST(test_ipv6_storage_server)
{
    memset(&SF, 0, sizeof SF);
    snprintf(SF.dir, sizeof SF.dir, "/tmp/picl-storage-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(SF.dir));
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    SF.cfg.listen = "[::1]:0";
    SF.cfg.data_dir = SF.dir;
    SF.cfg.secret = SF_SECRET;
    SF.cfg.secret_len = SF_SECRET_LEN;
    SF.cfg.prune_interval_s = -1;
    ck_assert_int_eq(storage_server_new(&SF.srv, &SF.cfg), PICL_OK);
    picl_status st = storage_server_start(SF.srv);
    if (st != PICL_OK) {
        /* no IPv6 loopback here: the URL handling is covered by test_endpoint_urls */
        fprintf(stderr, "test_ipv6_storage_server: no [::1] listener (%d), skipped\n", st);
        return;
    }
    snprintf(SF.node, sizeof SF.node, "%s", storage_server_node(SF.srv));
    char want[64];
    snprintf(want, sizeof want, "http://[::1]:%u", storage_server_port(SF.srv));
    ck_assert_str_eq(SF.node, want);
    tu_mint(&SF.cred, SF_SECRET, SF_SECRET_LEN, SF.node, 5, 3600);
    char ep[160];
    snprintf(ep, sizeof ep, "%s/1.5/5", SF.node);
    picl_stc *c;
    ck_assert_int_eq(picl__stc_new(&c, ep, SF.cred.token, SF.cred.key), PICL_OK);
    json_t *bso = json_pack("{s:s}", "payload", "over v6");
    int64_t m = -1;
    ck_assert_int_eq(picl__stc_put(c, "tabs", "a", bso, -1, &m), PICL_OK);
    ck_assert_int_gt(m, 0);
    json_decref(bso);
    json_t *got = NULL;
    ck_assert_int_eq(picl__stc_get_item(c, "tabs", "a", &got), PICL_OK);
    ck_assert_str_eq(json_string_value(json_object_get(got, "payload")), "over v6");
    json_decref(got);
    picl__stc_free(c);
}
END_TEST

/* ---- secrets held in jansson objects -------------------------------------- */

static int freed_secrets;

static void *count_malloc(size_t n) { return malloc(n); }

/* jansson's free: was a block freed with a secret still in it? */
static void count_free(void *p)
{
    if (p && !memcmp(p, "s3cret-", 7))
        freed_secrets++;
    free(p);
}

/* A storage token's key and a decrypted record are wiped before jansson
 * frees them (picl__json_zdecref); a value another owner still holds is
 * left alone. */
START_TEST(test_json_secrets_wiped)
{
    json_set_alloc_funcs(count_malloc, count_free);
    /* the control: plain json_decref frees the secret as it is */
    json_t *t = json_pack("{s:s, s:s}", "id", "token", "key", "s3cret-key-0123456789");
    json_decref(t);
    ck_assert_int_eq(freed_secrets, 1);
    freed_secrets = 0;
    t = json_pack("{s:s, s:s, s:i}", "id", "token", "key", "s3cret-key-0123456789", "uid", 7);
    json_t *rec = json_pack("[{s:s, s:{s:s}}]", "id", "r1", "fields", "password", "s3cret-password");
    picl__json_zdecref(t);
    picl__json_zdecref(rec);
    ck_assert_int_eq(freed_secrets, 0);
    /* shared: wiped only when the last owner lets go */
    json_t *shared = json_string("s3cret-shared");
    json_t *holder = json_pack("{s:O}", "v", shared);
    picl__json_zdecref(holder);
    ck_assert_str_eq(json_string_value(shared), "s3cret-shared");
    picl__json_zdecref(shared);
    ck_assert_int_eq(freed_secrets, 0);
    picl__json_zdecref(NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_hostile");
    TCase *tc = tcase_create("hostile");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, fake_start, fake_stop);
    tcase_add_test(tc, test_endless_empty_pages);
    tcase_add_test(tc, test_same_offset_forever);
    tcase_add_test(tc, test_page_count_bounded);
    tcase_add_test(tc, test_limits_below_one_record);
    tcase_add_test(tc, test_header_numbers_never_overflow);
    tcase_add_test(tc, test_backoff_capped);
    tcase_add_test(tc, test_401_new_node_aborts);
    tcase_add_test(tc, test_401_same_node_no_loop);
    suite_add_tcase(s, tc);
    tc = tcase_create("urls");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_endpoint_urls);
    tcase_add_test(tc, test_json_secrets_wiped);
    suite_add_tcase(s, tc);
    tc = tcase_create("ipv6");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, NULL, sf_teardown);
    tcase_add_test(tc, test_ipv6_storage_server);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
