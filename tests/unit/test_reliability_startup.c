/* SPDX-License-Identifier: MPL-2.0 */
/* test_reliability_startup.c -- picl-storage refuses to start on a database
 * it cannot write (instead of answering every write 503 forever), and its
 * start-up failures name the path or address and the cause: a read-only
 * database, a missing data directory, a port in use; picl-keyserver's too. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char dir[64], out[4096];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/picl-start-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    chmod(dir, 0755);
    char p[128];
    snprintf(p, sizeof p, "%s/secret", dir);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs("0123456789abcdef0123456789abcdef0123456789abcdef", f);
    fclose(f);
    chmod(p, 0644);
    snprintf(p, sizeof p, "%s/data", dir);
    ck_assert_int_eq(mkdir(p, 0777), 0);
    chmod(p, 0777);
}

static void teardown(void) { tu_rmtree(dir); }

/* Runs picl-storage with `listen` and `data` (as uid when uid >= 0) for at
 * most 3 s; stderr goes to out.  Returns its exit status, or -1 when it was
 * still running (serving) after 3 s (then it is stopped). */
static int run_server(const char *name, const char *listen, const char *data, int uid)
{
    char bin[512], secret[128], log[128];
    snprintf(bin, sizeof bin, "%s/%s", getenv("PICL_BUILD"), name);
    snprintf(secret, sizeof secret, "%s/secret", dir);
    snprintf(log, sizeof log, "%s/stderr", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        dup2(fd, 2);
        if (uid >= 0 && (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0))
            _exit(126);
        execl(bin, name, "--listen", listen, "--data", data, "--secret-file", secret, (char *)NULL);
        _exit(127);
    }
    int st = 0, rc = -1;
    for (int i = 0; i < 30; i++) {
        usleep(100000);
        if (waitpid(pid, &st, WNOHANG) == pid) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
            break;
        }
    }
    if (rc == -1) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = 0;
    if (f)
        fclose(f);
    return rc;
}

static int run_storage(const char *listen, const char *data, int uid)
{
    return run_server("picl-storage", listen, data, uid);
}

START_TEST(test_read_only_database)
{
    char data[128], db[160];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(db, sizeof db, "%s/storage.db", data);
    /* made by a first run, then owned by root and read-only for the service user */
    ck_assert_int_eq(run_storage("127.0.0.1:0", data, -1), -1);
    ck_assert_int_eq(chmod(db, 0444), 0);
    int rc = run_storage("127.0.0.1:0", data, 65534);
    ck_assert_msg(rc == 1, "picl-storage on a read-only database: exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, db) && strstr(out, "cannot be written") && strstr(out, "read-only"),
                  "the message names neither the file nor the cause: %s", out);
}
END_TEST

START_TEST(test_missing_data_directory)
{
    char data[128];
    snprintf(data, sizeof data, "%s/nowhere", dir);
    int rc = run_storage("127.0.0.1:0", data, -1);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(out, data) && strstr(out, "No such file or directory"), "message: %s", out);
}
END_TEST

/* the port test for either server */
static void port_in_use(const char *name)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    char listen_at[64], data[128];
    snprintf(listen_at, sizeof listen_at, "127.0.0.1:%u", ntohs(a.sin_port));
    snprintf(data, sizeof data, "%s/data", dir);
    int rc = run_server(name, listen_at, data, -1);
    close(fd);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(out, listen_at) && strstr(out, "Address already in use"), "message: %s", out);
    ck_assert_ptr_null(strstr(out, "unreachable"));
}

START_TEST(test_port_in_use) { port_in_use("picl-storage"); }
END_TEST

START_TEST(test_keyserver_port_in_use) { port_in_use("picl-keyserver"); }
END_TEST

/* picl-keyserver on a database it cannot write: it refuses (it always
 * did), and now says which file and why */
START_TEST(test_keyserver_read_only_database)
{
    char data[128], db[160];
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(db, sizeof db, "%s/keyserver.db", data);
    ck_assert_int_eq(run_server("picl-keyserver", "127.0.0.1:0", data, -1), -1);
    ck_assert_int_eq(chmod(db, 0444), 0);
    int rc = run_server("picl-keyserver", "127.0.0.1:0", data, 65534);
    ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, db), "the message does not name %s: %s", db, out);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reliability_startup");
    TCase *tc = tcase_create("startup");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    if (geteuid() == 0) { /* a read-only file means nothing to root: run it as nobody */
        tcase_add_test(tc, test_read_only_database);
        tcase_add_test(tc, test_keyserver_read_only_database);
    }
    tcase_add_test(tc, test_missing_data_directory);
    tcase_add_test(tc, test_port_in_use);
    tcase_add_test(tc, test_keyserver_port_in_use);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
