/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_net.h -- loopback helpers of the fuzz targets that talk HTTP: send
 * raw bytes to an in-process server and read its answer; serve one canned
 * raw answer to an in-process client.  Header-only (static), so each target
 * stays one file and the replay build needs no extra object. */
#ifndef PICL_FUZZ_NET_H
#define PICL_FUZZ_NET_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Writes all of buf; 0 or -1. */
static inline int fz_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static inline int fz_connect(unsigned port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * Sends req[0..len) to 127.0.0.1:port, half-closes when half_close (a raw
 * request that may be incomplete: the server sees EOF instead of waiting),
 * and reads the answer until the server closes or timeout_ms passes without
 * data.  Returns the status code of the first answer, 0 when there was none
 * (the server may close a garbled request silently), -1 when the connection
 * failed.  The answer's bytes are dropped.
 */
static inline int fz_exchange(unsigned port, const void *req, size_t len, int half_close, int timeout_ms)
{
    char head[16];
    size_t got = 0;
    int status = 0;
    int fd = fz_connect(port);
    if (fd < 0)
        return -1;
    /* ACK at once: a server that writes its answer in pieces would
     * otherwise wait out our delayed ACK (Nagle) on every request */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* a server that answers early (413, 400) may close before all is sent */
    (void)fz_write_all(fd, req, len);
    if (half_close)
        shutdown(fd, SHUT_WR);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, timeout_ms);
        if (r <= 0)
            break;
        char buf[4096];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
        for (ssize_t i = 0; i < n && got < sizeof head; i++)
            head[got++] = buf[i];
    }
    close(fd);
    if (got >= 12 && memcmp(head, "HTTP/1.", 7) == 0 && head[9] >= '1' && head[9] <= '5')
        status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
    return status;
}

/* ---- a one-answer server for the clients' response parsers ------------- */

typedef struct fz_canned {
    int lfd; /* listening socket */
    unsigned port;
    uint8_t *answer;   /* what every request gets, then the connection closes */
    size_t answer_len; /* (a copy: a client may give up before it is sent) */
    pthread_mutex_t mu;
    pthread_t thread;
    int stop;
} fz_canned;

static void *fz_canned_main(void *arg)
{
    fz_canned *c = arg;
    for (;;) {
        int fd = accept(c->lfd, NULL, NULL);
        if (fd < 0) {
            if (__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST))
                break;
            continue;
        }
        if (__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST)) {
            close(fd);
            break;
        }
        /* read the request head (and whatever body comes with it) */
        char buf[65536];
        size_t have = 0;
        for (;;) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, 200) <= 0)
                break;
            ssize_t n = recv(fd, buf + have, sizeof buf - 1 - have, 0);
            if (n <= 0)
                break;
            have += (size_t)n;
            buf[have] = 0;
            char *end = strstr(buf, "\r\n\r\n");
            if (end) {
                const char *cl = strcasestr(buf, "\r\nContent-Length:");
                size_t want = cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
                if (have - (size_t)(end + 4 - buf) >= want || have >= sizeof buf - 1)
                    break;
            }
            if (have >= sizeof buf - 1)
                break;
        }
        pthread_mutex_lock(&c->mu);
        size_t alen = c->answer_len;
        uint8_t *ans = malloc(alen ? alen : 1);
        if (ans && alen)
            memcpy(ans, c->answer, alen);
        pthread_mutex_unlock(&c->mu);
        if (ans)
            (void)fz_write_all(fd, ans, alen);
        free(ans);
        shutdown(fd, SHUT_WR);
        close(fd);
    }
    return NULL;
}

/* Starts the canned server on 127.0.0.1 (any port); 0 or -1. */
static inline int fz_canned_start(fz_canned *c)
{
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    int one = 1;
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->lfd < 0)
        return -1;
    setsockopt(c->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(c->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(c->lfd, 64) != 0 ||
        getsockname(c->lfd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    c->port = ntohs(a.sin_port);
    return pthread_create(&c->thread, NULL, fz_canned_main, c) == 0 ? 0 : -1;
}

/* The answer the next requests get (copied). */
static inline void fz_canned_set(fz_canned *c, const uint8_t *answer, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        __builtin_trap();
    memcpy(copy, answer, len);
    pthread_mutex_lock(&c->mu);
    free(c->answer);
    c->answer = copy;
    c->answer_len = len;
    pthread_mutex_unlock(&c->mu);
}

#endif
