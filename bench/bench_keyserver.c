/* SPDX-License-Identifier: MPL-2.0 */
/* bench_keyserver.c -- picl-bench keyserver: SRP logins per second an
 * in-process keyserver sustains (auth/start + auth/finish over HTTP on
 * loopback) with N concurrent clients whose work is precomputed. */
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <curl/curl.h>
#include <jansson.h>

#include "bench.h"
#include "bench_pg.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/nss.h"
#include "crypto/srp.h"
#include "crypto/util.h"
#include "keyserver/keyserver.h"

/*
 * Method.  The client side of a login (stretching, SRP A/M) is taken out of
 * the measurement: the account's verifier comes from a fixed srpPW, and the
 * server's b is forced (through the test hook) to a fixed 32-byte value, so
 * B is the same for every login and one (A, M) pair computed up front
 * proves the password every time.  The server still does all of its real
 * work per login: account lookup, rate-limit check, B = k*v + g^b (one
 * constant-time exponentiation), srpToken stored and consumed in
 * transactions, S = (A*v^u)^b (two), M1 compare, authToken issued and
 * stored, bundle sealed.  Each client loops auth/start + auth/finish on its
 * own keep-alive connection for the given duration.
 *
 * The logins go round --accounts accounts (default 64; each has its own
 * verifier, so its own B, A and M, computed up front).  One account logging
 * in thousands of times in a rate-limit window would measure a state a
 * production server never holds: its rate limits keep at most start_max
 * (30 by default) events per account and window, while the bench raises the
 * limits out of its way, so with one account every rate check counted the
 * thousands of events of the run so far and the cost per login grew with
 * the run's length.  With 64 accounts a 5 s run leaves ~50 per account.
 */

#define EMAIL_FMT "bench%d@example.org"
#define MAX_ACCOUNTS 1024
#define KS_SLICES 20 /* measured slices of the run (median ratio) */
#define KS_REF_N 15  /* SRP reference operations after each slice */

static uint8_t forced_b[32];

static picl_status hook(void *ctx, const char *what, uint8_t *out, size_t len)
{
    if (strcmp(what, "b") || len != 256)
        return PICL_ERROR_NOT_FOUND;
    memset(out, 0, len);
    memcpy(out + len - 32, forced_b, 32);
    return PICL_OK;
}

/* One account's precomputed login: its auth/start body, A and M. */
typedef struct login_data {
    char start_body[160];
    char A_hex[513], M_hex[65];
} login_data;

typedef struct shared {
    char url_start[128], url_finish[128];
    login_data *acc;
    int accounts;
    double until;
    int clients;
} shared;

typedef struct worker {
    const shared *sh;
    int index;
    long logins, failures;
    double cpu_s; /* this client thread's own CPU (HTTP, JSON): not the server's */
    pthread_t th;
} worker;

/* CPU seconds of the calling thread. */
static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct membuf {
    char data[4096];
    size_t len;
} membuf;

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
    membuf *m = ctx;
    size_t len = size * n;
    if (m->len + len >= sizeof m->data)
        return 0;
    memcpy(m->data + m->len, p, len);
    m->len += len;
    m->data[m->len] = 0;
    return len;
}

static long post(CURL *c, const char *url, const char *body, membuf *m)
{
    m->len = 0;
    m->data[0] = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    if (curl_easy_perform(c) != CURLE_OK)
        return 0;
    long st = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    return st;
}

