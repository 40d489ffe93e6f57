/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_attacks.c -- the keyserver under attack: forged SRP values,
 * replayed and cross-typed tokens, Hawk replay/tampering/stale timestamps,
 * concurrent single-use tokens, brute force, malformed and oversized input,
 * and clients that never finish sending. */
#include "testutil.h"
#include "testutil_ks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "client/account.h"
#include "client/keyserver_client.h"
#include "crypto/codec.h"
#include "crypto/srp.h"
#include "crypto/util.h"
#include "protocol/hawk.h"
#include "protocol/stretch.h"
#include "protocol/tokens.h"

#define EMAIL "mallory@example.org"
#define EMAIL_HEX "6d616c6c6f7279406578616d706c652e6f7267"
#define PW "hunter2"

static tuks_srv srv;

static void setup(void)
{
    tu_nss_setup();
    ks_config cfg = {.login_max = 3, .limit_loopback = 1};
    tuks_start(&srv, &cfg);
}

static void teardown(void)
{
    tuks_stop(&srv);
    tu_nss_teardown();
}

static void assert_err(tuks_resp *r, long code, int errnum)
{
    ck_assert_msg(r->status == code, "status %ld, want %ld (body %s)", r->status, code,
                  r->body ? r->body : "");
    ck_assert_int_eq(json_integer_value(json_object_get(r->json, "errno")), errnum);
    ck_assert_ptr_null(json_object_get(r->json, "bundle"));
    tuks_resp_free(r);
}

static long post(const char *path, const char *body, tuks_resp *r)
{
    const char *h[] = {"Content-Type: application/json", NULL};
    return tuks_request(srv.port, "POST", path, h, body, strlen(body), r);
}

/* Rows in the tokens table of `type` (-1: all), read from the database. */
static int count_tokens(int type)
{
    char sql[96];
    if (type < 0)
        snprintf(sql, sizeof sql, "SELECT count(*) FROM tokens");
    else
        snprintf(sql, sizeof sql, "SELECT count(*) FROM tokens WHERE type = %d", type);
    return (int)tuks_db_int(&srv, sql); /* SQLite or PostgreSQL */
}

/* auth/start: the srpToken (hex) */
static void srp_token(char out[65])
{
    tuks_resp r;
    ck_assert_int_eq(post("/v1/auth/start", "{\"email\":\"" EMAIL_HEX "\"}", &r), 200);
    snprintf(out, 65, "%s", json_string_value(json_object_get(r.json, "srpToken")));
    tuks_resp_free(&r);
}

START_TEST(srp_forged_A_rejected_without_token)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    const picl_srp_group *g = picl__srp_group_picl();
    char *nhex = tuks_hex(g->N, 256);
    /* 2N: 257 bytes */
    uint8_t n2[257];
    unsigned carry = 0;
    for (int i = 255; i >= 0; i--) {
        unsigned v = 2u * g->N[i] + carry;
        n2[i + 1] = (uint8_t)v;
        carry = v >> 8;
    }
    n2[0] = (uint8_t)carry;
    char *n2hex = tuks_hex(n2, 257);
    char zero[513];
    memset(zero, '0', 512);
    zero[512] = 0;
    const char *As[] = {zero, nhex, n2hex};
    for (int i = 0; i < 3; i++) {
        char tok[65], body[1200];
        tuks_resp r;
        srp_token(tok);
        snprintf(body, sizeof body, "{\"srpToken\":\"%s\",\"A\":\"%s\",\"M\":\"%064d\"}", tok, As[i], 0);
        post("/v1/auth/finish", body, &r);
        assert_err(&r, 400, 107);
    }
    ck_assert_int_eq(count_tokens(PICL_TOKEN_AUTH), 0);
    free(nhex);
    free(n2hex);
}
END_TEST

