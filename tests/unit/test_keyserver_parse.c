/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_parse.c -- the keyserver's request parsers (ks_parse.h):
 * good values, and every bad case mapped to its errno class with the
 * outputs zeroed. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "crypto/srp.h"
#include "crypto/util.h"
#include "keyserver/ks_parse.h"

static json_t *obj(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(j);
    return j;
}

START_TEST(body)
{
    json_t *j = NULL;
    ck_assert_int_eq(ks_parse_body(&j, (const uint8_t *)"{\"a\":1}", 7), PICL_OK);
    ck_assert(json_is_object(j));
    json_decref(j);
    const char *bad[] = {
        "", "[]", "1", "null", "\"s\"", "{", "{\"a\":1,\"a\":2}", "{} x", "{\"a\":\"\\u0000\"", "\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = (json_t *)1;
        ck_assert_int_eq(ks_parse_body(&j, (const uint8_t *)bad[i], strlen(bad[i])), PICL_ERROR_ENCODING);
        ck_assert_ptr_null(j);
    }
    ck_assert_int_eq(ks_parse_body(&j, NULL, 0), PICL_ERROR_ENCODING);
    char *big = malloc(KS_MAX_BODY + 2);
    memset(big, ' ', KS_MAX_BODY + 1);
    big[0] = '{';
    big[KS_MAX_BODY] = '}';
    ck_assert_int_eq(ks_parse_body(&j, (const uint8_t *)big, KS_MAX_BODY + 1), PICL_ERROR_ENCODING);
    ck_assert_int_eq(ks_parse_body(&j, (const uint8_t *)big, KS_MAX_BODY), PICL_ERROR_ENCODING);
    big[KS_MAX_BODY - 1] = '}';
    ck_assert_int_eq(ks_parse_body(&j, (const uint8_t *)big, KS_MAX_BODY), PICL_OK);
    json_decref(j);
    free(big);
}
END_TEST

START_TEST(hex_fields)
{
    uint8_t out[4];
    json_t *j = obj("{\"a\":\"00ff10AB\",\"b\":\"00ff10\",\"c\":\"00ff10abcd\",\"d\":\"00fg10ab\","
                    "\"e\":12,\"f\":null,\"g\":\"00ff 0ab\"}");
    ck_assert_int_eq(ks_parse_hex(j, "a", out, 4), PICL_OK);
    tu_assert_hex(out, 4, "00ff10ab");
    const char *bad[] = {"b", "c", "d", "e", "g"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(out, 0xee, sizeof out);
        ck_assert_int_eq(ks_parse_hex(j, bad[i], out, 4), PICL_ERROR_INVALID_ARGUMENT);
        ck_assert(picl__iszero_ct(out, 4));
    }
    ck_assert_int_eq(ks_parse_hex(j, "f", out, 4), PICL_ERROR_NOT_FOUND);
    ck_assert_int_eq(ks_parse_hex(j, "missing", out, 4), PICL_ERROR_NOT_FOUND);
    json_decref(j);
}
END_TEST

