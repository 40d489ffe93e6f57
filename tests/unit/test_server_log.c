/* SPDX-License-Identifier: MPL-2.0 */
/* test_server_log.c -- the one log of both servers (server-stub/http/log.h):
 * the exact shape of request lines from a running keyserver and a running
 * storage server (control characters escaped, secret-looking query values
 * and key ids redacted), error and start-up lines, and the redaction rules
 * one by one. */
#include "testutil.h"
#include "testutil_ks.h"
#include "storage_fixture.h"
#include "client/storage_client.h"
#include "http/log.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIME_RE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "

static char lines[32][1024];
static int n_lines;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void capture(void *ctx, const char *line)
{
    (void)ctx;
    pthread_mutex_lock(&mu);
    if (n_lines < 32)
        snprintf(lines[n_lines++], sizeof lines[0], "%s", line);
    pthread_mutex_unlock(&mu);
}

static void reset_lines(void)
{
    pthread_mutex_lock(&mu);
    n_lines = 0;
    pthread_mutex_unlock(&mu);
}

/* The first captured line containing needle, copied into out; waits up to
 * 3 s (the glue logs a request once its answer is sent). */
static void wait_line(const char *needle, char *out, size_t cap)
{
    for (int tries = 0; tries < 300; tries++) {
        pthread_mutex_lock(&mu);
        for (int i = 0; i < n_lines; i++) {
            if (strstr(lines[i], needle)) {
                size_t n = strnlen(lines[i], cap - 1);
                memcpy(out, lines[i], n);
                out[n] = 0;
                pthread_mutex_unlock(&mu);
                return;
            }
        }
        pthread_mutex_unlock(&mu);
        usleep(10000);
    }
    ck_abort_msg("no log line with '%s' (%d lines)", needle, n_lines);
}

static void assert_matches(const char *line, const char *re)
{
    regex_t rx;
    ck_assert_int_eq(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB), 0);
    int rc = regexec(&rx, line, 0, NULL, 0);
    regfree(&rx);
    ck_assert_msg(rc == 0, "line '%s' does not match /%s/", line, re);
    for (const char *p = line; *p; p++)
        ck_assert_msg((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f, "raw byte in %s", line);
}

static int raw_status(unsigned port, const char *req, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(write(fd, req, len), (ssize_t)len);
    char buf[256];
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (got < sizeof buf - 1 && poll(&p, 1, 5000) == 1) {
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(buf, '\n', got))
            break;
    }
    close(fd);
    buf[got] = 0;
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = 0;
    return status;
}

