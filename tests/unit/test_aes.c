/* SPDX-License-Identifier: MPL-2.0 */
/* test_aes.c -- AES-256 block, CBC (SP 800-38A), CBC-PKCS#7 and GCM against
 * the published vectors and every Wycheproof case. */
#include "testutil.h"
#include "crypto/aes.h"

#include <stdlib.h>
#include <string.h>

#define HEX(c, k, lenp) tu_unhex(tu_get((c), (k)) ? tu_get((c), (k)) : "", (lenp))

START_TEST(test_aes_file)
{
    tu_vecfile *f = tu_vec_load("aes256_cbc.txt");
    int n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tu_case *c = &f->cases[i];
        if (!tu_get(c, "key") || !tu_get(c, "ciphertext"))
            continue;
        size_t kl, pl, cl, il;
        uint8_t *key = HEX(c, "key", &kl), *pt = HEX(c, "plaintext", &pl), *ct = HEX(c, "ciphertext", &cl);
        ck_assert_uint_eq(kl, 32);
        ck_assert_uint_eq(pl, cl);
        uint8_t *out = malloc(pl);
        if (tu_get(c, "iv")) {
            uint8_t *iv = HEX(c, "iv", &il);
            ck_assert_int_eq(picl__aes256_cbc_raw(1, out, key, iv, pt, pl), PICL_OK);
            ck_assert_msg(memcmp(out, ct, cl) == 0, "%s", c->name);
            ck_assert_int_eq(picl__aes256_cbc_raw(0, out, key, iv, ct, cl), PICL_OK);
            ck_assert_msg(memcmp(out, pt, pl) == 0, "%s decrypt", c->name);
            free(iv);
        } else {
            ck_assert_int_eq(picl__aes256_ecb_encrypt(out, key, pt, pl), PICL_OK);
            ck_assert_msg(memcmp(out, ct, cl) == 0, "%s", c->name);
        }
        free(out);
        free(key);
        free(pt);
        free(ct);
        n++;
    }
    ck_assert_int_ge(n, 3);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_gcm_file)
{
    tu_vecfile *f = tu_vec_load("aes256_gcm.txt");
    int n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tu_case *c = &f->cases[i];
        if (!tu_get(c, "tag"))
            continue;
        size_t kl, il, al, pl, cl, tl;
        uint8_t *key = HEX(c, "key", &kl), *iv = HEX(c, "iv", &il), *aad = HEX(c, "aad", &al);
        uint8_t *pt = HEX(c, "plaintext", &pl), *ct = HEX(c, "ciphertext", &cl), *tag = HEX(c, "tag", &tl);
        uint8_t *out = malloc(pl + tl + 1), *back = malloc(pl + 1);
        ck_assert_int_eq(picl__aes256_gcm_encrypt(out, key, iv, il, aad, al, pt, pl, tl), PICL_OK);
        ck_assert_msg(memcmp(out, ct, cl) == 0 && memcmp(out + cl, tag, tl) == 0, "%s", c->name);
        ck_assert_int_eq(picl__aes256_gcm_decrypt(back, key, iv, il, aad, al, out, pl + tl, tl), PICL_OK);
        ck_assert(memcmp(back, pt, pl) == 0);
        out[pl + tl - 1] ^= 1; /* tag bit flipped */
        ck_assert_int_eq(picl__aes256_gcm_decrypt(back, key, iv, il, aad, al, out, pl + tl, tl),
                         PICL_ERROR_DECRYPT);
        free(key);
        free(iv);
        free(aad);
        free(pt);
        free(ct);
        free(tag);
        free(out);
        free(back);
        n++;
    }
    ck_assert_int_eq(n, 6);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_cbc_wycheproof)
{
    json_t *j = tu_json_load("wycheproof/aes_cbc_pkcs5_test.json");
    size_t gi, ti, n = 0, invalid = 0;
    json_t *g, *t;
    json_array_foreach (json_object_get(j, "testGroups"), gi, g) {
        json_array_foreach (json_object_get(g, "tests"), ti, t) {
            size_t kl, il, ml, cl, ol;
            uint8_t *key = tu_unhex(json_string_value(json_object_get(t, "key")), &kl);
            uint8_t *iv = tu_unhex(json_string_value(json_object_get(t, "iv")), &il);
            uint8_t *msg = tu_unhex(json_string_value(json_object_get(t, "msg")), &ml);
            uint8_t *ct = tu_unhex(json_string_value(json_object_get(t, "ct")), &cl);
            long long id = json_integer_value(json_object_get(t, "tcId"));
            const char *result = json_string_value(json_object_get(t, "result"));
            ck_assert_uint_eq(il, 16);
            uint8_t *out = malloc(cl + ml + 32);
            if (!strcmp(result, "valid")) {
                ck_assert_int_eq(picl__aes_cbc_encrypt_k(out, &ol, key, kl, iv, msg, ml), PICL_OK);
                ck_assert_msg(ol == cl && memcmp(out, ct, cl) == 0, "tcId %lld", id);
                ck_assert_int_eq(picl__aes_cbc_decrypt_k(out, &ol, key, kl, iv, ct, cl), PICL_OK);
                ck_assert_msg(ol == ml && memcmp(out, msg, ml) == 0, "tcId %lld decrypt", id);
            } else {
                ck_assert_msg(picl__aes_cbc_decrypt_k(out, &ol, key, kl, iv, ct, cl) == PICL_ERROR_DECRYPT,
                              "invalid tcId %lld accepted", id);
                ck_assert_uint_eq(ol, 0);
                invalid++;
            }
            free(out);
            free(key);
            free(iv);
            free(msg);
            free(ct);
            n++;
        }
    }
    ck_assert_uint_eq(n, (size_t)json_integer_value(json_object_get(j, "numberOfTests")));
    ck_assert_uint_gt(invalid, 0);
    json_decref(j);
}
END_TEST

