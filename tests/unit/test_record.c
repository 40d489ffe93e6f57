/* SPDX-License-Identifier: MPL-2.0 */
/* test_record.c -- the record cipher (records.md section 3): the v2 MAC
 * against independently made vectors (tests/vectors/picl_record_v2.json),
 * the cipher primitives against the published Sync 1.5 records (whose MAC,
 * over the ciphertext alone, libpicl no longer accepts), and the one-error
 * rule for every tampering. */
#include "testutil.h"
#include "crypto/envelope.h"
#include "crypto/codec.h"
#include "crypto/kdf.h"
#include "crypto/aes.h"
#include "crypto/hash.h"

#include <stdlib.h>
#include <string.h>

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    ck_assert_msg(s != NULL, "missing %s", k);
    return s;
}

static void b64key(uint8_t out[32], const char *b64)
{
    size_t n;
    ck_assert_int_eq(picl__base64_decode(out, 32, &n, b64, strlen(b64)), PICL_OK);
    ck_assert_uint_eq(n, 32);
}

static void hexkey(uint8_t *out, size_t want, const char *hex)
{
    ck_assert_int_eq(picl__hex_decode_exact(out, want, hex), PICL_OK);
}

/* A Sync 1.5 record opened with the primitives (HMAC over the ciphertext
 * text, then AES-256-CBC): checks the published vectors against our AES,
 * HMAC and base64, not a format libpicl accepts. */
static int sync15_open(uint8_t **out, size_t *n, const picl_keypair *k, const char *ct, const char *iv_b64,
                       const char *mac_hex)
{
    uint8_t want[32], got[32], iv[16], *raw;
    size_t ivlen, rawlen;
    if (picl__hex_decode_exact(want, 32, mac_hex) != PICL_OK ||
        picl__hmac_sha256(got, k->hmac, 32, ct, strlen(ct)) != PICL_OK || memcmp(want, got, 32) != 0)
        return 0;
    ck_assert_int_eq(picl__base64_decode(iv, 16, &ivlen, iv_b64, strlen(iv_b64)), PICL_OK);
    ck_assert_int_eq(picl__base64_decode_alloc(&raw, &rawlen, ct, strlen(ct)), PICL_OK);
    *out = malloc(rawlen + 1);
    ck_assert_int_eq(picl__aes256_cbc_decrypt(*out, n, k->enc, iv, raw, rawlen), PICL_OK);
    (*out)[*n] = 0;
    free(raw);
    return 1;
}

/* libpicl refuses a Sync 1.5 record (no v1 fallback): whatever context. */
static void v1_refused(const picl_keypair *k, const char *ct, const char *iv, const char *mac)
{
    picl_mac_context ctx;
    picl__record_v2_context(&ctx, "bookmarks", "abcdefghijkl", "A:1");
    uint8_t *out = NULL;
    size_t n = 0;
    ck_assert_int_eq(picl__record_open(&out, &n, k, &ctx, ct, iv, mac), PICL_ERROR_DECRYPT);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(picl__record_open(&out, &n, k, NULL, ct, iv, mac), PICL_ERROR_DECRYPT);
}

