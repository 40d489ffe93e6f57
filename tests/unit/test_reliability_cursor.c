/* SPDX-License-Identifier: MPL-2.0 */
/* test_reliability_cursor.c -- a device must never stop receiving records:
 * `picl sync` against a real `picl server` behind a proxy that hands over
 * incomplete but well-formed listings (200 [] without X-Last-Modified, a
 * whitespace-only array, a first page without X-Weave-Next-Offset) exits 4,
 * leaves lastSync where it was, and the next clean sync gets every record. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testutil.h"
#include "testutil_cli.h"

/* ---- a fault-injecting HTTP proxy (one connection at a time) ------------ */

typedef enum fault {
    F_PASS,         /* forward as is */
    F_EMPTY_NO_LM,  /* listing: body [], no X-Last-Modified, X-Weave-Records 0, no next offset */
    F_WHITESPACE,   /* listing: body "[" + 200 kB of spaces + "]", no next offset, other headers kept */
    F_NO_OFFSET,    /* listing: X-Weave-Next-Offset removed */
    F_INFO_503,     /* /info/collections: 503 with Retry-After: 7 */
    F_INFO_500,     /* /info/collections: 500 */
    F_INFO_GARBAGE, /* /info/collections: 200 with a body that is not JSON */
} fault;

static struct {
    int lfd;
    unsigned port, up_port;
    char up_hostport[64], my_hostport[64];
    atomic_int mode, stop;
    atomic_long faulted;
    pthread_t th;
} P;

typedef struct dbuf {
    char *p;
    size_t n, cap;
} dbuf;

static void db_add(dbuf *b, const void *d, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n + 1)
            nc *= 2;
        char *q = realloc(b->p, nc);
        ck_assert_ptr_nonnull(q);
        b->p = q;
        b->cap = nc;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void db_str(dbuf *b, const char *s) { db_add(b, s, strlen(s)); }

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The value of header `name` inside a header block, copied into out. */
static int hdr_get(const char *block, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *l = strstr(block, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
        const char *h = l + 2;
        if (!strncasecmp(h, name, nl) && h[nl] == ':') {
            const char *v = h + nl + 1;
            while (*v == ' ')
                v++;
            size_t vl = strcspn(v, "\r\n");
            if (vl >= cap)
                vl = cap - 1;
            memcpy(out, v, vl);
            out[vl] = 0;
            return 1;
        }
    }
    return 0;
}

/* Reads one request (headers + Content-Length body) into b; 0 on EOF/error. */
static int read_request(int fd, dbuf *b, size_t *hlen)
{
    char tmp[65536];
    for (;;) {
        char *e = b->p ? strstr(b->p, "\r\n\r\n") : NULL;
        if (e) {
            *hlen = (size_t)(e - b->p) + 4;
            char cl[32] = "0";
            hdr_get(b->p, "Content-Length", cl, sizeof cl);
            size_t need = *hlen + (size_t)strtoull(cl, NULL, 10);
            while (b->n < need) {
                ssize_t r = recv(fd, tmp, sizeof tmp, 0);
                if (r <= 0)
                    return 0;
                db_add(b, tmp, (size_t)r);
            }
            return 1;
        }
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r <= 0)
            return 0;
        db_add(b, tmp, (size_t)r);
    }
}

/* Replaces every occurrence of `from` in b by `to`. */
static void db_replace(dbuf *b, const char *from, const char *to)
{
    dbuf o = {0};
    db_add(&o, "", 0);
    size_t fl = strlen(from);
    const char *s = b->p ? b->p : "";
    const char *end = s + b->n;
    while (s < end) {
        const char *m = memmem(s, (size_t)(end - s), from, fl);
        if (!m) {
            db_add(&o, s, (size_t)(end - s));
            break;
        }
        db_add(&o, s, (size_t)(m - s));
        db_str(&o, to);
        s = m + fl;
    }
    free(b->p);
    *b = o;
}