START_TEST(redaction_rules)
{
    struct {
        const char *in, *want;
    } v[] = {
        {"/1.5/7/storage/bookmarks?newer=1700000000.25&full=1&limit=10",
         "/1.5/7/storage/bookmarks?newer=1700000000.25&full=1&limit=10"},
        {"/v1/account/keys?token=abc&newer=5&full", "/v1/account/keys?token=*&newer=5&full"},
        {"/x?code=123456&code=", "/x?code=*&code=*"},
        /* a harmless name with a value unlike its kind: redacted too */
        {"/s?newer=1.00/x?secret=S&limit=%41&ids=a,b-c_d.e~f", "/s?newer=*&limit=*&ids=a,b-c_d.e~f"},
        {"/v1/recoveryKey/0123456789abcdef0123456789abcdef", "/v1/recoveryKey/*"},
        {"/v1/recoveryKey/abc?x=1", "/v1/recoveryKey/*?x=*"},
        {"/a/0123456789abcdef0123456789ABCDEF/b", "/a/*/b"},
        {"/a/0123456789abcdef0123456789abcde/b", "/a/0123456789abcdef0123456789abcde/b"},
        {"/v1/x\x1b[2J\x08\x7f\\%0a", "/v1/x\\x1b[2J\\x08\\x7f\\x5c%0a"},
        {"/sp ace\xc3\xa9", "/sp\\x20ace\\xc3\\xa9"},
        {"/q?\x1b]0;owned\x07", "/q?\\x1b]0;owned\\x07"},
        {"", "-"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t n = srvlog_redact_target(out, sizeof out, v[i].in);
        ck_assert_str_eq(out, v[i].want);
        ck_assert_uint_eq(n, strlen(v[i].want));
    }
    ck_assert_uint_eq(srvlog_redact_target(out, sizeof out, NULL), 1);
    ck_assert_str_eq(out, "-");
    /* a cut never leaves half an escape */
    ck_assert_uint_eq(srvlog_redact_target(out, 6, "/ab\x01"), 3);
    ck_assert_str_eq(out, "/ab");
    /* the message escaper (srv_http_log_escape is it): space kept */
    ck_assert_uint_eq(srvlog_escape(out, sizeof out, "GET a b\\\r\n\x7f\xff", 100), 27);
    ck_assert_str_eq(out, "GET a b\\x5c\\x0d\\x0a\\x7f\\xff");
    ck_assert_uint_eq(srvlog_escape(out, sizeof out, "abcdef", 3), 3);
    ck_assert_str_eq(out, "abc");
    ck_assert_uint_eq(srvlog_escape(out, sizeof out, NULL, 3), 0);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(error_and_startup_lines)
{
    reset_lines();
    srvlog(capture, NULL, SRVLOG_ERROR, "picl-keyserver: cannot start: %s", "bad\r\nINFO forged");
    srvlog(capture, NULL, SRVLOG_INFO, "picl-keyserver: listening on port %u, data in %s", 8000u,
           "/srv/a b\\c");
    srvlog(NULL, NULL, SRVLOG_ERROR, "quiet"); /* no sink, no line, no crash */
    ck_assert_int_eq(n_lines, 2);
    assert_matches(lines[0], TIME_RE "ERROR picl-keyserver: cannot start: bad\\\\x0d\\\\x0aINFO forged$");
    assert_matches(lines[1], TIME_RE "INFO picl-keyserver: listening on port 8000, data in /srv/a b\\\\c$");
    /* the request line's own shape, without a server: no answer sent */
    srvlog_request(capture, NULL, NULL, NULL, "/x?password=hunter2", 0, 12);
    srvlog_request(capture, NULL, "::1", "POST", "/y", 503, 0);
    ck_assert_int_eq(n_lines, 4);
    assert_matches(lines[2], TIME_RE "WARN - - /x\\?password=\\* - 12ms$");
    assert_matches(lines[3], TIME_RE "ERROR ::1 POST /y 503 0ms$");
}
END_TEST

START_TEST(keyserver_logs_every_request)
{
    ks_config cfg = {.threads = 2, .log = capture};
    tuks_srv srv;
    reset_lines();
    tuks_start(&srv, &cfg);
    char line[1024];
    /* control characters in the target: escaped, one line */
    const char evil[] = "GET /v1/x\x1b[2J\x08 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    ck_assert_int_eq(raw_status(srv.port, evil, sizeof evil - 1), 404);
    wait_line("GET /v1/x", line, sizeof line);
    assert_matches(line, TIME_RE "INFO 127\\.0\\.0\\.1 GET /v1/x\\\\x1b\\[2J\\\\x08 404 [0-9]+ms$");
    /* a secret-looking query and a key id in the path: never in the log */
    const char secret[] =
        "GET /v1/recoveryKey/00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
        "?token=s3cr3tT0k3n&code=424242 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    ck_assert_int_eq(raw_status(srv.port, secret, sizeof secret - 1), 401);
    wait_line("GET /v1/recoveryKey/", line, sizeof line);
    assert_matches(line,
                   TIME_RE "INFO 127\\.0\\.0\\.1 GET /v1/recoveryKey/\\*\\?token=\\*&code=\\* 401 [0-9]+ms$");
    /* a glue error (411) is logged the same way */
    const char nolen[] = "POST /v1/account/create HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    ck_assert_int_eq(raw_status(srv.port, nolen, sizeof nolen - 1), 411);
    wait_line("POST /v1/account/create", line, sizeof line);
    assert_matches(line, TIME_RE "INFO 127\\.0\\.0\\.1 POST /v1/account/create 411 [0-9]+ms$");
    tuks_stop(&srv);
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n_lines; i++) {
        ck_assert_ptr_null(strstr(lines[i], "s3cr3tT0k3n"));
        ck_assert_ptr_null(strstr(lines[i], "424242"));
        ck_assert_ptr_null(strstr(lines[i], "00112233445566778899aabbccddeeff"));
    }
    ck_assert_int_eq(n_lines, 3); /* one line per request, nothing else */
    pthread_mutex_unlock(&mu);
}
END_TEST

START_TEST(storage_logs_every_request)
{
    storage_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.log = capture;
    reset_lines();
    sf_setup_with(&cfg);
    char line[1024];
    tu_resp r;
    tu_req o = {.cred = &SF.cred};
    ck_assert_int_eq(tu_http(&r, "GET", SF.base, "/1.5/42/info/collections", &o), 0);
    ck_assert_int_eq(r.status, 200);
    tu_resp_free(&r);
    wait_line("GET /1.5/42/info/collections", line, sizeof line);
    assert_matches(line, TIME_RE "INFO 127\\.0\\.0\\.1 GET /1\\.5/42/info/collections 200 [0-9]+ms$");
    ck_assert_int_eq(tu_http(&r, "GET", SF.base, "/1.5/42/storage/bookmarks?newer=12.50&full=1&sig=abc", &o),
                     0);
    ck_assert_int_eq(r.status, 200);
    tu_resp_free(&r);
    wait_line("GET /1.5/42/storage/bookmarks", line, sizeof line);
    assert_matches(
        line, TIME_RE
        "INFO 127\\.0\\.0\\.1 GET /1\\.5/42/storage/bookmarks\\?newer=12\\.50&full=1&sig=\\* 200 [0-9]+ms$");
    /* no credentials: 401, still one line */
    ck_assert_int_eq(tu_http(&r, "GET", SF.base, "/1.5/42/info/quota", NULL), 0);
    ck_assert_int_eq(r.status, 401);
    tu_resp_free(&r);
    wait_line("GET /1.5/42/info/quota", line, sizeof line);
    assert_matches(line, TIME_RE "INFO 127\\.0\\.0\\.1 GET /1\\.5/42/info/quota 401 [0-9]+ms$");
    sf_teardown();
}
END_TEST

/* `picl server` (both services on one port), as a process: its whole
 * standard error is lines of the one format, start-up and stop included. */
START_TEST(picl_server_process_lines)
{
    const char *b = getenv("PICL_BUILD");
    char bin[600], dir[] = "/tmp/picl-log-XXXXXX", data[200], outf[200], errf[200];
    snprintf(bin, sizeof bin, "%s/picl", b && *b ? b : "build");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(outf, sizeof outf, "%s/out", dir);
    snprintf(errf, sizeof errf, "%s/err", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (!freopen(outf, "w", stdout) || !freopen(errf, "w", stderr))
            _exit(126);
        execl(bin, "picl", "server", "--data", data, "--listen", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    unsigned port = 0;
    for (int i = 0; i < 100 && !port; i++) {
        usleep(100000);
        FILE *f = fopen(outf, "r");
        char line[512];
        const char *h;
        if (f && fgets(line, sizeof line, f) && (h = strstr(line, "http://127.0.0.1:")))
            port = (unsigned)strtoul(h + 17, NULL, 10);
        if (f)
            fclose(f);
    }
    ck_assert_uint_gt(port, 0);
    const char storage[] = "GET /1.5/1/info/collections HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    ck_assert_int_eq(raw_status(port, storage, sizeof storage - 1), 401);
    const char secret[] =
        "GET /v1/account/keys?token=t0k3nV4lu3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    ck_assert_int_eq(raw_status(port, secret, sizeof secret - 1), 401);
    const char evil[] = "GET /v1/x\x1b[31m HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    ck_assert_int_eq(raw_status(port, evil, sizeof evil - 1), 404);
    usleep(200000); /* the glue logs once the answer is out */
    kill(pid, SIGTERM);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    FILE *f = fopen(errf, "r");
    ck_assert_ptr_nonnull(f);
    char line[2048];
    int n = 0, seen[5] = {0};
    static const char *const want[5] = {
        TIME_RE "INFO picl server: earlier versions of synced records are kept 30 days",
        TIME_RE "INFO 127\\.0\\.0\\.1 GET /1\\.5/1/info/collections 401 [0-9]+ms$",
        TIME_RE "INFO 127\\.0\\.0\\.1 GET /v1/account/keys\\?token=\\* 401 [0-9]+ms$",
        TIME_RE "INFO 127\\.0\\.0\\.1 GET /v1/x\\\\x1b\\[31m 404 [0-9]+ms$",
        TIME_RE "INFO picl server: stopping$"};
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        n++;
        assert_matches(line, TIME_RE "(INFO|WARN|ERROR) ");
        ck_assert_ptr_null(strstr(line, "t0k3nV4lu3"));
        for (int i = 0; i < 5; i++) {
            regex_t rx;
            ck_assert_int_eq(regcomp(&rx, want[i], REG_EXTENDED | REG_NOSUB), 0);
            seen[i] += regexec(&rx, line, 0, NULL, 0) == 0;
            regfree(&rx);
        }
    }
    fclose(f);
    for (int i = 0; i < 5; i++)
        ck_assert_msg(seen[i] == 1, "%d lines, /%s/ seen %d times", n, want[i], seen[i]);
    ck_assert_int_eq(n, 5);
    ck_assert_int_eq(tu_rmtree(dir), 0);
}
END_TEST

/* IPv6 end to end: a storage server listening on [::1] names itself
 * http://[::1]:PORT, the storage client reaches it through curl_url, the
 * server reads the Host header "[::1]:PORT" with protocol/hostport.h and the
 * Hawk MAC of both sides covers the same "[::1]"; the log line names the
 * client "::1". */
START_TEST(ipv6_end_to_end)
{
    storage_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.listen = "[::1]:0";
    cfg.secret = SF_SECRET;
    cfg.secret_len = SF_SECRET_LEN;
    cfg.prune_interval_s = -1;
    cfg.log = capture;
    char dir[] = "/tmp/picl-log6-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    cfg.data_dir = dir;
    reset_lines();
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    storage_server *srv = NULL;
    ck_assert_int_eq(storage_server_new(&srv, &cfg), PICL_OK);
    ck_assert_int_eq(storage_server_start(srv), PICL_OK);
    char node[64], ep[96];
    snprintf(node, sizeof node, "http://[::1]:%u", storage_server_port(srv));
    ck_assert_str_eq(storage_server_node(srv), node);
    tu_cred cred;
    tu_mint(&cred, SF_SECRET, SF_SECRET_LEN, node, 42, 3600);
    snprintf(ep, sizeof ep, "%s/1.5/42", node);
    picl_stc *c = NULL;
    ck_assert_int_eq(picl__stc_new(&c, ep, cred.token, cred.key), PICL_OK);
    json_t *info = NULL;
    ck_assert_int_eq(picl__stc_info(c, "collections", -1, &info), PICL_OK);
    ck_assert(json_is_object(info));
    ck_assert_int_eq(json_object_size(info), 0);
    json_decref(info);
    char line[1024];
    wait_line("GET /1.5/42/info/collections", line, sizeof line);
    assert_matches(line, TIME_RE "INFO ::1 GET /1\\.5/42/info/collections 200 [0-9]+ms$");
    picl__stc_free(c);
    tu_cred_free(&cred);
    storage_server_free(srv);
    picl__nss_release();
    ck_assert_int_eq(tu_rmtree(dir), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("server_log");
    TCase *tc = tcase_create("server_log");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, redaction_rules);
    tcase_add_test(tc, error_and_startup_lines);
    tcase_add_test(tc, keyserver_logs_every_request);
    tcase_add_test(tc, storage_logs_every_request);
    tcase_add_test(tc, picl_server_process_lines);
    tcase_add_test(tc, ipv6_end_to_end);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
