/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_devices.c -- the keyserver endpoints of keyserver.md 9 for devices, security events and the recovery key, on the wire (SQLite, and PostgreSQL under PICL_TEST_BACKEND=postgresql): shapes, refusals with their errnos, one account never touching another's devices or key, the recent-login rule, the look-up limit, and a removed session refused. */
#include "testutil.h"
#include "testutil_ks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/codec.h"
#include "picl.h"
#include "protocol/tokens.h"

#define EMAIL "alice@example.org"
#define EMAIL_HEX "616c696365406578616d706c652e6f7267"
#define EMAIL_B "bob@example.org"
#define PW "correct horse"
#define KEY_ID "00112233445566778899aabbccddeeff"
#define KEY_ID2 "ffeeddccbbaa99887766554433221100"

static tuks_srv srv;
static int64_t fake_now;
static int64_t clock_hook(void *ctx)
{
    (void)ctx;
    return fake_now;
}

static void setup(void)
{
    tu_nss_setup();
    ks_config cfg = {.now = clock_hook};
    fake_now = time(NULL);
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
    tuks_resp_free(r);
}

/* A Hawk request with a session (or other) token at the server's clock. */
static long call(const char *method, const char *path, const uint8_t tok[32], int type, const char *body,
                 tuks_resp *r)
{
    return tuks_hawk(srv.port, method, path, tok, type, body, fake_now, NULL, NULL, r);
}

static json_t *devices_of(const uint8_t sess[32])
{
    tuks_resp r;
    ck_assert_int_eq(call("GET", "/v1/account/devices", sess, PICL_TOKEN_SESSION, NULL, &r), 200);
    json_t *d = json_incref(json_object_get(r.json, "devices"));
    tuks_resp_free(&r);
    ck_assert(json_is_array(d));
    return d;
}

START_TEST(test_devices_endpoints)
{
    uint8_t kft[32], s1[32], s2[32], sb[32];
    tuks_resp r;
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    tuks_account(&srv, EMAIL_B, PW, 1, NULL);
    tuks_session(&srv, EMAIL, PW, kft, s1);
    tuks_session(&srv, EMAIL, PW, kft, s2);
    tuks_session(&srv, EMAIL_B, PW, kft, sb);

    ck_assert_int_eq(call("POST", "/v1/account/device", s1, PICL_TOKEN_SESSION,
                          "{\"name\":\"desk\",\"type\":\"desktop\"}", &r),
                     200);
    tuks_resp_free(&r);
    call("POST", "/v1/account/device", s1, PICL_TOKEN_SESSION, "{\"name\":\"desk\",\"type\":\"toaster\"}",
         &r);
    assert_err(&r, 400, 107);
    call("POST", "/v1/account/device", s1, PICL_TOKEN_SESSION, "{\"type\":\"cli\"}", &r);
    assert_err(&r, 400, 108);
    fake_now += 100;
    json_t *d = devices_of(s1);
    ck_assert_uint_eq(json_array_size(d), 2);
    json_t *a = json_array_get(d, 0), *b = json_array_get(d, 1);
    ck_assert_str_eq(json_string_value(json_object_get(a, "name")), "desk");
    ck_assert_str_eq(json_string_value(json_object_get(a, "type")), "desktop");
    ck_assert(json_is_true(json_object_get(a, "current")));
    ck_assert(json_is_false(json_object_get(b, "current")));
    ck_assert_int_eq(json_integer_value(json_object_get(a, "lastAccessAt")), fake_now);
    ck_assert_int_eq(json_integer_value(json_object_get(a, "createdAt")), fake_now - 100);
    char id2[33];
    snprintf(id2, sizeof id2, "%s", json_string_value(json_object_get(b, "id")));
    ck_assert_uint_eq(strlen(id2), 32);
    json_decref(d);

    /* another account cannot sign A's device out; A's list is unchanged */
    char body[96];
    snprintf(body, sizeof body, "{\"id\":\"%s\"}", id2);
    call("POST", "/v1/account/device/destroy", sb, PICL_TOKEN_SESSION, body, &r);
    assert_err(&r, 400, 126);
    d = devices_of(s1);
    ck_assert_uint_eq(json_array_size(d), 2);
    json_decref(d);
    call("POST", "/v1/account/device/destroy", s1, PICL_TOKEN_SESSION, "{\"id\":\"XYZ\"}", &r);
    assert_err(&r, 400, 107);
    call("POST", "/v1/account/device/destroy", s1, PICL_TOKEN_SESSION, "{}", &r);
    assert_err(&r, 400, 108);

    ck_assert_int_eq(call("POST", "/v1/account/device/destroy", s1, PICL_TOKEN_SESSION, body, &r), 200);
    tuks_resp_free(&r);
    call("GET", "/v1/account/devices", s2, PICL_TOKEN_SESSION, NULL, &r);
    assert_err(&r, 401, 110);
    call("POST", "/v1/account/device/destroy", s1, PICL_TOKEN_SESSION, body, &r);
    assert_err(&r, 400, 126);
    d = devices_of(s1);
    ck_assert_uint_eq(json_array_size(d), 1);
    json_decref(d);
    d = devices_of(sb);
    ck_assert_uint_eq(json_array_size(d), 1);
    json_decref(d);

    /* A's events: newest first; B's are B's own */
    ck_assert_int_eq(call("GET", "/v1/account/events", s1, PICL_TOKEN_SESSION, NULL, &r), 200);
    char types[512] = "";
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(r.json, "events"), i, e) {
        tu_append(types, sizeof types, json_string_value(json_object_get(e, "type")));
        tu_append(types, sizeof types, " ");
    }
    ck_assert_str_eq(types, "device.destroyed login login account.verified account.created ");
    e = json_array_get(json_object_get(r.json, "events"), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "time")), fake_now);
    ck_assert_str_eq(json_string_value(json_object_get(e, "address")), "127.0.0.1");
    tuks_resp_free(&r);
    ck_assert_int_eq(call("GET", "/v1/account/events", sb, PICL_TOKEN_SESSION, NULL, &r), 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "events")), 3);
    tuks_resp_free(&r);
}
END_TEST