static void serve_one(int cfd)
{
    dbuf req = {0}, rsp = {0};
    size_t hlen = 0;
    if (!read_request(cfd, &req, &hlen))
        goto out;
    /* request line and target */
    char line[4096];
    size_t ll = strcspn(req.p, "\r\n");
    if (ll >= sizeof line)
        goto out;
    memcpy(line, req.p, ll);
    line[ll] = 0;
    int listing = !strncmp(line, "GET ", 4) && strstr(line, "/storage/passwords?") && strstr(line, "full=1");
    /* forward with Connection: close */
    dbuf fw = {0};
    db_add(&fw, req.p, ll + 2);
    for (const char *l = req.p + ll + 2; l < req.p + hlen - 2;) {
        size_t n = strcspn(l, "\r\n");
        if (strncasecmp(l, "Connection:", 11))
            db_add(&fw, l, n + 2);
        l += n + 2;
    }
    db_str(&fw, "Connection: close\r\n\r\n");
    db_add(&fw, req.p + hlen, req.n - hlen);
    int ufd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)P.up_port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (ufd >= 0 && connect(ufd, (struct sockaddr *)&a, sizeof a) == 0 && !write_all(ufd, fw.p, fw.n)) {
        char tmp[65536];
        ssize_t r;
        while ((r = recv(ufd, tmp, sizeof tmp, 0)) > 0)
            db_add(&rsp, tmp, (size_t)r);
    }
    if (ufd >= 0)
        close(ufd);
    free(fw.p);
    char *he = rsp.p ? strstr(rsp.p, "\r\n\r\n") : NULL;
    if (!he)
        goto out;
    size_t rh = (size_t)(he - rsp.p) + 4;
    dbuf body = {0};
    db_add(&body, rsp.p + rh, rsp.n - rh);
    db_replace(&body, P.up_hostport, P.my_hostport); /* api_endpoint points here */
    int m = atomic_load(&P.mode);
    if (m >= F_INFO_503 && strstr(line, "/info/collections")) {
        atomic_fetch_add(&P.faulted, 1);
        const char *canned = m == F_INFO_503   ? "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\n"
                                                 "Content-Length: 1\r\nConnection: close\r\n\r\n0"
                             : m == F_INFO_500 ? "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 1\r\n"
                                                 "Connection: close\r\n\r\n0"
                                               : "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                                 "Content-Length: 9\r\nConnection: close\r\n\r\n<garbage>";
        write_all(cfd, canned, strlen(canned));
        free(body.p);
        goto out;
    }
    int fault_now = listing && m != F_PASS && strstr(rsp.p, " 200 ") == strchr(rsp.p, ' ');
    if (fault_now) {
        atomic_fetch_add(&P.faulted, 1);
        if (m == F_EMPTY_NO_LM) {
            body.n = 0;
            db_str(&body, "[]");
        } else if (m == F_WHITESPACE) {
            body.n = 0;
            db_str(&body, "[");
            for (int i = 0; i < 200000 / 64; i++)
                db_str(&body, "                                                                ");
            db_str(&body, "]");
        }
    }
    dbuf out = {0};
    size_t sl = strcspn(rsp.p, "\r\n");
    db_add(&out, rsp.p, sl + 2);
    for (const char *l = rsp.p + sl + 2; l < rsp.p + rh - 2;) {
        size_t n = strcspn(l, "\r\n");
        int drop = !strncasecmp(l, "Content-Length:", 15) || !strncasecmp(l, "Connection:", 11) ||
                   !strncasecmp(l, "Transfer-Encoding:", 18);
        if (fault_now && m == F_EMPTY_NO_LM &&
            (!strncasecmp(l, "X-Last-Modified:", 16) || !strncasecmp(l, "X-Weave-Records:", 16)))
            drop = 1;
        if (fault_now && !strncasecmp(l, "X-Weave-Next-Offset:", 20))
            drop = 1;
        if (!drop)
            db_add(&out, l, n + 2);
        l += n + 2;
    }
    if (fault_now && m == F_EMPTY_NO_LM)
        db_str(&out, "X-Weave-Records: 0\r\n");
    char cl[64];
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\nConnection: close\r\n\r\n", body.n);
    db_str(&out, cl);
    db_add(&out, body.p, body.n);
    write_all(cfd, out.p, out.n);
    free(out.p);
    free(body.p);