START_TEST(test_docs_example)
{
    json_t *j = tu_json_load("record_crypto_vectors.json");
    json_t *v = json_object_get(j, "docs_storageformat5_record_encryption_example");
    picl_keypair k;
    hexkey(k.enc, 32, jstr(v, "encryption_key_hex"));
    hexkey(k.hmac, 32, jstr(v, "hmac_key_hex"));
    uint8_t iv[16];
    hexkey(iv, 16, jstr(v, "iv_hex"));
    const char *clear = jstr(v, "cleartext");
    /* the same AES-256-CBC ciphertext from our primitive */
    uint8_t ct[256];
    size_t clen;
    ck_assert_uint_lt(picl__aes256_cbc_pad_len(strlen(clear)), sizeof ct);
    ck_assert_int_eq(picl__aes256_cbc_encrypt(ct, &clen, k.enc, iv, (const uint8_t *)clear, strlen(clear)),
                     PICL_OK);
    char *b64 = picl__base64_encode_alloc(ct, clen);
    ck_assert_str_eq(b64, jstr(v, "ciphertext_b64"));
    char ivb[32];
    picl__base64_encode(ivb, iv, 16);
    uint8_t *out;
    size_t n;
    ck_assert(sync15_open(&out, &n, &k, b64, ivb, jstr(v, "hmac_hex")));
    ck_assert_uint_eq(n, strlen(clear));
    ck_assert_str_eq((char *)out, clear);
    free(out);
    v1_refused(&k, b64, ivb, jstr(v, "hmac_hex"));
    free(b64);

    /* the HKDF example of the same document */
    json_t *h = json_object_get(j, "docs_storageformat5_hkdf_example");
    size_t ml;
    uint8_t *mk = tu_unhex(jstr(h, "master_key_hex"), &ml);
    uint8_t okm[64];
    const char *info = jstr(h, "info");
    ck_assert_int_eq(picl__hkdf_sha256(okm, 64, mk, ml, NULL, 0, info, strlen(info)), PICL_OK);
    tu_assert_hex(okm, 64, jstr(h, "okm_hex"));
    tu_assert_hex(okm, 32, jstr(h, "encryption_key_hex"));
    tu_assert_hex(okm + 32, 32, jstr(h, "hmac_key_hex"));
    free(mk);
    json_decref(j);
}
END_TEST

START_TEST(test_application_services)
{
    json_t *j = tu_json_load("record_crypto_vectors.json");
    json_t *v = json_object_get(j, "application_services_sync15_key_bundle");
    picl_keypair k;
    b64key(k.enc, jstr(v, "enc_key_b64"));
    b64key(k.hmac, jstr(v, "hmac_key_b64"));
    uint8_t *out;
    size_t n, cl;
    ck_assert(sync15_open(&out, &n, &k, jstr(v, "ciphertext_b64"), jstr(v, "iv_b64"), jstr(v, "hmac_hex")));
    uint8_t *want;
    ck_assert_int_eq(
        picl__base64_decode_alloc(&want, &cl, jstr(v, "cleartext_b64"), strlen(jstr(v, "cleartext_b64"))),
        PICL_OK);
    ck_assert_uint_eq(n, cl);
    ck_assert(memcmp(out, want, n) == 0);
    v1_refused(&k, jstr(v, "ciphertext_b64"), jstr(v, "iv_b64"), jstr(v, "hmac_hex"));
    free(out);
    free(want);
    json_decref(j);
}
END_TEST

START_TEST(test_gaia_real_account)
{
    json_t *j = tu_json_load("record_crypto_vectors.json");
    json_t *v = json_object_get(j, "gaia_fxsyncwebcrypto_fixture");
    uint8_t kb[32], okm[64];
    hexkey(kb, 32, jstr(v, "kB_hex"));
    const char *info = "identity.mozilla.com/picl/v1/oldsync";
    ck_assert_int_eq(picl__hkdf_sha256(okm, 64, kb, 32, NULL, 0, info, strlen(info)), PICL_OK);
    tu_assert_hex(okm, 64, jstr(v, "hkdf_output_hex"));
    picl_keypair sync;
    memcpy(sync.enc, okm, 32);
    memcpy(sync.hmac, okm + 32, 32);
    /* crypto/keys, under the kB bundle, holds the default collection keys */
    json_t *ck = json_object_get(v, "crypto_keys_payload");
    uint8_t *out;
    size_t n;
    ck_assert(sync15_open(&out, &n, &sync, jstr(ck, "ciphertext"), jstr(ck, "IV"), jstr(ck, "hmac")));
    json_error_t err;
    json_t *keys = json_loadb((const char *)out, n, 0, &err);
    ck_assert_ptr_nonnull(keys);
    json_t *def = json_object_get(keys, "default");
    picl_keypair coll;
    b64key(coll.enc, json_string_value(json_array_get(def, 0)));
    b64key(coll.hmac, json_string_value(json_array_get(def, 1)));
    free(out);
    /* the bundle key is not the collection key */
    ck_assert(!sync15_open(&out, &n, &coll, jstr(ck, "ciphertext"), jstr(ck, "IV"), jstr(ck, "hmac")));
    const char *variants[][2] = {{"history_entry_enc_variant_A", "history_entry_dec_variant_A"},
                                 {"history_entry_enc_variant_B", "history_entry_dec_variant_B"}};
    for (int i = 0; i < 2; i++) {
        json_t *e = json_object_get(v, variants[i][0]);
        ck_assert(sync15_open(&out, &n, &coll, jstr(e, "ciphertext"), jstr(e, "IV"), jstr(e, "hmac")));
        json_t *got = json_loadb((const char *)out, n, 0, &err);
        ck_assert_ptr_nonnull(got);
        ck_assert_msg(json_equal(got, json_object_get(v, variants[i][1])), "%s", variants[i][1]);
        json_decref(got);
        free(out);
        v1_refused(&coll, jstr(e, "ciphertext"), jstr(e, "IV"), jstr(e, "hmac"));
    }
    json_decref(keys);
    json_decref(j);
}
END_TEST

