/* SPDX-License-Identifier: MPL-2.0 */
/* test_http_exchange.c -- the one HTTP exchange of both clients
 * (components/client/http_exchange.h) against a one-shot loopback server
 * that answers canned bytes: what is sent (path as signed, fixed headers),
 * the response headers read with exact values, the cap on answers (too
 * large, nothing kept), a refused protocol and an unreachable server. */
#include "testutil.h"
#include "client/http_exchange.h"
#include "client/keyserver_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct one_shot {
    int lfd;
    unsigned port;
    const char *answer; /* sent whole after the request's headers */
    size_t answer_len;
    char request[4096]; /* what came (headers, and the body if it came along) */
    pthread_t th;
} one_shot;

static void *serve(void *arg)
{
    one_shot *o = arg;
    int fd = accept(o->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (got < sizeof o->request - 1 && poll(&p, 1, 5000) == 1) {
        ssize_t n = read(fd, o->request + got, sizeof o->request - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        o->request[got] = 0;
        const char *end = strstr(o->request, "\r\n\r\n");
        const char *cl = strcasestr(o->request, "Content-Length: ");
        if (end && (!cl || strlen(end + 4) >= (size_t)strtoul(cl + 16, NULL, 10)))
            break;
    }
    size_t off = 0;
    while (off < o->answer_len) {
        ssize_t n = write(fd, o->answer + off, o->answer_len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    close(fd);
    return NULL;
}

static void start(one_shot *o, const char *answer, size_t len)
{
    memset(o, 0, sizeof *o);
    o->answer = answer;
    o->answer_len = len;
    o->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(o->lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(o->lfd, 4), 0);
    socklen_t sl = sizeof a;
    ck_assert_int_eq(getsockname(o->lfd, (struct sockaddr *)&a, &sl), 0);
    o->port = ntohs(a.sin_port);
    ck_assert_int_eq(pthread_create(&o->th, NULL, serve, o), 0);
}

static void finish(one_shot *o)
{
    shutdown(o->lfd, SHUT_RDWR);
    pthread_join(o->th, NULL);
    close(o->lfd);
}

START_TEST(headers_read_exactly)
{
    static const char ans[] = "HTTP/1.1 200 OK\r\n"
                              "Content-Length: 2\r\n"
                              "X-Weave-Timestamp: 1700000000.25\r\n"
                              "X-Last-Modified:  1699999999.5 \r\n"
                              "X-Weave-Backoff: 120\r\n"
                              "Retry-After: Wed, 21 Oct 2026 07:28:00 GMT\r\n"
                              "X-Weave-Records: 42\r\n"
                              "X-Weave-Quota-Remaining: 1024.75\r\n"
                              "X-Weave-Next-Offset: abc123\r\n"
                              "WWW-Authenticate: Hawk ts=\"1\"\r\n"
                              "Connection: close\r\n\r\n{}";
    one_shot o;
    start(&o, ans, sizeof ans - 1);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/1.5/7/storage/a%%2Fb/../c?x=1", o.port);
    const char *h[] = {"Authorization: Hawk id=\"i\"", "Content-Type: application/json", NULL};
    picl_hx_request rq = {.method = "POST",
                          .url = url,
                          .headers = h,
                          .body = "[1]",
                          .body_len = 3,
                          .max_answer = 64,
                          .timeout_s = 10};
    picl_hx_response rs;
    CURL *c = curl_easy_init();
    ck_assert_int_eq(picl__hx_perform(c, &rq, &rs), PICL_OK);
    finish(&o);
    ck_assert_int_eq(rs.status, 200);
    ck_assert_str_eq(rs.body, "{}");
    ck_assert_uint_eq(rs.len, 2);
    ck_assert_int_eq(rs.weave_timestamp, 170000000025);
    ck_assert_int_eq(rs.last_modified, 169999999950);
    ck_assert_int_eq(rs.weave_backoff_s, 120);
    ck_assert_int_eq(rs.retry_after_s, -1); /* the HTTP-date form is not a delay we take */
    ck_assert_int_eq(rs.records, 42);
    ck_assert_int_eq(rs.quota_remaining_kb, 1024);
    ck_assert_int_eq(rs.has_next_offset, 1);
    ck_assert_str_eq(rs.next_offset, "abc123");
    ck_assert_str_eq(rs.www_auth, "Hawk ts=\"1\"");
    /* sent: the path exactly as signed, the caller's and the fixed headers */
    static const char line1[] = "POST /1.5/7/storage/a%2Fb/../c?x=1 HTTP/1.1\r\n";
    ck_assert_msg(!strncmp(o.request, line1, sizeof line1 - 1), "%s", o.request);
    ck_assert_ptr_nonnull(strstr(o.request, "\r\nAuthorization: Hawk id=\"i\"\r\n"));
    ck_assert_ptr_nonnull(strstr(o.request, "\r\nAccept: application/json\r\n"));
    ck_assert_ptr_nonnull(strstr(o.request, "\r\nContent-Type: application/json\r\n"));
    ck_assert_ptr_null(strcasestr(o.request, "\r\nExpect:"));
    ck_assert_ptr_nonnull(strstr(o.request, "\r\n\r\n[1]"));
    picl__hx_response_free(&rs);
    ck_assert_ptr_null(rs.body);
    ck_assert_int_eq(rs.weave_timestamp, -1);
    curl_easy_cleanup(c);
}
END_TEST

START_TEST(malformed_and_absent_headers)
{
    static const char ans[] = "HTTP/1.1 503 Service Unavailable\r\n"
                              "Content-Length: 0\r\n"
                              "X-Weave-Timestamp: -5\r\n"
                              "Retry-After: 30\r\n"
                              "X-Weave-Records: 1e3\r\n"
                              "X-Weave-Next-Offset: \r\n"
                              "Connection: close\r\n\r\n";
    one_shot o;
    start(&o, ans, sizeof ans - 1);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/x", o.port);
    picl_hx_request rq = {.method = "GET", .url = url, .max_answer = 64, .timeout_s = 10};
    picl_hx_response rs;
    CURL *c = curl_easy_init();
    ck_assert_int_eq(picl__hx_perform(c, &rq, &rs), PICL_OK);
    finish(&o);
    ck_assert_int_eq(rs.status, 503);
    ck_assert_ptr_null(rs.body);
    ck_assert_int_eq(rs.weave_timestamp, -1);
    ck_assert_int_eq(rs.retry_after_s, 30);
    ck_assert_int_eq(rs.weave_backoff_s, -1);
    ck_assert_int_eq(rs.records, -1);
    ck_assert_int_eq(rs.last_modified, -1);
    ck_assert_int_eq(rs.has_next_offset, 1);
    ck_assert_ptr_null(rs.next_offset); /* empty: the caller refuses it */
    ck_assert_ptr_null(rs.www_auth);
    picl__hx_response_free(&rs);
    curl_easy_cleanup(c);
}
END_TEST

START_TEST(answer_over_the_cap_is_too_large)
{
    static char ans[9000];
    int n = snprintf(ans, sizeof ans, "HTTP/1.1 200 OK\r\nContent-Length: 8000\r\nConnection: close\r\n\r\n");
    memset(ans + n, 'x', 8000);
    one_shot o;
    start(&o, ans, (size_t)n + 8000);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/big", o.port);
    picl_hx_request rq = {.method = "GET", .url = url, .max_answer = 4096, .timeout_s = 10};
    picl_hx_response rs;
    CURL *c = curl_easy_init();
    ck_assert_int_eq(picl__hx_perform(c, &rq, &rs), PICL_ERROR_TOO_LARGE);
    finish(&o);
    ck_assert_int_eq(rs.too_large, 1);
    ck_assert_int_eq(rs.status, 0);
    ck_assert_uint_le(rs.len, 4096);
    ck_assert_str_ne(rs.neterr, "");
    picl__hx_response_free(&rs);
    curl_easy_cleanup(c);
}
END_TEST

START_TEST(other_protocols_and_no_server)
{
    picl_hx_response rs;
    CURL *c = curl_easy_init();
    picl_hx_request rq = {
        .method = "GET", .url = "file:///etc/passwd", .max_answer = 1 << 20, .timeout_s = 5};
    ck_assert_int_eq(picl__hx_perform(c, &rq, &rs), PICL_ERROR_NETWORK);
    ck_assert_ptr_null(rs.body); /* nothing of the file was read */
    ck_assert_uint_eq(rs.len, 0);
    picl__hx_response_free(&rs);
    /* a port nobody listens on: NETWORK with libcurl's words */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof a;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &sl), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", ntohs(a.sin_port));
    rq.url = url;
    ck_assert_int_eq(picl__hx_perform(c, &rq, &rs), PICL_ERROR_NETWORK);
    close(fd);
    ck_assert_int_eq(rs.status, 0);
    ck_assert_str_ne(rs.neterr, "");
    picl__hx_response_free(&rs);
    curl_easy_cleanup(c);
}
END_TEST

/* The keyserver client through the one exchange: an answer over its 64 KiB
 * is a protocol failure (not a network one), nothing handed out; a 429's
 * Retry-After read by the shared header reader is remembered, and a
 * Retry-After of a week or more gives way to the body's retryAfter. */
START_TEST(keyserver_client_mappings)
{
    static char big[70 * 1024 + 200];
    int n = snprintf(big, sizeof big,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\nConnection: close\r\n\r\n{\"x\":\"",
                     70 * 1024 + 8);
    memset(big + n, 'a', 70 * 1024);
    memcpy(big + n + 70 * 1024, "\"}", 2);
    size_t len = (size_t)n + 70 * 1024 + 2;
    one_shot o;
    start(&o, big, len);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%u", o.port);
    picl_ks_client *c = NULL;
    ck_assert_int_eq(picl__ksc_new(&c, base), PICL_OK);
    json_t *out = (json_t *)&out;
    ck_assert_int_eq(picl__ksc_call(c, "GET", "/v1/x", NULL, 0, NULL, &out), PICL_ERROR_PROTOCOL);
    ck_assert_ptr_null(out);
    finish(&o);
    picl__ksc_free(c);

    static const char busy[] = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 120\r\n"
                               "Content-Type: application/json\r\nContent-Length: 42\r\n"
                               "Connection: close\r\n\r\n"
                               "{\"code\":429,\"errno\":114,\"retryAfter\":5}   ";
    start(&o, busy, sizeof busy - 1);
    snprintf(base, sizeof base, "http://127.0.0.1:%u", o.port);
    ck_assert_int_eq(picl__ksc_new(&c, base), PICL_OK);
    ck_assert_int_eq(picl__ksc_call(c, "GET", "/v1/x", NULL, 0, NULL, NULL), PICL_ERROR_BACKOFF);
    finish(&o);
    ck_assert_int_eq(picl__ksc_last(c)->http_status, 429);
    ck_assert_int_eq(picl__ksc_last(c)->errnum, 114);
    ck_assert_int_eq(picl__ksc_last(c)->retry_after, 120);
    picl__ksc_free(c);

    static const char week[] = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 604800\r\n"
                               "Content-Type: application/json\r\nContent-Length: 42\r\n"
                               "Connection: close\r\n\r\n"
                               "{\"code\":429,\"errno\":114,\"retryAfter\":5}   ";
    start(&o, week, sizeof week - 1);
    snprintf(base, sizeof base, "http://127.0.0.1:%u", o.port);
    ck_assert_int_eq(picl__ksc_new(&c, base), PICL_OK);
    ck_assert_int_eq(picl__ksc_call(c, "GET", "/v1/x", NULL, 0, NULL, NULL), PICL_ERROR_BACKOFF);
    finish(&o);
    ck_assert_int_eq(picl__ksc_last(c)->retry_after, 5);
    picl__ksc_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("http_exchange");
    TCase *tc = tcase_create("http_exchange");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, headers_read_exactly);
    tcase_add_test(tc, malformed_and_absent_headers);
    tcase_add_test(tc, answer_over_the_cap_is_too_large);
    tcase_add_test(tc, other_protocols_and_no_server);
    tcase_add_test(tc, keyserver_client_mappings);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
