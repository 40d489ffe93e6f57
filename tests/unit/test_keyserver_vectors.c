/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_vectors.c -- the keyserver reproduces the PiCL bundles of
 * picl_srp_era.txt section A byte for byte over HTTP (B, auth/finish,
 * session/create, account/keys, password/change, and accepts the
 * account/reset request bundle), with its random draws forced to the
 * vector's values through the test hook. */
#include "testutil.h"
#include "testutil_ks.h"

#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "protocol/bundle.h"
#include "protocol/tokens.h"

static tu_vecfile *vf;

static int is_hex(const char *s) { return *s && strspn(s, "0123456789abcdef") == strlen(s); }

/* The n-th (0-based) pure-hex value of key in file order. */
static const char *nth(const char *key, int n)
{
    const tu_case *c = &vf->cases[0];
    for (size_t j = 0; j < c->n; j++)
        if (!strcmp(c->kv[j].key, key) && is_hex(c->kv[j].value) && n-- == 0)
            return c->kv[j].value;
    ck_abort_msg("vector %s missing", key);
    return NULL;
}

static uint8_t *bytes(const char *key, int n, size_t want)
{
    size_t len;
    uint8_t *b = tu_unhex(nth(key, n), &len);
    ck_assert_uint_eq(len, want);
    return b;
}

/* Forced draws by name; everything else falls back to NSS. */
static struct {
    const char *what;
    const char *key;
    size_t len;
} forced[] = {
    {"kA", "kA", 32},
    {"wrapKb", "wrapkB", 32},
    {"b", "private b (hex)", 256},
    {"authToken", "authToken", 32},
    {"keyFetchToken", "keyFetchToken", 32},
    {"sessionToken", "sessionToken", 32},
    {"accountResetToken", "accountResetToken", 32},
};

static picl_status hook(void *ctx, const char *what, uint8_t *out, size_t len)
{
    for (size_t i = 0; i < sizeof forced / sizeof forced[0]; i++)
        if (!strcmp(what, forced[i].what) && len == forced[i].len) {
            uint8_t *v = bytes(forced[i].key, 0, len);
            memcpy(out, v, len);
            free(v);
            return PICL_OK;
        }
    return PICL_ERROR_NOT_FOUND;
}

static tuks_srv srv;

static void setup(void)
{
    tu_nss_setup();
    vf = tu_vec_load("picl_srp_era.txt");
    ks_config cfg = {.random = hook};
    tuks_start(&srv, &cfg);
}

static void teardown(void)
{
    tuks_stop(&srv);
    tu_vec_free(vf);
    tu_nss_teardown();
}

static long post(const char *path, const char *body, tuks_resp *r)
{
    const char *h[] = {"Content-Type: application/json", NULL};
    return tuks_request(srv.port, "POST", path, h, body, strlen(body), r);
}

static const char *bundle_of(tuks_resp *r)
{
    const char *b = json_string_value(json_object_get(r->json, "bundle"));
    ck_assert_ptr_nonnull(b);
    return b;
}

/* auth/start + auth/finish with the vector's A and M1: the bundle. */
static void login(char *bundle_out, size_t cap)
{
    tuks_resp r;
    char body[2048];
    snprintf(body, sizeof body, "{\"email\":\"%s\"}", nth("email", 0));
    ck_assert_int_eq(post("/v1/auth/start", body, &r), 200);
    json_t *srp = json_object_get(r.json, "srp");
    ck_assert_str_eq(json_string_value(json_object_get(srp, "B")), nth("transmitted srpB", 0));
    ck_assert_str_eq(json_string_value(json_object_get(srp, "salt")), nth("srpSalt (normally random)", 0));
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(r.json, "passwordStretching"), "salt")),
        nth("mainSalt (normally random)", 0));
    snprintf(body, sizeof body, "{\"srpToken\":\"%s\",\"A\":\"%s\",\"M\":\"%s\"}",
             json_string_value(json_object_get(r.json, "srpToken")), nth("transmitted srpA", 0),
             nth("M1", 0));
    tuks_resp_free(&r);
    ck_assert_int_eq(post("/v1/auth/finish", body, &r), 200);
    snprintf(bundle_out, cap, "%s", bundle_of(&r));
    tuks_resp_free(&r);
}

