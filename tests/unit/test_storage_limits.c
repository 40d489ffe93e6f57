/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_limits.c -- the storage server's limits against hostile
 * requests (storage.md 5): memory bounded before parsing (measured on a real
 * picl-storage process), listings paged by size, bad offsets refused, open
 * batches counted toward the quota and limited in number; and the behaviours
 * of Mozilla's servers that real clients rely on (collection field, tokens
 * of Mozilla's tokenservers); one user's share of the Hawk nonce cache. */
#include <libgen.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <sqlite3.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/kdf.h"
#include "protocol/tokenlib.h"
#include "storage_fixture.h"
#include "testutil.h"

/* ---- a picl-storage process (the peak-memory test; not under ASan) ------ */
#ifndef __SANITIZE_ADDRESS__

typedef struct proc {
    pid_t pid;
    unsigned port;
    char dir[64], base[64], node[64];
    FILE *err;
} proc;

static void proc_start(proc *p)
{
    char self[4096], bin[4096], secret[128];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(n, 0);
    self[n] = 0;
    snprintf(bin, sizeof bin, "%s/../picl-storage", dirname(self));
    ck_assert_msg(access(bin, X_OK) == 0, "%s not built", bin);
    snprintf(p->dir, sizeof p->dir, "/tmp/picl-lim-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(p->dir));
    snprintf(secret, sizeof secret, "%s/secret", p->dir);
    FILE *f = fopen(secret, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", (const char *)SF_SECRET);
    fclose(f);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    p->pid = fork();
    if (p->pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execl(bin, bin, "--listen", "127.0.0.1:0", "--data", p->dir, "--secret-file", secret, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    p->err = fdopen(fds[0], "r");
    char line[512] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, p->err));
    const char *u = strstr(line, "serving http://127.0.0.1:");
    ck_assert_msg(u != NULL, "%s", line);
    ck_assert_int_eq(sscanf(u, "serving http://127.0.0.1:%u", &p->port), 1);
    snprintf(p->base, sizeof p->base, "http://127.0.0.1:%u", p->port);
    snprintf(p->node, sizeof p->node, "%s", p->base);
}

static void proc_stop(proc *p)
{
    kill(p->pid, SIGTERM);
    int st;
    ck_assert_int_eq(waitpid(p->pid, &st, 0), p->pid);
    fclose(p->err);
    ck_assert_int_eq(tu_rmtree(p->dir), 0);
}

/* A line of /proc/PID/status in KiB ("VmHWM", "VmRSS"). */
static long proc_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':')
            v = strtol(line + fl + 1, NULL, 10);
    fclose(f);
    ck_assert_int_ge(v, 0);
    return v;
}

/* A body of `count` copies of item joined by sep inside open/close. */
static char *repeat(const char *open, const char *item, const char *sep, const char *close, size_t count)
{
    size_t il = strlen(item), sl = strlen(sep), ol = strlen(open), cl = strlen(close);
    char *b = malloc(ol + count * (il + sl) + cl + 1), *o = b;
    ck_assert_ptr_nonnull(b);
    memcpy(o, open, ol);
    o += ol;
    for (size_t i = 0; i < count; i++) {
        if (i) {
            memcpy(o, sep, sl);
            o += sl;
        }
        memcpy(o, item, il);
        o += il;
    }
    memcpy(o, close, cl + 1);
    return b;
}

/* One 2 MB POST of [{},{},...] cost the server ~280 MB of peak memory when
 * records were parsed before being counted.  Now each request below is
 * refused (400/17) before the parser runs, and the peak moves by a few MB. */
