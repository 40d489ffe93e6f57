/* SPDX-License-Identifier: MPL-2.0 */
/* bench_loadtest.c -- picl-bench loadtest: devices of several users syncing
 * against a keyserver with two storage nodes, one node drained in the
 * middle (storage.md 6).  Bounded, loopback only; not part of make check.
 * Reports syncs/s, sync latency p50/p99, keyserver requests, the time from
 * the drain to the last user reassigned, and checks that no acknowledged
 * write is lost and that every device converges.  --backend postgresql:
 * each node is a PostgreSQL database served by two storage processes
 * behind a round-robin balancer (the node's URL), the keyserver on a
 * database of the same throw-away cluster. */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"
#include "bench_pg.h"
#include "bench_util.h"
#include "crypto/nss.h"
#include "keyserver/keyserver.h"
#include "picl.h"
#include "storage/storage.h"
#include "stores/fileutil.h"

#define MAX_DEV 64
#define MAX_IDS 4096
#define PW "loadtest password 1"

static const uint8_t SECRET[] = "loadtest-keyserver-master-secret-0123456789";

/* A round-robin TCP balancer in front of a node's storage processes: each
 * accepted connection goes to the next backend port (read at connect time,
 * so that a process restarted on its port is found again). */
typedef struct lbal {
    int fd;
    unsigned port;
    _Atomic unsigned backend[2];
    _Atomic unsigned long conns[2]; /* connections handed to each */
    unsigned next;
    pthread_t th;
    volatile int stop, running;
} lbal;

typedef struct lnode {
    storage_server *srv, *srv2; /* srv2: the second process (PostgreSQL) */
    char dir[128], listen[64], listen2[64], url[96];
    char db[256]; /* PostgreSQL: the node's database URL */
    lbal lb;
} lnode;

typedef struct device {
    int index, user;
    char state[160], store[160], email[64];
    picl_service *svc;
    pthread_t th;
    /* ids written to the store; acked once a sync that started after the
     * write returned OK */
    char (*ids)[16];
    int nids, nacked;
    int syncs, failures;
    double *lat;
    int nlat, cap_lat;
} device;

/* The run's scratch directory, apart from L so that snprintf into L's
 * members never reads from the same object (-Werror=restrict under ASan). */
static char L_tmp[64];

static struct {
    ks_server *ks;
    unsigned ks_port;
    lnode nodes[2];
    device dev[MAX_DEV];
    int ndev, users;
    double t0, t_drain, t_last_assign, stop_at;
    int drained, assigned_after;
    long ks_requests;
    pthread_mutex_t mu;
    volatile int stop;
} L;

static void ks_log(void *ctx, const char *line)
{
    pthread_mutex_lock(&L.mu);
    if (strstr(line, "assigned uid ")) {
        if (L.drained) {
            L.assigned_after++;
            L.t_last_assign = bench_now();
        }
    } else if (!strncmp(line, "keyserver ", 10) || strstr(line, " /v1/")) {
        L.ks_requests++;
    }
    pthread_mutex_unlock(&L.mu);
}

