/* SPDX-License-Identifier: MPL-2.0 */
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
    ck_assert_int_eq(
        picl__hex_decode_exact(kB, 32, "2ee722fdd8ccaa721bdeb2d1b76560efef705b04349d9357c3e592cf4906e075"),
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
    ck_assert_int_eq(picl__collection_keys(&k, kA, "abcdefghijklmnopqrstuvwxyz0123456", 1),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__collection_keys(&k, kA, "bookmarks", 0), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_kid)
{
    picl_class_entry e;
    ck_assert_int_eq(picl__kid_parse("B:12", &e), PICL_OK);
    ck_assert(e.cls == 'B' && e.generation == 12);
    static const char *bad[] = {"",     "A",    "A:",   "C:1",          "a:1",           "A:0", "A:01",
                                "A:-1", "A: 1", "A:1x", "A:2147483648", "A:99999999999", "AB:1"};
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

#define ID "abcdefghijkl"

START_TEST(test_record_roundtrip_and_kid_rules)
{
    picl_keypair b1, b2, a1;
    ck_assert_int_eq(picl__collection_keys(&b1, kB, "passwords", 1), PICL_OK);
    ck_assert_int_eq(picl__collection_keys(&b2, kB, "passwords", 2), PICL_OK);
    ck_assert_int_eq(picl__collection_keys(&a1, kA, "passwords", 1), PICL_OK);
    picl_class_entry B1 = {'B', 1}, B2 = {'B', 2}, A1 = {'A', 1};
    json_t *rec = sample(ID);
    char *payload;
    ck_assert_int_eq(picl__record_encrypt(&payload, "passwords", rec, &b1, &B1), PICL_OK);
    json_t *p = json_loads(payload, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:1");
    ck_assert_uint_eq(json_object_size(p), 4);
    json_decref(p);
    picl_class_entry kid;
    ck_assert_int_eq(picl__record_kid(payload, &kid), PICL_OK);
    ck_assert(kid.cls == 'B' && kid.generation == 1);

    json_t *out;
    picl_record_fault why;
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, payload, &b1, &B1, 0, &why), PICL_OK);
    ck_assert_int_eq(why, PICL_RECORD_FAULT_NONE);
    ck_assert(json_equal(out, rec));
    json_decref(out);
    /* the map says class A and no move: a class-B record is not read */
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, payload, &a1, &A1, 0, &why),
                     PICL_ERROR_DECRYPT);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(why, PICL_RECORD_FAULT_KID);
    /* another generation only while a move may be in progress */
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, payload, &b1, &B2, 0, &why),
                     PICL_ERROR_DECRYPT);
    ck_assert_int_eq(why, PICL_RECORD_FAULT_KID);
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, payload, &b1, &B2, 1, NULL), PICL_OK);
    json_decref(out);
    char *p2;
    ck_assert_int_eq(picl__record_encrypt(&p2, "passwords", rec, &b2, &B2), PICL_OK);
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, p2, &b2, &B1, 0, NULL), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, p2, &b2, &B1, 1, NULL), PICL_OK);
    json_decref(out);
    /* a class-B record in a class-A collection (stronger) is read during a
     * move; a class-A record in a class-B collection never is */
    picl_class_entry A2 = {'A', 2};
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, p2, &b2, &A2, 1, NULL), PICL_OK);
    json_decref(out);
    char *pa;
    ck_assert_int_eq(picl__record_encrypt(&pa, "passwords", rec, &a1, &A1), PICL_OK);
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, pa, &a1, &B2, 1, &why), PICL_ERROR_DECRYPT);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(why, PICL_RECORD_FAULT_KID);
    free(pa);
    /* wrong keys for the kid */
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, p2, &b1, &B2, 0, &why), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(why, PICL_RECORD_FAULT_HMAC);
    /* a server that swaps two records or moves one to another collection:
     * the v2 MAC binds both */
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", "mnopqrstuvwx", payload, &b1, &B1, 0, &why),
                     PICL_ERROR_DECRYPT);
    ck_assert_int_eq(why, PICL_RECORD_FAULT_HMAC);
    ck_assert_int_eq(picl__record_decrypt(&out, "forms", ID, payload, &b1, &B1, 0, &why), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(why, PICL_RECORD_FAULT_HMAC);
    /* a relabelled kid (B:1 -> B:2), even with the right keys for B:2 */
    char *relabel = strdup(payload);
    char *kpos = strstr(relabel, "\"B:1\"");
    ck_assert_ptr_nonnull(kpos);
    kpos[3] = '2';
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, relabel, &b2, &B2, 0, &why),
                     PICL_ERROR_DECRYPT);
    ck_assert_int_eq(why, PICL_RECORD_FAULT_HMAC);
    ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, relabel, &b1, &B2, 0, &why),
                     PICL_ERROR_DECRYPT);
    /* malformed payloads */
    static const char *bad[] = {"",
                                "[]",
                                "{}",
                                "not json",
                                "{\"kid\":\"B:1\"}",
                                "{\"ciphertext\":1,\"IV\":2,\"hmac\":3,\"kid\":\"B:1\"}"};
    static const picl_record_fault badwhy[] = {PICL_RECORD_FAULT_NOT_JSON, PICL_RECORD_FAULT_NOT_JSON,
                                               PICL_RECORD_FAULT_KID,      PICL_RECORD_FAULT_NOT_JSON,
                                               PICL_RECORD_FAULT_HMAC,     PICL_RECORD_FAULT_HMAC};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(picl__record_decrypt(&out, "passwords", ID, bad[i], &b1, &B1, 0, &why),
                         PICL_ERROR_DECRYPT);
        ck_assert_msg(why == badwhy[i], "%s: fault %d", bad[i], why);
    }
    /* a cleartext without an id cannot be encrypted, nor one for an invalid collection */
    json_t *noid = json_pack("{s:s}", "x", "y");
    char *p3;
    ck_assert_int_eq(picl__record_encrypt(&p3, "passwords", noid, &b1, &B1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__record_encrypt(&p3, "a/b", rec, &b1, &B1), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(noid);
    free(relabel);
    free(payload);
    free(p2);
    json_decref(rec);
    ck_assert_str_eq(picl__record_fault_text(PICL_RECORD_FAULT_HMAC), "hmac mismatch");
    ck_assert_str_eq(picl__record_fault_text(PICL_RECORD_FAULT_KID), "wrong kid");
    ck_assert_str_eq(picl__record_fault_text(PICL_RECORD_FAULT_ID), "id mismatch");
    ck_assert_str_eq(picl__record_fault_text(PICL_RECORD_FAULT_NOT_JSON), "not JSON");
}
END_TEST

/* The v2 vectors (tests/vectors/picl_record_v2.json, made with Python and
 * openssl): our collection keys are theirs, their payloads decrypt to their
 * cleartexts, and each single-field tamper is refused with the one error. */
static void replace_field(char **payload, const char *field, const char *value)
{
    json_t *o = json_loads(*payload, 0, NULL);
    ck_assert_ptr_nonnull(o);
    json_object_set_new(o, field, json_string(value));
    free(*payload);
    *payload = json_dumps(o, JSON_COMPACT);
    json_decref(o);
}

START_TEST(test_record_v2_vectors)
{
    json_t *j = tu_json_load("picl_record_v2.json");
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(j, "vectors"), i, v) {
        const char *coll = json_string_value(json_object_get(v, "collection"));
        const char *id = json_string_value(json_object_get(v, "bso_id"));
        const char *payload = json_string_value(json_object_get(v, "payload"));
        uint8_t kx[32];
        ck_assert_int_eq(picl__hex_decode_exact(kx, 32, json_string_value(json_object_get(v, "kX_hex"))),
                         PICL_OK);
        picl_class_entry e;
        ck_assert_int_eq(picl__kid_parse(json_string_value(json_object_get(v, "kid")), &e), PICL_OK);
        picl_keypair k;
        ck_assert_int_eq(picl__collection_keys(&k, kx, coll, e.generation), PICL_OK);
        tu_assert_hex(k.enc, 32, json_string_value(json_object_get(v, "enc_key_hex")));
        tu_assert_hex(k.hmac, 32, json_string_value(json_object_get(v, "hmac_key_hex")));
        json_t *out = NULL, *want = json_loads(json_string_value(json_object_get(v, "cleartext")), 0, NULL);
        picl_record_fault why;
        ck_assert_int_eq(picl__record_decrypt(&out, coll, id, payload, &k, &e, 0, &why), PICL_OK);
        ck_assert(json_equal(out, want));
        json_decref(out);
        /* the cleartext re-encrypted by us opens the same way (random IV) */
        char *mine;
        ck_assert_int_eq(picl__record_encrypt(&mine, coll, want, &k, &e), PICL_OK);
        ck_assert_int_eq(picl__record_decrypt(&out, coll, id, mine, &k, &e, 0, NULL), PICL_OK);
        ck_assert(json_equal(out, want));
        json_decref(out);
        free(mine);
        /* single-field tampers: IV, ciphertext, hmac, kid in the payload;
         * collection and id of the BSO */
        const char *iv = json_string_value(json_object_get(v, "iv_b64"));
        const char *ct = json_string_value(json_object_get(v, "ciphertext_b64"));
        const char *mac = json_string_value(json_object_get(v, "hmac_hex"));
        char iv2[32], ct2[512], mac2[65], kid2[16];
        snprintf(iv2, sizeof iv2, "%s", iv);
        iv2[0] = iv2[0] == 'A' ? 'B' : 'A'; /* another first cleartext block */
        snprintf(ct2, sizeof ct2, "%s", ct);
        ct2[0] = ct2[0] == 'A' ? 'B' : 'A';
        snprintf(mac2, sizeof mac2, "%s", mac);
        mac2[63] = mac2[63] == '0' ? '1' : '0';
        picl_class_entry other = {e.cls, e.generation + 1};
        picl__kid_format(kid2, &other);
        const char *fields[4][2] = {{"IV", iv2}, {"ciphertext", ct2}, {"hmac", mac2}, {"kid", kid2}};
        for (int f = 0; f < 4; f++) {
            char *t = strdup(payload);
            replace_field(&t, fields[f][0], fields[f][1]);
            out = (json_t *)1;
            /* allow_other: the kid tamper must be caught by the MAC, not the map */
            ck_assert_int_eq(picl__record_decrypt(&out, coll, id, t, &k, &e, 1, &why), PICL_ERROR_DECRYPT);
            ck_assert_ptr_null(out);
            ck_assert_msg(why == PICL_RECORD_FAULT_HMAC, "%s tamper: fault %d", fields[f][0], why);
            free(t);
        }
        ck_assert_int_eq(picl__record_decrypt(&out, "forms", id, payload, &k, &e, 0, &why),
                         PICL_ERROR_DECRYPT);
        ck_assert_int_eq(why, PICL_RECORD_FAULT_HMAC);
        char id2[64];
        snprintf(id2, sizeof id2, "x%s", id + 1); /* shares all but the first character */
        ck_assert_int_eq(picl__record_decrypt(&out, coll, id2, payload, &k, &e, 0, &why), PICL_ERROR_DECRYPT);
        ck_assert_int_eq(why, PICL_RECORD_FAULT_HMAC);
        json_decref(want);
    }
    json_decref(j);
}
END_TEST