START_TEST(emails)
{
    char e[256];
    size_t n;
    json_t *j = obj("{\"ok\":\"616e6472c3a9406578616d706c652e6f7267\",\"lf\":\"610a62\","
                    "\"cr\":\"610d62\",\"nul\":\"610062\",\"del\":\"617f62\",\"empty\":\"\","
                    "\"odd\":\"616\",\"num\":5}");
    ck_assert_int_eq(ks_parse_email(j, "ok", e, &n), PICL_OK);
    ck_assert_uint_eq(n, 18);
    ck_assert_str_eq(e, "andr\xc3\xa9@example.org");
    const char *bad[] = {"lf", "cr", "nul", "del", "empty", "odd", "num"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(ks_parse_email(j, bad[i], e, &n), PICL_ERROR_INVALID_ARGUMENT);
        ck_assert_uint_eq(n, 0);
        ck_assert(picl__iszero_ct(e, sizeof e));
    }
    ck_assert_int_eq(ks_parse_email(j, "none", e, &n), PICL_ERROR_NOT_FOUND);
    json_decref(j);
    /* 255 bytes is the most */
    char text[600];
    memset(text, 0, sizeof text);
    snprintf(text, sizeof text, "{\"e\":\"");
    for (int i = 0; i < 256; i++)
        tu_append(text, sizeof text, "61");
    tu_append(text, sizeof text, "\"}");
    j = obj(text);
    ck_assert_int_eq(ks_parse_email(j, "e", e, &n), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(j);
    text[strlen(text) - 4] = 0;
    tu_append(text, sizeof text, "\"}");
    j = obj(text);
    ck_assert_int_eq(ks_parse_email(j, "e", e, &n), PICL_OK);
    ck_assert_uint_eq(n, 255);
    json_decref(j);
}
END_TEST

static picl_status stretch_of(const char *ps)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"passwordStretching\":%s}", ps);
    json_t *j = obj(text);
    picl_stretch_params p;
    uint8_t salt[32];
    memset(salt, 0xee, sizeof salt);
    picl_status rc = ks_parse_stretch(j, &p, salt);
    if (rc != PICL_OK)
        ck_assert(picl__iszero_ct(salt, 32));
    json_decref(j);
    return rc;
}

#define SALT "\"salt\":\"0000000000000000000000000000000000000000000000000000000000000001\""
#define PS(t, r1, n, r, p, r2)                                                                               \
    "{\"type\":\"" t "\",\"PBKDF2_rounds_1\":" r1 ",\"scrypt_N\":" n ",\"scrypt_r\":" r ",\"scrypt_p\":" p   \
    ",\"PBKDF2_rounds_2\":" r2 "," SALT "}"
#define T "PBKDF2/scrypt/PBKDF2/v1"

