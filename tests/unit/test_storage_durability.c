/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_durability.c -- kill -9 of picl-storage during a stream of
 * acknowledged POSTs and during a batch commit: after a restart every
 * acknowledged write is there and no batch is half-applied (20 rounds each). */
#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "storage_fixture.h"
#include "testutil.h"

#define ROUNDS 20

typedef struct proc {
    pid_t pid;
    char base[64];
    tu_cred cred;
} proc;

static char bin[4096];
static char datadir[64];
static char secretfile[128];

/* build/tests/test_x -> build/picl-storage */
static void find_binary(void)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(n, 0);
    self[n] = 0;
    char *dir = dirname(self);
    snprintf(bin, sizeof bin, "%s/../picl-storage", dir);
    ck_assert_msg(access(bin, X_OK) == 0, "%s not built", bin);
}

/* The user whose token start() mints.  Each batch round uses its own user:
 * a batch whose commit was killed stays open (until it expires) and counts
 * against its user's limit of open batches. */
static int64_t uid = SF_UID;

static void start(proc *p)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    p->pid = fork();
    ck_assert_int_ge(p->pid, 0);
    if (p->pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execl(bin, bin, "--listen", "127.0.0.1:0", "--data", datadir, "--secret-file", secretfile,
              (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[512] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    const char *u = strstr(line, "serving http://");
    ck_assert_msg(u != NULL, "unexpected start line: %s", line);
    unsigned port = 0;
    ck_assert_int_eq(sscanf(u, "serving http://127.0.0.1:%u", &port), 1);
    snprintf(p->base, sizeof p->base, "http://127.0.0.1:%u", port);
    tu_mint(&p->cred, SF_SECRET, SF_SECRET_LEN, p->base, uid, 3600);
}

static void kill9(proc *p)
{
    kill(p->pid, SIGKILL);
    int st;
    waitpid(p->pid, &st, 0);
    tu_cred_free(&p->cred);
}

static long request(proc *p, const char *method, const char *path, const char *body, tu_resp *out)
{
    char target[256];
    snprintf(target, sizeof target, "/1.5/%lld%s", (long long)uid, path);
    tu_req o = {.ctype = body ? "application/json" : NULL,
                .body = body,
                .len = body ? strlen(body) : 0,
                .cred = &p->cred};
    tu_resp r;
    if (tu_http(&r, method, p->base, target, &o) != 0) {
        tu_resp_free(&r);
        return 0;
    }
    long st = r.status;
    if (out)
        *out = r;
    else
        tu_resp_free(&r);
    return st;
}

typedef struct killer {
    proc *p;
    long delay_us;
} killer;

static void *kill_later(void *arg)
{
    killer *k = arg;
    struct timespec ts = {k->delay_us / 1000000, (k->delay_us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    kill(k->p->pid, SIGKILL);
    return NULL;
}

static void setup(void)
{
    find_binary();
    snprintf(datadir, sizeof datadir, "/tmp/picl-durable-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(datadir));
    snprintf(secretfile, sizeof secretfile, "%s/secret", datadir);
    FILE *f = fopen(secretfile, "w");
    ck_assert_ptr_nonnull(f);
    fwrite(SF_SECRET, 1, SF_SECRET_LEN, f);
    fclose(f);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    signal(SIGPIPE, SIG_IGN);
}

static void teardown(void)
{
    picl__nss_release();
    snprintf(SF.dir, sizeof SF.dir, "%s", datadir);
    SF.srv = NULL;
    /* reuse the fixture's directory cleanup */
    DIR *d = opendir(datadir);
    struct dirent *e;
    char p[600];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", datadir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(datadir);
}

START_TEST(test_kill_during_posts)
{
    srand(12345);
    char(*acked)[16] = calloc(ROUNDS * 2000, 16);
    size_t nacked = 0;
    for (int round = 0; round < ROUNDS; round++) {
        proc p;
        start(&p);
        /* what was acknowledged in earlier rounds is all there */
        tu_resp r;
        ck_assert_int_eq(request(&p, "GET", "/storage/stream", NULL, &r), 200);
        json_t *j = sf_json(&r);
        ck_assert_msg(json_array_size(j) >= nacked, "round %d: %zu stored, %zu acknowledged", round,
                      json_array_size(j), nacked);
        for (size_t i = 0; i < nacked; i++) {
            int found = 0;
            for (size_t k = 0; k < json_array_size(j) && !found; k++)
                found = !strcmp(json_string_value(json_array_get(j, k)), acked[i]);
            ck_assert_msg(found, "round %d: acknowledged %s lost", round, acked[i]);
        }
        json_decref(j);
        tu_resp_free(&r);
        killer k = {&p, 20000 + rand() % 150000};
        pthread_t t;
        pthread_create(&t, NULL, kill_later, &k);
        for (int i = 0; i < 2000; i++) {
            char id[16], body[96];
            snprintf(id, sizeof id, "r%02dn%04d", round, i);
            snprintf(body, sizeof body, "[{\"id\":\"%s\",\"payload\":\"payload %d\"}]", id, i);
            long st = request(&p, "POST", "/storage/stream", body, NULL);
            if (st != 200)
                break;
            snprintf(acked[nacked++], 16, "%s", id);
        }
        pthread_join(t, NULL);
        int ws;
        waitpid(p.pid, &ws, 0);
        tu_cred_free(&p.cred);
    }
    fprintf(stderr, "stream: %zu acknowledged POSTs survived %d kill -9\n", nacked, ROUNDS);
    ck_assert_int_gt(nacked, 0);
    free(acked);
}
END_TEST

START_TEST(test_kill_during_batch_commit)
{
    srand(54321);
    int committed_seen = 0, absent_seen = 0;
    char payload[1025];
    memset(payload, 'b', 1024);
    payload[1024] = 0;
    char *body = malloc(100 * 1100 + 16);
    for (int round = 0; round < ROUNDS; round++) {
        proc p;
        uid = SF_UID + 1000 + round;
        start(&p);
        char coll[32], path[128];
        snprintf(coll, sizeof coll, "batch%02d", round);
        /* open a batch and append 300 records of 1 KiB */
        char *batch = NULL;
        for (int part = 0; part < 3; part++) {
            size_t o = (size_t)snprintf(body, 16, "[");
            for (int i = 0; i < 100; i++)
                o += (size_t)snprintf(body + o, 1100, "%s{\"id\":\"p%dn%03d\",\"payload\":\"%s\"}",
                                      i ? "," : "", part, i, payload);
            snprintf(body + o, 16, "]");
            if (!batch)
                snprintf(path, sizeof path, "/storage/%s?batch=true", coll);
            else
                snprintf(path, sizeof path, "/storage/%s?batch=%s", coll, batch);
            tu_resp r;
            ck_assert_int_eq(request(&p, "POST", path, body, &r), 202);
            if (!batch) {
                json_t *j = sf_json(&r);
                batch = strdup(json_string_value(json_object_get(j, "batch")));
                json_decref(j);
            }
            tu_resp_free(&r);
        }
        killer k = {&p, rand() % 25000};
        pthread_t t;
        pthread_create(&t, NULL, kill_later, &k);
        snprintf(path, sizeof path, "/storage/%s?batch=%s&commit=true", coll, batch);
        long st = request(&p, "POST", path, "[]", NULL);
        pthread_join(t, NULL);
        int ws;
        waitpid(p.pid, &ws, 0);
        tu_cred_free(&p.cred);
        free(batch);

        start(&p);
        snprintf(path, sizeof path, "/storage/%s", coll);
        tu_resp r;
        ck_assert_int_eq(request(&p, "GET", path, NULL, &r), 200);
        json_t *j = sf_json(&r);
        size_t n = json_array_size(j);
        ck_assert_msg(n == 0 || n == 300, "round %d: batch half-applied: %zu records", round, n);
        if (st == 200)
            ck_assert_msg(n == 300, "round %d: acknowledged commit lost", round);
        committed_seen += n == 300;
        absent_seen += n == 0;
        json_decref(j);
        tu_resp_free(&r);
        kill9(&p);
    }
    free(body);
    fprintf(stderr, "batch commits: %d applied, %d absent after kill -9\n", committed_seen, absent_seen);
    ck_assert_int_eq(committed_seen + absent_seen, ROUNDS);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_durability");
    TCase *tc = tcase_create("kill9");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_kill_during_posts);
    tcase_add_test(tc, test_kill_during_batch_commit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
