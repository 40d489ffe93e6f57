/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_pg.c -- the storage server on PostgreSQL: two picl-storage
 * processes on one database (a request captured at one is refused at the
 * other; timestamps strictly increase under writers at both), the schema
 * created in one transaction, and clear errors at start for an unreachable
 * server or a wrong URL (these run on every backend: they need no cluster). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crypto/nss.h"
#include "protocol/hawk.h"
#include "storage/storage.h"
#include "testutil.h"
#include "testutil_http.h"
#include "testutil_pg.h"
#include "testutil_srv.h"

/* tu_srv's secret file */
static const uint8_t SECRET[] = "0123456789abcdef0123456789abcdef0123456789abcdef";
#define SECRET_LEN (sizeof SECRET - 1)
/* both processes behind one balancer: the node tokens name, the Host sent */
#define NODE "http://lb.test:8080"
#define UID 42

/* ---- errors at start (every backend) ------------------------------------ */

/* Runs picl-storage with args; its exit code (-1: still running after
 * limit_s seconds, then killed) and its stderr into err. */
static int run_storage(const char *const *args, int limit_s, char *err, size_t cap)
{
    const char *build = getenv("PICL_BUILD");
    ck_assert_ptr_nonnull(build);
    char bin[512], log[] = "/tmp/picl-pg-err-XXXXXX";
    snprintf(bin, sizeof bin, "%s/picl-storage", build);
    int fd = mkstemp(log);
    ck_assert_int_ge(fd, 0);
    const char *argv[16] = {"picl-storage"};
    size_t n = 1;
    for (size_t i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd, 2);
        dup2(fd, 1);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(fd);
    int st = 0, rc = -1;
    for (int i = 0; i < limit_s * 20; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : -2;
            break;
        }
        usleep(50000);
    }
    if (rc == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    FILE *f = fopen(log, "r");
    size_t got = f ? fread(err, 1, cap - 1, f) : 0;
    err[got] = 0;
    if (f)
        fclose(f);
    unlink(log);
    return rc;
}

/* A closed loopback port (tcpmux, never served on a test machine):
 * connection refused at once. */
#define CLOSED_PORT 1u