/* Copies bytes both ways until one side closes. */
static void *lb_pipe(void *arg)
{
    int *fds = arg;
    struct pollfd pf[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    char buf[16384];
    for (;;) {
        if (poll(pf, 2, 1000) < 0)
            break;
        int done = 0;
        for (int i = 0; i < 2 && !done; i++) {
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(pf[i].fd, buf, sizeof buf);
            if (n <= 0) {
                done = 1;
                break;
            }
            for (ssize_t o = 0; o < n && !done;) {
                ssize_t w = write(pf[1 - i].fd, buf + o, (size_t)(n - o));
                if (w <= 0)
                    done = 1;
                else
                    o += w;
            }
        }
        if (done)
            break;
    }
    close(fds[0]);
    close(fds[1]);
    free(fds);
    return NULL;
}

static void *lb_main(void *arg)
{
    lbal *b = arg;
    while (!b->stop) {
        struct pollfd pf = {b->fd, POLLIN, 0};
        if (poll(&pf, 1, 200) <= 0)
            continue;
        int c = accept(b->fd, NULL, NULL);
        if (c < 0)
            continue;
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        unsigned k = b->next++ % 2;
        a.sin_port = htons((uint16_t)b->backend[k]);
        b->conns[k]++;
        int u = socket(AF_INET, SOCK_STREAM, 0);
        int *fds = malloc(2 * sizeof *fds);
        pthread_t th;
        if (u < 0 || !fds || connect(u, (struct sockaddr *)&a, sizeof a) != 0) {
            close(c);
            if (u >= 0)
                close(u);
            free(fds);
            continue;
        }
        fds[0] = c;
        fds[1] = u;
        if (pthread_create(&th, NULL, lb_pipe, fds) == 0) {
            pthread_detach(th);
        } else {
            close(c);
            close(u);
            free(fds);
        }
    }
    return NULL;
}

static int lb_start(lbal *b)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    b->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (b->fd < 0 || bind(b->fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(b->fd, (struct sockaddr *)&a, &len) != 0 || listen(b->fd, 64) != 0)
        return -1;
    b->port = ntohs(a.sin_port);
    if (pthread_create(&b->th, NULL, lb_main, b) != 0)
        return -1;
    b->running = 1;
    return 0;
}

static void lb_stop(lbal *b)
{
    if (b->running) {
        b->stop = 1;
        pthread_join(b->th, NULL);
        b->running = 0;
    }
    if (b->fd > 0)
        close(b->fd);
    b->fd = 0;
}

/* One storage process of a PostgreSQL node on *listen (kept for restarts). */
static int pg_proc_run(lnode *n, storage_server **srv, char *listen, size_t cap, const char *secret)
{
    storage_server_free(*srv);
    *srv = NULL;
    storage_config sc;
    memset(&sc, 0, sizeof sc);
    sc.listen = listen[0] ? listen : "127.0.0.1:0";
    sc.database = n->db;
    sc.node = n->url;
    sc.secret = (const uint8_t *)secret;
    sc.secret_len = strlen(secret);
    sc.prune_interval_s = -1;
    sc.threads = 8;
    if (storage_server_new(srv, &sc) != PICL_OK || storage_server_start(*srv) != PICL_OK)
        return -1;
    snprintf(listen, cap, "127.0.0.1:%u", storage_server_port(*srv));
    return 0;
}

/* A PostgreSQL node: the balancer (its URL is the node's), then two
 * processes on the node's database, restarted with a new secret. */
static int pg_node_run(lnode *n, const char *secret)
{
    if (!n->lb.running) {
        if (lb_start(&n->lb) != 0)
            return -1;
        snprintf(n->url, sizeof n->url, "http://127.0.0.1:%u", n->lb.port);
    }
    if (pg_proc_run(n, &n->srv, n->listen, sizeof n->listen, secret) != 0 ||
        pg_proc_run(n, &n->srv2, n->listen2, sizeof n->listen2, secret) != 0)
        return -1;
    n->lb.backend[0] = storage_server_port(n->srv);
    n->lb.backend[1] = storage_server_port(n->srv2);
    return 0;
}

static void node_stop(lnode *n)
{
    lb_stop(&n->lb);
    storage_server_free(n->srv);
    storage_server_free(n->srv2);
    n->srv = n->srv2 = NULL;
}

static int node_run(lnode *n, const char *name, const char *secret)
{
    if (n->db[0])
        return pg_node_run(n, secret);
    if (!n->dir[0]) {
        snprintf(n->dir, sizeof n->dir, "%s/%s", L_tmp, name);
        if (mkdir(n->dir, 0700) != 0)
            return -1;
    }
    storage_server_free(n->srv);
    n->srv = NULL;
    storage_config sc;
    memset(&sc, 0, sizeof sc);
    sc.listen = n->listen[0] ? n->listen : "127.0.0.1:0";
    sc.data_dir = n->dir;
    sc.secret = (const uint8_t *)secret;
    sc.secret_len = strlen(secret);
    sc.prune_interval_s = -1;
    sc.threads = 8;
    if (storage_server_new(&n->srv, &sc) != PICL_OK || storage_server_start(n->srv) != PICL_OK)
        return -1;
    snprintf(n->listen, sizeof n->listen, "127.0.0.1:%u", storage_server_port(n->srv));
    snprintf(n->url, sizeof n->url, "%s", storage_server_node(n->srv));
    return 0;
}

/* The verification code mailed to email (Maildir <ks>/mail/new). */
static int take_code(const char *email, char *code, size_t cap)
{
    char dir[160];
    snprintf(dir, sizeof dir, "%s/ks/mail/new", L_tmp);
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[512], line[512], to[96];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        FILE *f = fopen(p, "r");
        int mine = 0;
        snprintf(to, sizeof to, "To: %s", email);
        while (f && fgets(line, sizeof line, f)) {
            if (!strncmp(line, to, strlen(to)))
                mine = 1;
            if (!strncmp(line, "X-Verify-Code: ", 15) && mine) {
                snprintf(code, cap, "%.100s", line + 15);
                code[strcspn(code, "\r\n")] = 0;
                found = 1;
            }
        }
        if (f)
            fclose(f);
        if (found)
            unlink(p);
    }
    if (d)
        closedir(d);
    return found;
}