START_TEST(test_recovery_key_endpoints)
{
    uint8_t kft[32], s1[32], sb[32], su[32];
    tuks_resp r;
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    tuks_account(&srv, EMAIL_B, PW, 1, NULL);
    tuks_account(&srv, "carol@example.org", PW, 0, NULL);
    tuks_session(&srv, EMAIL, PW, kft, s1);
    tuks_session(&srv, EMAIL_B, PW, kft, sb);
    tuks_session(&srv, "carol@example.org", PW, kft, su);

    ck_assert_int_eq(call("GET", "/v1/recoveryKey/exists", s1, PICL_TOKEN_SESSION, NULL, &r), 200);
    ck_assert(json_is_false(json_object_get(r.json, "exists")));
    tuks_resp_free(&r);
    call("POST", "/v1/recoveryKey", s1, PICL_TOKEN_SESSION,
         "{\"recoveryKeyId\":\"0011\",\"recoveryData\":\"x\"}", &r);
    assert_err(&r, 400, 107);
    call("POST", "/v1/recoveryKey", s1, PICL_TOKEN_SESSION, "{\"recoveryKeyId\":\"" KEY_ID "\"}", &r);
    assert_err(&r, 400, 108);
    char *big = malloc(1200);
    int n = snprintf(big, 1200, "{\"recoveryKeyId\":\"" KEY_ID "\",\"recoveryData\":\"");
    memset(big + n, 'a', 1025);
    snprintf(big + n + 1025, 1200 - (size_t)n - 1025, "\"}");
    call("POST", "/v1/recoveryKey", s1, PICL_TOKEN_SESSION, big, &r);
    assert_err(&r, 400, 107);
    free(big);
    call("POST", "/v1/recoveryKey", su, PICL_TOKEN_SESSION,
         "{\"recoveryKeyId\":\"" KEY_ID "\",\"recoveryData\":\"x\"}", &r);
    assert_err(&r, 400, 104); /* unverified */
    ck_assert_int_eq(call("POST", "/v1/recoveryKey", s1, PICL_TOKEN_SESSION,
                          "{\"recoveryKeyId\":\"" KEY_ID "\",\"recoveryData\":\"first\"}", &r),
                     200);
    tuks_resp_free(&r);
    ck_assert_int_eq(call("POST", "/v1/recoveryKey", s1, PICL_TOKEN_SESSION,
                          "{\"recoveryKeyId\":\"" KEY_ID2 "\",\"recoveryData\":\"second\"}", &r),
                     200);
    tuks_resp_free(&r);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM recovery_keys"), 1);
    ck_assert_int_eq(call("GET", "/v1/recoveryKey/exists", s1, PICL_TOKEN_SESSION, NULL, &r), 200);
    ck_assert(json_is_true(json_object_get(r.json, "exists")));
    tuks_resp_free(&r);
    /* B sees no key of A's */
    ck_assert_int_eq(call("GET", "/v1/recoveryKey/exists", sb, PICL_TOKEN_SESSION, NULL, &r), 200);
    ck_assert(json_is_false(json_object_get(r.json, "exists")));
    tuks_resp_free(&r);
    /* a session is only recent for 10 minutes */
    fake_now += 601;
    call("POST", "/v1/recoveryKey", s1, PICL_TOKEN_SESSION,
         "{\"recoveryKeyId\":\"" KEY_ID "\",\"recoveryData\":\"x\"}", &r);
    assert_err(&r, 403, 125);

    /* the forgot flow's accountResetToken reads recoveryData by id only */
    ck_assert_int_eq(tuks_request(srv.port, "POST", "/v1/password/forgot/send_code",
                                  (const char *const[]){"Content-Type: application/json", NULL},
                                  "{\"email\":\"" EMAIL_HEX "\"}", strlen("{\"email\":\"" EMAIL_HEX "\"}"),
                                  &r),
                     200);
    uint8_t ft[32], rt[32];
    size_t got;
    ck_assert_int_eq(
        picl__hex_decode(ft, 32, &got, json_string_value(json_object_get(r.json, "forgotPasswordToken")), 64),
        PICL_OK);
    tuks_resp_free(&r);
    char code[32], body[64];
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Recovery-Code", code, sizeof code));
    snprintf(body, sizeof body, "{\"code\":\"%s\"}", code);
    ck_assert_int_eq(
        call("POST", "/v1/password/forgot/verify_code", ft, PICL_TOKEN_FORGOT_PASSWORD, body, &r), 200);
    ck_assert_int_eq(
        picl__hex_decode(rt, 32, &got, json_string_value(json_object_get(r.json, "accountResetToken")), 64),
        PICL_OK);
    tuks_resp_free(&r);
    /* a session token is no reset token; the old id is gone */
    call("GET", "/v1/recoveryKey/" KEY_ID2, s1, PICL_TOKEN_SESSION, NULL, &r);
    assert_err(&r, 401, 110);
    call("GET", "/v1/recoveryKey/" KEY_ID, rt, PICL_TOKEN_ACCOUNT_RESET, NULL, &r);
    assert_err(&r, 404, 124);
    ck_assert_int_eq(call("GET", "/v1/recoveryKey/" KEY_ID2, rt, PICL_TOKEN_ACCOUNT_RESET, NULL, &r), 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "recoveryData")), "second");
    tuks_resp_free(&r);
    /* wrong ids are counted: the 5th wrong one in 15 minutes is the last */
    for (int i = 0; i < 4; i++) {
        call("GET", "/v1/recoveryKey/" KEY_ID, rt, PICL_TOKEN_ACCOUNT_RESET, NULL, &r);
        assert_err(&r, 404, 124);
    }
    call("GET", "/v1/recoveryKey/" KEY_ID2, rt, PICL_TOKEN_ACCOUNT_RESET, NULL, &r);
    assert_err(&r, 429, 114);

    ck_assert_int_eq(call("DELETE", "/v1/recoveryKey", sb, PICL_TOKEN_SESSION, NULL, &r), 200);
    tuks_resp_free(&r);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM recovery_keys"), 1); /* B's delete left A's */
    ck_assert_int_eq(call("DELETE", "/v1/recoveryKey", s1, PICL_TOKEN_SESSION, NULL, &r), 200);
    tuks_resp_free(&r);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM recovery_keys"), 0);
}
END_TEST