START_TEST(stretch_params)
{
    json_t *j = obj("{\"passwordStretching\":" PS(T, "20000", "65536", "8", "1", "20000") "}");
    picl_stretch_params p;
    uint8_t salt[32];
    ck_assert_int_eq(ks_parse_stretch(j, &p, salt), PICL_OK);
    ck_assert_uint_eq(p.pbkdf2_rounds_1, 20000);
    ck_assert_uint_eq(p.scrypt_n, 65536);
    ck_assert_uint_eq(p.scrypt_r, 8);
    ck_assert_uint_eq(p.scrypt_p, 1);
    ck_assert_uint_eq(p.pbkdf2_rounds_2, 20000);
    ck_assert_uint_eq(salt[31], 1);
    json_decref(j);
    ck_assert_int_eq(stretch_of(PS("PBKDF2/v0", "1", "2", "1", "1", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "0", "2", "1", "1", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "1", "3", "1", "1", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "1", "1", "1", "1", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "1", "33554432", "1", "1", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "1", "2", "33", "1", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "1", "2", "1", "17", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "1", "2", "1", "1", "-5")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "1.5", "2", "1", "1", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "\"1\"", "2", "1", "1", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of(PS(T, "100000001", "2", "1", "1", "1")), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of("{\"type\":\"" T "\"}"), PICL_ERROR_NOT_FOUND);
    ck_assert_int_eq(stretch_of("[]"), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(stretch_of("null"), PICL_ERROR_NOT_FOUND);
    ck_assert_int_eq(stretch_of("{\"type\":\"" T "\",\"PBKDF2_rounds_1\":1,\"scrypt_N\":2,"
                                "\"scrypt_r\":1,\"scrypt_p\":1,\"PBKDF2_rounds_2\":1,"
                                "\"salt\":\"00\"}"),
                     PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(srp_fields)
{
    const picl_srp_group *g = picl__srp_group_picl();
    uint8_t v[256], salt[32];
    memset(v, 0, sizeof v);
    ck_assert(!ks_srp_value_ok(v));
    v[255] = 1;
    ck_assert(ks_srp_value_ok(v));
    memcpy(v, g->N, 256);
    ck_assert(!ks_srp_value_ok(v));
    v[255]--;
    ck_assert(ks_srp_value_ok(v)); /* N - 1 */
    memset(v, 0xff, sizeof v);
    ck_assert(!ks_srp_value_ok(v));

    char text[1400], vhex[513];
    memset(vhex, '1', 512);
    vhex[512] = 0;
    snprintf(text, sizeof text,
             "{\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\",\"verifier\":\"%s\",\"salt\":\"%064d\"}}", vhex,
             3);
    json_t *j = obj(text);
    ck_assert_int_eq(ks_parse_srp(j, salt, v), PICL_OK);
    ck_assert_uint_eq(v[0], 0x11);
    ck_assert_uint_eq(salt[31], 3);
    ck_assert_int_eq(ks_parse_srp(j, salt, NULL), PICL_OK); /* reset: no verifier field needed */
    json_decref(j);
    memset(vhex, 'f', 512);
    snprintf(text, sizeof text,
             "{\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\",\"verifier\":\"%s\",\"salt\":\"%064d\"}}", vhex,
             3);
    j = obj(text);
    ck_assert_int_eq(ks_parse_srp(j, salt, v), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert(picl__iszero_ct(v, 256) && picl__iszero_ct(salt, 32));
    json_decref(j);
    j = obj("{\"srp\":{\"type\":\"SRP-6a/SHA1/1024/v1\",\"salt\":\"00\"}}");
    ck_assert_int_eq(ks_parse_srp(j, salt, NULL), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(j);
    j = obj("{\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\"}}");
    ck_assert_int_eq(ks_parse_srp(j, salt, NULL), PICL_ERROR_NOT_FOUND);
    json_decref(j);
    j = obj("{\"srp\":7}");
    ck_assert_int_eq(ks_parse_srp(j, salt, NULL), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(j);
    j = obj("{}");
    ck_assert_int_eq(ks_parse_srp(j, salt, NULL), PICL_ERROR_NOT_FOUND);
    json_decref(j);
}
END_TEST

START_TEST(codes_and_labels)
{
    char c[9], l[65];
    json_t *j = obj("{\"ok\":\"01234567\",\"short\":\"1234567\",\"long\":\"123456789\","
                    "\"alpha\":\"1234567a\",\"sign\":\"+1234567\",\"num\":12345678,"
                    "\"name\":\"my laptop\",\"ctl\":\"a\\tb\",\"utf\":\"caf\\u00e9\",\"e\":\"\"}");
    ck_assert_int_eq(ks_parse_digits8(j, "ok", c), PICL_OK);
    ck_assert_str_eq(c, "01234567");
    const char *bad[] = {"short", "long", "alpha", "sign", "num"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(ks_parse_digits8(j, bad[i], c), PICL_ERROR_INVALID_ARGUMENT);
        ck_assert_str_eq(c, "");
    }
    ck_assert_int_eq(ks_parse_digits8(j, "none", c), PICL_ERROR_NOT_FOUND);
    ck_assert_int_eq(ks_parse_label(j, "name", l), PICL_OK);
    ck_assert_str_eq(l, "my laptop");
    ck_assert_int_eq(ks_parse_label(j, "none", l), PICL_OK);
    ck_assert_str_eq(l, "");
    ck_assert_int_eq(ks_parse_label(j, "ctl", l), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(ks_parse_label(j, "utf", l), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(ks_parse_label(j, "e", l), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(ks_parse_label(j, "num", l), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_parse");
    TCase *tc = tcase_create("parse");
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, body);
    tcase_add_test(tc, hex_fields);
    tcase_add_test(tc, emails);
    tcase_add_test(tc, stretch_params);
    tcase_add_test(tc, srp_fields);
    tcase_add_test(tc, codes_and_labels);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