static int dev_open(device *v)
{
    mkdir(v->state, 0700);
    if (picl_service_create(v->state, &v->svc) != PICL_OK)
        return -1;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", L.ks_port);
    mkdir(v->store, 0700);
    return picl_service_set_keyserver_url(v->svc, url) == PICL_OK &&
                   picl_service_use_store_dir(v->svc, v->store) == PICL_OK
               ? 0
               : -1;
}

/* Rewrites the device's bookmarks.json with every id it wrote. */
static int write_store(device *v)
{
    json_t *arr = json_array();
    for (int i = 0; i < v->nids; i++) {
        char uri[64];
        snprintf(uri, sizeof uri, "https://example.org/%s", v->ids[i]);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", v->ids[i], "type", "bookmark",
                                             "parentid", "toolbar", "title", v->ids[i], "bmkUri", uri));
    }
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    char p[256];
    snprintf(p, sizeof p, "%s/bookmarks.json", v->store);
    int rc = text && picl__write_file_atomic(p, text, strlen(text), 0600) == PICL_OK ? 0 : -1;
    free(text);
    return rc;
}

/* The ids in the device's bookmarks.json (after syncs: every device's). */
static int read_ids(const device *v, char (*out)[16], int cap)
{
    char p[256];
    snprintf(p, sizeof p, "%s/bookmarks.json", v->store);
    json_t *j = json_load_file(p, 0, NULL);
    int n = 0;
    size_t i;
    json_t *r;
    json_array_foreach (j, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        if (id && n < cap)
            snprintf(out[n++], 16, "%s", id);
    }
    json_decref(j);
    return n;
}

/* Merges what sync pulled in: the device's own list keeps its writes, the
 * others' come from the file (the store writes them there). */
