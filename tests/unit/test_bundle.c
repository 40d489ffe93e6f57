/* SPDX-License-Identifier: MPL-2.0 */
/* test_bundle.c -- keyserver.md section 5 bundles: the five bundles of
 * picl_srp_era.txt section A byte for byte (and their key intermediates),
 * tampering, wrong key/context/length, hex transport and the caps. */
#include "testutil.h"
#include "protocol/bundle.h"
#include "protocol/tokens.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int is_hex(const char *s) { return *s && strspn(s, "0123456789abcdef") == strlen(s); }

/* Index of the nth (1-based) `label` in the file's single case. */
static size_t nth(const tu_case *c, const char *label, int n)
{
    for (size_t j = 0; j < c->n; j++)
        if (!strcmp(c->kv[j].key, label) && --n == 0)
            return j;
    ck_abort_msg("label %s missing", label);
    return 0;
}

/* The hex text of `key` nearest before (dir -1) or after (dir +1) index j. */
static const char *near_text(const tu_case *c, size_t j, int dir, const char *key)
{
    for (long i = (long)j; i >= 0 && (size_t)i < c->n; i += dir)
        if (!strcmp(c->kv[i].key, key) && is_hex(c->kv[i].value))
            return c->kv[i].value;
    ck_abort_msg("vector %s missing", key);
    return NULL;
}

static uint8_t *near(const tu_case *c, size_t j, int dir, const char *key, size_t *len)
{
    return tu_unhex(near_text(c, j, dir, key), len);
}

static void expect_fill(const uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(p[i], v);
}

/*
 * One published bundle.  The nth `anchor` label marks the section; the key
 * is the nearest key_label before it; the intermediates, plaintext and
 * response follow it.  Checks: the two derived keys, seal (binary and hex)
 * byte for byte, open, every single-bit flip of every byte, wrong key,
 * wrong context, wrong lengths, bad hex.
 */
static void check_bundle(const char *context, const char *anchor, int n, const char *key_label,
                         const char *hmac_label, const char *xor_label, size_t plen)
{
    tu_vecfile *f = tu_vec_load("picl_srp_era.txt");
    const tu_case *c = &f->cases[0];
    size_t j = nth(c, anchor, n), kl, hl, xl, pl, rl;
    uint8_t *key = near(c, j, -1, key_label, &kl);
    uint8_t *hk = near(c, j, +1, hmac_label, &hl);
    uint8_t *xk = near(c, j, +1, xor_label, &xl);
    uint8_t *plain = near(c, j, +1, "plaintext", &pl);
    const char *resp_hex = near_text(c, j, +1, "response");
    uint8_t *resp = tu_unhex(resp_hex, &rl);
    uint8_t hmac_key[32], xor_key[PICL_BUNDLE_MAX_PAYLOAD];
    uint8_t sealed[PICL_BUNDLE_MAX_PAYLOAD + 32], opened[PICL_BUNDLE_MAX_PAYLOAD + 1];
    uint8_t bad[PICL_BUNDLE_MAX_PAYLOAD + 64];
    char *hex = NULL, *hexbad;

    ck_assert_uint_eq(kl, 32);
    ck_assert_uint_eq(hl, 32);
    ck_assert_uint_eq(pl, plen);
    ck_assert_uint_eq(xl, plen);
    ck_assert_uint_eq(rl, plen + 32);
    ck_assert_uint_eq(picl__bundle_len(plen), rl);

    ck_assert_int_eq(picl__bundle_keys(hmac_key, xor_key, plen, key, context), PICL_OK);
    ck_assert_mem_eq(hmac_key, hk, 32);
    ck_assert_mem_eq(xor_key, xk, plen);

    ck_assert_int_eq(picl__bundle_seal(sealed, key, context, plain, plen), PICL_OK);
    ck_assert_mem_eq(sealed, resp, rl);
    ck_assert_int_eq(picl__bundle_seal_hex(&hex, key, context, plain, plen), PICL_OK);
    ck_assert_str_eq(hex, resp_hex);

    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open(opened, plen, key, context, resp, rl), PICL_OK);
    ck_assert_mem_eq(opened, plain, plen);
    ck_assert_int_eq(opened[plen], 0xAA); /* nothing written past outlen */
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open_hex(opened, plen, key, context, hex, strlen(hex)), PICL_OK);
    ck_assert_mem_eq(opened, plain, plen);

    /* upper-case hex is still hex */
    hexbad = strdup(hex);
    for (char *p = hexbad; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open_hex(opened, plen, key, context, hexbad, strlen(hexbad)), PICL_OK);
    ck_assert_mem_eq(opened, plain, plen);
    free(hexbad);

    /* every byte, MAC included, flipped (one bit each, all bits of byte 0) */
    for (size_t i = 0; i < rl; i++) {
        int bits = i == 0 ? 8 : 1;
        for (int b = 0; b < bits; b++) {
            memcpy(bad, resp, rl);
            bad[i] ^= (uint8_t)(1u << ((i + (size_t)b) % 8));
            memset(opened, 0xAA, sizeof opened);
            ck_assert_int_eq(picl__bundle_open(opened, plen, key, context, bad, rl), PICL_ERROR_DECRYPT);
            expect_fill(opened, plen, 0);
            ck_assert_int_eq(opened[plen], 0xAA);
        }
    }
    /* wrong key, wrong context */
    memcpy(bad, key, 32);
    bad[31] ^= 1;
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open(opened, plen, bad, context, resp, rl), PICL_ERROR_DECRYPT);
    expect_fill(opened, plen, 0);
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open(opened, plen, key, "auth/finiSH", resp, rl), PICL_ERROR_DECRYPT);
    expect_fill(opened, plen, 0);
    /* one byte short, one byte long, truncated MAC, expected length off by one */
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open(opened, plen, key, context, resp, rl - 1), PICL_ERROR_DECRYPT);
    expect_fill(opened, plen, 0);
    memcpy(bad, resp, rl);
    bad[rl] = 0;
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open(opened, plen, key, context, bad, rl + 1), PICL_ERROR_DECRYPT);
    expect_fill(opened, plen, 0);
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open(opened, plen - 1, key, context, resp, rl), PICL_ERROR_DECRYPT);
    expect_fill(opened, plen - 1, 0);
    ck_assert_int_eq(opened[plen - 1], 0xAA);
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open(opened, plen, key, context, NULL, rl), PICL_ERROR_DECRYPT);
    expect_fill(opened, plen, 0);
    /* hex: odd length, a non-hex character, one byte short */
    hexbad = strdup(hex);
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open_hex(opened, plen, key, context, hexbad, strlen(hexbad) - 1),
                     PICL_ERROR_DECRYPT);
    expect_fill(opened, plen, 0);
    hexbad[5] = 'g';
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open_hex(opened, plen, key, context, hexbad, strlen(hexbad)),
                     PICL_ERROR_DECRYPT);
    expect_fill(opened, plen, 0);
    memset(opened, 0xAA, sizeof opened);
    ck_assert_int_eq(picl__bundle_open_hex(opened, plen, key, context, hex, strlen(hex) - 2),
                     PICL_ERROR_DECRYPT);
    expect_fill(opened, plen, 0);
    hexbad[5] = ' ';
    ck_assert_int_eq(picl__bundle_open_hex(opened, plen, key, context, hexbad, strlen(hexbad)),
                     PICL_ERROR_DECRYPT);
    free(hexbad);

    free(hex);
    free(key);
    free(hk);
    free(xk);
    free(plain);
    free(resp);
    tu_vec_free(f);
}

