/* SPDX-License-Identifier: MPL-2.0 */
/* bench_storage.c -- picl-bench storage: the storage server under wrk on
 * loopback (2 connections; POSTs also with 8), against nginx serving a
 * static file of the same size as each response (the ceiling); with
 * --backend postgresql the same workloads on a PostgreSQL-backed node
 * beside the SQLite figures. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <dirent.h>
#include <pthread.h>
#include <sqlite3.h>

#include "bench.h"
#include "bench_pg.h"
#include "crypto/nss.h"
#include "crypto/util.h"
#include "protocol/hawk.h"
#include "protocol/tokenlib.h"
#include "storage/storage.h"

#define UID 1 /* write_targets' user */
#define NONCE_LEN 12
#define REC_LEN (NONCE_LEN + PICL_HAWK_B64_BYTES)

static const uint8_t SECRET[] = "picl-bench-secret-0123456789abcdef-0123456789";

typedef struct scenario {
    const char *name;
    const char *method;
    const char *path; /* below /1.5/<uid> */
    char *body;       /* request body or NULL */
    size_t count;     /* precomputed Hawk headers (a fresh nonce each) per second of the run */
    int duration_s;
    int conns; /* wrk connections */
    int users; /* request i is user uid + i % users, each with its own token */
    int uid;   /* the scenario's first user: no two scenarios share one, so
                  none uses up another's share of the server's nonce cache */
    const char *label;
} scenario;

typedef struct wrk_result {
    double rps, p50_ms, p99_ms;
    long non2xx, requests;
    double server_cpu, client_cpu; /* user + system seconds of the server and of wrk in the run */
    int busy, workers;             /* the server's workers that did >= 10 % of the work, of all */
} wrk_result;

static char dir[64];
static const char *only;     /* --only NAME: that scenario alone (for a profile) */
static size_t nonce_entries; /* --nonce-cache N: the server's (0: its default) */
static char *token, *key;
static unsigned port;
static pid_t ngx_pid = -1;

/* Users by uid: UID, then the scenarios' (see run_node). */
#define MAX_UID 240
#define READ_USERS 64 /* a read scenario's requests spread over this many users */
#define INFO_UID 100  /* GET /info/collections: uids 100..163 */
#define BIG_UID 170   /* GET 1000 full: uids 170..233, each with its 1000 records */
static char *utoken[MAX_UID + 1], *ukey[MAX_UID + 1]; /* minted by need_user() */

/* A scenario's figure is not made of errors: above this share of non-2xx
 * answers it is INVALID (and its target NOT MET). */
#define MAX_NON2XX_SHARE 0.01
#define READ_RUNS 9 /* runs of each read scenario (median) */

static int run_cmd_out(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    return pclose(p);
}

/* "1.23ms" / "456.00us" / "1.01s" -> milliseconds */
static double to_ms(const char *v)
{
    char *end;
    double x = strtod(v, &end);
    if (!strncmp(end, "us", 2))
        return x / 1000.0;
    if (!strncmp(end, "ms", 2))
        return x;
    if (*end == 's')
        return x * 1000.0;
    if (!strncmp(end, "m", 1))
        return x * 60000.0;
    return x;
}

static int parse_wrk(const char *out, wrk_result *r)
{
    memset(r, 0, sizeof *r);
    const char *p = strstr(out, "Requests/sec:");
    if (!p)
        return -1;
    r->rps = strtod(p + 13, NULL);
    const char *d = strstr(out, "Latency Distribution");
    if (d) {
        const char *l50 = strstr(d, "50%"), *l99 = strstr(d, "99%");
        if (l50)
            r->p50_ms = to_ms(l50 + 3 + strspn(l50 + 3, " \t"));
        if (l99)
            r->p99_ms = to_ms(l99 + 3 + strspn(l99 + 3, " \t"));
    }
    const char *nx = strstr(out, "Non-2xx or 3xx responses:");
    if (nx)
        r->non2xx = strtol(nx + 25, NULL, 10);
    const char *rq = strstr(out, "requests in");
    if (rq) {
        const char *s = rq;
        while (s > out && s[-1] != '\n')
            s--;
        r->requests = strtol(s, NULL, 10);
    }
    return 0;
}

/* Mints the token of uid for the node on `port` into *tok / *k. */
static int mint_for(int64_t uid, char **tok, char **k)
{
    picl_tokenlib_payload p;
    memset(&p, 0, sizeof p);
    p.uid = uid;
    snprintf(p.node, sizeof p.node, "http://127.0.0.1:%u", port);
    p.expires = (int64_t)time(NULL) + 3600;
    snprintf(p.fxa_uid, sizeof p.fxa_uid, "bench");
    snprintf(p.fxa_kid, sizeof p.fxa_kid, "bench");
    snprintf(p.hashed_fxa_uid, sizeof p.hashed_fxa_uid, "bench");
    snprintf(p.hashed_device_id, sizeof p.hashed_device_id, "bench");
    return picl__tokenlib_mint(tok, k, SECRET, sizeof SECRET - 1, &p) == PICL_OK ? 0 : -1;
}

/* The token of uid, minted the first time. */
static int need_user(int uid)
{
    if (uid < 1 || uid > MAX_UID)
        return -1;
    return utoken[uid] ? 0 : mint_for(uid, &utoken[uid], &ukey[uid]);
}

