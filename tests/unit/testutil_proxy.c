/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_proxy.c -- the flaky HTTP proxy of the tests (see testutil_proxy.h). */
#include "testutil_proxy.h"

#include <arpa/inet.h>
#include <check.h>
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

#include "protocol/hostport.h"

struct tupx {
    int lfd;
    unsigned up_port;
    char url[96], up_hostport[64], my_hostport[64];
    pthread_t th;
    atomic_int stop, active, faulted, seen;
    pthread_mutex_t mu; /* guards the fault fields */
    tupx_fault fault;
    char match[256];
    int count;
    long arg;
};

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static void b_add(buf *b, const void *d, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 4096;
        while (c < b->n + n + 1)
            c *= 2;
        char *q = realloc(b->p, c);
        if (!q)
            abort();
        b->p = q;
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void b_str(buf *b, const char *s) { b_add(b, s, strlen(s)); }

static int send_all(int fd, const char *p, size_t n)
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

/* The value of header `name` in a header block, into out; 1 when found. */
static int header(const char *block, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *l = block; l < block + len;) {
        size_t n = strcspn(l, "\r\n");
        if (n > nl && !strncasecmp(l, name, nl) && l[nl] == ':') {
            const char *v = l + nl + 1;
            while (*v == ' ')
                v++;
            size_t vl = (size_t)(l + n - v);
            if (vl >= cap)
                vl = cap - 1;
            memcpy(out, v, vl);
            out[vl] = 0;
            return 1;
        }
        l += n + 2;
    }
    return 0;
}

/* Reads one request (headers + Content-Length body); *hlen = header size
 * including the blank line.  0 on failure. */
static int read_request(int fd, buf *b, size_t *hlen)
{
    char tmp[16384];
    char *end = NULL;
    while (!end) {
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r <= 0)
            return 0;
        b_add(b, tmp, (size_t)r);
        end = strstr(b->p, "\r\n\r\n");
        if (!end && b->n > 65536)
            return 0;
    }
    *hlen = (size_t)(end - b->p) + 4;
    char cl[32];
    size_t want = header(b->p, *hlen, "Content-Length", cl, sizeof cl) ? strtoul(cl, NULL, 10) : 0;
    while (b->n - *hlen < want) {
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r <= 0)
            return 0;
        b_add(b, tmp, (size_t)r);
    }
    return 1;
}

/* Decodes a chunked body in place (best effort; stops at a malformed size). */
static void dechunk(buf *b)
{
    buf o = {0};
    b_add(&o, "", 0);
    size_t i = 0;
    while (i < b->n) {
        char *e;
        unsigned long sz = strtoul(b->p + i, &e, 16);
        char *nl = strstr(b->p + i, "\r\n");
        if (!nl || e == b->p + i)
            break;
        i = (size_t)(nl - b->p) + 2;
        if (!sz || i + sz > b->n)
            break;
        b_add(&o, b->p + i, sz);
        i += sz + 2;
    }
    free(b->p);
    *b = o;
}

/* Replaces every `from` in b by `to`. */
static void replace(buf *b, const char *from, const char *to)
{
    buf o = {0};
    b_add(&o, "", 0);
    size_t fl = strlen(from);
    const char *s = b->p ? b->p : "", *end = s + b->n;
    while (s < end) {
        const char *m = memmem(s, (size_t)(end - s), from, fl);
        if (!m) {
            b_add(&o, s, (size_t)(end - s));
            break;
        }
        b_add(&o, s, (size_t)(m - s));
        b_str(&o, to);
        s = m + fl;
    }
    free(b->p);
    *b = o;
}

/* 1 when line contains the parts of pattern (split at '*') in that order. */
static int matches(const char *line, const char *pattern)
{
    char part[256];
    const char *at = line;
    while (*pattern) {
        size_t n = strcspn(pattern, "*");
        snprintf(part, sizeof part, "%.*s", (int)(n < sizeof part ? n : sizeof part - 1), pattern);
        if (n) {
            const char *m = strstr(at, part);
            if (!m)
                return 0;
            at = m + n;
        }
        pattern += n + (pattern[n] == '*');
    }
    return 1;
}

