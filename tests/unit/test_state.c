/* SPDX-License-Identifier: MPL-2.0 */
/* test_state.c -- local state: round trip, secrets only as SDR blobs,
 * strict mode keeps kB out of the file, the sign-up's pending keyFetchToken
 * kept like kB, a corrupt file refused. */
#include "testutil.h"
#include "client/state.h"
#include "crypto/codec.h"
#include "crypto/nss.h"
#include "crypto/sdr.h"
#include "stores/fileutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/picl-state-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    /* as the picl command does: NSS opened on the state directory */
    ck_assert_int_eq(picl__nss_acquire_dir(dir), PICL_OK);
}

static void teardown(void)
{
    picl__nss_release();
    ck_assert_int_eq(tu_rmtree(dir), 0);
}

static char *file_text(void)
{
    char p[256], *t;
    snprintf(p, sizeof p, "%s/state.json", dir);
    ck_assert_int_eq(picl__read_file(p, 1 << 20, &t, NULL), PICL_OK);
    return t;
}

static void fill(picl_state *st)
{
    for (int i = 0; i < 32; i++) {
        st->ka[i] = (uint8_t)(0x20 + i);
        st->kb[i] = (uint8_t)(0x40 + i);
        st->session[i] = (uint8_t)(0xa0 + i);
    }
    st->has_ka = st->has_kb = st->has_session = 1;
    picl__state_set_str(&st->email, "andr\xc3\xa9@example.org");
    picl__state_set_str(&st->uid, "0123456789abcdef0123456789abcdef");
    picl__state_set_str(&st->keyserver, "http://127.0.0.1:1/");
    st->verified = 1;
    st->storage_token = json_pack("{s:s, s:s}", "id", "tok", "key", "secret-key-text");
}

