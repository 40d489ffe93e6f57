/* SPDX-License-Identifier: MPL-2.0 */
/* bench_util.c -- helpers shared by picl-bench sync and profile (see bench_util.h). */
#include "bench_util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nss.h>

#include "bench.h"
#include "client/engine.h"
#include "crypto/util.h"
#include "protocol/tokenlib.h"
#include "storage/storage.h"

/* The token secret shared by the bench's client and its server child. */
static const uint8_t SECRET[] = "picl-bench-sync-secret-0123456789abcdef-0123456789";
#define SECRET_LEN (sizeof SECRET - 1)

int bu_has_flag(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], flag))
            return 1;
    return 0;
}

int bu_tmpdir(char buf[64], const char *tag)
{
    snprintf(buf, 64, "/tmp/picl-bench-%s-XXXXXX", tag);
    return mkdtemp(buf) ? 0 : -1;
}

void bu_rmtree(const char *dir)
{
    if (!dir || strncmp(dir, "/tmp/picl-bench-", 16) || strchr(dir, '\'') || strstr(dir, ".."))
        return;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* ---- the server child ------------------------------------------------- */

int bu_nss_is_up(void) { return NSS_IsInitialized() ? 1 : 0; }

int bu_rerun_fresh(const char *name, int argc, char **argv)
{
    /* a re-run that finds NSS up again would recurse forever */
    if (getenv("PICL_BENCH_FRESH")) {
        fprintf(stderr, "%s: NSS is up at start even in a fresh process\n", name);
        return 1;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 1;
    exe[n] = 0;
    char *args[16];
    int k = 0;
    args[k++] = "picl-bench";
    args[k++] = (char *)name; /* argv[0] may be "all" */
    for (int i = 1; i < argc && k < 15; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        setenv("PICL_BENCH_FRESH", "1", 1);
        execv(exe, args);
        _exit(127);
    }
    int ws;
    if (waitpid(pid, &ws, 0) != pid)
        return 1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
}

int bu_server_main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: picl-bench sync --serve DIR MAX_TOTAL_RECORDS\n");
        return 2;
    }
    storage_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.listen = "127.0.0.1:0";
    cfg.data_dir = argv[0];
    cfg.secret = SECRET;
    cfg.secret_len = SECRET_LEN;
    cfg.prune_interval_s = -1;
    cfg.limits.max_total_records = strtoll(argv[1], NULL, 10);
    storage_server *srv = NULL;
    picl_status st = storage_server_new(&srv, &cfg);
    if (st == PICL_OK)
        st = storage_server_start(srv);
    if (st != PICL_OK) {
        fprintf(stderr, "bench server: %s\n", picl_strerror(st));
        storage_server_free(srv);
        return 1;
    }
    printf("%u\n", storage_server_port(srv));
    fflush(stdout);
    /* serve until the parent closes our stdin (or dies) */
    char buf[64];
    ssize_t r;
    do
        r = read(0, buf, sizeof buf);
    while (r > 0 || (r < 0 && errno == EINTR));
    storage_server_free(srv);
    return 0;
}

static void bench_anchor_reset(void);

int bu_server_start(bu_server *s, int64_t max_total_records)
{
    /* a new server holds no class map: the anchor of an earlier bench's
     * account (picl-bench all runs several in one process) is not this one's */
    bench_anchor_reset();
    memset(s, 0, sizeof *s);
    s->pid = -1;
    s->to_child = -1;
    s->max_total_records = max_total_records;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "cannot find my own executable: %s\n", strerror(errno));
        return -1;
    }
    exe[n] = 0;
    if (bu_tmpdir(s->dir, "srv") != 0) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    char maxs[32];
    snprintf(maxs, sizeof maxs, "%" PRId64, max_total_records);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execl(exe, "picl-bench", "sync", "--serve", s->dir, maxs, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s->pid = pid;
    s->to_child = in[1];
    char line[32];
    size_t got = 0;
    while (got < sizeof line - 1) {
        ssize_t r = read(out[0], line + got, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || line[got] == '\n')
            break;
        got++;
    }
    line[got] = 0;
    close(out[0]);
    long port = strtol(line, NULL, 10);
    if (got == 0 || port <= 0 || port > 65535) {
        fprintf(stderr, "the storage server child did not start\n");
        bu_server_stop(s);
        return -1;
    }
    s->port = (unsigned)port;
    snprintf(s->node, sizeof s->node, "http://127.0.0.1:%u", s->port);
    return 0;
}

