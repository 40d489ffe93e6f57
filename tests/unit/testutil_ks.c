/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_ks.c -- keyserver test helpers (see testutil_ks.h). */
#include "testutil_ks.h"
#include "testutil_pg.h"

#include <check.h>
#include <sqlite3.h>
#include <curl/curl.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/account.h"
#include "client/keyserver_client.h"
#include "crypto/codec.h"
#include "crypto/srp.h"
#include "crypto/util.h"
#include "protocol/hawk.h"
#include "protocol/tokens.h"
#include "keyserver/ks_db.h"
#include "keyserver/ks_internal.h"

const picl_stretch_params *tuks_params(void)
{
    static const picl_stretch_params p = {1000, 1024, 8, 1, 1000};
    return &p;
}

void tuks_start(tuks_srv *t, const ks_config *cfg)
{
    memset(t, 0, sizeof *t);
    /* test builds: the server accepts tuks_params() (a test that needs the
     * real floor unsets it before starting its server) */
    setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 0);
    const char *tmp = getenv("TMPDIR");
    snprintf(t->dir, sizeof t->dir, "%s/picl-ks-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
    ks_config c;
    if (cfg)
        c = *cfg;
    else
        memset(&c, 0, sizeof c);
    c.listen = "127.0.0.1:0";
    c.data_dir = t->dir;
    if (tupg_enabled() && !c.database) {
        tupg_create_db(t->dburl, sizeof t->dburl, t->pgdb, sizeof t->pgdb);
        c.database = t->dburl;
    }
    if (!c.threads)
        c.threads = 4;
    ck_assert_int_eq(ks_server_new(&t->ks, &c), PICL_OK);
    ck_assert_int_eq(ks_server_start(t->ks), PICL_OK);
    t->port = ks_server_port(t->ks);
    ck_assert_uint_gt(t->port, 0);
    snprintf(t->base, sizeof t->base, "http://127.0.0.1:%u", t->port);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

void tuks_stop(tuks_srv *t)
{
    ks_server_free(t->ks);
    t->ks = NULL;
    tupg_drop_db(t->pgdb);
    t->pgdb[0] = 0;
    t->dburl[0] = 0;
    if (t->dir[0])
        nftw(t->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    t->dir[0] = 0;
}

typedef struct sink {
    tuks_resp *r;
} sink;

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    tuks_resp *r = ctx;
    size_t len = size * n;
    char *d = realloc(r->body, r->len + len + 1);
    if (!d)
        return 0;
    memcpy(d + r->len, p, len);
    r->body = d;
    r->len += len;
    r->body[r->len] = 0;
    return len;
}

static void grab(const char *line, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(line, name, nl))
        return;
    const char *v = line + nl;
    size_t vl = len - nl;
    while (vl && (*v == ' '))
        v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
        vl--;
    if (vl >= cap)
        vl = cap - 1;
    memcpy(out, v, vl);
    out[vl] = 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    tuks_resp *r = ctx;
    grab(p, size * n, "Retry-After:", r->retry_after, sizeof r->retry_after);
    grab(p, size * n, "Timestamp:", r->timestamp, sizeof r->timestamp);
    return size * n;
}

long tuks_request(unsigned port, const char *method, const char *target, const char *const *headers,
                  const char *body, size_t bodylen, tuks_resp *out)
{
    memset(out, 0, sizeof *out);
    char url[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, target);
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    struct curl_slist *h = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)bodylen);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(c) == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
        if (out->body)
            out->json = json_loadb(out->body, out->len, 0, NULL);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return out->status;
}

long tuks_hawk(unsigned port, const char *method, const char *target, const uint8_t token[32], int type,
               const char *body, int64_t ts, const char *nonce, const char *signed_body, tuks_resp *out)
{
    picl_token_keys k;
    char id[PICL_TOKEN_ID_HEX_BYTES + 1];
    ck_assert_int_eq(picl__token_derive(&k, (picl_token_type)type, token), PICL_OK);
    picl__token_id_hex(id, &k);
    const char *mb = signed_body ? signed_body : body;
    picl_hawk_request hr = {.method = method,
                            .resource = target,
                            .host = "127.0.0.1",
                            .port = port,
                            .content_type = body ? "application/json" : NULL,
                            .body = mb,
                            .bodylen = mb ? strlen(mb) : 0};
    char *authz = NULL;
    ck_assert_int_eq(
        picl__hawk_client_header(&authz, id, k.hmac_key, 32, &hr, ts ? ts : (int64_t)time(NULL), nonce, NULL),
        PICL_OK);
    char *hdr = malloc(strlen(authz) + 32);
    ck_assert_ptr_nonnull(hdr);
    snprintf(hdr, strlen(authz) + 32, "Authorization: %s", authz);
    const char *headers[] = {hdr, "Content-Type: application/json", NULL};
    long st = tuks_request(port, method, target, headers, body, body ? strlen(body) : 0, out);
    free(hdr);
    free(authz);
    return st;
}