/* The v2 vectors (made with Python and openssl, see tests/vectors/README):
 * sealing with the same keys, IV and context gives the same ciphertext and
 * MAC; opening gives the cleartext; a change of any one field of the
 * context, the IV, the ciphertext or the MAC is the one error. */
START_TEST(test_v2_vectors)
{
    json_t *j = tu_json_load("picl_record_v2.json");
    json_t *vs = json_object_get(j, "vectors");
    ck_assert_uint_ge(json_array_size(vs), 3);
    size_t i;
    json_t *v;
    json_array_foreach (vs, i, v) {
        picl_keypair k;
        hexkey(k.enc, 32, jstr(v, "enc_key_hex"));
        hexkey(k.hmac, 32, jstr(v, "hmac_key_hex"));
        uint8_t iv[16];
        hexkey(iv, 16, jstr(v, "iv_hex"));
        const char *clear = jstr(v, "cleartext");
        picl_mac_context ctx;
        picl__record_v2_context(&ctx, jstr(v, "collection"), jstr(v, "bso_id"), jstr(v, "kid"));
        picl_sealed s;
        ck_assert_int_eq(picl__record_seal(&s, &k, &ctx, iv, (const uint8_t *)clear, strlen(clear)), PICL_OK);
        ck_assert_str_eq(s.ciphertext, jstr(v, "ciphertext_b64"));
        ck_assert_str_eq(s.iv, jstr(v, "iv_b64"));
        ck_assert_str_eq(s.hmac, jstr(v, "hmac_hex"));
        picl__sealed_free(&s);
        uint8_t *out = NULL;
        size_t n = 0;
        const char *ct = jstr(v, "ciphertext_b64"), *ivb = jstr(v, "iv_b64"), *mac = jstr(v, "hmac_hex");
        ck_assert_int_eq(picl__record_open(&out, &n, &k, &ctx, ct, ivb, mac), PICL_OK);
        ck_assert_uint_eq(n, strlen(clear));
        ck_assert_str_eq((char *)out, clear);
        free(out);
        /* each context field changed: refused */
        const char *coll = jstr(v, "collection"), *id = jstr(v, "bso_id"), *kid = jstr(v, "kid");
        const char *alt[3][3] = {{"forms", id, kid}, {coll, "another_id__", kid}, {coll, id, "B:9"}};
        for (int f = 0; f < 3; f++) {
            picl_mac_context bad;
            picl__record_v2_context(&bad, alt[f][0], alt[f][1], alt[f][2]);
            out = (uint8_t *)1;
            ck_assert_int_eq(picl__record_open(&out, &n, &k, &bad, ct, ivb, mac), PICL_ERROR_DECRYPT);
            ck_assert_ptr_null(out);
        }
        /* the IV: 16 other bytes, same MAC */
        uint8_t iv2[16];
        memcpy(iv2, iv, 16);
        iv2[0] ^= 0x01;
        char iv2b[32];
        picl__base64_encode(iv2b, iv2, 16);
        ck_assert_int_eq(picl__record_open(&out, &n, &k, &ctx, ct, iv2b, mac), PICL_ERROR_DECRYPT);
        /* another label (a recovery-style context over the same texts) */
        picl_mac_context other = ctx;
        other.label = "picl-record-v1";
        ck_assert_int_eq(picl__record_open(&out, &n, &k, &other, ct, ivb, mac), PICL_ERROR_DECRYPT);
    }
    json_decref(j);
}
END_TEST

