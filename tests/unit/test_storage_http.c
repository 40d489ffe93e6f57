/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_http.c -- the libmicrohttpd glue (server-stub/http) and the
 * storage server's input parsers, bad cases first. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <time.h>

#include "http/http.h"
#include "protocol/hostport.h"
#include "storage/storage_auth.h"
#include "storage/storage_internal.h"
#include "testutil.h"
#include "testutil_http.h"

/* ---- a small server with echo routes ---------------------------------- */

static srv_http_server *H;
static char base[64];
static int finished;

static void echo(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    json_t *j = json_object();
    json_object_set_new(j, "route", json_string(ctx));
    json_object_set_new(j, "method", json_string(req->method));
    json_object_set_new(j, "target", json_string(req->target));
    json_object_set_new(j, "path", json_string(req->path));
    json_object_set_new(j, "query", json_string(req->query));
    json_t *p = json_array();
    for (size_t i = 0; i < req->nparams; i++)
        json_array_append_new(p, json_string(req->params[i]));
    json_object_set_new(j, "params", p);
    json_object_set_new(j, "body_len", json_integer((json_int_t)req->body_len));
    char *v = NULL;
    if (srv_http_query(req, "q", &v) == PICL_OK)
        json_object_set_new(j, "q", json_string(v));
    free(v);
    json_object_set_new(j, "has_flag", json_boolean(srv_http_query_has(req, "flag")));
    char addr[64], tiny[4];
    if (srv_http_client_addr(req, addr, sizeof addr) == PICL_OK)
        json_object_set_new(j, "addr", json_string(addr));
    json_object_set_new(j, "tiny", json_integer(srv_http_client_addr(req, tiny, sizeof tiny)));
    const char *h = srv_http_header(req, "x-test");
    if (h)
        json_object_set_new(j, "x_test", json_string(h));
    srv_http_respond_json(resp, 200, j);
    srv_http_add_header(resp, "X-Echo", "1");
    json_decref(j);
}

static void on_error(srv_http_request *req, srv_http_response *resp, int status, srv_http_error why,
                     void *ctx)
{
    char b[64];
    int n = snprintf(b, sizeof b, "{\"status\":%d,\"why\":%d}", status, (int)why);
    srv_http_respond(resp, status, "application/json", b, (size_t)n);
}

static void on_finish(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    __atomic_add_fetch(&finished, 1, __ATOMIC_SEQ_CST);
    srv_http_set_header(resp, "X-Finished", "yes");
}

static void setup(void)
{
    static const srv_http_hooks hooks = {.error = on_error, .finish = on_finish};
    srv_http_config cfg = {
        .listen = "127.0.0.1:0", .max_body = 1000, .require_content_length = 1, .hooks = &hooks};
    ck_assert_int_eq(srv_http_server_new(&H, &cfg), PICL_OK);
    ck_assert_int_eq(srv_http_route(H, "GET", "/a/*/b/*", echo, "ab", NULL), PICL_OK);
    ck_assert_int_eq(srv_http_route(H, "POST", "/a/*/b/*", echo, "ab-post", NULL), PICL_OK);
    ck_assert_int_eq(srv_http_route(H, "GET", "/", echo, "root", NULL), PICL_OK);
    ck_assert_int_eq(srv_http_route(H, "PUT", "/x", echo, "x", NULL), PICL_OK);
    ck_assert_int_eq(srv_http_route(H, "DELETE", "/del", echo, "del", NULL), PICL_OK);
    static const srv_http_hooks small = {.error = on_error, .finish = on_finish, .max_body = 10};
    ck_assert_int_eq(srv_http_route(H, "POST", "/small", echo, "small", &small), PICL_OK);
    ck_assert_int_eq(srv_http_route(H, "GET", "/*/*/*/*/*", echo, "five", NULL), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(srv_http_server_start(H), PICL_OK);
    ck_assert_int_gt(srv_http_server_port(H), 0);
    ck_assert_int_eq(srv_http_route(H, "GET", "/late", echo, "late", NULL), PICL_ERROR_INVALID_ARGUMENT);
    snprintf(base, sizeof base, "http://127.0.0.1:%u", srv_http_server_port(H));
    finished = 0;
}

static void teardown(void)
{
    srv_http_server_free(H);
    H = NULL;
}

static json_t *get_json(const char *method, const char *target, const tu_req *o, long want)
{
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, method, base, target, o), 0);
    ck_assert_msg(r.status == want, "%s %s: %ld %s", method, target, r.status, r.body);
    char *f = tu_resp_header(&r, "X-Finished");
    ck_assert_str_eq(f, "yes");
    free(f);
    json_error_t err;
    json_t *j = json_loads(r.body, 0, &err);
    ck_assert_ptr_nonnull(j);
    tu_resp_free(&r);
    return j;
}