/* Only the newest 100 events of an account are kept. */
START_TEST(test_events_kept)
{
    tuks_stop(&srv);
    ks_config cfg = {.now = clock_hook, .login_max = 1000};
    fake_now = time(NULL);
    tuks_start(&srv, &cfg);
    uint8_t kft[32], s1[32], A[256];
    tuks_resp r;
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    memset(A, 0x22, sizeof A);
    char *ahex = tuks_hex(A, 256);
    char *body = malloc(1024);
    const char *h[] = {"Content-Type: application/json", NULL};
    const char *start = "{\"email\":\"" EMAIL_HEX "\"}";
    for (int i = 0; i < 103; i++) {
        ck_assert_int_eq(tuks_request(srv.port, "POST", "/v1/auth/start", h, start, strlen(start), &r), 200);
        snprintf(body, 1024, "{\"srpToken\":\"%s\",\"A\":\"%s\",\"M\":\"%064d\"}",
                 json_string_value(json_object_get(r.json, "srpToken")), ahex, 0);
        tuks_resp_free(&r);
        tuks_request(srv.port, "POST", "/v1/auth/finish", h, body, strlen(body), &r);
        assert_err(&r, 400, 103);
    }
    free(body);
    free(ahex);
    tuks_session(&srv, EMAIL, PW, kft, s1);
    ck_assert_int_eq(call("GET", "/v1/account/events", s1, PICL_TOKEN_SESSION, NULL, &r), 200);
    json_t *ev = json_object_get(r.json, "events");
    ck_assert_uint_eq(json_array_size(ev), 100);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ev, 0), "type")), "login");
    for (size_t i = 1; i < 100; i++)
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ev, i), "type")), "login.failed");
    tuks_resp_free(&r);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM events"), 100);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("keyserver_devices");
    TCase *tc = tcase_create("endpoints");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_devices_endpoints);
    tcase_add_test(tc, test_recovery_key_endpoints);
    tcase_add_test(tc, test_events_kept);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
