/* SPDX-License-Identifier: MPL-2.0 */
/* storage_fixture.h -- the in-process storage server the test_storage_*
 * tests talk to (127.0.0.1, port 0, temporary data directory). */
#ifndef PICL_STORAGE_FIXTURE_H
#define PICL_STORAGE_FIXTURE_H

#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto/nss.h"
#include "storage/storage.h"
#include "testutil_http.h"
#include "testutil_pg.h"

static const uint8_t SF_SECRET[] = "picl-test-secret-0123456789abcdef-0123456789";
#define SF_SECRET_LEN (sizeof SF_SECRET - 1)
#define SF_UID 42

typedef struct sf_state {
    storage_server *srv;
    char dir[64];
    char base[64];
    char node[128];
    tu_cred cred;
    storage_config cfg;
    char pgurl[256], pgname[64]; /* PICL_TEST_BACKEND=postgresql: the server's database */
} sf_state;

static sf_state SF;

static inline void sf_start_cfg(const storage_config *extra)
{
    if (extra)
        SF.cfg = *extra;
    SF.cfg.listen = "127.0.0.1:0";
    SF.cfg.data_dir = SF.dir;
    if (SF.pgurl[0])
        SF.cfg.database = SF.pgurl;
    SF.cfg.secret = SF_SECRET;
    SF.cfg.secret_len = SF_SECRET_LEN;
    if (!SF.cfg.prune_interval_s)
        SF.cfg.prune_interval_s = -1;
    ck_assert_int_eq(storage_server_new(&SF.srv, &SF.cfg), PICL_OK);
    ck_assert_int_eq(storage_server_start(SF.srv), PICL_OK);
    snprintf(SF.base, sizeof SF.base, "http://127.0.0.1:%u", storage_server_port(SF.srv));
    snprintf(SF.node, sizeof SF.node, "%s", storage_server_node(SF.srv));
    ck_assert_str_eq(SF.base, SF.node);
}

static inline void sf_setup_with(const storage_config *extra)
{
    memset(&SF, 0, sizeof SF);
    snprintf(SF.dir, sizeof SF.dir, "/tmp/picl-storage-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(SF.dir));
    if (tupg_enabled())
        tupg_create_db(SF.pgurl, sizeof SF.pgurl, SF.pgname, sizeof SF.pgname);
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    sf_start_cfg(extra);
    tu_mint(&SF.cred, SF_SECRET, SF_SECRET_LEN, SF.node, SF_UID, 3600);
}

static inline void sf_setup(void) { sf_setup_with(NULL); }

/* Stops and starts the server on the same data directory (a new port). */
static inline void sf_restart(void)
{
    storage_config keep = SF.cfg;
    storage_server_free(SF.srv);
    SF.srv = NULL;
    sf_start_cfg(&keep);
    tu_cred_free(&SF.cred);
    tu_mint(&SF.cred, SF_SECRET, SF_SECRET_LEN, SF.node, SF_UID, 3600);
}

static inline void sf_teardown(void)
{
    storage_server_free(SF.srv);
    tu_cred_free(&SF.cred);
    picl__nss_release();
    tupg_drop_db(SF.pgname);
    DIR *d = opendir(SF.dir);
    struct dirent *e;
    char p[600];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", SF.dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(SF.dir);
}

/* A request as user SF_UID: path is below /1.5/<uid>. */
static inline tu_resp sf_req_h(const char *method, const char *path, const char *ctype, const char *body,
                               const char *const *headers)
{
    char target[4096];
    snprintf(target, sizeof target, "/1.5/%d%s", SF_UID, path);
    tu_req o = {
        .ctype = ctype, .body = body, .len = body ? strlen(body) : 0, .headers = headers, .cred = &SF.cred};
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, method, SF.base, target, &o), 0);
    return r;
}

static inline tu_resp sf_req(const char *method, const char *path, const char *body)
{
    return sf_req_h(method, path, body ? "application/json" : NULL, body, NULL);
}

