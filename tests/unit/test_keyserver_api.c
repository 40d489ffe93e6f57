/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_api.c -- every keyserver endpoint over HTTP (keyserver.md
 * sections 6 and 7): success and its listed errors, exact errnos. */
#include "testutil.h"
#include "testutil_ks.h"

#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>

#include "client/keyserver_client.h"
#include "keyserver/ks_db.h"
#include "crypto/codec.h"
#include "crypto/srp.h"
#include "protocol/bundle.h"
#include "protocol/tokenlib.h"
#include "protocol/tokens.h"

#define EMAIL "alice@example.org"
#define EMAIL_HEX "616c696365406578616d706c652e6f7267"
#define PW "correct horse"

static tuks_srv srv;

static void setup(void)
{
    tu_nss_setup();
    tuks_start(&srv, NULL);
}

static void teardown(void)
{
    tuks_stop(&srv);
    tu_nss_teardown();
}

/* Asserts an error answer {code, errno, error, message} with status code. */
static void assert_err(tuks_resp *r, long code, int errnum)
{
    ck_assert_msg(r->status == code, "status %ld, want %ld (body %s)", r->status, code,
                  r->body ? r->body : "");
    ck_assert_ptr_nonnull(r->json);
    ck_assert_int_eq(json_integer_value(json_object_get(r->json, "code")), code);
    ck_assert_int_eq(json_integer_value(json_object_get(r->json, "errno")), errnum);
    ck_assert(json_is_string(json_object_get(r->json, "error")));
    ck_assert(json_is_string(json_object_get(r->json, "message")));
    tuks_resp_free(r);
}

static long post(const char *path, const char *body, tuks_resp *r)
{
    const char *h[] = {"Content-Type: application/json", NULL};
    return tuks_request(srv.port, "POST", path, h, body, strlen(body), r);
}

/* A create body with the given pieces substituted. */
static char *create_body(const char *email_hex, const char *srp_type, const char *verifier, const char *stype,
                         long long n)
{
    char *v = NULL;
    if (!verifier) {
        uint8_t vb[256];
        memset(vb, 0x11, sizeof vb);
        v = tuks_hex(vb, sizeof vb);
        verifier = v;
    }
    size_t cap = 4096;
    char *b = malloc(cap);
    ck_assert_ptr_nonnull(b);
    snprintf(b, cap,
             "{\"email\":\"%s\",\"srp\":{\"type\":\"%s\",\"verifier\":\"%s\",\"salt\":\"%064x\"},"
             "\"passwordStretching\":{\"type\":\"%s\",\"PBKDF2_rounds_1\":1000,\"scrypt_N\":%lld,"
             "\"scrypt_r\":8,\"scrypt_p\":1,\"PBKDF2_rounds_2\":1000,\"salt\":\"%064x\"}}",
             email_hex, srp_type, verifier, 7, stype, n, 9);
    free(v);
    return b;
}

START_TEST(heartbeat_and_unknown_paths)
{
    tuks_resp r;
    ck_assert_int_eq(tuks_request(srv.port, "GET", "/__heartbeat__", NULL, NULL, 0, &r), 200);
    ck_assert_str_eq(r.body, "{}");
    ck_assert(strlen(r.timestamp) > 0); /* every response carries Timestamp */
    tuks_resp_free(&r);
    tuks_request(srv.port, "GET", "/v1/nothing", NULL, NULL, 0, &r);
    assert_err(&r, 404, 999);
    tuks_request(srv.port, "GET", "/v1/account/create", NULL, NULL, 0, &r);
    assert_err(&r, 405, 999);
}
END_TEST

