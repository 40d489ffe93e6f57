/* SPDX-License-Identifier: MPL-2.0 */
/* test_account.c -- the client's account flows end to end against an
 * in-process keyserver: create, verify from the Maildir, sign in on two
 * devices, keys, sign out, password change, forgot/reset, destroy, the
 * stretching floor, clock skew, Retry-After, and a hostile server. */
#include "testutil.h"
#include "testutil_ks.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/account.h"
#include "client/keyserver_client.h"
#include "crypto/hash.h"
#include "crypto/util.h"
#include "http/http.h"

#define EMAIL "andr\xc3\xa9@example.org"
#define PW "p\xc3\xa4sswort"
#define PW2 "new password"

static tuks_srv srv;
static picl_ks_client *cl;

static void start(const ks_config *cfg)
{
    tuks_start(&srv, cfg);
    ck_assert_int_eq(picl__ksc_new(&cl, srv.base), PICL_OK);
}

static void setup(void)
{
    tu_nss_setup();
    start(NULL);
}

static void teardown(void)
{
    picl__ksc_free(cl);
    cl = NULL;
    tuks_stop(&srv);
    tu_nss_teardown();
}

static void restart(const ks_config *cfg)
{
    picl__ksc_free(cl);
    tuks_stop(&srv);
    start(cfg);
}

static void create_verified(char uid[33])
{
    char code[128];
    ck_assert_int_eq(picl__account_create(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params(), uid),
                     PICL_OK);
    ck_assert_uint_eq(strlen(uid), 32);
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Verify-Code", code, sizeof code));
    ck_assert_int_eq(picl__account_verify(cl, uid, "00"), PICL_ERROR_PROTOCOL); /* 107 */
    ck_assert_int_eq(picl__account_verify(cl, uid, code), PICL_OK);
}

static void login(const char *pw, picl_account *a)
{
    ck_assert_int_eq(picl__account_login(cl, EMAIL, strlen(EMAIL), pw, strlen(pw), tuks_params(), a),
                     PICL_OK);
}

START_TEST(create_verify_login_two_devices)
{
    char uid[33];
    create_verified(uid);
    picl_account d1, d2;
    login(PW, &d1);
    login(PW, &d2);
    ck_assert_str_eq(d1.uid, uid);
    ck_assert(d1.verified && d1.have_keys && d2.have_keys && d1.have_session);
    ck_assert_mem_eq(d1.ka, d2.ka, 32);
    ck_assert_mem_eq(d1.kb, d2.kb, 32);
    ck_assert(!picl__memeq_ct(d1.ka, d1.kb, 32));
    ck_assert(!picl__memeq_ct(d1.session_token, d2.session_token, 32));
    char fa[33], fb[33];
    ck_assert_int_eq(picl__account_fingerprint(fa, d1.ka), PICL_OK);
    ck_assert_int_eq(picl__account_fingerprint(fb, d1.kb), PICL_OK);
    ck_assert_uint_eq(strlen(fa), 32);
    ck_assert_str_ne(fa, fb);
    uint8_t h[32];
    ck_assert_int_eq(picl__sha256(h, d1.kb, 32), PICL_OK);
    tu_assert_hex(h, 16, fb);

    /* devices: two sessions; sign out of one */
    json_t *devs = NULL;
    ck_assert_int_eq(picl__ksc_account_devices(cl, d2.session_token, &devs), PICL_OK);
    ck_assert_uint_eq(json_array_size(devs), 2);
    json_decref(devs);
    ck_assert_int_eq(picl__account_logout(cl, &d1), PICL_OK);
    ck_assert(!d1.have_session);
    ck_assert_int_eq(picl__account_logout(cl, &d1), PICL_ERROR_STATE);
    char email[256];
    int verified = 0;
    ck_assert_int_eq(picl__ksc_email_status(cl, d2.session_token, email, &verified), PICL_OK);
    ck_assert_str_eq(email, EMAIL);
    ck_assert(verified);
    picl__account_wipe(&d1);
    picl__account_wipe(&d2);
}
END_TEST