/* Asserts the status and (when code >= 0) the integer error body. */
#define sf_expect(r, st, code) sf_expect_((r), (st), (code), __LINE__)
static inline void sf_expect_(tu_resp *r, long status, int code, int line)
{
    ck_assert_msg(r->status == status, "line %d: status %ld, want %ld (body %.200s)", line, r->status, status,
                  r->body);
    if (code >= 0) {
        char want[16];
        snprintf(want, sizeof want, "%d", code);
        ck_assert_msg(!strcmp(r->body, want), "line %d: body '%s', want '%s'", line, r->body, want);
    }
}

/* The body parsed as JSON (aborts when it is not). */
static inline json_t *sf_json(const tu_resp *r)
{
    json_error_t err;
    json_t *j = json_loads(r->body, JSON_DECODE_ANY, &err);
    ck_assert_msg(j != NULL, "not JSON: %.200s", r->body);
    return j;
}

/* A header as centis (must have exactly two decimals). */
static inline int64_t sf_ts_header(const tu_resp *r, const char *name)
{
    char *v = tu_resp_header(r, name);
    ck_assert_msg(v != NULL, "missing header %s", name);
    size_t n = strlen(v);
    ck_assert_msg(n >= 4 && v[n - 3] == '.' && strspn(v, "0123456789.") == n,
                  "%s '%s' is not seconds with 2 decimals", name, v);
    int64_t c = strtoll(v, NULL, 10) * 100 + strtoll(v + n - 2, NULL, 10);
    free(v);
    return c;
}

/* A snapshot of everything the user has (collections + full BSOs), for
 * "changes nothing" checks.  Caller frees. */
static inline char *sf_snapshot(void)
{
    tu_resp r = sf_req("GET", "/info/collections", NULL);
    ck_assert_int_eq(r.status, 200);
    json_t *cols = sf_json(&r);
    size_t cap = strlen(r.body) + 2;
    char *snap = malloc(cap);
    snprintf(snap, cap, "%s\n", r.body);
    tu_resp_free(&r);
    const char *name;
    json_t *v;
    json_object_foreach (cols, name, v) {
        char path[256];
        snprintf(path, sizeof path, "/storage/%s?full=1&sort=oldest", name);
        tu_resp c = sf_req("GET", path, NULL);
        ck_assert_int_eq(c.status, 200);
        size_t have = strlen(snap), add = strlen(c.body);
        cap = have + add + 1;
        snap = realloc(snap, cap);
        ck_assert_ptr_nonnull(snap);
        memcpy(snap + have, c.body, add + 1);
        tu_resp_free(&c);
    }
    json_decref(cols);
    return snap;
}

/* Runs sql on the server's database behind its back (the SQLite file or
 * the PostgreSQL database); with out, the first row's one value.  sf_sql_int:
 * that value as a number. */
static inline void sf_sql(const char *sql, char *out, size_t cap)
{
    if (SF.pgurl[0]) { /* PICL_TEST_BACKEND=postgresql */
        if (out)
            ck_assert_msg(tupg_query1(SF.pgurl, sql, out, cap) == 0, "%s", sql);
        else
            ck_assert_msg(tupg_exec(SF.pgurl, sql) == 0, "%s", sql);
        return;
    }
    char path[128];
    snprintf(path, sizeof path, "%s/storage.db", SF.dir);
    sqlite3 *db;
    sqlite3_stmt *q;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    int rc = sqlite3_step(q);
    if (out) {
        ck_assert_msg(rc == SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
        const char *v = (const char *)sqlite3_column_text(q, 0);
        snprintf(out, cap, "%s", v ? v : "");
    } else {
        ck_assert_msg(rc == SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
}

static inline int64_t sf_sql_int(const char *sql)
{
    char v[64];
    sf_sql(sql, v, sizeof v);
    return strtoll(v, NULL, 10);
}

#endif
