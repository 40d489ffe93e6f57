/* SPDX-License-Identifier: MPL-2.0 */
/* test_kdf.c -- PBKDF2-HMAC-SHA256, HKDF-SHA256 and scrypt against every
 * published vector file, plus the limits and out-of-memory behaviour. */
#include "testutil.h"
#include "crypto/kdf.h"
#include "crypto/codec.h"
#include "crypto/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* P/S fields are ASCII unless given as P_hex/S_hex. */
static uint8_t *field(const tu_case *c, const char *name, size_t *len)
{
    char hexname[32];
    snprintf(hexname, sizeof hexname, "%s_hex", name);
    const char *h = tu_get(c, hexname);
    if (h)
        return tu_unhex(h, len);
    const char *s = tu_get(c, name);
    ck_assert_ptr_nonnull(s);
    *len = strlen(s);
    uint8_t *b = malloc(*len + 1);
    memcpy(b, s, *len + 1);
    return b;
}

START_TEST(test_pbkdf2_file)
{
    tu_vecfile *f = tu_vec_load("pbkdf2_hmac_sha256.txt");
    int n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tu_case *c = &f->cases[i];
        if (!tu_get(c, "DK"))
            continue;
        unsigned long iters = strtoul(tu_get(c, "c"), NULL, 10);
        if (iters > 1000000 && !tu_slow())
            continue;
        size_t pl, sl, dl;
        uint8_t *p = field(c, "P", &pl), *s = field(c, "S", &sl), *dk = tu_unhex(tu_get(c, "DK"), &dl);
        ck_assert_uint_eq(dl, strtoul(tu_get(c, "dkLen"), NULL, 10));
        uint8_t out[128];
        ck_assert_int_eq(picl__pbkdf2_sha256(out, dl, p, pl, s, sl, (uint32_t)iters), PICL_OK);
        ck_assert_msg(memcmp(out, dk, dl) == 0, "%s", c->name);
        free(p);
        free(s);
        free(dk);
        n++;
    }
    ck_assert_int_ge(n, tu_slow() ? 7 : 6);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_pbkdf2_wycheproof)
{
    json_t *j = tu_json_load("wycheproof/pbkdf2_hmacsha256_test.json");
    size_t gi, ti, n = 0;
    json_t *g, *t;
    json_array_foreach (json_object_get(j, "testGroups"), gi, g) {
        json_array_foreach (json_object_get(g, "tests"), ti, t) {
            size_t pl, sl, dl;
            uint8_t *p = tu_unhex(json_string_value(json_object_get(t, "password")), &pl);
            uint8_t *s = tu_unhex(json_string_value(json_object_get(t, "salt")), &sl);
            uint8_t *dk = tu_unhex(json_string_value(json_object_get(t, "dk")), &dl);
            uint32_t iters = (uint32_t)json_integer_value(json_object_get(t, "iterationCount"));
            ck_assert_uint_eq(dl, (size_t)json_integer_value(json_object_get(t, "dkLen")));
            uint8_t *out = malloc(dl);
            ck_assert_int_eq(picl__pbkdf2_sha256(out, dl, p, pl, s, sl, iters), PICL_OK);
            ck_assert_msg(memcmp(out, dk, dl) == 0, "tcId %lld",
                          json_integer_value(json_object_get(t, "tcId")));
            free(out);
            free(p);
            free(s);
            free(dk);
            n++;
        }
    }
    ck_assert_uint_eq(n, (size_t)json_integer_value(json_object_get(j, "numberOfTests")));
    json_decref(j);
}
END_TEST