START_TEST(unverified_login_has_no_keys)
{
    char uid[33], uid2[33], code[128];
    ck_assert_int_eq(picl__account_create(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params(), uid),
                     PICL_OK);
    ck_assert_int_eq(picl__account_create(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params(), uid2),
                     PICL_ERROR_ACCOUNT_EXISTS);
    ck_assert_str_eq(uid2, "");
    picl_account a;
    login(PW, &a);
    ck_assert(a.have_session && !a.verified && !a.have_keys);
    ck_assert(picl__iszero_ct(a.ka, 32) && picl__iszero_ct(a.kb, 32));
    ck_assert_int_eq(picl__ksc_email_resend(cl, a.session_token), PICL_OK);
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Verify-Code", code, sizeof code));
    char wrong[65];
    memset(wrong, '0', 64);
    wrong[64] = 0;
    ck_assert_int_eq(picl__account_verify(cl, uid, wrong), PICL_ERROR_INVALID_CODE);
    /* the unverified sign-in kept a keyFetchToken and unwrapBKey */
    ck_assert(a.have_kft && !picl__iszero_ct(a.kft, 32) && !picl__iszero_ct(a.unwrap, 32));
    picl_account a2;
    login(PW, &a2);
    uint8_t ka[32], kb[32];
    /* too early: refused (and the server burns that token) */
    ck_assert_int_eq(picl__account_keys_from_token(cl, a2.kft, a2.unwrap, ka, kb), PICL_ERROR_UNVERIFIED);
    ck_assert(picl__iszero_ct(ka, 32) && picl__iszero_ct(kb, 32));
    ck_assert_int_eq(picl__account_verify(cl, uid, code), PICL_OK);
    /* once verified: the keys without the password, the same as a password sign-in's */
    ck_assert_int_eq(picl__account_keys_from_token(cl, a.kft, a.unwrap, ka, kb), PICL_OK);
    picl_account b;
    login(PW, &b);
    ck_assert(b.have_keys && !b.have_kft);
    ck_assert_mem_eq(ka, b.ka, 32);
    ck_assert_mem_eq(kb, b.kb, 32);
    /* single use */
    ck_assert_int_eq(picl__account_keys_from_token(cl, a.kft, a.unwrap, ka, kb), PICL_ERROR_TOKEN);
    ck_assert_int_eq(picl__account_keys_from_token(cl, a2.kft, a2.unwrap, ka, kb), PICL_ERROR_TOKEN);
    picl__account_wipe(&a);
    picl__account_wipe(&a2);
    picl__account_wipe(&b);
}
END_TEST

START_TEST(password_change_keeps_kb)
{
    char uid[33];
    create_verified(uid);
    picl_account before, after, again;
    login(PW, &before);
    ck_assert_int_eq(picl__account_change_password(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), PW2, strlen(PW2),
                                                   tuks_params(), tuks_params(), &after),
                     PICL_OK);
    ck_assert(after.have_keys);
    ck_assert_mem_eq(before.ka, after.ka, 32);
    ck_assert_mem_eq(before.kb, after.kb, 32);
    login(PW2, &again);
    ck_assert_mem_eq(before.kb, again.kb, 32);
    /* the old password is gone, and so is every token made before */
    ck_assert_int_eq(picl__account_login(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params(), &again),
                     PICL_ERROR_WRONG_PASSWORD);
    char email[256];
    int v;
    ck_assert_int_eq(picl__ksc_email_status(cl, before.session_token, email, &v), PICL_ERROR_TOKEN);
    ck_assert_int_eq(picl__ksc_last(cl)->errnum, 110);
    ck_assert_int_eq(picl__account_change_password(cl, EMAIL, strlen(EMAIL), "nope", 4, PW, strlen(PW),
                                                   tuks_params(), tuks_params(), NULL),
                     PICL_ERROR_WRONG_PASSWORD);
    picl__account_wipe(&before);
    picl__account_wipe(&after);
}
END_TEST