START_TEST(srp_token_replay)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    picl_ksc_auth_start st;
    ck_assert_int_eq(picl__ksc_auth_start(c, EMAIL, strlen(EMAIL), &st), PICL_OK);
    uint8_t stretched[32], srp_pw[32], unwrap[32], A[256], M[32], K[32], auth[32];
    ck_assert_int_eq(
        picl__stretch(stretched, &st.params, tuks_params(), EMAIL, strlen(EMAIL), PW, strlen(PW), NULL),
        PICL_OK);
    ck_assert_int_eq(picl__main_kdf(srp_pw, unwrap, stretched, st.main_salt, 32), PICL_OK);
    picl_srp_client *sc;
    ck_assert_int_eq(picl__srp_client_new(picl__srp_group_picl(), &sc), PICL_OK);
    ck_assert_int_eq(picl__srp_client_A(sc, A, 256), PICL_OK);
    ck_assert_int_eq(picl__srp_client_process(sc, (const uint8_t *)EMAIL, strlen(EMAIL), srp_pw, 32,
                                              st.srp_salt, 32, st.B, 256, M, 32),
                     PICL_OK);
    ck_assert_int_eq(picl__srp_client_key(sc, K, 32), PICL_OK);
    ck_assert_int_eq(picl__ksc_auth_finish(c, st.srp_token, A, M, K, auth), PICL_OK);
    /* the same (valid) proof again: the srpToken is gone */
    ck_assert_int_eq(picl__ksc_auth_finish(c, st.srp_token, A, M, K, auth), PICL_ERROR_TOKEN);
    ck_assert_int_eq(picl__ksc_last(c)->errnum, 110);
    ck_assert_int_eq(count_tokens(PICL_TOKEN_AUTH), 1);
    picl__srp_client_free(sc);
    picl__ksc_free(c);
}
END_TEST

START_TEST(hawk_replay_tamper_stale_type)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t kft[32], sess[32], auth[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    tuks_resp r;
    /* a replayed nonce */
    ck_assert_int_eq(tuks_hawk(srv.port, "GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL,
                               0, "fixednonce1", NULL, &r),
                     200);
    tuks_resp_free(&r);
    tuks_hawk(srv.port, "GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL, 0, "fixednonce1",
              NULL, &r);
    assert_err(&r, 401, 115);
    /* a body changed after signing */
    tuks_hawk(srv.port, "POST", "/v1/recovery_email/resend_code", sess, PICL_TOKEN_SESSION, "{\"x\":2}", 0,
              NULL, "{\"x\":1}", &r);
    assert_err(&r, 401, 109);
    /* a timestamp an hour old: 111 with serverTime */
    int64_t now = time(NULL);
    tuks_hawk(srv.port, "GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL, now - 3600, NULL,
              NULL, &r);
    ck_assert_int_ge(json_integer_value(json_object_get(r.json, "serverTime")), now - 5);
    ck_assert_int_le(json_integer_value(json_object_get(r.json, "serverTime")), now + 5);
    assert_err(&r, 401, 111);
    /* tokens of another type */
    tuks_hawk(srv.port, "POST", "/v1/session/create", sess, PICL_TOKEN_SESSION, "{}", 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);
    tuks_auth_token(&srv, EMAIL, PW, auth);
    tuks_hawk(srv.port, "GET", "/v1/account/devices", auth, PICL_TOKEN_AUTH, NULL, 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);
    tuks_hawk(srv.port, "GET", "/v1/account/keys", sess, PICL_TOKEN_KEY_FETCH, NULL, 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);
    /* the keyFetchToken still works once after all that, then never again */
    ck_assert_int_eq(
        tuks_hawk(srv.port, "GET", "/v1/account/keys", kft, PICL_TOKEN_KEY_FETCH, NULL, 0, NULL, NULL, &r),
        200);
    tuks_resp_free(&r);
    tuks_hawk(srv.port, "GET", "/v1/account/keys", kft, PICL_TOKEN_KEY_FETCH, NULL, 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);
}
END_TEST

START_TEST(hawk_malformed_headers)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    tuks_resp r;
    tuks_request(srv.port, "GET", "/v1/recovery_email/status", NULL, NULL, 0, &r);
    assert_err(&r, 401, 109);
    const char *h1[] = {"Authorization: Hawk garbage", NULL};
    tuks_request(srv.port, "GET", "/v1/recovery_email/status", h1, NULL, 0, &r);
    assert_err(&r, 401, 109);
    const char *h2[] = {"Authorization: Hawk id=\"zz\", ts=\"1\", nonce=\"n\", "
                        "mac=\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"",
                        NULL};
    tuks_request(srv.port, "GET", "/v1/recovery_email/status", h2, NULL, 0, &r);
    assert_err(&r, 401, 110);
    /* a POST signed without a payload hash: the keyserver requires one */
    picl_token_keys k;
    char id[65];
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_SESSION, sess), PICL_OK);
    picl__token_id_hex(id, &k);
    picl_hawk_request hr = {.method = "POST",
                            .resource = "/v1/recovery_email/resend_code",
                            .host = "127.0.0.1",
                            .port = srv.port};
    char *authz = NULL;
    ck_assert_int_eq(picl__hawk_client_header(&authz, id, k.hmac_key, 32, &hr, time(NULL), NULL, NULL),
                     PICL_OK);
    char hdr[1024];
    snprintf(hdr, sizeof hdr, "Authorization: %s", authz);
    const char *h3[] = {hdr, "Content-Type: application/json", NULL};
    tuks_request(srv.port, "POST", "/v1/recovery_email/resend_code", h3, "{}", 2, &r);
    assert_err(&r, 401, 109);
    free(authz);
}
END_TEST