out:
    free(rsp.p);
    free(req.p);
    close(cfd);
}

static void *proxy_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&P.stop)) {
        struct pollfd pf = {.fd = P.lfd, .events = POLLIN};
        if (poll(&pf, 1, 100) <= 0)
            continue;
        int cfd = accept(P.lfd, NULL, NULL);
        if (cfd >= 0)
            serve_one(cfd);
    }
    return NULL;
}

static void proxy_start(const char *upstream_url)
{
    memset(&P, 0, sizeof P);
    const char *hp = strstr(upstream_url, "://");
    ck_assert_ptr_nonnull(hp);
    snprintf(P.up_hostport, sizeof P.up_hostport, "%s", hp + 3);
    P.up_port = (unsigned)strtoul(strrchr(P.up_hostport, ':') + 1, NULL, 10);
    P.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(bind(P.lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(P.lfd, 64), 0);
    socklen_t len = sizeof a;
    getsockname(P.lfd, (struct sockaddr *)&a, &len);
    P.port = ntohs(a.sin_port);
    snprintf(P.my_hostport, sizeof P.my_hostport, "127.0.0.1:%u", P.port);
    ck_assert_int_eq(pthread_create(&P.th, NULL, proxy_main, NULL), 0);
}

static void proxy_stop(void)
{
    atomic_store(&P.stop, 1);
    pthread_join(P.th, NULL);
    close(P.lfd);
}

/* ---- the story ----------------------------------------------------------- */

static tucli T;
#define run(out, cap, ...) tucli_run(&T, (out), (cap), "", __VA_ARGS__)

static void setup(void)
{
    tucli_start(&T);
    proxy_start(T.url);
}

static void teardown(void)
{
    proxy_stop();
    tucli_stop(&T);
}

/* Number of records in DIR/passwords.json (-1 when absent or unreadable). */
static long count_passwords(const char *d)
{
    char out[64];
    if (run(out, sizeof out,
            "python3 -c 'import json; print(len(json.load(open(\"%s/passwords.json\"))))' 2>/dev/null",
            d) != 0)
        return -1;
    return strtol(out, NULL, 10);
}

/* The lastSync of passwords in STATE/state.json ("" when none). */
static void last_sync(const char *state, char *out, size_t cap)
{
    run(out, cap,
        "python3 -c 'import json; print(json.load(open(\"%s/state.json\")).get(\"collections\",{})"
        ".get(\"passwords\",{}).get(\"lastSync\",\"\"))'",
        state);
    out[strcspn(out, "\n")] = 0;
}

/* One account whose first device uploaded n passwords, straight to the server. */
static int nrec;
static void upload_records(int n)
{
    char code[128], out[4096];
    ck_assert_int_eq(
        run(NULL, 0,
            "PICL_PASSWORD=password1 %s --state s1 account create --server %s --email r@x.org >/dev/null",
            T.picl, T.url),
        0);
    ck_assert_int_eq(
        run(out, sizeof out, "grep -h '^X-Verify-Code:' data/mail/new/* | tail -1 | tr -d '\\r'"), 0);
    ck_assert_ptr_nonnull(strchr(out, ':'));
    snprintf(code, sizeof code, "%s", strchr(out, ':') + 2);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 account verify --code %s", T.picl, code), 0);
    ck_assert_int_eq(
        run(NULL, 0,
            "mkdir f1 && python3 -c 'import json; json.dump([{\"id\":\"pw%%08d\" %% i,"
            "\"hostname\":\"https://h%%d.org\" %% i,\"password\":\"p%%d\" %% i,"
            "\"timePasswordChanged\":1} for i in range(%d)], open(\"f1/passwords.json\",\"w\"))'",
            n),
        0);
    nrec = n;
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 sync --store-dir f1 --collections passwords -q", T.picl), 0);
}

/* A new device through the proxy: the faulty sync is exit 4 with lastSync
 * and the store untouched; the clean one after it receives all nrec. */
static void device_under(fault f, const char *state, const char *dir)
{
    char out[8192], ls[64];
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD=password1 %s --state %s login --server http://%s --email r@x.org",
                         T.picl, state, P.my_hostport),
                     0);
    ck_assert_int_eq(run(NULL, 0, "mkdir %s", dir), 0);
    atomic_store(&P.faulted, 0);
    atomic_store(&P.mode, f);
    int rc = run(out, sizeof out, "%s --state %s sync --store-dir %s --collections passwords 2>&1", T.picl,
                 state, dir);
    atomic_store(&P.mode, F_PASS);
    ck_assert_int_gt(atomic_load(&P.faulted), 0);
    ck_assert_msg(rc == 4, "fault %d: picl sync exited %d: %s", (int)f, rc, out);
    last_sync(state, ls, sizeof ls);
    ck_assert_msg(!*ls || !strcmp(ls, "0"), "fault %d: lastSync moved to %s", (int)f, ls);
    long before = count_passwords(dir);
    ck_assert_msg(before <= 0, "fault %d: %ld records applied from an unverified listing", (int)f, before);
    ck_assert_int_eq(run(out, sizeof out, "%s --state %s sync --store-dir %s --collections passwords 2>&1",
                         T.picl, state, dir),
                     0);
    ck_assert_int_eq(count_passwords(dir), nrec);
    last_sync(state, ls, sizeof ls);
    ck_assert_str_ne(ls, "0");
}