static void *run(void *p)
{
    worker *w = p;
    const shared *sh = w->sh;
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    membuf m;
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    char body[1024];
    double c0 = thread_cpu();
    for (long n = w->index; bench_now() < sh->until; n += sh->clients) {
        const login_data *ld = &sh->acc[n % sh->accounts];
        if (post(c, sh->url_start, ld->start_body, &m) != 200) {
            w->failures++;
            continue;
        }
        json_t *j = json_loads(m.data, 0, NULL);
        const char *tok = json_string_value(json_object_get(j, "srpToken"));
        snprintf(body, sizeof body, "{\"srpToken\":\"%s\",\"A\":\"%s\",\"M\":\"%s\"}", tok ? tok : "",
                 ld->A_hex, ld->M_hex);
        json_decref(j);
        if (post(c, sh->url_finish, body, &m) == 200 && strstr(m.data, "\"bundle\""))
            w->logins++;
        else
            w->failures++;
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    w->cpu_s = thread_cpu() - c0;
    return NULL;
}

/* The reference of the per-login target: the server's own SRP work for one
 * login, in this process and run -- server_new with the same b (B = kv +
 * g^b), server_B, server_verify of the same A and M (S = (A v^u)^b): the
 * SRP modular exponentiations a login cannot do without.  Median thread
 * CPU seconds of n logins; -1 when one fails. */
static double srp_reference(const picl_srp_group *g, const uint8_t v[256], const uint8_t A[256],
                            const uint8_t M[32], int n)
{
    double *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return -1;
    double med = -1;
    int i = 0;
    for (; i < n; i++) {
        uint8_t B[256], K[32];
        picl_srp_server *s = NULL;
        double c0 = thread_cpu();
        int ok = picl__srp_server_new_with_b(g, v, 256, forced_b, 32, &s) == PICL_OK &&
                 picl__srp_server_B(s, B, 256) == PICL_OK &&
                 picl__srp_server_verify(s, A, 256, M, 32, K, 32) == PICL_OK;
        t[i] = thread_cpu() - c0;
        picl__srp_server_free(s);
        picl__wipe(K, sizeof K);
        if (!ok)
            break;
    }
    if (i == n)
        med = bench_median(t, (size_t)n);
    free(t);
    return med;
}

/* The reference as the server's workers meet it: `threads` threads (one
 * per client, as many as the server has logins in flight) each timing n
 * logins' SRP work at the same time; the median of all their operations.
 * On this 2-core VM one thread alone can see a faster machine than two
 * busy cores do (the host gives a lone vCPU more), and the server's
 * modular exponentiations run with every core busy. */
typedef struct ref_job {
    const picl_srp_group *g;
    const uint8_t *v, *A, *M;
    int n;
    double *t; /* n times out */
    int ok;
    pthread_t th;
} ref_job;

static void *ref_run(void *p)
{
    ref_job *j = p;
    j->ok = 1;
    for (int i = 0; i < j->n && j->ok; i++) {
        double one = srp_reference(j->g, j->v, j->A, j->M, 1);
        j->t[i] = one;
        j->ok = one > 0;
    }
    return NULL;
}

static double srp_reference_par(const picl_srp_group *g, const uint8_t v[256], const uint8_t A[256],
                                const uint8_t M[32], int n, int threads)
{
    double *t = calloc((size_t)(n * threads), sizeof *t);
    ref_job *jobs = calloc((size_t)threads, sizeof *jobs);
    double med = -1;
    int started = 0, ok = t && jobs;
    for (int k = 0; ok && k < threads; k++) {
        jobs[k] = (ref_job){.g = g, .v = v, .A = A, .M = M, .n = n, .t = t + (size_t)k * n};
        ok = pthread_create(&jobs[k].th, NULL, ref_run, &jobs[k]) == 0;
        started += ok;
    }
    for (int k = 0; k < started; k++) {
        pthread_join(jobs[k].th, NULL);
        ok = ok && jobs[k].ok;
    }
    if (ok)
        med = bench_median(t, (size_t)(n * threads));
    free(jobs);
    free(t);
    return med;
}

/* CPU seconds (user + system) of the whole process so far. */
static double cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

int bench_keyserver(int argc, char **argv)
{
    int clients = 2, accounts = 64;
    double seconds = 6;
    const char *database = NULL; /* --database postgresql://...: that backend */
    int own_pg = 0;              /* --backend postgresql: a throw-away cluster */
    char pg_url[256];
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--database"))
            database = argv[i + 1];
        else if (!strcmp(argv[i], "--clients"))
            clients = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = strtod(argv[i + 1], NULL);
        else if (!strcmp(argv[i], "--accounts"))
            accounts = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--backend"))
            own_pg = !strcmp(argv[i + 1], "postgresql");
    }
    if (clients < 1 || clients > 64 || seconds <= 0 || accounts < 1 || accounts > MAX_ACCOUNTS) {
        fprintf(stderr, "keyserver: usage: keyserver [--clients N] [--seconds S] [--accounts N] "
                        "[--database postgresql://... | --backend postgresql]\n");
        return 1;
    }
    if (picl__nss_acquire() != PICL_OK)
        return 1;
    int rc = 1;
    ks_server *ks = NULL;
    picl_srp_client *sc = NULL;
    shared *sh = calloc(1, sizeof *sh);
    worker *ws = calloc((size_t)clients, sizeof *ws);
    char dir[] = "/tmp/picl-bench-ks-XXXXXX";
    int made = sh && ws && mkdtemp(dir);
    if (!made)
        goto done;
    if (own_pg && !database) {
        if (bench_pg_start(pg_url, sizeof pg_url))
            goto done;
        database = pg_url;
    }

    const picl_srp_group *g = picl__srp_group_picl();
    uint8_t srp_pw[32], salt[32], v[256], B[256], A[256], M[32];
    uint8_t v0[256], A0[256], M0[32]; /* account 0's: the SRP reference's */
    memset(srp_pw, 0x5a, sizeof srp_pw);
    memset(salt, 0x17, sizeof salt);
    if (picl__random_bytes(forced_b, sizeof forced_b) != PICL_OK)
        goto done;
    forced_b[0] |= 0x80; /* a full 256-bit b, like NSS's */
    sh->acc = calloc((size_t)accounts, sizeof *sh->acc);
    if (!sh->acc)
        goto done;
    sh->accounts = accounts;

    ks_config cfg = {
        .listen = "127.0.0.1:0", .data_dir = dir, .random = hook, .login_max = 1000000, .database = database};
    if (ks_server_new(&ks, &cfg) != PICL_OK || ks_server_start(ks) != PICL_OK) {
        fprintf(stderr, "keyserver: cannot start a server\n");
        goto done;
    }
    unsigned port = ks_server_port(ks);
    snprintf(sh->url_start, sizeof sh->url_start, "http://127.0.0.1:%u/v1/auth/start", port);
    snprintf(sh->url_finish, sizeof sh->url_finish, "http://127.0.0.1:%u/v1/auth/finish", port);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/account/create", port);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    membuf m;
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
    int setup_ok = 1;
    char *sh_hex = picl__hex_encode_alloc(salt, 32);
    /* each account, then one auth/start to learn its B (the same for all its
     * logins), and the client's A and M for it */
    for (int k = 0; k < accounts && setup_ok; k++) {
        char email[64], email_hex[129];
        int elen = snprintf(email, sizeof email, EMAIL_FMT, k);
        picl__hex_encode(email_hex, (const uint8_t *)email, (size_t)elen);
        snprintf(sh->acc[k].start_body, sizeof sh->acc[k].start_body, "{\"email\":\"%s\"}", email_hex);
        char *vh = NULL;
        if (picl__srp_verifier(g, (const uint8_t *)email, (size_t)elen, srp_pw, 32, salt, 32, v, 256) !=
                PICL_OK ||
            !(vh = picl__hex_encode_alloc(v, 256)) || !sh_hex) {
            free(vh);
            setup_ok = 0;
            break;
        }
        char body[2048];
        snprintf(body, sizeof body,
                 "{\"email\":\"%s\",\"srp\":{\"type\":"
                 "\"SRP-6a/SHA256/2048/v1\",\"verifier\":\"%s\",\"salt\":\"%s\"},"
                 "\"passwordStretching\":{\"type\":\"PBKDF2/scrypt/PBKDF2/v1\",\"PBKDF2_rounds_1\":"
                 "20000,\"scrypt_N\":65536,\"scrypt_r\":8,\"scrypt_p\":1,\"PBKDF2_rounds_2\":20000,"
                 "\"salt\":\"%s\"}}",
                 email_hex, vh, sh_hex, sh_hex);
        free(vh);
        long st1 = post(c, url, body, &m);
        long st2 = post(c, sh->url_start, sh->acc[k].start_body, &m);
        json_t *j = st2 == 200 ? json_loads(m.data, 0, NULL) : NULL;
        const char *bh = json_string_value(json_object_get(json_object_get(j, "srp"), "B"));
        size_t got = 0;
        int okB = st1 == 200 && bh && picl__hex_decode(B, 256, &got, bh, strlen(bh)) == PICL_OK && got == 256;
        json_decref(j);
        picl__srp_client_free(sc);
        sc = NULL;
        if (!okB || picl__srp_client_new(g, &sc) != PICL_OK || picl__srp_client_A(sc, A, 256) ||
            picl__srp_client_process(sc, (const uint8_t *)email, (size_t)elen, srp_pw, 32, salt, 32, B, 256,
                                     M, 32) != PICL_OK) {
            fprintf(stderr, "keyserver: setup failed (%ld, %ld)\n", st1, st2);
            setup_ok = 0;
            break;
        }
        picl__hex_encode(sh->acc[k].A_hex, A, 256);
        picl__hex_encode(sh->acc[k].M_hex, M, 32);
        if (k == 0) {
            memcpy(v0, v, 256);
            memcpy(A0, A, 256);
            memcpy(M0, M, 32);
        }
    }
    free(sh_hex);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (!setup_ok)
        goto done;
    sh->clients = clients;

    /* A warm-up, then KS_SLICES slices of seconds / KS_SLICES each, every
     * slice followed by the SRP reference (KS_REF_N operations, median):
     * this VM's CPU time per operation jumps by up to half for seconds at a
     * time (the reference 0.88 ms, then 1.38 ms a second later), so a run
     * and a reference taken minutes or seconds apart can see two machines.
     * Each slice's ratio pairs a slice with the reference right after it;
     * the target is the median of the slices' ratios. */
    double ratios[KS_SLICES], refs[KS_SLICES], alone[KS_SLICES], per_slice[KS_SLICES];
    long logins_all = 0, failures_all = 0;
    double el_all = 0, cpu_all = 0, server_all = 0;
    int measured = 0;
    rc = 0;
    for (int phase = 0; phase <= KS_SLICES; phase++) {
        sh->until = bench_now() + (phase ? seconds / KS_SLICES : 0.5);
        double t0 = bench_now(), c0 = cpu_now();
        for (int i = 0; i < clients; i++) {
            ws[i].sh = sh;
            ws[i].index = i;
            ws[i].logins = ws[i].failures = 0;
            pthread_create(&ws[i].th, NULL, run, &ws[i]);
        }
        long logins = 0, failures = 0;
        double client_cpu = 0;
        for (int i = 0; i < clients; i++) {
            pthread_join(ws[i].th, NULL);
            logins += ws[i].logins;
            failures += ws[i].failures;
            client_cpu += ws[i].cpu_s;
        }
        double el = bench_now() - t0, cpu = cpu_now() - c0;
        if (!phase)
            continue;
        /* the server's CPU: the process's minus the client threads' own */
        double ref = srp_reference_par(g, v0, A0, M0, KS_REF_N, clients);
        double ref1 = srp_reference(g, v0, A0, M0, KS_REF_N);
        if (ref <= 0 || ref1 <= 0 || logins <= 0) {
            fprintf(stderr, "keyserver: %s failed\n", ref <= 0 ? "the SRP reference" : "a slice");
            rc = 1;
            break;
        }
        logins_all += logins;
        failures_all += failures;
        el_all += el;
        cpu_all += cpu;
        server_all += cpu - client_cpu;
        per_slice[measured] = (cpu - client_cpu) / (double)logins;
        refs[measured] = ref;
        alone[measured] = ref1;
        ratios[measured] = per_slice[measured] / ref;
        measured++;
    }
    if (measured == KS_SLICES && rc == 0 && failures_all == 0) {
        printf("keyserver: %.1f logins/s (auth/start + auth/finish, server-side SRP and %s; %d concurrent "
               "clients, precomputed, over %d accounts; %ld logins in %.2f s, 0 failures; %.2f ms per "
               "login per client)\n",
               logins_all / el_all, database ? "PostgreSQL" : "SQLite", clients, accounts, logins_all, el_all,
               1000.0 * el_all * clients / logins_all);
        printf("keyserver: %.2f ms CPU per login (server and the clients' HTTP together), %.0f%% of one "
               "core used; the server's (process CPU minus the client threads') %.3f ms\n",
               1000.0 * cpu_all / logins_all, 100.0 * cpu_all / el_all, 1000.0 * server_all / logins_all);
        double lo = ratios[0], hi = ratios[0];
        for (int k = 1; k < measured; k++) {
            lo = ratios[k] < lo ? ratios[k] : lo;
            hi = ratios[k] > hi ? ratios[k] : hi;
        }
        double mr = bench_median(ratios, (size_t)measured);
        printf("keyserver: %d slices: server CPU per login median %.3f ms, SRP work (after each slice, %d "
               "operations on each of %d threads at once) median %.3f ms, on one thread alone %.3f ms; "
               "ratios %.3f to %.3f, median %.3f\n",
               measured, bench_median(per_slice, (size_t)measured) * 1e3, KS_REF_N, clients,
               bench_median(refs, (size_t)measured) * 1e3, bench_median(alone, (size_t)measured) * 1e3, lo,
               hi, mr);
        bench_target("keyserver.server CPU/login / SRP", mr, "x", "<=", 1.3,
                     "server_new + B + verify on as many threads as clients, after each slice; median of "
                     "the slices");
    } else
        rc = 1;
done:
    picl__srp_client_free(sc);
    ks_server_free(ks);
    if (made)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (database == pg_url)
        bench_pg_stop();
    free(ws);
    if (sh)
        free(sh->acc);
    free(sh);
    picl__nss_release();
    return rc;
}
