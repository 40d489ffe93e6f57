/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_cli.c -- driving the picl command in tests (see testutil_cli.h). */
#include "testutil_cli.h"
#include "testutil.h"

#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void tucli_start(tucli *t) { tucli_start_with(t, NULL); }

void tucli_start_with(tucli *t, const char *const *extra)
{
    memset(t, 0, sizeof *t);
    const char *b = getenv("PICL_BUILD"), *s = getenv("PICL_SRCDIR");
    snprintf(t->picl, sizeof t->picl, "%s/picl", b && *b ? b : "build");
    snprintf(t->src, sizeof t->src, "%s", s && *s ? s : ".");
    snprintf(t->dir, sizeof t->dir, "/tmp/picl-cli-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
    char outf[600], logf[600], data[600];
    snprintf(outf, sizeof outf, "%s/server.out", t->dir);
    snprintf(logf, sizeof logf, "%s/server.log", t->dir);
    snprintf(data, sizeof data, "%s/data", t->dir);
    t->server = fork();
    if (t->server == 0) {
        if (!freopen(outf, "w", stdout) || !freopen(logf, "w", stderr))
            _exit(126);
        /* test build: the keyserver accepts the clients' cheap parameters */
        setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 1);
        const char *argv[16] = {"picl", "server", "--data", data, "--listen", "127.0.0.1:0"};
        for (int i = 0; extra && extra[i] && i < 9; i++)
            argv[6 + i] = extra[i];
        execv(t->picl, (char *const *)argv);
        _exit(127);
    }
    /* wait for the line that says where it listens */
    for (int i = 0; i < 100 && !*t->url; i++) {
        usleep(100000);
        FILE *f = fopen(outf, "r");
        char line[512];
        if (f && fgets(line, sizeof line, f) && strstr(line, "http://"))
            sscanf(strstr(line, "http://"), "%127[^ ]", t->url);
        if (f)
            fclose(f);
    }
    ck_assert_msg(*t->url, "picl server did not start");
}

void tucli_stop(tucli *t)
{
    if (t->server > 0) {
        kill(t->server, SIGTERM);
        int st;
        waitpid(t->server, &st, 0);
    }
    ck_assert_int_eq(tu_rmtree(t->dir), 0);
}

int tucli_run(const tucli *t, char *out, size_t cap, const char *prefix, const char *fmt, ...)
{
    char cmd[4096], full[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full,
             "cd %s && export PICL_TEST_STRETCH_FLOOR=cheap P=%s MKP=%s/tests/make-profile.sh "
             "CMP=%s/tests/compare_profiles.py && %s%s",
             t->dir, t->picl, t->src, t->src, prefix, cmd);
    FILE *p = popen(full, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = 0, r;
    char buf[4096];
    while ((r = fread(buf, 1, sizeof buf, p)) > 0)
        if (out && n + r < cap) {
            memcpy(out + n, buf, r);
            n += r;
        }
    if (out)
        out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 128;
}