/* Writes a scenario's requests and its Lua script: request i is user
 * uid + i % users, with the nonce and MAC of record i (a nonce used once:
 * the records are precomputed, one per request, with each user's key in an
 * HMAC context of its own, as a client signs).  wrk cycles through the
 * records only past sc->count requests, and the server refuses those
 * replays (401): the run is then INVALID.  rep (the run's number) is in
 * every nonce: a scenario run again sends no nonce of an earlier run. */
static int write_script(const scenario *sc, const char *lua, int64_t ts, size_t count, int rep)
{
    char datafile[128], usersfile[128], bodyfile[128], target[256], tstext[32];
    picl_hmac_ctx *ctx[READ_USERS];
    int users = sc->users, rc = -1;
    FILE *f = NULL, *fu = NULL;
    memset(ctx, 0, sizeof ctx);
    snprintf(datafile, sizeof datafile, "%s/%s.hawk", dir, sc->name);
    snprintf(usersfile, sizeof usersfile, "%s/%s.users", dir, sc->name);
    snprintf(bodyfile, sizeof bodyfile, "%s/%s.body", dir, sc->name);
    snprintf(tstext, sizeof tstext, "%" PRId64, ts);
    if (users < 1 || users > READ_USERS)
        goto done;
    f = fopen(datafile, "w");
    fu = fopen(usersfile, "w");
    if (!f || !fu)
        goto done;
    for (int u = 0; u < users; u++) {
        int uid = sc->uid + u;
        if (need_user(uid) != 0 || picl__hmac_sha256_init(&ctx[u], ukey[uid], strlen(ukey[uid])) != PICL_OK)
            goto done;
        fprintf(fu, "/1.5/%d%s\t%s\n", uid, sc->path, utoken[uid]);
    }
    for (size_t i = 0; i < count; i++) {
        int u = (int)(i % (size_t)users);
        char nonce[NONCE_LEN + 1], mac[PICL_HAWK_B64_BYTES + 1];
        snprintf(target, sizeof target, "/1.5/%d%s", sc->uid + u, sc->path);
        snprintf(nonce, sizeof nonce, "%c%c%010u", sc->name[0], 'a' + rep % 26, (unsigned)(i % 1000000000u));
        picl_hawk_request hr = {.method = sc->method, .resource = target, .host = "127.0.0.1", .port = port};
        if (picl__hawk_mac_ctx(mac, ctx[u], tstext, nonce, &hr, NULL, NULL) != PICL_OK)
            goto done;
        fwrite(nonce, 1, NONCE_LEN, f);
        fwrite(mac, 1, PICL_HAWK_B64_BYTES, f);
    }
    if (fclose(f) != 0 || fclose(fu) != 0) {
        f = fu = NULL;
        goto done;
    }
    f = fu = NULL;
    if (sc->body) {
        f = fopen(bodyfile, "w");
        if (!f)
            goto done;
        fwrite(sc->body, 1, strlen(sc->body), f);
        fclose(f);
    }
    f = fopen(lua, "w");
    if (!f)
        goto done;
    /* each request a ready string (wrk.format per request would cost the
     * client more than the server): the user's request line, Host and the
     * start of its Authorization, then the record's nonce and MAC */
    fprintf(f,
            "local f = io.open(\"%s\", \"rb\")\n"
            "local data = f:read(\"*a\")\n"
            "f:close()\n"
            "local n = #data / %d\n"
            "local tail = \"\\r\\n\\r\\n\"\n",
            datafile, REC_LEN);
    if (sc->body)
        fprintf(f,
                "local b = io.open(\"%s\", \"rb\")\n"
                "tail = \"\\r\\nContent-Type: application/json\\r\\nContent-Length: %zu\\r\\n\\r\\n\" .. "
                "b:read(\"*a\")\n"
                "b:close()\n",
                bodyfile, strlen(sc->body));
    fprintf(f,
            "local users = {}\n"
            "for line in io.lines(\"%s\") do\n"
            "  local t, id = line:match(\"^([^\\t]+)\\t(.+)$\")\n"
            "  users[#users + 1] = \"%s \" .. t .. \" HTTP/1.1\\r\\nHost: 127.0.0.1:%u\\r\\n\" ..\n"
            "    'Authorization: Hawk id=\"' .. id .. '\", ts=\"%s\", nonce=\"'\n"
            "end\n"
            "local nu = #users\n"
            "local i = 0\n"
            "request = function()\n"
            "  local off = (i %% n) * %d\n"
            "  local u = users[(i %% nu) + 1]\n"
            "  i = i + 1\n"
            "  return u .. data:sub(off + 1, off + %d) .. '\", mac=\"' .. data:sub(off + %d, off + %d) .. "
            "'\"' .. tail\n"
            "end\n",
            usersfile, sc->method, port, tstext, REC_LEN, NONCE_LEN, NONCE_LEN + 1, REC_LEN);
    if (fclose(f) == 0)
        rc = 0;
    f = NULL;
done:
    if (f)
        fclose(f);
    if (fu)
        fclose(fu);
    for (int u = 0; u < READ_USERS; u++)
        picl__hmac_sha256_abort(ctx[u]);
    return rc;
}