START_TEST(test_auth_finish)
{
    check_bundle(PICL_BUNDLE_AUTH_FINISH, "respHMACkey", 1, "srpK", "respHMACkey", "respXORkey", 32);
}
END_TEST

START_TEST(test_session_create)
{
    check_bundle(PICL_BUNDLE_SESSION_CREATE, "respHMACkey", 2, "requestKey", "respHMACkey", "respXORkey", 64);
}
END_TEST

START_TEST(test_account_keys)
{
    check_bundle(PICL_BUNDLE_ACCOUNT_KEYS, "respHMACkey", 3, "keyRequestKey", "respHMACkey", "respXORkey",
                 64);
}
END_TEST

START_TEST(test_password_change)
{
    check_bundle(PICL_BUNDLE_PASSWORD_CHANGE, "respHMACkey", 4, "requestKey", "respHMACkey", "respXORkey",
                 64);
}
END_TEST

/* The request bundle of /account/reset: keyed by requestKey of the
 * accountResetToken (not its Hawk reqHMACkey). */
START_TEST(test_account_reset)
{
    check_bundle(PICL_BUNDLE_ACCOUNT_RESET, "reqHMACkey (for ciphertext)", 1, "requestKey",
                 "reqHMACkey (for ciphertext)", "reqXORkey", 288);
}
END_TEST

/* Token derivation feeding the bundle: requestKey of the published
 * keyFetchToken opens the published /account/keys response. */