START_TEST(test_post_memory_bounded_process)
{
    proc p;
    proc_start(&p);
    tu_cred cred;
    tu_mint(&cred, SF_SECRET, SF_SECRET_LEN, p.node, 9, 3600);
    /* warm up: the first requests allocate the pools */
    tu_req o = {.cred = &cred, .ctype = "application/json", .body = "[{\"id\":\"a\",\"payload\":\"x\"}]"};
    o.len = strlen(o.body);
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, "POST", p.base, "/1.5/9/storage/tabs", &o), 0);
    ck_assert_int_eq(r.status, 200);
    tu_resp_free(&r);
    long before = proc_kb(p.pid, "VmHWM");

    size_t n = (2 * 1024 * 1024 - 16) / 3; /* "{}," */
    struct {
        const char *ctype;
        char *body;
    } hostile[] = {
        {"application/json", repeat("[", "{}", ",", "]", n)},
        {"application/newlines", repeat("", "{}", "\n", "\n", n)},
        /* few records, but one of them a huge tree of values */
        {"application/json", repeat("[{\"id\":\"a\",\"x\":[", "{}", ",", "]}]", n)},
        {"application/json", repeat("[{\"id\":\"a\",\"x\":[", "[]", ",", "]}]", n)},
    };
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        tu_req h = {.cred = &cred,
                    .ctype = hostile[i].ctype,
                    .body = hostile[i].body,
                    .len = strlen(hostile[i].body)};
        ck_assert_int_le(h.len, 2 * 1024 * 1024 + 4096);
        ck_assert_int_eq(tu_http(&r, "POST", p.base, "/1.5/9/storage/tabs", &h), 0);
        /* the body buffers (2 MB each, a few threads) and nothing more */
        long peak = proc_kb(p.pid, "VmHWM");
        ck_assert_msg(peak - before < 24 * 1024, "case %zu: peak memory grew by %ld KiB (from %ld KiB)", i,
                      peak - before, before);
        ck_assert_msg(r.status == 400 && !strcmp(r.body, "17"), "case %zu: %ld %s", i, r.status, r.body);
        tu_resp_free(&r);
        free(hostile[i].body);
    }
    /* a PUT cannot be a tree of values either */
    char *put = repeat("{\"payload\":\"p\",\"x\":[", "{}", ",", "]}", n);
    tu_req h = {.cred = &cred, .ctype = "application/json", .body = put, .len = strlen(put)};
    ck_assert_int_eq(tu_http(&r, "PUT", p.base, "/1.5/9/storage/tabs/b", &h), 0);
    ck_assert_msg(r.status == 400 && !strcmp(r.body, "8"), "PUT: %ld %s", r.status, r.body);
    tu_resp_free(&r);
    free(put);

    long after = proc_kb(p.pid, "VmHWM");
    ck_assert_msg(after - before < 24 * 1024, "PUT: peak memory grew by %ld KiB (from %ld KiB)",
                  after - before, before);
    /* nothing was written: the collection holds the warm-up record only */
    tu_req g = {.cred = &cred};
    ck_assert_int_eq(tu_http(&r, "GET", p.base, "/1.5/9/storage/tabs", &g), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.body, "[\"a\"]");
    tu_resp_free(&r);
    tu_cred_free(&cred);
    proc_stop(&p);
}
END_TEST
#endif

/* ---- in-process server -------------------------------------------------- */

static void setup_small(void)
{
    storage_config c;
    memset(&c, 0, sizeof c);
    c.limits.max_request_bytes = 64 * 1024;
    c.quota_kb = 10;
    sf_setup_with(&c);
}

/* Uploads count records of `size` payload bytes, ids r000.., in POSTs of 10. */
static void upload(const char *coll, int count, size_t size)
{
    char *pay = malloc(size + 1);
    memset(pay, 'p', size);
    pay[size] = 0;
    for (int from = 0; from < count; from += 10) {
        size_t cap = 10 * (size + 64) + 8, o = 1;
        char *body = malloc(cap);
        body[0] = '[';
        for (int i = from; i < from + 10 && i < count; i++)
            o += (size_t)snprintf(body + o, cap - o, "%s{\"id\":\"r%03d\",\"payload\":\"%s\"}",
                                  i > from ? "," : "", i, pay);
        snprintf(body + o, cap - o, "]");
        char path[64];
        snprintf(path, sizeof path, "/storage/%s", coll);
        tu_resp r = sf_req("POST", path, body);
        sf_expect(&r, 200, -1);
        ck_assert_ptr_nonnull(strstr(r.body, "\"failed\":{}"));
        tu_resp_free(&r);
        free(body);
    }
    free(pay);
}