START_TEST(test_roundtrip)
{
    picl_state *st;
    ck_assert_int_eq(picl__state_load(&st, dir, 1), PICL_OK);
    ck_assert_str_eq(st->uid, "");
    ck_assert_str_eq(picl__state_last_sync(st, "bookmarks"), "0");
    fill(st);
    ck_assert_int_eq(picl__state_set_last_sync(st, "bookmarks", "1234.56"), PICL_OK);
    st->classmap_version = 3;
    ck_assert_int_eq(picl__state_save(st), PICL_OK);
    picl__state_free(st);

    char *t = file_text();
    /* no secret in the clear: neither hex nor raw bytes nor the token key */
    ck_assert_ptr_null(strstr(t, "202122232425"));
    ck_assert_ptr_null(strstr(t, "404142434445"));
    ck_assert_ptr_null(strstr(t, "a0a1a2a3"));
    ck_assert_ptr_null(strstr(t, "secret-key-text"));
    ck_assert_ptr_nonnull(strstr(t, "\"keys\""));
    free(t);
    struct stat sb;
    char p[256];
    snprintf(p, sizeof p, "%s/state.json", dir);
    ck_assert_int_eq(stat(p, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0600);

    ck_assert_int_eq(picl__state_load(&st, dir, 1), PICL_OK);
    ck_assert(st->has_ka && st->has_kb && st->has_session && st->verified);
    ck_assert_int_eq(st->ka[0], 0x20);
    ck_assert_int_eq(st->kb[31], 0x5f);
    ck_assert_int_eq(st->session[5], 0xa5);
    ck_assert_str_eq(st->email, "andr\xc3\xa9@example.org");
    ck_assert_str_eq(picl__state_last_sync(st, "bookmarks"), "1234.56");
    ck_assert_uint_eq(st->classmap_version, 3);
    ck_assert_str_eq(json_string_value(json_object_get(st->storage_token, "key")), "secret-key-text");
    picl__state_sign_out(st);
    ck_assert(!st->has_ka && !st->has_kb && !st->has_session);
    ck_assert_str_eq(st->uid, "");
    ck_assert_str_eq(st->keyserver, "http://127.0.0.1:1/"); /* endpoints kept */
    picl__state_free(st);
}
END_TEST

START_TEST(test_strict_mode)
{
    picl_state *st;
    ck_assert_int_eq(picl__state_load(&st, dir, 0), PICL_OK);
    fill(st);
    ck_assert_int_eq(picl__state_save(st), PICL_OK);
    picl__state_free(st);
    char *t = file_text();
    ck_assert_ptr_null(strstr(t, "\"keys\""));
    ck_assert_ptr_nonnull(strstr(t, "\"kA\""));
    free(t);
    ck_assert_int_eq(picl__state_load(&st, dir, 0), PICL_OK);
    ck_assert(st->has_ka && !st->has_kb); /* kB lived only in memory */
    picl__state_free(st);
}
END_TEST

/* After signing up: the keyFetchToken and unwrapBKey are kept like kB (SDR,
 * never in the clear; not written in strict mode) and wiped by a sign-out. */
START_TEST(test_pending_keys)
{
    picl_state *st;
    for (int persist = 1; persist >= 0; persist--) {
        ck_assert_int_eq(picl__state_load(&st, dir, persist), PICL_OK);
        picl__state_set_str(&st->uid, "0123456789abcdef0123456789abcdef");
        for (int i = 0; i < 32; i++) {
            st->kft[i] = (uint8_t)(0x60 + i);
            st->unwrap[i] = (uint8_t)(0xc0 + i);
        }
        st->has_kft = 1;
        ck_assert_int_eq(picl__state_save(st), PICL_OK);
        picl__state_free(st);
        char *t = file_text();
        ck_assert_ptr_null(strstr(t, "606162636465"));
        ck_assert_ptr_null(strstr(t, "c0c1c2c3c4c5"));
        ck_assert_ptr_null(strstr(t, "YGFiY2RlZmdo")); /* base64 of the raw token */
        if (persist)
            ck_assert_ptr_nonnull(strstr(t, "\"pending_keys\""));
        else
            ck_assert_ptr_null(strstr(t, "\"pending_keys\""));
        free(t);
        ck_assert_int_eq(picl__state_load(&st, dir, persist), PICL_OK);
        ck_assert_int_eq(st->has_kft, persist);
        if (persist) {
            ck_assert_int_eq(st->kft[0], 0x60);
            ck_assert_int_eq(st->kft[31], 0x7f);
            ck_assert_int_eq(st->unwrap[31], 0xdf);
            picl__state_sign_out(st);
            ck_assert(!st->has_kft && st->kft[0] == 0 && st->unwrap[31] == 0);
            ck_assert_int_eq(picl__state_save(st), PICL_OK);
        }
        picl__state_free(st);
    }
    char *t = file_text();
    ck_assert_ptr_null(strstr(t, "\"pending_keys\""));
    free(t);
}
END_TEST

START_TEST(test_bad_files)
{
    char p[256];
    snprintf(p, sizeof p, "%s/state.json", dir);
    ck_assert_int_eq(picl__write_file_atomic(p, "[1,2", 4, 0600), PICL_OK);
    picl_state *st = (picl_state *)1;
    ck_assert_int_eq(picl__state_load(&st, dir, 1), PICL_ERROR_ENCODING);
    ck_assert_ptr_null(st);
    /* a tampered secret is dropped (sign in again), not trusted */
    const char *doc = "{\"uid\":\"u\",\"keys\":\"AAAA\",\"session\":\"!!\"}";
    ck_assert_int_eq(picl__write_file_atomic(p, doc, strlen(doc), 0600), PICL_OK);
    ck_assert_int_eq(picl__state_load(&st, dir, 1), PICL_OK);
    ck_assert(!st->has_ka && !st->has_kb && !st->has_session);
    picl__state_free(st);
    ck_assert_int_eq(picl__state_load(&st, "", 1), PICL_ERROR_INVALID_ARGUMENT);
    uint8_t *out;
    size_t n;
    ck_assert_int_eq(picl__sdr_decrypt(&out, &n, "not base64!"), PICL_ERROR_DECRYPT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("state");
    TCase *tc = tcase_create("state");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_strict_mode);
    tcase_add_test(tc, test_pending_keys);
    tcase_add_test(tc, test_bad_files);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
