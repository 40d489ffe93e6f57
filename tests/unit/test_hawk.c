/* SPDX-License-Identifier: MPL-2.0 */
/* test_hawk.c -- Hawk 1.1 (keyserver.md section 8): the published cases of
 * hawk_vectors.json (normalised string, MAC, payload hash, header), the
 * syncstorage-rs fixture MACs, the strict header parser's bad cases (each
 * with its exact status), verification order and statuses, and the nonce
 * cache (bounds, expiry, threads). */
#include "testutil.h"
#include "protocol/hawk.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    ck_assert_msg(json_is_string(v), "vector field %s missing", k);
    return json_string_value(v);
}

static void expect_zero(const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(((const uint8_t *)p)[i], 0);
}

START_TEST(test_published_cases)
{
    json_t *doc = tu_json_load("hawk_vectors.json");
    json_t *cases = json_object_get(doc, "cases"), *c;
    size_t idx;
    ck_assert_uint_ge(json_array_size(cases), 2);
    json_array_foreach (cases, idx, c) {
        json_t *lines = json_object_get(c, "normalized_lines");
        const char *key = jstr(c, "key"), *id = jstr(c, "id");
        const char *ts = json_string_value(json_array_get(lines, 1));
        const char *nonce = json_string_value(json_array_get(lines, 2));
        const char *method = json_string_value(json_array_get(lines, 3));
        const char *resource = json_string_value(json_array_get(lines, 4));
        const char *host = json_string_value(json_array_get(lines, 5));
        unsigned port = (unsigned)strtoul(json_string_value(json_array_get(lines, 6)), NULL, 10);
        const char *hashline = json_string_value(json_array_get(lines, 7));
        const char *ext = json_string_value(json_array_get(lines, 8));
        const char *ct = json_object_get(c, "content_type") ? jstr(c, "content_type") : NULL;
        const char *payload = ct ? jstr(c, "payload") : NULL;
        char want[2048] = "", *norm = NULL, *hdr = NULL;
        char mac[PICL_HAWK_B64_BYTES + 1], hash[PICL_HAWK_B64_BYTES + 1];
        size_t normlen = 0;
        json_t *line;
        size_t li;

        ck_assert_uint_eq(json_array_size(lines), 9);
        json_array_foreach (lines, li, line) {
            tu_append(want, sizeof want, json_string_value(line));
            tu_append(want, sizeof want, "\n");
        }
        ck_assert_int_eq(picl__hawk_normalized(&norm, &normlen, ts, nonce, method, resource, host, port,
                                               *hashline ? hashline : NULL, ext),
                         PICL_OK);
        ck_assert_str_eq(norm, want);
        ck_assert_uint_eq(normlen, strlen(want));
        free(norm);

        picl_hawk_request req = {method, resource, host, port, ct, payload, payload ? strlen(payload) : 0};
        if (ct) {
            ck_assert_int_eq(picl__hawk_payload_hash(hash, ct, payload, strlen(payload)), PICL_OK);
            ck_assert_str_eq(hash, jstr(c, "payload_hash"));
            ck_assert_str_eq(hash, hashline);
        }
        ck_assert_int_eq(
            picl__hawk_mac(mac, key, strlen(key), ts, nonce, &req, *hashline ? hashline : NULL, ext),
            PICL_OK);
        ck_assert_str_eq(mac, jstr(c, "mac"));

        /* the client produces the published header byte for byte */
        ck_assert_int_eq(
            picl__hawk_client_header(&hdr, id, key, strlen(key), &req, strtoll(ts, NULL, 10), nonce, ext),
            PICL_OK);
        ck_assert_str_eq(hdr, jstr(c, "header"));
        free(hdr);

        /* the server parses and accepts it, and refuses it under another key */
        picl_hawk_auth a;
        const char *h = jstr(c, "header");
        ck_assert_int_eq(picl__hawk_parse(&a, h, strlen(h)), PICL_OK);
        ck_assert_str_eq(a.id, id);
        ck_assert_str_eq(a.ts_text, ts);
        ck_assert_int_eq(a.ts, strtoll(ts, NULL, 10));
        ck_assert_str_eq(a.nonce, nonce);
        ck_assert_str_eq(a.ext, ext);
        ck_assert_int_eq(a.has_ext, 1);
        ck_assert_int_eq(a.has_hash, ct != NULL);
        ck_assert_str_eq(a.mac, jstr(c, "mac"));
        picl_hawk_verify_opts o = {.now = a.ts + 59, .skew = 60, .require_hash = ct != NULL};
        ck_assert_int_eq(picl__hawk_verify(&a, key, strlen(key), &req, &o), PICL_OK);
        ck_assert_int_eq(picl__hawk_verify(&a, key, strlen(key) - 1, &req, &o), PICL_HAWK_ERROR_BAD_MAC);
    }
    json_decref(doc);
}
END_TEST

/* syncstorage-rs: MAC under a tokenlib-derived key used as ASCII text, for a
 * GET and for a POST whose query holds percent-free base64 ("==") and '&'. */