/* A listing larger than max_request_bytes comes in pages under it, linked
 * by X-Weave-Next-Offset, every record exactly once. */
START_TEST(test_listing_paged_by_size)
{
    storage_config c;
    memset(&c, 0, sizeof c);
    c.limits.max_request_bytes = 64 * 1024;
    sf_setup_with(&c);
    upload("big", 40, 4000); /* 160 KB of payloads */
    for (int nl = 0; nl < 2; nl++) {
        static const char *const nlh[] = {"Accept: application/newlines", NULL};
        int seen[40] = {0};
        char *offset = NULL;
        int pages = 0;
        do {
            char path[256];
            snprintf(path, sizeof path, "/storage/big?full=1&sort=index%s%s", offset ? "&offset=" : "",
                     offset ? offset : "");
            free(offset);
            tu_resp r = sf_req_h("GET", path, NULL, NULL, nl ? nlh : NULL);
            sf_expect(&r, 200, -1);
            ck_assert_msg(r.len <= 64 * 1024, "page of %zu bytes", r.len);
            offset = tu_resp_header(&r, "X-Weave-Next-Offset");
            char *cnt = tu_resp_header(&r, "X-Weave-Records");
            int records = 0;
            for (char *p = r.body; (p = strstr(p, "\"id\":\"r")); p += 7) {
                int id = (int)strtol(p + 7, NULL, 10);
                ck_assert(id >= 0 && id < 40);
                seen[id]++;
                records++;
            }
            ck_assert_int_ge(records, 1);
            ck_assert_int_eq(strtol(cnt, NULL, 10), records);
            free(cnt);
            tu_resp_free(&r);
            pages++;
            ck_assert_int_lt(pages, 40);
        } while (offset);
        ck_assert_int_ge(pages, 3);
        for (int i = 0; i < 40; i++)
            ck_assert_msg(seen[i] == 1, "r%03d seen %d times", i, seen[i]);
    }
    /* ids only fit one page */
    tu_resp r = sf_req("GET", "/storage/big", NULL);
    sf_expect(&r, 200, -1);
    char *off = tu_resp_header(&r, "X-Weave-Next-Offset");
    ck_assert_ptr_null(off);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_array_size(j), 40);
    json_decref(j);
    tu_resp_free(&r);
}
END_TEST

/* A malformed escape in offset is 400, not "no offset" (which restarts the
 * listing from the top: a paging client would loop). */
START_TEST(test_bad_offset_escape)
{
    sf_setup();
    upload("c", 3, 10);
    const char *bad[] = {"/storage/c?limit=1&offset=%zz", "/storage/c?offset=%", "/storage/c?offset=a%00b",
                         "/storage/c?sort=%q1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_resp r = sf_req("GET", bad[i], NULL);
        ck_assert_msg(r.status == 400 && !strcmp(r.body, "1"), "%s: %ld %s", bad[i], r.status, r.body);
        tu_resp_free(&r);
    }
    /* a well-formed one still works */
    tu_resp r = sf_req("GET", "/storage/c?limit=1", NULL);
    sf_expect(&r, 200, -1);
    char *off = tu_resp_header(&r, "X-Weave-Next-Offset");
    ck_assert_ptr_nonnull(off);
    tu_resp_free(&r);
    char path[256];
    snprintf(path, sizeof path, "/storage/c?limit=1&offset=%s", off);
    free(off);
    r = sf_req("GET", path, NULL);
    sf_expect(&r, 200, -1);
    ck_assert_str_eq(r.body, "[\"r001\"]");
    tu_resp_free(&r);
}
END_TEST