START_TEST(account_create)
{
    tuks_resp r;
    char *b = create_body(EMAIL_HEX, "SRP-6a/SHA256/2048/v1", NULL, "PBKDF2/scrypt/PBKDF2/v1", 1024);
    ck_assert_int_eq(post("/v1/account/create", b, &r), 200);
    const char *uid = json_string_value(json_object_get(r.json, "uid"));
    ck_assert_ptr_nonnull(uid);
    ck_assert_uint_eq(strlen(uid), 32);
    char code[128], xuid[64];
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Uid", xuid, sizeof xuid));
    ck_assert_str_eq(xuid, uid);
    tuks_resp_free(&r);
    /* the mail carried the code; X-Verify-Code is 64 hex */
    ck_assert_int_eq(post("/v1/account/create", b, &r), 400);
    assert_err(&r, 400, 101);
    ck_assert_int_eq(tuks_mail_count(&srv), 0);
    free(b);
    (void)code;

    /* missing, malformed, wrong length, unknown types, verifier out of range */
    post("/v1/account/create", "{}", &r);
    assert_err(&r, 400, 108);
    b = create_body("zz", "SRP-6a/SHA256/2048/v1", NULL, "PBKDF2/scrypt/PBKDF2/v1", 1024);
    post("/v1/account/create", b, &r);
    assert_err(&r, 400, 107);
    free(b);
    b = create_body("626f62", "SRP-6a/SHA1/1024/v1", NULL, "PBKDF2/scrypt/PBKDF2/v1", 1024);
    post("/v1/account/create", b, &r);
    assert_err(&r, 400, 107);
    free(b);
    b = create_body("626f62", "SRP-6a/SHA256/2048/v1", NULL, "PBKDF2/v0", 1024);
    post("/v1/account/create", b, &r);
    assert_err(&r, 400, 107);
    free(b);
    b = create_body("626f62", "SRP-6a/SHA256/2048/v1", NULL, "PBKDF2/scrypt/PBKDF2/v1", 1000);
    post("/v1/account/create", b, &r); /* N not a power of two */
    assert_err(&r, 400, 107);
    free(b);
    char zero[513];
    memset(zero, '0', 512);
    zero[512] = 0;
    b = create_body("626f62", "SRP-6a/SHA256/2048/v1", zero, "PBKDF2/scrypt/PBKDF2/v1", 1024);
    post("/v1/account/create", b, &r);
    assert_err(&r, 400, 107);
    free(b);
    char *nhex = tuks_hex(picl__srp_group_picl()->N, 256);
    b = create_body("626f62", "SRP-6a/SHA256/2048/v1", nhex, "PBKDF2/scrypt/PBKDF2/v1", 1024);
    post("/v1/account/create", b, &r);
    assert_err(&r, 400, 107);
    free(b);
    free(nhex);
    b = create_body("626f62", "SRP-6a/SHA256/2048/v1", "abcd", "PBKDF2/scrypt/PBKDF2/v1", 1024);
    post("/v1/account/create", b, &r);
    assert_err(&r, 400, 107);
    free(b);
    /* an email with a control character would forge mail headers */
    b = create_body("610a42", "SRP-6a/SHA256/2048/v1", NULL, "PBKDF2/scrypt/PBKDF2/v1", 1024);
    post("/v1/account/create", b, &r);
    assert_err(&r, 400, 107);
    free(b);
    post("/v1/account/create", "not json", &r);
    assert_err(&r, 400, 106);
    post("/v1/account/create", "[1,2]", &r);
    assert_err(&r, 400, 106);
    post("/v1/account/create", "{\"email\":1}", &r);
    assert_err(&r, 400, 107);
    /* nothing of the rejected ones was created or mailed */
    ck_assert_int_eq(tuks_mail_count(&srv), 0);
    post("/v1/auth/start", "{\"email\":\"626f62\"}", &r);
    assert_err(&r, 400, 102);
}
END_TEST

START_TEST(length_and_size_limits)
{
    tuks_resp r;
    const char *chunked[] = {"Transfer-Encoding: chunked", "Content-Type: application/json", NULL};
    tuks_request(srv.port, "POST", "/v1/auth/start", chunked, "{}", 2, &r);
    assert_err(&r, 411, 112);
    size_t n = 20000;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = 0;
    post("/v1/auth/start", big, &r);
    assert_err(&r, 413, 113);
    free(big);
}
END_TEST