void bu_server_stop(bu_server *s)
{
    if (s->to_child >= 0)
        close(s->to_child);
    s->to_child = -1;
    if (s->pid > 0) {
        int ws;
        /* the child stops on EOF; give it 10 s before killing it */
        for (int i = 0; i < 1000; i++) {
            pid_t r = waitpid(s->pid, &ws, WNOHANG);
            if (r == s->pid || r < 0)
                goto reaped;
            usleep(10000);
        }
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &ws, 0);
    }
reaped:
    s->pid = -1;
    if (s->dir[0])
        bu_rmtree(s->dir);
    s->dir[0] = 0;
}

picl_status bu_mint(const bu_server *s, int64_t uid, char **token, char **key)
{
    picl_tokenlib_payload p;
    memset(&p, 0, sizeof p);
    p.uid = uid;
    snprintf(p.node, sizeof p.node, "%s", s->node);
    p.expires = (int64_t)time(NULL) + 6 * 3600;
    snprintf(p.fxa_uid, sizeof p.fxa_uid, "bench%" PRId64, uid);
    snprintf(p.fxa_kid, sizeof p.fxa_kid, "kid%" PRId64, uid);
    snprintf(p.hashed_fxa_uid, sizeof p.hashed_fxa_uid, "h%" PRId64, uid);
    snprintf(p.hashed_device_id, sizeof p.hashed_device_id, "bench");
    return picl__tokenlib_mint(token, key, SECRET, SECRET_LEN, &p);
}

picl_status bu_client(const bu_server *s, int64_t uid, picl_stc **out)
{
    char *token = NULL, *key = NULL;
    *out = NULL;
    picl_status st = bu_mint(s, uid, &token, &key);
    if (st == PICL_OK) {
        char ep[256];
        snprintf(ep, sizeof ep, "%s/1.5/%" PRId64, s->node, uid);
        st = picl__stc_new(out, ep, token, key);
    }
    free(token);
    if (key)
        picl__zfree(key, strlen(key));
    return st;
}

picl_status bu_state(char dir[64], picl_state **out, const uint8_t ka[32], const uint8_t kb[32])
{
    *out = NULL;
    if (bu_tmpdir(dir, "state") != 0)
        return PICL_ERROR_IO;
    picl_status st = picl__state_load(out, dir, 1);
    if (st != PICL_OK)
        return st;
    memcpy((*out)->ka, ka, 32);
    memcpy((*out)->kb, kb, 32);
    (*out)->has_ka = (*out)->has_kb = 1;
    return PICL_OK;
}

/* ---- memory ------------------------------------------------------------- */

long bu_mem_kb(pid_t pid, const char *field)
{
    char path[64];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    else
        snprintf(path, sizeof path, "/proc/self/status");
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    size_t fl = strlen(field);
    long v = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, field, fl) && line[fl] == ':') {
            v = strtol(line + fl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

int bu_peak_reset(pid_t pid)
{
    char path[64];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%ld/clear_refs", (long)pid);
    else
        snprintf(path, sizeof path, "/proc/self/clear_refs");
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, "5", 1);
    close(fd);
    return w == 1 ? 0 : -1;
}

/* user + system CPU seconds of pid (0 = this process, all threads). */
static double cpu_secs(pid_t pid)
{
    if (pid <= 0) {
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) != 0)
            return -1;
        return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    }
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* fields after "(comm)": state is field 3, utime 14, stime 15 */
    char *q = strrchr(buf, ')');
    if (!q)
        return -1;
    q++;
    unsigned long long ut = 0, st = 0;
    for (int field = 3; field <= 15 && q && *q; field++) {
        while (*q == ' ')
            q++;
        if (field == 14)
            ut = strtoull(q, NULL, 10);
        if (field == 15)
            st = strtoull(q, NULL, 10);
        q = strchr(q, ' ');
    }
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? (double)(ut + st) / (double)hz : -1;
}

static uint64_t reqs(const picl_stc *stc) { return stc ? picl__stc_request_count(stc) : 0; }