static double tv_s(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

/* User + system CPU seconds from a /proc stat file (0 when gone). */
static double stat_cpu(const char *path)
{
    char buf[1024];
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* fields after the command name */
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ... of one process (all its threads). */
static double proc_cpu(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    return stat_cpu(path);
}

/* The CPU seconds of the server's workers into cpu[]/tid[]: nginx's
 * worker processes, or this process's HTTP worker threads (comm
 * "MHD-worker"); returns their number. */
#define MAX_WORKERS 64
static int worker_cpu(int nginx, long tid[MAX_WORKERS], double cpu[MAX_WORKERS])
{
    if (nginx) {
        char path[96], buf[1024];
        snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)ngx_pid, (long)ngx_pid);
        FILE *f = fopen(path, "r");
        size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[len] = 0;
        int n = 0;
        char *e = buf;
        for (long pid = strtol(e, &e, 10); pid > 0 && n < MAX_WORKERS; pid = strtol(e, &e, 10)) {
            tid[n] = pid;
            cpu[n++] = proc_cpu(pid);
        }
        return n;
    }
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && n < MAX_WORKERS && (e = readdir(d))) {
        char path[320], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        int named = fgets(comm, sizeof comm, f) && !strncmp(comm, "MHD-worker", 10);
        fclose(f);
        if (named) {
            /* the thread's own times (/proc/TID/stat would give the process's) */
            tid[n] = strtol(e->d_name, NULL, 10);
            snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid[n]);
            cpu[n++] = stat_cpu(path);
        }
    }
    if (d)
        closedir(d);
    return n;
}

/* CPU seconds of the server under test: this process (the SQLite node
 * runs in it; its main thread waits for wrk), or nginx's master and
 * workers. */
static double server_cpu(int nginx)
{
    if (!nginx) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
    }
    long pid[MAX_WORKERS];
    double cpu[MAX_WORKERS], t = proc_cpu(ngx_pid);
    for (int i = 0, n = worker_cpu(1, pid, cpu); i < n; i++)
        t += cpu[i];
    return t;
}

/* How many of the worker threads did >= 10 % of the work between two
 * worker_cpu() snapshots. */
static int busy_workers(int n0, const long *t0, const double *c0, int n1, const long *t1, const double *c1)
{
    double delta[MAX_WORKERS], total = 0;
    for (int i = 0; i < n1; i++) {
        delta[i] = c1[i];
        for (int j = 0; j < n0; j++)
            if (t0[j] == t1[i])
                delta[i] -= c0[j];
        total += delta[i];
    }
    int busy = 0;
    for (int i = 0; i < n1; i++)
        busy += total > 0 && delta[i] >= 0.1 * total;
    return busy;
}

static double children_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

/* wrk against url (lua NULL: plain GETs); r gets its figures and the CPU
 * the server (nginx or this process) and wrk spent. */
static int run_wrk(const char *url, const char *lua, int duration, int conns, int nginx, wrk_result *r)
{
    char cmd[1024], out[8192];
    /* one thread: each wrk thread runs the script from its first nonce */
    snprintf(cmd, sizeof cmd, "wrk -t1 -c%d -d%ds --latency %s%s %s 2>&1", conns, duration, lua ? "-s " : "",
             lua ? lua : "", url);
    long t0[MAX_WORKERS], t1[MAX_WORKERS];
    double w0[MAX_WORKERS], w1[MAX_WORKERS];
    int n0 = worker_cpu(nginx, t0, w0);
    double s0 = server_cpu(nginx), c0 = children_cpu();
    run_cmd_out(cmd, out, sizeof out);
    double s1 = server_cpu(nginx), c1 = children_cpu();
    int n1 = worker_cpu(nginx, t1, w1);
    if (parse_wrk(out, r) != 0) {
        fprintf(stderr, "storage: wrk failed:\n%s\n", out);
        return -1;
    }
    r->workers = n1;
    r->busy = busy_workers(n0, t0, w0, n1, t1, w1);
    r->server_cpu = s1 - s0;
    r->client_cpu = c1 - c0;
    return 0;
}

/* One signed request of uid through libcurl, to learn the response size
 * (and to load data). Returns the body length, or -1. */
static long signed_request(int uid, const char *method, const char *path, const char *body)
{
    char target[256], url[320];
    if (need_user(uid) != 0)
        return -1;
    snprintf(target, sizeof target, "/1.5/%d%s", uid, path);
    const char *tok = utoken[uid], *k = ukey[uid];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, target);
    picl_hawk_request hr = {.method = method, .resource = target, .host = "127.0.0.1", .port = port};
    char *hdr = NULL;
    if (picl__hawk_client_header(&hdr, tok, k, strlen(k), &hr, (int64_t)time(NULL), NULL, NULL) != PICL_OK)
        return -1;
    char auth[4096];
    snprintf(auth, sizeof auth, "Authorization: %s", hdr);
    free(hdr);
    CURL *h = curl_easy_init();
    struct curl_slist *hl = curl_slist_append(NULL, auth);
    hl = curl_slist_append(hl, "Content-Type: application/json");
    FILE *sink = fopen("/dev/null", "w");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
    if (body)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    long status = 0;
    curl_off_t size = -1;
    if (curl_easy_perform(h) == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(h, CURLINFO_SIZE_DOWNLOAD_T, &size);
    }
    fclose(sink);
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    return status == 200 ? (long)size : -1;
}