START_TEST(auth_start_and_finish)
{
    tuks_resp r;
    tuks_account(&srv, EMAIL, PW, 0, NULL);
    ck_assert_int_eq(post("/v1/auth/start", "{\"email\":\"" EMAIL_HEX "\"}", &r), 200);
    json_t *srp = json_object_get(r.json, "srp");
    json_t *ps = json_object_get(r.json, "passwordStretching");
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(r.json, "srpToken"))), 64);
    ck_assert_str_eq(json_string_value(json_object_get(srp, "type")), "SRP-6a/SHA256/2048/v1");
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(srp, "B"))), 512);
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(srp, "salt"))), 64);
    ck_assert_str_eq(json_string_value(json_object_get(ps, "type")), "PBKDF2/scrypt/PBKDF2/v1");
    ck_assert_int_eq(json_integer_value(json_object_get(ps, "PBKDF2_rounds_1")), 1000);
    ck_assert_int_eq(json_integer_value(json_object_get(ps, "scrypt_N")), 1024);
    ck_assert_int_eq(json_integer_value(json_object_get(ps, "scrypt_r")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(ps, "scrypt_p")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(ps, "PBKDF2_rounds_2")), 1000);
    char tok[65];
    snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r.json, "srpToken")));
    tuks_resp_free(&r);

    post("/v1/auth/start", "{\"email\":\"6e6f626f6479\"}", &r);
    assert_err(&r, 400, 102);
    post("/v1/auth/start", "{}", &r);
    assert_err(&r, 400, 108);

    /* a wrong proof: 103, and the srpToken is spent */
    uint8_t A[256];
    picl_srp_client *c = NULL;
    ck_assert_int_eq(picl__srp_client_new(picl__srp_group_picl(), &c), PICL_OK);
    ck_assert_int_eq(picl__srp_client_A(c, A, sizeof A), PICL_OK);
    picl__srp_client_free(c);
    char *ahex = tuks_hex(A, 256);
    char body[1024];
    snprintf(body, sizeof body, "{\"srpToken\":\"%s\",\"A\":\"%s\",\"M\":\"%064d\"}", tok, ahex, 0);
    post("/v1/auth/finish", body, &r);
    assert_err(&r, 400, 103);
    post("/v1/auth/finish", body, &r);
    assert_err(&r, 401, 110);
    snprintf(body, sizeof body, "{\"srpToken\":\"%064d\",\"A\":\"%s\",\"M\":\"%064d\"}", 5, ahex, 0);
    post("/v1/auth/finish", body, &r);
    assert_err(&r, 401, 110);
    snprintf(body, sizeof body, "{\"srpToken\":\"%s\",\"A\":\"%s\"}", tok, ahex);
    post("/v1/auth/finish", body, &r);
    assert_err(&r, 400, 108);
    snprintf(body, sizeof body, "{\"srpToken\":\"%s\",\"A\":\"%.510s\",\"M\":\"%064d\"}", tok, ahex, 0);
    post("/v1/auth/finish", body, &r);
    assert_err(&r, 400, 107);
    free(ahex);

    /* the right password gives an authToken */
    uint8_t auth[32];
    tuks_auth_token(&srv, EMAIL, PW, auth);
}
END_TEST

static int64_t fake_now;
static int64_t clock_hook(void *ctx) { return fake_now; }

START_TEST(srp_token_expires)
{
    tuks_stop(&srv);
    ks_config cfg = {.now = clock_hook};
    fake_now = time(NULL);
    tuks_start(&srv, &cfg);
    tuks_account(&srv, EMAIL, PW, 0, NULL);
    tuks_resp r;
    ck_assert_int_eq(post("/v1/auth/start", "{\"email\":\"" EMAIL_HEX "\"}", &r), 200);
    char tok[65];
    snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r.json, "srpToken")));
    tuks_resp_free(&r);
    fake_now += 61;
    uint8_t A[256];
    memset(A, 0x22, sizeof A);
    char *ahex = tuks_hex(A, 256);
    char body[1024];
    snprintf(body, sizeof body, "{\"srpToken\":\"%s\",\"A\":\"%s\",\"M\":\"%064d\"}", tok, ahex, 0);
    post("/v1/auth/finish", body, &r);
    assert_err(&r, 401, 110);
    free(ahex);
}
END_TEST

