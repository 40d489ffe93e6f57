/* SPDX-License-Identifier: MPL-2.0 */
/* test_tokenlib.c -- storage.md section 2 tokenlib tokens: the
 * syncstorage-rs fixture (token, derived key, Hawk MAC), a fixed-input token
 * computed independently with Python, round trip, tampering, wrong secret,
 * expiry and grace, and the parser's bad cases with their exact statuses. */
#include "testutil.h"
#include "protocol/tokenlib.h"
#include "protocol/hawk.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/kdf.h"

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

static picl_status parse(picl_tokenlib_payload *p, const char *secret, const char *token, int64_t now,
                         int64_t grace)
{
    memset(p, 0xAA, sizeof *p);
    picl_status st =
        picl__tokenlib_parse(p, (const uint8_t *)secret, strlen(secret), token, strlen(token), now, grace);
    if (st != PICL_OK)
        expect_zero(p, sizeof *p);
    return st;
}

/* base64url(payload || HMAC(signingKey, payload)): a correctly signed token
 * around any payload bytes, to reach the JSON checks.  Caller frees. */
static char *sign(const char *secret, const void *payload, size_t len)
{
    uint8_t skey[32];
    uint8_t *raw = malloc(len + 32);
    const char *info = "services.mozilla.com/tokenlib/v1/signing";
    ck_assert_int_eq(picl__hkdf_sha256(skey, 32, secret, strlen(secret), NULL, 0, info, strlen(info)),
                     PICL_OK);
    memcpy(raw, payload, len);
    ck_assert_int_eq(picl__hmac_sha256(raw + len, skey, 32, raw, len), PICL_OK);
    char *t = picl__base64url_encode_alloc(raw, len + 32, 1);
    ck_assert_ptr_nonnull(t);
    free(raw);
    return t;
}

/* The published fixture: parse with the master secret, check every field,
 * derive the Hawk key and reproduce both published Hawk MACs with it. */
START_TEST(test_syncstorage_fixture)
{
    json_t *doc = tu_json_load("hawk_vectors.json");
    json_t *fx = json_object_get(doc, "syncstorage_rs_auth_fixture");
    json_t *want = json_object_get(fx, "expected_payload");
    const char *secret = jstr(fx, "master_secret"), *id = jstr(fx, "hawk_id");
    int64_t ts = json_integer_value(json_object_get(fx, "ts"));
    picl_tokenlib_payload p;
    char key[PICL_TOKENLIB_KEY_CHARS + 1], mac[PICL_HAWK_B64_BYTES + 1], tsbuf[24];

    ck_assert_int_eq(parse(&p, secret, id, ts, 0), PICL_OK);
    ck_assert_int_eq(p.uid, json_integer_value(json_object_get(want, "uid")));
    ck_assert_str_eq(p.node, jstr(want, "node"));
    ck_assert_int_eq(p.expires, (int64_t)json_number_value(json_object_get(want, "expires")));
    ck_assert_int_eq(p.expires, 1884968439);
    ck_assert_str_eq(p.fxa_uid, jstr(want, "fxa_uid"));
    ck_assert_str_eq(p.fxa_kid, jstr(want, "fxa_kid"));
    ck_assert_str_eq(p.hashed_fxa_uid, jstr(want, "hashed_fxa_uid"));
    ck_assert_str_eq(p.hashed_device_id, jstr(want, "hashed_device_id"));
    ck_assert_str_eq(p.salt, jstr(want, "salt"));

    ck_assert_int_eq(
        picl__tokenlib_derive_key(key, (const uint8_t *)secret, strlen(secret), id, strlen(id), p.salt),
        PICL_OK);
    ck_assert_uint_eq(strlen(key), PICL_TOKENLIB_KEY_CHARS);
    const char *sfx[2] = {"", "2"};
    for (int i = 0; i < 2; i++) {
        char km[16], kp[16], kt[16], kn[16], kmac[16];
        snprintf(km, sizeof km, "method%s", sfx[i]);
        snprintf(kp, sizeof kp, "path%s", sfx[i]);
        snprintf(kt, sizeof kt, "ts%s", sfx[i]);
        snprintf(kn, sizeof kn, "nonce%s", sfx[i]);
        snprintf(kmac, sizeof kmac, "mac%s", sfx[i]);
        picl_hawk_request req = {jstr(fx, km),
                                 jstr(fx, kp),
                                 jstr(fx, "host"),
                                 (unsigned)json_integer_value(json_object_get(fx, "port")),
                                 NULL,
                                 NULL,
                                 0};
        snprintf(tsbuf, sizeof tsbuf, "%lld", (long long)json_integer_value(json_object_get(fx, kt)));
        ck_assert_int_eq(picl__hawk_mac(mac, key, strlen(key), tsbuf, jstr(fx, kn), &req, NULL, NULL),
                         PICL_OK);
        ck_assert_str_eq(mac, jstr(fx, kmac));
    }
    /* the fixture is valid until its expiry, not one second after */
    ck_assert_int_eq(parse(&p, secret, id, 1884968439, 0), PICL_OK);
    ck_assert_int_eq(parse(&p, secret, id, 1884968440, 0), PICL_ERROR_TOKEN);
    ck_assert_int_eq(parse(&p, "Ted Koppel is a robot!", id, ts, 0), PICL_ERROR_DECRYPT);
    json_decref(doc);
}
END_TEST