START_TEST(test_syncstorage_fixture)
{
    json_t *doc = tu_json_load("hawk_vectors.json");
    json_t *fx = json_object_get(doc, "syncstorage_rs_auth_fixture");
    /* the key as derived by test_tokenlib (which checks it from the secret) */
    const char *key = "dSi3EoZyHwgDp-O9OG1jRHtmbGl2M1bwcWsi04C4F58=";
    const char *id = jstr(fx, "hawk_id");
    char mac[PICL_HAWK_B64_BYTES + 1], tsbuf[24], *hdr = NULL;
    const char *sfx[2] = {"", "2"};
    for (int i = 0; i < 2; i++) {
        char kmethod[16], kpath[16], kts[16], knonce[16], kmac[16];
        snprintf(kmethod, sizeof kmethod, "method%s", sfx[i]);
        snprintf(kpath, sizeof kpath, "path%s", sfx[i]);
        snprintf(kts, sizeof kts, "ts%s", sfx[i]);
        snprintf(knonce, sizeof knonce, "nonce%s", sfx[i]);
        snprintf(kmac, sizeof kmac, "mac%s", sfx[i]);
        json_int_t ts = json_integer_value(json_object_get(fx, kts));
        picl_hawk_request req = {jstr(fx, kmethod),
                                 jstr(fx, kpath),
                                 jstr(fx, "host"),
                                 (unsigned)json_integer_value(json_object_get(fx, "port")),
                                 NULL,
                                 NULL,
                                 0};
        snprintf(tsbuf, sizeof tsbuf, "%lld", (long long)ts);
        ck_assert_int_eq(picl__hawk_mac(mac, key, strlen(key), tsbuf, jstr(fx, knonce), &req, NULL, NULL),
                         PICL_OK);
        ck_assert_str_eq(mac, jstr(fx, kmac));
        ck_assert_int_eq(
            picl__hawk_client_header(&hdr, id, key, strlen(key), &req, ts, jstr(fx, knonce), NULL), PICL_OK);
        picl_hawk_auth a;
        ck_assert_int_eq(picl__hawk_parse(&a, hdr, strlen(hdr)), PICL_OK);
        ck_assert_str_eq(a.mac, jstr(fx, kmac));
        ck_assert_str_eq(a.id, id);
        picl_hawk_verify_opts o = {.now = ts, .skew = 60};
        ck_assert_int_eq(picl__hawk_verify(&a, key, strlen(key), &req, &o), PICL_OK);
        free(hdr);
    }
    json_decref(doc);
}
END_TEST