/* A record whose MAC verifies but whose cleartext names another id, or is
 * not JSON (a device bug or a key holder's forgery): refused with its reason. */
START_TEST(test_record_valid_mac_bad_cleartext)
{
    picl_keypair k;
    ck_assert_int_eq(picl__collection_keys(&k, kA, "bookmarks", 1), PICL_OK);
    picl_class_entry A1 = {'A', 1};
    picl_mac_context ctx;
    picl__record_v2_context(&ctx, "bookmarks", ID, "A:1");
    const char *clears[2] = {"{\"id\":\"zzzzzzzzzzzz\"}", "{\"id\":"};
    picl_record_fault want[2] = {PICL_RECORD_FAULT_ID, PICL_RECORD_FAULT_NOT_JSON};
    for (int i = 0; i < 2; i++) {
        picl_sealed s;
        ck_assert_int_eq(picl__record_seal(&s, &k, &ctx, NULL, (const uint8_t *)clears[i], strlen(clears[i])),
                         PICL_OK);
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "ciphertext", s.ciphertext, "IV", s.iv, "hmac", s.hmac,
                              "kid", "A:1");
        char *payload = json_dumps(o, JSON_COMPACT);
        json_t *out;
        picl_record_fault why;
        ck_assert_int_eq(picl__record_decrypt(&out, "bookmarks", ID, payload, &k, &A1, 0, &why),
                         PICL_ERROR_DECRYPT);
        ck_assert_ptr_null(out);
        ck_assert_int_eq(why, want[i]);
        free(payload);
        json_decref(o);
        picl__sealed_free(&s);
    }
}
END_TEST