/*
 * A token minted here for fixed inputs equals the one Python computes.
 * Expected values produced with python3 (hmac, hashlib, base64, json):
 *   secret  = b"picl tokenlib test secret, 32+ bytes long"
 *   payload = json.dumps({"uid": 42, "node": "https://storage.example.com:8443",
 *             "expires": 1700000000, "fxa_uid": "0123456789abcdef0123456789abcdef",
 *             "fxa_kid": "1700000000000-ASNFZ4mrze8", "hashed_fxa_uid": "5a" * 32,
 *             "hashed_device_id": "6b" * 32, "salt": "a1b2c3"}).encode()
 *   hkdf(ikm, salt, info, L): RFC 5869 written out with hmac.new(..., hashlib.sha256),
 *             empty salt = 32 zero bytes
 *   sk    = hkdf(secret, None, b"services.mozilla.com/tokenlib/v1/signing", 32)
 *   token = base64.urlsafe_b64encode(payload + hmac.new(sk, payload, sha256).digest())
 *   key   = base64.urlsafe_b64encode(hkdf(secret, b"a1b2c3",
 *             b"services.mozilla.com/tokenlib/v1/derive/" + token, 32))
 */
static const char PY_SECRET[] = "picl tokenlib test secret, 32+ bytes long";
static const char PY_TOKEN[] =
    "eyJ1aWQiOiA0MiwgIm5vZGUiOiAiaHR0cHM6Ly9zdG9yYWdlLmV4YW1wbGUuY29tOjg0NDMiLCAiZXhwaXJlcyI6IDE3"
    "MDAwMDAwMDAsICJmeGFfdWlkIjogIjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVmIiwgImZ4YV9raWQiOiAi"
    "MTcwMDAwMDAwMDAwMC1BU05GWjRtcnplOCIsICJoYXNoZWRfZnhhX3VpZCI6ICI1YTVhNWE1YTVhNWE1YTVhNWE1YTVh"
    "NWE1YTVhNWE1YTVhNWE1YTVhNWE1YTVhNWE1YTVhNWE1YTVhNWE1YTVhIiwgImhhc2hlZF9kZXZpY2VfaWQiOiAiNmI2"
    "YjZiNmI2YjZiNmI2YjZiNmI2YjZiNmI2YjZiNmI2YjZiNmI2YjZiNmI2YjZiNmI2YjZiNmI2YjZiNmI2YiIsICJzYWx0"
    "IjogImExYjJjMyJ9JicrTntGtfuS6ryqGWQC-GvQ5fB6D8DQ6QgQlJneBcU=";
static const char PY_KEY[] = "21cPRvRahB8xbW1v510JX7-UAg-JaCTTKGuK8Isrd4E=";