START_TEST(test_chain_key_fetch)
{
    tu_vecfile *f = tu_vec_load("picl_srp_era.txt");
    const tu_case *c = &f->cases[0];
    size_t j = nth(c, "tokenID (keyFetchToken)", 1), tl, rl, pl;
    uint8_t *token = near(c, j, -1, "keyFetchToken", &tl);
    uint8_t *resp = near(c, j, +1, "response", &rl);
    uint8_t *plain = near(c, j, +1, "plaintext", &pl);
    picl_token_keys k;
    uint8_t out[64];
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_KEY_FETCH, token), PICL_OK);
    ck_assert_int_eq(picl__bundle_open(out, 64, k.request_key, PICL_BUNDLE_ACCOUNT_KEYS, resp, rl), PICL_OK);
    ck_assert_mem_eq(out, plain, 64);
    /* the Hawk key is not the bundle key */
    ck_assert_int_eq(picl__bundle_open(out, 64, k.hmac_key, PICL_BUNDLE_ACCOUNT_KEYS, resp, rl),
                     PICL_ERROR_DECRYPT);
    expect_fill(out, 64, 0);
    free(token);
    free(resp);
    free(plain);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_round_trip_lengths)
{
    uint8_t key[32], payload[PICL_BUNDLE_MAX_PAYLOAD], sealed[PICL_BUNDLE_MAX_PAYLOAD + 32];
    uint8_t out[PICL_BUNDLE_MAX_PAYLOAD];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i;
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 31 + 7);
    static const size_t lens[] = {1, 2, 31, 32, 33, 64, 288, 1000, PICL_BUNDLE_MAX_PAYLOAD};
    for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
        size_t n = lens[t];
        ck_assert_int_eq(picl__bundle_seal(sealed, key, "x/y", payload, n), PICL_OK);
        ck_assert_int_eq(picl__bundle_open(out, n, key, "x/y", sealed, n + 32), PICL_OK);
        ck_assert_mem_eq(out, payload, n);
        ck_assert(memcmp(sealed, payload, n) != 0); /* it did encrypt */
    }
}
END_TEST

START_TEST(test_caps_and_arguments)
{
    uint8_t key[32] = {0}, payload[PICL_BUNDLE_MAX_PAYLOAD + 1] = {0};
    uint8_t sealed[PICL_BUNDLE_MAX_PAYLOAD + 64], out[PICL_BUNDLE_MAX_PAYLOAD + 1];
    uint8_t hk[32], xk[PICL_BUNDLE_MAX_PAYLOAD + 1];
    char *hex = (char *)1;

    ck_assert_uint_eq(picl__bundle_max_payload(), PICL_BUNDLE_MAX_PAYLOAD);
    ck_assert_int_eq(picl__bundle_seal(sealed, key, "c", payload, PICL_BUNDLE_MAX_PAYLOAD + 1),
                     PICL_ERROR_TOO_LARGE);
    ck_assert_int_eq(picl__bundle_seal_hex(&hex, key, "c", payload, PICL_BUNDLE_MAX_PAYLOAD + 1),
                     PICL_ERROR_TOO_LARGE);
    ck_assert_ptr_null(hex);
    ck_assert_int_eq(picl__bundle_keys(hk, xk, PICL_BUNDLE_MAX_PAYLOAD + 1, key, "c"), PICL_ERROR_TOO_LARGE);
    ck_assert_int_eq(
        picl__bundle_open(out, PICL_BUNDLE_MAX_PAYLOAD + 1, key, "c", sealed, PICL_BUNDLE_MAX_PAYLOAD + 33),
        PICL_ERROR_TOO_LARGE);

    memset(sealed, 0xAA, sizeof sealed);
    ck_assert_int_eq(picl__bundle_seal(sealed, key, "", payload, 4), PICL_ERROR_INVALID_ARGUMENT);
    expect_fill(sealed, 36, 0);
    ck_assert_int_eq(picl__bundle_seal(sealed, key, NULL, payload, 4), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__bundle_seal(sealed, NULL, "c", payload, 4), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__bundle_seal(sealed, key, "c", NULL, 4), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__bundle_seal(sealed, key, "c", payload, 0), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__bundle_seal(NULL, key, "c", payload, 4), PICL_ERROR_INVALID_ARGUMENT);

    ck_assert_int_eq(picl__bundle_seal(sealed, key, "c", payload, 4), PICL_OK);
    memset(out, 0xAA, sizeof out);
    ck_assert_int_eq(picl__bundle_open(out, 4, key, "", sealed, 36), PICL_ERROR_INVALID_ARGUMENT);
    expect_fill(out, 4, 0);
    memset(out, 0xAA, sizeof out);
    ck_assert_int_eq(picl__bundle_open(out, 4, NULL, "c", sealed, 36), PICL_ERROR_INVALID_ARGUMENT);
    expect_fill(out, 4, 0);
    ck_assert_int_eq(picl__bundle_open(out, 0, key, "c", sealed, 32), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__bundle_open(NULL, 4, key, "c", sealed, 36), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__bundle_open_hex(out, 4, key, "c", NULL, 72), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(picl__bundle_keys(hk, xk, 0, key, "c"), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__bundle_keys(hk, xk, 4, key, ""), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bundle");
    TCase *tc = tcase_create("bundle");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_auth_finish);
    tcase_add_test(tc, test_session_create);
    tcase_add_test(tc, test_account_keys);
    tcase_add_test(tc, test_password_change);
    tcase_add_test(tc, test_account_reset);
    tcase_add_test(tc, test_chain_key_fetch);
    tcase_add_test(tc, test_round_trip_lengths);
    tcase_add_test(tc, test_caps_and_arguments);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