typedef struct race {
    const uint8_t *auth;
    long status;
} race;

static void *race_one(void *p)
{
    race *r = p;
    tuks_resp resp;
    r->status = tuks_hawk(srv.port, "POST", "/v1/session/create", r->auth, PICL_TOKEN_AUTH, "{}", 0, NULL,
                          NULL, &resp);
    tuks_resp_free(&resp);
    return NULL;
}

START_TEST(single_use_under_concurrency)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t auth[32];
    tuks_auth_token(&srv, EMAIL, PW, auth);
    enum { N = 8 };
    pthread_t th[N];
    race rs[N];
    for (int i = 0; i < N; i++) {
        rs[i].auth = auth;
        rs[i].status = 0;
        ck_assert_int_eq(pthread_create(&th[i], NULL, race_one, &rs[i]), 0);
    }
    int ok = 0, denied = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ok += rs[i].status == 200;
        denied += rs[i].status == 401;
    }
    ck_assert_int_eq(ok, 1);
    ck_assert_int_eq(denied, N - 1);
    ck_assert_int_eq(count_tokens(PICL_TOKEN_SESSION), 1);
    ck_assert_int_eq(count_tokens(PICL_TOKEN_KEY_FETCH), 1);
}
END_TEST

START_TEST(brute_force_rate_limit)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    picl_account a;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(picl__account_login(c, EMAIL, strlen(EMAIL), "wrong", 5, tuks_params(), &a),
                         PICL_ERROR_WRONG_PASSWORD);
    /* the limit is reached: even the right password waits */
    ck_assert_int_eq(picl__account_login(c, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params(), &a),
                     PICL_ERROR_BACKOFF);
    ck_assert_int_gt(picl__ksc_last(c)->retry_after, 800);
    ck_assert_int_eq(picl__ksc_last(c)->errnum, 114);
    tuks_resp r;
    post("/v1/auth/start", "{\"email\":\"" EMAIL_HEX "\"}", &r);
    ck_assert(strtol(r.retry_after, NULL, 10) > 800);
    assert_err(&r, 429, 114);
    ck_assert_int_eq(count_tokens(PICL_TOKEN_SESSION), 0);
    picl__ksc_free(c);
}
END_TEST

START_TEST(brute_force_per_address)
{
    /* login_max 3: 12 failures per address, spread over 5 accounts */
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    picl_account a;
    char email[64];
    for (int i = 0; i < 5; i++) {
        snprintf(email, sizeof email, "user%d@example.org", i);
        tuks_account(&srv, email, PW, 1, NULL);
    }
    int failures = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++, failures++) {
            snprintf(email, sizeof email, "user%d@example.org", i);
            ck_assert_int_eq(picl__account_login(c, email, strlen(email), "x", 1, tuks_params(), &a),
                             PICL_ERROR_WRONG_PASSWORD);
        }
    ck_assert_int_eq(failures, 12);
    /* user4 never failed, but this address did, too often */
    snprintf(email, sizeof email, "user4@example.org");
    ck_assert_int_eq(picl__account_login(c, email, strlen(email), PW, strlen(PW), tuks_params(), &a),
                     PICL_ERROR_BACKOFF);
    ck_assert_int_eq(picl__ksc_last(c)->errnum, 114);
    picl__ksc_free(c);
}
END_TEST

START_TEST(loopback_exempt_by_default)
{
    tuks_stop(&srv);
    ks_config cfg = {.login_max = 1};
    tuks_start(&srv, &cfg);
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    picl_account a;
    char email[64];
    /* 6 accounts with one failure each from 127.0.0.1: over 4 x login_max,
     * yet a seventh account still signs in */
    for (int i = 0; i < 7; i++) {
        snprintf(email, sizeof email, "u%d@example.org", i);
        tuks_account(&srv, email, PW, 1, NULL);
        if (i < 6)
            ck_assert_int_eq(picl__account_login(c, email, strlen(email), "x", 1, tuks_params(), &a),
                             PICL_ERROR_WRONG_PASSWORD);
    }
    ck_assert_int_eq(picl__account_login(c, email, strlen(email), PW, strlen(PW), tuks_params(), &a),
                     PICL_OK);
    picl__account_wipe(&a);
    /* the per-account limit still holds */
    snprintf(email, sizeof email, "u0@example.org");
    ck_assert_int_eq(picl__account_login(c, email, strlen(email), PW, strlen(PW), tuks_params(), &a),
                     PICL_ERROR_BACKOFF);
    picl__ksc_free(c);
}
END_TEST