START_TEST(test_payload_hash_content_type)
{
    char a[PICL_HAWK_B64_BYTES + 1], b[PICL_HAWK_B64_BYTES + 1];
    const char *body = "Thank you for flying Hawk";
    ck_assert_int_eq(picl__hawk_payload_hash(a, "text/plain", body, strlen(body)), PICL_OK);
    ck_assert_str_eq(a, "Yi9LfIIFRtBEPt74PVmbTF/xVAwPn7ub15ePICfgnuY="); /* hawk API.md, as in the JSON */
    ck_assert_int_eq(picl__hawk_payload_hash(b, " Text/PLAIN ; charset=utf-8", body, strlen(body)), PICL_OK);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(picl__hawk_payload_hash(b, "text/plain;", body, strlen(body)), PICL_OK);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(picl__hawk_payload_hash(b, "text/html", body, strlen(body)), PICL_OK);
    ck_assert_str_ne(a, b);
    /* NULL content type and body = "" and "" */
    ck_assert_int_eq(picl__hawk_payload_hash(a, NULL, NULL, 0), PICL_OK);
    ck_assert_int_eq(picl__hawk_payload_hash(b, "", "", 0), PICL_OK);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(picl__hawk_payload_hash(a, "text/plain\n", body, 3), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_payload_hash(a, "text/plain", NULL, 3), PICL_ERROR_INVALID_ARGUMENT);
    char big[PICL_HAWK_MAX_CONTENT_TYPE + 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ck_assert_int_eq(picl__hawk_payload_hash(a, big, "", 0), PICL_ERROR_TOO_LARGE);
}
END_TEST

/* ---- the parser ----------------------------------------------------------- */

#define MAC_OK "6R4rV5iE+NPoym+WwjeHzjAGXUtLNIxmo1vpMofpLAE="

typedef struct bad_case {
    const char *header;
    picl_status want;
} bad_case;

static const bad_case bad_headers[] = {
    {"", PICL_HAWK_ERROR_MALFORMED},
    {"   ", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk ", PICL_HAWK_ERROR_MALFORMED},
    {"Haw id=\"a\"", PICL_HAWK_ERROR_MALFORMED},
    {"Basic dXNlcjpwYXNz", PICL_HAWK_ERROR_MALFORMED},
    {"Bearer id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawkid=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk,id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    /* required attributes */
    {"Hawk ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\"", PICL_HAWK_ERROR_MALFORMED},
    /* duplicates, unknown names, case of names */
    {"Hawk id=\"a\", id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\", mac=\"" MAC_OK "\"",
     PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", ext=\"x\", ext=\"x\", mac=\"" MAC_OK "\"",
     PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", app=\"x\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", dlg=\"x\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk ID=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", x=\"\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", =\"x\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id_x=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    /* quoting */
    {"Hawk id=a, ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id='a', ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a, ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK, PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\\\"b\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\\b\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id =\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id= \"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\"x, ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", hash=\"\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    /* separators */
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\",", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\", ", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\",, ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\" ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\"; ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk , id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    /* ts */
    {"Hawk id=\"a\", ts=\"\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"12a\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"-1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"+1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\" 1\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1.5\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"0x10\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1234567890123456\", nonce=\"n\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_TOO_LARGE},
    /* mac and hash: canonical base64 of 32 bytes */
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"6R4rV5iE+NPoym+WwjeHzjAGXUtLNIxmo1vpMofpLAE\"",
     PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"6R4rV5iE+NPoym+WwjeHzjAGXUtLNIxmo1vpMofpLAF=\"",
     PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"6R4rV5iE-NPoym_WwjeHzjAGXUtLNIxmo1vpMofpLAE=\"",
     PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"6R4rV5iE+NPoym+WwjeHzjAGXUtLNIxmo1vpMofpLA==\"",
     PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"6R4rV5iE+NPoym+WwjeHzjAGXUtLNIxmo1vpMofpLAE=A\"",
     PICL_HAWK_ERROR_TOO_LARGE},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", hash=\"abc\", mac=\"" MAC_OK "\"", PICL_HAWK_ERROR_MALFORMED},
    {"Hawk id=\"a\", ts=\"1\", nonce=\"n\", hash=\""
     "6R4rV5iE+NPoym+WwjeHzjAGXUtLNIxmo1vpMofpLA!="
     "\", mac=\"" MAC_OK "\"",
     PICL_HAWK_ERROR_MALFORMED},
};

static void expect_parse(const char *h, size_t len, picl_status want)
{
    picl_hawk_auth a;
    memset(&a, 0xAA, sizeof a);
    picl_status got = picl__hawk_parse(&a, h, len);
    ck_assert_msg(got == want, "header [%.*s]: got %d, want %d", (int)len, h, got, want);
    if (want != PICL_OK)
        expect_zero(&a, sizeof a);
}

START_TEST(test_parse_bad)
{
    for (size_t i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++)
        expect_parse(bad_headers[i].header, strlen(bad_headers[i].header), bad_headers[i].want);
}
END_TEST

/* Bytes that are not Hawk value characters, at every position of a value. */
START_TEST(test_parse_bad_bytes)
{
    const char *base = "Hawk id=\"abc\", ts=\"1\", nonce=\"xyz\", ext=\"e\", mac=\"" MAC_OK "\"";
    static const char bytes[] = {'\0', '\n', '\r', '\t', 0x01, 0x7f, (char)0x80, (char)0xc3, (char)0xff};
    size_t n = strlen(base);
    char h[256];
    expect_parse(base, n, PICL_OK);
    for (size_t b = 0; b < sizeof bytes; b++) {
        for (size_t pos = 9; pos < 12; pos++) { /* inside id="abc" */
            memcpy(h, base, n);
            h[pos] = bytes[b];
            expect_parse(h, n, PICL_HAWK_ERROR_MALFORMED);
        }
    }
    /* a NUL anywhere inside the stated length */
    for (size_t pos = 0; pos < n; pos++) {
        memcpy(h, base, n);
        h[pos] = 0;
        picl_hawk_auth a;
        ck_assert_int_ne(picl__hawk_parse(&a, h, n), PICL_OK);
    }
    /* every strict prefix fails (no partial header is accepted) */
    for (size_t len = 0; len < n; len++) {
        picl_hawk_auth a;
        picl_status st = picl__hawk_parse(&a, base, len);
        ck_assert_msg(st == PICL_HAWK_ERROR_MALFORMED, "prefix %zu: %d", len, st);
    }
}
END_TEST

START_TEST(test_parse_caps)
{
    char *h = malloc(PICL_HAWK_MAX_HEADER + 64);
    char *v = malloc(PICL_HAWK_MAX_HEADER + 64);
    picl_hawk_auth a;
    /* id at its cap is fine, one over is too large */
    memset(v, 'i', PICL_HAWK_MAX_ID);
    v[PICL_HAWK_MAX_ID] = 0;
    snprintf(h, PICL_HAWK_MAX_HEADER + 64, "Hawk id=\"%s\", ts=\"1\", nonce=\"n\", mac=\"%s\"", v, MAC_OK);
    expect_parse(h, strlen(h), PICL_OK);
    ck_assert_int_eq(picl__hawk_parse(&a, h, strlen(h)), PICL_OK);
    ck_assert_uint_eq(strlen(a.id), PICL_HAWK_MAX_ID);
    v[PICL_HAWK_MAX_ID] = 'i';
    v[PICL_HAWK_MAX_ID + 1] = 0;
    snprintf(h, PICL_HAWK_MAX_HEADER + 64, "Hawk id=\"%s\", ts=\"1\", nonce=\"n\", mac=\"%s\"", v, MAC_OK);
    expect_parse(h, strlen(h), PICL_HAWK_ERROR_TOO_LARGE);
    /* nonce */
    memset(v, 'n', PICL_HAWK_MAX_NONCE + 1);
    v[PICL_HAWK_MAX_NONCE + 1] = 0;
    snprintf(h, PICL_HAWK_MAX_HEADER + 64, "Hawk id=\"a\", ts=\"1\", nonce=\"%s\", mac=\"%s\"", v, MAC_OK);
    expect_parse(h, strlen(h), PICL_HAWK_ERROR_TOO_LARGE);
    v[PICL_HAWK_MAX_NONCE] = 0;
    snprintf(h, PICL_HAWK_MAX_HEADER + 64, "Hawk id=\"a\", ts=\"1\", nonce=\"%s\", mac=\"%s\"", v, MAC_OK);
    expect_parse(h, strlen(h), PICL_OK);
    /* ext */
    memset(v, 'e', PICL_HAWK_MAX_EXT + 1);
    v[PICL_HAWK_MAX_EXT + 1] = 0;
    snprintf(h, PICL_HAWK_MAX_HEADER + 64, "Hawk id=\"a\", ts=\"1\", nonce=\"n\", ext=\"%s\", mac=\"%s\"", v,
             MAC_OK);
    expect_parse(h, strlen(h), PICL_HAWK_ERROR_TOO_LARGE);
    /* the whole header: padding spaces push a valid header over the cap */
    snprintf(h, PICL_HAWK_MAX_HEADER + 64, "Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"%s\"", MAC_OK);
    size_t n = strlen(h);
    memset(h + n, ' ', PICL_HAWK_MAX_HEADER - n);
    expect_parse(h, PICL_HAWK_MAX_HEADER, PICL_OK);
    h[PICL_HAWK_MAX_HEADER] = ' ';
    expect_parse(h, PICL_HAWK_MAX_HEADER + 1, PICL_HAWK_ERROR_TOO_LARGE);
    free(h);
    free(v);
    ck_assert_int_eq(picl__hawk_parse(NULL, "x", 1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_parse(&a, NULL, 1), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_parse_accepted_forms)
{
    static const char *ok[] = {
        "Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"",
        "hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"",
        "HAWK id=\"a\",ts=\"1\",nonce=\"n\",mac=\"" MAC_OK "\"",
        "  Hawk \t id=\"a\" ,\tts=\"1\" , nonce=\"n\",  mac=\"" MAC_OK "\"  ",
        "Hawk mac=\"" MAC_OK "\", nonce=\"n\", ts=\"1\", id=\"a\"",
        "Hawk id=\"a\", ts=\"1\", nonce=\"n\", ext=\"\", mac=\"" MAC_OK "\"",
        "Hawk id=\"a b=c,d\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        picl_hawk_auth a;
        ck_assert_msg(picl__hawk_parse(&a, ok[i], strlen(ok[i])) == PICL_OK, "rejected: %s", ok[i]);
        ck_assert_int_eq(a.ts, 1);
        ck_assert_str_eq(a.nonce, "n");
        ck_assert_str_eq(a.mac, MAC_OK);
        ck_assert_int_eq(a.has_hash, 0);
    }
    picl_hawk_auth a;
    ck_assert_int_eq(picl__hawk_parse(&a, ok[5], strlen(ok[5])), PICL_OK);
    ck_assert_int_eq(a.has_ext, 1);
    ck_assert_str_eq(a.ext, "");
    ck_assert_int_eq(picl__hawk_parse(&a, ok[6], strlen(ok[6])), PICL_OK);
    ck_assert_str_eq(a.id, "a b=c,d");
    /* a longer buffer: only len bytes are read */
    const char *h = "Hawk id=\"a\", ts=\"1\", nonce=\"n\", mac=\"" MAC_OK "\"GARBAGE";
    ck_assert_int_eq(picl__hawk_parse(&a, h, strlen(h) - 7), PICL_OK);
    /* leading zeros and the largest ts */
    h = "Hawk id=\"a\", ts=\"999999999999999\", nonce=\"n\", mac=\"" MAC_OK "\"";
    ck_assert_int_eq(picl__hawk_parse(&a, h, strlen(h)), PICL_OK);
    ck_assert_int_eq(a.ts, 999999999999999LL);
}
END_TEST

/* ---- verification ---------------------------------------------------------- */

static const char KEY[] = "werxhqb98rpaxn39848xrunpaw3489ruxnpa98w4rxn";

static void make(picl_hawk_auth *a, const picl_hawk_request *req, int64_t ts, const char *nonce,
                 int with_hash)
{
    char *hdr = NULL;
    picl_hawk_request r = *req;
    if (!with_hash)
        r.content_type = NULL;
    ck_assert_int_eq(picl__hawk_client_header(&hdr, "id1", KEY, strlen(KEY), &r, ts, nonce, NULL), PICL_OK);
    ck_assert_int_eq(picl__hawk_parse(a, hdr, strlen(hdr)), PICL_OK);
    free(hdr);
}

START_TEST(test_verify_fields)
{
    const char *body = "{\"a\":1}";
    picl_hawk_request req = {"POST",      "/v1/session/create?x=%2F&y",      "Example.COM",
                             443,         "application/json; charset=utf-8", body,
                             strlen(body)};
    picl_hawk_auth a;
    picl_hawk_verify_opts o = {.now = 1000, .skew = 60, .require_hash = 1};
    make(&a, &req, 1000, "n1", 1);
    ck_assert_int_eq(a.has_hash, 1);
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_OK);

    /* each field the MAC covers */
    picl_hawk_request r;
    r = req;
    r.method = "post"; /* method is upper-cased: same MAC */
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_OK);
    r = req;
    r.host = "example.com"; /* host is lower-cased */
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_OK);
    r = req;
    r.method = "PUT";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_BAD_MAC);
    r = req;
    r.resource = "/v1/session/create?x=/&y"; /* decoded path: not what was sent */
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_BAD_MAC);
    r = req;
    r.resource = "/v1/session/create";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_BAD_MAC);
    r = req;
    r.host = "example.org";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_BAD_MAC);
    r = req;
    r.port = 80;
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_BAD_MAC);
    /* the body and content type are covered through the hash */
    r = req;
    r.body = "{\"a\":2}";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_BAD_MAC);
    r = req;
    r.bodylen = 0;
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_BAD_MAC);
    r = req;
    r.content_type = "text/plain";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_BAD_MAC);
    r = req;
    r.content_type = "Application/JSON";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_OK);
    /* the header's own fields */
    picl_hawk_auth t = a;
    t.ts_text[strlen(t.ts_text) - 1] ^= 1;
    ck_assert_int_eq(picl__hawk_verify(&t, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_BAD_MAC);
    t = a;
    t.nonce[0] ^= 1;
    ck_assert_int_eq(picl__hawk_verify(&t, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_BAD_MAC);
    t = a;
    t.has_ext = 1;
    memcpy(t.ext, "x", 2);
    ck_assert_int_eq(picl__hawk_verify(&t, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_BAD_MAC);
    t = a;
    t.has_hash = 0;
    o.require_hash = 0;
    ck_assert_int_eq(picl__hawk_verify(&t, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_BAD_MAC);
    for (size_t i = 0; i < PICL_HAWK_B64_BYTES - 1; i++) {
        t = a;
        t.mac[i] = t.mac[i] == 'A' ? 'B' : 'A';
        ck_assert_int_eq(picl__hawk_verify(&t, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_BAD_MAC);
    }
    /* wire fields with a newline cannot pose as two lines */
    r = req;
    r.resource = "/a\nexample.com";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_MALFORMED);
    r = req;
    r.method = "PO ST";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &r, &o), PICL_HAWK_ERROR_MALFORMED);
}
END_TEST

START_TEST(test_verify_hash_policy)
{
    picl_hawk_request get = {"GET", "/1.5/1/info/collections", "localhost", 8000, NULL, NULL, 0};
    picl_hawk_auth a;
    picl_hawk_verify_opts o = {.now = 5000, .skew = 60, .require_hash = 0};
    make(&a, &get, 5000, "g1", 0);
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &get, &o), PICL_OK);
    o.require_hash = 1; /* keyserver: a body needs a hash */
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &get, &o), PICL_HAWK_ERROR_BAD_MAC);
    /* storage: a present hash is checked even when not required */
    const char *body = "[]";
    picl_hawk_request post = {"POST", "/1.5/1/storage/bookmarks", "localhost", 8000, "application/json", body,
                              2};
    make(&a, &post, 5000, "p1", 1);
    o.require_hash = 0;
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &post, &o), PICL_OK);
    post.body = "{}";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &post, &o), PICL_HAWK_ERROR_BAD_MAC);
}
END_TEST