static void fixed_payload(picl_tokenlib_payload *p)
{
    memset(p, 0, sizeof *p);
    p->uid = 42;
    snprintf(p->node, sizeof p->node, "https://storage.example.com:8443");
    p->expires = 1700000000;
    snprintf(p->fxa_uid, sizeof p->fxa_uid, "0123456789abcdef0123456789abcdef");
    snprintf(p->fxa_kid, sizeof p->fxa_kid, "1700000000000-ASNFZ4mrze8");
    memset(p->hashed_fxa_uid, 0, sizeof p->hashed_fxa_uid);
    for (int i = 0; i < 64; i++) {
        p->hashed_fxa_uid[i] = i % 2 ? 'a' : '5';
        p->hashed_device_id[i] = i % 2 ? 'b' : '6';
    }
    snprintf(p->salt, sizeof p->salt, "a1b2c3");
}

START_TEST(test_fixed_python)
{
    picl_tokenlib_payload p, q;
    char *token = NULL, *key = NULL;
    fixed_payload(&p);
    ck_assert_int_eq(picl__tokenlib_mint(&token, &key, (const uint8_t *)PY_SECRET, strlen(PY_SECRET), &p),
                     PICL_OK);
    ck_assert_str_eq(token, PY_TOKEN);
    ck_assert_str_eq(key, PY_KEY);
    ck_assert_int_eq(parse(&q, PY_SECRET, token, 1700000000, 0), PICL_OK);
    ck_assert_mem_eq(&p, &q, sizeof p);
    free(token);
    free(key);
}
END_TEST

START_TEST(test_round_trip_random_salt)
{
    picl_tokenlib_payload p, q;
    char *t1 = NULL, *k1 = NULL, *t2 = NULL, *k2 = NULL;
    char key[PICL_TOKENLIB_KEY_CHARS + 1];
    fixed_payload(&p);
    p.salt[0] = 0;
    ck_assert_int_eq(picl__tokenlib_mint(&t1, &k1, (const uint8_t *)PY_SECRET, strlen(PY_SECRET), &p),
                     PICL_OK);
    ck_assert_int_eq(picl__tokenlib_mint(&t2, &k2, (const uint8_t *)PY_SECRET, strlen(PY_SECRET), &p),
                     PICL_OK);
    ck_assert_str_ne(t1, t2);
    ck_assert_str_ne(k1, k2);
    ck_assert_int_eq(parse(&q, PY_SECRET, t1, 0, 0), PICL_OK);
    ck_assert_uint_eq(strlen(q.salt), 6);
    ck_assert_uint_eq(strspn(q.salt, "0123456789abcdef"), 6);
    ck_assert_int_eq(q.uid, 42);
    ck_assert_str_eq(q.node, p.node);
    ck_assert_int_eq(
        picl__tokenlib_derive_key(key, (const uint8_t *)PY_SECRET, strlen(PY_SECRET), t1, strlen(t1), q.salt),
        PICL_OK);
    ck_assert_str_eq(key, k1);
    /* the unpadded form of the same token is the same token */
    char *unpadded = strdup(t1);
    size_t n = strlen(unpadded);
    while (n && unpadded[n - 1] == '=')
        unpadded[--n] = 0;
    ck_assert_int_eq(parse(&q, PY_SECRET, unpadded, 0, 0), PICL_OK);
    free(unpadded);
    free(t1);
    free(k1);
    free(t2);
    free(k2);
}
END_TEST

/* Every bit position of every decoded byte (payload and MAC) flipped, and
 * the token re-encoded validly: always a bad signature, output zeroed. */