START_TEST(test_gcm_wycheproof)
{
    json_t *j = tu_json_load("wycheproof/aes_gcm_test.json");
    size_t gi, ti, n = 0, valid = 0, invalid = 0, unsupported = 0;
    json_t *g, *t;
    json_array_foreach (json_object_get(j, "testGroups"), gi, g) {
        size_t taglen = (size_t)json_integer_value(json_object_get(g, "tagSize")) / 8;
        json_array_foreach (json_object_get(g, "tests"), ti, t) {
            size_t kl, il, al, ml, cl, tl;
            uint8_t *key = tu_unhex(json_string_value(json_object_get(t, "key")), &kl);
            uint8_t *iv = tu_unhex(json_string_value(json_object_get(t, "iv")), &il);
            uint8_t *aad = tu_unhex(json_string_value(json_object_get(t, "aad")), &al);
            uint8_t *msg = tu_unhex(json_string_value(json_object_get(t, "msg")), &ml);
            uint8_t *ct = tu_unhex(json_string_value(json_object_get(t, "ct")), &cl);
            uint8_t *tag = tu_unhex(json_string_value(json_object_get(t, "tag")), &tl);
            long long id = json_integer_value(json_object_get(t, "tcId"));
            const char *result = json_string_value(json_object_get(t, "result"));
            uint8_t *in = malloc(cl + tl + 1), *out = malloc(cl + tl + 1);
            memcpy(in, ct, cl);
            memcpy(in + cl, tag, tl);
            picl_status st = picl__aes_gcm_decrypt_k(out, key, kl, iv, il, aad, al, in, cl + tl, taglen);
            if (il == 0) {
                /* a zero-length IV is always refused */
                ck_assert_msg(st == PICL_ERROR_INVALID_ARGUMENT, "tcId %lld: empty IV accepted", id);
                ck_assert_int_eq(picl__aes_gcm_encrypt_k(out, key, kl, iv, il, aad, al, msg, ml, taglen),
                                 PICL_ERROR_INVALID_ARGUMENT);
                unsupported++;
            } else if (!strcmp(result, "valid") || !strcmp(result, "acceptable")) {
                ck_assert_msg(st == PICL_OK, "tcId %lld: %d", id, st);
                ck_assert_msg(memcmp(out, msg, ml) == 0, "tcId %lld", id);
                ck_assert_int_eq(picl__aes_gcm_encrypt_k(out, key, kl, iv, il, aad, al, msg, ml, taglen),
                                 PICL_OK);
                ck_assert_msg(memcmp(out, in, cl + tl) == 0, "tcId %lld encrypt", id);
                valid++;
            } else {
                ck_assert_msg(st == PICL_ERROR_DECRYPT, "invalid tcId %lld: %d", id, st);
                invalid++;
            }
            free(in);
            free(out);
            free(key);
            free(iv);
            free(aad);
            free(msg);
            free(ct);
            free(tag);
            n++;
        }
    }
    ck_assert_uint_eq(n, (size_t)json_integer_value(json_object_get(j, "numberOfTests")));
    ck_assert_uint_gt(invalid, 0);
    ck_assert_uint_gt(valid, 0);
    ck_assert_uint_gt(unsupported, 0);
    json_decref(j);
}
END_TEST