START_TEST(session_create_destroy_devices)
{
    tuks_account(&srv, EMAIL, PW, 0, NULL);
    uint8_t auth[32], kft[32], sess[32], kft2[32], sess2[32];
    tuks_auth_token(&srv, EMAIL, PW, auth);
    tuks_resp r;
    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/session/create", auth, PICL_TOKEN_AUTH,
                               "{\"name\":\"laptop\"}", 0, NULL, NULL, &r),
                     200);
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(r.json, "uid"))), 32);
    ck_assert(json_is_false(json_object_get(r.json, "verified")));
    picl_token_keys k;
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_AUTH, auth), PICL_OK);
    uint8_t pair[64];
    const char *bh = json_string_value(json_object_get(r.json, "bundle"));
    ck_assert_int_eq(
        picl__bundle_open_hex(pair, 64, k.request_key, PICL_BUNDLE_SESSION_CREATE, bh, strlen(bh)), PICL_OK);
    memcpy(kft, pair, 32);
    memcpy(sess, pair + 32, 32);
    tuks_resp_free(&r);
    /* authToken is single-use */
    tuks_hawk(srv.port, "POST", "/v1/session/create", auth, PICL_TOKEN_AUTH, "{}", 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);

    tuks_session(&srv, EMAIL, PW, kft2, sess2);
    ck_assert_int_eq(
        tuks_hawk(srv.port, "GET", "/v1/account/devices", sess, PICL_TOKEN_SESSION, NULL, 0, NULL, NULL, &r),
        200);
    json_t *d = json_object_get(r.json, "devices");
    ck_assert_uint_eq(json_array_size(d), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "name")), "laptop");
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(json_array_get(d, 0), "id"))), 32);
    tuks_resp_free(&r);

    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/session/destroy", sess2, PICL_TOKEN_SESSION, "{}", 0,
                               NULL, NULL, &r),
                     200);
    tuks_resp_free(&r);
    tuks_hawk(srv.port, "GET", "/v1/recovery_email/status", sess2, PICL_TOKEN_SESSION, NULL, 0, NULL, NULL,
              &r);
    assert_err(&r, 401, 110);
    ck_assert_int_eq(
        tuks_hawk(srv.port, "GET", "/v1/account/devices", sess, PICL_TOKEN_SESSION, NULL, 0, NULL, NULL, &r),
        200);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "devices")), 1);
    tuks_resp_free(&r);
}
END_TEST

START_TEST(account_keys_and_email)
{
    char uid[33], code[128];
    tuks_account(&srv, EMAIL, PW, 0, uid);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    tuks_resp r;
    /* unverified: 104, and the keyFetchToken is spent anyway */
    tuks_hawk(srv.port, "GET", "/v1/account/keys", kft, PICL_TOKEN_KEY_FETCH, NULL, 0, NULL, NULL, &r);
    assert_err(&r, 400, 104);
    tuks_hawk(srv.port, "GET", "/v1/account/keys", kft, PICL_TOKEN_KEY_FETCH, NULL, 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);

    ck_assert_int_eq(tuks_hawk(srv.port, "GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL,
                               0, NULL, NULL, &r),
                     200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "email")), EMAIL_HEX);
    ck_assert(json_is_false(json_object_get(r.json, "verified")));
    tuks_resp_free(&r);

    /* resend: a second mail with the same code */
    char first[128];
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Verify-Code", first, sizeof first));
    ck_assert_uint_eq(strlen(first), 64);
    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/recovery_email/resend_code", sess, PICL_TOKEN_SESSION,
                               "{}", 0, NULL, NULL, &r),
                     200);
    tuks_resp_free(&r);
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Verify-Code", code, sizeof code));
    ck_assert_str_eq(code, first);

    char body[256];
    snprintf(body, sizeof body, "{\"uid\":\"%s\",\"code\":\"%064d\"}", uid, 1);
    post("/v1/recovery_email/verify_code", body, &r);
    assert_err(&r, 400, 105);
    snprintf(body, sizeof body, "{\"uid\":\"%032d\",\"code\":\"%s\"}", 1, code);
    post("/v1/recovery_email/verify_code", body, &r);
    assert_err(&r, 400, 102);
    snprintf(body, sizeof body, "{\"uid\":\"%s\",\"code\":\"%.63s\"}", uid, code);
    post("/v1/recovery_email/verify_code", body, &r);
    assert_err(&r, 400, 107);
    snprintf(body, sizeof body, "{\"uid\":\"%s\",\"code\":\"%s\"}", uid, code);
    ck_assert_int_eq(post("/v1/recovery_email/verify_code", body, &r), 200);
    tuks_resp_free(&r);
    ck_assert_int_eq(post("/v1/recovery_email/verify_code", body, &r), 200); /* idempotent */
    tuks_resp_free(&r);

    ck_assert_int_eq(tuks_hawk(srv.port, "GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL,
                               0, NULL, NULL, &r),
                     200);
    ck_assert(json_is_true(json_object_get(r.json, "verified")));
    tuks_resp_free(&r);

    uint8_t kft2[32], sess2[32], keys[64];
    tuks_session(&srv, EMAIL, PW, kft2, sess2);
    ck_assert_int_eq(
        tuks_hawk(srv.port, "GET", "/v1/account/keys", kft2, PICL_TOKEN_KEY_FETCH, NULL, 0, NULL, NULL, &r),
        200);
    picl_token_keys k;
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_KEY_FETCH, kft2), PICL_OK);
    const char *bh = json_string_value(json_object_get(r.json, "bundle"));
    ck_assert_int_eq(picl__bundle_open_hex(keys, 64, k.request_key, PICL_BUNDLE_ACCOUNT_KEYS, bh, strlen(bh)),
                     PICL_OK);
    tuks_resp_free(&r);
}
END_TEST