void bu_phase_begin(bu_phase *p, const char *name, const bu_server *s, const picl_stc *stc)
{
    memset(p, 0, sizeof p[0]);
    p->name = name;
    malloc_trim(0); /* freed memory back to the kernel, so the phase's growth shows */
    int ok = bu_peak_reset(0) == 0;
    p->rss_before_kb = bu_mem_kb(0, "VmRSS");
    if (!ok)
        p->rss_before_kb = -1; /* peaks cannot be per phase */
    p->srv_rss_before_kb = -1;
    if (s && s->pid > 0 && bu_peak_reset(s->pid) == 0)
        p->srv_rss_before_kb = bu_mem_kb(s->pid, "VmRSS");
    p->requests = reqs(stc);
    p->cpu_s = cpu_secs(0);
    p->srv_cpu_s = s && s->pid > 0 ? cpu_secs(s->pid) : -1;
    p->secs = bench_now();
}

void bu_phase_end(bu_phase *p, const bu_server *s, const picl_stc *stc)
{
    p->secs = bench_now() - p->secs;
    p->requests = reqs(stc) - p->requests;
    p->cpu_s = p->cpu_s >= 0 ? cpu_secs(0) - p->cpu_s : -1;
    p->srv_cpu_s = p->srv_cpu_s >= 0 ? cpu_secs(s->pid) - p->srv_cpu_s : -1;
    p->peak_kb = p->rss_before_kb >= 0 ? bu_mem_kb(0, "VmHWM") : -1;
    p->srv_peak_kb = p->srv_rss_before_kb >= 0 ? bu_mem_kb(s->pid, "VmHWM") : -1;
}

static void mib(char *out, size_t cap, long kb)
{
    if (kb < 0)
        snprintf(out, cap, "n/a");
    else
        snprintf(out, cap, "%.1f", (double)kb / 1024.0);
}

void bu_phase_print(const bu_phase *p, int print_header)
{
    if (print_header)
        printf("  %-28s %7s %8s %9s %8s %8s %8s %10s %8s %10s %8s\n", "phase", "records", "wall s",
               "records/s", "requests", "cli CPU", "srv CPU", "client MiB", "(+delta)", "server MiB",
               "(+delta)");
    char cp[16], cd[16], sp[16], sd[16];
    mib(cp, sizeof cp, p->peak_kb);
    mib(cd, sizeof cd, p->peak_kb >= 0 ? p->peak_kb - p->rss_before_kb : -1);
    mib(sp, sizeof sp, p->srv_peak_kb);
    mib(sd, sizeof sd, p->srv_peak_kb >= 0 ? p->srv_peak_kb - p->srv_rss_before_kb : -1);
    printf("  %-28s %7zu %8.3f %9.0f %8" PRIu64 " %8.3f %8.3f %10s %8s %10s %8s\n", p->name, p->records,
           p->secs, p->secs > 0 ? (double)p->records / p->secs : 0.0, p->requests, p->cpu_s, p->srv_cpu_s, cp,
           cd, sp, sd);
    fflush(stdout);
}

/* ---- one engine run ----------------------------------------------------- */

static size_t sum_field(json_t *summary, const char *field)
{
    const char *k;
    json_t *v;
    size_t total = 0;
    json_object_foreach (summary, k, v) {
        json_t *x = json_object_get(v, field);
        if (json_is_integer(x) && json_integer_value(x) > 0)
            total += (size_t)json_integer_value(x);
    }
    return total;
}

/* The class map anchor of the keyserver (records.md 4), kept in this
 * process: the benches run the storage server only.  One account, one key
 * epoch; the keyserver's rule: a higher version, or the same with the same
 * hmac. */
static picl_anchor bench_anchor = {0, "", 0, 1};

static void bench_anchor_reset(void)
{
    static const picl_anchor none = {0, "", 0, 1};
    bench_anchor = none;
}

static picl_status bench_anchor_get(void *ctx, picl_anchor *out)
{
    (void)ctx;
    *out = bench_anchor;
    return PICL_OK;
}

static picl_status bench_anchor_post(void *ctx, uint64_t version, const char *hmac)
{
    (void)ctx;
    if (version < bench_anchor.version ||
        (version == bench_anchor.version && strcmp(hmac, bench_anchor.hmac)))
        return PICL_ERROR_CONFLICT;
    bench_anchor.version = version;
    snprintf(bench_anchor.hmac, sizeof bench_anchor.hmac, "%s", hmac);
    bench_anchor.epoch = bench_anchor.current_epoch;
    return PICL_OK;
}