static char *batch_of(const char *coll, const char *query, int first, int count, size_t size, long want,
                      int want_code)
{
    char *pay = malloc(size + 1);
    memset(pay, 'q', size);
    pay[size] = 0;
    size_t cap = (size_t)count * (size + 64) + 8, o = 1;
    char *body = malloc(cap);
    body[0] = '[';
    for (int i = 0; i < count; i++)
        o += (size_t)snprintf(body + o, cap - o, "%s{\"id\":\"b%04d\",\"payload\":\"%s\"}", i ? "," : "",
                              first + i, pay);
    snprintf(body + o, cap - o, "]");
    char path[128];
    snprintf(path, sizeof path, "/storage/%s?%s", coll, query);
    tu_resp r = sf_req("POST", path, body);
    free(body);
    free(pay);
    ck_assert_msg(r.status == want && (want_code < 0 || strtol(r.body, NULL, 10) == want_code), "%s: %ld %s",
                  path, r.status, r.body);
    char *id = NULL;
    if (r.status == 202) {
        json_t *j = sf_json(&r);
        id = strdup(json_string_value(json_object_get(j, "batch")));
        json_decref(j);
    }
    tu_resp_free(&r);
    return id;
}

/* 5 MB could be stored under a 10 KB quota in open batches: now what open
 * batches hold counts, and the quota stops them. */
START_TEST(test_open_batches_count_toward_quota)
{
    setup_small();                                               /* quota 10 KiB */
    char *b1 = batch_of("h", "batch=true", 0, 3, 3000, 202, -1); /* 9000 bytes */
    /* an append past the quota: refused, the batch keeps what it had */
    char q[128];
    snprintf(q, sizeof q, "batch=%s", b1);
    free(batch_of("h", q, 3, 2, 3000, 400, 14));
    /* a second batch is refused as well: the first one's bytes count */
    free(batch_of("other", "batch=true", 10, 1, 2000, 400, 14));
    /* a plain POST too */
    tu_resp r = sf_req("POST", "/storage/x",
                       "[{\"id\":\"z\",\"payload\":\""
                       "0123456789012345678901234567890123456789"
                       "0123456789012345678901234567890123456789"
                       "\"}]");
    /* 80 bytes fit: 9000 + 80 < 10240 */
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("GET", "/info/quota", NULL);
    sf_expect(&r, 200, -1);
    json_t *j = sf_json(&r);
    /* 9000 + 80 bytes, printed in KiB with 2 decimals */
    ck_assert_double_eq_tol(json_real_value(json_array_get(j, 0)), 9080.0 / 1024, 0.006);
    json_decref(j);
    tu_resp_free(&r);
    /* the batch commits what it held: three records */
    snprintf(q, sizeof q, "batch=%s&commit=true", b1);
    free(batch_of("h", q, 0, 0, 1, 200, -1));
    r = sf_req("GET", "/info/collection_counts", NULL);
    j = sf_json(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "h")), 3);
    ck_assert_ptr_null(json_object_get(j, "other"));
    json_decref(j);
    tu_resp_free(&r);
    free(b1);

    /* many small batches: the total accepted never passes the quota */
    int64_t accepted = 0;
    for (int i = 0; i < 8; i++) {
        r = sf_req("POST", "/storage/many?batch=true",
                   "[{\"id\":\"m\",\"payload\":\""
                   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                   "\"}]");
        if (r.status == 202)
            accepted += 128;
        else
            sf_expect(&r, 400, 14);
        tu_resp_free(&r);
    }
    r = sf_req("GET", "/info/quota", NULL);
    j = sf_json(&r);
    ck_assert_int_le((int64_t)(json_real_value(json_array_get(j, 0)) * 1024 + 0.5), 10 * 1024);
    json_decref(j);
    tu_resp_free(&r);
    ck_assert_int_gt(accepted, 0);
}
END_TEST

