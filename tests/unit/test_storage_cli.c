/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_cli.c -- the picl-storage program: its command line, start-up
 * errors, the --mint-token / --hawk development helpers, a clean stop. */
#include <libgen.h>
#include <signal.h>
#include <sys/wait.h>

#include "storage_fixture.h"
#include "testutil.h"

static char bin[4096];
static char dir[64];
static char secret[128], shortsecret[128];

static void setup(void)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(n, 0);
    self[n] = 0;
    snprintf(bin, sizeof bin, "%s/../picl-storage", dirname(self));
    ck_assert_msg(access(bin, X_OK) == 0, "%s not built", bin);
    snprintf(dir, sizeof dir, "/tmp/picl-cli-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(secret, sizeof secret, "%s/secret", dir);
    snprintf(shortsecret, sizeof shortsecret, "%s/short", dir);
    FILE *f = fopen(secret, "w");
    fprintf(f, "%s\n", (const char *)SF_SECRET);
    fclose(f);
    f = fopen(shortsecret, "w");
    fprintf(f, "0123456789abcdef0123456789abcde\n"); /* 31 bytes + newline */
    fclose(f);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
}

static void teardown(void)
{
    picl__nss_release();
    ck_assert_int_eq(tu_rmtree(dir), 0);
}

/* Runs picl-storage with args; returns its exit status, stdout in out. */
static int run(char *out, size_t cap, const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", bin, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_usage_errors)
{
    char out[4096], args[1024];
    ck_assert_int_eq(run(out, sizeof out, ""), 2);
    ck_assert_int_eq(run(out, sizeof out, "--listen 127.0.0.1:0"), 2);
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --data %s", dir);
    ck_assert_int_eq(run(out, sizeof out, args), 2); /* no secret file */
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --data %s --secret-file %s --bogus 1", dir, secret);
    ck_assert_int_eq(run(out, sizeof out, args), 2);
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --data %s --secret-file %s --quota-kb -5", dir, secret);
    ck_assert_int_eq(run(out, sizeof out, args), 2);
    ck_assert_int_eq(run(out, sizeof out, "--help"), 0);
    ck_assert_ptr_nonnull(strstr(out, "--mint-token"));
    /* start-up errors */
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --data %s --secret-file %s", dir, shortsecret);
    ck_assert_int_eq(run(out, sizeof out, args), 1);
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --data %s --secret-file %s/missing", dir, dir);
    ck_assert_int_eq(run(out, sizeof out, args), 1);
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --data %s/nodir --secret-file %s", dir, secret);
    ck_assert_int_eq(run(out, sizeof out, args), 1);
    snprintf(args, sizeof args, "--listen nonsense --data %s --secret-file %s", dir, secret);
    ck_assert_int_eq(run(out, sizeof out, args), 1);
}
END_TEST

START_TEST(test_mint_token_and_serve)
{
    char out[8192], args[2048];
    /* start the server on a free port and learn it */
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execl(bin, bin, "--listen", "127.0.0.1:0", "--data", dir, "--secret-file", secret, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[512] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    unsigned port = 0;
    const char *u = strstr(line, "serving http://127.0.0.1:");
    ck_assert_msg(u != NULL, "%s", line);
    ck_assert_int_eq(sscanf(u, "serving http://127.0.0.1:%u", &port), 1);

    /* the token, as /storage/token would hand it out */
    snprintf(args, sizeof args, "--listen 127.0.0.1:%u --secret-file %s --mint-token 7", port, secret);
    ck_assert_int_eq(run(out, sizeof out, args), 0);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    ck_assert_msg(j != NULL, "%s", out);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "uid")), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "duration")), 3600);
    char ep[128];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%u/1.5/7", port);
    ck_assert_str_eq(json_string_value(json_object_get(j, "api_endpoint")), ep);
    tu_cred c = {strdup(json_string_value(json_object_get(j, "id"))),
                 strdup(json_string_value(json_object_get(j, "key")))};
    json_decref(j);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%u", port);
    tu_req o = {.cred = &c, .ctype = "application/json", .body = "{\"payload\":\"cli\"}", .len = 17};
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, "PUT", base, "/1.5/7/storage/tabs/x", &o), 0);
    ck_assert_int_eq(r.status, 200);
    tu_resp_free(&r);
    tu_cred_free(&c);

    /* --hawk prints a header curl can send as is */
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:%u --secret-file %s --mint-token 7 --hawk GET %s/1.5/7/storage/tabs?full=1",
             port, secret, base);
    ck_assert_int_eq(run(out, sizeof out, args), 0);
    ck_assert_int_eq(strncmp(out, "Authorization: Hawk ", 20), 0);
    out[strcspn(out, "\n")] = 0;
    const char *h[] = {out, NULL};
    tu_req o2 = {.headers = h};
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/7/storage/tabs?full=1", &o2), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"payload\":\"cli\""));
    tu_resp_free(&r);
    /* signed for another uid's URL: refused */
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:%u --secret-file %s --mint-token 8 --hawk GET %s/1.5/7/info/collections",
             port, secret, base);
    ck_assert_int_eq(run(out, sizeof out, args), 0);
    out[strcspn(out, "\n")] = 0;
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/7/info/collections", &o2), 0);
    ck_assert_int_eq(r.status, 401);
    tu_resp_free(&r);

    /* SIGTERM stops it cleanly */
    kill(pid, SIGTERM);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    fclose(f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_usage_errors);
    tcase_add_test(tc, test_mint_token_and_serve);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