static void *dev_loop(void *arg)
{
    device *v = arg;
    unsigned seed = (unsigned)v->index * 7919u + 17u;
    int counter = 0;
    while (!L.stop && bench_now() < L.stop_at) {
        /* the file holds what the last sync merged: keep it, add one */
        char(*have)[16] = malloc(sizeof(char[16]) * MAX_IDS);
        int nh = have ? read_ids(v, have, MAX_IDS) : 0;
        char id[16];
        snprintf(id, sizeof id, "L%02d%09d", v->index, counter++);
        if (v->nids < MAX_IDS)
            snprintf(v->ids[v->nids++], 16, "%s", id);
        /* file = the merged list plus the new one */
        json_t *arr = json_array();
        for (int i = 0; i < nh; i++) {
            char uri[64];
            snprintf(uri, sizeof uri, "https://example.org/%s", have[i]);
            json_array_append_new(arr,
                                  json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", have[i], "type", "bookmark",
                                            "parentid", "toolbar", "title", have[i], "bmkUri", uri));
        }
        char newuri[64];
        snprintf(newuri, sizeof newuri, "https://example.org/%s", id);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "type", "bookmark",
                                             "parentid", "toolbar", "title", id, "bmkUri", newuri));
        free(have);
        char *text = json_dumps(arr, JSON_COMPACT);
        json_decref(arr);
        char p[256];
        snprintf(p, sizeof p, "%s/bookmarks.json", v->store);
        if (text)
            picl__write_file_atomic(p, text, strlen(text), 0600);
        free(text);
        int written = v->nids;
        double t = bench_now();
        picl_status st = picl_service_sync(v->svc, "bookmarks", NULL);
        double dt = bench_now() - t;
        pthread_mutex_lock(&L.mu);
        if (v->nlat == v->cap_lat) {
            v->cap_lat = v->cap_lat ? 2 * v->cap_lat : 256;
            v->lat = realloc(v->lat, sizeof *v->lat * (size_t)v->cap_lat);
        }
        if (v->lat)
            v->lat[v->nlat++] = dt;
        pthread_mutex_unlock(&L.mu);
        if (st == PICL_OK) {
            v->syncs++;
            v->nacked = written; /* everything written before this sync */
        } else {
            v->failures++;
            usleep(200000);
        }
        usleep(100000 + rand_r(&seed) % 400000);
    }
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int bench_loadtest(int argc, char **argv)
{
    int seconds = 300, users = 10, per_user = 2, pg = 0;
    const char *database = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--users") && i + 1 < argc)
            users = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--database") && i + 1 < argc)
            database = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "postgresql") || !strcmp(argv[i + 1], "sqlite")))
            pg = !strcmp(argv[++i], "postgresql");
        else {
            fprintf(stderr, "usage: picl-bench loadtest [--seconds N] [--users N] "
                            "[--backend sqlite|postgresql] [--database postgresql://...]\n"
                            "  --backend postgresql: a throw-away cluster; each node a database"
                            " served by 2 storage processes\n");
            return 2;
        }
    }
    if (seconds < 10 || users < 2 || users * per_user > MAX_DEV) {
        fprintf(stderr, "loadtest: --seconds >= 10, 2 <= --users <= %d\n", MAX_DEV / per_user);
        return 2;
    }
    pthread_mutex_init(&L.mu, NULL);
    if (bu_tmpdir(L_tmp, "loadtest") != 0)
        return 1;
    /* the devices keep their keys with NSS's SDR: a key database */
    if (picl__nss_acquire_dir(L_tmp) != PICL_OK) {
        fprintf(stderr, "loadtest: NSS\n");
        return 1;
    }
    char ksurl[256];
    if (pg) {
        /* the keyserver's database and one per node, in one cluster */
        if (bench_pg_start(ksurl, sizeof ksurl) != 0 ||
            bench_pg_database("node1", L.nodes[0].db, sizeof L.nodes[0].db) != 0 ||
            bench_pg_database("node2", L.nodes[1].db, sizeof L.nodes[1].db) != 0) {
            fprintf(stderr, "loadtest: PostgreSQL: cannot start a cluster\n");
            bench_pg_stop();
            return 1;
        }
        if (!database)
            database = ksurl;
    }
    char ksdir[128];
    snprintf(ksdir, sizeof ksdir, "%s/ks", L_tmp);
    mkdir(ksdir, 0700);
    ks_config kc;
    memset(&kc, 0, sizeof kc);
    kc.listen = "127.0.0.1:0";
    kc.data_dir = ksdir;
    kc.database = database;
    kc.secret = SECRET;
    kc.secret_len = sizeof SECRET - 1;
    kc.threads = 8;
    kc.purge_every_s = -1;
    kc.log = ks_log;
    kc.login_max = 1000;
    kc.start_max = 1000;
    int rc = 1;
    if (ks_server_new(&L.ks, &kc) != PICL_OK || ks_server_start(L.ks) != PICL_OK) {
        fprintf(stderr, "loadtest: keyserver: cannot start\n");
        goto done;
    }
    L.ks_port = ks_server_port(L.ks);
    /* two nodes, each with its own secret */
    for (int i = 0; i < 2; i++) {
        char name[8], hex[65];
        snprintf(name, sizeof name, "n%d", i + 1);
        if (node_run(&L.nodes[i], name, "placeholder-secret-until-the-port-is-known-01") != 0 ||
            ks_server_node_add(L.ks, L.nodes[i].url, 1000) != PICL_OK ||
            ks_server_node_secret(L.ks, L.nodes[i].url, hex) != PICL_OK ||
            node_run(&L.nodes[i], name, hex) != 0) {
            fprintf(stderr, "loadtest: node %d: cannot start\n", i + 1);
            goto done;
        }
    }
    printf("loadtest: keyserver on %s, 2 storage nodes (%s), %d users x %d devices, %d s\n",
           database ? "PostgreSQL" : "SQLite",
           pg ? "PostgreSQL, 2 storage processes each behind a balancer" : "SQLite, one process each", users,
           per_user, seconds);
    /* sign-ups: the first device creates and verifies, the second signs in */
    L.users = users;
    L.ndev = users * per_user;
    double t_setup = bench_now();
    for (int u = 0; u < users; u++) {
        for (int k = 0; k < per_user; k++) {
            device *v = &L.dev[u * per_user + k];
            v->index = u * per_user + k;
            v->user = u;
            snprintf(v->email, sizeof v->email, "load%02d@example.org", u);
            snprintf(v->state, sizeof v->state, "%s/d%02d", L_tmp, v->index);
            snprintf(v->store, sizeof v->store, "%s/d%02d-store", L_tmp, v->index);
            v->ids = malloc(sizeof(char[16]) * MAX_IDS);
            if (!v->ids || dev_open(v) != 0)
                goto done;
            picl_status st;
            if (k == 0) {
                char code[128];
                st = picl_service_create_account(v->svc, v->email, PW);
                if (st == PICL_OK && !take_code(v->email, code, sizeof code))
                    st = PICL_ERROR_NOT_FOUND;
                if (st == PICL_OK)
                    st = picl_service_verify_email(v->svc, code);
            }
            st = picl_service_sign_in(v->svc, v->email, PW);
            if (st == PICL_OK && write_store(v) == 0)
                st = picl_service_sync(v->svc, "bookmarks", NULL);
            if (st != PICL_OK) {
                fprintf(stderr, "loadtest: %s device %d: %s\n", v->email, k, picl_service_last_error(v->svc));
                goto done;
            }
        }
    }
    printf("  setup: %d accounts, %d devices signed in and synced in %.1f s\n", users, L.ndev,
           bench_now() - t_setup);
    L.t0 = bench_now();
    L.stop_at = L.t0 + seconds;
    for (int i = 0; i < L.ndev; i++)
        pthread_create(&L.dev[i].th, NULL, dev_loop, &L.dev[i]);
    /* the drain in the middle: node 1, its secret rotated (old tokens 401) */
    while (bench_now() < L.t0 + seconds / 2.0)
        usleep(100000);
    int64_t moved = 0;
    pthread_mutex_lock(&L.mu);
    L.drained = 1;
    L.t_drain = bench_now();
    pthread_mutex_unlock(&L.mu);
    char hex[65];
    if (ks_server_node_drain(L.ks, L.nodes[0].url, &moved) != PICL_OK ||
        ks_server_node_secret(L.ks, L.nodes[0].url, hex) != PICL_OK ||
        node_run(&L.nodes[0], "n1", hex) != 0) {
        fprintf(stderr, "loadtest: drain failed\n");
        L.stop = 1;
    }
    printf("  drained %s at %.1f s: %lld users to move\n", L.nodes[0].url, L.t_drain - L.t0,
           (long long)moved);
    for (int i = 0; i < L.ndev; i++)
        pthread_join(L.dev[i].th, NULL);
    double elapsed = bench_now() - L.t0;

    /* figures */
    int syncs = 0, failures = 0, nlat = 0;
    for (int i = 0; i < L.ndev; i++) {
        syncs += L.dev[i].syncs;
        failures += L.dev[i].failures;
        nlat += L.dev[i].nlat;
    }
    double *all = malloc(sizeof *all * (size_t)(nlat ? nlat : 1));
    int k = 0;
    for (int i = 0; all && i < L.ndev; i++)
        for (int j = 0; j < L.dev[i].nlat; j++)
            all[k++] = L.dev[i].lat[j];
    if (all)
        qsort(all, (size_t)k, sizeof *all, cmp_d);
    printf("  load: %d syncs ok, %d failed or retried (conflicts between a user's devices, the "
           "move), %.1f syncs/s, %.1f keyserver requests/s\n",
           syncs, failures, syncs / elapsed, L.ks_requests / elapsed);
    if (all && k)
        printf("  sync latency (one picl_service_sync of bookmarks, all its requests): p50 %.0f ms,"
               " p99 %.0f ms\n",
               all[k / 2] * 1000, all[(int)(k * 0.99)] * 1000);
    free(all);
    for (int i = 0; i < 2 && L.nodes[0].db[0]; i++)
        printf("  node %d: %lu + %lu connections to its two storage processes\n", i + 1,
               L.nodes[i].lb.conns[0], L.nodes[i].lb.conns[1]);
    printf("  reassigned after the drain: %d users, the last %.2f s after the drain\n", L.assigned_after,
           L.assigned_after ? L.t_last_assign - L.t_drain : 0.0);

    /* convergence: three rounds of every device syncing in turn */
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < L.ndev; i++)
            picl_service_sync(L.dev[i].svc, "bookmarks", NULL);
    long lost = 0, diverged = 0, acked = 0;
    char(*got)[16] = malloc(sizeof(char[16]) * MAX_IDS * 4);
    for (int i = 0; got && i < L.ndev; i++) {
        int n = read_ids(&L.dev[i], got, MAX_IDS * 4);
        for (int j = 0; j < L.ndev; j++) {
            if (L.dev[j].user != L.dev[i].user)
                continue;
            for (int a = 0; a < L.dev[j].nacked; a++) {
                int found = 0;
                for (int b = 0; b < n && !found; b++)
                    found = !strcmp(got[b], L.dev[j].ids[a]);
                if (i == j)
                    acked++;
                if (!found)
                    lost++;
            }
        }
        /* the same set on both devices of the user */
        if (i % per_user == 0) {
            char(*other)[16] = malloc(sizeof(char[16]) * MAX_IDS * 4);
            int m = other ? read_ids(&L.dev[i + 1], other, MAX_IDS * 4) : -1;
            if (m != n)
                diverged++;
            free(other);
        }
    }
    free(got);
    int on_drained = 0;
    for (int i = 0; i < L.ndev; i++) {
        char *status = NULL;
        if (picl_service_get_status_json(L.dev[i].svc, &status) == PICL_OK && status &&
            strstr(status, L.nodes[0].url))
            on_drained++;
        picl_free(status);
    }
    printf("  after: %ld acknowledged writes, %ld missing on a device of their user, %ld users "
           "whose devices differ, %d devices still on the drained node\n",
           acked, lost, diverged, on_drained);
    rc = lost == 0 && diverged == 0 && on_drained == 0 && L.assigned_after == (int)moved ? 0 : 1;
    printf("  result: %s\n", rc == 0 ? "ok" : "FAILED");
done:
    for (int i = 0; i < L.ndev; i++) {
        if (L.dev[i].svc)
            picl_service_release(L.dev[i].svc);
        free(L.dev[i].ids);
        free(L.dev[i].lat);
    }
    ks_server_free(L.ks);
    node_stop(&L.nodes[0]);
    node_stop(&L.nodes[1]);
    picl__nss_release();
    bench_pg_stop();
    bu_rmtree(L_tmp);
    return rc;
}