START_TEST(test_pbkdf2_bad_args)
{
    uint8_t out[8];
    ck_assert_int_eq(picl__pbkdf2_sha256(out, 8, "p", 1, "s", 1, 0), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__pbkdf2_sha256(out, 0, "p", 1, "s", 1, 1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__pbkdf2_sha256(out, PICL_PBKDF2_MAX_OUT + 1, "p", 1, "s", 1, 1),
                     PICL_ERROR_TOO_LARGE);
}
END_TEST

START_TEST(test_hkdf_rfc5869)
{
    tu_vecfile *f = tu_vec_load("hkdf_sha256.txt");
    int n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tu_case *c = &f->cases[i];
        if (!tu_get(c, "OKM"))
            continue;
        size_t il, sl, nl, pl, ol;
        uint8_t *ikm = tu_unhex(tu_get(c, "IKM"), &il), *salt = tu_unhex(tu_get(c, "salt"), &sl);
        uint8_t *info = tu_unhex(tu_get(c, "info"), &nl), *prk = tu_unhex(tu_get(c, "PRK"), &pl);
        uint8_t *okm = tu_unhex(tu_get(c, "OKM"), &ol);
        ck_assert_uint_eq(ol, strtoul(tu_get(c, "L"), NULL, 10));
        uint8_t p[32], out[256];
        ck_assert_int_eq(picl__hkdf_sha256_extract(p, salt, sl, ikm, il), PICL_OK);
        ck_assert(pl == 32 && memcmp(p, prk, 32) == 0);
        ck_assert_int_eq(picl__hkdf_sha256_expand(out, ol, p, 32, info, nl), PICL_OK);
        ck_assert(memcmp(out, okm, ol) == 0);
        ck_assert_int_eq(picl__hkdf_sha256(out, ol, ikm, il, salt, sl, info, nl), PICL_OK);
        ck_assert_msg(memcmp(out, okm, ol) == 0, "%s", c->name);
        free(ikm);
        free(salt);
        free(info);
        free(prk);
        free(okm);
        n++;
    }
    ck_assert_int_eq(n, 3);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_hkdf_wycheproof)
{
    json_t *j = tu_json_load("wycheproof/hkdf_sha256_test.json");
    size_t gi, ti, n = 0, invalid = 0;
    json_t *g, *t;
    json_array_foreach (json_object_get(j, "testGroups"), gi, g) {
        json_array_foreach (json_object_get(g, "tests"), ti, t) {
            size_t il, sl, nl, ol;
            uint8_t *ikm = tu_unhex(json_string_value(json_object_get(t, "ikm")), &il);
            uint8_t *salt = tu_unhex(json_string_value(json_object_get(t, "salt")), &sl);
            uint8_t *info = tu_unhex(json_string_value(json_object_get(t, "info")), &nl);
            uint8_t *okm = tu_unhex(json_string_value(json_object_get(t, "okm")), &ol);
            size_t size = (size_t)json_integer_value(json_object_get(t, "size"));
            const char *result = json_string_value(json_object_get(t, "result"));
            uint8_t *out = malloc(size + 1);
            picl_status st = picl__hkdf_sha256(out, size, ikm, il, salt, sl, info, nl);
            if (!strcmp(result, "valid")) {
                ck_assert_int_eq(st, PICL_OK);
                ck_assert_uint_eq(ol, size);
                ck_assert_msg(memcmp(out, okm, size) == 0, "tcId %lld",
                              json_integer_value(json_object_get(t, "tcId")));
            } else {
                /* Wycheproof's invalid HKDF cases ask for more than 255*32 bytes */
                ck_assert_uint_gt(size, PICL_HKDF_SHA256_MAX_OUT);
                ck_assert_int_eq(st, PICL_ERROR_TOO_LARGE);
                invalid++;
            }
            free(out);
            free(ikm);
            free(salt);
            free(info);
            free(okm);
            n++;
        }
    }
    ck_assert_uint_eq(n, (size_t)json_integer_value(json_object_get(j, "numberOfTests")));
    ck_assert_uint_gt(invalid, 0);
    json_decref(j);
}
END_TEST

START_TEST(test_hkdf_limits)
{
    static uint8_t out[PICL_HKDF_SHA256_MAX_OUT + 1];
    ck_assert_int_eq(picl__hkdf_sha256(out, PICL_HKDF_SHA256_MAX_OUT, "k", 1, NULL, 0, "", 0), PICL_OK);
    ck_assert_int_eq(picl__hkdf_sha256(out, PICL_HKDF_SHA256_MAX_OUT + 1, "k", 1, NULL, 0, "", 0),
                     PICL_ERROR_TOO_LARGE);
    ck_assert_int_eq(picl__hkdf_sha256(out, 0, "k", 1, NULL, 0, "", 0), PICL_ERROR_INVALID_ARGUMENT);
    /* "no salt" is 32 zero bytes, and the same as an empty salt */
    uint8_t a[32], b[32], zeros[32] = {0};
    ck_assert_int_eq(picl__hkdf_sha256(a, 32, "k", 1, NULL, 0, "i", 1), PICL_OK);
    ck_assert_int_eq(picl__hkdf_sha256(b, 32, "k", 1, zeros, 32, "i", 1), PICL_OK);
    ck_assert(memcmp(a, b, 32) == 0);
}
END_TEST

/* --- sync_oldsync_key.txt: free-form; values are read by label ----------- */

static char *slurp(const char *name)
{
    FILE *fp = fopen(tu_vector_path(name), "r");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n] = 0;
    fclose(fp);
    return buf;
}