START_TEST(test_cbc_bad_lengths)
{
    uint8_t key[32] = {0}, iv[16] = {0}, buf[64] = {0}, out[64];
    size_t n = 99;
    memset(out, 0xaa, sizeof out);
    ck_assert_int_eq(picl__aes256_cbc_decrypt(out, &n, key, iv, buf, 0), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(picl__aes256_cbc_decrypt(out, &n, key, iv, buf, 15), PICL_ERROR_DECRYPT);
    ck_assert_uint_eq(n, 0);
    for (int i = 0; i < 15; i++)
        ck_assert_int_eq(out[i], 0); /* output zeroed */
    ck_assert_int_eq(picl__aes256_cbc_raw(1, out, key, iv, buf, 17), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__aes_cbc_encrypt_k(out, &n, key, 20, iv, buf, 16), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__aes256_gcm_encrypt(out, key, iv, 12, NULL, 0, buf, 16, 8),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__aes256_gcm_decrypt(out, key, iv, 12, NULL, 0, buf, 10, 16), PICL_ERROR_DECRYPT);
}
END_TEST

/* A key imported once (picl__aes_key_*): the same bytes as the one-shot
 * functions, several messages in a row, and a padding failure in the middle
 * refused with the output zeroed without spoiling the next message. */
START_TEST(test_cbc_key_reused)
{
    uint8_t key[32], iv[16], pt[48], ct[64], ct1[64], back[64], raw[16];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(i * 7 + 1);
    memset(iv, 0x42, sizeof iv);
    for (int i = 0; i < 48; i++)
        pt[i] = (uint8_t)i;
    picl_aes_key *k = NULL;
    ck_assert_int_eq(picl__aes_key_new(&k, key), PICL_OK);
    for (size_t len = 0; len <= 48; len += 17) {
        size_t n = 0, n1 = 0, nb = 0;
        ck_assert_int_eq(picl__aes_key_cbc_encrypt(k, ct, &n, iv, pt, len), PICL_OK);
        ck_assert_int_eq(picl__aes256_cbc_encrypt(ct1, &n1, key, iv, pt, len), PICL_OK);
        ck_assert_uint_eq(n, picl__aes256_cbc_pad_len(len));
        ck_assert_uint_eq(n, n1);
        ck_assert(memcmp(ct, ct1, n) == 0);
        ck_assert_int_eq(picl__aes_key_cbc_decrypt(k, back, &nb, iv, ct, n), PICL_OK);
        ck_assert_uint_eq(nb, len);
        ck_assert(len == 0 || memcmp(back, pt, len) == 0);
    }
    /* a block whose last plaintext byte is 0: never valid PKCS#7 */
    uint8_t zero_end[16];
    memset(zero_end, 0x10, sizeof zero_end);
    zero_end[15] = 0;
    ck_assert_int_eq(picl__aes256_cbc_raw(1, raw, key, iv, zero_end, 16), PICL_OK);
    size_t n = 99;
    memset(back, 0xaa, sizeof back);
    ck_assert_int_eq(picl__aes_key_cbc_decrypt(k, back, &n, iv, raw, 16), PICL_ERROR_DECRYPT);
    ck_assert_uint_eq(n, 0);
    for (int i = 0; i < 16; i++)
        ck_assert_int_eq(back[i], 0);
    ck_assert_int_eq(picl__aes_key_cbc_decrypt(k, back, &n, iv, raw, 15), PICL_ERROR_DECRYPT);
    /* and the key still works */
    ck_assert_int_eq(picl__aes_key_cbc_encrypt(k, ct, &n, iv, pt, 5), PICL_OK);
    ck_assert_int_eq(picl__aes_key_cbc_decrypt(k, back, &n, iv, ct, 16), PICL_OK);
    ck_assert_uint_eq(n, 5);
    ck_assert(memcmp(back, pt, 5) == 0);
    picl__aes_key_free(k);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("aes");
    TCase *tc = tcase_create("aes");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_aes_file);
    tcase_add_test(tc, test_cbc_key_reused);
    tcase_add_test(tc, test_gcm_file);
    tcase_add_test(tc, test_cbc_wycheproof);
    tcase_add_test(tc, test_gcm_wycheproof);
    tcase_add_test(tc, test_cbc_bad_lengths);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
