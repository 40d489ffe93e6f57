/* SPDX-License-Identifier: MPL-2.0 */
/* test_wire_formats.c -- the one parser and formatter of each small wire
 * format of components/protocol/: SyncStorage timestamps (synctime.h), Host
 * headers and HOST:PORT listen addresses (hostport.h), exact values in and
 * out, every malformed shape refused with nothing written. */
#include "testutil.h"
#include "protocol/hostport.h"
#include "protocol/ks_errno.h"
#include "protocol/synctime.h"

#include <jansson.h>
#include <string.h>

START_TEST(test_synctime_parse)
{
    struct {
        const char *in;
        int ok;
        int64_t want;
    } v[] = {{"0", 1, 0},
             {"12", 1, 1200},
             {"12.3", 1, 1230},
             {"12.34", 1, 1234},
             {"12.349", 1, 1234}, /* cut, not rounded */
             {"0.07", 1, 7},
             {"007.50", 1, 750},
             {"1700000000.25", 1, 170000000025},
             {"999999999999.99", 1, 99999999999999},
             {"1.00000000000000000001", 1, 100}, /* 20 decimals */
             {"1.000000000000000000001", 0, 0},  /* 21 */
             {"1234567890123", 0, 0},            /* 13 integer digits */
             {"", 0, 0},
             {"-1", 0, 0},
             {"+1", 0, 0},
             {"1.", 0, 0},
             {".5", 0, 0},
             {"1e3", 0, 0},
             {"1 ", 0, 0},
             {" 1", 0, 0},
             {"0x10", 0, 0},
             {"1.2.3", 0, 0},
             {"1,5", 0, 0}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        int64_t c = -42;
        picl_status st = picl__synctime_parse(v[i].in, strlen(v[i].in), &c);
        ck_assert_msg(st == (v[i].ok ? PICL_OK : PICL_ERROR_ENCODING), "'%s': %d", v[i].in, st);
        ck_assert_msg(c == (v[i].ok ? v[i].want : -42), "'%s' -> %lld", v[i].in, (long long)c);
    }
    /* counted text: the length decides, an embedded NUL is not a digit */
    int64_t c = -42;
    ck_assert_int_eq(picl__synctime_parse("12.34xyz", 5, &c), PICL_OK);
    ck_assert_int_eq(c, 1234);
    ck_assert_int_eq(picl__synctime_parse("12\0"
                                          "3",
                                          4, &c),
                     PICL_ERROR_ENCODING);
    ck_assert_int_eq(c, 1234);
    ck_assert_int_eq(picl__synctime_parse(NULL, 0, &c), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__synctime_parse("1", 1, NULL), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_synctime_format)
{
    char out[PICL_SYNCTIME_BUF];
    struct {
        int64_t in;
        const char *want;
    } v[] = {{0, "0.00"},
             {7, "0.07"},
             {750, "7.50"},
             {12345, "123.45"},
             {-1, "0.00"},
             {170000000025, "1700000000.25"},
             {INT64_MAX, "92233720368547758.07"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        memset(out, 'x', sizeof out);
        picl__synctime_format(out, v[i].in);
        ck_assert_str_eq(out, v[i].want);
    }
    /* what the formatter writes, the parser reads back exactly */
    int64_t back = -1;
    picl__synctime_format(out, 99999999999999);
    ck_assert_str_eq(out, "999999999999.99");
    ck_assert_int_eq(picl__synctime_parse(out, strlen(out), &back), PICL_OK);
    ck_assert_int_eq(back, 99999999999999);
}
END_TEST

START_TEST(test_synctime_from_json)
{
    json_t *v = json_real(1700000000.255);
    ck_assert_int_eq(picl__synctime_from_json(v, -1), 170000000026); /* nearest */
    json_decref(v);
    v = json_integer(12);
    ck_assert_int_eq(picl__synctime_from_json(v, -1), 1200);
    json_decref(v);
    v = json_real(-0.5);
    ck_assert_int_eq(picl__synctime_from_json(v, -1), -1);
    json_decref(v);
    v = json_real(1e12);
    ck_assert_int_eq(picl__synctime_from_json(v, -7), -7);
    json_decref(v);
    v = json_string("12.5");
    ck_assert_int_eq(picl__synctime_from_json(v, 0), 0);
    json_decref(v);
    ck_assert_int_eq(picl__synctime_from_json(NULL, 3), 3);
    ck_assert_int_eq(picl__synctime_from_seconds(12.345, -1), 1235);
    ck_assert_int_eq(picl__synctime_from_seconds(0, -1), 0);
    ck_assert_int_eq(picl__synctime_from_seconds(-0.01, -1), -1);
    ck_assert_int_eq(picl__synctime_from_seconds(0.0 / 0.0, -1), -1); /* NaN */
}
END_TEST

/* in -> host / name / port, or refused (host NULL); default port 80 */
static const struct {
    const char *in;
    const char *host, *name;
    unsigned port;
    int has_port;
} HOSTS[] = {
    {"example.org", "example.org", "example.org", 80, 0},
    {"Example.ORG:8080", "Example.ORG", "Example.ORG", 8080, 1},
    {"127.0.0.1:8000", "127.0.0.1", "127.0.0.1", 8000, 1},
    {"[::1]:443", "[::1]", "::1", 443, 1},
    {"[::1]", "[::1]", "::1", 80, 0},
    {"[2001:db8::7]:0", "[2001:db8::7]", "2001:db8::7", 0, 1},
    {"h:65535", "h", "h", 65535, 1},
    {"h:00080", "h", "h", 80, 1},
    {"a-b_c~d.e:1", "a-b_c~d.e", "a-b_c~d.e", 1, 1},
    {"caf%C3%A9.example", "caf%C3%A9.example", "caf%C3%A9.example", 80, 0},
    {"", NULL, NULL, 0, 0},
    {":80", NULL, NULL, 0, 0},
    {"h:", NULL, NULL, 0, 0},
    {"h:65536", NULL, NULL, 0, 0},
    {"h:123456", NULL, NULL, 0, 0},
    {"h:8o", NULL, NULL, 0, 0},
    {"h:-1", NULL, NULL, 0, 0},
    {"h:+1", NULL, NULL, 0, 0},
    {"h: 80", NULL, NULL, 0, 0},
    {"[::1", NULL, NULL, 0, 0},
    {"[::1]x", NULL, NULL, 0, 0},
    {"[::1]:", NULL, NULL, 0, 0},
    {"[]", NULL, NULL, 0, 0},
    {"[::1%eth0]", NULL, NULL, 0, 0}, /* zone ids are not in a Host header */
    {"[v1.x]", NULL, NULL, 0, 0},     /* IPvFuture */
    {"[127.0.0.1]", NULL, NULL, 0, 0},
    {"::1", NULL, NULL, 0, 0}, /* IPv6 without brackets */
    {"a:b:c", NULL, NULL, 0, 0},
    {"a:b:80", NULL, NULL, 0, 0}, /* the old strrchr copies took host "a:b" */
    {"user@h", NULL, NULL, 0, 0},
    {"h/x", NULL, NULL, 0, 0},
    {"h h", NULL, NULL, 0, 0},
    {"h\r\nX-Evil: 1", NULL, NULL, 0, 0},
    {"h\t", NULL, NULL, 0, 0},
    {"bad%zz", NULL, NULL, 0, 0},
    {"bad%4", NULL, NULL, 0, 0},
};

START_TEST(test_hostport_parse)
{
    for (size_t i = 0; i < sizeof HOSTS / sizeof HOSTS[0]; i++) {
        picl_hostport hp;
        memset(&hp, 'x', sizeof hp);
        picl_status st = picl__hostport_parse(HOSTS[i].in, strlen(HOSTS[i].in), 80, 0, &hp);
        if (!HOSTS[i].host) {
            static const picl_hostport zero;
            ck_assert_msg(st == PICL_ERROR_ENCODING, "accepted '%s'", HOSTS[i].in);
            ck_assert_msg(!memcmp(&hp, &zero, sizeof hp), "'%s' left output", HOSTS[i].in);
            continue;
        }
        ck_assert_msg(st == PICL_OK, "refused '%s'", HOSTS[i].in);
        ck_assert_str_eq(hp.host, HOSTS[i].host);
        ck_assert_str_eq(hp.name, HOSTS[i].name);
        ck_assert_uint_eq(hp.port, HOSTS[i].port);
        ck_assert_int_eq(hp.has_port, HOSTS[i].has_port);
        ck_assert_int_eq(hp.ipv6, HOSTS[i].host[0] == '[');
    }
}
END_TEST

START_TEST(test_hostport_limits)
{
    picl_hostport hp;
    /* a listen address must name its port */
    ck_assert_int_eq(picl__hostport_parse("127.0.0.1", 9, 0, 1, &hp), PICL_ERROR_ENCODING);
    ck_assert_int_eq(picl__hostport_parse("127.0.0.1:0", 11, 0, 1, &hp), PICL_OK);
    ck_assert_uint_eq(hp.port, 0);
    ck_assert_int_eq(picl__hostport_parse("[::]:8000", 9, 0, 1, &hp), PICL_OK);
    ck_assert_str_eq(hp.name, "::");
    ck_assert_uint_eq(hp.port, 8000);
    /* 255 characters of host pass, 256 do not */
    char big[300];
    memset(big, 'a', 255);
    memcpy(big + 255, ":1", 3);
    ck_assert_int_eq(picl__hostport_parse(big, strlen(big), 80, 0, &hp), PICL_OK);
    ck_assert_uint_eq(strlen(hp.host), 255);
    memset(big, 'a', 256);
    memcpy(big + 256, ":1", 3);
    ck_assert_int_eq(picl__hostport_parse(big, strlen(big), 80, 0, &hp), PICL_ERROR_ENCODING);
    /* counted text: a NUL inside the length is refused */
    ck_assert_int_eq(picl__hostport_parse("h\0:80", 5, 80, 0, &hp), PICL_ERROR_ENCODING);
    ck_assert_int_eq(picl__hostport_parse("h:80junk", 4, 80, 0, &hp), PICL_OK);
    ck_assert_uint_eq(hp.port, 80);
    ck_assert_int_eq(picl__hostport_parse(NULL, 0, 80, 0, &hp), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_hostport_format)
{
    char out[64];
    ck_assert_int_eq(picl__hostport_format(out, sizeof out, "127.0.0.1", 8000), PICL_OK);
    ck_assert_str_eq(out, "127.0.0.1:8000");
    ck_assert_int_eq(picl__hostport_format(out, sizeof out, "::1", 443), PICL_OK);
    ck_assert_str_eq(out, "[::1]:443");
    ck_assert_int_eq(picl__hostport_format(out, sizeof out, "[::1]", 443), PICL_OK);
    ck_assert_str_eq(out, "[::1]:443");
    ck_assert_int_eq(picl__hostport_format(out, 14, "127.0.0.1", 8000), PICL_ERROR_TOO_LARGE);
    ck_assert_str_eq(out, "");
    /* formatted, parsed back to the same host and port */
    picl_hostport hp;
    ck_assert_int_eq(picl__hostport_format(out, sizeof out, "2001:db8::1", 65535), PICL_OK);
    ck_assert_int_eq(picl__hostport_parse(out, strlen(out), 0, 1, &hp), PICL_OK);
    ck_assert_str_eq(hp.name, "2001:db8::1");
    ck_assert_uint_eq(hp.port, 65535);
}
END_TEST

START_TEST(test_ks_errno_values)
{
    /* the numbers on the wire (keyserver.md section 7): both sides read
     * these names from one header, so they cannot drift apart again */
    ck_assert_int_eq(KS_ERR_EXISTS, 101);
    ck_assert_int_eq(KS_ERR_UNKNOWN, 102);
    ck_assert_int_eq(KS_ERR_PASSWORD, 103);
    ck_assert_int_eq(KS_ERR_UNVERIFIED, 104);
    ck_assert_int_eq(KS_ERR_CODE, 105);
    ck_assert_int_eq(KS_ERR_JSON, 106);
    ck_assert_int_eq(KS_ERR_PARAM, 107);
    ck_assert_int_eq(KS_ERR_MISSING, 108);
    ck_assert_int_eq(KS_ERR_SIGNATURE, 109);
    ck_assert_int_eq(KS_ERR_TOKEN, 110);
    ck_assert_int_eq(KS_ERR_SKEW, 111);
    ck_assert_int_eq(KS_ERR_LENGTH, 112);
    ck_assert_int_eq(KS_ERR_TOO_LARGE, 113);
    ck_assert_int_eq(KS_ERR_THROTTLED, 114);
    ck_assert_int_eq(KS_ERR_NONCE, 115);
    ck_assert_int_eq(KS_ERR_STALE_CLASSMAP, 123);
    ck_assert_int_eq(KS_ERR_RECOVERY_KEY, 124);
    ck_assert_int_eq(KS_ERR_RECENT_LOGIN, 125);
    ck_assert_int_eq(KS_ERR_UNKNOWN_DEVICE, 126);
    ck_assert_int_eq(KS_ERR_OVERLOADED, 201);
    ck_assert_int_eq(KS_ERR_UNEXPECTED, 999);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("wire_formats");
    TCase *tc = tcase_create("wire_formats");
    tcase_add_test(tc, test_synctime_parse);
    tcase_add_test(tc, test_synctime_format);
    tcase_add_test(tc, test_synctime_from_json);
    tcase_add_test(tc, test_hostport_parse);
    tcase_add_test(tc, test_hostport_limits);
    tcase_add_test(tc, test_hostport_format);
    tcase_add_test(tc, test_ks_errno_values);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