START_TEST(test_classmap_sign_verify)
{
    picl_classmap m, v;
    ck_assert_int_eq(picl__classmap_defaults(&m, kB), PICL_OK);
    ck_assert_uint_eq(m.n, 3);
    ck_assert_uint_eq(m.epoch, 1);
    ck_assert_int_eq(picl__classmap_get(&m, "passwords")->cls, 'B');
    ck_assert_int_eq(picl__classmap_get(&m, "bookmarks")->cls, 'A');
    ck_assert_int_eq(picl__classmap_get(&m, "history")->cls, 'A');
    ck_assert_ptr_null(picl__classmap_get(&m, "tabs"));
    char *payload;
    ck_assert_int_eq(picl__classmap_sign(&payload, &m, kB), PICL_OK);
    /* byte-exact: canonical JSON (sorted keys, compact) and its HMAC, both
     * computed independently with Python (json.dumps(sort_keys=True,
     * separators=(',', ':')), hmac, hashlib) */
    ck_assert_str_eq(
        payload,
        "{\"collections\":{\"bookmarks\":{\"class\":\"A\",\"generation\":1},\"history\":{\"class\":\"A\","
        "\"generation\":1},\"passwords\":{\"class\":\"B\",\"generation\":1}},\"epoch\":1,"
        "\"hmac\":\"5ae1bf35d7732ec1ebc35ef597464a9b49385cf3d66213988834165ad2c7d7fb\","
        "\"kB\":\"0408a4ee110e7691a73d99cf05275a4e\",\"version\":1}");
    ck_assert_str_eq(m.hmac, "5ae1bf35d7732ec1ebc35ef597464a9b49385cf3d66213988834165ad2c7d7fb");
    ck_assert_int_eq(picl__classmap_verify(&v, payload, kB), PICL_OK);
    ck_assert_uint_eq(v.version, 1);
    ck_assert_uint_eq(v.epoch, 1);
    ck_assert_str_eq(v.hmac, m.hmac);
    ck_assert_int_eq(picl__classmap_get(&v, "passwords")->cls, 'B');
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
    json_object_set_new(json_object_get(json_object_get(o, "collections"), "passwords"), "class",
                        json_string("A"));
    char *forged = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_int_eq(picl__classmap_verify(&v, forged, kB), PICL_ERROR_CLASSMAP);
    ck_assert_uint_eq(v.n, 0);
    free(forged);
    /* ... with another kB field and a garbage hmac (it used to be taken for
     * "the password was reset elsewhere"): refused the same way */
    json_object_set_new(o, "kB", json_string("ffffffffffffffffffffffffffffffff"));
    json_object_set_new(o, "hmac",
                        json_string("0000000000000000000000000000000000000000000000000000000000000000"));
    forged = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_int_eq(picl__classmap_verify(&v, forged, kB), PICL_ERROR_CLASSMAP);
    free(forged);
    /* ... or bumps the version or the epoch */
    json_decref(o);
    o = json_loads(payload, 0, NULL);
    json_object_set_new(o, "version", json_integer(99));
    forged = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_int_eq(picl__classmap_verify(&v, forged, kB), PICL_ERROR_CLASSMAP);
    free(forged);
    json_object_set_new(o, "version", json_integer(5));
    json_object_set_new(o, "epoch", json_integer(2));
    forged = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_int_eq(picl__classmap_verify(&v, forged, kB), PICL_ERROR_CLASSMAP);
    free(forged);
    /* extra fields, wrong types */
    json_object_set_new(o, "epoch", json_integer(1));
    json_object_set_new(o, "extra", json_true());
    forged = json_dumps(o, JSON_COMPACT);
    ck_assert_int_eq(picl__classmap_verify(&v, forged, kB), PICL_ERROR_CLASSMAP);
    free(forged);
    json_decref(o);
    static const char *bad[] = {"", "[]", "{}", "{\"version\":1}", "null"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_eq(picl__classmap_verify(&v, bad[i], kB), PICL_ERROR_CLASSMAP);
    /* a map made under another kB does not verify (nothing special about it) */
    uint8_t other[32];
    memset(other, 0x99, 32);
    ck_assert_int_eq(picl__classmap_verify(&v, payload, other), PICL_ERROR_CLASSMAP);
    /* the genuine map still verifies */
    ck_assert_int_eq(picl__classmap_verify(&v, payload, kB), PICL_OK);
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

/* Compares the one-pass envelope reader with the tree: same status, same
 * four fields (NULL or the same text). */
static void envelope_same(const char *payload)
{
    picl_envelope a, b;
    picl_status sa = picl__record_envelope_load(payload, &a);
    picl_status sb = picl__record_envelope_load_tree(payload, &b);
    ck_assert_msg(sa == sb, "status %d vs tree %d for %s", sa, sb, payload ? payload : "(null)");
    const char *fa[4] = {a.ciphertext, a.iv, a.hmac, a.kid}, *fb[4] = {b.ciphertext, b.iv, b.hmac, b.kid};
    for (int k = 0; k < 4; k++) {
        ck_assert_msg((fa[k] == NULL) == (fb[k] == NULL), "field %d presence differs for %s", k, payload);
        if (fa[k])
            ck_assert_str_eq(fa[k], fb[k]);
    }
    picl__record_envelope_free(&a);
    picl__record_envelope_free(&b);
}

/* layout with %1$s, %2$s, %3$s replaced by a, b, c (no printf: the layouts
 * are data) */
static void fill(char *out, size_t cap, const char *layout, const char *a, const char *b, const char *c)
{
    size_t o = 0;
    for (const char *p = layout; *p && o + 1 < cap;) {
        if (p[0] == '%' && p[1] >= '1' && p[1] <= '3' && p[2] == '$' && p[3] == 's') {
            const char *v = p[1] == '1' ? a : p[1] == '2' ? b : c;
            size_t l = strlen(v);
            ck_assert(o + l < cap);
            memcpy(out + o, v, l);
            o += l;
            p += 4;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = 0;
}

START_TEST(test_envelope_one_pass_matches_tree)
{
    picl_keypair b1;
    ck_assert_int_eq(picl__collection_keys(&b1, kB, "passwords", 1), PICL_OK);
    picl_class_entry B1 = {'B', 1};
    json_t *rec = sample(ID);
    char *payload;
    ck_assert_int_eq(picl__record_encrypt(&payload, "passwords", rec, &b1, &B1), PICL_OK);

    /* the common shape: exact fields */
    picl_envelope env;
    ck_assert_int_eq(picl__record_envelope_load(payload, &env), PICL_OK);
    json_t *p = json_loads(payload, 0, NULL);
    ck_assert_str_eq(env.ciphertext, json_string_value(json_object_get(p, "ciphertext")));
    ck_assert_str_eq(env.iv, json_string_value(json_object_get(p, "IV")));
    ck_assert_str_eq(env.hmac, json_string_value(json_object_get(p, "hmac")));
    ck_assert_str_eq(env.kid, "B:1");
    picl__record_envelope_free(&env);
    envelope_same(payload);

    /* the same envelope laid out otherwise: spacing, order, escapes */
    const char *ct = json_string_value(json_object_get(p, "ciphertext"));
    const char *iv = json_string_value(json_object_get(p, "IV"));
    const char *mac = json_string_value(json_object_get(p, "hmac"));
    size_t big = strlen(ct) * 2 + 512;
    char *t = malloc(big);
    const char *layouts[] = {
        " {\n\t\"kid\" : \"B:1\" ,\r\n \"hmac\":\"%3$s\", \"IV\":\"%2$s\",\"ciphertext\":\"%1$s\" } \n",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B\\u003a1\"}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\",\"extra\":1}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\",\"kid\":\"B:1\"}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\"}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":null}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":7}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\"} x",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\",}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\"",
        "{\"ciphertext\":\"%1$s\" \"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\"}",
        "{\"ciphertext\"\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\"}",
        "[\"%1$s\",\"%2$s\",\"%3$s\"]",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\u00e9\"}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\xff\"}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:\\u0000\"}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\t\"}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"\\\"\"}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"k\\u0069d\":\"B:1\"}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\",\"n\":1e999999}",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\",\"n\":"
        "123456789012345678901234567890}",
        "{\"ciphertext\":[\"%1$s\"],\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\"}",
        "{\"IV\":\"%2$s\"}",
        "{}",
        " { } ",
        "",
        "   ",
        "{",
        "}",
        "\"%1$s\"",
        "null",
        "{\"ciphertext\":\"%1$s\",\"IV\":\"%2$s\",\"hmac\":\"%3$s\",\"kid\":\"B:1\"}\n\n",
        "\xef\xbb\xbf{\"kid\":\"B:1\"}",
        "{\"kid\":\"B:1\"}\x0b",
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        fill(t, big, layouts[i], ct, iv, mac);
        envelope_same(t);
        /* and the whole decryption agrees with the tree's */
        json_t *o = NULL, *c1 = NULL, *c2 = NULL;
        picl_record_fault w1 = PICL_RECORD_FAULT_NONE, w2 = PICL_RECORD_FAULT_NONE;
        picl_sealer *k = NULL;
        ck_assert_int_eq(picl__sealer_new(&k, &b1), PICL_OK);
        picl_status s1 = picl__record_envelope_load(t, &env);
        picl_status d1 =
            picl__record_decrypt_env(&c1, "passwords", ID, s1 == PICL_OK ? &env : NULL, k, &B1, 0, &w1);
        picl__record_envelope_free(&env);
        picl_status s2 = picl__record_payload_load(t, &o);
        picl_status d2 = picl__record_decrypt_obj(&c2, "passwords", ID, o, k, &B1, 0, &w2);
        ck_assert_int_eq(s1, s2);
        ck_assert_int_eq(d1, d2);
        ck_assert_int_eq(w1, w2);
        ck_assert((c1 == NULL) == (c2 == NULL));
        if (c1)
            ck_assert(json_equal(c1, c2) && json_equal(c1, rec));
        json_decref(c1);
        json_decref(c2);
        json_decref(o);
        picl__sealer_free(k);
    }
    /* the plain layouts decrypt; a duplicate member and a non-object never do */
    fill(t, big, layouts[0], ct, iv, mac);
    ck_assert_int_eq(picl__record_envelope_load(t, &env), PICL_OK);
    picl__record_envelope_free(&env);
    fill(t, big, layouts[3], ct, iv, mac);
    ck_assert_int_eq(picl__record_envelope_load(t, &env), PICL_ERROR_DECRYPT);
    fill(t, big, layouts[12], ct, iv, mac);
    ck_assert_int_eq(picl__record_envelope_load(t, &env), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(picl__record_envelope_load(NULL, &env), PICL_ERROR_DECRYPT);

    /* every cut and every single-byte change of a real payload */
    size_t n = strlen(payload);
    for (size_t cut = 0; cut <= n; cut++) {
        memcpy(t, payload, cut);
        t[cut] = 0;
        envelope_same(t);
    }
    const char subst[] = {'"', '\\', ',', ':', '{', '}', ' ', 'A', '\x01', '\x80'};
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < sizeof subst; j++) {
            memcpy(t, payload, n + 1);
            t[i] = subst[j];
            envelope_same(t);
        }
    free(t);
    json_decref(p);
    free(payload);
    json_decref(rec);
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
    tcase_add_test(tc, test_record_v2_vectors);
    tcase_add_test(tc, test_record_valid_mac_bad_cleartext);
    tcase_add_test(tc, test_classmap_sign_verify);
    tcase_add_test(tc, test_classmap_attacks);
    tcase_add_test(tc, test_classmap_set_and_fingerprint);
    tcase_add_test(tc, test_envelope_one_pass_matches_tree);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