picl_status bu_sync(picl_stc *stc, picl_state *st, picl_store *const *stores, size_t n, size_t *moved,
                    size_t *failed, char *err, size_t errlen)
{
    picl_engine e;
    picl__engine_init(&e, stc, st);
    e.anchor_get = bench_anchor_get;
    e.anchor_post = bench_anchor_post;
    if (!st->key_epoch)
        st->key_epoch = 1;
    json_t *summary = json_object();
    picl_status rc = summary ? picl__engine_sync(&e, stores, n, summary) : PICL_ERROR_NO_MEMORY;
    if (err && errlen)
        snprintf(err, errlen, "%s", e.error);
    if (moved)
        *moved = sum_field(summary, "uploaded") + sum_field(summary, "applied");
    if (failed)
        *failed = sum_field(summary, "failed");
    picl__engine_done(&e);
    json_decref(summary);
    return rc;
}

/* ---- generated records -------------------------------------------------- */

#define BU_MS_BASE 1700000000000LL    /* 2023-11, milliseconds */
#define BU_US_BASE 1790000000000000LL /* 2026-09, microseconds */

static json_t *folder(const char *id, const char *parent, const char *title, json_t *children)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:I}", "id", id, "type", "folder", "parentid", parent,
                     "parentName", parent, "title", title, "children", children, "dateAdded",
                     (json_int_t)BU_MS_BASE);
}

json_t *bu_gen_bookmarks(size_t n, int with_menu)
{
    size_t nf = n / 100 ? n / 100 : 1;
    size_t head = nf + (with_menu ? 1 : 0);
    if (n <= head)
        return NULL;
    size_t nb = n - head, per = (nb + nf - 1) / nf;
    json_t *out = json_array(), *menu_children = json_array();
    if (!out || !menu_children)
        goto fail;
    for (size_t f = 0; f < nf; f++) {
        char fid[32], title[32];
        snprintf(fid, sizeof fid, "fld%09zu", f);
        snprintf(title, sizeof title, "Folder %zu", f);
        json_t *children = json_array();
        for (size_t j = f * per; j < nb && j < (f + 1) * per; j++) {
            char id[32];
            snprintf(id, sizeof id, "bmk%09zu", j);
            json_array_append_new(children, json_string(id));
        }
        if (json_array_append_new(out, folder(fid, "menu", title, children)) != 0)
            goto fail;
        json_array_append_new(menu_children, json_string(fid));
    }
    for (size_t j = 0; j < nb; j++) {
        char id[32], fid[32], ftitle[32], title[64], uri[96];
        snprintf(id, sizeof id, "bmk%09zu", j);
        snprintf(fid, sizeof fid, "fld%09zu", j / per);
        snprintf(ftitle, sizeof ftitle, "Folder %zu", j / per);
        snprintf(title, sizeof title, "Bookmark %zu: an example page about topic %zu", j, j % 97);
        snprintf(uri, sizeof uri, "https://bm%zu.example.org/articles/%zu?ref=bench", j % 1000, j);
        json_t *tags = json_array();
        if (j % 20 == 0) {
            char tag[32];
            snprintf(tag, sizeof tag, "tag%zu", j % 10);
            json_array_append_new(tags, json_string(tag));
        }
        json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:I}", "id", id, "type", "bookmark",
                              "parentid", fid, "parentName", ftitle, "title", title, "bmkUri", uri, "tags",
                              tags, "dateAdded", (json_int_t)(BU_MS_BASE + (json_int_t)j * 60000));
        if (r && j % 200 == 0) {
            char kw[32];
            snprintf(kw, sizeof kw, "kw%zu", j);
            json_object_set_new(r, "keyword", json_string(kw));
        }
        if (!r || json_array_append_new(out, r) != 0)
            goto fail;
    }
    if (with_menu) {
        json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:I}", "id", "menu", "type", "folder",
                              "parentid", "places", "parentName", "", "title", "menu", "children",
                              menu_children, "dateAdded", (json_int_t)BU_MS_BASE);
        if (!m || json_array_insert_new(out, 0, m) != 0)
            goto fail;
    }
    json_decref(menu_children);
    return out;
fail:
    json_decref(menu_children);
    json_decref(out);
    return NULL;
}