START_TEST(test_verify_timestamp)
{
    picl_hawk_request req = {"GET", "/x", "h", 1, NULL, NULL, 0};
    picl_hawk_auth a;
    picl_hawk_verify_opts o = {.skew = 60};
    make(&a, &req, 100000, "t", 0);
    static const struct {
        int64_t now;
        picl_status want;
    } cases[] = {
        {100000, PICL_OK},
        {100060, PICL_OK},
        {99940, PICL_OK},
        {100061, PICL_HAWK_ERROR_STALE},
        {99939, PICL_HAWK_ERROR_STALE},
        {0, PICL_HAWK_ERROR_STALE},
        {200000, PICL_HAWK_ERROR_STALE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.now = cases[i].now;
        ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), cases[i].want);
    }
    /* a forged request with a stale ts is a bad MAC, not stale: only an
     * authentic client learns that its clock is off */
    picl_hawk_auth t = a;
    t.mac[0] = t.mac[0] == 'A' ? 'B' : 'A';
    o.now = 0;
    ck_assert_int_eq(picl__hawk_verify(&t, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_BAD_MAC);
    /* skew is configurable; 0 means exactly now */
    o.skew = 0;
    o.now = 100000;
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_OK);
    o.now = 100001;
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_STALE);
    o.skew = -1;
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, NULL), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_verify(NULL, KEY, strlen(KEY), &req, &o), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_verify_replay)
{
    picl_hawk_request req = {"GET", "/x", "h", 1, NULL, NULL, 0};
    picl_hawk_nonce_cache *c = NULL;
    picl_hawk_auth a, b, forged;
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c, 100), PICL_OK);
    picl_hawk_verify_opts o = {.now = 1000, .skew = 60, .nonces = c};

    make(&a, &req, 1000, "nonce-1", 0);
    /* a forgery with the same nonce neither passes nor burns the nonce */
    forged = a;
    forged.mac[3] = forged.mac[3] == 'A' ? 'B' : 'A';
    ck_assert_int_eq(picl__hawk_verify(&forged, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_BAD_MAC);
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c), 0);
    /* nor does a stale request */
    o.now = 2000;
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_STALE);
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c), 0);

    o.now = 1000;
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_OK);
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_REPLAY);
    o.now = 1060; /* still inside the window of ts 1000 */
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_REPLAY);
    /* the same nonce with another ts is refused too (id + nonce is the key) */
    make(&b, &req, 1030, "nonce-1", 0);
    ck_assert_int_eq(picl__hawk_verify(&b, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_REPLAY);
    /* another nonce is fine */
    make(&b, &req, 1030, "nonce-2", 0);
    ck_assert_int_eq(picl__hawk_verify(&b, KEY, strlen(KEY), &req, &o), PICL_OK);
    /* after the window the old request is stale, and the entry may go */
    o.now = 1061;
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_HAWK_ERROR_STALE);
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id1", "nonce-1", 1200, 1061), PICL_OK);
    /* the same nonce under another id is another entry */
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id2", "nonce-2", 1200, 1061), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id2", "nonce-2", 1200, 1061), PICL_HAWK_ERROR_REPLAY);
    /* ("ab","c") and ("a","bc") are different pairs */
    ck_assert_int_eq(picl__hawk_nonce_check(c, "ab", "c", 1200, 1061), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check(c, "a", "bc", 1200, 1061), PICL_OK);
    picl__hawk_nonce_cache_free(c);
}
END_TEST