static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof sa;
    unsigned p = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && getsockname(fd, (struct sockaddr *)&sa, &l) == 0)
        p = ntohs(sa.sin_port);
    close(fd);
    return p;
}

static pid_t start_nginx(unsigned nport)
{
    char conf[128], cmd[256];
    snprintf(conf, sizeof conf, "%s/nginx.conf", dir);
    FILE *f = fopen(conf, "w");
    if (!f)
        return -1;
    fprintf(f,
            "daemon off;\nworker_processes 2;\nuser root;\npid %s/nginx.pid;\n"
            "error_log %s/nginx.err;\nevents { worker_connections 64; }\n"
            "http { access_log off; sendfile on; keepalive_requests 1000000;\n"
            "  client_body_temp_path %s; proxy_temp_path %s; fastcgi_temp_path %s;\n"
            "  uwsgi_temp_path %s; scgi_temp_path %s;\n"
            "  server { listen 127.0.0.1:%u; root %s/www; default_type application/json;\n"
            "    location /1.5/ { rewrite ^ /current break; } } }\n",
            dir, dir, dir, dir, dir, dir, dir, nport, dir);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/www", dir);
    mkdir(cmd, 0755);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("nginx", "nginx", "-p", dir, "-c", conf, (char *)NULL);
        _exit(127);
    }
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
    return pid;
}

static int write_static(const char *name, long size)
{
    char p[160];
    snprintf(p, sizeof p, "%s/www/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f)
        return -1;
    for (long i = 0; i < size; i++)
        fputc('x', f);
    fclose(f);
    return 0;
}

static char *records_body(int n, int first, size_t payload)
{
    size_t cap = (size_t)n * (payload + 64) + 8;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    size_t o = (size_t)snprintf(b, cap, "[");
    for (int i = 0; i < n; i++) {
        o +=
            (size_t)snprintf(b + o, cap - o, "%s{\"id\":\"rec%06d\",\"payload\":\"", i ? "," : "", first + i);
        memset(b + o, 'p', payload);
        o += payload;
        o += (size_t)snprintf(b + o, cap - o, "\"}");
    }
    snprintf(b + o, cap - o, "]");
    return b;
}

static void rmtree(const char *d)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0)
        fprintf(stderr, "storage: could not remove %s\n", d);
}

/* ---- the physical limit of writes (issue 15) ---------------------------- */

/* The storage server's SQLite schema as far as a POST touches it (users,
 * collections, bsos with its indexes, the undo extension's history and the
 * trigger that fills it on every overwrite). */
static const char REF_SCHEMA[] =
    "CREATE TABLE users(uid INTEGER PRIMARY KEY, modified INTEGER NOT NULL);"
    "CREATE TABLE collections(uid INTEGER NOT NULL, name TEXT NOT NULL,"
    " modified INTEGER NOT NULL, PRIMARY KEY(uid, name));"
    "CREATE TABLE bsos(uid INTEGER NOT NULL, coll TEXT NOT NULL, id TEXT NOT NULL,"
    " sortindex INTEGER, payload TEXT NOT NULL DEFAULT '', payload_size INTEGER NOT NULL DEFAULT 0,"
    " modified INTEGER NOT NULL, expiry INTEGER NOT NULL);"
    "CREATE UNIQUE INDEX bsos_key ON bsos(uid, coll, id);"
    "CREATE INDEX bsos_modified ON bsos(uid, coll, modified);"
    "CREATE INDEX bsos_expiry ON bsos(expiry);"
    "CREATE TABLE bso_history(uid INTEGER NOT NULL, coll TEXT NOT NULL, id TEXT NOT NULL,"
    " sortindex INTEGER, payload TEXT NOT NULL, payload_size INTEGER NOT NULL, modified INTEGER NOT NULL,"
    " expiry INTEGER NOT NULL, replaced INTEGER NOT NULL, keep_until INTEGER NOT NULL);"
    "CREATE INDEX bso_history_key ON bso_history(uid, coll, modified);"
    "CREATE INDEX bso_history_keep ON bso_history(keep_until);"
    "CREATE TRIGGER bsos_history_update AFTER UPDATE ON bsos WHEN OLD.expiry > NEW.modified BEGIN"
    " INSERT INTO bso_history VALUES(OLD.uid, OLD.coll, OLD.id, OLD.sortindex, OLD.payload, OLD.payload_size,"
    " OLD.modified, OLD.expiry, NEW.modified, NEW.modified + 259200000); END;";

typedef struct ref_writer {
    const char *path;
    double until;
    long records;
    int failed;
    pthread_t th;
} ref_writer;

/* One connection: transactions of 100 BSOs of 1 KiB (the ids of the wrk
 * POST, overwritten each time as there), as the server writes a POST: the
 * expired row deleted, the upsert, users and collections touched, COMMIT
 * with WAL and synchronous=FULL.  Statements prepared once. */
