/* SPDX-License-Identifier: MPL-2.0 */
/* test_crash_storage.c -- kill -9 of picl-storage at random points of a mixed
 * write stream (PUT of single records that overwrite each other, POSTs, and
 * batches of several parts with their commit): after each restart every
 * acknowledged write is there with its newest acknowledged payload or a later
 * one, no batch is half-visible, and an acknowledged commit is complete.
 * PICL_CRASH_ROUNDS sets the rounds (default 20, 8 under ASan; make soak
 * raises it).  Each round's batches belong to a user of their own (a batch
 * a kill left open counts toward its user's open-batch limit).  With
 * PICL_TEST_BACKEND=postgresql the server runs on PostgreSQL (a database of
 * its own in the test cluster, testutil_pg.h); test_crash_storage_pg.c runs
 * it so in make check. */
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <time.h>

#include "storage_fixture.h"
#include "testutil.h"
#include "testutil_pg.h"

typedef struct proc {
    pid_t pid;
    char base[64];
    tu_cred cred;
} proc;

static char bin[4096];
static char datadir[64];
static char secretfile[128];
static char pgurl[256], pgname[64]; /* PostgreSQL: the server's database */

static int rounds(void)
{
    const char *r = getenv("PICL_CRASH_ROUNDS");
    int n = r && *r ? (int)strtol(r, NULL, 10) : 0;
    return n >= 1 ? n : tu_slow() ? 20 : 8; /* the ASan build (PICL_SLOW=0): fewer */
}

static void start(proc *p)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    p->pid = fork();
    ck_assert_int_ge(p->pid, 0);
    if (p->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed test */
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        if (pgurl[0])
            execl(bin, bin, "--listen", "127.0.0.1:0", "--database", pgurl, "--secret-file", secretfile,
                  (char *)NULL);
        else
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
    tu_mint(&p->cred, SF_SECRET, SF_SECRET_LEN, p->base, SF_UID, 3600);
}

static void reap(proc *p)
{
    int st;
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    tu_cred_free(&p->cred);
}

/* As user uid (SF_UID: p->cred, else a token minted here): the status, or 0
 * when the transport failed; *out (optional) keeps the body. */
