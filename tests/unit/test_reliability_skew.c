/* SPDX-License-Identifier: MPL-2.0 */
/* test_reliability_skew.c -- clock skew against a real picl-storage: its 401
 * carries Hawk ts and a tsm under the token's key (like the keyserver's
 * serverTime), and a storage client with a clock an hour off learns the
 * offset from that signed answer with one 401, then signs right at once. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/storage_client.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/nss.h"
#include "testutil.h"
#include "testutil_http.h"

static const uint8_t SECRET[] = "0123456789abcdef0123456789abcdef0123456789abcdef";
static char dir[64], base[64], node[64];
static pid_t pid;

static void setup(void)
{
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    snprintf(dir, sizeof dir, "/tmp/picl-skew-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char secret[128], data[128], log[128], bin[512];
    snprintf(secret, sizeof secret, "%s/secret", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(bin, sizeof bin, "%s/picl-storage", getenv("PICL_BUILD"));
    FILE *f = fopen(secret, "w");
    fputs((const char *)SECRET, f);
    fclose(f);
    mkdir(data, 0700);
    pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execl(bin, "picl-storage", "--listen", "127.0.0.1:0", "--data", data, "--secret-file", secret,
              (char *)NULL);
        _exit(127);
    }
    unsigned port = 0;
    for (int i = 0; i < 100 && !port; i++) {
        usleep(50000);
        char line[512];
        f = fopen(log, "r");
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, "on port "))
                port = (unsigned)strtoul(strstr(line, "on port ") + 8, NULL, 10);
        if (f)
            fclose(f);
    }
    ck_assert_msg(port, "picl-storage did not start");
    snprintf(base, sizeof base, "http://127.0.0.1:%u", port);
    snprintf(node, sizeof node, "http://127.0.0.1:%u", port);
}

static void teardown(void)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    tu_rmtree(dir);
    picl__nss_release();
}

/* attribute `name` of a Hawk challenge, into out */
static int attr(const char *www, const char *name, char *out, size_t cap)
{
    char pat[16];
    snprintf(pat, sizeof pat, "%s=\"", name);
    const char *p = strstr(www, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    size_t n = strcspn(p, "\"");
    if (n >= cap)
        return 0;
    memcpy(out, p, n);
    out[n] = 0;
    return 1;
}

START_TEST(test_401_carries_signed_server_time)
{
    tu_cred cred;
    tu_mint(&cred, SECRET, sizeof SECRET - 1, node, 42, 3600);
    tu_req o = {.cred = &cred, .hawk_ts_offset = -3600};
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/42/info/collections", &o), 0);
    ck_assert_int_eq(r.status, 401);
    char *www = tu_resp_header(&r, "WWW-Authenticate");
    ck_assert_ptr_nonnull(www);
    char ts[32], tsm[64];
    ck_assert_msg(attr(www, "ts", ts, sizeof ts) && attr(www, "tsm", tsm, sizeof tsm),
                  "no Hawk ts/tsm in WWW-Authenticate: %s", www);
    long long t = atoll(ts);
    ck_assert_int_le(llabs(t - (long long)time(NULL)), 2);
    /* tsm = base64(HMAC-SHA256(key, "hawk.1.ts\n<ts>\n")) */
    char text[48], want[64];
    uint8_t mac[32];
    int n = snprintf(text, sizeof text, "hawk.1.ts\n%s\n", ts);
    ck_assert_int_eq(picl__hmac_sha256(mac, cred.key, strlen(cred.key), text, (size_t)n), PICL_OK);
    picl__base64_encode(want, mac, sizeof mac);
    ck_assert_str_eq(tsm, want);
    free(www);
    tu_resp_free(&r);
    /* a token that is not genuine gets the time, but no tsm to trust it by */
    tu_cred bad = {.token = (char *)"bm90LWEtdG9rZW4", .key = cred.key};
    tu_req o2 = {.cred = &bad};
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/42/info/collections", &o2), 0);
    ck_assert_int_eq(r.status, 401);
    www = tu_resp_header(&r, "WWW-Authenticate");
    ck_assert_ptr_nonnull(www);
    ck_assert_ptr_null(strstr(www, "tsm="));
    free(www);
    tu_resp_free(&r);
    tu_cred_free(&cred);
}
END_TEST

START_TEST(test_client_learns_the_offset_once)
{
    tu_cred cred;
    tu_mint(&cred, SECRET, sizeof SECRET - 1, node, 43, 3600);
    char ep[128];
    snprintf(ep, sizeof ep, "%s/1.5/43", base);
    picl_stc *c = NULL;
    ck_assert_int_eq(picl__stc_new(&c, ep, cred.token, cred.key), PICL_OK);
    picl__stc_set_clock_offset(c, -3600); /* our clock is an hour slow */
    json_t *j = NULL;
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_OK);
    json_decref(j);
    ck_assert_int_eq(picl__stc_request_count(c), 2); /* one 401, then signed right */
    int64_t learned = picl__stc_clock_offset(c);
    ck_assert_int_le(llabs((long long)learned), 2);
    picl__stc_free(c);
    /* the next client (the next sync) starts from the kept offset: no 401 */
    ck_assert_int_eq(picl__stc_new(&c, ep, cred.token, cred.key), PICL_OK);
    picl__stc_set_clock_offset(c, learned);
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &j), PICL_OK);
    json_decref(j);
    ck_assert_int_eq(picl__stc_request_count(c), 1);
    picl__stc_free(c);
    tu_cred_free(&cred);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reliability_skew");
    TCase *tc = tcase_create("skew");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_401_carries_signed_server_time);
    tcase_add_test(tc, test_client_learns_the_offset_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
