/* SPDX-License-Identifier: MPL-2.0 */
/* test_tokens.c -- keyserver.md section 5: tokenID / reqHMACkey / requestKey
 * of every token type, against picl_srp_era.txt section A. */
#include "testutil.h"
#include "protocol/tokens.h"
#include "crypto/kdf.h"

#include <stdlib.h>
#include <string.h>

/* The vector file puts every value in one case, in file order, with some
 * labels repeated per section.  at(f, anchor, key) is the first pure-hex
 * value of `key` at or after the first `anchor` label. */
static const tu_case *only(const tu_vecfile *f)
{
    ck_assert_uint_ge(f->n, 1);
    return &f->cases[0];
}

static int is_hex(const char *s) { return *s && strspn(s, "0123456789abcdef") == strlen(s); }

static uint8_t *at(const tu_vecfile *f, const char *anchor, const char *key, size_t want)
{
    const tu_case *c = only(f);
    size_t j = 0;
    while (j < c->n && strcmp(c->kv[j].key, anchor))
        j++;
    ck_assert_msg(j < c->n, "anchor %s missing", anchor);
    for (; j < c->n; j++)
        if (!strcmp(c->kv[j].key, key) && is_hex(c->kv[j].value)) {
            size_t n;
            uint8_t *v = tu_unhex(c->kv[j].value, &n);
            ck_assert_uint_eq(n, want);
            return v;
        }
    ck_abort_msg("vector %s after %s missing", key, anchor);
    return NULL;
}

static void check_token(const tu_vecfile *f, picl_token_type type, const char *token_label,
                        const char *id_label, const char *hmac_label, const char *req_label)
{
    uint8_t *token = at(f, token_label, token_label, 32);
    uint8_t *id = at(f, id_label, id_label, 32);
    uint8_t *hk = at(f, id_label, hmac_label, 32);
    picl_token_keys k;
    char idhex[PICL_TOKEN_ID_HEX_BYTES + 1];

    memset(&k, 0xAA, sizeof k);
    ck_assert_int_eq(picl__token_derive(&k, type, token), PICL_OK);
    ck_assert_mem_eq(k.id, id, 32);
    ck_assert_mem_eq(k.hmac_key, hk, 32);
    if (req_label) {
        uint8_t *rk = at(f, id_label, req_label, 32);
        ck_assert_mem_eq(k.request_key, rk, 32);
        free(rk);
    }
    picl__token_id_hex(idhex, &k);
    ck_assert_uint_eq(strlen(idhex), 64);
    {
        size_t n;
        uint8_t *back = tu_unhex(idhex, &n);
        ck_assert_uint_eq(n, 32);
        ck_assert_mem_eq(back, id, 32);
        free(back);
    }
    ck_assert_str_eq(idhex, tu_hex(id, 32)); /* lowercase */
    picl__token_keys_wipe(&k);
    for (size_t i = 0; i < sizeof k; i++)
        ck_assert_int_eq(((uint8_t *)&k)[i], 0);
    free(token);
    free(id);
    free(hk);
}

START_TEST(test_auth_token)
{
    tu_vecfile *f = tu_vec_load("picl_srp_era.txt");
    check_token(f, PICL_TOKEN_AUTH, "authToken", "tokenID (authToken)", "reqHMACkey", "requestKey");
    tu_vec_free(f);
}
END_TEST

START_TEST(test_key_fetch_token)
{
    tu_vecfile *f = tu_vec_load("picl_srp_era.txt");
    check_token(f, PICL_TOKEN_KEY_FETCH, "keyFetchToken", "tokenID (keyFetchToken)", "reqHMACkey",
                "keyRequestKey");
    tu_vec_free(f);
}
END_TEST

START_TEST(test_session_token)
{
    tu_vecfile *f = tu_vec_load("picl_srp_era.txt");
    /* the vectors publish tokenID and reqHMACkey of the sessionToken only */
    check_token(f, PICL_TOKEN_SESSION, "sessionToken", "tokenID (sessionToken)", "reqHMACkey", NULL);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_account_reset_token)
{
    tu_vecfile *f = tu_vec_load("picl_srp_era.txt");
    check_token(f, PICL_TOKEN_ACCOUNT_RESET, "accountResetToken", "tokenID (accountResetToken)",
                "reqHMACkey (for HAWK)", "requestKey");
    tu_vec_free(f);
}
END_TEST

/*
 * forgotPasswordToken has no published vector.  These values were computed
 * independently with Python's hmac/hashlib (RFC 5869 written out by hand):
 *   prk = HMAC(b"\0"*32, bytes(range(0xe0, 0x100)))
 *   okm = T(1)||T(2)||T(3), T(i) = HMAC(prk, T(i-1) + info + bytes([i])),
 *   info = b"identity.mozilla.com/picl/v1/forgotPasswordToken"
 * (not a published vector: a check that the right name is hashed).
 */