START_TEST(forgot_and_reset_new_kb_same_ka)
{
    char uid[33], code[32];
    create_verified(uid);
    picl_account before, after;
    login(PW, &before);
    uint8_t ft[32];
    ck_assert_int_eq(picl__account_forgot_start(cl, EMAIL, strlen(EMAIL), ft), PICL_OK);
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Recovery-Code", code, sizeof code));
    char wrong[9];
    snprintf(wrong, sizeof wrong, "%.7s%c", code, code[7] == '9' ? '0' : (char)(code[7] + 1));
    ck_assert_int_eq(
        picl__account_forgot_finish(cl, ft, wrong, EMAIL, strlen(EMAIL), PW2, strlen(PW2), tuks_params()),
        PICL_ERROR_INVALID_CODE);
    ck_assert_int_eq(
        picl__account_forgot_finish(cl, ft, code, EMAIL, strlen(EMAIL), PW2, strlen(PW2), tuks_params()),
        PICL_OK);
    login(PW2, &after);
    ck_assert(after.have_keys);
    ck_assert_mem_eq(before.ka, after.ka, 32);
    ck_assert(!picl__memeq_ct(before.kb, after.kb, 32));
    char f1[33], f2[33];
    picl__account_fingerprint(f1, before.kb);
    picl__account_fingerprint(f2, after.kb);
    ck_assert_str_ne(f1, f2);
    /* old tokens all rejected, the old password too */
    char email[256];
    int v;
    ck_assert_int_eq(picl__ksc_email_status(cl, before.session_token, email, &v), PICL_ERROR_TOKEN);
    picl_account x;
    ck_assert_int_eq(picl__account_login(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params(), &x),
                     PICL_ERROR_WRONG_PASSWORD);
    /* the forgotPasswordToken was spent */
    ck_assert_int_eq(
        picl__account_forgot_finish(cl, ft, code, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params()),
        PICL_ERROR_TOKEN);
    picl__account_wipe(&before);
    picl__account_wipe(&after);
}
END_TEST

START_TEST(destroy)
{
    char uid[33];
    create_verified(uid);
    ck_assert_int_eq(picl__account_destroy(cl, EMAIL, strlen(EMAIL), "bad", 3, tuks_params()),
                     PICL_ERROR_WRONG_PASSWORD);
    ck_assert_int_eq(picl__account_destroy(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params()), PICL_OK);
    picl_account a;
    ck_assert_int_eq(picl__account_login(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params(), &a),
                     PICL_ERROR_UNKNOWN_ACCOUNT);
}
END_TEST

START_TEST(stretching_floor)
{
    char uid[33];
    create_verified(uid);
    picl_account a;
    /* the default floor refuses the server's (test-weak) parameters */
    ck_assert_int_eq(picl__account_login(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), NULL, &a),
                     PICL_ERROR_WEAK_PARAMS);
    picl_stretch_params floor = *tuks_params();
    floor.pbkdf2_rounds_2 = 1001;
    ck_assert_int_eq(picl__account_login(cl, EMAIL, strlen(EMAIL), PW, strlen(PW), &floor, &a),
                     PICL_ERROR_WEAK_PARAMS);
}
END_TEST

START_TEST(clock_skew_corrected_once)
{
    char uid[33];
    create_verified(uid);
    picl_account a;
    login(PW, &a);
    picl__ksc_set_clock_offset(cl, -3600);
    char email[256];
    int v;
    ck_assert_int_eq(picl__ksc_email_status(cl, a.session_token, email, &v), PICL_OK);
    int64_t off = picl__ksc_clock_offset(cl);
    ck_assert_int_ge(off, -5);
    ck_assert_int_le(off, 5);
    picl__account_wipe(&a);
}
END_TEST

START_TEST(retry_after_honoured)
{
    ks_config cfg = {.reset_max = 1};
    restart(&cfg);
    char uid[33];
    create_verified(uid);
    uint8_t ft[32];
    ck_assert_int_eq(picl__account_forgot_start(cl, EMAIL, strlen(EMAIL), ft), PICL_OK);
    ck_assert_int_eq(picl__account_forgot_start(cl, EMAIL, strlen(EMAIL), ft), PICL_ERROR_BACKOFF);
    ck_assert_int_eq(picl__ksc_last(cl)->http_status, 429);
    ck_assert_int_gt(picl__ksc_last(cl)->retry_after, 3000);
    /* the next call waits without touching the network */
    ck_assert_int_eq(picl__ksc_email_verify(cl, uid, "00"), PICL_ERROR_BACKOFF);
    ck_assert_int_eq(picl__ksc_last(cl)->http_status, 0);
    ck_assert_int_gt(picl__ksc_last(cl)->retry_after, 3000);
}
END_TEST

START_TEST(network_errors)
{
    picl_ks_client *c2;
    ck_assert_int_eq(picl__ksc_new(&c2, "ftp://x"), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__ksc_new(&c2, "http://127.0.0.1:1"), PICL_OK);
    char uid[33];
    ck_assert_int_eq(picl__account_create(c2, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params(), uid),
                     PICL_ERROR_NETWORK);
    picl__ksc_free(c2);
}
END_TEST

