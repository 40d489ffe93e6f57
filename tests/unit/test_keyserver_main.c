/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_main.c -- the picl-keyserver program: command line, data
 * directory and secret file creation, request log, persistence across a
 * restart, clean stop on SIGTERM/SIGINT. */
#include "testutil.h"
#include "testutil_ks.h"

#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/account.h"

static char bin[4096];
static char tmp[256];

/* build/tests/test_keyserver_main -> build/picl-keyserver */
static void find_binary(void)
{
    const char *b = getenv("PICL_BUILD");
    if (b && *b) {
        snprintf(bin, sizeof bin, "%s/picl-keyserver", b);
        return;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(n, 0);
    self[n] = 0;
    char *d = dirname(dirname(self));
    snprintf(bin, sizeof bin, "%s/picl-keyserver", d);
}

static void setup(void)
{
    tu_nss_setup();
    find_binary();
    ck_assert_msg(access(bin, X_OK) == 0, "%s not built", bin);
    snprintf(tmp, sizeof tmp, "/tmp/picl-ksmain-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

static void teardown(void)
{
    nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    tu_nss_teardown();
}

typedef struct proc {
    pid_t pid;
    FILE *err; /* the child's stderr */
    unsigned port;
} proc;

/* Starts the program with argv (NULL-terminated, without argv[0]); when
 * want_port, reads stderr until the "listening on port" line. */
static void spawn(proc *p, const char *const *args, int want_port)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    const char *argv[16] = {bin};
    size_t n = 1;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    p->pid = fork();
    ck_assert_int_ge(p->pid, 0);
    if (p->pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 1); /* test build: cheap accounts */
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    p->err = fdopen(fds[0], "r");
    p->port = 0;
    if (!want_port)
        return;
    char line[512];
    while (fgets(line, sizeof line, p->err)) {
        const char *s = strstr(line, "listening on port ");
        if (s) {
            p->port = (unsigned)strtoul(s + 18, NULL, 10);
            break;
        }
    }
    ck_assert_uint_gt(p->port, 0);
}

static int stop(proc *p, int sig)
{
    int status = 0;
    if (sig)
        kill(p->pid, sig);
    for (int i = 0; i < 100; i++) {
        if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
            fclose(p->err);
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        usleep(50000);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &status, 0);
    fclose(p->err);
    ck_abort_msg("picl-keyserver did not stop");
    return -1;
}

START_TEST(runs_logs_persists_and_stops)
{
    char data[300], secret[400];
    snprintf(data, sizeof data, "%s/a/b", tmp);
    snprintf(secret, sizeof secret, "%s/secret", data);
    const char *args[] = {"--listen", "127.0.0.1:0", "--data", data, NULL};
    proc p;
    spawn(&p, args, 1);

    /* the secret: 64 hex characters and a newline, mode 0600 */
    struct stat st;
    ck_assert_int_eq(stat(secret, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq(st.st_size, 65);
    FILE *f = fopen(secret, "r");
    char s1[80] = "", s2[80] = "";
    ck_assert_ptr_nonnull(fgets(s1, sizeof s1, f));
    fclose(f);
    ck_assert_uint_eq(strspn(s1, "0123456789abcdef"), 64);
    ck_assert_int_eq(s1[64], '\n');

    tuks_resp r;
    ck_assert_int_eq(tuks_request(p.port, "GET", "/__heartbeat__", NULL, NULL, 0, &r), 200);
    tuks_resp_free(&r);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%u", p.port);
    picl_ks_client *c;
    char uid[33];
    ck_assert_int_eq(picl__ksc_new(&c, base), PICL_OK);
    ck_assert_int_eq(picl__account_create(c, "a@b.c", 5, "pw", 2, tuks_params(), uid), PICL_OK);
    picl__ksc_free(c);

    ck_assert_int_eq(stop(&p, SIGTERM), 0);

    /* again on the same directory: same secret, same account */
    spawn(&p, args, 1);
    f = fopen(secret, "r");
    ck_assert_ptr_nonnull(fgets(s2, sizeof s2, f));
    fclose(f);
    ck_assert_str_eq(s1, s2);
    const char *h[] = {"Content-Type: application/json", NULL};
    ck_assert_int_eq(tuks_request(p.port, "POST", "/v1/auth/start", h, "{\"email\":\"6140622e63\"}", 22, &r),
                     200);
    tuks_resp_free(&r);
    kill(p.pid, SIGINT);
    /* one log line per request on stderr */
    char line[512];
    int logged = 0;
    while (fgets(line, sizeof line, p.err))
        logged += strstr(line, "POST /v1/auth/start 200") != NULL;
    ck_assert_int_eq(logged, 1);
    ck_assert_int_eq(stop(&p, 0), 0);
    /* the mail of the creation is in the Maildir */
    char maildir[600];
    snprintf(maildir, sizeof maildir, "%s/mail/new", data);
    ck_assert_int_eq(access(maildir, R_OK), 0);
}
END_TEST

START_TEST(bad_command_lines)
{
    proc p;
    const char *no_data[] = {"--listen", "127.0.0.1:0", NULL};
    spawn(&p, no_data, 0);
    ck_assert_int_eq(stop(&p, 0), 2);
    const char *unknown[] = {"--listen", "127.0.0.1:0", "--data", tmp, "--bogus", NULL};
    spawn(&p, unknown, 0);
    ck_assert_int_eq(stop(&p, 0), 2);
    const char *dangling[] = {"--data", NULL};
    spawn(&p, dangling, 0);
    ck_assert_int_eq(stop(&p, 0), 2);
    char sf[512];
    snprintf(sf, sizeof sf, "%s/short", tmp);
    FILE *f = fopen(sf, "w");
    fputs("abcd\n", f);
    fclose(f);
    const char *short_secret[] = {"--listen", "127.0.0.1:0", "--data", tmp, "--secret-file", sf, NULL};
    spawn(&p, short_secret, 0);
    ck_assert_int_eq(stop(&p, 0), 1);
    const char *bad_listen[] = {"--listen", "nonsense", "--data", tmp, NULL};
    spawn(&p, bad_listen, 0);
    ck_assert_int_eq(stop(&p, 0), 1);
}
END_TEST

START_TEST(secret_file_shared_with_storage)
{
    /* picl-storage's README makes its secret with base64: the same file works */
    char sf[512];
    snprintf(sf, sizeof sf, "%s/secret.b64", tmp);
    FILE *f = fopen(sf, "w");
    fputs("q0rT3b5pZ1W0kYl9XjzP2c8m5sVb6n7H4g3f2e1d0c9b8a7Z6Y5X4W3V2U1T0S9R\n", f);
    fclose(f);
    const char *args[] = {"--listen",       "127.0.0.1:0",        "--data", tmp, "--secret-file", sf,
                          "--storage-node", "http://127.0.0.1:9", NULL};
    proc p;
    spawn(&p, args, 1);
    tuks_resp r;
    ck_assert_int_eq(tuks_request(p.port, "GET", "/__heartbeat__", NULL, NULL, 0, &r), 200);
    tuks_resp_free(&r);
    ck_assert_int_eq(stop(&p, SIGTERM), 0);
    /* a secret with a control character inside is refused */
    f = fopen(sf, "w");
    fputs("q0rT3b5pZ1W0kYl9XjzP2c8m5sVb6n7H\t4g3f2e1d0c9b8a7Z6Y5X4W3V2U1T0S9R\n", f);
    fclose(f);
    spawn(&p, args, 0);
    ck_assert_int_eq(stop(&p, 0), 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_main");
    TCase *tc = tcase_create("program");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, runs_logs_persists_and_stops);
    tcase_add_test(tc, bad_command_lines);
    tcase_add_test(tc, secret_file_shared_with_storage);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