START_TEST(test_routing_and_raw_target)
{
    json_t *j = get_json("GET", "/a/one%20two/b/%2F%41?q=a%2Bb+c&flag&z=1", NULL, 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "route")), "ab");
    ck_assert_str_eq(json_string_value(json_object_get(j, "target")),
                     "/a/one%20two/b/%2F%41?q=a%2Bb+c&flag&z=1");
    ck_assert_str_eq(json_string_value(json_object_get(j, "path")), "/a/one%20two/b/%2F%41");
    ck_assert_str_eq(json_string_value(json_object_get(j, "query")), "q=a%2Bb+c&flag&z=1");
    json_t *p = json_object_get(j, "params");
    ck_assert_str_eq(json_string_value(json_array_get(p, 0)), "one two");
    ck_assert_str_eq(json_string_value(json_array_get(p, 1)), "/A");
    ck_assert_str_eq(json_string_value(json_object_get(j, "q")), "a+b c");
    ck_assert(json_is_true(json_object_get(j, "has_flag")));
    ck_assert_str_eq(json_string_value(json_object_get(j, "addr")), "127.0.0.1");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "tiny")), PICL_ERROR_TOO_LARGE);
    json_decref(j);
    j = get_json("GET", "/", NULL, 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "route")), "root");
    ck_assert_str_eq(json_string_value(json_object_get(j, "query")), "");
    json_decref(j);
    static const char *const h[] = {"X-Test: hello", NULL};
    tu_req o = {.headers = h};
    j = get_json("GET", "/a/1/b/2", &o, 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "x_test")), "hello");
    json_decref(j);
}
END_TEST

START_TEST(test_glue_errors)
{
    json_t *j = get_json("GET", "/a/1/b", NULL, 404);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "why")), SRV_HTTP_ERR_NOT_FOUND);
    json_decref(j);
    j = get_json("GET", "/a//b/1", NULL, 404); /* "*" needs a non-empty segment */
    json_decref(j);
    j = get_json("GET", "/a/1/b/2/", NULL, 404);
    json_decref(j);
    j = get_json("DELETE", "/a/1/b/2", NULL, 405);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "why")), SRV_HTTP_ERR_METHOD);
    json_decref(j);
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, "DELETE", base, "/a/1/b/2", NULL), 0);
    char *allow = tu_resp_header(&r, "Allow");
    ck_assert_str_eq(allow, "GET, POST");
    free(allow);
    tu_resp_free(&r);
    /* undecodable segments */
    j = get_json("GET", "/a/%zz/b/1", NULL, 400);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "why")), SRV_HTTP_ERR_BAD_REQUEST);
    json_decref(j);
    j = get_json("GET", "/a/%00/b/1", NULL, 400);
    json_decref(j);
    /* bodies */
    char body[1002];
    memset(body, 'x', sizeof body);
    tu_req big = {.ctype = "text/plain", .body = body, .len = 1001};
    j = get_json("POST", "/a/1/b/2", &big, 413);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "why")), SRV_HTTP_ERR_TOO_LARGE);
    json_decref(j);
    tu_req ok = {.ctype = "text/plain", .body = body, .len = 1000};
    j = get_json("POST", "/a/1/b/2", &ok, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "body_len")), 1000);
    json_decref(j);
    /* a service's own cap */
    tu_req ten = {.ctype = "text/plain", .body = body, .len = 10};
    j = get_json("POST", "/small", &ten, 200);
    json_decref(j);
    tu_req eleven = {.ctype = "text/plain", .body = body, .len = 11};
    j = get_json("POST", "/small", &eleven, 413);
    json_decref(j);
    static const char *const chunked[] = {"Transfer-Encoding: chunked", NULL};
    tu_req ch = {.ctype = "text/plain", .body = "abc", .len = 3, .headers = chunked};
    j = get_json("PUT", "/x", &ch, 411);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "why")), SRV_HTTP_ERR_LENGTH_REQUIRED);
    json_decref(j);
}
END_TEST