/* At most 10 open batches per user (the default); the 11th is 400/17. */
START_TEST(test_open_batch_count_limit)
{
    sf_setup();
    char *ids[10];
    for (int i = 0; i < 10; i++)
        ids[i] = batch_of("c", "batch=true", i, 1, 10, 202, -1);
    free(batch_of("d", "batch=true", 99, 1, 10, 400, 17));
    /* committing one makes room for one */
    char q[128];
    snprintf(q, sizeof q, "batch=%s&commit=true", ids[0]);
    free(batch_of("c", q, 50, 1, 10, 200, -1));
    char *again = batch_of("d", "batch=true", 98, 1, 10, 202, -1);
    free(batch_of("d", "batch=true", 97, 1, 10, 400, 17));
    /* another user has its own count */
    tu_cred other;
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, SF.node, 43, 3600);
    tu_req o = {.cred = &other, .ctype = "application/json", .body = "[{\"id\":\"a\",\"payload\":\"x\"}]"};
    o.len = strlen(o.body);
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, "POST", SF.base, "/1.5/43/storage/c?batch=true", &o), 0);
    ck_assert_int_eq(r.status, 202);
    tu_resp_free(&r);
    tu_cred_free(&other);
    for (int i = 0; i < 10; i++)
        free(ids[i]);
    free(again);
}
END_TEST

/* max_open_batches is configurable. */
START_TEST(test_open_batch_count_configurable)
{
    storage_config c;
    memset(&c, 0, sizeof c);
    c.max_open_batches = 2;
    sf_setup_with(&c);
    free(batch_of("c", "batch=true", 0, 1, 10, 202, -1));
    free(batch_of("c", "batch=true", 1, 1, 10, 202, -1));
    free(batch_of("c", "batch=true", 2, 1, 10, 400, 17));
}
END_TEST

/* Firefox-era clients send a `collection` field: accepted and ignored. */
START_TEST(test_collection_field_ignored)
{
    sf_setup();
    tu_resp r = sf_req("PUT", "/storage/tabs/x", "{\"id\":\"x\",\"collection\":\"tabs\",\"payload\":\"p\"}");
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("POST", "/storage/tabs",
               "[{\"id\":\"y\",\"collection\":\"tabs\",\"payload\":\"q\"},{\"id\":\"z\",\"collection\":"
               "\"other\",\"payload\":\"r\"}]");
    sf_expect(&r, 200, -1);
    json_t *j = sf_json(&r);
    ck_assert_int_eq(json_array_size(json_object_get(j, "success")), 2);
    ck_assert_int_eq(json_object_size(json_object_get(j, "failed")), 0);
    json_decref(j);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/tabs?full=1&sort=index", NULL);
    j = sf_json(&r);
    ck_assert_int_eq(json_array_size(j), 3);
    ck_assert_ptr_null(strstr(r.body, "collection"));
    json_decref(j);
    tu_resp_free(&r);
    r = sf_req("GET", "/info/collections", NULL);
    ck_assert_ptr_null(strstr(r.body, "other"));
    tu_resp_free(&r);
}
END_TEST

/* A token as Mozilla's tokenservers mint it: expires with a fraction, an
 * extra field.  Accepted; the MAC still covers all of it. */
static char *moz_token(const char *payload)
{
    uint8_t skey[32];
    size_t len = strlen(payload);
    uint8_t *raw = malloc(len + 32);
    ck_assert_int_eq(picl__hkdf_sha256(skey, 32, SF_SECRET, SF_SECRET_LEN, NULL, 0,
                                       PICL_TOKENLIB_SIGNING_INFO, strlen(PICL_TOKENLIB_SIGNING_INFO)),
                     PICL_OK);
    memcpy(raw, payload, len);
    ck_assert_int_eq(picl__hmac_sha256(raw + len, skey, 32, raw, len), PICL_OK);
    char *t = picl__base64url_encode_alloc(raw, len + 32, 1);
    free(raw);
    return t;
}

