/* SPDX-License-Identifier: MPL-2.0 */
/* test_nss.c -- NSS lifecycle: our own context when alone, the host's NSS
 * when it is up, and we shut down only what we opened. */
#include "testutil.h"
#include "crypto/nss.h"
#include "crypto/hash.h"

#include <nss.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

START_TEST(test_own_context)
{
    ck_assert(!NSS_IsInitialized());
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    ck_assert(NSS_IsInitialized());
    ck_assert_int_eq(picl__nss_own_context_open(), 1);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK); /* nested */
    picl__nss_release();
    ck_assert_int_eq(picl__nss_own_context_open(), 1);
    uint8_t h[32];
    ck_assert_int_eq(picl__sha256(h, "abc", 3), PICL_OK);
    picl__nss_release();
    ck_assert_int_eq(picl__nss_own_context_open(), 0);
    ck_assert(!NSS_IsInitialized()); /* the last release shut our context down */
    picl__nss_release();             /* an extra release is harmless */
    /* and it can come back */
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    ck_assert_int_eq(picl__sha256(h, "abc", 3), PICL_OK);
    picl__nss_release();
}
END_TEST

START_TEST(test_host_nss_is_left_alone)
{
    /* the "host" (Firefox) initialised NSS with a context of its own */
    NSSInitContext *host = NSS_InitContext("", "", "", "", NULL,
                                           NSS_INIT_READONLY | NSS_INIT_NOCERTDB | NSS_INIT_NOMODDB |
                                               NSS_INIT_FORCEOPEN | NSS_INIT_NOROOTINIT);
    ck_assert_ptr_nonnull(host);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    ck_assert_int_eq(picl__nss_own_context_open(), 0);
    uint8_t h[32];
    ck_assert_int_eq(picl__sha256(h, "abc", 3), PICL_OK);
    picl__nss_release();
    ck_assert(NSS_IsInitialized()); /* still the host's */
    ck_assert_int_eq(NSS_ShutdownContext(host), SECSuccess);
    ck_assert(!NSS_IsInitialized());
}
END_TEST

START_TEST(test_profile_context)
{
    char dir[] = "/tmp/picl-nss-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    picl_nss_profile *p = NULL;
    ck_assert_int_eq(picl__nss_profile_open(dir, 1, &p), PICL_OK);
    ck_assert_ptr_nonnull(p);
    char path[512];
    snprintf(path, sizeof path, "%s/key4.db", dir);
    ck_assert_int_eq(access(path, F_OK), 0); /* a writable open creates key4.db */
    picl__nss_profile_close(p);
    ck_assert(NSS_IsInitialized()); /* our no-DB context is still there */
    uint8_t h[32];
    ck_assert_int_eq(picl__sha256(h, "abc", 3), PICL_OK);
    picl__nss_release();
    ck_assert(!NSS_IsInitialized());
    ck_assert_int_eq(picl__nss_profile_open("", 0, &p), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(picl__nss_profile_open("/nonexistent/picl/dir", 0, &p), PICL_ERROR_NSS_INIT);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(tu_rmtree(dir), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nss");
    TCase *tc = tcase_create("nss");
    tcase_add_test(tc, test_own_context);
    tcase_add_test(tc, test_host_nss_is_left_alone);
    tcase_add_test(tc, test_profile_context);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