static void *ref_write(void *arg)
{
    ref_writer *w = arg;
    sqlite3 *c = NULL;
    sqlite3_stmt *del = NULL, *ins = NULL, *usr = NULL, *col = NULL;
    char payload[1024];
    memset(payload, 'p', sizeof payload);
    w->failed = 1;
    if (sqlite3_open_v2(w->path, &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        goto done;
    sqlite3_busy_timeout(c, 10000);
    if (sqlite3_exec(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c, "DELETE FROM bsos WHERE uid=?1 AND coll=?2 AND id=?3 AND expiry<=?4", -1, &del,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c,
                           "INSERT INTO bsos(uid,coll,id,sortindex,payload,payload_size,modified,expiry)"
                           " VALUES(?1,?2,?3,NULL,?4,?5,?6,?7) ON CONFLICT(uid,coll,id) DO UPDATE SET"
                           " payload=excluded.payload, payload_size=excluded.payload_size,"
                           " modified=excluded.modified",
                           -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c,
                           "INSERT INTO users(uid,modified) VALUES(?1,?2)"
                           " ON CONFLICT(uid) DO UPDATE SET modified=excluded.modified",
                           -1, &usr, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c,
                           "INSERT INTO collections(uid,name,modified) VALUES(?1,?2,?3)"
                           " ON CONFLICT(uid,name) DO UPDATE SET modified=excluded.modified",
                           -1, &col, NULL) != SQLITE_OK)
        goto done;
    while (bench_now() < w->until) {
        int64_t now = (int64_t)(bench_now() * 100.0);
        int ok = sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
        for (int i = 0; ok && i < 100; i++) {
            char id[16];
            snprintf(id, sizeof id, "rec%06d", i);
            sqlite3_bind_int64(del, 1, UID);
            sqlite3_bind_text(del, 2, "posted", -1, SQLITE_STATIC);
            sqlite3_bind_text(del, 3, id, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(del, 4, now);
            ok = sqlite3_step(del) == SQLITE_DONE;
            sqlite3_reset(del);
            sqlite3_bind_int64(ins, 1, UID);
            sqlite3_bind_text(ins, 2, "posted", -1, SQLITE_STATIC);
            sqlite3_bind_text(ins, 3, id, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(ins, 4, payload, sizeof payload, SQLITE_STATIC);
            sqlite3_bind_int64(ins, 5, (sqlite3_int64)sizeof payload);
            sqlite3_bind_int64(ins, 6, now);
            sqlite3_bind_int64(ins, 7, now + 31536000000LL);
            ok = ok && sqlite3_step(ins) == SQLITE_DONE;
            sqlite3_reset(ins);
        }
        sqlite3_bind_int64(usr, 1, UID);
        sqlite3_bind_int64(usr, 2, now);
        ok = ok && sqlite3_step(usr) == SQLITE_DONE;
        sqlite3_reset(usr);
        sqlite3_bind_int64(col, 1, UID);
        sqlite3_bind_text(col, 2, "posted", -1, SQLITE_STATIC);
        sqlite3_bind_int64(col, 3, now);
        ok = ok && sqlite3_step(col) == SQLITE_DONE;
        sqlite3_reset(col);
        if (!ok || sqlite3_exec(c, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
            fprintf(stderr, "storage: direct SQLite write failed: %s\n", sqlite3_errmsg(c));
            goto done;
        }
        w->records += 100;
    }
    w->failed = 0;
done:
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    sqlite3_finalize(usr);
    sqlite3_finalize(col);
    sqlite3_close(c);
    return NULL;
}

/* Records/s of conns writers for secs seconds on a fresh database; -1 on
 * failure. */
static double ref_records_per_s(int conns, int secs)
{
    char path[128];
    snprintf(path, sizeof path, "%s/direct-%d.sqlite", dir, conns);
    sqlite3 *c = NULL;
    int ok =
        sqlite3_open(path, &c) == SQLITE_OK &&
        sqlite3_exec(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL, NULL) == SQLITE_OK &&
        (sqlite3_exec(c, REF_SCHEMA, NULL, NULL, NULL) == SQLITE_OK ||
         sqlite3_exec(c, "DELETE FROM bsos; DELETE FROM bso_history;", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(c);
    ref_writer w[8];
    if (!ok || conns < 1 || conns > 8)
        return -1;
    double t0 = bench_now();
    for (int i = 0; i < conns; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].path = path;
        w[i].until = t0 + secs;
        pthread_create(&w[i].th, NULL, ref_write, &w[i]);
    }
    long records = 0;
    int failed = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(w[i].th, NULL);
        records += w[i].records;
        failed |= w[i].failed;
    }
    double el = bench_now() - t0;
    return failed || el <= 0 ? -1 : (double)records / el;
}

typedef struct post_client {
    const char *path, *body;
    double until;
    long ok, failed;
    pthread_t th;
} post_client;

/* One keep-alive connection posting body to path until `until`, each
 * request signed afresh (a nonce of its own). */
static void *post_loop(void *arg)
{
    post_client *pc = arg;
    char target[256], url[320], auth[4096];
    snprintf(target, sizeof target, "/1.5/%d%s", UID, pc->path);
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, target);
    picl_hawk_request hr = {.method = "POST", .resource = target, .host = "127.0.0.1", .port = port};
    CURL *h = curl_easy_init();
    FILE *sink = fopen("/dev/null", "w");
    if (!h || !sink)
        goto done;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, pc->body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    while (bench_now() < pc->until) {
        char *hdr = NULL;
        if (picl__hawk_client_header(&hdr, token, key, strlen(key), &hr, (int64_t)time(NULL), NULL, NULL) !=
            PICL_OK) {
            pc->failed++;
            break;
        }
        snprintf(auth, sizeof auth, "Authorization: %s", hdr);
        free(hdr);
        struct curl_slist *hl = curl_slist_append(NULL, auth);
        hl = curl_slist_append(hl, "Content-Type: application/json");
        hl = curl_slist_append(hl, "Expect:");
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        long status = 0;
        if (curl_easy_perform(h) == CURLE_OK)
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(hl);
        if (status == 200)
            pc->ok++;
        else
            pc->failed++;
    }
done:
    if (sink)
        fclose(sink);
    curl_easy_cleanup(h);
    return NULL;
}

/* Records/s the server accepts from conns connections posting 100 x 1 KiB
 * for secs seconds; -1 when a request failed. */
static double server_records_per_s(const char *path, const char *body, int conns, int secs)
{
    post_client pc[8];
    double t0 = bench_now();
    for (int i = 0; i < conns; i++) {
        memset(&pc[i], 0, sizeof pc[i]);
        pc[i].path = path;
        pc[i].body = body;
        pc[i].until = t0 + secs;
        pthread_create(&pc[i].th, NULL, post_loop, &pc[i]);
    }
    long ok = 0, failed = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(pc[i].th, NULL);
        ok += pc[i].ok;
        failed += pc[i].failed;
    }
    double el = bench_now() - t0;
    if (failed || el <= 0) {
        fprintf(stderr, "storage: %ld of %ld POSTs failed\n", failed, ok + failed);
        return -1;
    }
    return (double)ok * 100.0 / el;
}

/* The write target: POST 100 x 1 KiB (libcurl clients in this process, one
 * keep-alive connection each) against the same BSOs written straight into
 * SQLite (the server's schema, WAL, synchronous=FULL, 100 per transaction,
 * no HTTP, no JSON), with 1 and with 8 connections; 3 alternating rounds of
 * 2 s each, medians.  Needs the server up (port, token, key).  0 or 1. */
static int write_targets(void)
{
    int rc = 0;
    printf("storage: POST 100 x 1 KiB against the same writes straight into SQLite (medians of 3 rounds of 2 "
           "s):\n");
    for (int k = 0; k < 2; k++) {
        int conns = k ? 8 : 1;
        char path[32];
        snprintf(path, sizeof path, "/storage/posted%d", conns);
        char *body = records_body(100, 0, 1024);
        double ours[3], ref[3];
        int ok = body != NULL;
        for (int r = 0; ok && r < 3; r++) {
            ours[r] = server_records_per_s(path, body, conns, 2);
            ref[r] = ours[r] > 0 ? ref_records_per_s(conns, 2) : -1;
            ok = ours[r] > 0 && ref[r] > 0;
        }
        free(body);
        if (!ok) {
            fprintf(stderr, "storage: the write comparison with %d connection(s) failed\n", conns);
            rc = 1;
            continue;
        }
        double mo = bench_median(ours, 3), mr = bench_median(ref, 3);
        printf("  %d connection%s: server %.0f records/s, direct SQLite %.0f records/s\n", conns,
               conns > 1 ? "s" : " ", mo, mr);
        char tname[64];
        snprintf(tname, sizeof tname, "storage.POST c%d / direct SQLite", conns);
        bench_target(tname, mo / mr, "x", ">=", 0.5, "same BSOs, schema, durability, transaction size");
    }
    return rc;
}

/* The read targets (the SQLite node's), beside the row of the request:
 * ratio to nginx; NAN (NOT MET) when the run is not valid. */
static void read_target(const char *scenario_name, double ratio, const char *reference)
{
    if (!strcmp(scenario_name, "info"))
        bench_target("storage.GET /info/collections / nginx", ratio, "x", ">=", 0.8, reference);
    else if (!strcmp(scenario_name, "get1000"))
        bench_target("storage.GET 1000 full / nginx", ratio, "x", ">=", 0.9, reference);
}

/* One run of scenario sc against this server then nginx (duration_s
 * seconds each, run number rep, 0 = a warm-up whose figures are not
 * printed); *ratio = requests/s ours / nginx's, *invalid when the run is
 * no figure (non-2xx answers, too few nonces).  -1 when a run failed. */
static int run_pair(const scenario *sc, const char *label, long size, int duration_s, int rep,
                    const char *database, unsigned nginx_port, double *ratio, int *invalid)
{
    char lua[128], url[160];
    snprintf(lua, sizeof lua, "%s/%s.lua", dir, sc->name);
    size_t count =
        (sc->count * (size_t)duration_s + (size_t)sc->users - 1) / (size_t)sc->users * (size_t)sc->users;
    if (write_script(sc, lua, (int64_t)time(NULL), count, rep) != 0 || write_static(sc->name, size) != 0) {
        fprintf(stderr, "storage: %s: setup failed\n", sc->name);
        return -1;
    }
    wrk_result ours, ceil;
    snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
    int a = run_wrk(url, lua, duration_s, sc->conns, 0, &ours);
    /* the reads: nginx gets the same requests from the same script (its
     * /1.5/ is the static file "current"), so that both servers face the
     * same client work; the POSTs: plain GETs of the file */
    int same = !sc->body;
    int b = write_static("current", size);
    if (same)
        snprintf(url, sizeof url, "http://127.0.0.1:%u", nginx_port);
    else
        snprintf(url, sizeof url, "http://127.0.0.1:%u/%s", nginx_port, sc->name);
    if (b == 0)
        b = run_wrk(url, same ? lua : NULL, duration_s, sc->conns, 1, &ceil);
    if (a || b)
        return -1;
    if (!rep)
        return 0;
    /* a figure made of errors (503s, replays of a short nonce pool) is
     * no figure: fail closed */
    int bad = ours.requests <= 0 || (double)ours.non2xx > MAX_NON2XX_SHARE * (double)ours.requests ||
              (size_t)ours.requests > count || ceil.non2xx > 0;
    *ratio = ceil.rps > 0 ? ours.rps / ceil.rps : 0;
    *invalid = bad;
    printf("  %-32s %10.0f %9.3f %9.3f | %10.0f %9.3f %9.3f | %6.3f%s\n", label, ours.rps, ours.p50_ms,
           ours.p99_ms, ceil.rps, ceil.p50_ms, ceil.p99_ms, *ratio, bad ? " INVALID" : "");
    double ours_n = ours.requests > 0 ? (double)ours.requests : 1,
           ceil_n = ceil.requests > 0 ? (double)ceil.requests : 1;
    /* served by: how wrk's connections fell on the server's worker threads
     * (and nginx's worker processes); two connections on one thread or on
     * two make two different machines of this 2-core VM (bench/PROFILE.md) */
    printf("    CPU us/request: server %.1f, nginx %.1f (ratio %.3f); wrk %.1f with ours, %.1f with "
           "nginx; served by %d of %d threads, nginx by %d of %d workers%s\n",
           1e6 * ours.server_cpu / ours_n, 1e6 * ceil.server_cpu / ceil_n,
           ours.server_cpu > 0 ? (ceil.server_cpu / ceil_n) / (ours.server_cpu / ours_n) : 0,
           1e6 * ours.client_cpu / ours_n, 1e6 * ceil.client_cpu / ceil_n, ours.busy, ours.workers, ceil.busy,
           ceil.workers, database ? " (PostgreSQL's own CPU not counted)" : "");
    if (ours.non2xx || bad)
        printf("  %s %ld of %ld requests were not 2xx (%.2f %%; over %.0f %% is INVALID); %zu nonces "
               "precomputed, one per request%s\n",
               bad ? "!! INVALID:" : "note:", ours.non2xx, ours.requests,
               ours.requests > 0 ? 100.0 * (double)ours.non2xx / (double)ours.requests : 0.0,
               100 * MAX_NON2XX_SHARE, count, (size_t)ours.requests > count ? " (too few for the run)" : "");
    return 0;
}

/* The rows of one node: wrk against the server on `database` (NULL: an
 * SQLite file in dir) and against nginx.  short_run: 1-second runs. */
static int run_node(const char *label, const char *database, int short_run, unsigned nport)
{
    int rc = 1;
    storage_server *srv = NULL;
    storage_config cfg = {.listen = "127.0.0.1:0",
                          .data_dir = dir,
                          .database = database,
                          .secret = SECRET,
                          .secret_len = sizeof SECRET - 1,
                          .prune_interval_s = -1,
                          .nonce_cache_entries = nonce_entries};
    token = key = NULL;
    if (storage_server_new(&srv, &cfg) != PICL_OK || storage_server_start(srv) != PICL_OK) {
        fprintf(stderr, "storage: cannot start the server (%s)\n", label);
        goto done;
    }
    port = storage_server_port(srv);
    if (mint_for(UID, &token, &key) != 0)
        goto done;

    /* 1000 records of 1 KiB for each get1000 user to read back */
    for (int u = 0; u < READ_USERS && (!only || !strcmp(only, "get1000")); u++)
        for (int i = 0; i < 10; i++) {
            char *b = records_body(100, i * 100, 1024);
            long ok = b ? signed_request(BIG_UID + u, "POST", "/storage/big", b) : -1;
            free(b);
            if (ok < 0) {
                fprintf(stderr, "storage: loading data failed\n");
                goto done;
            }
        }
    /* user UID (its share of the server's nonce cache is its own) */
    if (!database && (!only || !strcmp(only, "write")) && write_targets() != 0)
        goto done;
    /* The reads: READ_RUNS short runs, each paired with nginx's right
     * after it -- this VM's speed changes within seconds (ratios of one
     * bench ranged 0.55 to 1.0 with 3-second runs), and a pair taken close
     * together sees one machine.  /info/collections 1 s a run: its warm-up
     * and READ_RUNS runs stay well inside the server's default nonce cache
     * (2^19) within the skew window. */
    int d = short_run ? 1 : 3, dr = short_run ? 1 : 2;
    /* users of its own each, so that no scenario uses up the nonce-cache
     * share of another; the reads spread over READ_USERS users as real load
     * is (one user's share of the cache, 1/32 of it, would run out within a
     * second at the rates of /info/collections) */
    scenario sc[] = {
        {"info", "GET", "/info/collections", NULL, 60000, 1, 2, READ_USERS, INFO_UID,
         "GET /info/collections"},
        {"post", "POST", "/storage/posted", records_body(100, 0, 1024), 10000, d, 2, 1, 3,
         "POST 100 x 1 KiB"},
        {"qpost8", "POST", "/storage/posted8", records_body(100, 0, 1024), 10000, d, 8, 8, 4,
         "POST 100 x 1 KiB"},
        {"get1000", "GET", "/storage/big?full=1", NULL, 10000, dr, 2, READ_USERS, BIG_UID, "GET 1000 full"},
    };
    printf("  %s\n", label);
    rc = 0;
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
        if (only && strcmp(only, sc[i].name))
            continue;
        /* every user of the scenario answered 2xx before it starts (the
         * probe of the first gives the response's size) */
        long size = signed_request(sc[i].uid, sc[i].method, sc[i].path, sc[i].body);
        int probe_ok = size >= 0;
        for (int u = 1; probe_ok && u < sc[i].users; u++)
            probe_ok = signed_request(sc[i].uid + u, sc[i].method, sc[i].path, sc[i].body) >= 0;
        char label2[96];
        snprintf(label2, sizeof label2, "%s c%d %du (%ld B)", sc[i].label, sc[i].conns, sc[i].users, size);
        if (!probe_ok) {
            printf("  %-32s INVALID: the server did not answer 2xx before the run\n", label2);
            if (!database)
                read_target(sc[i].name, NAN, "INVALID: no 2xx before the run");
            rc = 1;
            continue;
        }
        /* the reads (nginx answers the same requests): a 1-second warm-up of
         * both, then READ_RUNS runs of each, alternating; the median ratio.
         * The POSTs: one run (each writes). */
        int reads = !sc[i].body, runs = reads ? READ_RUNS : 1, invalid = 0;
        double ratios[READ_RUNS];
        if (reads && run_pair(&sc[i], label2, size, 1, 0, database, nport, NULL, NULL) != 0)
            invalid = 1;
        for (int k = 0; k < runs && !invalid; k++)
            if (run_pair(&sc[i], label2, size, sc[i].duration_s, k + 1, database, nport, &ratios[k],
                         &invalid) != 0)
                invalid = 1;
        double ratio = invalid ? NAN : bench_median(ratios, (size_t)runs);
        if (reads && !invalid)
            printf("  %-32s median of %d runs: %.3f\n", label2, runs, ratio);
        if (!database)
            read_target(sc[i].name, ratio,
                        invalid ? "INVALID: not made of 2xx answers"
                        : reads ? "nginx, static file, same requests; median of 9 runs after a warm-up"
                                : "nginx, static file, same run");
        if (invalid)
            rc = 1;
    }
    for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++)
        free(sc[i].body);
done:
    storage_server_free(srv);
    free(token);
    if (key)
        picl__zfree(key, strlen(key));
    token = key = NULL;
    for (int u = 1; u <= MAX_UID; u++) {
        free(utoken[u]);
        if (ukey[u])
            picl__zfree(ukey[u], strlen(ukey[u]));
        utoken[u] = ukey[u] = NULL;
    }
    return rc;
}

/* Options: --backend sqlite (default) | postgresql (SQLite, then the same
 * on PostgreSQL: --database URL, else a throw-away cluster), --short,
 * --only SCENARIO (info, post, qpost8, get1000: that one alone, without the
 * write comparison; write: the write comparison alone; e.g. under perf),
 * --nonce-cache N (the server's Hawk nonce cache; a small one shows a run
 * refused: INVALID). */
int bench_storage(int argc, char **argv)
{
    const char *backend = "sqlite", *database = NULL;
    int short_run = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--database") && i + 1 < argc)
            database = argv[++i];
        else if (!strcmp(argv[i], "--short"))
            short_run = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i]; /* info, post, qpost8, get1000 or write */
        else if (!strcmp(argv[i], "--nonce-cache") && i + 1 < argc)
            nonce_entries = (size_t)strtoul(argv[++i], NULL, 10);
    }
    int pg = !strcmp(backend, "postgresql");
    if (!pg && strcmp(backend, "sqlite")) {
        fprintf(stderr, "storage: --backend is sqlite or postgresql, not %s\n", backend);
        return 2;
    }
    if (system("command -v wrk >/dev/null && command -v nginx >/dev/null") != 0) {
        printf("storage: needs wrk and nginx (Debian packages wrk, nginx)\n");
        return 1;
    }
    int rc = 1;
    pid_t ngx = -1;
    char pgurl[256] = "";
    snprintf(dir, sizeof dir, "/tmp/picl-bench-storage-XXXXXX");
    if (!mkdtemp(dir) || picl__nss_acquire() != PICL_OK)
        return 1;
    chmod(dir, 0755);
    if (pg && !database) {
        if (bench_pg_start(pgurl, sizeof pgurl) != 0)
            goto done;
        database = pgurl;
    }
    unsigned nport = free_port();
    ngx = start_nginx(nport);
    ngx_pid = ngx;
    if (ngx <= 0)
        goto done;
    printf("storage: wrk on loopback; ceiling = nginx serving a static file of the "
           "response's size\n");
    printf("  %-32s %10s %9s %9s | %10s %9s %9s | %6s\n", "request", "req/s", "p50 ms", "p99 ms", "nginx r/s",
           "p50 ms", "p99 ms", "ratio");
    rc = run_node("SQLite (<dir>/storage.db)", NULL, short_run, nport);
    if (pg)
        rc |= run_node("PostgreSQL", database, short_run, nport);
done:
    if (ngx > 0) {
        kill(ngx, SIGTERM);
        waitpid(ngx, NULL, 0);
    }
    picl__nss_release();
    bench_pg_stop();
    rmtree(dir);
    return rc;
}