START_TEST(test_mozilla_tokens_accepted)
{
    sf_setup();
    char payload[1024];
    snprintf(
        payload, sizeof payload,
        "{\"uid\": %d, \"node\": \"%s\", \"expires\": %lld.8123, \"fxa_uid\": \"f\", \"fxa_kid\": \"k\", "
        "\"hashed_fxa_uid\": \"h\", \"hashed_device_id\": \"d\", \"tokenserver_origin\": \"rust\", "
        "\"salt\": \"a1b2c3\"}",
        SF_UID, SF.node, (long long)time(NULL) + 600);
    tu_cred c = {moz_token(payload), malloc(PICL_TOKENLIB_KEY_CHARS + 1)};
    ck_assert_int_eq(
        picl__tokenlib_derive_key(c.key, SF_SECRET, SF_SECRET_LEN, c.token, strlen(c.token), "a1b2c3"),
        PICL_OK);
    tu_req o = {.cred = &c};
    tu_resp r;
    char target[64];
    snprintf(target, sizeof target, "/1.5/%d/info/collections", SF_UID);
    ck_assert_int_eq(tu_http(&r, "GET", SF.base, target, &o), 0);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    tu_resp_free(&r);
    /* the extra field is covered by the MAC: changed, the token is refused */
    char *p = strstr(payload, "rust");
    memcpy(p, "ruse", 4);
    /* the changed payload with the original signature */
    uint8_t raw[2048];
    size_t n = 0;
    ck_assert_int_eq(picl__base64url_decode(raw, sizeof raw, &n, c.token, strlen(c.token)), PICL_OK);
    memcpy(raw, payload, strlen(payload));
    tu_cred bad = {picl__base64url_encode_alloc(raw, n, 1), strdup(c.key)};
    tu_req ob = {.cred = &bad};
    ck_assert_int_eq(tu_http(&r, "GET", SF.base, target, &ob), 0);
    ck_assert_int_eq(r.status, 401);
    tu_resp_free(&r);
    tu_cred_free(&bad);
    tu_cred_free(&c);
}
END_TEST

/* One user cannot fill the Hawk nonce cache for everybody: past its share
 * (1/32 of the cache, here 2 of 64) its own requests get 503, whatever token
 * it uses, while another user is served. */
START_TEST(test_nonce_cache_share_per_user)
{
    storage_config c;
    memset(&c, 0, sizeof c);
    c.nonce_cache_entries = 64;
    sf_setup_with(&c);
    tu_cred t2, other;
    tu_mint(&t2, SF_SECRET, SF_SECRET_LEN, SF.node, SF_UID, 3600); /* a second token of the same user */
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, SF.node, 43, 3600);
    for (int i = 0; i < 2; i++) {
        tu_resp r = sf_req("GET", "/info/collections", NULL);
        sf_expect(&r, 200, -1);
        tu_resp_free(&r);
    }
    tu_resp r = sf_req("GET", "/info/collections", NULL);
    sf_expect(&r, 503, 0);
    char *ra = tu_resp_header(&r, "Retry-After");
    ck_assert_ptr_nonnull(ra);
    free(ra);
    tu_resp_free(&r);
    char target[64];
    snprintf(target, sizeof target, "/1.5/%d/info/collections", SF_UID);
    tu_req o = {.cred = &t2};
    ck_assert_int_eq(tu_http(&r, "GET", SF.base, target, &o), 0);
    ck_assert_int_eq(r.status, 503);
    tu_resp_free(&r);
    /* the other user is served */
    tu_req ob = {.cred = &other};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(tu_http(&r, "GET", SF.base, "/1.5/43/info/collections", &ob), 0);
        ck_assert_int_eq(r.status, 200);
        tu_resp_free(&r);
    }
    tu_cred_free(&t2);
    tu_cred_free(&other);
}
END_TEST

/* A database written by the previous server (schema 1) is migrated on
 * start: data kept, the per-user batch index added, version 2 recorded. */