START_TEST(pg_unreachable_or_wrong_url)
{
    char err[2048], url[160], secret[] = "/tmp/picl-pg-secret-XXXXXX";
    int fd = mkstemp(secret);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, SECRET, SECRET_LEN), (ssize_t)SECRET_LEN);
    close(fd);

    /* nothing listens there: exit 1 within seconds, saying so, and never
     * printing the URL's password */
    snprintf(url, sizeof url, "postgresql://picl:hunter2secret@127.0.0.1:%u/picl", CLOSED_PORT);
    const char *a1[] = {"--listen", "127.0.0.1:0", "--secret-file", secret, "--database", url, NULL};
    time_t t0 = time(NULL);
    ck_assert_int_eq(run_storage(a1, 15, err, sizeof err), 1);
    ck_assert_int_le(time(NULL) - t0, 12);
    ck_assert_msg(strstr(err, "cannot start: PostgreSQL database: cannot connect to PostgreSQL"), "%s", err);
    ck_assert_ptr_null(strstr(err, "hunter2secret"));

    /* a URL libpq cannot read: exit 1 with libpq's reason */
    const char *a2[] = {"--listen", "127.0.0.1:0", "--secret-file",
                        secret,     "--database",  "postgresql://127.0.0.1:1/picl?no_such_option=1",
                        NULL};
    ck_assert_int_eq(run_storage(a2, 15, err, sizeof err), 1);
    ck_assert_msg(strstr(err, "cannot connect to PostgreSQL: invalid URI query parameter"), "%s", err);

    /* not a PostgreSQL URL at all, a pool out of range: usage errors (2) */
    const char *a3[] = {
        "--listen", "127.0.0.1:0", "--secret-file", secret, "--database", "mysql://127.0.0.1/picl", NULL};
    ck_assert_int_eq(run_storage(a3, 5, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--database takes a postgresql:// URL"));
    const char *a4[] = {"--listen", "127.0.0.1:0", "--secret-file", secret, "--database", url, "--db-pool",
                        "0",        NULL};
    ck_assert_int_eq(run_storage(a4, 5, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--db-pool takes a number from 1 to 256"));
    /* neither --data nor --database: usage */
    const char *a5[] = {"--listen", "127.0.0.1:0", "--secret-file", secret, NULL};
    ck_assert_int_eq(run_storage(a5, 5, err, sizeof err), 2);
    unlink(secret);
}
END_TEST

/* ---- two processes on one database (PostgreSQL) ------------------------- */

static tu_srv a, b;
static char url[256], name[64];
static char base_a[64], base_b[64];

static void twins_setup(void)
{
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    name[0] = 0;
    if (!tupg_enabled())
        return;
    tupg_create_db(url, sizeof url, name, sizeof name);
    tu_srv_setup(&a, "picl-pg-a");
    tu_srv_setup(&b, "picl-pg-b");
    const char *extra[] = {"--database", url, "--node", NODE, NULL};
    tu_srv_start_argv(&a, 1, 1024, extra);
    tu_srv_start_argv(&b, 1, 1024, extra);
    snprintf(base_a, sizeof base_a, "http://127.0.0.1:%u", a.port);
    snprintf(base_b, sizeof base_b, "http://127.0.0.1:%u", b.port);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
}

static void twins_teardown(void)
{
    if (!name[0])
        return;
    tu_srv_teardown(&a);
    tu_srv_teardown(&b);
    picl__nss_release();
    tupg_drop_db(name);
}

/* The Authorization of one request signed for the balancer's address. */
static char *sign(const tu_cred *c, const char *method, const char *target, const char *nonce)
{
    picl_hawk_request hr = {.method = method, .resource = target, .host = "lb.test", .port = 8080};
    char *hdr = NULL;
    ck_assert_int_eq(picl__hawk_client_header(&hdr, c->token, c->key, strlen(c->key), &hr,
                                              (int64_t)time(NULL), nonce, NULL),
                     PICL_OK);
    return hdr;
}

/* Sends a request with exactly these Authorization bytes and the
 * balancer's Host to one process; the status. */
static long send_as(const char *base, const char *method, const char *target, const char *authz,
                    const char *body, tu_resp *r)
{
    char h[2048];
    snprintf(h, sizeof h, "Authorization: %s", authz);
    const char *hdrs[] = {h, "Host: lb.test:8080", NULL};
    tu_req o = {.headers = hdrs,
                .body = body,
                .len = body ? strlen(body) : 0,
                .ctype = body ? "application/json" : NULL};
    ck_assert_int_eq(tu_http(r, method, base, target, &o), 0);
    return r->status;
}

START_TEST(pg_replay_refused_at_sibling_process)
{
    if (!tupg_enabled()) /* one process per SQLite file: nothing to share */
        return;
    tu_cred c;
    tu_mint(&c, SECRET, SECRET_LEN, NODE, UID, 3600);
    tu_resp r;
    char *put = sign(&c, "PUT", "/1.5/42/storage/tabs/t1", "nonce-put-1");
    ck_assert_int_eq(send_as(base_a, "PUT", "/1.5/42/storage/tabs/t1", put, "{\"payload\":\"from-a\"}", &r),
                     200);
    tu_resp_free(&r);
    /* the same PUT replayed at B: refused, and nothing written (a replayed
     * write would bump the timestamps) */
    ck_assert_int_eq(send_as(base_b, "PUT", "/1.5/42/storage/tabs/t1", put, "{\"payload\":\"from-a\"}", &r),
                     401);
    ck_assert_str_eq(r.body, "0");
    tu_resp_free(&r);
    free(put);
    /* a captured GET: served once at A, refused at B and at A again */
    char *get = sign(&c, "GET", "/1.5/42/info/collections", "nonce-get-1");
    ck_assert_int_eq(send_as(base_a, "GET", "/1.5/42/info/collections", get, NULL, &r), 200);
    char *first = strdup(r.body);
    tu_resp_free(&r);
    ck_assert_int_eq(send_as(base_b, "GET", "/1.5/42/info/collections", get, NULL, &r), 401);
    tu_resp_free(&r);
    ck_assert_int_eq(send_as(base_a, "GET", "/1.5/42/info/collections", get, NULL, &r), 401);
    tu_resp_free(&r);
    free(get);
    /* a fresh request at B sees what A wrote, unchanged by the replays */
    get = sign(&c, "GET", "/1.5/42/info/collections", "nonce-get-2");
    ck_assert_int_eq(send_as(base_b, "GET", "/1.5/42/info/collections", get, NULL, &r), 200);
    ck_assert_str_eq(r.body, first);
    tu_resp_free(&r);
    free(get);
    get = sign(&c, "GET", "/1.5/42/storage/tabs/t1", "nonce-get-3");
    ck_assert_int_eq(send_as(base_b, "GET", "/1.5/42/storage/tabs/t1", get, NULL, &r), 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"payload\":\"from-a\""));
    tu_resp_free(&r);
    free(get);
    free(first);
    tu_cred_free(&c);
}
END_TEST

#define WRITERS 4
#define PUTS 12

typedef struct writer {
    const char *base;
    int index;
    const tu_cred *cred;
    int64_t ts[PUTS];
    int failures;
} writer;

/* X-Last-Modified of a 200 as centis. */
static int64_t last_modified(const tu_resp *r)
{
    char *v = tu_resp_header(r, "X-Last-Modified");
    if (!v)
        return -1;
    int64_t c = strtoll(v, NULL, 10) * 100 + strtoll(strchr(v, '.') ? strchr(v, '.') + 1 : "0", NULL, 10);
    free(v);
    return c;
}

static void *write_many(void *arg)
{
    writer *w = arg;
    for (int i = 0; i < PUTS; i++) {
        char target[96], nonce[32], body[64];
        snprintf(target, sizeof target, "/1.5/42/storage/hist/w%d-%d", w->index, i);
        snprintf(body, sizeof body, "{\"payload\":\"w%d-%d\"}", w->index, i);
        w->ts[i] = -1;
        for (int attempt = 0; attempt < 20 && w->ts[i] < 0; attempt++) {
            snprintf(nonce, sizeof nonce, "w%d-%d-%d", w->index, i, attempt);
            char *authz = sign(w->cred, "PUT", target, nonce);
            tu_resp r;
            char h[2048];
            snprintf(h, sizeof h, "Authorization: %s", authz);
            const char *hdrs[] = {h, "Host: lb.test:8080", NULL};
            tu_req o = {.headers = hdrs, .body = body, .len = strlen(body), .ctype = "application/json"};
            if (tu_http(&r, "PUT", w->base, target, &o) == 0 && r.status == 200)
                w->ts[i] = last_modified(&r);
            else if (r.status != 409)
                w->failures++;
            tu_resp_free(&r);
            free(authz);
        }
    }
    return NULL;
}

static int cmp64(const void *x, const void *y)
{
    int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;
    return p < q ? -1 : p > q;
}

/* Writers at both processes at once: every write gets its own timestamp,
 * and the listing holds each at the time its PUT answered. */
START_TEST(pg_timestamps_strictly_increase_across_processes)
{
    if (!tupg_enabled())
        return;
    tu_cred c;
    tu_mint(&c, SECRET, SECRET_LEN, NODE, UID, 3600);
    tu_resp r;
    char *authz = sign(&c, "GET", "/1.5/42/info/collections", "warm-up");
    ck_assert_int_eq(send_as(base_a, "GET", "/1.5/42/info/collections", authz, NULL, &r), 200);
    tu_resp_free(&r);
    free(authz);
    writer w[WRITERS];
    pthread_t th[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (writer){.base = i % 2 ? base_b : base_a, .index = i, .cred = &c};
        ck_assert_int_eq(pthread_create(&th[i], NULL, write_many, &w[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(th[i], NULL);
    int64_t all[WRITERS * PUTS];
    for (int i = 0; i < WRITERS; i++) {
        ck_assert_int_eq(w[i].failures, 0);
        for (int k = 0; k < PUTS; k++) {
            ck_assert_int_gt(w[i].ts[k], 0);
            all[i * PUTS + k] = w[i].ts[k];
        }
        for (int k = 1; k < PUTS; k++) /* one writer's own writes, in order */
            ck_assert_int_gt(w[i].ts[k], w[i].ts[k - 1]);
    }
    qsort(all, WRITERS * PUTS, sizeof all[0], cmp64);
    for (int i = 1; i < WRITERS * PUTS; i++)
        ck_assert_msg(all[i] > all[i - 1], "two writes got the timestamp %lld", (long long)all[i]);
    /* the collection's last-modified is the newest write */
    authz = sign(&c, "GET", "/1.5/42/info/collections", "check-1");
    ck_assert_int_eq(send_as(base_b, "GET", "/1.5/42/info/collections", authz, NULL, &r), 200);
    json_t *j = json_loads(r.body, 0, NULL);
    ck_assert_ptr_nonnull(j);
    double hist = json_real_value(json_object_get(j, "hist"));
    ck_assert_int_eq((int64_t)(hist * 100 + 0.5), all[WRITERS * PUTS - 1]);
    json_decref(j);
    tu_resp_free(&r);
    free(authz);
    tu_cred_free(&c);
}
END_TEST

/* ---- the schema (PostgreSQL) -------------------------------------------- */

/* A schema that cannot be created leaves nothing behind; a database of a
 * newer server is refused and left as it is. */
START_TEST(pg_schema_never_half_migrated)
{
    if (!tupg_enabled())
        return;
    char u[256], n[64], out[64], why[600], q[256];
    tupg_create_db(u, sizeof u, n, sizeof n);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    /* a table in the way of the fifth CREATE: the four before are undone */
    ck_assert_int_eq(tupg_exec(u, "CREATE TABLE batches (something TEXT)"), 0);
    storage_config cfg = {.database = u,
                          .secret = SECRET,
                          .secret_len = SECRET_LEN,
                          .prune_interval_s = -1,
                          .error = why,
                          .error_cap = sizeof why};
    storage_server *s = NULL;
    ck_assert_int_eq(storage_server_new(&s, &cfg), PICL_ERROR_DATABASE);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(why, "PostgreSQL database: cannot create the schema"), "%s", why);
    snprintf(q, sizeof q,
             "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM"
             " information_schema.tables WHERE table_schema = '%s'",
             n);
    ck_assert_int_eq(tupg_query1(u, q, out, sizeof out), 0);
    ck_assert_str_eq(out, "batches");
    /* out of the way: it starts, at version 3 */
    ck_assert_int_eq(tupg_exec(u, "DROP TABLE batches"), 0);
    ck_assert_int_eq(storage_server_new(&s, &cfg), PICL_OK);
    storage_server_free(s);
    ck_assert_int_eq(
        tupg_query1(u, "SELECT value FROM storage_meta WHERE key = 'schema_version'", out, sizeof out), 0);
    ck_assert_str_eq(out, "3");
    /* written by a newer server: refused, and left at its version */
    ck_assert_int_eq(tupg_exec(u, "UPDATE storage_meta SET value = 99"), 0);
    s = NULL;
    ck_assert_int_eq(storage_server_new(&s, &cfg), PICL_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(why, "newer storage server"), "%s", why);
    ck_assert_int_eq(
        tupg_query1(u, "SELECT value FROM storage_meta WHERE key = 'schema_version'", out, sizeof out), 0);
    ck_assert_str_eq(out, "99");
    picl__nss_release();
    tupg_drop_db(n);
}
END_TEST

/* A record the database refuses in the middle of a POST (a trigger here):
 * the POST fails as a whole (503, nothing of it written, the timestamps
 * unchanged), and the one pooled connection it ran on serves the next
 * request (the pipeline of its upserts was read to the end). */
START_TEST(pg_failed_upsert_in_a_pipeline)
{
    if (!tupg_enabled())
        return;
    char u[256], n[64], base[64], why[600];
    tupg_create_db(u, sizeof u, n, sizeof n);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    storage_config cfg = {.listen = "127.0.0.1:0",
                          .database = u,
                          .db_pool = 1,
                          .secret = SECRET,
                          .secret_len = SECRET_LEN,
                          .prune_interval_s = -1,
                          .error = why,
                          .error_cap = sizeof why};
    storage_server *s = NULL;
    ck_assert_int_eq(storage_server_new(&s, &cfg), PICL_OK);
    ck_assert_int_eq(storage_server_start(s), PICL_OK);
    ck_assert_int_eq(tupg_exec(u, "CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql"
                                  " AS $f$ BEGIN IF NEW.id = 'bad' THEN RAISE EXCEPTION 'no';"
                                  " END IF; RETURN NEW; END $f$"),
                     0);
    ck_assert_int_eq(tupg_exec(u, "CREATE TRIGGER refuse_bad BEFORE INSERT ON bsos FOR EACH ROW"
                                  " EXECUTE FUNCTION refuse_bad()"),
                     0);
    snprintf(base, sizeof base, "http://127.0.0.1:%u", storage_server_port(s));
    tu_cred c;
    tu_mint(&c, SECRET, SECRET_LEN, storage_server_node(s), UID, 3600);
    tu_resp r;
    const char *one = "[{\"id\":\"a\",\"payload\":\"1\"}]";
    tu_req o = {.ctype = "application/json", .body = one, .len = strlen(one), .cred = &c};
    ck_assert_int_eq(tu_http(&r, "POST", base, "/1.5/42/storage/c", &o), 0);
    ck_assert_int_eq(r.status, 200);
    char *before = tu_resp_header(&r, "X-Last-Modified");
    tu_resp_free(&r);
    const char *three = "[{\"id\":\"b\",\"payload\":\"2\"},{\"id\":\"bad\",\"payload\":\"3\"},"
                        "{\"id\":\"d\",\"payload\":\"4\"}]";
    o.body = three;
    o.len = strlen(three);
    ck_assert_int_eq(tu_http(&r, "POST", base, "/1.5/42/storage/c", &o), 0);
    ck_assert_int_eq(r.status, 503);
    tu_resp_free(&r);
    /* the same connection (a pool of one): nothing of the failed POST */
    tu_req g = {.cred = &c};
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/42/storage/c", &g), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "[\"a\"]");
    char *lm = tu_resp_header(&r, "X-Last-Modified");
    ck_assert_str_eq(lm, before);
    free(lm);
    tu_resp_free(&r);
    const char *next = "[{\"id\":\"e\",\"payload\":\"5\"}]";
    o.body = next;
    o.len = strlen(next);
    ck_assert_int_eq(tu_http(&r, "POST", base, "/1.5/42/storage/c", &o), 0);
    ck_assert_int_eq(r.status, 200);
    tu_resp_free(&r);
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/42/storage/c", &g), 0);
    ck_assert_str_eq(r.body, "[\"a\",\"e\"]");
    tu_resp_free(&r);
    free(before);
    tu_cred_free(&c);
    storage_server_free(s);
    picl__nss_release();
    tupg_drop_db(n);
}
END_TEST

/* Listings are read row by row (single-row mode): a page that stops
 * before the rows the database sent (limit + 1 are asked for) reads the
 * rest of the answer, so the one pooled connection serves the next
 * requests; the pages of a 1000-record listing of 1 KiB payloads come
 * back whole and in order. */
START_TEST(pg_listing_rows_read_one_by_one)
{
    if (!tupg_enabled())
        return;
    char u[256], n[64], base[64], why[600];
    tupg_create_db(u, sizeof u, n, sizeof n);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    storage_config cfg = {.listen = "127.0.0.1:0",
                          .database = u,
                          .db_pool = 1,
                          .secret = SECRET,
                          .secret_len = SECRET_LEN,
                          .prune_interval_s = -1,
                          .error = why,
                          .error_cap = sizeof why};
    storage_server *s = NULL;
    ck_assert_int_eq(storage_server_new(&s, &cfg), PICL_OK);
    ck_assert_int_eq(storage_server_start(s), PICL_OK);
    snprintf(base, sizeof base, "http://127.0.0.1:%u", storage_server_port(s));
    tu_cred c;
    tu_mint(&c, SECRET, SECRET_LEN, storage_server_node(s), UID, 3600);
    tu_resp r;
    /* 10 POSTs of 100 records of 1 KiB: ids r0000..r0999 */
    char pay[1025];
    memset(pay, 'p', 1024);
    pay[1024] = 0;
    for (int k = 0; k < 10; k++) {
        json_t *arr = json_array();
        for (int i = 0; i < 100; i++) {
            char id[16];
            snprintf(id, sizeof id, "r%04d", k * 100 + i);
            json_array_append_new(arr, json_pack("{s:s, s:s}", "id", id, "payload", pay));
        }
        char *body = json_dumps(arr, JSON_COMPACT);
        json_decref(arr);
        tu_req o = {.ctype = "application/json", .body = body, .len = strlen(body), .cred = &c};
        ck_assert_int_eq(tu_http(&r, "POST", base, "/1.5/42/storage/big", &o), 0);
        ck_assert_int_eq(r.status, 200);
        tu_resp_free(&r);
        free(body);
    }
    tu_req g = {.cred = &c};
    /* a page of 2: three rows came, the third is read and dropped */
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/42/storage/big?limit=2", &g), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "[\"r0000\",\"r0001\"]");
    char *next = tu_resp_header(&r, "X-Weave-Next-Offset");
    ck_assert_ptr_nonnull(next);
    tu_resp_free(&r);
    /* the same connection answers the next statements at once */
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/42/info/collections", &g), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"big\":"));
    tu_resp_free(&r);
    char path[256];
    snprintf(path, sizeof path, "/1.5/42/storage/big?limit=2&offset=%s", next);
    free(next);
    ck_assert_int_eq(tu_http(&r, "GET", base, path, &g), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "[\"r0002\",\"r0003\"]");
    tu_resp_free(&r);
    /* the whole collection, full: 1000 records in id order, payloads intact */
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/42/storage/big?full=1", &g), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *all = json_loads(r.body, 0, NULL);
    ck_assert_ptr_nonnull(all);
    ck_assert_int_eq(json_array_size(all), 1000);
    for (size_t i = 0; i < 1000; i++) {
        char id[16];
        snprintf(id, sizeof id, "r%04zu", i);
        json_t *o = json_array_get(all, i);
        ck_assert_str_eq(json_string_value(json_object_get(o, "id")), id);
        ck_assert_str_eq(json_string_value(json_object_get(o, "payload")), pay);
    }
    json_decref(all);
    char *recs = tu_resp_header(&r, "X-Weave-Records");
    ck_assert_str_eq(recs, "1000");
    free(recs);
    tu_resp_free(&r);
    tu_cred_free(&c);
    storage_server_free(s);
    picl__nss_release();
    tupg_drop_db(n);
}
END_TEST

/* PostgreSQL goes away under a running storage server: answers come at
 * once (503 with Retry-After, never a hang), and it serves again by itself
 * when the database is back, with what was written before. */
START_TEST(pg_restart_under_a_running_storage_server)
{
    if (!tupg_enabled())
        return;
    char u[256], n[64], base[64];
    tupg_create_db(u, sizeof u, n, sizeof n);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    storage_config cfg = {.listen = "127.0.0.1:0",
                          .database = u,
                          .db_pool = 2,
                          .secret = SECRET,
                          .secret_len = SECRET_LEN,
                          .prune_interval_s = -1};
    storage_server *s = NULL;
    ck_assert_int_eq(storage_server_new(&s, &cfg), PICL_OK);
    ck_assert_int_eq(storage_server_start(s), PICL_OK);
    snprintf(base, sizeof base, "http://127.0.0.1:%u", storage_server_port(s));
    tu_cred c;
    tu_mint(&c, SECRET, SECRET_LEN, storage_server_node(s), UID, 3600);
    tu_resp r;
    const char *rec = "{\"payload\":\"kept\"}";
    tu_req o = {.ctype = "application/json", .body = rec, .len = strlen(rec), .cred = &c};
    ck_assert_int_eq(tu_http(&r, "PUT", base, "/1.5/42/storage/c/k", &o), 0);
    ck_assert_int_eq(r.status, 200);
    tu_resp_free(&r);
    ck_assert_int_eq(tupg_stop_cluster(), 0);
    time_t t0 = time(NULL);
    tu_req g = {.cred = &c};
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/42/storage/c/k", &g), 0);
    ck_assert_int_eq(r.status, 503);
    char *ra = tu_resp_header(&r, "Retry-After");
    ck_assert_ptr_nonnull(ra);
    free(ra);
    tu_resp_free(&r);
    ck_assert_int_eq(tu_http(&r, "GET", base, "/__heartbeat__", NULL), 0);
    ck_assert_int_eq(r.status, 503);
    tu_resp_free(&r);
    ck_assert_int_le(time(NULL) - t0, 5);
    ck_assert_int_eq(tupg_start_cluster(), 0);
    ck_assert_int_eq(tu_http(&r, "GET", base, "/1.5/42/storage/c/k", &g), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"payload\":\"kept\""));
    tu_resp_free(&r);
    tu_cred_free(&c);
    storage_server_free(s);
    picl__nss_release();
    tupg_drop_db(n);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_pg");
    TCase *e = tcase_create("errors");
    tcase_set_timeout(e, 60);
    tcase_add_test(e, pg_unreachable_or_wrong_url);
    suite_add_tcase(s, e);
    if (!tupg_enabled()) /* the rest needs the cluster (PICL_TEST_BACKEND=postgresql) */
        return s;
    TCase *t = tcase_create("twins");
    tcase_set_timeout(t, 120);
    tcase_add_checked_fixture(t, twins_setup, twins_teardown);
    tcase_add_test(t, pg_replay_refused_at_sibling_process);
    tcase_add_test(t, pg_timestamps_strictly_increase_across_processes);
    suite_add_tcase(s, t);
    TCase *m = tcase_create("schema");
    tcase_set_timeout(m, 60);
    tcase_add_test(m, pg_schema_never_half_migrated);
    tcase_add_test(m, pg_failed_upsert_in_a_pipeline);
    tcase_add_test(m, pg_listing_rows_read_one_by_one);
    tcase_add_test(m, pg_restart_under_a_running_storage_server); /* last: it stops the cluster */
    suite_add_tcase(s, m);
    return s;
}

int main(void) { return tu_run(suite()); }