static long request_as(proc *p, int64_t uid, const char *method, const char *path, const char *body,
                       tu_resp *out)
{
    char target[256];
    snprintf(target, sizeof target, "/1.5/%lld%s", (long long)uid, path);
    tu_cred other = {0};
    if (uid != SF_UID)
        tu_mint(&other, SF_SECRET, SF_SECRET_LEN, p->base, uid, 3600);
    tu_req o = {.ctype = body ? "application/json" : NULL,
                .body = body,
                .len = body ? strlen(body) : 0,
                .cred = uid == SF_UID ? &p->cred : &other};
    tu_resp r;
    int fail = tu_http(&r, method, p->base, target, &o) != 0;
    tu_cred_free(&other);
    if (fail) {
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

static long request(proc *p, const char *method, const char *path, const char *body, tu_resp *out)
{
    return request_as(p, SF_UID, method, path, body, out);
}

typedef struct killer {
    pid_t pid;
    long delay_us;
} killer;

static void *kill_later(void *arg)
{
    killer *k = arg;
    struct timespec ts = {k->delay_us / 1000000, (k->delay_us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    kill(k->pid, SIGKILL);
    return NULL;
}

static void setup(void)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(n, 0);
    self[n] = 0;
    snprintf(bin, sizeof bin, "%s/../picl-storage", dirname(self));
    ck_assert_msg(access(bin, X_OK) == 0, "%s not built", bin);
    snprintf(datadir, sizeof datadir, "/tmp/picl-crashst-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(datadir));
    snprintf(secretfile, sizeof secretfile, "%s/secret", datadir);
    FILE *f = fopen(secretfile, "w");
    ck_assert_ptr_nonnull(f);
    fwrite(SF_SECRET, 1, SF_SECRET_LEN, f);
    fclose(f);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    signal(SIGPIPE, SIG_IGN);
    pgurl[0] = pgname[0] = 0;
    if (tupg_enabled())
        tupg_create_db(pgurl, sizeof pgurl, pgname, sizeof pgname);
}

static void teardown(void)
{
    tupg_drop_db(pgname);
    picl__nss_release();
    ck_assert_int_eq(tu_rmtree(datadir), 0);
}

#define NKEYS 40  /* PUT targets, overwritten again and again */
#define MAXB 4096 /* batches tracked */

/* What the client was told: the newest acknowledged version of each PUT
 * key, every acknowledged POST id, every batch and whether its commit was
 * acknowledged. */
typedef struct ledger {
    int put_acked[NKEYS]; /* newest acknowledged version, -1 = none */
    int put_sent[NKEYS];  /* newest version sent (acknowledged or not) */
    char (*posted)[16];
    size_t nposted, capposted;
    struct {
        char coll[24];
        int64_t uid;                    /* each round's batches belong to a user of their own: a
                         batch a kill left open counts toward the open-batch
                         limit (10) of its user until it expires */
        int parts, per_part, committed; /* committed: 1 acknowledged */
    } batch[MAXB];
    size_t nbatch;
    size_t acked; /* acknowledged writes (records) */
} ledger;

/* One random write; returns 0 once the server stopped answering. */
static int one_write(proc *p, ledger *L, int round, int *seq)
{
    char path[160], body[16384];
    int kind = rand() % 3;
    if (kind == 0) { /* PUT one record, a newer version of a known key */
        int k = rand() % NKEYS, v = ++L->put_sent[k];
        snprintf(path, sizeof path, "/storage/puts/k%03d", k);
        snprintf(body, sizeof body, "{\"payload\":\"v%08d\"}", v);
        if (request(p, "PUT", path, body, NULL) != 200)
            return 0;
        L->put_acked[k] = v;
        L->acked++;
        return 1;
    }
    if (kind == 1) { /* POST 1..20 new records */
        int n = 1 + rand() % 20;
        size_t o = (size_t)snprintf(body, sizeof body, "[");
        char ids[20][16];
        for (int i = 0; i < n; i++) {
            snprintf(ids[i], sizeof ids[i], "r%03dn%06d", round % 1000, (*seq)++ % 1000000);
            o += (size_t)snprintf(body + o, sizeof body - o, "%s{\"id\":\"%s\",\"payload\":\"p\"}",
                                  i ? "," : "", ids[i]);
        }
        snprintf(body + o, sizeof body - o, "]");
        tu_resp r;
        if (request(p, "POST", "/storage/posts", body, &r) != 200)
            return 0;
        json_t *j = sf_json(&r);
        ck_assert_int_eq(json_array_size(json_object_get(j, "success")), n);
        json_decref(j);
        tu_resp_free(&r);
        for (int i = 0; i < n; i++) {
            if (L->nposted == L->capposted) {
                L->capposted = L->capposted ? 2 * L->capposted : 1024;
                L->posted = realloc(L->posted, L->capposted * sizeof *L->posted);
                ck_assert_ptr_nonnull(L->posted);
            }
            memcpy(L->posted[L->nposted++], ids[i], 16);
        }
        L->acked += (size_t)n;
        return 1;
    }
    /* a batch of 2..4 parts of 1..50 records in its own collection */
    ck_assert_uint_lt(L->nbatch, MAXB);
    int b = (int)L->nbatch++;
    snprintf(L->batch[b].coll, sizeof L->batch[b].coll, "batch%06d", b);
    L->batch[b].parts = 2 + rand() % 3;
    L->batch[b].per_part = 1 + rand() % 50;
    L->batch[b].committed = 0;
    L->batch[b].uid = 1000 + round;
    char id[64] = "";
    for (int part = 0; part < L->batch[b].parts; part++) {
        size_t o = (size_t)snprintf(body, sizeof body, "[");
        for (int i = 0; i < L->batch[b].per_part; i++)
            o += (size_t)snprintf(body + o, sizeof body - o, "%s{\"id\":\"p%dn%03d\",\"payload\":\"batch\"}",
                                  i ? "," : "", part, i);
        snprintf(body + o, sizeof body - o, "]");
        int last = part == L->batch[b].parts - 1;
        if (!*id)
            snprintf(path, sizeof path, "/storage/%s?batch=true%s", L->batch[b].coll,
                     last ? "&commit=true" : "");
        else
            snprintf(path, sizeof path, "/storage/%s?batch=%s%s", L->batch[b].coll, id,
                     last ? "&commit=true" : "");
        tu_resp r;
        long st = request_as(p, L->batch[b].uid, "POST", path, body, &r);
        if (st != (last ? 200 : 202)) {
            ck_assert_msg(st == 0, "batch part answered %ld %.100s", st, r.body);
            return 0;
        }
        if (!*id) {
            json_t *j = sf_json(&r);
            snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "batch")));
            json_decref(j);
        }
        tu_resp_free(&r);
    }
    L->batch[b].committed = 1;
    L->acked += (size_t)(L->batch[b].parts * L->batch[b].per_part);
    return 1;
}

/* Everything acknowledged is there; returns the number of losses. */
static size_t verify(proc *p, const ledger *L, int round, size_t *half)
{
    size_t lost = 0;
    tu_resp r;
    /* PUT keys: the newest acknowledged version or a later one sent */
    ck_assert_int_eq(request(p, "GET", "/storage/puts?full=1", NULL, &r), 200);
    json_t *j = sf_json(&r);
    tu_resp_free(&r);
    for (int k = 0; k < NKEYS; k++) {
        if (L->put_acked[k] < 0)
            continue;
        char id[8];
        snprintf(id, sizeof id, "k%03d", k);
        int v = -1;
        size_t i;
        json_t *b;
        json_array_foreach (j, i, b)
            if (!strcmp(json_string_value(json_object_get(b, "id")), id))
                v = (int)strtol(json_string_value(json_object_get(b, "payload")) + 1, NULL, 10);
        if (v < L->put_acked[k] || v > L->put_sent[k]) {
            fprintf(stderr, "round %d: %s holds version %d, acknowledged %d, sent %d\n", round, id, v,
                    L->put_acked[k], L->put_sent[k]);
            lost++;
        }
    }
    json_decref(j);
    /* POSTed ids */
    long st = request(p, "GET", "/storage/posts", NULL, &r);
    ck_assert(st == 200 || st == 404);
    j = st == 200 ? sf_json(&r) : json_array();
    tu_resp_free(&r);
    json_t *have = json_object(); /* id -> true, for lookups */
    size_t i;
    json_t *id;
    json_array_foreach (j, i, id)
        json_object_set_new(have, json_string_value(id), json_true());
    json_decref(j);
    j = have;
    for (size_t n = 0; n < L->nposted; n++) {
        int found = json_object_get(have, L->posted[n]) != NULL;
        if (!found) {
            fprintf(stderr, "round %d: acknowledged %s lost\n", round, L->posted[n]);
            lost++;
        }
    }
    json_decref(j);
    /* batches: all or nothing, all when the commit was acknowledged */
    for (size_t b = 0; b < L->nbatch; b++) {
        char path[64];
        snprintf(path, sizeof path, "/storage/%s", L->batch[b].coll);
        st = request_as(p, L->batch[b].uid, "GET", path, NULL, &r);
        ck_assert(st == 200 || st == 404);
        size_t n = 0;
        if (st == 200) {
            j = sf_json(&r);
            n = json_array_size(j);
            json_decref(j);
        }
        tu_resp_free(&r);
        size_t all = (size_t)(L->batch[b].parts * L->batch[b].per_part);
        if (n != 0 && n != all) {
            fprintf(stderr, "round %d: batch %s half-visible: %zu of %zu\n", round, L->batch[b].coll, n, all);
            (*half)++;
        }
        if (L->batch[b].committed && n != all) {
            fprintf(stderr, "round %d: acknowledged batch %s has %zu of %zu\n", round, L->batch[b].coll, n,
                    all);
            lost++;
        }
    }
    return lost;
}

START_TEST(test_kill_during_mixed_writes)
{
    int n = rounds();
    srand(777);
    ledger *L = calloc(1, sizeof *L);
    ck_assert_ptr_nonnull(L);
    for (int k = 0; k < NKEYS; k++)
        L->put_acked[k] = L->put_sent[k] = -1;
    size_t lost = 0, half = 0, interrupted = 0;
    int seq = 0;
    for (int round = 0; round < n; round++) {
        proc p;
        start(&p);
        lost += verify(&p, L, round, &half);
        ck_assert_msg(lost == 0 && half == 0, "round %d: %zu lost, %zu half batches", round, lost, half);
        /* the ASan build writes several times slower: it gets longer rounds */
        long span = tu_slow() ? 200000 : 1000000;
        killer k = {p.pid, 5000 + rand() % span};
        pthread_t t;
        pthread_create(&t, NULL, kill_later, &k);
        int writes = 0;
        while (writes < 100000 && one_write(&p, L, round, &seq))
            writes++;
        pthread_join(t, NULL);
        interrupted += writes < 100000;
        reap(&p);
    }
    proc p;
    start(&p);
    lost += verify(&p, L, n, &half);
    reap(&p);
    /* and the database itself is sound after all those kills (SQLite's
     * check; PostgreSQL's own recovery is not what is tested here) */
    char db[128];
    snprintf(db, sizeof db, "%s/storage.db", datadir);
    sqlite3 *c = NULL;
    sqlite3_stmt *q = NULL;
    if (!pgurl[0]) {
        ck_assert_int_eq(sqlite3_open_v2(db, &c, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        ck_assert_int_eq(sqlite3_prepare_v2(c, "PRAGMA integrity_check", -1, &q, NULL), SQLITE_OK);
        ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
        ck_assert_str_eq((const char *)sqlite3_column_text(q, 0), "ok");
        sqlite3_finalize(q);
        sqlite3_close(c);
    }
    size_t committed = 0;
    for (size_t b = 0; b < L->nbatch; b++)
        committed += (size_t)L->batch[b].committed;
    fprintf(
        stderr,
        "crash sweep storage PUT/POST/batch (%s): %d rounds, %zu interrupted by kill -9, %zu acknowledged "
        "records (%zu PUT keys, %zu POSTed, %zu of %zu batches committed), %zu lost, %zu half batches%s\n",
        pgurl[0] ? "postgresql" : "sqlite", n, interrupted, L->acked, (size_t)NKEYS, L->nposted, committed,
        L->nbatch, lost, half, pgurl[0] ? "" : ", integrity_check ok");
    ck_assert_int_eq(lost, 0);
    ck_assert_int_eq(half, 0);
    ck_assert_uint_eq(interrupted, (size_t)n);
    ck_assert_uint_gt(committed, 0);
    free(L->posted);
    free(L);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("crash_storage");
    TCase *tc = tcase_create("kill9");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_kill_during_mixed_writes);
    suite_add_tcase(s, tc);
    return s;
}

#ifndef CRASH_STORAGE_NO_MAIN
int main(void) { return tu_run(suite()); }
#endif
