/* SPDX-License-Identifier: MPL-2.0 */
/* test_demo.c -- `picl demo` finds its script in a build directory of the source tree, or in the layout `make install` makes (<prefix>/share/picl/demo beside <prefix>/bin/picl, also under DESTDIR), and without either says so (exit 1) instead of failing obscurely. */
#include "testutil.h"
#include "testutil_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tucli T;

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "", __VA_ARGS__)

/* A scratch directory and the picl under test; no server. */
static void setup(void)
{
    memset(&T, 0, sizeof T);
    const char *b = getenv("PICL_BUILD"), *s = getenv("PICL_SRCDIR");
    snprintf(T.picl, sizeof T.picl, "%s/picl", b && *b ? b : "build");
    snprintf(T.src, sizeof T.src, "%s", s && *s ? s : ".");
    snprintf(T.dir, sizeof T.dir, "/tmp/picl-demo-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(T.dir));
}

static void teardown(void) { ck_assert_int_eq(tu_rmtree(T.dir), 0); }

/* A demo script standing in for the real one: says which one ran and the
 * BUILD_DIR it was given. */
#define FAKE(dir, tag)                                                                                       \
    "mkdir -p " dir " && printf '#!/bin/sh\\necho \"" tag " ran with $1\"\\n' > " dir "/demo.sh"

START_TEST(test_installed_copy)
{
    char out[4096], want[512];
    /* as make install lays it out (prefix p, or DESTDIR/prefix) */
    ck_assert_int_eq(
        run(NULL, 0, "mkdir -p p/bin && cp $P p/bin/picl && " FAKE("p/share/picl/demo/scripts", "installed")),
        0);
    ck_assert_int_eq(run(out, sizeof out, "p/bin/picl demo 2>&1"), 0);
    snprintf(want, sizeof want, "installed ran with %s/p/bin\n", T.dir);
    ck_assert_str_eq(out, want);
    /* a build directory of the tree wins over an installed copy beside it */
    ck_assert_int_eq(run(NULL, 0, FAKE("p/scripts", "tree")), 0);
    ck_assert_int_eq(run(out, sizeof out, "p/bin/picl demo 2>&1"), 0);
    snprintf(want, sizeof want, "tree ran with %s/p/bin\n", T.dir);
    ck_assert_str_eq(out, want);
    /* and PICL_DEMO_SCRIPT over both */
    ck_assert_int_eq(run(NULL, 0, FAKE("own", "own")), 0);
    ck_assert_int_eq(run(out, sizeof out, "PICL_DEMO_SCRIPT=own/demo.sh p/bin/picl demo 2>&1"), 0);
    snprintf(want, sizeof want, "own ran with %s/p/bin\n", T.dir);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(run(out, sizeof out, "PICL_DEMO_SCRIPT=own/missing.sh p/bin/picl demo 2>&1"), 1);
    ck_assert_ptr_nonnull(strstr(out, "PICL_DEMO_SCRIPT names own/missing.sh, which cannot be read"));
}
END_TEST

START_TEST(test_alone_says_what_it_needs)
{
    char out[4096], want[512];
    ck_assert_int_eq(run(NULL, 0, "mkdir -p a/bin && cp $P a/bin/picl"), 0);
    ck_assert_int_eq(run(out, sizeof out, "a/bin/picl demo 2>&1"), 1);
    ck_assert_msg(strstr(out, "picl demo: the demo script is not here") != NULL, "%s", out);
    snprintf(want, sizeof want, "(%s/a/bin/../share/picl/demo/scripts/demo.sh)", T.dir);
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
    ck_assert_msg(strstr(out, "make install") != NULL && strstr(out, "firefox-esr") != NULL, "%s", out);
    /* a usage error is still a usage error */
    ck_assert_int_eq(run(out, sizeof out, "a/bin/picl demo extra 2>&1"), 2);
}
END_TEST

/* What make install copies is what the demo runs: every file demo.sh and
 * make-profile.sh use is in the Makefile's DEMO_EXEC/DEMO_DATA. */
START_TEST(test_install_list_covers_the_demo)
{
    char out[4096];
    ck_assert_int_eq(
        run(out, sizeof out,
            "cd %s && list=$(sed -n 's/^DEMO_\\(EXEC\\|DATA\\) *= *//p' Makefile.in | tr '\\n' ' ') && "
            "for f in tests/make-profile.sh tests/xpcshell/make_profile.js tests/xpcshell/dump_profile.js "
            "tests/xpcshell/profile_env.js scripts/demo.sh; do "
            "case \" $list \" in *\" $f \"*) ;; *) echo missing $f;; esac; done; "
            "grep -o 'xpcshell/[a-z_]*\\.js' scripts/demo.sh tests/make-profile.sh | sed 's/.*xpcshell/x/' | "
            "sort -u",
            T.src),
        0);
    ck_assert_msg(strstr(out, "missing") == NULL, "%s", out);
    /* make-profile.sh's modes the demo uses: the default and --dump */
    ck_assert_msg(strstr(out, "x/make_profile.js") != NULL && strstr(out, "x/dump_profile.js") != NULL, "%s",
                  out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("demo");
    TCase *tc = tcase_create("find");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_installed_copy);
    tcase_add_test(tc, test_alone_says_what_it_needs);
    tcase_add_test(tc, test_install_list_covers_the_demo);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