/* A chunked body (no Content-Length, on a method that does not need one)
 * streams in up to the cap; past it the connection is dropped. */
START_TEST(test_chunked_cap)
{
    static const char *const chunked[] = {"Transfer-Encoding: chunked", NULL};
    char body[2001];
    memset(body, 'c', sizeof body);
    tu_req ok = {.ctype = "text/plain", .body = body, .len = 900, .headers = chunked};
    json_t *j = get_json("DELETE", "/del", &ok, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "body_len")), 900);
    json_decref(j);
    tu_req big = {.ctype = "text/plain", .body = body, .len = 2001, .headers = chunked};
    tu_resp r;
    int rc = tu_http(&r, "DELETE", base, "/del", &big);
    ck_assert_msg(rc != 0 || r.status != 200, "a chunked body over the cap was accepted");
    tu_resp_free(&r);
}
END_TEST

/* A Content-Length over the cap is refused on the headers alone: the body
 * is never sent, yet the answer comes at once. */
START_TEST(test_refused_before_body)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv_http_server_port(H))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    const char req[] = "POST /a/1/b/2 HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                       "Content-Length: 100000000\r\n\r\n";
    ck_assert_int_eq(send(fd, req, sizeof req - 1, 0), (ssize_t)(sizeof req - 1));
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    ck_assert_int_gt(n, 12);
    buf[n] = 0;
    ck_assert_msg(!strncmp(buf, "HTTP/1.1 413", 12), "%s", buf);
    close(fd);
}
END_TEST

/* Keep-alive: many requests over one connection. */
START_TEST(test_keepalive)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv_http_server_port(H))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(send(fd, req, sizeof req - 1, 0), (ssize_t)(sizeof req - 1));
        char buf[2048];
        ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
        ck_assert_int_gt(n, 12);
        buf[n] = 0;
        ck_assert_msg(!strncmp(buf, "HTTP/1.1 200", 12), "%s", buf);
    }
    close(fd);
    ck_assert_int_ge(__atomic_load_n(&finished, __ATOMIC_SEQ_CST), 5);
}
END_TEST

START_TEST(test_server_config_errors)
{
    srv_http_server *s;
    srv_http_config bad = {.listen = "nonsense"};
    ck_assert_int_eq(srv_http_server_new(&s, &bad), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(s), PICL_ERROR_INVALID_ARGUMENT);
    srv_http_server_free(s);
    srv_http_config bad2 = {.listen = "127.0.0.1:99999"};
    ck_assert_int_eq(srv_http_server_new(&s, &bad2), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(s), PICL_ERROR_INVALID_ARGUMENT);
    srv_http_server_free(s);
    srv_http_config none = {0};
    ck_assert_int_eq(srv_http_server_new(&s, &none), PICL_ERROR_INVALID_ARGUMENT);
    /* the port already taken */
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", srv_http_server_port(H));
    srv_http_config busy = {.listen = listen};
    ck_assert_int_eq(srv_http_server_new(&s, &busy), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(s), PICL_ERROR_NETWORK);
    srv_http_server_free(s);
    /* IPv6 loopback, when the machine has it */
    srv_http_config v6 = {.listen = "[::1]:0"};
    ck_assert_int_eq(srv_http_server_new(&s, &v6), PICL_OK);
    picl_status st = srv_http_server_start(s);
    ck_assert(st == PICL_OK || st == PICL_ERROR_NETWORK);
    srv_http_server_free(s);
    srv_http_server_free(NULL);
}
END_TEST