START_TEST(forgot_password_endpoints)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    tuks_resp r;
    ck_assert_int_eq(post("/v1/password/forgot/send_code", "{\"email\":\"" EMAIL_HEX "\"}", &r), 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "ttl")), 900);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "codeLength")), 8);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "tries")), 3);
    const char *fh = json_string_value(json_object_get(r.json, "forgotPasswordToken"));
    ck_assert_uint_eq(strlen(fh), 64);
    uint8_t ft[32];
    size_t got;
    ck_assert_int_eq(picl__hex_decode(ft, 32, &got, fh, 64), PICL_OK);
    tuks_resp_free(&r);
    char code[32], code2[32];
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Recovery-Code", code, sizeof code));
    ck_assert_uint_eq(strlen(code), 8);
    ck_assert_uint_eq(strspn(code, "0123456789"), 8);

    post("/v1/password/forgot/send_code", "{\"email\":\"6e6f626f6479\"}", &r);
    assert_err(&r, 400, 102);

    /* resend: the same code again, remaining ttl/tries */
    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/password/forgot/resend_code", ft,
                               PICL_TOKEN_FORGOT_PASSWORD, "{\"email\":\"" EMAIL_HEX "\"}", 0, NULL, NULL,
                               &r),
                     200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "tries")), 3);
    ck_assert_int_le(json_integer_value(json_object_get(r.json, "ttl")), 900);
    tuks_resp_free(&r);
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Recovery-Code", code2, sizeof code2));
    ck_assert_str_eq(code, code2);
    tuks_hawk(srv.port, "POST", "/v1/password/forgot/resend_code", ft, PICL_TOKEN_FORGOT_PASSWORD,
              "{\"email\":\"626f62\"}", 0, NULL, NULL, &r);
    assert_err(&r, 400, 107);

    /* wrong codes: 105 with tries counting down */
    char body[64];
    int w = (code[7] == '0') ? 1 : 0;
    snprintf(body, sizeof body, "{\"code\":\"%.7s%d\"}", code, w);
    tuks_hawk(srv.port, "POST", "/v1/password/forgot/verify_code", ft, PICL_TOKEN_FORGOT_PASSWORD, body, 0,
              NULL, NULL, &r);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "tries")), 2);
    assert_err(&r, 400, 105);
    tuks_hawk(srv.port, "POST", "/v1/password/forgot/verify_code", ft, PICL_TOKEN_FORGOT_PASSWORD,
              "{\"code\":\"1234\"}", 0, NULL, NULL, &r);
    assert_err(&r, 400, 107);
    snprintf(body, sizeof body, "{\"code\":\"%s\"}", code);
    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/password/forgot/verify_code", ft,
                               PICL_TOKEN_FORGOT_PASSWORD, body, 0, NULL, NULL, &r),
                     200);
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(r.json, "accountResetToken"))), 64);
    tuks_resp_free(&r);
    /* the forgotPasswordToken is spent */
    tuks_hawk(srv.port, "POST", "/v1/password/forgot/verify_code", ft, PICL_TOKEN_FORGOT_PASSWORD, body, 0,
              NULL, NULL, &r);
    assert_err(&r, 401, 110);
}
END_TEST