START_TEST(test_tamper_every_byte)
{
    uint8_t raw[2048];
    size_t n = 0;
    picl_tokenlib_payload q;
    ck_assert_int_eq(picl__base64url_decode(raw, sizeof raw, &n, PY_TOKEN, strlen(PY_TOKEN)), PICL_OK);
    ck_assert_uint_gt(n, 300);
    for (size_t i = 0; i < n; i++) {
        raw[i] ^= (uint8_t)(1u << (i % 8));
        char *t = picl__base64url_encode_alloc(raw, n, 1);
        ck_assert_int_eq(parse(&q, PY_SECRET, t, 0, 0), PICL_ERROR_DECRYPT);
        free(t);
        raw[i] ^= (uint8_t)(1u << (i % 8));
    }
    /* truncated and extended */
    char *t = picl__base64url_encode_alloc(raw, n - 1, 1);
    ck_assert_int_eq(parse(&q, PY_SECRET, t, 0, 0), PICL_ERROR_DECRYPT);
    free(t);
    raw[n] = 0;
    t = picl__base64url_encode_alloc(raw, n + 1, 1);
    ck_assert_int_eq(parse(&q, PY_SECRET, t, 0, 0), PICL_ERROR_DECRYPT);
    free(t);
    /* wrong secrets */
    ck_assert_int_eq(parse(&q, "picl tokenlib test secret, 32+ bytes lonG", PY_TOKEN, 0, 0),
                     PICL_ERROR_DECRYPT);
    ck_assert_int_eq(parse(&q, "x", PY_TOKEN, 0, 0), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(parse(&q, PY_SECRET, PY_TOKEN, 0, 0), PICL_OK);
}
END_TEST

START_TEST(test_expiry_and_grace)
{
    picl_tokenlib_payload q;
    ck_assert_int_eq(parse(&q, PY_SECRET, PY_TOKEN, 0, 0), PICL_OK);
    ck_assert_int_eq(parse(&q, PY_SECRET, PY_TOKEN, 1700000000, 0), PICL_OK);
    ck_assert_int_eq(parse(&q, PY_SECRET, PY_TOKEN, 1700000001, 0), PICL_ERROR_TOKEN);
    ck_assert_int_eq(parse(&q, PY_SECRET, PY_TOKEN, 1700000300, 300), PICL_OK);
    ck_assert_int_eq(parse(&q, PY_SECRET, PY_TOKEN, 1700000301, 300), PICL_ERROR_TOKEN);
    ck_assert_int_eq(parse(&q, PY_SECRET, PY_TOKEN, INT64_MAX, 300), PICL_ERROR_TOKEN);
    ck_assert_int_eq(parse(&q, PY_SECRET, PY_TOKEN, INT64_MIN, 0), PICL_OK);
    ck_assert_int_eq(parse(&q, PY_SECRET, PY_TOKEN, 0, -1), PICL_ERROR_INVALID_ARGUMENT);
    /* a float expires (what Python tokenlib writes) is floored */
    const char *js = "{\"uid\": 7, \"node\": \"n\", \"expires\": 1000.75, \"fxa_uid\": \"u\", "
                     "\"fxa_kid\": \"k\", \"hashed_fxa_uid\": \"h\", \"hashed_device_id\": \"d\", "
                     "\"salt\": \"abcdef\"}";
    char *t = sign(PY_SECRET, js, strlen(js));
    ck_assert_int_eq(parse(&q, PY_SECRET, t, 1000, 0), PICL_OK);
    ck_assert_int_eq(q.expires, 1000);
    ck_assert_int_eq(parse(&q, PY_SECRET, t, 1001, 0), PICL_ERROR_TOKEN);
    free(t);
}
END_TEST

/* Token text: caps and strict base64url. */
START_TEST(test_bad_token_text)
{
    picl_tokenlib_payload q;
    char *big = malloc(PICL_TOKENLIB_MAX_TOKEN + 2);
    memset(big, 'A', PICL_TOKENLIB_MAX_TOKEN + 1);
    big[PICL_TOKENLIB_MAX_TOKEN + 1] = 0;
    ck_assert_int_eq(parse(&q, PY_SECRET, big, 0, 0), PICL_ERROR_TOO_LARGE);
    big[PICL_TOKENLIB_MAX_TOKEN] = 0; /* at the cap: decodes, then a bad MAC */
    ck_assert_int_eq(parse(&q, PY_SECRET, big, 0, 0), PICL_ERROR_DECRYPT);
    free(big);

    ck_assert_int_eq(parse(&q, PY_SECRET, "", 0, 0), PICL_ERROR_ENCODING);
    /* exactly 32 bytes: a MAC and no payload */
    ck_assert_int_eq(parse(&q, PY_SECRET, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", 0, 0),
                     PICL_ERROR_ENCODING);
    /* 33 bytes: a 1-byte payload, not signed */
    ck_assert_int_eq(parse(&q, PY_SECRET, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 0, 0),
                     PICL_ERROR_DECRYPT);

    char *t = strdup(PY_TOKEN);
    size_t n = strlen(t);
    static const char bad_chars[] = {'+', '/', ' ', '\n', '.', '*', '\0'};
    for (size_t i = 0; i < sizeof bad_chars; i++) {
        char saved = t[10];
        t[10] = bad_chars[i];
        memset(&q, 0xAA, sizeof q);
        ck_assert_int_eq(picl__tokenlib_parse(&q, (const uint8_t *)PY_SECRET, strlen(PY_SECRET), t, n, 0, 0),
                         PICL_ERROR_ENCODING);
        expect_zero(&q, sizeof q);
        t[10] = saved;
    }
    /* padding: partial, too much, in the middle */
    char *u = malloc(n + 3);
    memcpy(u, PY_TOKEN, n + 1);
    ck_assert_int_eq(u[n - 1], '=');
    ck_assert(u[n - 2] != '=');
    u[n] = '=';
    u[n + 1] = 0; /* one '=' too many */
    ck_assert_int_eq(parse(&q, PY_SECRET, u, 0, 0), PICL_ERROR_ENCODING);
    memcpy(u, PY_TOKEN, n + 1);
    u[20] = '=';
    ck_assert_int_eq(parse(&q, PY_SECRET, u, 0, 0), PICL_ERROR_ENCODING);
    memcpy(u, PY_TOKEN, n + 1);
    u[n - 1] = 0;
    u[n - 2] = 'V'; /* non-zero pad bits before the (now missing) padding */
    ck_assert_int_eq(parse(&q, PY_SECRET, u, 0, 0), PICL_ERROR_ENCODING);
    free(u);
    free(t);
}
END_TEST

typedef struct bad_json {
    const char *payload;
    picl_status want;
} bad_json;

#define GOOD_TAIL                                                                                            \
    "\"fxa_uid\": \"u\", \"fxa_kid\": \"k\", \"hashed_fxa_uid\": \"h\", "                                    \
    "\"hashed_device_id\": \"d\", \"salt\": \"abcdef\""

static const bad_json bad_payloads[] = {
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}", PICL_OK},
    {"not json", PICL_ERROR_ENCODING},
    {"", PICL_ERROR_ENCODING},
    {"null", PICL_ERROR_ENCODING},
    {"[]", PICL_ERROR_ENCODING},
    {"\"str\"", PICL_ERROR_ENCODING},
    {"{}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "} x", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, " GOOD_TAIL, PICL_ERROR_ENCODING},
    /* missing fields */
    {"{\"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"fxa_uid\": \"u\", \"fxa_kid\": \"k\", "
     "\"hashed_fxa_uid\": \"h\", \"hashed_device_id\": \"d\"}",
     PICL_ERROR_ENCODING},
    /* duplicate keys are refused; keys we do not know are ignored, whatever
     * their value (Mozilla's tokenservers add tokenserver_origin) */
    {"{\"uid\": 1, \"uid\": 2, \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"admin\": true, " GOOD_TAIL "}", PICL_OK},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"tokenserver_origin\": \"rust\", " GOOD_TAIL "}",
     PICL_OK},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"x\": {\"y\": [1, null]}, " GOOD_TAIL "}", PICL_OK},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"x\": 1, \"x\": 2, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    /* Python's tokenservers write expires = time.time() + duration */
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5.75, " GOOD_TAIL "}", PICL_OK},
    /* types and ranges */
    {"{\"uid\": \"1\", \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": -1, \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1.0, \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 9007199254740993, \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 99999999999999999999999, \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}",
     PICL_ERROR_ENCODING},
    {"{\"uid\": null, \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": 5, \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": {\"a\": 1}, \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": [\"n\"], \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\\u0001\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\\u0000x\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"caf\\u00e9\", \"expires\": 5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": \"5\", " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": -5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": -0.5, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 1e300, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 1e999, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 253402300800, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 253402300799, " GOOD_TAIL "}", PICL_OK},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": true, " GOOD_TAIL "}", PICL_ERROR_ENCODING},
    /* salt: 6 lowercase hex characters */
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"fxa_uid\": \"u\", \"fxa_kid\": \"k\", "
     "\"hashed_fxa_uid\": \"h\", \"hashed_device_id\": \"d\", \"salt\": \"abcde\"}",
     PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"fxa_uid\": \"u\", \"fxa_kid\": \"k\", "
     "\"hashed_fxa_uid\": \"h\", \"hashed_device_id\": \"d\", \"salt\": \"abcdef0\"}",
     PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"fxa_uid\": \"u\", \"fxa_kid\": \"k\", "
     "\"hashed_fxa_uid\": \"h\", \"hashed_device_id\": \"d\", \"salt\": \"ABCDEF\"}",
     PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"fxa_uid\": \"u\", \"fxa_kid\": \"k\", "
     "\"hashed_fxa_uid\": \"h\", \"hashed_device_id\": \"d\", \"salt\": \"abcdeg\"}",
     PICL_ERROR_ENCODING},
    {"{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"fxa_uid\": \"u\", \"fxa_kid\": \"k\", "
     "\"hashed_fxa_uid\": \"h\", \"hashed_device_id\": \"d\", \"salt\": 123456}",
     PICL_ERROR_ENCODING},
};