/* The hex value after `label` (searching from *pos), continued on following
 * lines that hold only hex; advances *pos past it. */
static uint8_t *hex_after(const char *text, const char **pos, const char *label, size_t *len)
{
    const char *p = strstr(*pos, label);
    ck_assert_msg(p != NULL, "label %s not found", label);
    p += strlen(label);
    while (*p == ' ' || *p == '=' || *p == '"')
        p++;
    char buf[1024];
    size_t o = 0;
    for (;;) {
        while (strchr("0123456789abcdef", *p) && *p && o < sizeof buf - 1)
            buf[o++] = *p++;
        /* continuation: newline, spaces, then a run of >= 32 hex chars to eol */
        const char *q = p;
        if (*q != '\n')
            break;
        q++;
        while (*q == ' ')
            q++;
        size_t run = strspn(q, "0123456789abcdef");
        if (run < 32 || (q[run] != '\n' && q[run] != 0))
            break;
        p = q;
    }
    buf[o] = 0;
    *pos = p;
    return tu_unhex(buf, len);
}

START_TEST(test_oldsync_vectors)
{
    char *text = slurp("sync_oldsync_key.txt");
    const char *pos = text;
    size_t n, kl, el, hl;
    char *info = "identity.mozilla.com/picl/v1/oldsync";
    uint8_t out[64];

    /* a) Firefox test_getKeyForScope_oldsync: kB -> k (b64url of the 64-byte bundle) */
    uint8_t *kb = hex_after(text, &pos, "\"kb = ", &kl);
    const char *kpos = strstr(pos, "k   = \"");
    ck_assert_ptr_nonnull(kpos);
    kpos += strlen("k   = \"");
    uint8_t bundle[64];
    ck_assert_int_eq(picl__base64url_decode(bundle, sizeof bundle, &n, kpos, strcspn(kpos, "\"")), PICL_OK);
    ck_assert_uint_eq(n, 64);
    uint8_t *enc = hex_after(text, &pos, "encryptionKey =", &el);
    uint8_t *mac = hex_after(text, &pos, "hmacKey       =", &hl);
    ck_assert_int_eq(picl__hkdf_sha256(out, 64, kb, kl, NULL, 0, info, strlen(info)), PICL_OK);
    ck_assert(memcmp(out, bundle, 64) == 0);
    ck_assert(el == 32 && memcmp(out, enc, 32) == 0);
    ck_assert(hl == 32 && memcmp(out + 32, mac, 32) == 0);
    /* the kid's fingerprint part is b64url(SHA256(kB)[0:16]) */
    uint8_t h[32];
    char fp[40];
    ck_assert_int_eq(picl__sha256(h, kb, kl), PICL_OK);
    picl__base64url_encode(fp, h, 16, 0);
    ck_assert_str_eq(fp, "BAik7hEOdpGnPZnPBSdaTg");
    ck_assert_ptr_nonnull(strstr(text, fp)); /* as printed in the file */
    free(kb);
    free(enc);
    free(mac);

    /* b) Gaia fixture: 64 zero bytes of salt (same PRK as none) */
    uint8_t *kb2 = hex_after(text, &pos, "kB      =", &kl);
    size_t il, ol;
    uint8_t *info2 = hex_after(text, &pos, "info    =", &il);
    uint8_t *want = hex_after(text, &pos, "output  =", &ol);
    uint8_t zeros[64] = {0};
    ck_assert_uint_eq(ol, 64);
    ck_assert_int_eq(picl__hkdf_sha256(out, 64, kb2, kl, zeros, 64, info2, il), PICL_OK);
    ck_assert(memcmp(out, want, 64) == 0);
    free(kb2);
    free(info2);
    free(want);

    /* c) firefox-ios client state = hex(SHA256(kB)[0:16]) */
    uint8_t *kb3 = hex_after(text, &pos, "kB =", &kl);
    uint8_t *cs = hex_after(text, &pos, "clientState =", &ol);
    ck_assert_int_eq(picl__sha256(h, kb3, kl), PICL_OK);
    ck_assert(ol == 16 && memcmp(h, cs, 16) == 0);
    free(kb3);
    free(cs);

    /* d) computed oldsync bundle */
    uint8_t *kb4 = hex_after(text, &pos, "kB = ", &kl);
    uint8_t *w4 = hex_after(text, &pos, "HKDF(kB,\"oldsync\",64) =", &ol);
    ck_assert_uint_eq(ol, 64);
    ck_assert_int_eq(picl__hkdf_sha256(out, 64, kb4, kl, NULL, 0, info, strlen(info)), PICL_OK);
    ck_assert(memcmp(out, w4, 64) == 0);
    free(kb4);
    free(w4);

    /* 2. scoped keys: HKDF(kB || krs, salt = uid, info = ..scoped_key\n + id, 48) */
    size_t ul, rl, fl, sl;
    uint8_t *uid = hex_after(text, &pos, "uid                    =", &ul);
    uint8_t *kb5 = hex_after(text, &pos, "kB                     =", &kl);
    const char *idp = strstr(pos, "scoped_key_identifier  = '");
    ck_assert_ptr_nonnull(idp);
    idp += strlen("scoped_key_identifier  = '");
    size_t idl = strcspn(idp, "'");
    uint8_t *krs = hex_after(text, &pos, "key_rotation_secret    =", &rl);
    uint8_t *kfp = hex_after(text, &pos, "kSfp                   =", &fl);
    uint8_t *ks = hex_after(text, &pos, "kS                     =", &sl);
    uint8_t ikm[64];
    char sinfo[256];
    int sil = snprintf(sinfo, sizeof sinfo, "identity.mozilla.com/picl/v1/scoped_key\n%.*s", (int)idl, idp);
    memcpy(ikm, kb5, 32);
    memcpy(ikm + 32, krs, 32);
    ck_assert_int_eq(picl__hkdf_sha256(out, 48, ikm, 64, uid, ul, sinfo, (size_t)sil), PICL_OK);
    ck_assert(fl == 16 && memcmp(out, kfp, 16) == 0);
    ck_assert(sl == 32 && memcmp(out + 16, ks, 32) == 0);
    free(uid);
    free(kb5);
    free(krs);
    free(kfp);
    free(ks);
    free(text);
}
END_TEST