START_TEST(test_nonce_cache_bounds)
{
    picl_hawk_nonce_cache *c = NULL;
    char n[32];
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c, 0), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c, ((size_t)1 << 24) + 1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_nonce_cache_new(NULL, 4), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c, 4), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(c, 4), PICL_OK); /* one identity here */
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, "n%d", i);
        ck_assert_int_eq(picl__hawk_nonce_check(c, "id", n, 110, 100), PICL_OK);
    }
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c), 4);
    /* full of live entries: refuse, never evict a live one */
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id", "n4", 110, 100), PICL_HAWK_ERROR_BUSY);
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, "n%d", i);
        ck_assert_int_eq(picl__hawk_nonce_check(c, "id", n, 110, 110), PICL_HAWK_ERROR_REPLAY);
    }
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c), 4);
    /* once they expire there is room again */
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id", "n4", 120, 111), PICL_OK);
    ck_assert_uint_le(picl__hawk_nonce_cache_count(c), 4);
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id", "n0", 120, 111), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id", "n1", 120, 111), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id", "n2", 120, 111), PICL_OK);
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c), 4);
    /* four live again: the fifth is refused */
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id", "n3", 120, 111), PICL_HAWK_ERROR_BUSY);
    ck_assert_int_eq(picl__hawk_nonce_check(c, "id", "n4", 120, 120), PICL_HAWK_ERROR_REPLAY);
    picl__hawk_nonce_cache_free(c);

    /* a long run with time moving: stays bounded, never refuses, and every
     * nonce still live is still refused */
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c, 1000), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(c, 1000), PICL_OK);
    for (int i = 0; i < 200000; i++) {
        int64_t now = i / 20;
        snprintf(n, sizeof n, "x%d", i);
        ck_assert_int_eq(picl__hawk_nonce_check(c, "id", n, now + 30, now), PICL_OK);
        ck_assert_uint_le(picl__hawk_nonce_cache_count(c), 1000);
        if (i >= 500 && i % 97 == 0) {
            snprintf(n, sizeof n, "x%d", i - 500); /* inserted at now - 25: live */
            ck_assert_int_eq(picl__hawk_nonce_check(c, "id", n, now + 30, now), PICL_HAWK_ERROR_REPLAY);
        }
    }
    picl__hawk_nonce_cache_free(c);
    picl__hawk_nonce_cache_free(NULL);
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(NULL), 0);
}
END_TEST