/* ---- a hostile keyserver --------------------------------------------- */

static const char *hostile_answer;

static void hostile(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    srv_http_respond(resp, 200, "application/json", hostile_answer, strlen(hostile_answer));
}

static void run_hostile(const char *answer, picl_status want)
{
    srv_http_server *h;
    srv_http_config hc = {.listen = "127.0.0.1:0"};
    ck_assert_int_eq(srv_http_server_new(&h, &hc), PICL_OK);
    ck_assert_int_eq(srv_http_route(h, "POST", "/v1/auth/start", hostile, NULL, NULL), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(h), PICL_OK);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%u", srv_http_server_port(h));
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, base), PICL_OK);
    hostile_answer = answer;
    picl_account a;
    ck_assert_int_eq(picl__account_login(c, EMAIL, strlen(EMAIL), PW, strlen(PW), tuks_params(), &a), want);
    ck_assert(picl__iszero_ct(&a, sizeof a));
    picl__ksc_free(c);
    srv_http_server_free(h);
}

START_TEST(hostile_server_refused)
{
    char B[513], body[2048];
    char psb[512];
    snprintf(psb, sizeof psb,
             "\"passwordStretching\":{\"type\":\"PBKDF2/scrypt/PBKDF2/v1\","
             "\"PBKDF2_rounds_1\":1000,\"scrypt_N\":1024,\"scrypt_r\":8,\"scrypt_p\":1,"
             "\"PBKDF2_rounds_2\":1000,\"salt\":\"%064d\"}",
             1);
    /* B = 0: the client must refuse (a forged login otherwise) */
    memset(B, '0', 512);
    B[512] = 0;
    snprintf(body, sizeof body,
             "{\"srpToken\":\"%064d\",\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\","
             "\"salt\":\"%064d\",\"B\":\"%s\"},%s}",
             1, 2, B, psb);
    run_hostile(body, PICL_ERROR_PROTOCOL);
    /* an unknown stretching type */
    snprintf(body, sizeof body,
             "{\"srpToken\":\"%064d\",\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\","
             "\"salt\":\"%064d\",\"B\":\"%s\"},\"passwordStretching\":{\"type\":\"PBKDF2/v0\"}}",
             1, 2, B);
    run_hostile(body, PICL_ERROR_UNSUPPORTED);
    /* weak parameters below the floor */
    char weak[512];
    snprintf(weak, sizeof weak,
             "\"passwordStretching\":{\"type\":\"PBKDF2/scrypt/PBKDF2/v1\","
             "\"PBKDF2_rounds_1\":1,\"scrypt_N\":2,\"scrypt_r\":1,\"scrypt_p\":1,"
             "\"PBKDF2_rounds_2\":1,\"salt\":\"%064d\"}",
             1);
    B[511] = '2';
    snprintf(body, sizeof body,
             "{\"srpToken\":\"%064d\",\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\","
             "\"salt\":\"%064d\",\"B\":\"%s\"},%s}",
             1, 2, B, weak);
    run_hostile(body, PICL_ERROR_WEAK_PARAMS);
    /* not JSON at all */
    run_hostile("<html>", PICL_ERROR_PROTOCOL);
}
END_TEST

/* A server answering every POST/GET of `path` with status and body. */
static int canned_status;
static const char *canned_body;

static void canned(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    srv_http_respond(resp, canned_status, "application/json", canned_body, strlen(canned_body));
    if (canned_status == 503)
        srv_http_set_header(resp, "Retry-After", "7");
}

static srv_http_server *canned_server(const char *method, const char *path, char *base, size_t cap)
{
    srv_http_server *h;
    srv_http_config hc = {.listen = "127.0.0.1:0", .max_body = 1 << 20};
    ck_assert_int_eq(srv_http_server_new(&h, &hc), PICL_OK);
    ck_assert_int_eq(srv_http_route(h, method, path, canned, NULL, NULL), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(h), PICL_OK);
    snprintf(base, cap, "http://127.0.0.1:%u", srv_http_server_port(h));
    return h;
}

