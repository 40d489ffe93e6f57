/* SPDX-License-Identifier: MPL-2.0 */
/* test_codec.c -- strict hex / base64 / base64url codecs: round trips,
 * RFC 4648 section 10 vectors, and every malformed form rejected. */
#include "testutil.h"
#include "crypto/codec.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *in, *b64;
} rfc4648[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

START_TEST(test_base64_rfc4648)
{
    for (size_t i = 0; i < sizeof rfc4648 / sizeof rfc4648[0]; i++) {
        const char *in = rfc4648[i].in;
        char out[32];
        picl__base64_encode(out, (const uint8_t *)in, strlen(in));
        ck_assert_str_eq(out, rfc4648[i].b64);
        ck_assert_uint_eq(picl__base64_encoded_len(strlen(in)), strlen(rfc4648[i].b64));
        uint8_t dec[32];
        size_t n = 99;
        ck_assert_int_eq(picl__base64_decode(dec, sizeof dec, &n, out, strlen(out)), PICL_OK);
        ck_assert_uint_eq(n, strlen(in));
        ck_assert(memcmp(dec, in, n) == 0);
        /* url form without padding decodes to the same bytes */
        char url[32];
        picl__base64url_encode(url, (const uint8_t *)in, strlen(in), 0);
        ck_assert_uint_eq(strlen(url), picl__base64url_encoded_len(strlen(in), 0));
        ck_assert_int_eq(picl__base64url_decode(dec, sizeof dec, &n, url, strlen(url)), PICL_OK);
        ck_assert_uint_eq(n, strlen(in));
        ck_assert(memcmp(dec, in, n) == 0);
    }
}
END_TEST

START_TEST(test_base64_all_bytes_roundtrip)
{
    uint8_t in[256], dec[300];
    for (int i = 0; i < 256; i++)
        in[i] = (uint8_t)i;
    for (size_t len = 0; len <= 256; len += 1) {
        char *s = picl__base64_encode_alloc(in, len);
        char *u = picl__base64url_encode_alloc(in, len, 1);
        char *v = picl__base64url_encode_alloc(in, len, 0);
        ck_assert_ptr_nonnull(s);
        ck_assert_ptr_null(strpbrk(u, "+/"));
        size_t n;
        ck_assert_int_eq(picl__base64_decode(dec, sizeof dec, &n, s, strlen(s)), PICL_OK);
        ck_assert(n == len && memcmp(dec, in, len) == 0);
        ck_assert_int_eq(picl__base64url_decode(dec, sizeof dec, &n, u, strlen(u)), PICL_OK);
        ck_assert(n == len && memcmp(dec, in, len) == 0);
        ck_assert_int_eq(picl__base64url_decode(dec, sizeof dec, &n, v, strlen(v)), PICL_OK);
        ck_assert(n == len && memcmp(dec, in, len) == 0);
        free(s);
        free(u);
        free(v);
    }
}
END_TEST

START_TEST(test_base64_rejects_malformed)
{
    static const char *bad[] = {
        "Zg",               /* std requires padding */
        "Zg=",              /* partial padding */
        "Zg===",            /* too much padding */
        "Z===",             /* three pad characters */
        "Zh==",             /* non-zero pad bits */
        "Zm9=",             /* non-zero pad bits (2-byte group) */
        "Zm9v\n",           /* whitespace */
        " Zm9v",            /* whitespace */
        "Zm9v!A==",         /* bad character */
        "Zm-v",             /* url alphabet in std */
        "Zm_v",     "=Zm9", /* padding first */
        "Zm=v",             /* padding inside */
        "Z",                /* one char group */
        "Zm9vY",            /* 5 chars */
    };
    uint8_t out[16];
    size_t n;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(picl__base64_decode(out, sizeof out, &n, bad[i], strlen(bad[i])) == PICL_ERROR_ENCODING,
                      "accepted %s", bad[i]);
    static const char *badurl[] = {"Zg=",  "Zg===", "Zh",    "Zm9",   "Zm+v",
                                   "Zm/v", "Z",     "Zm9vY", "Zm9v ", "Zm=v"};
    for (size_t i = 0; i < sizeof badurl / sizeof badurl[0]; i++)
        ck_assert_msg(picl__base64url_decode(out, sizeof out, &n, badurl[i], strlen(badurl[i])) ==
                          PICL_ERROR_ENCODING,
                      "url accepted %s", badurl[i]);
    /* too small an output buffer is its own error */
    ck_assert_int_eq(picl__base64_decode(out, 2, &n, "Zm9v", 4), PICL_ERROR_TOO_LARGE);
    ck_assert_int_eq(picl__base64_decode(out, sizeof out, &n, NULL, 0), PICL_ERROR_ENCODING);
}
END_TEST

START_TEST(test_hex)
{
    uint8_t in[] = {0x00, 0x01, 0xab, 0xff, 0x7f};
    char s[11];
    picl__hex_encode(s, in, sizeof in);
    ck_assert_str_eq(s, "0001abff7f");
    uint8_t out[8];
    size_t n;
    ck_assert_int_eq(picl__hex_decode(out, sizeof out, &n, "0001ABff7f", 10), PICL_OK);
    ck_assert_uint_eq(n, 5);
    ck_assert(memcmp(out, in, 5) == 0);
    ck_assert_int_eq(picl__hex_decode(out, sizeof out, &n, "", 0), PICL_OK);
    ck_assert_uint_eq(n, 0);
    static const char *bad[] = {"0", "abc", "0g", "zz", " 00", "00 ", "0x00", "-1", "\n0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(picl__hex_decode(out, sizeof out, &n, bad[i], strlen(bad[i])) == PICL_ERROR_ENCODING,
                      "accepted %s", bad[i]);
    ck_assert_int_eq(picl__hex_decode(out, 1, &n, "0001", 4), PICL_ERROR_TOO_LARGE);
    ck_assert_int_eq(picl__hex_decode_exact(out, 2, "0001"), PICL_OK);
    ck_assert_int_eq(picl__hex_decode_exact(out, 2, "000102"), PICL_ERROR_ENCODING);
    ck_assert_int_eq(picl__hex_decode_exact(out, 2, "00"), PICL_ERROR_ENCODING);
    ck_assert_int_eq(picl__hex_decode_exact(out, 2, NULL), PICL_ERROR_ENCODING);
    uint8_t *a;
    ck_assert_int_eq(picl__hex_decode_alloc(&a, &n, "zz", 2), PICL_ERROR_ENCODING);
    ck_assert_ptr_null(a);
    ck_assert_int_eq(picl__hex_decode_alloc(&a, &n, "beef", 4), PICL_OK);
    ck_assert(n == 2 && a[0] == 0xbe && a[1] == 0xef);
    free(a);
    /* embedded NUL inside the counted length is not hex */
    ck_assert_int_eq(picl__hex_decode(out, sizeof out, &n,
                                      "00\0"
                                      "0",
                                      4),
                     PICL_ERROR_ENCODING);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("codec");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, test_base64_rfc4648);
    tcase_add_test(tc, test_base64_all_bytes_roundtrip);
    tcase_add_test(tc, test_base64_rejects_malformed);
    tcase_add_test(tc, test_hex);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