void tuks_resp_free(tuks_resp *r)
{
    json_decref(r->json);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* Value of header `name` in mail text, or NULL. */
static int mail_header(const char *text, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (*l == '\r' || *l == '\n')
            return 0; /* end of headers */
        if (!strncmp(l, name, nl) && l[nl] == ':') {
            const char *v = l + nl + 1;
            while (*v == ' ')
                v++;
            size_t vl = strcspn(v, "\r\n");
            if (vl >= cap)
                return 0;
            memcpy(out, v, vl);
            out[vl] = 0;
            return 1;
        }
    }
    return 0;
}

int tuks_take_mail(const tuks_srv *t, const char *to, const char *header, char *out, size_t cap)
{
    char dir[512], path[1024], best[1024] = "";
    snprintf(dir, sizeof dir, "%s/mail/new", t->dir);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    struct timespec newest = {0, 0};
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        char text[8192];
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = 0;
        char v[512], addr[512];
        struct stat st;
        if (mail_header(text, "To", addr, sizeof addr) && !strcmp(addr, to) &&
            mail_header(text, header, v, sizeof v) && stat(path, &st) == 0 &&
            (st.st_mtim.tv_sec > newest.tv_sec ||
             (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec >= newest.tv_nsec))) {
            newest = st.st_mtim;
            snprintf(best, sizeof best, "%s", path);
            snprintf(out, cap, "%s", v);
        }
    }
    closedir(d);
    if (!best[0])
        return 0;
    unlink(best);
    return 1;
}

int tuks_mail_count(const tuks_srv *t)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/mail/new", t->dir);
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

char *tuks_hex(const void *p, size_t len)
{
    char *h = picl__hex_encode_alloc(p, len);
    ck_assert_ptr_nonnull(h);
    return h;
}

void tuks_account(const tuks_srv *t, const char *email, const char *pw, int verify, char *uid)
{
    picl_ks_client *c = NULL;
    char u[33], code[128];
    ck_assert_int_eq(picl__ksc_new(&c, t->base), PICL_OK);
    ck_assert_int_eq(picl__account_create(c, email, strlen(email), pw, strlen(pw), tuks_params(), u),
                     PICL_OK);
    if (verify) {
        ck_assert(tuks_take_mail(t, email, "X-Verify-Code", code, sizeof code));
        ck_assert_int_eq(picl__account_verify(c, u, code), PICL_OK);
    }
    if (uid)
        memcpy(uid, u, 33);
    picl__ksc_free(c);
}

void tuks_auth_token(const tuks_srv *t, const char *email, const char *pw, uint8_t auth[32])
{
    picl_ks_client *c = NULL;
    picl_ksc_auth_start st;
    picl_srp_client *srp = NULL;
    uint8_t stretched[32], srp_pw[32], unwrap[32], A[256], M[32], K[32];
    size_t el = strlen(email);
    ck_assert_int_eq(picl__ksc_new(&c, t->base), PICL_OK);
    ck_assert_int_eq(picl__ksc_auth_start(c, email, el, &st), PICL_OK);
    ck_assert_int_eq(picl__stretch(stretched, &st.params, tuks_params(), email, el, pw, strlen(pw), NULL),
                     PICL_OK);
    ck_assert_int_eq(picl__main_kdf(srp_pw, unwrap, stretched, st.main_salt, 32), PICL_OK);
    ck_assert_int_eq(picl__srp_client_new(picl__srp_group_picl(), &srp), PICL_OK);
    ck_assert_int_eq(picl__srp_client_A(srp, A, sizeof A), PICL_OK);
    ck_assert_int_eq(picl__srp_client_process(srp, (const uint8_t *)email, el, srp_pw, 32, st.srp_salt, 32,
                                              st.B, 256, M, 32),
                     PICL_OK);
    ck_assert_int_eq(picl__srp_client_key(srp, K, 32), PICL_OK);
    ck_assert_int_eq(picl__ksc_auth_finish(c, st.srp_token, A, M, K, auth), PICL_OK);
    picl__srp_client_free(srp);
    picl__ksc_free(c);
}

void tuks_session(const tuks_srv *t, const char *email, const char *pw, uint8_t kft[32], uint8_t session[32])
{
    picl_ks_client *c = NULL;
    uint8_t auth[32];
    char uid[33];
    int verified = 0;
    tuks_auth_token(t, email, pw, auth);
    ck_assert_int_eq(picl__ksc_new(&c, t->base), PICL_OK);
    ck_assert_int_eq(picl__ksc_session_create(c, auth, kft, session, uid, &verified), PICL_OK);
    picl__ksc_free(c);
}

long long tuks_srp_count(const tuks_srv *t, const char *where)
{
    if (!t->dburl[0]) {
        long long n = ks_db_test_srp_count(t->ks->db, where);
        ck_assert_int_ge(n, 0);
        return n;
    }
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM srp_sessions %s", where);
    return tuks_db_int(t, sql);
}

long long tuks_db_int(const tuks_srv *t, const char *sql)
{
    if (t->dburl[0]) {
        char out[64];
        ck_assert_msg(tupg_query1(t->dburl, sql, out, sizeof out) == 0, "%s failed", sql);
        return strtoll(out, NULL, 10);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/keyserver.db", t->dir);
    sqlite3 *db;
    sqlite3_stmt *q;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    long long n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}