START_TEST(test_bad_payloads)
{
    picl_tokenlib_payload q;
    for (size_t i = 0; i < sizeof bad_payloads / sizeof bad_payloads[0]; i++) {
        char *t = sign(PY_SECRET, bad_payloads[i].payload, strlen(bad_payloads[i].payload));
        picl_status st = parse(&q, PY_SECRET, t, 0, 0);
        ck_assert_msg(st == bad_payloads[i].want, "payload %s: got %d want %d", bad_payloads[i].payload, st,
                      bad_payloads[i].want);
        free(t);
    }
    /* a NUL byte inside the JSON text */
    const char js[] = "{\"uid\": 1,\0 \"node\": \"n\", \"expires\": 5, " GOOD_TAIL "}";
    char *t = sign(PY_SECRET, js, sizeof js - 1);
    ck_assert_int_eq(parse(&q, PY_SECRET, t, 0, 0), PICL_ERROR_ENCODING);
    free(t);
}
END_TEST

/* Field caps: at the cap accepted, one over refused, in both directions. */
START_TEST(test_field_caps)
{
    picl_tokenlib_payload p, q;
    char *token = NULL, *key = NULL;
    char js[2048];
    char node[PICL_TOKENLIB_MAX_NODE + 2];

    memset(node, 'n', sizeof node - 1);
    node[PICL_TOKENLIB_MAX_NODE] = 0;
    snprintf(js, sizeof js, "{\"uid\": 1, \"node\": \"%s\", \"expires\": 5, " GOOD_TAIL "}", node);
    char *t = sign(PY_SECRET, js, strlen(js));
    ck_assert_int_eq(parse(&q, PY_SECRET, t, 0, 0), PICL_OK);
    ck_assert_uint_eq(strlen(q.node), PICL_TOKENLIB_MAX_NODE);
    free(t);
    node[PICL_TOKENLIB_MAX_NODE] = 'n';
    node[PICL_TOKENLIB_MAX_NODE + 1] = 0;
    snprintf(js, sizeof js, "{\"uid\": 1, \"node\": \"%s\", \"expires\": 5, " GOOD_TAIL "}", node);
    t = sign(PY_SECRET, js, strlen(js));
    ck_assert_int_eq(parse(&q, PY_SECRET, t, 0, 0), PICL_ERROR_ENCODING);
    free(t);

    char id[PICL_TOKENLIB_MAX_ID + 2];
    memset(id, 'f', sizeof id - 1);
    id[PICL_TOKENLIB_MAX_ID + 1] = 0;
    snprintf(
        js, sizeof js,
        "{\"uid\": 1, \"node\": \"n\", \"expires\": 5, \"fxa_uid\": \"%s\", "
        "\"fxa_kid\": \"k\", \"hashed_fxa_uid\": \"h\", \"hashed_device_id\": \"d\", \"salt\": \"abcdef\"}",
        id);
    t = sign(PY_SECRET, js, strlen(js));
    ck_assert_int_eq(parse(&q, PY_SECRET, t, 0, 0), PICL_ERROR_ENCODING);
    free(t);

    /* mint: the largest payload fits the token cap */
    fixed_payload(&p);
    memset(p.node, 'n', PICL_TOKENLIB_MAX_NODE);
    memset(p.fxa_uid, 'u', PICL_TOKENLIB_MAX_ID);
    memset(p.fxa_kid, 'k', PICL_TOKENLIB_MAX_ID);
    memset(p.hashed_fxa_uid, 'h', PICL_TOKENLIB_MAX_ID);
    memset(p.hashed_device_id, 'd', PICL_TOKENLIB_MAX_ID);
    p.uid = (int64_t)1 << 53;
    p.expires = PICL_TOKENLIB_MAX_EXPIRES;
    ck_assert_int_eq(picl__tokenlib_mint(&token, &key, (const uint8_t *)PY_SECRET, strlen(PY_SECRET), &p),
                     PICL_OK);
    ck_assert_uint_le(strlen(token), PICL_TOKENLIB_MAX_TOKEN);
    ck_assert_int_eq(parse(&q, PY_SECRET, token, 0, 0), PICL_OK);
    ck_assert_mem_eq(&p, &q, sizeof p);
    free(token);
    free(key);
}
END_TEST