START_TEST(forgot_code_tries_exhausted)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t ft[32];
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    ck_assert_int_eq(picl__ksc_forgot_send(c, EMAIL, strlen(EMAIL), ft), PICL_OK);
    char code[32], body[64];
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Recovery-Code", code, sizeof code));
    int w = (code[7] == '0') ? 1 : 0;
    snprintf(body, sizeof body, "{\"code\":\"%.7s%d\"}", code, w);
    tuks_resp r;
    for (int i = 0; i < 3; i++) {
        tuks_hawk(srv.port, "POST", "/v1/password/forgot/verify_code", ft, PICL_TOKEN_FORGOT_PASSWORD, body,
                  0, NULL, NULL, &r);
        assert_err(&r, 400, 105);
    }
    /* three wrong guesses: the token is gone, even for the right code */
    snprintf(body, sizeof body, "{\"code\":\"%s\"}", code);
    tuks_hawk(srv.port, "POST", "/v1/password/forgot/verify_code", ft, PICL_TOKEN_FORGOT_PASSWORD, body, 0,
              NULL, NULL, &r);
    assert_err(&r, 401, 110);
    picl__ksc_free(c);
}
END_TEST

START_TEST(reset_mail_rate_limit)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    tuks_resp r;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(post("/v1/password/forgot/send_code", "{\"email\":\"" EMAIL_HEX "\"}", &r), 200);
        tuks_resp_free(&r);
    }
    post("/v1/password/forgot/send_code", "{\"email\":\"" EMAIL_HEX "\"}", &r);
    ck_assert(strtol(r.retry_after, NULL, 10) > 3000);
    ck_assert_int_gt(json_integer_value(json_object_get(r.json, "retryAfter")), 3000);
    assert_err(&r, 429, 114);
    ck_assert_int_eq(tuks_mail_count(&srv), 3);
}
END_TEST

START_TEST(random_bytes)
{
    tuks_resp r, r2;
    ck_assert_int_eq(post("/v1/get_random_bytes", "{}", &r), 200);
    ck_assert_int_eq(post("/v1/get_random_bytes", "{}", &r2), 200);
    const char *a = json_string_value(json_object_get(r.json, "data"));
    const char *b = json_string_value(json_object_get(r2.json, "data"));
    ck_assert_uint_eq(strlen(a), 64);
    ck_assert_str_ne(a, b);
    tuks_resp_free(&r);
    tuks_resp_free(&r2);
}
END_TEST

START_TEST(storage_token)
{
    tuks_account(&srv, EMAIL, PW, 0, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    tuks_resp r;
    tuks_hawk(srv.port, "GET", "/v1/storage/token", sess, PICL_TOKEN_SESSION, NULL, 0, NULL, NULL, &r);
    assert_err(&r, 400, 104);
    tuks_stop(&srv);

    static const uint8_t secret[] = "0123456789abcdef0123456789abcdef0123456789abcdef";
    ks_config cfg = {.secret = secret, .secret_len = 48, .storage_node = "http://127.0.0.1:9"};
    tuks_start(&srv, &cfg);
    char uid[33];
    tuks_account(&srv, EMAIL, PW, 1, uid);
    tuks_session(&srv, EMAIL, PW, kft, sess);
    ck_assert_int_eq(
        tuks_hawk(srv.port, "GET", "/v1/storage/token", sess, PICL_TOKEN_SESSION, NULL, 0, NULL, NULL, &r),
        200);
    const char *id = json_string_value(json_object_get(r.json, "id"));
    const char *key = json_string_value(json_object_get(r.json, "key"));
    ck_assert_ptr_nonnull(id);
    ck_assert_ptr_nonnull(key);
    json_int_t nuid = json_integer_value(json_object_get(r.json, "uid"));
    ck_assert_int_eq(nuid, 1);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "api_endpoint")), "http://127.0.0.1:9/1.5/1");
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "duration")), 3600);
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(r.json, "hashed_fxa_uid"))), 32);
    picl_tokenlib_payload p;
    ck_assert_int_eq(picl__tokenlib_parse(&p, secret, 48, id, strlen(id), time(NULL), 0), PICL_OK);
    ck_assert_int_eq(p.uid, 1);
    ck_assert_str_eq(p.node, "http://127.0.0.1:9");
    ck_assert_str_eq(p.fxa_uid, uid);
    char dk[PICL_TOKENLIB_KEY_CHARS + 1];
    ck_assert_int_eq(picl__tokenlib_derive_key(dk, secret, 48, id, strlen(id), p.salt), PICL_OK);
    ck_assert_str_eq(dk, key);
    tuks_resp_free(&r);
}
END_TEST