/* One identity (an account, whatever tokens it uses) cannot fill the cache:
 * past its share its own requests are BUSY, everybody else's still pass. */
START_TEST(test_nonce_cache_share)
{
    picl_hawk_nonce_cache *c = NULL;
    char n[32], id[32];
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c, 64), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(c, 0), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(c, 65), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(NULL, 1), PICL_ERROR_INVALID_ARGUMENT);
    /* the default share is 1/16: 4 of 64 */
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, "d%d", i);
        ck_assert_int_eq(picl__hawk_nonce_check(c, "one-token", n, 200, 100), PICL_OK);
    }
    ck_assert_int_eq(picl__hawk_nonce_check(c, "one-token", "d4", 200, 100), PICL_HAWK_ERROR_BUSY);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(c, 8), PICL_OK);
    /* account 1 through eight tokens: 4 more fit its share of 8, then BUSY */
    int ok = 0, busy = 0;
    for (int i = 0; i < 64; i++) {
        snprintf(id, sizeof id, "token-%d", i % 8);
        snprintf(n, sizeof n, "a%d", i);
        picl_status st = picl__hawk_nonce_check_for(c, "account:1", id, n, 200, 100);
        ck_assert(st == PICL_OK || st == PICL_HAWK_ERROR_BUSY);
        ok += st == PICL_OK;
        busy += st == PICL_HAWK_ERROR_BUSY;
    }
    ck_assert_int_eq(ok, 8);
    ck_assert_int_eq(busy, 56);
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c), 4 + 8);
    /* others are not affected */
    for (int a = 2; a < 6; a++) {
        char who[32];
        snprintf(who, sizeof who, "account:%d", a);
        for (int i = 0; i < 8; i++) {
            snprintf(n, sizeof n, "b%d", i);
            ck_assert_int_eq(picl__hawk_nonce_check_for(c, who, who, n, 200, 100), PICL_OK);
        }
    }
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c), 4 + 8 + 32);
    /* replays are still replays for the identity that made them */
    ck_assert_int_eq(picl__hawk_nonce_check_for(c, "account:2", "account:2", "b0", 200, 150),
                     PICL_HAWK_ERROR_REPLAY);
    /* a refused nonce was not recorded: it passes once there is room, and
     * the share frees when its entries expire */
    ck_assert_int_eq(picl__hawk_nonce_check_for(c, "account:1", "token-0", "a63", 300, 201), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_for(c, "account:1", "token-0", "a63", 300, 202),
                     PICL_HAWK_ERROR_REPLAY);
    picl__hawk_nonce_cache_free(c);

    /* through picl__hawk_verify: opts.identity names the share */
    picl_hawk_request req = {"GET", "/x", "h", 1, NULL, NULL, 0};
    picl_hawk_auth a;
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c, 16), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(c, 2), PICL_OK);
    picl_hawk_verify_opts o = {.now = 1000, .skew = 60, .nonces = c, .identity = "account:7"};
    const char *nonces[] = {"v1", "v2", "v3"};
    picl_status want[] = {PICL_OK, PICL_OK, PICL_HAWK_ERROR_BUSY};
    for (int i = 0; i < 3; i++) {
        make(&a, &req, 1000, nonces[i], 0);
        ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), want[i]);
    }
    o.identity = "account:8";
    ck_assert_int_eq(picl__hawk_verify(&a, KEY, strlen(KEY), &req, &o), PICL_OK);
    picl__hawk_nonce_cache_free(c);
}
END_TEST

typedef struct race {
    picl_hawk_nonce_cache *c;
    int ok;
} race;

static void *racer(void *arg)
{
    race *r = arg;
    char n[32];
    for (int i = 0; i < 300; i++) {
        snprintf(n, sizeof n, "r%d", i);
        if (picl__hawk_nonce_check(r->c, "id", n, 1000, 0) == PICL_OK)
            r->ok++;
    }
    return NULL;
}

/* Eight threads offer the same 300 nonces: each is accepted exactly once. */
START_TEST(test_nonce_cache_threads)
{
    picl_hawk_nonce_cache *c = NULL;
    pthread_t th[8];
    race r[8];
    int total = 0;
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c, 10000), PICL_OK);
    for (int i = 0; i < 8; i++) {
        r[i].c = c;
        r[i].ok = 0;
        ck_assert_int_eq(pthread_create(&th[i], NULL, racer, &r[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        total += r[i].ok;
    }
    ck_assert_int_eq(total, 300);
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c), 300);
    picl__hawk_nonce_cache_free(c);
}
END_TEST

/* An HMAC context kept per key (picl__hawk_mac_ctx, opts.mac_ctx) gives the
 * MAC of the key imported per call, also after a refused field and after a
 * failed verification; and verification decides the same either way. */
