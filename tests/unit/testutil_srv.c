/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_srv.c -- one server process per test (see testutil_srv.h). */
#include "testutil_srv.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

void tu_srv_setup(tu_srv *s, const char *prefix)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/%s-XXXXXX", prefix);
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
    s->pid = 0;
    s->port = 0;
}

void tu_srv_teardown(tu_srv *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
    tu_rmtree(s->dir);
}

void tu_srv_start(tu_srv *s, int storage, rlim_t nofile, const char *opt, const char *val)
{
    const char *extra[] = {opt, val, NULL};
    tu_srv_start_argv(s, storage, nofile, opt ? extra : NULL);
}

void tu_srv_start_argv(tu_srv *s, int storage, rlim_t nofile, const char *const *extra)
{
    const char *build = getenv("PICL_BUILD");
    ck_assert_ptr_nonnull(build);
    char bin[512], data[128], secret[160], log[160];
    snprintf(bin, sizeof bin, "%s/%s", build, storage ? "picl-storage" : "picl-keyserver");
    snprintf(data, sizeof data, "%s/data", s->dir);
    snprintf(secret, sizeof secret, "%s/secret", s->dir);
    snprintf(log, sizeof log, "%s/server.log", s->dir);
    FILE *f = fopen(secret, "w");
    ck_assert_ptr_nonnull(f);
    fputs("0123456789abcdef0123456789abcdef0123456789abcdef", f);
    fclose(f);
    mkdir(data, 0700);
    s->pid = fork();
    ck_assert_int_ge(s->pid, 0);
    if (s->pid == 0) {
        struct rlimit rl = {nofile, nofile};
        setrlimit(RLIMIT_NOFILE, &rl);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 1);
        const char *argv[32] = {storage ? "picl-storage" : "picl-keyserver",
                                "--listen",
                                "127.0.0.1:0",
                                "--data",
                                data,
                                "--secret-file",
                                secret};
        size_t n = 7;
        for (size_t i = 0; extra && extra[i] && n < 31; i++)
            argv[n++] = extra[i];
        argv[n] = NULL;
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    s->port = 0;
    for (int i = 0; i < 200 && !s->port; i++) {
        usleep(50000);
        f = fopen(log, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) {
            char *p = strstr(line, "on port ");
            if (p)
                s->port = (unsigned)strtoul(p + 8, NULL, 10);
        }
        if (f)
            fclose(f);
    }
    ck_assert_msg(s->port, "the server did not start");
}