START_TEST(client_rejects_bad_answers)
{
    char base[64];
    uint8_t tok[32], A[256], M[32], K[32], out[32], out2[32];
    memset(tok, 1, sizeof tok);
    memset(A, 2, sizeof A);
    memset(M, 3, sizeof M);
    memset(K, 4, sizeof K);
    srv_http_server *h = canned_server("POST", "/v1/auth/finish", base, sizeof base);
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, base), PICL_OK);
    /* a bundle with a wrong MAC: PROTOCOL, nothing released */
    char bundle[200];
    memset(bundle, 'a', 128);
    bundle[128] = 0;
    char body[300];
    snprintf(body, sizeof body, "{\"bundle\":\"%s\"}", bundle);
    canned_status = 200;
    canned_body = body;
    memset(out, 0x55, sizeof out);
    ck_assert_int_eq(picl__ksc_auth_finish(c, tok, A, M, K, out), PICL_ERROR_PROTOCOL);
    ck_assert(picl__iszero_ct(out, 32));
    /* a bundle of the wrong length, or not a string */
    canned_body = "{\"bundle\":\"abcd\"}";
    ck_assert_int_eq(picl__ksc_auth_finish(c, tok, A, M, K, out), PICL_ERROR_PROTOCOL);
    canned_body = "{\"bundle\":7}";
    ck_assert_int_eq(picl__ksc_auth_finish(c, tok, A, M, K, out), PICL_ERROR_PROTOCOL);
    canned_body = "[]";
    ck_assert_int_eq(picl__ksc_auth_finish(c, tok, A, M, K, out), PICL_ERROR_PROTOCOL);
    /* errors: errno wins, then the status */
    canned_status = 400;
    canned_body = "{\"code\":400,\"errno\":103}";
    ck_assert_int_eq(picl__ksc_auth_finish(c, tok, A, M, K, out), PICL_ERROR_WRONG_PASSWORD);
    ck_assert_int_eq(picl__ksc_last(c)->errnum, 103);
    canned_status = 502;
    canned_body = "<html>bad gateway</html>";
    ck_assert_int_eq(picl__ksc_auth_finish(c, tok, A, M, K, out), PICL_ERROR_SERVER);
    canned_status = 503;
    canned_body = "{\"code\":503,\"errno\":201}";
    ck_assert_int_eq(picl__ksc_auth_finish(c, tok, A, M, K, out), PICL_ERROR_BACKOFF);
    ck_assert_int_eq(picl__ksc_last(c)->retry_after, 7);
    picl__ksc_free(c);
    /* an answer over the client's cap */
    ck_assert_int_eq(picl__ksc_new(&c, base), PICL_OK);
    char *huge = malloc(200000);
    memset(huge, ' ', 199999);
    huge[0] = '{';
    huge[199998] = '}';
    huge[199999] = 0;
    canned_status = 200;
    canned_body = huge;
    ck_assert_int_eq(picl__ksc_auth_finish(c, tok, A, M, K, out), PICL_ERROR_PROTOCOL);
    free(huge);
    picl__ksc_free(c);
    srv_http_server_free(h);

    /* account/keys: a bundle under another key */
    h = canned_server("GET", "/v1/account/keys", base, sizeof base);
    ck_assert_int_eq(picl__ksc_new(&c, base), PICL_OK);
    memset(bundle, 'b', 192);
    bundle[192] = 0;
    snprintf(body, sizeof body, "{\"bundle\":\"%s\"}", bundle);
    canned_status = 200;
    canned_body = body;
    ck_assert_int_eq(picl__ksc_account_keys(c, tok, out, out2), PICL_ERROR_PROTOCOL);
    ck_assert(picl__iszero_ct(out, 32) && picl__iszero_ct(out2, 32));
    picl__ksc_free(c);
    srv_http_server_free(h);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("account");
    TCase *tc = tcase_create("flows");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, create_verify_login_two_devices);
    tcase_add_test(tc, unverified_login_has_no_keys);
    tcase_add_test(tc, password_change_keeps_kb);
    tcase_add_test(tc, forgot_and_reset_new_kb_same_ka);
    tcase_add_test(tc, destroy);
    tcase_add_test(tc, stretching_floor);
    tcase_add_test(tc, clock_skew_corrected_once);
    tcase_add_test(tc, retry_after_honoured);
    tcase_add_test(tc, network_errors);
    tcase_add_test(tc, hostile_server_refused);
    tcase_add_test(tc, client_rejects_bad_answers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