/* Every tampering gives the same error and no output. */
static void expect_fail(const picl_keypair *k, const picl_mac_context *ctx, const char *ct, const char *iv,
                        const char *mac)
{
    uint8_t *out = (uint8_t *)1;
    size_t n = 7;
    ck_assert_int_eq(picl__record_open(&out, &n, k, ctx, ct, iv, mac), PICL_ERROR_DECRYPT);
    ck_assert_ptr_null(out);
    ck_assert_uint_eq(n, 0);
}

START_TEST(test_tampering_one_error)
{
    picl_keypair k;
    memset(k.enc, 0x11, 32);
    memset(k.hmac, 0x22, 32);
    picl_mac_context ctx;
    picl__record_v2_context(&ctx, "bookmarks", "abcdefghijkl", "A:1");
    const char *msg = "{\"id\":\"abcdefghijkl\",\"title\":\"hello world, a record\"}";
    picl_sealed s;
    ck_assert_int_eq(picl__record_seal(&s, &k, &ctx, NULL, (const uint8_t *)msg, strlen(msg)), PICL_OK);
    char *ct = strdup(s.ciphertext), *iv = strdup(s.iv), *mac = strdup(s.hmac);
    /* every character of ciphertext, IV and MAC changed: the IV is under
     * the MAC now, so a rewritten first block is refused too */
    const char *alts = "AB";
    for (size_t i = 0; ct[i]; i++) {
        if (ct[i] == '=')
            continue;
        char o = ct[i];
        ct[i] = (o == alts[0]) ? alts[1] : alts[0];
        expect_fail(&k, &ctx, ct, iv, mac);
        ct[i] = o;
    }
    for (size_t i = 0; iv[i]; i++) {
        if (iv[i] == '=')
            continue;
        char o = iv[i];
        iv[i] = (o == 'A') ? 'B' : 'A';
        expect_fail(&k, &ctx, ct, iv, mac);
        iv[i] = o;
    }
    for (size_t i = 0; mac[i]; i++) {
        char o = mac[i];
        mac[i] = (o == '0') ? '1' : '0';
        expect_fail(&k, &ctx, ct, iv, mac);
        mac[i] = o;
    }
    /* truncations, malformed fields, wrong keys, no or broken context */
    char *shortct = strndup(ct, strlen(ct) - 4);
    expect_fail(&k, &ctx, shortct, iv, mac);
    expect_fail(&k, &ctx, "", iv, mac);
    expect_fail(&k, &ctx, ct, iv, "");
    expect_fail(&k, &ctx, ct, iv, "zz");
    expect_fail(&k, NULL, ct, iv, mac);
    picl_mac_context lf;
    picl__record_v2_context(&lf, "bookmarks", "abcdefghijkl\nA:1", "A:1");
    expect_fail(&k, &lf, ct, iv, mac);
    char upper[65];
    for (int i = 0; i < 64; i++)
        upper[i] = (char)(mac[i] >= 'a' ? mac[i] - 32 : mac[i]);
    upper[64] = 0;
    /* hex decoding is case-insensitive, so an upper-case MAC is the same MAC */
    uint8_t *out;
    size_t n;
    ck_assert_int_eq(picl__record_open(&out, &n, &k, &ctx, ct, iv, upper), PICL_OK);
    free(out);
    char *shortmac = strndup(mac, 62);
    expect_fail(&k, &ctx, ct, iv, shortmac);
    expect_fail(&k, &ctx, ct, "AAAA", mac);
    expect_fail(&k, &ctx, ct, "!!!!", mac);
    expect_fail(&k, &ctx, NULL, iv, mac);
    expect_fail(&k, &ctx, ct, NULL, mac);
    expect_fail(&k, &ctx, ct, iv, NULL);
    picl_keypair wrong = k;
    wrong.hmac[31] ^= 1;
    expect_fail(&wrong, &ctx, ct, iv, mac);
    wrong = k;
    wrong.enc[0] ^= 1; /* MAC fine, wrong encryption key: padding or garbage */
    if (picl__record_open(&out, &n, &wrong, &ctx, ct, iv, mac) == PICL_OK) {
        ck_assert(n != strlen(msg) || memcmp(out, msg, n) != 0);
        free(out);
    }
    /* a correctly MACed ciphertext with broken padding: still the one error */
    uint8_t raw[32], blk[32], zero_iv[16] = {0};
    memset(raw, 0x41, sizeof raw);
    ck_assert_int_eq(picl__aes256_cbc_raw(1, blk, k.enc, zero_iv, raw, 32), PICL_OK);
    char b64[64], ivb[32], macs[65], input[256];
    picl__base64_encode(b64, blk, 32);
    picl__base64_encode(ivb, zero_iv, 16);
    snprintf(input, sizeof input, "picl-record-v2\nbookmarks\nabcdefghijkl\nA:1\n%s\n%s", ivb, b64);
    uint8_t m[32];
    ck_assert_int_eq(picl__hmac_sha256(m, k.hmac, 32, input, strlen(input)), PICL_OK);
    picl__hex_encode(macs, m, 32);
    expect_fail(&k, &ctx, b64, ivb, macs);
    /* a seal with no context, or a field with LF, is refused */
    picl_sealed s2;
    ck_assert_int_eq(picl__record_seal(&s2, &k, NULL, NULL, (const uint8_t *)msg, strlen(msg)),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__record_seal(&s2, &k, &lf, NULL, (const uint8_t *)msg, strlen(msg)),
                     PICL_ERROR_INVALID_ARGUMENT);
    free(shortct);
    free(shortmac);
    free(ct);
    free(iv);
    free(mac);
    picl__sealed_free(&s);
}
END_TEST