START_TEST(bundles_byte_for_byte)
{
    tuks_resp r;
    char body[4096], bundle[1024];
    snprintf(body, sizeof body,
             "{\"email\":\"%s\",\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\",\"verifier\":\"%s\","
             "\"salt\":\"%s\"},\"passwordStretching\":{\"type\":\"PBKDF2/scrypt/PBKDF2/v1\","
             "\"PBKDF2_rounds_1\":20000,\"scrypt_N\":65536,\"scrypt_r\":8,\"scrypt_p\":1,"
             "\"PBKDF2_rounds_2\":20000,\"salt\":\"%s\"}}",
             nth("email", 0), nth("srpVerifier", 0), nth("srpSalt (normally random)", 0),
             nth("mainSalt (normally random)", 0));
    ck_assert_int_eq(post("/v1/account/create", body, &r), 200);
    char uid[64];
    snprintf(uid, sizeof uid, "%s", json_string_value(json_object_get(r.json, "uid")));
    tuks_resp_free(&r);
    char code[128];
    ck_assert(tuks_take_mail(&srv, "andr\xc3\xa9@example.org", "X-Verify-Code", code, sizeof code));
    snprintf(body, sizeof body, "{\"uid\":\"%s\",\"code\":\"%s\"}", uid, code);
    ck_assert_int_eq(post("/v1/recovery_email/verify_code", body, &r), 200);
    tuks_resp_free(&r);

    /* /auth/finish: authToken under srpK */
    login(bundle, sizeof bundle);
    ck_assert_str_eq(bundle, nth("response", 0));

    /* /session/create: keyFetchToken || sessionToken under authToken's requestKey */
    uint8_t *auth = bytes("authToken", 0, 32);
    ck_assert_int_eq(
        tuks_hawk(srv.port, "POST", "/v1/session/create", auth, PICL_TOKEN_AUTH, "{}", 0, NULL, NULL, &r),
        200);
    ck_assert_str_eq(bundle_of(&r), nth("response", 1));
    tuks_resp_free(&r);

    /* /account/keys: kA || wrapKb under keyFetchToken's requestKey */
    uint8_t *kft = bytes("keyFetchToken", 0, 32);
    ck_assert_int_eq(
        tuks_hawk(srv.port, "GET", "/v1/account/keys", kft, PICL_TOKEN_KEY_FETCH, NULL, 0, NULL, NULL, &r),
        200);
    ck_assert_str_eq(bundle_of(&r), nth("response", 2));
    tuks_resp_free(&r);

    /* /password/change/start: keyFetchToken || accountResetToken */
    login(bundle, sizeof bundle);
    ck_assert_str_eq(bundle, nth("response", 0));
    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/password/change/start", auth, PICL_TOKEN_AUTH, "{}", 0,
                               NULL, NULL, &r),
                     200);
    ck_assert_str_eq(bundle_of(&r), nth("response", 3));
    tuks_resp_free(&r);

    /* /account/reset: the vector's request bundle is what our sealing makes,
     * and the server accepts it (wrapKb 40..5f kept, verifier 11..11) */
    uint8_t *art = bytes("accountResetToken", 0, 32);
    uint8_t *wrap = bytes("wrapkB", 0, 32), *nv = bytes("newSRPv", 0, 256);
    uint8_t payload[288];
    memcpy(payload, wrap, 32);
    memcpy(payload + 32, nv, 256);
    picl_token_keys k;
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_ACCOUNT_RESET, art), PICL_OK);
    char *sealed = NULL;
    ck_assert_int_eq(
        picl__bundle_seal_hex(&sealed, k.request_key, PICL_BUNDLE_ACCOUNT_RESET, payload, sizeof payload),
        PICL_OK);
    ck_assert_str_eq(sealed, nth("response", 4));
    snprintf(body, sizeof body,
             "{\"bundle\":\"%s\",\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\",\"salt\":\"%s\"},"
             "\"passwordStretching\":{\"type\":\"PBKDF2/scrypt/PBKDF2/v1\","
             "\"PBKDF2_rounds_1\":20000,\"scrypt_N\":65536,\"scrypt_r\":8,\"scrypt_p\":1,"
             "\"PBKDF2_rounds_2\":20000,\"salt\":\"%s\"}}",
             sealed, nth("srpSalt (normally random)", 0), nth("mainSalt (normally random)", 0));
    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/account/reset", art, PICL_TOKEN_ACCOUNT_RESET, body, 0,
                               NULL, NULL, &r),
                     200);
    tuks_resp_free(&r);
    /* every token of the account is revoked by the reset */
    ck_assert_int_eq(
        tuks_hawk(srv.port, "GET", "/v1/account/keys", kft, PICL_TOKEN_KEY_FETCH, NULL, 0, NULL, NULL, &r),
        401);
    tuks_resp_free(&r);
    uint8_t *sess = bytes("sessionToken", 0, 32);
    ck_assert_int_eq(tuks_hawk(srv.port, "GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL,
                               0, NULL, NULL, &r),
                     401);
    tuks_resp_free(&r);
    free(sealed);
    free(auth);
    free(kft);
    free(art);
    free(wrap);
    free(nv);
    free(sess);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_vectors");
    TCase *tc = tcase_create("picl_srp_era");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bundles_byte_for_byte);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