START_TEST(test_schema_v1_migrated)
{
    if (tupg_enabled())
        return; /* a SQLite file's schema: nothing to migrate on PostgreSQL */
    sf_setup();
    upload("keep", 3, 10);
    storage_server_free(SF.srv);
    SF.srv = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/storage.db", SF.dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(db, "DROP INDEX batches_uid; UPDATE schema_version SET version = 1", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    sf_restart();
    tu_resp r = sf_req("GET", "/storage/keep", NULL);
    sf_expect(&r, 200, -1);
    ck_assert_str_eq(r.body, "[\"r000\",\"r001\",\"r002\"]");
    tu_resp_free(&r);
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "SELECT (SELECT max(version) FROM schema_version),"
                                        " (SELECT count(*) FROM sqlite_master WHERE name = 'batches_uid')",
                                        -1, &q, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    /* 3: the undo history, 4: batch totals, 5: a deletion's own timestamp */
    ck_assert_int_eq(sqlite3_column_int(q, 0), 5);
    ck_assert_int_eq(sqlite3_column_int(q, 1), 1);
    sqlite3_finalize(q);
    sqlite3_close(db);
}
END_TEST

/* A schema-3 file with an open batch (its totals were summed from its
 * items then) gets them kept in the batch's row on start (schema 4), and the
 * batch still commits whole. */
START_TEST(test_schema_v3_batch_totals_migrated)
{
    if (tupg_enabled())
        return; /* a SQLite file's schema: nothing to migrate on PostgreSQL */
    sf_setup();
    tu_resp r = sf_req_h("POST", "/storage/mig?batch=true", "application/json",
                         "[{\"id\":\"a\",\"payload\":\"12345\"},{\"id\":\"b\",\"payload\":\"123\"}]", NULL);
    sf_expect(&r, 202, -1);
    json_t *j = sf_json(&r);
    char *id = strdup(json_string_value(json_object_get(j, "batch")));
    json_decref(j);
    tu_resp_free(&r);
    storage_server_free(SF.srv);
    SF.srv = NULL;
    char path[128];
    snprintf(path, sizeof path, "%s/storage.db", SF.dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(db,
                     "ALTER TABLE batches DROP COLUMN records; ALTER TABLE batches DROP COLUMN bytes;"
                     " UPDATE schema_version SET version = 3",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    sf_restart();
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "SELECT (SELECT max(version) FROM schema_version), records, bytes"
                                        " FROM batches",
                                        -1, &q, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), 5);
    ck_assert_int_eq(sqlite3_column_int(q, 1), 2);
    ck_assert_int_eq(sqlite3_column_int(q, 2), 8);
    sqlite3_finalize(q);
    sqlite3_close(db);
    char target[160];
    snprintf(target, sizeof target, "/storage/mig?batch=%s&commit=true", id);
    r = sf_req_h("POST", target, "application/json", "[{\"id\":\"c\",\"payload\":\"1\"}]", NULL);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/mig", NULL);
    ck_assert_str_eq(r.body, "[\"a\",\"b\",\"c\"]");
    tu_resp_free(&r);
    free(id);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_limits");
    TCase *tc;
    /* Peak-memory bounds say nothing under ASan (redzones and its quarantine
     * grow the heap on their own): the plain test build measures them. */
#ifndef __SANITIZE_ADDRESS__
    tc = tcase_create("process");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_post_memory_bounded_process);
    suite_add_tcase(s, tc);
#endif
    tc = tcase_create("limits");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, NULL, sf_teardown);
    tcase_add_test(tc, test_listing_paged_by_size);
    tcase_add_test(tc, test_bad_offset_escape);
    tcase_add_test(tc, test_open_batches_count_toward_quota);
    tcase_add_test(tc, test_open_batch_count_limit);
    tcase_add_test(tc, test_open_batch_count_configurable);
    tcase_add_test(tc, test_collection_field_ignored);
    tcase_add_test(tc, test_mozilla_tokens_accepted);
    tcase_add_test(tc, test_nonce_cache_share_per_user);
    tcase_add_test(tc, test_schema_v1_migrated);
    tcase_add_test(tc, test_schema_v3_batch_totals_migrated);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