START_TEST(test_roundtrip_sizes)
{
    picl_keypair k;
    ck_assert_int_eq(picl__random_bytes(&k, sizeof k), PICL_OK);
    picl_mac_context ctx;
    picl__record_v2_context(&ctx, "history", "xyz", "B:2");
    uint8_t buf[100];
    for (size_t len = 0; len < sizeof buf; len++) {
        memset(buf, (int)len, len);
        picl_sealed s;
        ck_assert_int_eq(picl__record_seal(&s, &k, &ctx, NULL, buf, len), PICL_OK);
        uint8_t *out;
        size_t n;
        ck_assert_int_eq(picl__record_open(&out, &n, &k, &ctx, s.ciphertext, s.iv, s.hmac), PICL_OK);
        ck_assert(n == len && memcmp(out, buf, len) == 0);
        free(out);
        picl__sealed_free(&s);
    }
}
END_TEST

/* A sealer (keys imported once) seals exactly what the keypair functions
 * seal, and over a run of records a forged one in the middle is refused
 * with the one error while the records around it still open. */
START_TEST(test_sealer_run)
{
    picl_keypair k, other;
    memset(k.enc, 0x11, 32);
    memset(k.hmac, 0x22, 32);
    other = k;
    other.hmac[31] ^= 1;
    uint8_t iv[16];
    memset(iv, 0x5a, sizeof iv);
    picl_mac_context ctx;
    picl__record_v2_context(&ctx, "history", "abcdefghijkl", "A:1");
    const char *msg = "{\"id\":\"abcdefghijkl\",\"histUri\":\"https://example.com/\"}";
    picl_sealer *sk = NULL, *so = NULL;
    ck_assert_int_eq(picl__sealer_new(&sk, &k), PICL_OK);
    ck_assert_int_eq(picl__sealer_new(&so, &other), PICL_OK);
    picl_sealed a, b;
    ck_assert_int_eq(picl__record_seal_with(&a, sk, &ctx, iv, (const uint8_t *)msg, strlen(msg)), PICL_OK);
    ck_assert_int_eq(picl__record_seal(&b, &k, &ctx, iv, (const uint8_t *)msg, strlen(msg)), PICL_OK);
    ck_assert_str_eq(a.ciphertext, b.ciphertext);
    ck_assert_str_eq(a.iv, b.iv);
    ck_assert_str_eq(a.hmac, b.hmac);
    char forged[65];
    memcpy(forged, a.hmac, 65);
    forged[0] = forged[0] == '0' ? '1' : '0';
    for (int round = 0; round < 3; round++) {
        uint8_t *out = NULL;
        size_t n = 0;
        ck_assert_int_eq(picl__record_open_with(&out, &n, sk, &ctx, a.ciphertext, a.iv, a.hmac), PICL_OK);
        ck_assert_uint_eq(n, strlen(msg));
        ck_assert(memcmp(out, msg, n) == 0);
        free(out);
        out = NULL;
        ck_assert_int_eq(picl__record_open_with(&out, &n, sk, &ctx, a.ciphertext, a.iv, forged),
                         PICL_ERROR_DECRYPT);
        ck_assert_ptr_null(out);
        ck_assert_int_eq(picl__record_open_with(&out, &n, so, &ctx, a.ciphertext, a.iv, a.hmac),
                         PICL_ERROR_DECRYPT);
        ck_assert_ptr_null(out);
    }
    picl__sealed_free(&a);
    picl__sealed_free(&b);
    picl__sealer_free(sk);
    picl__sealer_free(so);
}
END_TEST