/* The fault for this request line (and counts it). */
static tupx_fault pick(tupx *p, const char *line, long *arg)
{
    tupx_fault f = TUPX_PASS;
    pthread_mutex_lock(&p->mu);
    if (p->fault != TUPX_PASS && p->count != 0 && matches(line, p->match)) {
        f = p->fault;
        *arg = p->arg;
        if (p->count > 0)
            p->count--;
        atomic_fetch_add(&p->faulted, 1);
    }
    pthread_mutex_unlock(&p->mu);
    return f;
}

typedef struct conn {
    tupx *p;
    int fd;
} conn;

static void serve(tupx *p, int cfd)
{
    buf req = {0}, rsp = {0}, body = {0}, out = {0}, fw = {0};
    size_t hlen = 0;
    if (!read_request(cfd, &req, &hlen))
        goto done;
    atomic_fetch_add(&p->seen, 1);
    size_t ll = strcspn(req.p, "\r\n");
    char line[4096];
    snprintf(line, sizeof line, "%.*s", (int)(ll < sizeof line ? ll : sizeof line - 1), req.p);
    long arg = 0;
    tupx_fault f = pick(p, line, &arg);
    if (f == TUPX_RESET)
        goto done;
    if (f == TUPX_STATUS) {
        char r[256];
        const char *body503 = "{\"status\":\"flaky\"}";
        snprintf(r, sizeof r,
                 "HTTP/1.1 %ld Flaky\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 arg, strlen(body503), body503);
        send_all(cfd, r, strlen(r));
        goto done;
    }
    if (f == TUPX_DELAY)
        usleep((useconds_t)arg * 1000);
    /* forward as HTTP/1.0 with Connection: close: the answer ends at EOF */
    const char *v11 = memmem(req.p, ll, " HTTP/1.1", 9);
    if (v11) {
        b_add(&fw, req.p, (size_t)(v11 - req.p));
        b_str(&fw, " HTTP/1.0\r\n");
    } else {
        b_add(&fw, req.p, ll + 2);
    }
    for (const char *l = req.p + ll + 2; l < req.p + hlen - 2;) {
        size_t n = strcspn(l, "\r\n");
        if (strncasecmp(l, "Connection:", 11) && strncasecmp(l, "Expect:", 7))
            b_add(&fw, l, n + 2);
        l += n + 2;
    }
    b_str(&fw, "Connection: close\r\n\r\n");
    b_add(&fw, req.p + hlen, req.n - hlen);
    int ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->up_port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (ufd >= 0 && connect(ufd, (struct sockaddr *)&a, sizeof a) == 0 && !send_all(ufd, fw.p, fw.n)) {
        char tmp[65536];
        ssize_t r;
        while ((r = recv(ufd, tmp, sizeof tmp, 0)) > 0)
            b_add(&rsp, tmp, (size_t)r);
    }
    if (ufd >= 0)
        close(ufd);
    char *he = rsp.p ? strstr(rsp.p, "\r\n\r\n") : NULL;
    if (!he)
        goto done;
    size_t rh = (size_t)(he - rsp.p) + 4;
    b_add(&body, rsp.p + rh, rsp.n - rh);
    char te[64];
    if (header(rsp.p, rh, "Transfer-Encoding", te, sizeof te) && strcasestr(te, "chunked"))
        dechunk(&body);
    replace(&body, p->up_hostport, p->my_hostport);
    if (f == TUPX_TRUNCATE)
        body.n /= 2;
    if (f == TUPX_HUGE) {
        body.n = 0;
        b_str(&body, "[{\"id\":\"huge00000000\",\"modified\":1.00,\"payload\":\"");
        size_t mib = (size_t)(arg > 0 ? arg : 64);
        char *chunk = malloc(1 << 20);
        if (!chunk)
            abort();
        memset(chunk, 'A', 1 << 20);
        for (size_t i = 0; i < mib; i++)
            b_add(&body, chunk, 1 << 20);
        free(chunk);
        b_str(&body, "\"}]");
    }
    size_t sl = strcspn(rsp.p, "\r\n");
    if (f == TUPX_HUGE)
        b_str(&out, "HTTP/1.1 200 OK\r\n");
    else
        b_add(&out, rsp.p, sl + 2);
    for (const char *l = rsp.p + sl + 2; l < rsp.p + rh - 2;) {
        size_t n = strcspn(l, "\r\n");
        if (strncasecmp(l, "Content-Length:", 15) && strncasecmp(l, "Connection:", 11) &&
            strncasecmp(l, "Transfer-Encoding:", 18))
            b_add(&out, l, n + 2);
        l += n + 2;
    }
    char cl[96];
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\nConnection: close\r\n\r\n", body.n);
    b_str(&out, cl);
    size_t head = out.n;
    b_add(&out, body.p, body.n);
    /* a drop: the headers promise the whole body, half of it comes */
    send_all(cfd, out.p, f == TUPX_DROP ? head + body.n / 2 : out.n);
done:
    free(fw.p);
    free(out.p);
    free(body.p);
    free(rsp.p);
    free(req.p);
    close(cfd);
}

static void *conn_main(void *arg)
{
    conn c = *(conn *)arg;
    free(arg);
    serve(c.p, c.fd);
    atomic_fetch_sub(&c.p->active, 1);
    return NULL;
}

static void *accept_main(void *arg)
{
    tupx *p = arg;
    while (!atomic_load(&p->stop)) {
        struct pollfd pf = {.fd = p->lfd, .events = POLLIN};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        int cfd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0)
            continue;
        conn *c = malloc(sizeof *c);
        if (!c)
            abort();
        c->p = p;
        c->fd = cfd;
        atomic_fetch_add(&p->active, 1);
        pthread_t t;
        if (pthread_create(&t, NULL, conn_main, c) != 0) {
            atomic_fetch_sub(&p->active, 1);
            close(cfd);
            free(c);
            continue;
        }
        pthread_detach(t);
    }
    return NULL;
}

