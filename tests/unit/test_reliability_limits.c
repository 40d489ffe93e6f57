/* SPDX-License-Identifier: MPL-2.0 */
/* test_reliability_limits.c -- slowloris against both real server processes
 * (picl-storage, picl-keyserver): many connections that send a byte now and
 * then cannot stop an honest client from being answered within a bound
 * (per-address connection cap, a connection limit below the descriptor
 * limit, and a request deadline that trickling bytes do not reset). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "testutil_srv.h"

static tu_srv srv;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void setup(void) { tu_srv_setup(&srv, "picl-lim"); }

static void teardown(void) { tu_srv_teardown(&srv); }

/* A connection from `src` that has sent the start of a request; -1 on failure. */
static int slow_open(const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, src, &a.sin_addr);
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port)};
    inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || connect(fd, (struct sockaddr *)&d, sizeof d) != 0) {
        close(fd);
        return -1;
    }
    send(fd, "GET /__heartbeat__ HTTP/1.1\r\nHost: x\r\nX-Slow: ", 46, MSG_NOSIGNAL);
    return fd;
}

/* One more byte on every open slow connection; a connection the server
 * closed (EOF, reset) is closed here and marked -1.  Returns how many are
 * still open. */
static int slow_drip(int *fds, int n)
{
    int open_n = 0;
    for (int i = 0; i < n; i++) {
        if (fds[i] < 0)
            continue;
        char b[256];
        ssize_t r = recv(fds[i], b, sizeof b, MSG_DONTWAIT);
        int gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || r > 0;
        if (!gone && send(fds[i], "a", 1, MSG_NOSIGNAL) != 1)
            gone = 1;
        if (gone) {
            close(fds[i]);
            fds[i] = -1;
        } else {
            open_n++;
        }
    }
    return open_n;
}

/* An honest GET /__heartbeat__ from 127.0.0.1: its HTTP status, or 0 when no
 * answer came within `within` seconds, while the slow ones keep dripping. */
static int honest(int *fds, int n, double within, double *took)
{
    double t0 = now_s();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port)};
    inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
    int status = 0;
    if (connect(fd, (struct sockaddr *)&d, sizeof d) == 0) {
        const char req[] = "GET /__heartbeat__ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        send(fd, req, sizeof req - 1, MSG_NOSIGNAL);
        char buf[64];
        size_t got = 0;
        double next_drip = now_s() + 0.5;
        while (now_s() - t0 < within && got < 12) {
            struct pollfd pf = {.fd = fd, .events = POLLIN};
            if (poll(&pf, 1, 100) > 0) {
                ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
                if (r <= 0)
                    break;
                got += (size_t)r;
            }
            if (now_s() > next_drip) {
                slow_drip(fds, n);
                next_drip += 0.5;
            }
        }
        buf[got] = 0;
        if (got >= 12 && !strncmp(buf, "HTTP/1.1 ", 9))
            status = (int)strtol(buf + 9, NULL, 10);
    }
    close(fd);
    *took = now_s() - t0;
    return status;
}

/* 200 slow connections from one address (127.0.0.2), server limited to 160
 * descriptors: the per-address cap keeps most of them out, the server keeps
 * room, and 127.0.0.1 is answered at once.  Default limits only. */
static void one_address(int storage)
{
    tu_srv_start(&srv, storage, 160, NULL, NULL);
    int fds[200];
    for (int i = 0; i < 200; i++)
        fds[i] = slow_open("127.0.0.2");
    usleep(300000);
    int still = slow_drip(fds, 200);
    double took;
    int st = honest(fds, 200, 3.0, &took);
    still = slow_drip(fds, 200);
    for (int i = 0; i < 200; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    ck_assert_msg(st == 200, "%s: honest client got %d after %.1f s", storage ? "storage" : "keyserver", st,
                  took);
    ck_assert_msg(took < 2.0, "honest client waited %.1f s", took);
    ck_assert_msg(still <= 64, "%d connections from one address still open (cap 64)", still);
}

/* 100 slow connections from 100 addresses (the per-address cap does not
 * help), a 2 s request deadline: each is closed about 2 s after it came
 * although it sends a byte every 0.5 s, and the honest client is answered
 * within deadline + margin. */
static void many_addresses(int storage)
{
    tu_srv_start(&srv, storage, 160, "--request-timeout", "2");
    int fds[100];
    double t0 = now_s();
    for (int i = 0; i < 100; i++) {
        char src[32];
        snprintf(src, sizeof src, "127.0.1.%d", i + 1);
        fds[i] = slow_open(src);
    }
    double took;
    int st = honest(fds, 100, 6.0, &took);
    ck_assert_msg(st == 200, "%s: honest client got %d after %.1f s", storage ? "storage" : "keyserver", st,
                  took);
    ck_assert_msg(took < 5.0, "honest client waited %.1f s", took);
    int still = 100;
    while (still > 0 && now_s() - t0 < 6.0) {
        usleep(500000);
        still = slow_drip(fds, 100);
    }
    for (int i = 0; i < 100; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    ck_assert_msg(still == 0, "%d trickling connections still open after %.1f s (deadline 2 s)", still,
                  now_s() - t0);
}

START_TEST(test_storage_one_address) { one_address(1); }
END_TEST

START_TEST(test_keyserver_one_address) { one_address(0); }
END_TEST

START_TEST(test_storage_many_addresses) { many_addresses(1); }
END_TEST

START_TEST(test_keyserver_many_addresses) { many_addresses(0); }
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("reliability_limits");
    TCase *tc = tcase_create("slowloris");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_storage_one_address);
    tcase_add_test(tc, test_keyserver_one_address);
    tcase_add_test(tc, test_storage_many_addresses);
    tcase_add_test(tc, test_keyserver_many_addresses);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
