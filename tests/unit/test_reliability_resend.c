/* SPDX-License-Identifier: MPL-2.0 */
/* test_reliability_resend.c -- an account whose verification mail never went
 * out (the keyserver stopped between committing the account and mailing the
 * code) can still be verified: `picl account verify --resend` mails the code
 * again, from the device that signed up and from one that signed in later. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "testutil_cli.h"

static tucli T;
#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)

static void setup(void) { tucli_start(&T); }

static void teardown(void) { tucli_stop(&T); }

/* Number of verification mails to r@x.org in the Maildir. */
static int mails(void)
{
    char out[64];
    run(out, sizeof out, "grep -l '^X-Verify-Code:' data/mail/new/* 2>/dev/null | wc -l");
    return (int)strtol(out, NULL, 10);
}

START_TEST(test_resend_after_a_lost_mail)
{
    char out[4096], code[128];
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account create --server %s --email r@x.org", T.url), 0);
    /* the mail is lost: what a crash right after the account's commit leaves */
    ck_assert_int_eq(run(NULL, 0, "rm -f data/mail/new/*"), 0);
    ck_assert_int_eq(mails(), 0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 account verify --resend 2>&1"), 0);
    ck_assert_ptr_nonnull(strstr(out, "mailed again"));
    ck_assert_int_eq(mails(), 1);
    /* a device that signs in (an unverified account may) can ask too */
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q login --server %s --email r@x.org", T.url), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q account verify --resend"), 0);
    ck_assert_int_eq(mails(), 2);
    /* and the code it carries verifies the account */
    ck_assert_int_eq(run(code, sizeof code,
                         "grep -h '^X-Verify-Code:' data/mail/new/* | tail -1 | tr -d '\\r' | "
                         "cut -d' ' -f2"),
                     0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_uint_eq(strlen(code), 64);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account verify --code %s", code), 0);
    /* once verified there is nothing to resend; both options at once are a usage error */
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 account verify --resend 2>/dev/null"), 3);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 account verify --resend --code %s 2>/dev/null", code), 2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reliability_resend");
    TCase *tc = tcase_create("resend");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_resend_after_a_lost_mail);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