/* ---- pure functions: bad cases ---------------------------------------- */

START_TEST(test_unescape)
{
    struct {
        const char *in;
        int plus;
        const char *out; /* NULL = error */
    } v[] = {{"abc", 0, "abc"},       {"a%20b", 0, "a b"}, {"a+b", 0, "a+b"}, {"a+b", 1, "a b"},
             {"%41%4a%4A", 0, "AJJ"}, {"%", 0, NULL},      {"%4", 0, NULL},   {"%zz", 0, NULL},
             {"%00", 0, NULL},        {"ab%2", 1, NULL},   {"", 0, ""}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char *o = NULL;
        picl_status st = srv_http_unescape(v[i].in, strlen(v[i].in), v[i].plus, &o);
        if (v[i].out) {
            ck_assert_int_eq(st, PICL_OK);
            ck_assert_str_eq(o, v[i].out);
        } else {
            ck_assert_int_eq(st, PICL_ERROR_ENCODING);
            ck_assert_ptr_null(o);
        }
        free(o);
    }
}
END_TEST

START_TEST(test_buf)
{
    srv_buf b;
    srv_buf_init(&b, 16);
    srv_buf_puts(&b, "0123456789");
    srv_buf_printf(&b, "%d", 12345);
    ck_assert_int_eq(b.failed, 0);
    ck_assert_str_eq(b.data, "012345678912345");
    srv_buf_puts(&b, "x"); /* would reach the cap with the NUL */
    ck_assert_int_eq(b.failed, 1);
    size_t len;
    ck_assert_ptr_null(srv_buf_take(&b, &len));
    srv_buf_init(&b, 0);
    srv_buf_json_string(&b, "a\"b\\c\n\x01\xc3\xa9", 9);
    char *s = srv_buf_take(&b, &len);
    ck_assert_str_eq(s, "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"");
    ck_assert_uint_eq(len, strlen(s));
    json_error_t err;
    json_t *j = json_loads(s, JSON_DECODE_ANY, &err);
    ck_assert_str_eq(json_string_value(j), "a\"b\\c\n\x01\xc3\xa9");
    json_decref(j);
    free(s);
    srv_buf_init(&b, 0);
    s = srv_buf_take(&b, &len);
    ck_assert_str_eq(s, "");
    free(s);
}
END_TEST

static const storage_limits LIM = {.max_record_payload_bytes = 10,
                                   .max_post_records = 100,
                                   .max_post_bytes = 1000,
                                   .max_request_bytes = 2000,
                                   .max_total_records = 100,
                                   .max_total_bytes = 1000};

START_TEST(test_parse_bso_bad_cases)
{
    struct {
        const char *json;
        const char *reason; /* NULL = valid */
    } v[] = {
        {"{\"id\":\"abc\",\"payload\":\"x\",\"sortindex\":-999999999,\"ttl\":999999999}", NULL},
        {"{\"id\":\"a\",\"modified\":12.5}", NULL},
        {"{}", NULL},
        {"{\"id\":\"\"}", "invalid id"},
        {"{\"id\":\"0123456789012345678901234567890123456789012345678901234567890123x\"}", "invalid id"},
        {"{\"id\":\"a\\u007fb\"}", "invalid id"},
        {"{\"id\":\"a\\u00e9\"}", "invalid id"},
        {"{\"id\":5}", "invalid id"},
        {"{\"sortindex\":1000000000}", "invalid sortindex"},
        {"{\"sortindex\":1.5}", "invalid sortindex"},
        {"{\"sortindex\":true}", "invalid sortindex"},
        {"{\"ttl\":0}", "invalid ttl"},
        {"{\"ttl\":-3}", "invalid ttl"},
        {"{\"ttl\":1000000000}", "invalid ttl"},
        {"{\"ttl\":\"5\"}", "invalid ttl"},
        {"{\"payload\":[]}", "invalid payload"},
        {"{\"payload\":\"12345678901\"}", "payload too large"},
        {"{\"extra\":1}", "unknown field"},
        {"[]", "not an object"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        json_error_t err;
        json_t *j = json_loads(v[i].json, JSON_DECODE_ANY, &err);
        ck_assert_msg(j != NULL, "%s", v[i].json);
        sdb_bso b;
        const char *reason = NULL;
        picl_status st = storage__parse_bso(j, &LIM, &b, &reason);
        if (v[i].reason) {
            ck_assert_msg(st == PICL_ERROR_ENCODING, "%s accepted", v[i].json);
            ck_assert_str_eq(reason, v[i].reason);
            ck_assert_ptr_null(b.id);
            ck_assert_ptr_null(b.payload);
        } else {
            ck_assert_msg(st == PICL_OK, "%s: %s", v[i].json, reason);
        }
        storage__bso_clear(&b);
        json_decref(j);
    }
}
END_TEST

START_TEST(test_parse_bsos_bad_cases)
{
    sdb_bso *items;
    size_t n;
    json_t *failed = json_object();
    /* not JSON: PICL_ERROR_ENCODING (400/6); JSON but not a list:
     * PICL_ERROR_INVALID_ARGUMENT (400/8) */
    const char *not_list[] = {"", "{}", "\"x\"", "[", "[1,]", "nul", "[] []", "42"};
    const picl_status want[] = {PICL_ERROR_ENCODING, PICL_ERROR_INVALID_ARGUMENT, PICL_ERROR_INVALID_ARGUMENT,
                                PICL_ERROR_ENCODING, PICL_ERROR_ENCODING,         PICL_ERROR_ENCODING,
                                PICL_ERROR_ENCODING, PICL_ERROR_INVALID_ARGUMENT};
    for (size_t i = 0; i < sizeof not_list / sizeof not_list[0]; i++) {
        ck_assert_int_eq(storage__parse_bsos((const uint8_t *)not_list[i], strlen(not_list[i]), 0, &LIM,
                                             &items, &n, failed),
                         want[i]);
        ck_assert_ptr_null(items);
        ck_assert_int_eq(json_object_size(failed), 0);
    }
    const char *list = "[{\"id\":\"a\",\"payload\":\"1\"},{\"payload\":\"no id\"},7,"
                       "{\"id\":\"a\",\"sortindex\":2},{\"id\":\"b\",\"ttl\":-1}]";
    ck_assert_int_eq(storage__parse_bsos((const uint8_t *)list, strlen(list), 0, &LIM, &items, &n, failed),
                     PICL_OK);
    ck_assert_uint_eq(n, 1); /* the two "a" merged into the later one */
    ck_assert_str_eq(items[0].id, "a");
    ck_assert_int_eq(items[0].has_sortindex, 1);
    ck_assert_str_eq(json_string_value(json_object_get(failed, "#1")), "missing id");
    ck_assert_str_eq(json_string_value(json_object_get(failed, "#2")), "not an object");
    ck_assert_str_eq(json_string_value(json_object_get(failed, "b")), "invalid ttl");
    storage__bsos_free(items, n);
    json_object_clear(failed);
    const char *nl = "{\"id\":\"x\"}\n\n{broken\n[1]\n{\"id\":\"y\"}";
    ck_assert_int_eq(storage__parse_bsos((const uint8_t *)nl, strlen(nl), 1, &LIM, &items, &n, failed),
                     PICL_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(items[1].id, "y");
    ck_assert_str_eq(json_string_value(json_object_get(failed, "#1")), "invalid json");
    ck_assert_str_eq(json_string_value(json_object_get(failed, "#2")), "not an object");
    storage__bsos_free(items, n);
    json_decref(failed);
}
END_TEST

/* The JSON string writer copies runs of plain bytes eight at a time: every
 * byte that needs an escape is still escaped wherever it falls in a word.
 * The reference writes byte by byte; an escape is at most 6 bytes + NUL. */
static void ref_json_string(char *o, const unsigned char *s, size_t len)
{
    *o++ = '"';
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"' || s[i] == '\\')
            o += snprintf(o, 8, "\\%c", s[i]);
        else if (s[i] == '\n')
            o += snprintf(o, 8, "\\n");
        else if (s[i] == '\r')
            o += snprintf(o, 8, "\\r");
        else if (s[i] == '\t')
            o += snprintf(o, 8, "\\t");
        else if (s[i] < 0x20)
            o += snprintf(o, 8, "\\u%04x", s[i]);
        else
            *o++ = (char)s[i];
    }
    *o++ = '"';
    *o = 0;
}

START_TEST(test_json_string_runs)
{
    static const unsigned char special[] = {'"',  '\\', '\n', '\r', '\t', 0x01, 0x1f, 0x00,
                                            0x20, 0x7f, 0x80, 0xff, '!',  '#',  '[',  ']'};
    for (size_t len = 1; len <= 40; len++) {
        for (size_t pos = 0; pos < len; pos++) {
            for (size_t k = 0; k < sizeof special; k++) {
                unsigned char in[40];
                char want[40 * 6 + 3];
                memset(in, 'a' + (int)(len % 26), len);
                in[pos] = special[k];
                if (pos + 9 < len)
                    in[pos + 9] = special[(k + 1) % sizeof special];
                ref_json_string(want, in, len);
                srv_buf b;
                srv_buf_init(&b, 0);
                srv_buf_json_string(&b, (const char *)in, len);
                ck_assert_int_eq(b.failed, 0);
                ck_assert_msg(!strcmp(b.data, want), "len %zu pos %zu byte %02x: %s vs %s", len, pos,
                              special[k], b.data, want);
                srv_buf_free(&b);
            }
        }
    }
}
END_TEST

/* The one-pass path of a plain JSON list and the jansson path agree on
 * every body: same status, same records field by field, same failed
 * reasons (a body the one-pass path does not take goes whole to jansson). */
static void same_parse(const char *body, size_t len)
{
    sdb_bso *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    json_t *fa = json_object(), *fb = json_object();
    picl_status sa = storage__parse_bsos((const uint8_t *)body, len, 0, &LIM, &a, &na, fa);
    picl_status sb = storage__parse_bsos_json((const uint8_t *)body, len, 0, &LIM, &b, &nb, fb);
    ck_assert_msg(sa == sb, "%s: status %d vs %d", body, sa, sb);
    ck_assert_msg(na == nb, "%s: %zu vs %zu records", body, na, nb);
    for (size_t i = 0; i < na; i++) {
        ck_assert_str_eq(a[i].id, b[i].id);
        ck_assert_int_eq(a[i].has_sortindex, b[i].has_sortindex);
        ck_assert_int_eq(a[i].sortindex_null, b[i].sortindex_null);
        ck_assert_int_eq(a[i].sortindex, b[i].sortindex);
        ck_assert_int_eq(a[i].has_payload, b[i].has_payload);
        ck_assert_uint_eq(a[i].payload_len, b[i].payload_len);
        ck_assert_int_eq(!a[i].payload, !b[i].payload);
        if (a[i].payload)
            ck_assert_int_eq(memcmp(a[i].payload, b[i].payload, a[i].payload_len + 1), 0);
        ck_assert_int_eq(a[i].has_ttl, b[i].has_ttl);
        ck_assert_int_eq(a[i].ttl_null, b[i].ttl_null);
        ck_assert_int_eq(a[i].ttl, b[i].ttl);
    }
    char *da = json_dumps(fa, JSON_SORT_KEYS | JSON_COMPACT),
         *db = json_dumps(fb, JSON_SORT_KEYS | JSON_COMPACT);
    ck_assert_msg(!strcmp(da, db), "%s: failed %s vs %s", body, da, db);
    free(da);
    free(db);
    storage__bsos_free(a, na);
    storage__bsos_free(b, nb);
    json_decref(fa);
    json_decref(fb);
}

START_TEST(test_parse_bsos_fast_path_same)
{
    static const char *const bodies[] = {
        "[{\"id\":\"a\",\"payload\":\"x\\\"y\\\\z\\/w\\n\\t\\r\\b\\f\",\"sortindex\":-5,\"ttl\":30}]",
        " [ {\"id\" : \"a\" } ,\n{\"id\":\"b\",\"payload\":null,\"sortindex\":null,\"ttl\":null} ] \r\n",
        "[{\"id\":\"a\",\"payload\":\"1\"},{\"id\":\"b\"},{\"id\":\"a\",\"sortindex\":3}]",
        "[{\"id\":\"a\",\"modified\":12.5,\"collection\":\"c\"}]",
        "[{\"id\":\"a\",\"modified\":12,\"collection\":\"c\"}]",
        "[{\"id\":\"a\",\"modified\":\"x\",\"collection\":null}]",
        "[{\"id\":\"a\",\"sortindex\":01}]",
        "[{\"id\":\"a\",\"sortindex\":-0}]",
        "[{\"id\":\"a\",\"sortindex\":-}]",
        "[{\"id\":\"a\",\"sortindex\":1e3}]",
        "[{\"id\":\"a\",\"sortindex\":999999999}]",
        "[{\"id\":\"a\",\"sortindex\":-1000000000}]",
        "[{\"id\":\"a\",\"sortindex\":9999999999999999}]",
        "[{\"id\":\"a\",\"ttl\":1000000000}]",
        "[{\"id\":\"a\",\"ttl\":0}]",
        "[{\"id\":\"a\",\"sortindex\":true}]",
        "[{\"id\":\"a\",\"payload\":\"\\u00e9\"}]",
        "[{\"id\":\"a\",\"payload\":\"\xc3\xa9\"}]",
        "[{\"id\":\"a\",\"payload\":\"\xff\"}]",
        "[{\"id\":\"a\",\"payload\":\"a\x01"
        "b\"}]",
        "[{\"id\":\"a\",\"payload\":\"\\q\"}]",
        "[{\"id\":\"a\",\"payload\":\"\\u0000\"}]",
        "[{\"id\":\"a\",\"id\":\"b\"}]",
        "[{\"id\":\"a\",\"payload\":\"1\",\"payload\":\"2\"}]",
        "[{\"id\":\"a\"}] x",
        "[{\"id\":\"a\"},]",
        "[{\"id\":\"a\",}]",
        "[{\"id\":\"a\"}",
        "[{\"id\":\"a\",\"payload\":\"x\"",
        "[{\"id\":\"a\",\"payload\":\"x\"}{\"id\":\"b\"}]",
        "[{\"id\":\"a\",\"payload\":\"1234567890\"}]",
        "[{\"id\":\"a\",\"payload\":\"12345678901\"}]",
        "[{\"id\":\"a\\\"\"}]",
        "[{\"id\":\"a\\n\"}]",
        "[{\"id\":\"\"}]",
        "[{\"id\":7}]",
        "[{\"payload\":\"x\"}]",
        "[{}]",
        "[{\"id\":\"a\",\"extra\":1}]",
        "[{\"i\\u0064\":\"a\"}]",
        "[{\"id\":\"a\",\"payload\":nul}]",
        "[{\"id\":\"a\",\"payload\":nullx}]",
        "[{\"id\":\"a\",\"payload\":\"p\",\"ttl\":5,\"sortindex\":2}]",
        "[]",
        "  [ ]  ",
        "[[]]",
        "[7]",
        "[\"a\"]",
        "{\"id\":\"a\"}",
        "",
        "[",
        "[{\"id\":\"0123456789012345678901234567890123456789012345678901234567890123\"}]",
        "[{\"id\":\"0123456789012345678901234567890123456789012345678901234567890123x\"}]",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        same_parse(bodies[i], strlen(bodies[i]));
    /* a NUL byte inside and after */
    static const char nul1[] = "[{\"id\":\"a\"}]\0", nul2[] = "[{\"id\":\"a\0\"}]";
    same_parse(nul1, sizeof nul1 - 1);
    same_parse(nul2, sizeof nul2 - 1);
    /* the decoded escapes, exactly */
    sdb_bso *items;
    size_t n;
    json_t *failed = json_object();
    const char *b = "[{\"id\":\"k\",\"payload\":\"q\\\"\\\\\\/\\n\"}]";
    ck_assert_int_eq(storage__parse_bsos((const uint8_t *)b, strlen(b), 0, &LIM, &items, &n, failed),
                     PICL_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(items[0].payload_len, 5);
    ck_assert_str_eq(items[0].payload, "q\"\\/\n");
    storage__bsos_free(items, n);
    json_decref(failed);
}
END_TEST

START_TEST(test_split_host)
{
    struct {
        const char *in;
        const char *host; /* NULL = refused */
        unsigned port;
    } v[] = {{"example.org", "example.org", 80},
             {"127.0.0.1:8000", "127.0.0.1", 8000},
             {"[::1]:443", "[::1]", 443},
             {"[::1]", "[::1]", 80},
             {"h:65535", "h", 65535},
             {"", NULL, 0},
             {":80", NULL, 0},
             {"h:", NULL, 0},
             {"h:65536", NULL, 0},
             {"h:123456", NULL, 0},
             {"h:8o", NULL, 0},
             {"h:-1", NULL, 0},
             {"[::1", NULL, 0},
             {"[::1]x", NULL, 0},
             {"[::1]:", NULL, 0},
             {"a:b:c", NULL, 0}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        picl_hostport hp;
        int ok = picl__hostport_parse(v[i].in, strlen(v[i].in), 80, 0, &hp) == PICL_OK;
        ck_assert_msg(ok == (v[i].host != NULL), "'%s'", v[i].in);
        if (ok) {
            ck_assert_str_eq(hp.host, v[i].host);
            ck_assert_uint_eq(hp.port, v[i].port);
        }
    }
}
END_TEST

START_TEST(test_valid_names)
{
    ck_assert(storage__valid_coll("bookmarks"));
    ck_assert(storage__valid_coll("a.b_c-D9"));
    ck_assert(storage__valid_coll("abcdefghijklmnopqrstuvwxyz012345"));
    ck_assert(!storage__valid_coll("abcdefghijklmnopqrstuvwxyz0123456"));
    ck_assert(!storage__valid_coll(""));
    ck_assert(!storage__valid_coll("a/b"));
    ck_assert(!storage__valid_coll("a b"));
    ck_assert(!storage__valid_coll("caf\xc3\xa9"));
    ck_assert(storage__valid_id(" ~", 2));
    ck_assert(!storage__valid_id("a\x1f", 2));
    ck_assert(!storage__valid_id("a\x7f", 2));
    ck_assert(!storage__valid_id("", 0));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_http");
    TCase *tc = tcase_create("glue");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_routing_and_raw_target);
    tcase_add_test(tc, test_glue_errors);
    tcase_add_test(tc, test_refused_before_body);
    tcase_add_test(tc, test_keepalive);
    tcase_add_test(tc, test_chunked_cap);
    tcase_add_test(tc, test_server_config_errors);
    suite_add_tcase(s, tc);
    TCase *p = tcase_create("parsers");
    tcase_add_test(p, test_unescape);
    tcase_add_test(p, test_buf);
    tcase_add_test(p, test_parse_bso_bad_cases);
    tcase_add_test(p, test_parse_bsos_bad_cases);
    tcase_add_test(p, test_parse_bsos_fast_path_same);
    tcase_add_test(p, test_json_string_runs);
    tcase_add_test(p, test_valid_names);
    tcase_add_test(p, test_split_host);
    suite_add_tcase(s, p);
    return s;
}

int main(void) { return tu_run(suite()); }
