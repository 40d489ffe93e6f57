/* test_records.c -- collection keys, records with kid, and the signed class
 * map (records.md sections 2-4), including a hostile server's moves. */
#include "testutil.h"
#include "client/records.h"
#include "crypto/codec.h"

#include <stdlib.h>
#include <string.h>

/* kA = 20..3f and kB of the PiCL vectors (picl_srp_era.txt). */
static uint8_t kA[32], kB[32];

static void setup(void)
{
    tu_nss_setup();
    for (int i = 0; i < 32; i++)
        kA[i] = (uint8_t)(0x20 + i);
    ck_assert_int_eq(picl__hex_decode_exact(kB, 32, "2ee722fdd8ccaa721bdeb2d1b76560efef705b04349d9357c3e592cf4906e075"),
                     PICL_OK);
}

START_TEST(test_collection_keys)
{
    /* expected values computed independently with Python's hmac/hashlib
     * (RFC 5869 written out in a few lines) for these inputs */
    picl_keypair k;
    ck_assert_int_eq(picl__collection_keys(&k, kA, "bookmarks", 1), PICL_OK);
    tu_assert_hex(k.enc, 32, "d9b75d70051a8a1bdea67b83425ed7400186394db70001e0a5bfb93c2d76f6ce");
    tu_assert_hex(k.hmac, 32, "3736c492e826cd991c179b81ae6a17d52bc1e3dd1f8dbd5bccf8d8475829814f");
    ck_assert_int_eq(picl__collection_keys(&k, kB, "passwords", 2), PICL_OK);
    tu_assert_hex(k.enc, 32, "c5223926d9ed31c27dd65563d018f365ca9398a0789a7b4b4cd736d82001bfc1");
    tu_assert_hex(k.hmac, 32, "429780ca2def557b86b1473f0a0f010b58796e543e1679cb5091c13791bb58d5");
    ck_assert_int_eq(picl__collection_keys(&k, kA, "bad/name", 1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__collection_keys(&k, kA, "", 1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__collection_keys(&k, kA, "abcdefghijklmnopqrstuvwxyz0123456", 1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__collection_keys(&k, kA, "bookmarks", 0), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_kid)
{
    picl_class_entry e;
    ck_assert_int_eq(picl__kid_parse("B:12", &e), PICL_OK);
    ck_assert(e.cls == 'B' && e.generation == 12);
    static const char *bad[] = {"", "A", "A:", "C:1", "a:1", "A:0", "A:01", "A:-1", "A: 1", "A:1x",
                                "A:2147483648", "A:99999999999", "AB:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(picl__kid_parse(bad[i], &e) == PICL_ERROR_ENCODING, "accepted %s", bad[i]);
    char s[16];
    picl_class_entry f = {'A', 7};
    picl__kid_format(s, &f);
    ck_assert_str_eq(s, "A:7");
}
END_TEST

static json_t *sample(const char *id)
{
    return json_pack("{s:s, s:s, s:s}", "id", id, "hostname", "https://example.org", "password", "hunter2");
}

START_TEST(test_record_roundtrip_and_kid_rules)
{
    picl_keypair b1, b2, a1;
    ck_assert_int_eq(picl__collection_keys(&b1, kB, "passwords", 1), PICL_OK);
    ck_assert_int_eq(picl__collection_keys(&b2, kB, "passwords", 2), PICL_OK);
    ck_assert_int_eq(picl__collection_keys(&a1, kA, "passwords", 1), PICL_OK);
    picl_class_entry B1 = {'B', 1}, B2 = {'B', 2}, A1 = {'A', 1};
    json_t *rec = sample("abcdefghijkl");
    char *payload;
    ck_assert_int_eq(picl__record_encrypt(&payload, rec, &b1, &B1), PICL_OK);
    json_t *p = json_loads(payload, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:1");
    ck_assert_uint_eq(json_object_size(p), 4);
    json_decref(p);
    picl_class_entry kid;
    ck_assert_int_eq(picl__record_kid(payload, &kid), PICL_OK);
    ck_assert(kid.cls == 'B' && kid.generation == 1);

    json_t *out;
    ck_assert_int_eq(picl__record_decrypt(&out, payload, "abcdefghijkl", &b1, &B1, 0), PICL_OK);
    ck_assert(json_equal(out, rec));
    json_decref(out);
    /* the map says class A and no move: a class-B record is not read */
    ck_assert_int_eq(picl__record_decrypt(&out, payload, "abcdefghijkl", &a1, &A1, 0), PICL_ERROR_DECRYPT);
    ck_assert_ptr_null(out);
    /* another generation only while a move may be in progress */
    ck_assert_int_eq(picl__record_decrypt(&out, payload, "abcdefghijkl", &b1, &B2, 0), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(picl__record_decrypt(&out, payload, "abcdefghijkl", &b1, &B2, 1), PICL_OK);
    json_decref(out);
    char *p2;
    ck_assert_int_eq(picl__record_encrypt(&p2, rec, &b2, &B2), PICL_OK);
    ck_assert_int_eq(picl__record_decrypt(&out, p2, "abcdefghijkl", &b2, &B1, 0), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(picl__record_decrypt(&out, p2, "abcdefghijkl", &b2, &B1, 1), PICL_OK);
    json_decref(out);
    /* a class-B record in a class-A collection (stronger) is read during a
     * move; a class-A record in a class-B collection never is */
    picl_class_entry A2 = {'A', 2};
    ck_assert_int_eq(picl__record_decrypt(&out, p2, "abcdefghijkl", &b2, &A2, 1), PICL_OK);
    json_decref(out);
    char *pa;
    ck_assert_int_eq(picl__record_encrypt(&pa, rec, &a1, &A1), PICL_OK);
    ck_assert_int_eq(picl__record_decrypt(&out, pa, "abcdefghijkl", &a1, &B2, 1), PICL_ERROR_DECRYPT);
    ck_assert_ptr_null(out);
    free(pa);
    /* wrong keys for the kid */
    ck_assert_int_eq(picl__record_decrypt(&out, p2, "abcdefghijkl", &b1, &B2, 0), PICL_ERROR_DECRYPT);
    /* a server that swaps two records: the id inside does not match */
    ck_assert_int_eq(picl__record_decrypt(&out, payload, "mnopqrstuvwx", &b1, &B1, 0), PICL_ERROR_DECRYPT);
    /* a relabelled kid (B:1 -> B:2) is caught by the keys (MAC) */
    char *relabel = strdup(payload);
    char *kpos = strstr(relabel, "\"B:1\"");
    ck_assert_ptr_nonnull(kpos);
    kpos[3] = '2';
    ck_assert_int_eq(picl__record_decrypt(&out, relabel, "abcdefghijkl", &b2, &B2, 0), PICL_ERROR_DECRYPT);
    /* malformed payloads */
    static const char *bad[] = {"", "[]", "{}", "not json", "{\"kid\":\"B:1\"}",
                                "{\"ciphertext\":1,\"IV\":2,\"hmac\":3,\"kid\":\"B:1\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_eq(picl__record_decrypt(&out, bad[i], "abcdefghijkl", &b1, &B1, 0), PICL_ERROR_DECRYPT);
    /* a cleartext without an id cannot be encrypted */
    json_t *noid = json_pack("{s:s}", "x", "y");
    char *p3;
    ck_assert_int_eq(picl__record_encrypt(&p3, noid, &b1, &B1), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(noid);
    free(relabel);
    free(payload);
    free(p2);
    json_decref(rec);
}
END_TEST

START_TEST(test_classmap_sign_verify)
{
    picl_classmap m, v;
    ck_assert_int_eq(picl__classmap_defaults(&m, kB), PICL_OK);
    ck_assert_uint_eq(m.n, 3);
    ck_assert_int_eq(picl__classmap_get(&m, "passwords")->cls, 'B');
    ck_assert_int_eq(picl__classmap_get(&m, "bookmarks")->cls, 'A');
    ck_assert_int_eq(picl__classmap_get(&m, "history")->cls, 'A');
    ck_assert_ptr_null(picl__classmap_get(&m, "tabs"));
    char *payload;
    ck_assert_int_eq(picl__classmap_sign(&payload, &m, kB), PICL_OK);
    /* byte-exact: canonical JSON (sorted keys, compact) and its HMAC, both
     * computed independently with Python (json.dumps(sort_keys=True,
     * separators=(',', ':')), hmac, hashlib) */
    ck_assert_str_eq(payload,
                     "{\"collections\":{\"bookmarks\":{\"class\":\"A\",\"generation\":1},\"history\":{\"class\":\"A\","
                     "\"generation\":1},\"passwords\":{\"class\":\"B\",\"generation\":1}},"
                     "\"hmac\":\"09cffd9b1222d789fa729c0b90d6714b52eb600fe384b992af1de27ce1223c9b\","
                     "\"kB\":\"0408a4ee110e7691a73d99cf05275a4e\",\"version\":1}");
    ck_assert_int_eq(picl__classmap_verify(&v, payload, kB, 1), PICL_OK);
    ck_assert_uint_eq(v.version, 1);
    ck_assert_int_eq(picl__classmap_get(&v, "passwords")->cls, 'B');
    /* replay: we have seen version 2 already */
    ck_assert_int_eq(picl__classmap_verify(&v, payload, kB, 2), PICL_ERROR_CLASSMAP);
    ck_assert_uint_eq(v.n, 0);
    free(payload);
}
END_TEST

START_TEST(test_classmap_attacks)
{
    picl_classmap m, v;
    ck_assert_int_eq(picl__classmap_defaults(&m, kB), PICL_OK);
    m.version = 5;
    char *payload;
    ck_assert_int_eq(picl__classmap_sign(&payload, &m, kB), PICL_OK);
    /* a server rewrites passwords to class A to read them with kA */
    json_t *o = json_loads(payload, 0, NULL);
    json_object_set_new(json_object_get(json_object_get(o, "collections"), "passwords"), "class", json_string("A"));
    char *forged = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_int_eq(picl__classmap_verify(&v, forged, kB, 1), PICL_ERROR_CLASSMAP);
    free(forged);
    /* ... or bumps the version to force its copy over a newer one */
    json_object_set_new(json_object_get(json_object_get(o, "collections"), "passwords"), "class", json_string("B"));
    json_object_set_new(o, "version", json_integer(99));
    forged = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_int_eq(picl__classmap_verify(&v, forged, kB, 1), PICL_ERROR_CLASSMAP);
    free(forged);
    /* extra fields, wrong types */
    json_object_set_new(o, "version", json_integer(5));
    json_object_set_new(o, "extra", json_true());
    forged = json_dumps(o, JSON_COMPACT);
    ck_assert_int_eq(picl__classmap_verify(&v, forged, kB, 1), PICL_ERROR_CLASSMAP);
    free(forged);
    json_decref(o);
    static const char *bad[] = {"", "[]", "{}", "{\"version\":1}", "null"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_eq(picl__classmap_verify(&v, bad[i], kB, 1), PICL_ERROR_CLASSMAP);
    /* a map made under another kB: the password was reset elsewhere */
    uint8_t other[32];
    memset(other, 0x99, 32);
    ck_assert_int_eq(picl__classmap_verify(&v, payload, other, 1), PICL_ERROR_KEYS_CHANGED);
    /* the genuine map still verifies */
    ck_assert_int_eq(picl__classmap_verify(&v, payload, kB, 5), PICL_OK);
    ck_assert_uint_eq(v.version, 5);
    free(payload);
}
END_TEST

START_TEST(test_classmap_set_and_fingerprint)
{
    picl_classmap m;
    ck_assert_int_eq(picl__classmap_defaults(&m, kB), PICL_OK);
    picl_class_entry e = {'B', 2};
    ck_assert_int_eq(picl__classmap_set(&m, "bookmarks", &e), PICL_OK);
    ck_assert_uint_eq(m.n, 3);
    ck_assert_int_eq(picl__classmap_get(&m, "bookmarks")->generation, 2);
    ck_assert_int_eq(picl__classmap_set(&m, "tabs", &e), PICL_OK);
    ck_assert_uint_eq(m.n, 4);
    picl_class_entry bad = {'C', 1};
    ck_assert_int_eq(picl__classmap_set(&m, "tabs", &bad), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__classmap_set(&m, "a/b", &e), PICL_ERROR_INVALID_ARGUMENT);
    char fp[33];
    ck_assert_int_eq(picl__key_fingerprint(fp, kB), PICL_OK);
    ck_assert_str_eq(fp, "0408a4ee110e7691a73d99cf05275a4e");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("records");
    TCase *tc = tcase_create("records");
    tcase_add_checked_fixture(tc, setup, tu_nss_teardown);
    tcase_add_test(tc, test_collection_keys);
    tcase_add_test(tc, test_kid);
    tcase_add_test(tc, test_record_roundtrip_and_kid_rules);
    tcase_add_test(tc, test_classmap_sign_verify);
    tcase_add_test(tc, test_classmap_attacks);
    tcase_add_test(tc, test_classmap_set_and_fingerprint);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