START_TEST(test_forgot_password_token)
{
    uint8_t token[32];
    picl_token_keys k;
    for (int i = 0; i < 32; i++)
        token[i] = (uint8_t)(0xe0 + i);
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_FORGOT_PASSWORD, token), PICL_OK);
    tu_assert_hex(k.id, 32, "97637fbacbd8396c28c64c8a69e92ac8386334c765c824e7bca3f88aa3361dd7");
    tu_assert_hex(k.hmac_key, 32, "7ba0c89983bde95d3763f6475ef8e6239c5a4652468005abf016296ae4222800");
    tu_assert_hex(k.request_key, 32, "54ae8a4448d1699246605a0e25666123dfc7d1e4722a5c3faac732f777120ba1");
}
END_TEST

/* Every type hashes its own name: HKDF(token, KW(name), 96) computed the
 * long way equals the derivation, and no two types agree. */
START_TEST(test_types_distinct)
{
    uint8_t token[32];
    picl_token_keys k[PICL_TOKEN_TYPE_COUNT_];
    for (int i = 0; i < 32; i++)
        token[i] = (uint8_t)(7 * i + 3);
    for (int t = 0; t < PICL_TOKEN_TYPE_COUNT_; t++) {
        char info[128];
        uint8_t okm[96];
        const char *name = picl__token_type_name((picl_token_type)t);
        ck_assert_ptr_nonnull(name);
        snprintf(info, sizeof info, "identity.mozilla.com/picl/v1/%s", name);
        ck_assert_int_eq(picl__hkdf_sha256(okm, 96, token, 32, NULL, 0, info, strlen(info)), PICL_OK);
        ck_assert_int_eq(picl__token_derive(&k[t], (picl_token_type)t, token), PICL_OK);
        ck_assert_mem_eq(okm, k[t].id, 32);
        ck_assert_mem_eq(okm + 32, k[t].hmac_key, 32);
        ck_assert_mem_eq(okm + 64, k[t].request_key, 32);
        for (int u = 0; u < t; u++)
            ck_assert(memcmp(k[t].id, k[u].id, 32) != 0);
        picl_token_type back;
        ck_assert_int_eq(picl__token_type_from_name(&back, name, strlen(name)), PICL_OK);
        ck_assert_int_eq(back, t);
    }
    ck_assert_str_eq(picl__token_type_name(PICL_TOKEN_AUTH), "authToken");
    ck_assert_str_eq(picl__token_type_name(PICL_TOKEN_SESSION), "sessionToken");
    ck_assert_str_eq(picl__token_type_name(PICL_TOKEN_KEY_FETCH), "keyFetchToken");
    ck_assert_str_eq(picl__token_type_name(PICL_TOKEN_ACCOUNT_RESET), "accountResetToken");
    ck_assert_str_eq(picl__token_type_name(PICL_TOKEN_FORGOT_PASSWORD), "forgotPasswordToken");
}
END_TEST

START_TEST(test_bad_arguments)
{
    uint8_t token[32] = {1};
    picl_token_keys k;
    picl_token_type t = PICL_TOKEN_AUTH;

    memset(&k, 0xAA, sizeof k);
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_TYPE_COUNT_, token), PICL_ERROR_INVALID_ARGUMENT);
    for (size_t i = 0; i < sizeof k; i++)
        ck_assert_int_eq(((uint8_t *)&k)[i], 0); /* zeroed on failure */
    memset(&k, 0xAA, sizeof k);
    ck_assert_int_eq(picl__token_derive(&k, (picl_token_type)-1, token), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_AUTH, NULL), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__token_derive(NULL, PICL_TOKEN_AUTH, token), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(picl__token_type_name(PICL_TOKEN_TYPE_COUNT_));
    ck_assert_int_eq(picl__token_type_from_name(&t, "authtoken", 9), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__token_type_from_name(&t, "authToken", 8), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__token_type_from_name(&t, "authTokenX", 10), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(t, PICL_TOKEN_AUTH); /* untouched */
}
END_TEST

START_TEST(test_generate)
{
    uint8_t a[32], b[32];
    ck_assert_int_eq(picl__token_generate(a), PICL_OK);
    ck_assert_int_eq(picl__token_generate(b), PICL_OK);
    ck_assert(memcmp(a, b, 32) != 0);
    ck_assert_int_eq(picl__token_generate(NULL), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tokens");
    TCase *tc = tcase_create("tokens");
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_auth_token);
    tcase_add_test(tc, test_key_fetch_token);
    tcase_add_test(tc, test_session_token);
    tcase_add_test(tc, test_account_reset_token);
    tcase_add_test(tc, test_forgot_password_token);
    tcase_add_test(tc, test_types_distinct);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_generate);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
