/* SPDX-License-Identifier: MPL-2.0 */
/* test_crash_sync.c -- kill -9 of `picl sync` after its download, after its
 * apply and after its upload (PICL_TEST_CRASH_AT=sync-*), for a store
 * directory and for a Firefox profile: the next sync converges, every record
 * a clean sync acknowledged is on both devices exactly once, nothing is lost
 * or duplicated; and kill -9 of picl server under a sync's upload.  21, 20
 * and 20 rounds (3 under ASan); PICL_CRASH_ROUNDS sets the rounds (make soak
 * raises it). */
#include "testutil.h"
#include "testutil_cli.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static tucli T;

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)

static const char *const POINTS[] = {"sync-downloaded", "sync-applied", "sync-uploaded"};

/* PICL_CRASH_ROUNDS, else dflt; the ASan build (PICL_SLOW=0) runs 3 rounds
 * only: it looks for memory errors, the plain build for losses. */
static int rounds(int dflt)
{
    const char *r = getenv("PICL_CRASH_ROUNDS");
    int n = r && *r ? (int)strtol(r, NULL, 10) : 0;
    return n >= 3 ? n : tu_slow() ? dflt : 3;
}

static void setup(void) { tucli_start(&T); }

static void teardown(void) { tucli_stop(&T); }

/* s1 and s2 signed in to one verified account. */
static void account(const char *email)
{
    char code[256];
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account create --server %s --email %s", T.url, email), 0);
    ck_assert_int_eq(
        run(code, sizeof code, "grep -h '^X-Verify-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2"), 0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account verify --code %s", code), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q login --email %s", email), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q login --server %s --email %s", T.url, email), 0);
}

/* A login record with a unique hostname. */
static json_t *login(const char *id)
{
    char host[64];
    snprintf(host, sizeof host, "https://%s.example", id);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "id", id, "hostname", host, "formSubmitURL", host,
                     "username", "user", "password", "secret", "timePasswordChanged", 1000);
}

/* Appends n new records named <tag>NNNNNNNNN to DIR/passwords.json; their ids
 * go to `want`. */
static void add_records(const char *store, const char *tag, int round, int n, json_t *want)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s/passwords.json", T.dir, store);
    json_t *a = json_load_file(path, 0, NULL);
    if (!a)
        a = json_array();
    ck_assert(json_is_array(a));
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "%.1s%05d%06d", tag, round % 100000, i % 1000000);
        json_array_append_new(a, login(id));
        json_array_append_new(want, json_string(id));
    }
    ck_assert_int_eq(json_dump_file(a, path, 0), 0);
    json_decref(a);
}

/* Every id of `want` is in the array of records exactly once (key `k`), and
 * nothing else is: returns the number lost (asserts no duplicate, no extra). */
static size_t check_set(const json_t *records, const char *k, const json_t *want, const char *what, int round)
{
    size_t lost = 0, i, j;
    json_t *w, *r;
    ck_assert_msg(json_is_array(records), "round %d: %s is not an array", round, what);
    json_array_foreach (want, i, w) {
        int seen = 0;
        json_array_foreach (records, j, r)
            seen += !strcmp(json_string_value(json_object_get(r, k)) ?: "", json_string_value(w));
        ck_assert_msg(seen <= 1, "round %d: %s holds %s %d times", round, what, json_string_value(w), seen);
        lost += seen == 0;
    }
    ck_assert_msg(json_array_size(records) == json_array_size(want) - lost,
                  "round %d: %s holds %zu records, %zu expected", round, what, json_array_size(records),
                  json_array_size(want) - lost);
    return lost;
}

static json_t *load_store(const char *store)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s/passwords.json", T.dir, store);
    json_t *a = json_load_file(path, 0, NULL);
    ck_assert_msg(a != NULL, "%s unreadable after the sync", path);
    return a;
}

/* Store directories: each round both devices write; device 1's sync is
 * killed at one of the three points, then runs again; device 2 syncs. */