START_TEST(test_mac_ctx_same_results)
{
    picl_hmac_ctx *ctx = NULL;
    ck_assert_int_eq(picl__hmac_sha256_init(&ctx, KEY, strlen(KEY)), PICL_OK);
    const char *body = "{\"a\":1}";
    picl_hawk_request reqs[] = {
        {"GET", "/1.5/1/info/collections", "localhost", 8000, NULL, NULL, 0},
        {"post", "/1.5/1/storage/bookmarks?batch=true", "Example.COM", 443, "application/json", body, 7},
        {"DELETE", "/", "h", 0, NULL, NULL, 0},
    };
    const char *exts[] = {NULL, "", "some-app-data"};
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++)
        for (size_t k = 0; k < 3; k++) {
            char want[PICL_HAWK_B64_BYTES + 1], got[PICL_HAWK_B64_BYTES + 1];
            ck_assert_int_eq(picl__hawk_mac(want, KEY, strlen(KEY), "1353832234", "j4h3g2", &reqs[i],
                                            k == 1 ? "Yi9LfIIFRtBEPt74PVmbTF/xVAwPn7ub15ePICfgnuY=" : NULL,
                                            exts[k]),
                             PICL_OK);
            ck_assert_int_eq(
                picl__hawk_mac_ctx(got, ctx, "1353832234", "j4h3g2", &reqs[i],
                                   k == 1 ? "Yi9LfIIFRtBEPt74PVmbTF/xVAwPn7ub15ePICfgnuY=" : NULL, exts[k]),
                PICL_OK);
            ck_assert_str_eq(got, want);
        }
    /* a refused field: the same error, and the context still right after */
    char m1[PICL_HAWK_B64_BYTES + 1], m2[PICL_HAWK_B64_BYTES + 1];
    picl_hawk_request bad = {"GET", "/x\ny", "h", 1, NULL, NULL, 0};
    ck_assert_int_eq(picl__hawk_mac(m1, KEY, strlen(KEY), "1", "n", &bad, NULL, NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_mac_ctx(m2, ctx, "1", "n", &bad, NULL, NULL), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_mac_ctx(m2, NULL, "1", "n", &reqs[0], NULL, NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_mac(m1, KEY, strlen(KEY), "1", "n", &reqs[0], NULL, NULL), PICL_OK);
    ck_assert_int_eq(picl__hawk_mac_ctx(m2, ctx, "1", "n", &reqs[0], NULL, NULL), PICL_OK);
    ck_assert_str_eq(m1, m2);

    /* verification: the same status with and without the context (and the
     * precomputed nonce digests), case by case, on two caches fed alike */
    picl_hawk_nonce_cache *c1 = NULL, *c2 = NULL;
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c1, 64), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c2, 64), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(c1, 64), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(c2, 64), PICL_OK);
    uint8_t idd[32], whod[32];
    ck_assert_int_eq(picl__hawk_nonce_id_digest(idd, "id1"), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_identity_digest(whod, "acct"), PICL_OK);
    picl_hawk_verify_opts plain = {.now = 1000, .skew = 60, .nonces = c1, .identity = "acct"};
    picl_hawk_verify_opts fast = {.now = 1000,
                                  .skew = 60,
                                  .nonces = c2,
                                  .identity = "acct",
                                  .mac_ctx = ctx,
                                  .id_digest = idd,
                                  .identity_digest = whod};
    picl_hawk_request get = reqs[0], post = reqs[1];
    picl_hawk_auth a, wrongmac, stale, other, hashed, badhash;
    make(&a, &get, 1000, "n-1", 0);
    wrongmac = a;
    wrongmac.mac[5] = wrongmac.mac[5] == 'A' ? 'B' : 'A';
    make(&stale, &get, 1000 - 61, "n-2", 0);
    make(&other, &get, 1000, "n-3", 0);
    make(&hashed, &post, 1000, "n-4", 1);
    badhash = hashed;
    static const char *wrongkey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    struct {
        const picl_hawk_auth *auth;
        const picl_hawk_request *req;
        const char *key; /* NULL: KEY */
        picl_status want;
    } cases[] = {
        {&wrongmac, &get, NULL, PICL_HAWK_ERROR_BAD_MAC},
        {&a, &get, NULL, PICL_OK},
        {&a, &get, NULL, PICL_HAWK_ERROR_REPLAY},
        {&stale, &get, NULL, PICL_HAWK_ERROR_STALE},
        {&other, &post, NULL, PICL_HAWK_ERROR_BAD_MAC}, /* signed for another request */
        {&other, &get, NULL, PICL_OK},
        {&hashed, &post, NULL, PICL_OK},
        {&hashed, &post, NULL, PICL_HAWK_ERROR_REPLAY},
        {&badhash, &get, NULL, PICL_HAWK_ERROR_BAD_MAC},
        {&a, &get, wrongkey, PICL_HAWK_ERROR_BAD_MAC},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *k = cases[i].key ? cases[i].key : KEY;
        picl_hmac_ctx *kc = NULL;
        if (cases[i].key) {
            ck_assert_int_eq(picl__hmac_sha256_init(&kc, k, strlen(k)), PICL_OK);
            fast.mac_ctx = kc;
        }
        ck_assert_int_eq(picl__hawk_verify(cases[i].auth, k, strlen(k), cases[i].req, &plain), cases[i].want);
        ck_assert_int_eq(picl__hawk_verify(cases[i].auth, k, strlen(k), cases[i].req, &fast), cases[i].want);
        picl__hmac_sha256_abort(kc);
        fast.mac_ctx = ctx;
    }
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c1), 3);
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c2), 3);
    /* one cache, both paths: a nonce recorded by one is a replay for the other */
    ck_assert_int_eq(picl__hawk_nonce_check_for(c1, "acct", "id1", "n-9", 1100, 1000), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_digests(c1, whod, idd, "n-9", 1100, 1000),
                     PICL_HAWK_ERROR_REPLAY);
    ck_assert_int_eq(picl__hawk_nonce_check_digests(c1, whod, idd, "n-10", 1100, 1000), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_for(c1, "acct", "id1", "n-10", 1100, 1000),
                     PICL_HAWK_ERROR_REPLAY);
    /* the same nonce under another id is another entry on both paths */
    uint8_t idd2[32];
    ck_assert_int_eq(picl__hawk_nonce_id_digest(idd2, "id2"), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_digests(c1, whod, idd2, "n-9", 1100, 1000), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_for(c1, "acct", "id2", "n-10", 1100, 1000), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_digests(c1, NULL, idd, "n-11", 1100, 1000),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_nonce_id_digest(idd2, NULL), PICL_ERROR_INVALID_ARGUMENT);
    picl__hawk_nonce_cache_free(c1);
    picl__hawk_nonce_cache_free(c2);
    picl__hmac_sha256_abort(ctx);
}
END_TEST