tupx *tupx_start(const char *upstream_url)
{
    tupx *p = calloc(1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    pthread_mutex_init(&p->mu, NULL);
    const char *hp = strstr(upstream_url, "://");
    ck_assert_ptr_nonnull(hp);
    snprintf(p->up_hostport, sizeof p->up_hostport, "%s", hp + 3);
    p->up_hostport[strcspn(p->up_hostport, "/")] = 0;
    picl_hostport up;
    ck_assert_int_eq(picl__hostport_parse(p->up_hostport, strlen(p->up_hostport), 0, 1, &up), PICL_OK);
    p->up_port = up.port;
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(p->lfd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(bind(p->lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(p->lfd, 64), 0);
    socklen_t len = sizeof a;
    ck_assert_int_eq(getsockname(p->lfd, (struct sockaddr *)&a, &len), 0);
    snprintf(p->my_hostport, sizeof p->my_hostport, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
    snprintf(p->url, sizeof p->url, "http://%s", p->my_hostport);
    ck_assert_int_eq(pthread_create(&p->th, NULL, accept_main, p), 0);
    return p;
}

void tupx_stop(tupx *p)
{
    if (!p)
        return;
    atomic_store(&p->stop, 1);
    pthread_join(p->th, NULL);
    close(p->lfd);
    for (int i = 0; i < 500 && atomic_load(&p->active) > 0; i++)
        usleep(10000);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

const char *tupx_url(const tupx *p) { return p->url; }

void tupx_set(tupx *p, tupx_fault f, const char *match, int count, long arg)
{
    pthread_mutex_lock(&p->mu);
    p->fault = f;
    snprintf(p->match, sizeof p->match, "%s", match ? match : "");
    p->count = count;
    p->arg = arg;
    atomic_store(&p->faulted, 0);
    pthread_mutex_unlock(&p->mu);
}

int tupx_faulted(const tupx *p) { return atomic_load(&((tupx *)p)->faulted); }

int tupx_seen(const tupx *p) { return atomic_load(&((tupx *)p)->seen); }
