/* SPDX-License-Identifier: MPL-2.0 */
/* test_hash.c -- SHA-256, HMAC-SHA256 (RFC 4231, Wycheproof), random bytes,
 * constant-time compare and wiping. */
#include "testutil.h"
#include "crypto/hash.h"
#include "crypto/util.h"

#include <stdlib.h>
#include <string.h>

START_TEST(test_sha256_known)
{
    /* FIPS 180-2 examples; also exercises the streaming path in odd chunks */
    uint8_t out[32];
    ck_assert_int_eq(picl__sha256(out, "abc", 3), PICL_OK);
    tu_assert_hex(out, 32, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    ck_assert_int_eq(picl__sha256(out, "", 0), PICL_OK);
    tu_assert_hex(out, 32, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    for (size_t chunk = 1; chunk <= 7; chunk++) {
        picl_sha256_ctx *ctx;
        ck_assert_int_eq(picl__sha256_init(&ctx), PICL_OK);
        for (size_t i = 0; i < strlen(m); i += chunk) {
            size_t n = strlen(m) - i < chunk ? strlen(m) - i : chunk;
            ck_assert_int_eq(picl__sha256_update(ctx, m + i, n), PICL_OK);
        }
        ck_assert_int_eq(picl__sha256_final(ctx, out), PICL_OK);
        tu_assert_hex(out, 32, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    }
}
END_TEST

START_TEST(test_hmac_rfc4231)
{
    tu_vecfile *f = tu_vec_load("hmac_sha256.txt");
    int n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tu_case *c = &f->cases[i];
        const char *k = tu_get(c, "key"), *d = tu_get(c, "data"), *mac = tu_get(c, "mac");
        if (!k || !d || !mac)
            continue;
        size_t kl, dl, ml;
        uint8_t *key = tu_unhex(k, &kl), *data = tu_unhex(d, &dl), *want = tu_unhex(mac, &ml);
        const char *tb = tu_get(c, "tag_bytes");
        size_t cmp = tb ? (size_t)strtoul(tb, NULL, 10) : 32;
        ck_assert_uint_eq(ml, cmp);
        uint8_t out[32];
        ck_assert_int_eq(picl__hmac_sha256(out, key, kl, data, dl), PICL_OK);
        ck_assert_msg(memcmp(out, want, cmp) == 0, "%s", c->name);
        /* streaming, one byte at a time */
        picl_hmac_ctx *ctx;
        ck_assert_int_eq(picl__hmac_sha256_init(&ctx, key, kl), PICL_OK);
        for (size_t j = 0; j < dl; j++)
            ck_assert_int_eq(picl__hmac_sha256_update(ctx, data + j, 1), PICL_OK);
        ck_assert_int_eq(picl__hmac_sha256_final(ctx, out), PICL_OK);
        ck_assert_msg(memcmp(out, want, cmp) == 0, "%s (streamed)", c->name);
        free(key);
        free(data);
        free(want);
        n++;
    }
    ck_assert_int_eq(n, 7);
    tu_vec_free(f);
}
END_TEST

/* One context, many MACs (picl__hmac_sha256_result): each MAC covers only
 * what was fed since the previous one, as a fresh one-shot HMAC does. */
START_TEST(test_hmac_result_restarts)
{
    uint8_t key[32], out[32], want[32], first[32];
    memset(key, 0x0b, sizeof key);
    const char *msgs[] = {"picl-record-v2\nbookmarks\nabc\nA:1", "",
                          "a third message, longer than one block of "
                          "SHA-256 so that the restart is seen over two blocks: 0123456789abcdef0123456789",
                          "picl-record-v2\nbookmarks\nabc\nA:1"};
    picl_hmac_ctx *ctx;
    ck_assert_int_eq(picl__hmac_sha256_init(&ctx, key, sizeof key), PICL_OK);
    for (size_t i = 0; i < 4; i++) {
        if (*msgs[i])
            ck_assert_int_eq(picl__hmac_sha256_update(ctx, msgs[i], strlen(msgs[i])), PICL_OK);
        ck_assert_int_eq(picl__hmac_sha256_result(ctx, out), PICL_OK);
        ck_assert_int_eq(picl__hmac_sha256(want, key, sizeof key, msgs[i], strlen(msgs[i])), PICL_OK);
        ck_assert_msg(memcmp(out, want, 32) == 0, "MAC %zu", i);
        if (i == 0)
            memcpy(first, out, 32);
    }
    ck_assert(memcmp(first, out, 32) == 0); /* the same message, the same MAC */
    picl__hmac_sha256_abort(ctx);
}
END_TEST

START_TEST(test_hmac_wycheproof)
{
    json_t *j = tu_json_load("wycheproof/hmac_sha256_test.json");
    size_t gi, ti, n = 0, valid = 0, invalid = 0;
    json_t *g, *t;
    json_array_foreach (json_object_get(j, "testGroups"), gi, g) {
        size_t tagbytes = (size_t)json_integer_value(json_object_get(g, "tagSize")) / 8;
        json_array_foreach (json_object_get(g, "tests"), ti, t) {
            size_t kl, ml, tl;
            uint8_t *key = tu_unhex(json_string_value(json_object_get(t, "key")), &kl);
            uint8_t *msg = tu_unhex(json_string_value(json_object_get(t, "msg")), &ml);
            uint8_t *tag = tu_unhex(json_string_value(json_object_get(t, "tag")), &tl);
            const char *result = json_string_value(json_object_get(t, "result"));
            uint8_t out[32];
            ck_assert_int_eq(picl__hmac_sha256(out, key, kl, msg, ml), PICL_OK);
            /* a verifier compares the full expected length in constant time */
            int match = tl == tagbytes && picl__memeq_ct(out, tag, tagbytes);
            if (!strcmp(result, "valid")) {
                ck_assert_msg(match, "tcId %lld", json_integer_value(json_object_get(t, "tcId")));
                valid++;
            } else {
                ck_assert_msg(!match, "invalid tcId %lld accepted",
                              json_integer_value(json_object_get(t, "tcId")));
                invalid++;
            }
            free(key);
            free(msg);
            free(tag);
            n++;
        }
    }
    ck_assert_uint_eq(n, (size_t)json_integer_value(json_object_get(j, "numberOfTests")));
    ck_assert_uint_gt(invalid, 0);
    ck_assert_uint_gt(valid, 0);
    json_decref(j);
}
END_TEST

START_TEST(test_hmac_empty_key_equals_zero_key)
{
    /* RFC 2104: keys shorter than the block are zero-padded */
    uint8_t a[32], b[32], zeros[64] = {0};
    ck_assert_int_eq(picl__hmac_sha256(a, "", 0, "msg", 3), PICL_OK);
    ck_assert_int_eq(picl__hmac_sha256(b, zeros, 64, "msg", 3), PICL_OK);
    ck_assert(memcmp(a, b, 32) == 0);
    /* value from Python: hmac.new(b"", b"msg", hashlib.sha256).hexdigest() */
    tu_assert_hex(a, 32, "5f576a8d68fe4fb7eb823227246353c0870c3b0e878997341db1226b4bd88d61");
}
END_TEST

START_TEST(test_random)
{
    uint8_t a[64], b[64], zero[64] = {0};
    ck_assert_int_eq(picl__random_bytes(a, sizeof a), PICL_OK);
    ck_assert_int_eq(picl__random_bytes(b, sizeof b), PICL_OK);
    ck_assert(memcmp(a, b, 64) != 0);
    ck_assert(memcmp(a, zero, 64) != 0);
    ck_assert_int_eq(picl__random_bytes(a, 0), PICL_OK);
}
END_TEST

START_TEST(test_ct_and_wipe)
{
    uint8_t a[33], b[33];
    memset(a, 0x5a, sizeof a);
    memcpy(b, a, sizeof b);
    ck_assert_int_eq(picl__memeq_ct(a, b, 33), 1);
    for (size_t i = 0; i < 33; i++) {
        b[i] ^= 0x80;
        ck_assert_int_eq(picl__memeq_ct(a, b, 33), 0);
        b[i] ^= 0x80;
    }
    ck_assert_int_eq(picl__memeq_ct(a, b, 0), 1);
    ck_assert_int_eq(picl__iszero_ct(a, 33), 0);
    picl__wipe(a, sizeof a);
    ck_assert_int_eq(picl__iszero_ct(a, 33), 1);
    uint8_t x[3] = {1, 2, 3}, y[3] = {3, 2, 1}, z[3];
    picl__xor(z, x, y, 3);
    ck_assert(z[0] == 2 && z[1] == 0 && z[2] == 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hash");
    TCase *tc = tcase_create("hash");
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_sha256_known);
    tcase_add_test(tc, test_hmac_rfc4231);
    tcase_add_test(tc, test_hmac_wycheproof);
    tcase_add_test(tc, test_hmac_result_restarts);
    tcase_add_test(tc, test_hmac_empty_key_equals_zero_key);
    tcase_add_test(tc, test_random);
    tcase_add_test(tc, test_ct_and_wipe);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