START_TEST(test_scrypt_rfc7914)
{
    tu_vecfile *f = tu_vec_load("scrypt.txt");
    int n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tu_case *c = &f->cases[i];
        if (!tu_get(c, "DK"))
            continue; /* s8-s10 are scrypt internals libscrypt does not expose */
        uint64_t N = strtoull(tu_get(c, "N"), NULL, 10);
        if (N > 65536 && !tu_slow())
            continue;
        size_t pl, sl, dl;
        uint8_t *p = field(c, "P", &pl), *s = field(c, "S", &sl), *dk = tu_unhex(tu_get(c, "DK"), &dl);
        uint8_t out[64];
        ck_assert_int_eq(picl__scrypt(out, dl, p, pl, s, sl, N, (uint32_t)strtoul(tu_get(c, "r"), NULL, 10),
                                      (uint32_t)strtoul(tu_get(c, "p"), NULL, 10), 0),
                         PICL_OK);
        ck_assert_msg(memcmp(out, dk, dl) == 0, "%s", c->name);
        free(p);
        free(s);
        free(dk);
        n++;
    }
    ck_assert_int_ge(n, tu_slow() ? 4 : 3);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_scrypt_errors)
{
    uint8_t out[32];
    ck_assert_int_eq(picl__scrypt(out, 32, "p", 1, "s", 1, 1000, 8, 1, 0), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__scrypt(out, 32, "p", 1, "s", 1, 1, 8, 1, 0), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__scrypt(out, 32, "p", 1, "s", 1, 1024, 0, 1, 0), PICL_ERROR_INVALID_ARGUMENT);
    /* the memory cap: 64 MiB needed, 32 MiB allowed, like OpenSSL's default */
    ck_assert_int_eq(picl__scrypt(out, 32, "p", 1, "s", 1, 65536, 8, 1, 32u << 20), PICL_ERROR_NO_MEMORY);
    /* memory the machine cannot give: 2^40 * 128 * 8 bytes */
    ck_assert_int_eq(picl__scrypt(out, 32, "p", 1, "s", 1, 1ull << 40, 8, 1, 0), PICL_ERROR_NO_MEMORY);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kdf");
    TCase *tc = tcase_create("kdf");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_pbkdf2_file);
    tcase_add_test(tc, test_pbkdf2_wycheproof);
    tcase_add_test(tc, test_pbkdf2_bad_args);
    tcase_add_test(tc, test_hkdf_rfc5869);
    tcase_add_test(tc, test_hkdf_wycheproof);
    tcase_add_test(tc, test_hkdf_limits);
    tcase_add_test(tc, test_oldsync_vectors);
    tcase_add_test(tc, test_scrypt_rfc7914);
    tcase_add_test(tc, test_scrypt_errors);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