/* The MAC over macInput is the same whether its short parts go to the HMAC
 * in one update (the usual context) or piece by piece (a context longer
 * than that buffer): both equal HMAC-SHA256 computed here in one call. */
START_TEST(test_mac_input_short_and_long_context)
{
    picl_keypair k;
    memset(k.enc, 0x31, 32);
    memset(k.hmac, 0x42, 32);
    uint8_t iv[16];
    memset(iv, 0x07, sizeof iv);
    const char *msg = "{\"id\":\"x\"}";
    char longid[700];
    memset(longid, 'i', sizeof longid - 1);
    longid[sizeof longid - 1] = 0;
    const char *ids[2] = {"abcdefghijkl", longid};
    picl_sealer *sk = NULL;
    ck_assert_int_eq(picl__sealer_new(&sk, &k), PICL_OK);
    for (int w = 0; w < 2; w++) {
        picl_mac_context ctx;
        picl__record_v2_context(&ctx, "bookmarks", ids[w], "B:3");
        picl_sealed a;
        ck_assert_int_eq(picl__record_seal_with(&a, sk, &ctx, iv, (const uint8_t *)msg, strlen(msg)),
                         PICL_OK);
        size_t n = strlen(PICL_RECORD_V2_LABEL) + strlen(ids[w]) + strlen(a.iv) + strlen(a.ciphertext) + 64;
        char *input = malloc(n);
        snprintf(input, n, "%s\nbookmarks\n%s\nB:3\n%s\n%s", PICL_RECORD_V2_LABEL, ids[w], a.iv,
                 a.ciphertext);
        uint8_t m[32];
        char hex[65];
        ck_assert_int_eq(picl__hmac_sha256(m, k.hmac, 32, input, strlen(input)), PICL_OK);
        picl__hex_encode(hex, m, 32);
        ck_assert_str_eq(a.hmac, hex);
        uint8_t *out = NULL;
        size_t olen = 0;
        ck_assert_int_eq(picl__record_open_with(&out, &olen, sk, &ctx, a.ciphertext, a.iv, a.hmac), PICL_OK);
        ck_assert_uint_eq(olen, strlen(msg));
        free(out);
        free(input);
        picl__sealed_free(&a);
    }
    picl__sealer_free(sk);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("record");
    TCase *tc = tcase_create("record");
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_docs_example);
    tcase_add_test(tc, test_application_services);
    tcase_add_test(tc, test_gaia_real_account);
    tcase_add_test(tc, test_v2_vectors);
    tcase_add_test(tc, test_tampering_one_error);
    tcase_add_test(tc, test_roundtrip_sizes);
    tcase_add_test(tc, test_sealer_run);
    tcase_add_test(tc, test_mac_input_short_and_long_context);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
