/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_cli.h -- driving the picl command as a person does: a scratch
 * directory with `picl server` running in it, and shell command lines. */
#ifndef PICL_TESTUTIL_CLI_H
#define PICL_TESTUTIL_CLI_H

#include <stddef.h>
#include <sys/types.h>

typedef struct tucli {
    char dir[64];   /* scratch directory, the commands' working directory */
    char url[128];  /* where `picl server` listens */
    char picl[512]; /* $PICL_BUILD/picl */
    char src[512];  /* $PICL_SRCDIR, the source tree */
    pid_t server;
} tucli;

/* Makes the directory and starts `picl server --data DIR/data` on a free
 * loopback port; aborts the test when it does not come up. */
void tucli_start(tucli *t);
/* The same with more arguments for picl server (NULL-terminated, at most 9),
 * e.g. {"--restore-days", "0", NULL}. */
void tucli_start_with(tucli *t, const char *const *extra);
/* Stops the server (SIGTERM) and removes the directory. */
void tucli_stop(tucli *t);

/* Runs a command line with sh in t->dir and returns its exit status (128 +
 * signal when killed); out (may be NULL) receives stdout.  The environment
 * has P (the picl binary), MKP (tests/make-profile.sh), CMP
 * (tests/compare_profiles.py) and PICL_TEST_STRETCH_FLOOR=cheap; `prefix`
 * (may be "") is put before the command, e.g. "export PICL_PASSWORD=pw && ". */
int tucli_run(const tucli *t, char *out, size_t cap, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
