/* SPDX-License-Identifier: MPL-2.0 */
/* test_stretch.c -- keyserver.md section 2: the PiCL stretch vectors
 * (K1, K2, stretchedPW, srpPW, unwrapBKey), the parameter floor, and
 * out-of-memory reported as an error. */
#include "testutil.h"
#include "protocol/stretch.h"
#include "crypto/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static uint8_t *val(const tu_vecfile *f, const char *key, size_t *len)
{
    /* the first value under this label that is pure hex (the file's
     * header repeats some labels with prose values) */
    for (size_t i = 0; i < f->n; i++)
        for (size_t j = 0; j < f->cases[i].n; j++) {
            const tu_kv *kv = &f->cases[i].kv[j];
            if (!strcmp(kv->key, key) && *kv->value &&
                strspn(kv->value, "0123456789abcdef") == strlen(kv->value))
                return tu_unhex(kv->value, len);
        }
    ck_abort_msg("vector %s missing", key);
    return NULL;
}

START_TEST(test_picl_era_stretch)
{
    tu_vecfile *f = tu_vec_load("picl_srp_era.txt");
    size_t el, pl, n;
    uint8_t *email = val(f, "email", &el), *pw = val(f, "password", &pl);
    picl_stretch_params p;
    picl__stretch_default_params(&p);
    picl_stretch_trace tr;
    uint8_t stretched[32];
    ck_assert_int_eq(picl__stretch(stretched, &p, NULL, (char *)email, el, (char *)pw, pl, &tr), PICL_OK);
    uint8_t *k1 = val(f, "K1 (scrypt input)", &n);
    ck_assert(n == 32 && memcmp(tr.k1, k1, 32) == 0);
    uint8_t *k2 = val(f, "K2 (scrypt output)", &n);
    ck_assert(n == 32 && memcmp(tr.k2, k2, 32) == 0);
    uint8_t *sp = val(f, "stretchedPW", &n);
    ck_assert(n == 32 && memcmp(stretched, sp, 32) == 0);
    size_t sl;
    uint8_t *salt = val(f, "mainSalt (normally random)", &sl);
    uint8_t srp_pw[32], unwrap[32];
    ck_assert_int_eq(picl__main_kdf(srp_pw, unwrap, stretched, salt, sl), PICL_OK);
    uint8_t *want_srp = val(f, "srpPW", &n);
    ck_assert(n == 32 && memcmp(srp_pw, want_srp, 32) == 0);
    ck_assert_int_eq(srp_pw[0], 0); /* the vector's leading zero survives */
    uint8_t *want_unwrap = val(f, "unwrapBKey", &n);
    ck_assert(n == 32 && memcmp(unwrap, want_unwrap, 32) == 0);
    free(email);
    free(pw);
    free(k1);
    free(k2);
    free(sp);
    free(salt);
    free(want_srp);
    free(want_unwrap);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_floor)
{
    picl_stretch_params p, floor;
    picl__stretch_default_params(&p);
    ck_assert_int_eq(picl__stretch_check_params(&p, NULL), PICL_OK);
    uint8_t out[32];
    memset(out, 0x77, sizeof out);
    /* each parameter lowered alone is refused before any work */
    picl_stretch_params weak[5];
    for (int i = 0; i < 5; i++)
        weak[i] = p;
    weak[0].pbkdf2_rounds_1 = 19999;
    weak[1].scrypt_n = 32768;
    weak[2].scrypt_r = 7;
    weak[3].scrypt_p = 0; /* zero is invalid, not merely weak */
    weak[4].pbkdf2_rounds_2 = 1;
    picl_status want[5] = {PICL_ERROR_WEAK_PARAMS, PICL_ERROR_WEAK_PARAMS, PICL_ERROR_WEAK_PARAMS,
                           PICL_ERROR_INVALID_ARGUMENT, PICL_ERROR_WEAK_PARAMS};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(picl__stretch_check_params(&weak[i], NULL), want[i]);
        ck_assert_int_eq(picl__stretch(out, &weak[i], NULL, "e", 1, "p", 1, NULL), want[i]);
    }
    /* N not a power of two */
    picl_stretch_params odd = p;
    odd.scrypt_n = 65537;
    ck_assert_int_eq(picl__stretch_check_params(&odd, NULL), PICL_ERROR_INVALID_ARGUMENT);
    /* absurd parameters from a hostile server are refused too */
    picl_stretch_params huge = p;
    huge.scrypt_n = 1ull << 30;
    ck_assert_int_eq(picl__stretch_check_params(&huge, NULL), PICL_ERROR_UNSUPPORTED);
    /* the ceiling is 4x the spec's values, each one alone, before any work;
     * a lowered floor does not move it */
    picl_stretch_params top;
    picl__stretch_ceiling_params(&top);
    ck_assert_uint_eq(top.pbkdf2_rounds_1, 80000);
    ck_assert_uint_eq(top.scrypt_n, 262144);
    ck_assert_uint_eq(top.scrypt_r, 32);
    ck_assert_uint_eq(top.scrypt_p, 4);
    ck_assert_uint_eq(top.pbkdf2_rounds_2, 80000);
    ck_assert_int_eq(picl__stretch_check_params(&top, NULL), PICL_OK);
    picl_stretch_params low = {1000, 1024, 8, 1, 1000};
    for (int i = 0; i < 5; i++) {
        picl_stretch_params over = top;
        switch (i) {
        case 0:
            over.pbkdf2_rounds_1++;
            break;
        case 1:
            over.scrypt_n *= 2;
            break;
        case 2:
            over.scrypt_r++;
            break;
        case 3:
            over.scrypt_p++;
            break;
        default:
            over.pbkdf2_rounds_2++;
        }
        memset(out, 0x77, sizeof out);
        ck_assert_int_eq(picl__stretch_check_params(&over, NULL), PICL_ERROR_UNSUPPORTED);
        ck_assert_int_eq(picl__stretch_check_params(&over, &low), PICL_ERROR_UNSUPPORTED);
        ck_assert_int_eq(picl__stretch(out, &over, NULL, "e", 1, "p", 1, NULL), PICL_ERROR_UNSUPPORTED);
        ck_assert(picl__iszero_ct(out, sizeof out)); /* wiped, nothing computed */
    }
    /* a lowered floor (tests only) admits cheap parameters */
    floor.pbkdf2_rounds_1 = 1;
    floor.scrypt_n = 2;
    floor.scrypt_r = 1;
    floor.scrypt_p = 1;
    floor.pbkdf2_rounds_2 = 1;
    picl_stretch_params cheap = {1, 16, 1, 1, 1};
    ck_assert_int_eq(picl__stretch_check_params(&cheap, NULL), PICL_ERROR_WEAK_PARAMS);
    ck_assert_int_eq(picl__stretch(out, &cheap, &floor, "e", 1, "p", 1, NULL), PICL_OK);
    /* and the result depends on every input */
    uint8_t o2[32];
    ck_assert_int_eq(picl__stretch(o2, &cheap, &floor, "f", 1, "p", 1, NULL), PICL_OK);
    ck_assert(memcmp(out, o2, 32) != 0);
    ck_assert_int_eq(picl__stretch(o2, &cheap, &floor, "e", 1, "q", 1, NULL), PICL_OK);
    ck_assert(memcmp(out, o2, 32) != 0);
}
END_TEST