START_TEST(malformed_bodies)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    tuks_resp r;
    const char *not_objects[] = {"[]", "\"x\"", "null", "1", "{", "{\"a\":1,\"a\":2}", "\xff"};
    for (size_t i = 0; i < sizeof not_objects / sizeof not_objects[0]; i++) {
        post("/v1/auth/start", not_objects[i], &r);
        assert_err(&r, 400, 106);
    }
    const char *bad_fields[] = {
        "{\"email\":\"zz\"}", "{\"email\":\"6\"}", "{\"email\":42}", "{\"email\":[]}", "{\"email\":\"\"}",
    };
    for (size_t i = 0; i < sizeof bad_fields / sizeof bad_fields[0]; i++) {
        post("/v1/auth/start", bad_fields[i], &r);
        assert_err(&r, 400, 107);
    }
    char tok[65], body[1200], A[513];
    srp_token(tok);
    memset(A, 'g', 512);
    A[512] = 0;
    snprintf(body, sizeof body, "{\"srpToken\":\"%s\",\"A\":\"%s\",\"M\":\"%064d\"}", tok, A, 0);
    post("/v1/auth/finish", body, &r);
    assert_err(&r, 400, 107);
    snprintf(body, sizeof body, "{\"srpToken\":\"%.62s\",\"A\":\"%s\",\"M\":\"%064d\"}", tok, A, 0);
    post("/v1/auth/finish", body, &r);
    assert_err(&r, 400, 107);
    /* the srpToken of a malformed request was not spent */
    ck_assert_int_eq(count_tokens(-1), 0);
}
END_TEST

/* ---- raw sockets -------------------------------------------------------- */

static int connect_srv(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

START_TEST(huge_body_refused_before_reading)
{
    int fd = connect_srv();
    const char *req = "POST /v1/account/create HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: application/json\r\nContent-Length: 10485760\r\n\r\n";
    ck_assert_int_eq(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    ck_assert_int_gt(n, 12);
    buf[n] = 0;
    ck_assert_msg(!strncmp(buf, "HTTP/1.1 413", 12), "got %s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"errno\":113"));
    close(fd);
    tuks_resp r;
    ck_assert_int_eq(tuks_request(srv.port, "GET", "/__heartbeat__", NULL, NULL, 0, &r), 200);
    tuks_resp_free(&r);
}
END_TEST

START_TEST(unfinished_requests_do_not_block_others)
{
    int fds[6];
    for (int i = 0; i < 6; i++) {
        fds[i] = connect_srv();
        const char *req = i % 2 ? "POST /v1/auth/start HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  "Content-Length: 100\r\n\r\n{\"em"
                                : "GET /__heartbeat__ HTTP/1.1\r\nHost: 12";
        ck_assert_int_eq(send(fds[i], req, strlen(req), 0), (ssize_t)strlen(req));
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 5; i++) {
        tuks_resp r;
        ck_assert_int_eq(tuks_request(srv.port, "GET", "/__heartbeat__", NULL, NULL, 0, &r), 200);
        tuks_resp_free(&r);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 3);
    for (int i = 0; i < 6; i++)
        close(fds[i]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_attacks");
    TCase *tc = tcase_create("attacks");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, srp_forged_A_rejected_without_token);
    tcase_add_test(tc, srp_token_replay);
    tcase_add_test(tc, hawk_replay_tamper_stale_type);
    tcase_add_test(tc, hawk_malformed_headers);
    tcase_add_test(tc, single_use_under_concurrency);
    tcase_add_test(tc, brute_force_rate_limit);
    tcase_add_test(tc, brute_force_per_address);
    tcase_add_test(tc, loopback_exempt_by_default);
    tcase_add_test(tc, malformed_bodies);
    tcase_add_test(tc, huge_body_refused_before_reading);
    tcase_add_test(tc, unfinished_requests_do_not_block_others);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
