/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_robust.c -- malformed requests never crash, hang or 500 the
 * keyserver: seeded random mutations of valid bodies, field types and Hawk
 * headers on every endpoint, each answered with a JSON 4xx error. */
#include "testutil.h"
#include "testutil_ks.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/tokens.h"

static tuks_srv srv;
static unsigned seed = 12345;

static unsigned rnd(void)
{
    seed = seed * 1103515245u + 12345u;
    return (seed >> 8) & 0xffffff;
}

static const char *const routes[][2] = {
    {"POST", "/v1/account/create"},
    {"POST", "/v1/auth/start"},
    {"POST", "/v1/auth/finish"},
    {"POST", "/v1/session/create"},
    {"POST", "/v1/session/destroy"},
    {"GET", "/v1/account/keys"},
    {"GET", "/v1/account/devices"},
    {"POST", "/v1/account/reset"},
    {"POST", "/v1/account/destroy"},
    {"GET", "/v1/recovery_email/status"},
    {"POST", "/v1/recovery_email/resend_code"},
    {"POST", "/v1/recovery_email/verify_code"},
    {"POST", "/v1/password/change/start"},
    {"POST", "/v1/password/forgot/send_code"},
    {"POST", "/v1/password/forgot/resend_code"},
    {"POST", "/v1/password/forgot/verify_code"},
    {"GET", "/v1/storage/token"},
};

/* Bodies that are valid or nearly so, to mutate. */
static const char *const seeds[] = {
    "{\"email\":\"616c696365406578616d706c652e6f7267\"}",
    "{\"srpToken\":\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\","
    "\"A\":\"02\",\"M\":\"00\"}",
    "{\"uid\":\"00112233445566778899aabbccddeeff\",\"code\":\"00\"}",
    "{\"code\":\"12345678\"}",
    "{\"email\":\"61\",\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\",\"verifier\":\"01\","
    "\"salt\":\"00\"},\"passwordStretching\":{\"type\":\"PBKDF2/scrypt/PBKDF2/v1\","
    "\"PBKDF2_rounds_1\":1,\"scrypt_N\":2,\"scrypt_r\":1,\"scrypt_p\":1,\"PBKDF2_rounds_2\":1,"
    "\"salt\":\"00\"}}",
    "{\"bundle\":\"00\",\"srp\":{},\"passwordStretching\":{}}",
    "{}",
};

static const char *const values[] = {
    "null", "true", "0",           "-1",         "1e999",    "9223372036854775808", "\"\"", "\"zz\"",
    "[]",   "{}",   "\"\\u0000\"", "\"616263\"", "[\"00\"]", "{\"type\":1}",
};

/* One mutated body into buf. */
static size_t mutate(char *buf, size_t cap)
{
    const char *s = seeds[rnd() % (sizeof seeds / sizeof seeds[0])];
    size_t n = strlen(s);
    memcpy(buf, s, n + 1);
    switch (rnd() % 5) {
    case 0: /* flip some bytes */
        for (int i = 0; i < 3; i++)
            buf[rnd() % n] = (char)(rnd() & 0xff);
        break;
    case 1: /* truncate */
        n = rnd() % n;
        buf[n] = 0;
        break;
    case 2: { /* replace the first value with another JSON type */
        char *colon = strchr(buf, ':');
        char *end = colon ? strpbrk(colon + 1, ",}") : NULL;
        if (colon && end) {
            const char *v = values[rnd() % (sizeof values / sizeof values[0])];
            char tail[2048];
            snprintf(tail, sizeof tail, "%s", end);
            snprintf(colon + 1, cap - (size_t)(colon + 1 - buf), "%s%s", v, tail);
            n = strlen(buf);
        }
        break;
    }
    case 3: /* a JSON text that is not an object */
        snprintf(buf, cap, "%s", values[rnd() % (sizeof values / sizeof values[0])]);
        n = strlen(buf);
        break;
    default: /* as is */
        break;
    }
    return n;
}

START_TEST(random_bodies_and_headers)
{
    tu_nss_setup();
    tuks_start(&srv, NULL);
    tuks_account(&srv, "alice@example.org", "pw", 1, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, "alice@example.org", "pw", kft, sess);
    const char *auths[] = {
        NULL,
        "Authorization: Hawk",
        "Authorization: Hawk id=\"\", ts=\"\", nonce=\"\", mac=\"\"",
        "Authorization: Hawk id=\"00\", ts=\"99999999999999999999\", nonce=\"x\", mac=\"x\"",
        "Authorization: Basic YTpi",
        "Authorization: Hawk id=\"a\\\"b\", ts=\"1\", nonce=\"n\", mac=\"m\"",
    };
    char body[4096];
    int answered = 0;
    for (int i = 0; i < 400; i++) {
        size_t r = rnd() % (sizeof routes / sizeof routes[0]);
        size_t n = mutate(body, sizeof body);
        const char *a = auths[rnd() % (sizeof auths / sizeof auths[0])];
        const char *h[] = {"Content-Type: application/json", a, NULL};
        tuks_resp resp;
        long st;
        if (a || rnd() % 2)
            st = tuks_request(srv.port, routes[r][0], routes[r][1], h, body, n, &resp);
        else /* properly signed, with a mutated body */
            st = tuks_hawk(srv.port, routes[r][0], routes[r][1], sess, PICL_TOKEN_SESSION,
                           !strcmp(routes[r][0], "POST") ? body : NULL, 0, NULL, NULL, &resp);
        ck_assert_msg(st >= 200 && st < 500, "%s %s with %s: status %ld", routes[r][0], routes[r][1], body,
                      st);
        if (st >= 400) {
            ck_assert_msg(json_is_integer(json_object_get(resp.json, "errno")), "no errno for %s",
                          routes[r][1]);
            ck_assert_int_eq(json_integer_value(json_object_get(resp.json, "code")), st);
        }
        answered++;
        tuks_resp_free(&resp);
    }
    ck_assert_int_eq(answered, 400);
    /* still serving, and the account untouched */
    tuks_resp resp;
    ck_assert_int_eq(tuks_request(srv.port, "GET", "/__heartbeat__", NULL, NULL, 0, &resp), 200);
    tuks_resp_free(&resp);
    uint8_t auth[32];
    tuks_auth_token(&srv, "alice@example.org", "pw", auth);
    tuks_stop(&srv);
    tu_nss_teardown();
}
END_TEST

START_TEST(odd_targets_and_methods)
{
    tu_nss_setup();
    tuks_start(&srv, NULL);
    const char *targets[] = {"/v1/auth/start?x=1",   "/v1//auth/start",   "/v1/auth/start/",
                             "/v1/auth/%73tart",     "/v1/auth/start%00", "/V1/AUTH/START",
                             "/v1/../v1/auth/start", "/__heartbeat__?a=b"};
    const char *h[] = {"Content-Type: application/json", NULL};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        tuks_resp r;
        long st = tuks_request(srv.port, "POST", targets[i], h, "{}", 2, &r);
        ck_assert_msg(st >= 400 && st < 500, "%s: %ld", targets[i], st);
        tuks_resp_free(&r);
    }
    const char *methods[] = {"PUT", "DELETE", "PATCH", "OPTIONS"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        tuks_resp r;
        long st = tuks_request(srv.port, methods[i], "/v1/auth/start", h, "{}", 2, &r);
        ck_assert_int_eq(st, 405);
        tuks_resp_free(&r);
    }
    tuks_stop(&srv);
    tu_nss_teardown();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_robust");
    TCase *tc = tcase_create("robust");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, random_bodies_and_headers);
    tcase_add_test(tc, odd_targets_and_methods);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