START_TEST(test_sync_killed_store_dir)
{
    int n = rounds(21);
    account("crash@x.org");
    ck_assert_int_eq(
        run(NULL, 0, "mkdir f1 f2 && echo '[]' > f1/passwords.json && echo '[]' > f2/passwords.json"), 0);
    json_t *want = json_array();
    size_t lost = 0, killed = 0;
    for (int round = 0; round < n; round++) {
        const char *pt = POINTS[round % 3];
        add_records("f2", "b", round, 5, want);
        ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --store-dir f2 --collections passwords"), 0);
        add_records("f1", "a", round, 5, want);
        int rc =
            run(NULL, 0, "PICL_TEST_CRASH_AT=%s $P --state s1 -q sync --store-dir f1 --collections passwords",
                pt);
        ck_assert_msg(rc == 128 + SIGKILL, "round %d: %s not reached (exit %d)", round, pt, rc);
        killed++;
        ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --store-dir f1 --collections passwords"), 0);
        ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --store-dir f2 --collections passwords"), 0);
        json_t *a = load_store("f1"), *b = load_store("f2");
        lost += check_set(a, "id", want, "device 1", round);
        lost += check_set(b, "id", want, "device 2", round);
        json_decref(a);
        json_decref(b);
        ck_assert_msg(lost == 0, "round %d (%s): %zu records lost", round, pt, lost);
    }
    /* a third device from nothing: the server holds each record once */
    ck_assert_int_eq(run(NULL, 0,
                         "$P --state s3 -q login --server %s --email crash@x.org && mkdir f3 && "
                         "$P --state s3 -q sync --store-dir f3 --collections passwords",
                         T.url),
                     0);
    json_t *c = load_store("f3");
    lost += check_set(c, "id", want, "a new device", n);
    json_decref(c);
    fprintf(stderr,
            "crash sweep picl sync --store-dir: %d rounds, %zu kills, %zu acknowledged records, %zu lost, "
            "0 duplicates\n",
            n, killed, json_array_size(want), lost);
    ck_assert_int_eq(lost, 0);
    json_decref(want);
}
END_TEST

/* A Firefox profile: device 2 (a store directory) writes each round, the
 * profile's sync is killed after its download, its apply or (first round,
 * the profile's own logins going up) its upload; at the end Firefox reads
 * every record from logins.json exactly once. */
START_TEST(test_sync_killed_profile)
{
    int n = rounds(20);
    char out[4096];
    account("crashp@x.org");
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, "mkdir f2 && echo '[]' > f2/passwords.json"), 0);
    json_t *want = json_array();
    size_t killed = 0, lost = 0;
    for (int round = 0; round < n; round++) {
        const char *pt = round == 0 ? "sync-uploaded" : POINTS[round % 2];
        add_records("f2", "p", round, 5, want);
        ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --store-dir f2 --collections passwords"), 0);
        int rc = run(NULL, 0,
                     "PICL_TEST_CRASH_AT=%s $P --state s1 -q sync --profile p1 --collections passwords", pt);
        ck_assert_msg(rc == 128 + SIGKILL, "round %d: %s not reached (exit %d)", round, pt, rc);
        killed++;
        ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --profile p1 --collections passwords"), 0);
    }
    /* the profile's own logins went up once: device 2 has them too */
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --store-dir f2 --collections passwords"), 0);
    json_t *b = load_store("f2");
    ck_assert_msg(json_array_size(b) > json_array_size(want), "the profile's logins never reached device 2");
    size_t own = json_array_size(b) - json_array_size(want);
    /* Firefox reads them all back, each once */
    ck_assert_int_eq(run(out, sizeof out, "$MKP --dump $PWD/p1 $PWD/dump.json >/dev/null 2>&1"), 0);
    char path[700];
    snprintf(path, sizeof path, "%s/dump.json", T.dir);
    json_t *dump = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(dump);
    json_t *logins = json_object_get(dump, "logins");
    json_t *rec;
    size_t i;
    /* every login of device 2's file is in Firefox exactly once */
    json_t *all = json_array();
    json_array_foreach (b, i, rec)
        json_array_append(all, json_object_get(rec, "hostname"));
    lost = check_set(logins, "hostname", all, "the profile", n);
    fprintf(stderr,
            "crash sweep picl sync --profile: %d rounds, %zu kills, %zu acknowledged records "
            "(+%zu from the profile), %zu lost, 0 duplicates\n",
            n, killed, json_array_size(want), own, lost);
    ck_assert_int_eq(lost, 0);
    json_decref(all);
    json_decref(dump);
    json_decref(b);
    json_decref(want);
}
END_TEST