START_TEST(storage_token_without_node)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    tuks_resp r;
    tuks_hawk(srv.port, "GET", "/v1/storage/token", sess, PICL_TOKEN_SESSION, NULL, 0, NULL, NULL, &r);
    ck_assert_str_ne(r.retry_after, "");
    assert_err(&r, 503, 201);
}
END_TEST

START_TEST(account_destroy)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t auth[32], kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    tuks_auth_token(&srv, EMAIL, PW, auth);
    tuks_resp r;
    ck_assert_int_eq(
        tuks_hawk(srv.port, "POST", "/v1/account/destroy", auth, PICL_TOKEN_AUTH, "{}", 0, NULL, NULL, &r),
        200);
    tuks_resp_free(&r);
    post("/v1/auth/start", "{\"email\":\"" EMAIL_HEX "\"}", &r);
    assert_err(&r, 400, 102);
    tuks_hawk(srv.port, "GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL, 0, NULL, NULL,
              &r);
    assert_err(&r, 401, 110);
    /* the email can be registered again */
    tuks_account(&srv, EMAIL, PW, 0, NULL);
}
END_TEST

/* password/change/start's accountResetToken, for the reset tests */
static void reset_token(uint8_t art[32])
{
    uint8_t auth[32], pair[64];
    tuks_auth_token(&srv, EMAIL, PW, auth);
    tuks_resp r;
    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/password/change/start", auth, PICL_TOKEN_AUTH, "{}", 0,
                               NULL, NULL, &r),
                     200);
    picl_token_keys k;
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_AUTH, auth), PICL_OK);
    const char *bh = json_string_value(json_object_get(r.json, "bundle"));
    ck_assert_int_eq(
        picl__bundle_open_hex(pair, 64, k.request_key, PICL_BUNDLE_PASSWORD_CHANGE, bh, strlen(bh)), PICL_OK);
    memcpy(art, pair + 32, 32);
    tuks_resp_free(&r);
    /* the authToken was spent by change/start */
    tuks_hawk(srv.port, "POST", "/v1/password/change/start", auth, PICL_TOKEN_AUTH, "{}", 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);
}

/* A reset body: bundle of wrapKb || verifier under art, or `bundle` as given. */
static char *reset_body(const uint8_t art[32], const uint8_t *verifier, const char *bundle,
                        const char *srp_type)
{
    char *sealed = NULL;
    if (!bundle) {
        uint8_t payload[288];
        memset(payload, 0, 32);
        memcpy(payload + 32, verifier, 256);
        picl_token_keys k;
        ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_ACCOUNT_RESET, art), PICL_OK);
        ck_assert_int_eq(
            picl__bundle_seal_hex(&sealed, k.request_key, PICL_BUNDLE_ACCOUNT_RESET, payload, sizeof payload),
            PICL_OK);
        bundle = sealed;
    }
    char *b = malloc(2048);
    snprintf(b, 2048,
             "{\"bundle\":\"%s\",\"srp\":{\"type\":\"%s\",\"salt\":\"%064d\"},"
             "\"passwordStretching\":{\"type\":\"PBKDF2/scrypt/PBKDF2/v1\",\"PBKDF2_rounds_1\":"
             "1000,\"scrypt_N\":1024,\"scrypt_r\":8,\"scrypt_p\":1,\"PBKDF2_rounds_2\":1000,"
             "\"salt\":\"%064d\"}}",
             bundle, srp_type, 1, 2);
    free(sealed);
    return b;
}