/* The share of an identity counts the same whichever path recorded its
 * entries: full is BUSY on both, and another identity is served. */
START_TEST(test_nonce_digests_share)
{
    picl_hawk_nonce_cache *c = NULL;
    uint8_t ida[32], idb[32], wa[32], wb[32];
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c, 64), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_cache_set_share(c, 4), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_id_digest(ida, "token-a"), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_id_digest(idb, "token-b"), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_identity_digest(wa, "uid:1"), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_identity_digest(wb, "uid:2"), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_for(c, "uid:1", "token-a", "1", 110, 100), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_digests(c, wa, ida, "2", 110, 100), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_for(c, "uid:1", "token-a2", "3", 110, 100), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_digests(c, wa, ida, "4", 110, 100), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_digests(c, wa, ida, "5", 110, 100), PICL_HAWK_ERROR_BUSY);
    ck_assert_int_eq(picl__hawk_nonce_check_for(c, "uid:1", "token-a", "5", 110, 100), PICL_HAWK_ERROR_BUSY);
    ck_assert_int_eq(picl__hawk_nonce_check_digests(c, wb, idb, "5", 110, 100), PICL_OK);
    ck_assert_int_eq(picl__hawk_nonce_check_for(c, "uid:2", "token-b", "6", 110, 100), PICL_OK);
    ck_assert_uint_eq(picl__hawk_nonce_cache_count(c), 6);
    /* once expired, the share is free again */
    ck_assert_int_eq(picl__hawk_nonce_check_digests(c, wa, ida, "5", 200, 111), PICL_OK);
    picl__hawk_nonce_cache_free(c);
}
END_TEST

START_TEST(test_client_header)
{
    picl_hawk_request req = {"GET", "/x", "h", 1, NULL, NULL, 0};
    char *h1 = NULL, *h2 = NULL;
    picl_hawk_auth a, b;
    ck_assert_int_eq(picl__hawk_client_header(&h1, "id", KEY, strlen(KEY), &req, 5, NULL, NULL), PICL_OK);
    ck_assert_int_eq(picl__hawk_client_header(&h2, "id", KEY, strlen(KEY), &req, 5, NULL, ""), PICL_OK);
    ck_assert_int_eq(picl__hawk_parse(&a, h1, strlen(h1)), PICL_OK);
    ck_assert_int_eq(picl__hawk_parse(&b, h2, strlen(h2)), PICL_OK);
    ck_assert_uint_eq(strlen(a.nonce), 12); /* random nonce */
    ck_assert_str_ne(a.nonce, b.nonce);
    ck_assert_int_eq(a.has_ext, 0);
    ck_assert_int_eq(b.has_ext, 0); /* empty ext is left out */
    ck_assert_int_eq(a.has_hash, 0);
    ck_assert(strncmp(h1, "Hawk id=\"id\", ts=\"5\", nonce=\"", 29) == 0);
    free(h1);
    free(h2);
    /* an empty body with a content type still gets a hash */
    req.content_type = "application/json";
    ck_assert_int_eq(picl__hawk_client_header(&h1, "id", KEY, strlen(KEY), &req, 5, "n", NULL), PICL_OK);
    ck_assert_int_eq(picl__hawk_parse(&a, h1, strlen(h1)), PICL_OK);
    ck_assert_int_eq(a.has_hash, 1);
    free(h1);
    req.content_type = NULL;
    /* values that cannot be quoted are refused */
    h1 = (char *)1;
    ck_assert_int_eq(picl__hawk_client_header(&h1, "i\"d", KEY, 3, &req, 5, "n", NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(h1);
    ck_assert_int_eq(picl__hawk_client_header(&h1, "", KEY, 3, &req, 5, "n", NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_client_header(&h1, "id", KEY, 3, &req, 5, "n\\", NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_client_header(&h1, "id", KEY, 3, &req, 5, "", NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_client_header(&h1, "id", KEY, 3, &req, 5, "n", "a\nb"),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__hawk_client_header(&h1, "id", KEY, 3, &req, -1, "n", NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    req.resource = "/x\r\n";
    ck_assert_int_eq(picl__hawk_client_header(&h1, "id", KEY, 3, &req, 5, "n", NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    req.resource = "/x";
    req.port = 65536;
    ck_assert_int_eq(picl__hawk_client_header(&h1, "id", KEY, 3, &req, 5, "n", NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(h1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hawk");
    TCase *tc = tcase_create("hawk");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_published_cases);
    tcase_add_test(tc, test_syncstorage_fixture);
    tcase_add_test(tc, test_payload_hash_content_type);
    tcase_add_test(tc, test_parse_bad);
    tcase_add_test(tc, test_parse_bad_bytes);
    tcase_add_test(tc, test_parse_caps);
    tcase_add_test(tc, test_parse_accepted_forms);
    tcase_add_test(tc, test_verify_fields);
    tcase_add_test(tc, test_verify_hash_policy);
    tcase_add_test(tc, test_verify_timestamp);
    tcase_add_test(tc, test_verify_replay);
    tcase_add_test(tc, test_nonce_cache_bounds);
    tcase_add_test(tc, test_nonce_cache_share);
    tcase_add_test(tc, test_nonce_cache_threads);
    tcase_add_test(tc, test_client_header);
    tcase_add_test(tc, test_mac_ctx_same_results);
    tcase_add_test(tc, test_nonce_digests_share);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