START_TEST(test_kw)
{
    char *s;
    size_t n;
    ck_assert_int_eq(picl__kw(&s, &n, "first-PBKDF", "a@b", 3), PICL_OK);
    ck_assert_str_eq(s, "identity.mozilla.com/picl/v1/first-PBKDF:a@b");
    ck_assert_uint_eq(n, strlen(s));
    free(s);
    ck_assert_int_eq(picl__kw(&s, &n, "scrypt", NULL, 0), PICL_OK);
    ck_assert_str_eq(s, "identity.mozilla.com/picl/v1/scrypt");
    free(s);
}
END_TEST

/* ASan reserves terabytes of shadow space: an address-space limit cannot
 * be used there, so the ASan build does not have this test (main() below);
 * test_kdf covers the scrypt error path in both builds. */
#if !defined(__SANITIZE_ADDRESS__)
START_TEST(test_out_of_memory)
{
    /* leave scrypt far less than the 64 MiB it needs */
    struct rlimit rl = {256u << 20, 256u << 20};
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &rl), 0);
    picl_stretch_params p;
    picl__stretch_default_params(&p);
    p.scrypt_n = 1u << 18; /* 256 MiB: the most the ceiling allows */
    uint8_t out[32];
    memset(out, 0x55, sizeof out);
    ck_assert_int_eq(picl__stretch(out, &p, NULL, "e", 1, "p", 1, NULL), PICL_ERROR_NO_MEMORY);
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(out[i], 0); /* no partial key left behind */
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("stretch");
    TCase *tc = tcase_create("stretch");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_picl_era_stretch);
    tcase_add_test(tc, test_floor);
    tcase_add_test(tc, test_kw);
#if !defined(__SANITIZE_ADDRESS__)
    tcase_add_test(tc, test_out_of_memory);
#endif
    suite_add_tcase(s, tc);
    return tu_run(s);
}