/* ---- picl server killed under a sync --------------------------------------- */

static void *kill_server_later(void *arg)
{
    long us = *(long *)arg;
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    kill(T.server, SIGKILL);
    return NULL;
}

/* 1 when something accepts connections on 127.0.0.1:port. */
static int port_open(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* picl server again on the same data and port (the state names the URL). */
static void restart_server(void)
{
    int st;
    waitpid(T.server, &st, 0);
    char data[600], logf[600];
    snprintf(data, sizeof data, "%s/data", T.dir);
    snprintf(logf, sizeof logf, "%s/server.log", T.dir);
    const char *listen = T.url + strlen("http://");
    unsigned port = 0;
    ck_assert_int_eq(sscanf(listen, "127.0.0.1:%u", &port), 1);
    for (int attempt = 0; attempt < 50; attempt++) {
        T.server = fork();
        ck_assert_int_ge(T.server, 0);
        if (T.server == 0) {
            if (!freopen("/dev/null", "w", stdout) || !freopen(logf, "a", stderr))
                _exit(126);
            setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 1);
            execl(T.picl, "picl", "server", "--data", data, "--listen", listen, (char *)NULL);
            _exit(127);
        }
        /* up when it answers; gone when the port was not free yet */
        for (int i = 0; i < 50; i++) {
            usleep(20000);
            if (waitpid(T.server, &st, WNOHANG) == T.server)
                break;
            if (port_open(port))
                return;
        }
        kill(T.server, SIGKILL);
        waitpid(T.server, &st, 0);
        usleep(100000);
    }
    ck_abort_msg("picl server did not come back on %s", T.url);
}

/* picl server (keyserver + storage) killed at a random moment while device
 * 1 syncs an upload of 150 new records: the sync fails (exit 4) or finished
 * (0); after a restart the next sync converges and device 2 gets every
 * record exactly once. */
START_TEST(test_server_killed_during_sync)
{
    int n = rounds(20);
    srand(99);
    account("crashs@x.org");
    ck_assert_int_eq(
        run(NULL, 0, "mkdir f1 f2 && echo '[]' > f1/passwords.json && echo '[]' > f2/passwords.json"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --store-dir f1 --collections passwords"), 0);
    json_t *want = json_array();
    int failed = 0, finished = 0;
    for (int round = 0; round < n; round++) {
        add_records("f1", "s", round, 150, want);
        long us = 20000 + rand() % 250000;
        pthread_t t;
        pthread_create(&t, NULL, kill_server_later, &us);
        int rc = run(NULL, 0, "$P --state s1 -q sync --store-dir f1 --collections passwords 2>/dev/null");
        pthread_join(t, NULL);
        ck_assert_msg(rc == 0 || rc == 4, "round %d: sync under a dying server exited %d", round, rc);
        failed += rc == 4;
        finished += rc == 0;
        restart_server();
        ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --store-dir f1 --collections passwords"), 0);
        json_t *a = load_store("f1");
        size_t lost = check_set(a, "id", want, "device 1", round);
        json_decref(a);
        ck_assert_msg(lost == 0, "round %d: device 1 lost %zu of its own records", round, lost);
    }
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --store-dir f2 --collections passwords"), 0);
    json_t *b = load_store("f2");
    size_t lost = check_set(b, "id", want, "device 2", n);
    json_decref(b);
    fprintf(stderr,
            "crash sweep picl server killed under picl sync: %d rounds (%d syncs failed, %d finished "
            "first), %zu records, %zu lost, 0 duplicates\n",
            n, failed, finished, json_array_size(want), lost);
    ck_assert_int_eq(lost, 0);
    json_decref(want);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("crash_sync");
    TCase *tc = tcase_create("kill9");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_sync_killed_store_dir);
    tcase_add_test(tc, test_sync_killed_profile);
    tcase_add_test(tc, test_server_killed_during_sync);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