START_TEST(account_reset_errors)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t art[32], v[256];
    memset(v, 0x11, sizeof v);
    tuks_resp r;
    const char *T = "SRP-6a/SHA256/2048/v1";
    /* each rejected request spends its accountResetToken: take a fresh one */
    reset_token(art);
    char *b = reset_body(art, v, "00", T);
    tuks_hawk(srv.port, "POST", "/v1/account/reset", art, PICL_TOKEN_ACCOUNT_RESET, b, 0, NULL, NULL, &r);
    assert_err(&r, 400, 107);
    free(b);
    tuks_hawk(srv.port, "POST", "/v1/account/reset", art, PICL_TOKEN_ACCOUNT_RESET, "{}", 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);

    reset_token(art);
    uint8_t other[32];
    memset(other, 7, sizeof other);
    char *good_other = reset_body(other, v, NULL, T); /* sealed under another token's key */
    tuks_hawk(srv.port, "POST", "/v1/account/reset", art, PICL_TOKEN_ACCOUNT_RESET, good_other, 0, NULL, NULL,
              &r);
    assert_err(&r, 400, 107);
    free(good_other);

    reset_token(art);
    uint8_t zero[256];
    memset(zero, 0, sizeof zero);
    b = reset_body(art, zero, NULL, T); /* verifier 0 */
    tuks_hawk(srv.port, "POST", "/v1/account/reset", art, PICL_TOKEN_ACCOUNT_RESET, b, 0, NULL, NULL, &r);
    assert_err(&r, 400, 107);
    free(b);

    reset_token(art);
    b = reset_body(art, v, NULL, "SRP-6a/SHA1/1024/v1");
    tuks_hawk(srv.port, "POST", "/v1/account/reset", art, PICL_TOKEN_ACCOUNT_RESET, b, 0, NULL, NULL, &r);
    assert_err(&r, 400, 107);
    free(b);

    reset_token(art);
    tuks_hawk(srv.port, "POST", "/v1/account/reset", art, PICL_TOKEN_ACCOUNT_RESET, "{\"srp\":{}}", 0, NULL,
              NULL, &r);
    assert_err(&r, 400, 108);

    /* nothing changed: the password still works */
    uint8_t auth[32];
    tuks_auth_token(&srv, EMAIL, PW, auth);

    /* and a good reset replaces it: the old password now fails with 103 */
    reset_token(art);
    b = reset_body(art, v, NULL, T);
    ck_assert_int_eq(
        tuks_hawk(srv.port, "POST", "/v1/account/reset", art, PICL_TOKEN_ACCOUNT_RESET, b, 0, NULL, NULL, &r),
        200);
    tuks_resp_free(&r);
    free(b);
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    picl_ksc_auth_start st;
    ck_assert_int_eq(picl__ksc_auth_start(c, EMAIL, strlen(EMAIL), &st), PICL_OK);
    ck_assert_uint_eq(st.srp_salt[31], 1); /* the new salts */
    ck_assert_uint_eq(st.main_salt[31], 2);
    picl__ksc_free(c);
    /* the authToken made before the reset is revoked */
    tuks_hawk(srv.port, "POST", "/v1/account/destroy", auth, PICL_TOKEN_AUTH, "{}", 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);
}
END_TEST

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

START_TEST(newer_schema_refused)
{
    tuks_stop(&srv);
    char dir[] = "/tmp/picl-ks-schema-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ks_config cfg = {.data_dir = dir, .listen = "127.0.0.1:0"};
    ks_server *ks = NULL;
    ck_assert_int_eq(ks_server_new(&ks, &cfg), PICL_OK);
    ks_server_free(ks);
    char path[128];
    snprintf(path, sizeof path, "%s/keyserver.db", dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    ck_assert_int_eq(
        sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema_version'", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), KS_SCHEMA_VERSION);
    sqlite3_finalize(q);
    ck_assert_int_eq(
        sqlite3_exec(db, "UPDATE meta SET value = 99 WHERE key='schema_version'", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    ks = (ks_server *)1;
    ck_assert_int_eq(ks_server_new(&ks, &cfg), PICL_ERROR_DATABASE);
    ck_assert_ptr_null(ks);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    tuks_start(&srv, NULL); /* for the teardown */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_api");
    TCase *tc = tcase_create("endpoints");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, heartbeat_and_unknown_paths);
    tcase_add_test(tc, account_create);
    tcase_add_test(tc, length_and_size_limits);
    tcase_add_test(tc, auth_start_and_finish);
    tcase_add_test(tc, srp_token_expires);
    tcase_add_test(tc, session_create_destroy_devices);
    tcase_add_test(tc, account_keys_and_email);
    tcase_add_test(tc, forgot_password_endpoints);
    tcase_add_test(tc, forgot_code_tries_exhausted);
    tcase_add_test(tc, reset_mail_rate_limit);
    tcase_add_test(tc, random_bytes);
    tcase_add_test(tc, storage_token);
    tcase_add_test(tc, storage_token_without_node);
    tcase_add_test(tc, account_destroy);
    tcase_add_test(tc, account_reset_errors);
    tcase_add_test(tc, newer_schema_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