START_TEST(test_mint_bad_arguments)
{
    picl_tokenlib_payload p, base;
    char *token = (char *)1, *key = (char *)1;
    const uint8_t *s = (const uint8_t *)PY_SECRET;
    size_t sl = strlen(PY_SECRET);
    fixed_payload(&base);
#define BAD(mutate)                                                                                          \
    do {                                                                                                     \
        p = base;                                                                                            \
        mutate;                                                                                              \
        ck_assert_int_eq(picl__tokenlib_mint(&token, &key, s, sl, &p), PICL_ERROR_INVALID_ARGUMENT);         \
        ck_assert_ptr_null(token);                                                                           \
        ck_assert_ptr_null(key);                                                                             \
    } while (0)
    BAD(p.uid = -1);
    BAD(p.uid = ((int64_t)1 << 53) + 1);
    BAD(p.expires = -1);
    BAD(p.expires = PICL_TOKENLIB_MAX_EXPIRES + 1);
    BAD(p.node[3] = '\n');
    BAD(p.fxa_kid[0] = (char)0xc3);
    BAD(memcpy(p.salt, "ABCDEF", 7));
    BAD(memcpy(p.salt, "abc", 4));
    BAD(memset(p.hashed_device_id, 'x', sizeof p.hashed_device_id));
    p = base;
    ck_assert_int_eq(picl__tokenlib_mint(&token, &key, s, 0, &p), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__tokenlib_mint(&token, &key, NULL, sl, &p), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__tokenlib_mint(&token, &key, s, sl, NULL), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__tokenlib_mint(NULL, &key, s, sl, &p), PICL_ERROR_INVALID_ARGUMENT);
#undef BAD
    picl_tokenlib_payload q;
    ck_assert_int_eq(picl__tokenlib_parse(NULL, s, sl, PY_TOKEN, strlen(PY_TOKEN), 0, 0),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__tokenlib_parse(&q, s, 0, PY_TOKEN, strlen(PY_TOKEN), 0, 0),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__tokenlib_parse(&q, s, sl, NULL, 0, 0, 0), PICL_ERROR_INVALID_ARGUMENT);
    char k[PICL_TOKENLIB_KEY_CHARS + 1];
    ck_assert_int_eq(picl__tokenlib_derive_key(k, s, sl, PY_TOKEN, 0, "abcdef"), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__tokenlib_derive_key(k, s, sl, PY_TOKEN, PICL_TOKENLIB_MAX_TOKEN + 1, "abcdef"),
                     PICL_ERROR_TOO_LARGE);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tokenlib");
    TCase *tc = tcase_create("tokenlib");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_syncstorage_fixture);
    tcase_add_test(tc, test_fixed_python);
    tcase_add_test(tc, test_round_trip_random_salt);
    tcase_add_test(tc, test_tamper_every_byte);
    tcase_add_test(tc, test_expiry_and_grace);
    tcase_add_test(tc, test_bad_token_text);
    tcase_add_test(tc, test_bad_payloads);
    tcase_add_test(tc, test_field_caps);
    tcase_add_test(tc, test_mint_bad_arguments);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