/* each fault on its own account: one that the old code missed cannot hide another */
START_TEST(test_empty_without_last_modified)
{
    upload_records(30);
    device_under(F_EMPTY_NO_LM, "s2", "f2");
}
END_TEST

START_TEST(test_whitespace_array)
{
    upload_records(30);
    device_under(F_WHITESPACE, "s2", "f2");
}
END_TEST

START_TEST(test_first_page_without_next_offset)
{
    upload_records(1100); /* more than one page of 1000 */
    device_under(F_NO_OFFSET, "s2", "f2");
}
END_TEST

/* finding: a server that answered is never "cannot reach the storage server" */
START_TEST(test_errors_name_the_cause)
{
    upload_records(3);
    char out[8192];
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD=password1 %s --state s2 login --server http://%s --email r@x.org",
                         T.picl, P.my_hostport),
                     0);
    ck_assert_int_eq(run(NULL, 0, "mkdir f2"), 0);
    static const struct {
        fault f;
        const char *says;
    } cases[] = {
        {F_INFO_503, "wait 7 s"},
        {F_INFO_500, "failed (HTTP 500)"},
        {F_INFO_GARBAGE, "does not follow the protocol (HTTP 200)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        atomic_store(&P.mode, cases[i].f);
        int rc =
            run(out, sizeof out, "%s --state s2 sync --store-dir f2 --collections passwords 2>&1", T.picl);
        atomic_store(&P.mode, F_PASS);
        ck_assert_msg(rc == 4, "fault %d: exit %d: %s", (int)cases[i].f, rc, out);
        ck_assert_msg(strstr(out, cases[i].says) && (cases[i].f == F_INFO_503 || strstr(out, P.my_hostport)),
                      "fault %d said: %s", (int)cases[i].f, out);
        ck_assert_msg(!strstr(out, "cannot reach"), "fault %d said: %s", (int)cases[i].f, out);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reliability_cursor");
    TCase *tc = tcase_create("cursor");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_empty_without_last_modified);
    tcase_add_test(tc, test_whitespace_array);
    tcase_add_test(tc, test_first_page_without_next_offset);
    tcase_add_test(tc, test_errors_name_the_cause);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