json_t *bu_gen_history(size_t max_pages, size_t max_visits, size_t *visits)
{
    static const int types[3] = {1, 2, 1};
    json_t *out = json_array();
    size_t total = 0;
    for (size_t i = 0; out && i < max_pages && total < max_visits; i++) {
        size_t nv = 1 + i % 7;
        if (nv > max_visits - total)
            nv = max_visits - total;
        char id[32], uri[96], title[64];
        snprintf(id, sizeof id, "his%09zu", i);
        snprintf(uri, sizeof uri, "https://site%zu.example.com/page/%zu.html", i % 500, i);
        snprintf(title, sizeof title, "Page %zu of site %zu", i, i % 500);
        json_t *vs = json_array();
        for (size_t j = 0; vs && j < nv; j++) {
            json_int_t date = BU_US_BASE - (json_int_t)i * 600000000LL - (json_int_t)j * 86400000000LL;
            json_array_append_new(vs, json_pack("{s:I, s:i}", "date", date, "type", types[(i + j) % 3]));
        }
        json_t *r =
            vs ? json_pack("{s:s, s:s, s:s, s:o}", "id", id, "histUri", uri, "title", title, "visits", vs)
               : NULL;
        if (!r || json_array_append_new(out, r) != 0) {
            json_decref(out);
            return NULL;
        }
        total += nv;
    }
    if (visits)
        *visits = total;
    return out;
}

/* ---- the timing store wrapper ------------------------------------------- */

typedef struct timed {
    picl_store base;
    picl_store *inner;
    double secs;
} timed;

static const picl_store_ops timed_ops;

/* Ends one forwarded call: time added, the inner message carried over. */
static picl_status timed_end(timed *t, double t0, picl_status st)
{
    t->secs += bench_now() - t0;
    snprintf(t->base.error, sizeof t->base.error, "%s", t->inner->error);
    return st;
}

static picl_status timed_changes(picl_store *s, json_t **r)
{
    timed *t = (timed *)s;
    double t0 = bench_now();
    return timed_end(t, t0, picl__store_changes(t->inner, r));
}

static picl_status timed_all(picl_store *s, json_t **r)
{
    timed *t = (timed *)s;
    double t0 = bench_now();
    return timed_end(t, t0, picl__store_all(t->inner, r));
}

static picl_status timed_get(picl_store *s, const char *id, json_t **r)
{
    timed *t = (timed *)s;
    double t0 = bench_now();
    return timed_end(t, t0, picl__store_get(t->inner, id, r));
}

static picl_status timed_apply(picl_store *s, const json_t *r)
{
    timed *t = (timed *)s;
    double t0 = bench_now();
    return timed_end(t, t0, picl__store_apply(t->inner, r));
}

static picl_status timed_mark_synced(picl_store *s, const json_t *r)
{
    timed *t = (timed *)s;
    double t0 = bench_now();
    return timed_end(t, t0, picl__store_mark_synced(t->inner, r));
}

static picl_status timed_reset(picl_store *s)
{
    timed *t = (timed *)s;
    double t0 = bench_now();
    return timed_end(t, t0, picl__store_reset(t->inner));
}

static picl_status timed_wipe(picl_store *s)
{
    timed *t = (timed *)s;
    double t0 = bench_now();
    return timed_end(t, t0, picl__store_wipe(t->inner));
}

static void timed_close(picl_store *s)
{
    timed *t = (timed *)s;
    picl__store_close(t->inner);
    free(t);
}

static const picl_store_ops timed_ops = {
    .changes = timed_changes,
    .all = timed_all,
    .get = timed_get,
    .apply = timed_apply,
    .mark_synced = timed_mark_synced,
    .reset = timed_reset,
    .wipe = timed_wipe,
    .close = timed_close,
};

picl_status bu_timed_store(picl_store *inner, picl_store **out)
{
    *out = NULL;
    timed *t = calloc(1, sizeof *t);
    if (!t)
        return PICL_ERROR_NO_MEMORY;
    t->base.ops = &timed_ops;
    snprintf(t->base.collection, sizeof t->base.collection, "%s", inner->collection);
    t->inner = inner;
    *out = &t->base;
    return PICL_OK;
}

double bu_timed_secs(const picl_store *s) { return s && s->ops == &timed_ops ? ((const timed *)s)->secs : 0; }

void bu_timed_reset(picl_store *s)
{
    if (s && s->ops == &timed_ops)
        ((timed *)s)->secs = 0;
}
