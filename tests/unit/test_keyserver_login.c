/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_login.c -- the login's SRP session (schema v6): auth/finish
 * from the stored B gives the picl_srp_era.txt bundle byte for byte, as a
 * session stored without B (the old path, g^b again) does; spent, replayed,
 * unknown, expired and throttled sessions are refused with their exact
 * answers; a schema 5 session table is migrated (PostgreSQL: with its
 * pending login; SQLite keeps sessions in memory and empties the file's);
 * an account's reset and deletion end its pending logins. */
#include "testutil.h"
#include "testutil_ks.h"
#include "testutil_pg.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/util.h"
#include "keyserver/ks_db.h"
#include "keyserver/ks_internal.h"
#include "protocol/tokens.h"

static tu_vecfile *vf;
static tuks_srv srv;
static int64_t fake_now;

static int is_hex(const char *s) { return *s && strspn(s, "0123456789abcdef") == strlen(s); }

/* The n-th (0-based) pure-hex value of key in file order. */
static const char *nth(const char *key, int n)
{
    const tu_case *c = &vf->cases[0];
    for (size_t j = 0; j < c->n; j++)
        if (!strcmp(c->kv[j].key, key) && is_hex(c->kv[j].value) && n-- == 0)
            return c->kv[j].value;
    ck_abort_msg("vector %s missing", key);
    return NULL;
}

/* The vector's b and authToken; everything else from NSS. */
static picl_status hook(void *ctx, const char *what, uint8_t *out, size_t len)
{
    const char *key = !strcmp(what, "b") && len == 256          ? "private b (hex)"
                      : !strcmp(what, "authToken") && len == 32 ? "authToken"
                                                                : NULL;
    if (!key)
        return PICL_ERROR_NOT_FOUND;
    size_t n = 0;
    uint8_t *v = tu_unhex(nth(key, 0), &n);
    ck_assert_uint_eq(n, len);
    memcpy(out, v, len);
    free(v);
    return PICL_OK;
}

static int64_t clock_hook(void *ctx) { return fake_now; }

static ks_config config(void)
{
    ks_config c = {.random = hook, .now = clock_hook, .login_max = 2};
    return c;
}

static long post(const char *path, const char *body, tuks_resp *r)
{
    const char *h[] = {"Content-Type: application/json", NULL};
    return tuks_request(srv.port, "POST", path, h, body, strlen(body), r);
}

static void assert_err(tuks_resp *r, long code, int errnum)
{
    ck_assert_int_eq(r->status, code);
    ck_assert_int_eq(json_integer_value(json_object_get(r->json, "errno")), errnum);
    tuks_resp_free(r);
}

/* The vector's account, verified. */
static void make_account(void)
{
    tuks_resp r;
    char body[4096];
    snprintf(body, sizeof body,
             "{\"email\":\"%s\",\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\",\"verifier\":\"%s\","
             "\"salt\":\"%s\"},\"passwordStretching\":{\"type\":\"PBKDF2/scrypt/PBKDF2/v1\","
             "\"PBKDF2_rounds_1\":20000,\"scrypt_N\":65536,\"scrypt_r\":8,\"scrypt_p\":1,"
             "\"PBKDF2_rounds_2\":20000,\"salt\":\"%s\"}}",
             nth("email", 0), nth("srpVerifier", 0), nth("srpSalt (normally random)", 0),
             nth("mainSalt (normally random)", 0));
    ck_assert_int_eq(post("/v1/account/create", body, &r), 200);
    tuks_resp_free(&r);
}

static void setup(void)
{
    tu_nss_setup();
    vf = tu_vec_load("picl_srp_era.txt");
    fake_now = time(NULL);
    ks_config c = config();
    tuks_start(&srv, &c);
    make_account();
}

static void teardown(void)
{
    tuks_stop(&srv);
    tu_vec_free(vf);
    tu_nss_teardown();
}

/* auth/start: the srpToken (65 bytes), after checking B is the vector's. */
static void start(char tok[65])
{
    tuks_resp r;
    char body[512];
    snprintf(body, sizeof body, "{\"email\":\"%s\"}", nth("email", 0));
    ck_assert_int_eq(post("/v1/auth/start", body, &r), 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r.json, "srp"), "B")),
                     nth("transmitted srpB", 0));
    snprintf(tok, 65, "%s", json_string_value(json_object_get(r.json, "srpToken")));
    tuks_resp_free(&r);
}

/* auth/finish with the vector's A and M1 (or a wrong M1): the status; the
 * answer stays in *r. */
static long finish(const char *tok, int wrong, tuks_resp *r)
{
    char body[2048];
    char m[65];
    snprintf(m, sizeof m, "%s", nth("M1", 0));
    if (wrong)
        m[0] = m[0] == '0' ? '1' : '0';
    snprintf(body, sizeof body, "{\"srpToken\":\"%s\",\"A\":\"%s\",\"M\":\"%s\"}", tok,
             nth("transmitted srpA", 0), m);
    return post("/v1/auth/finish", body, r);
}

static void db_exec(const char *sql);

/* A right finish: 200 and the vector's bundle (authToken under srpK). */
static void finish_ok(const char *tok)
{
    tuks_resp r;
    long st_ = finish(tok, 0, &r);
    ck_assert_msg(st_ == 200, "finish: %ld %s", st_, r.body ? r.body : "");
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "bundle")), nth("response", 0));
    tuks_resp_free(&r);
    /* the forced authToken is the same every time: the next login may
     * store it again */
    db_exec("DELETE FROM tokens");
}

/* One SQL statement on the server's database (SQLite file or PostgreSQL). */
static void db_exec(const char *sql)
{
    if (srv.dburl[0]) {
        ck_assert_msg(tupg_exec(srv.dburl, sql) == 0, "%s failed", sql);
        return;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/keyserver.db", srv.dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, err ? err : "");
    sqlite3_close(db);
}

/* The server again on the same data directory and database. */
static void restart_same_data(void)
{
    ks_server_free(srv.ks);
    srv.ks = NULL;
    ks_config c = config();
    c.listen = "127.0.0.1:0";
    c.data_dir = srv.dir;
    c.database = srv.dburl[0] ? srv.dburl : NULL;
    c.threads = 4;
    ck_assert_int_eq(ks_server_new(&srv.ks, &c), PICL_OK);
    ck_assert_int_eq(ks_server_start(srv.ks), PICL_OK);
    srv.port = ks_server_port(srv.ks);
    snprintf(srv.base, sizeof srv.base, "http://127.0.0.1:%u", srv.port);
}

START_TEST(finish_from_stored_B_matches_old_path)
{
    char tok[65];
    /* the new path: the session keeps B */
    start(tok);
    ck_assert_int_eq(tuks_srp_count(&srv, "WHERE b_public IS NOT NULL"), 1);
    if (!srv.dburl[0]) {
        /* SQLite: the session (and its secret b) is in the server's memory,
         * never in the file */
        ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM srp_sessions"), 0);
    }
    finish_ok(tok);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 0);
    tuks_resp r;
    start(tok);
    finish(tok, 1, &r);
    assert_err(&r, 400, 103);
    if (!srv.dburl[0])
        return; /* a session without B is left only in a PostgreSQL table */
    /* the old path: a session without B (stored before schema 6) computes
     * g^b again -- the same bundle */
    start(tok);
    db_exec("UPDATE srp_sessions SET b_public = NULL");
    ck_assert_int_eq(tuks_srp_count(&srv, "WHERE b_public IS NULL"), 1);
    finish_ok(tok);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 0);
    /* a wrong proof is refused on both paths alike */
    start(tok);
    db_exec("UPDATE srp_sessions SET b_public = NULL");
    finish(tok, 1, &r);
    assert_err(&r, 400, 103);
}
END_TEST

START_TEST(spent_replayed_expired_and_throttled_sessions_refused)
{
    tuks_resp r;
    char tok[65], held[65];
    /* a successful login's srpToken is spent; it left one authToken (the
     * forced one: deleted again for the next login) */
    const char *auth_tokens = "SELECT count(*) FROM tokens WHERE type = 0";
    ck_assert_int_eq(tuks_db_int(&srv, auth_tokens), 0);
    start(tok);
    ck_assert_int_eq(finish(tok, 0, &r), 200);
    tuks_resp_free(&r);
    ck_assert_int_eq(tuks_db_int(&srv, auth_tokens), 1);
    db_exec("DELETE FROM tokens");
    finish(tok, 0, &r);
    assert_err(&r, 401, 110);
    /* a failed one's too, even with the right proof afterwards; the
     * authToken its take stored is deleted again */
    start(tok);
    finish(tok, 1, &r);
    assert_err(&r, 400, 103);
    ck_assert_int_eq(tuks_db_int(&srv, auth_tokens), 0);
    finish(tok, 0, &r);
    assert_err(&r, 401, 110);
    /* an unknown one */
    finish("0000000000000000000000000000000000000000000000000000000000000005", 0, &r);
    assert_err(&r, 401, 110);
    /* an expired one is refused and deleted all the same */
    start(tok);
    fake_now += 61;
    finish(tok, 0, &r);
    assert_err(&r, 401, 110);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 0);
    /* login_max = 2 failed proofs: one was counted above, a second now; the
     * session held from before is then throttled (429/114 with Retry-After)
     * and spent: its replay is 401/110 */
    start(held);
    start(tok);
    finish(tok, 1, &r);
    assert_err(&r, 400, 103);
    finish(held, 0, &r);
    ck_assert_int_gt(strtol(r.retry_after, NULL, 10), 0);
    assert_err(&r, 429, 114);
    ck_assert_int_eq(tuks_db_int(&srv, auth_tokens), 0);
    finish(held, 0, &r);
    assert_err(&r, 401, 110);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 0);
    /* the window passes: the right password logs in again (and a success
     * is not a failure: it is refunded) */
    fake_now += 3600;
    for (int i = 0; i < 3; i++) {
        start(tok);
        finish_ok(tok);
    }
}
END_TEST

START_TEST(schema5_session_table_migrated)
{
    /* a login left pending in a schema 5 database: its session has no B.
     * SQLite keeps sessions in the server's memory: the pending login is
     * gone with the stop, and a session an older version left in the
     * file is planted (and must go at the next open) */
    char tok[65];
    start(tok);
    ks_server_free(srv.ks);
    srv.ks = NULL;
    if (srv.dburl[0]) {
        db_exec("ALTER TABLE srp_sessions DROP COLUMN b_public;"
                "UPDATE meta SET value = 5 WHERE key = 'schema_version'");
    } else {
        db_exec("CREATE TABLE srp_old (key BLOB PRIMARY KEY,"
                " account INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,"
                " b BLOB NOT NULL, expires INTEGER NOT NULL);"
                "INSERT INTO srp_old SELECT key, account, b, expires FROM srp_sessions;"
                "INSERT INTO srp_old VALUES (randomblob(32), (SELECT min(id) FROM accounts),"
                " randomblob(32), 4000000000);"
                "DROP TABLE srp_sessions; ALTER TABLE srp_old RENAME TO srp_sessions;"
                "CREATE INDEX srp_account ON srp_sessions(account);"
                "UPDATE meta SET value = 5 WHERE key = 'schema_version';");
        ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM sqlite_master WHERE name = 'srp_sessions'"
                                           " AND sql LIKE '%WITHOUT ROWID%'"),
                         0);
        ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM srp_sessions"), 1);
    }
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT value FROM meta WHERE key = 'schema_version'"), 5);
    restart_same_data();
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT value FROM meta WHERE key = 'schema_version'"), 6);
    ck_assert_int_eq(KS_SCHEMA_VERSION, 6);
    if (srv.dburl[0]) {
        ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM information_schema.columns WHERE"
                                           " table_schema = current_schema() AND"
                                           " table_name = 'srp_sessions' AND column_name = 'b_public'"),
                         1);
    } else {
        ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM pragma_table_info('srp_sessions')"
                                           " WHERE name = 'b_public'"),
                         1);
        ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM sqlite_master WHERE name = 'srp_sessions'"
                                           " AND sql LIKE '%WITHOUT ROWID%'"),
                         1);
        ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM sqlite_master WHERE name = 'srp_account'"),
                         0);
    }
    tuks_resp r;
    if (srv.dburl[0]) {
        /* the pending session survived the migration without B: the old path */
        ck_assert_int_eq(tuks_srp_count(&srv, "WHERE b_public IS NULL"), 1);
        finish_ok(tok);
    } else {
        /* the file's table is kept (a downgrade finds it) but emptied; the
         * pending login starts again */
        ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM srp_sessions"), 0);
        ck_assert_int_eq(tuks_srp_count(&srv, ""), 0);
    }
    finish(tok, 0, &r);
    assert_err(&r, 401, 110);
    /* and a new login keeps B */
    start(tok);
    ck_assert_int_eq(tuks_srp_count(&srv, "WHERE b_public IS NOT NULL"), 1);
    finish_ok(tok);
    /* a database of a newer schema stays refused */
    ks_server_free(srv.ks);
    srv.ks = NULL;
    db_exec("UPDATE meta SET value = 7 WHERE key = 'schema_version'");
    ks_config c = config();
    c.listen = "127.0.0.1:0";
    c.data_dir = srv.dir;
    c.database = srv.dburl[0] ? srv.dburl : NULL;
    ck_assert_int_eq(ks_server_new(&srv.ks, &c), PICL_ERROR_DATABASE);
    ck_assert_ptr_null(srv.ks);
}
END_TEST

/* ks_db_srp_take's limits: one key of this test's, counted. */
static void one_limit(void *ctx, int64_t account, ks_rate *lim)
{
    ks_rate_set(&lim[0], *(const int64_t *)ctx, 60, 1, "test:%lld", (long long)account);
}

/* The login's database calls directly: exact values back, the exact
 * errors, and the connection left at synchronous=FULL (SQLite) after each
 * of the writes that commit without waiting for the disk. */
START_TEST(login_writes_exact_and_leave_full_sync)
{
    ks_db *db = srv.ks->db;
    int full = srv.dburl[0] ? -1 : 2;
    ck_assert_int_eq(ks_db_test_sync_level(db), full);
    size_t elen = 0;
    uint8_t *email = tu_unhex(nth("email", 0), &elen);
    ks_account a;
    ck_assert_int_eq(ks_db_account_by_email(db, (const char *)email, elen, &a), PICL_OK);
    uint8_t key[32], b[32], B[KS_VERIFIER_BYTES];
    memset(key, 0x4b, sizeof key);
    memset(b, 0x11, sizeof b);
    for (size_t i = 0; i < sizeof B; i++)
        B[i] = (uint8_t)i;
    int64_t now = fake_now, max = 5;
    ck_assert_int_eq(ks_db_srp_put(db, key, a.id, b, 0, B, now, now + 60), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(ks_db_srp_put(db, key, a.id, b, 257, B, now, now + 60), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(ks_db_srp_put(db, key, a.id, b, sizeof b, NULL, now, now + 60),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(ks_db_srp_put(db, key, a.id, b, sizeof b, B, now, now + 60), PICL_OK);
    ck_assert_int_eq(ks_db_test_sync_level(db), full);

    ks_srp_login *l = calloc(1, sizeof *l);
    ck_assert_ptr_nonnull(l);
    l->limits = one_limit;
    l->ctx = &max;
    l->n = 5;
    ck_assert_int_eq(ks_db_srp_take(db, key, now, l), PICL_ERROR_INVALID_ARGUMENT);
    /* the take stores the login's authToken in its transaction, for the
     * session's account */
    ks_token t, got;
    memset(&t, 0, sizeof t);
    memset(t.id, 0x3c, sizeof t.id);
    memset(t.hmac_key, 0x3d, sizeof t.hmac_key);
    memset(t.request_key, 0x3e, sizeof t.request_key);
    t.type = PICL_TOKEN_AUTH;
    t.account = 0;
    t.created = now;
    t.expires = now + 300;
    ck_assert_int_eq(ks_db_token_get(db, t.id, PICL_TOKEN_AUTH, now, &got), PICL_ERROR_NOT_FOUND);
    l->n = 1;
    l->issue = &t;
    ck_assert_int_eq(ks_db_srp_take(db, key, now, l), PICL_OK);
    ck_assert_int_eq(ks_db_test_sync_level(db), full);
    ck_assert_int_eq(l->ok, 1);
    ck_assert_int_eq(l->issued, 1);
    ck_assert_uint_eq(l->blen, sizeof b);
    ck_assert_mem_eq(l->b, b, sizeof b);
    ck_assert_uint_eq(l->Blen, sizeof B);
    ck_assert_mem_eq(l->B, B, sizeof B);
    ck_assert_int_eq(l->account.id, a.id);
    ck_assert_mem_eq(l->account.verifier, a.verifier, KS_VERIFIER_BYTES);
    ck_assert_int_gt(l->lim[0].event, 0);
    ks_rate counted = l->lim[0];
    ck_assert_int_eq(t.account, a.id);
    ck_assert_int_eq(ks_db_token_get(db, t.id, PICL_TOKEN_AUTH, now, &got), PICL_OK);
    ck_assert_int_eq(got.account, a.id);
    ck_assert_mem_eq(got.hmac_key, t.hmac_key, 32);
    ck_assert_mem_eq(got.request_key, t.request_key, 32);
    ck_assert_int_eq(got.expires, now + 300);

    /* taken once: the second take is TOKEN with nothing left in l, and
     * nothing stored */
    memset(l->b, 0x77, sizeof l->b);
    memset(t.id, 0x3f, sizeof t.id);
    ck_assert_int_eq(ks_db_srp_take(db, key, now, l), PICL_ERROR_TOKEN);
    ck_assert_uint_eq(l->blen, 0);
    ck_assert_uint_eq(l->Blen, 0);
    ck_assert_int_eq(l->ok, 0);
    ck_assert_int_eq(l->issued, 0);
    ck_assert_int_eq(l->account.id, 0);
    for (size_t i = 0; i < sizeof l->b; i++)
        ck_assert_uint_eq(l->b[i], 0);
    ck_assert_int_eq(ks_db_token_get(db, t.id, PICL_TOKEN_AUTH, now, &got), PICL_ERROR_NOT_FOUND);

    /* the refund of a right proof: a limit of 1 on that key then passes */
    ck_assert_int_eq(ks_db_rate_refund(db, &counted, 1), PICL_OK);
    ks_rate one;
    ks_rate_set(&one, 1, 60, 0, "test:%lld", (long long)a.id);
    int ok = 0;
    int64_t retry = 0;
    ck_assert_int_eq(ks_db_rate_take(db, &one, 1, now, &ok, &retry), PICL_OK);
    ck_assert_int_eq(ok, 1);

    /* a token whose id is taken: DATABASE, the whole take rolled back (the
     * session is still there, no event counted) */
    memset(t.id, 0x3c, sizeof t.id);
    ck_assert_int_eq(ks_db_srp_put(db, key, a.id, b, sizeof b, B, now, now + 60), PICL_OK);
    ck_assert_int_eq(ks_db_srp_take(db, key, now, l), PICL_ERROR_DATABASE);
    ck_assert_int_eq(l->issued, 0);
    ck_assert_int_eq(ks_db_test_sync_level(db), full);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 1);
    ck_assert_int_eq(ks_db_rate_take(db, &one, 1, now, &ok, &retry), PICL_OK);
    ck_assert_int_eq(ok, 1);
    /* throttled (a limit of 0): the session is spent, no token stored */
    memset(t.id, 0x40, sizeof t.id);
    max = 0;
    ck_assert_int_eq(ks_db_srp_take(db, key, now, l), PICL_OK);
    ck_assert_int_eq(l->ok, 0);
    ck_assert_int_eq(l->issued, 0);
    ck_assert_int_eq(ks_db_token_get(db, t.id, PICL_TOKEN_AUTH, now, &got), PICL_ERROR_NOT_FOUND);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 0);

    /* an expired session: TOKEN, and gone, no token stored */
    max = 5;
    ck_assert_int_eq(ks_db_srp_put(db, key, a.id, b, sizeof b, B, now, now), PICL_OK);
    ck_assert_int_eq(ks_db_srp_take(db, key, now + 1, l), PICL_ERROR_TOKEN);
    ck_assert_int_eq(l->issued, 0);
    ck_assert_int_eq(ks_db_token_get(db, t.id, PICL_TOKEN_AUTH, now, &got), PICL_ERROR_NOT_FOUND);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 0);
    ck_assert_int_eq(ks_db_test_sync_level(db), full);
    picl__zfree(l, sizeof *l);
    free(email);
}
END_TEST

/* A pending login ends with its account's reset and with its deletion:
 * the session is gone (SQLite keeps it in memory, outside the file's
 * foreign keys), and taking it is TOKEN; another account's stays. */
START_TEST(pending_sessions_end_with_reset_and_delete)
{
    ks_db *db = srv.ks->db;
    size_t elen = 0;
    uint8_t *email = tu_unhex(nth("email", 0), &elen);
    ks_account a;
    ck_assert_int_eq(ks_db_account_by_email(db, (const char *)email, elen, &a), PICL_OK);
    ks_account other = a;
    memcpy(other.email, "other@example.org", 18);
    other.email_len = 17;
    memset(other.uid, 0x6f, sizeof other.uid);
    ck_assert_int_eq(ks_db_account_create(db, &other), PICL_OK);
    ck_assert_int_ne(other.id, a.id);
    uint8_t k1[32], k2[32], k3[32], b[32], B[KS_VERIFIER_BYTES];
    memset(k1, 1, sizeof k1);
    memset(k2, 2, sizeof k2);
    memset(k3, 3, sizeof k3);
    memset(b, 0x11, sizeof b);
    memset(B, 0x22, sizeof B);
    int64_t now = fake_now;
    ck_assert_int_eq(ks_db_srp_put(db, k1, a.id, b, sizeof b, B, now, now + 60), PICL_OK);
    ck_assert_int_eq(ks_db_srp_put(db, k3, other.id, b, sizeof b, B, now, now + 60), PICL_OK);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 2);
    /* a password reset ends a's pending login */
    uint8_t fresh[64];
    memset(fresh, 0x5a, sizeof fresh);
    ks_reset r = {.verifier = a.verifier,
                  .srp_salt = a.srp_salt,
                  .main_salt = a.main_salt,
                  .params = &a.params,
                  .wrap_kb = a.wrap_kb,
                  .fresh_keys = fresh};
    ck_assert_int_eq(ks_db_account_reset(db, a.id, &r), PICL_OK);
    char where[64];
    snprintf(where, sizeof where, "WHERE account = %lld", (long long)a.id);
    ck_assert_int_eq(tuks_srp_count(&srv, where), 0);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 1);
    ks_srp_login *l = calloc(1, sizeof *l);
    ck_assert_ptr_nonnull(l);
    int64_t max = 5;
    l->limits = one_limit;
    l->ctx = &max;
    l->n = 1;
    ck_assert_int_eq(ks_db_srp_take(db, k1, now, l), PICL_ERROR_TOKEN);
    /* and deleting the account ends a new one */
    ck_assert_int_eq(ks_db_srp_put(db, k2, a.id, b, sizeof b, B, now, now + 60), PICL_OK);
    ck_assert_int_eq(tuks_srp_count(&srv, where), 1);
    ck_assert_int_eq(ks_db_account_delete(db, a.id), PICL_OK);
    ck_assert_int_eq(tuks_srp_count(&srv, where), 0);
    ck_assert_int_eq(ks_db_srp_take(db, k2, now, l), PICL_ERROR_TOKEN);
    /* the other account's login is untouched and still taken once */
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 1);
    ck_assert_int_eq(ks_db_srp_take(db, k3, now, l), PICL_OK);
    ck_assert_int_eq(l->ok, 1);
    ck_assert_int_eq(l->account.id, other.id);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 0);
    picl__zfree(l, sizeof *l);
    free(email);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_login");
    TCase *tc = tcase_create("login");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, finish_from_stored_B_matches_old_path);
    tcase_add_test(tc, spent_replayed_expired_and_throttled_sessions_refused);
    tcase_add_test(tc, schema5_session_table_migrated);
    tcase_add_test(tc, login_writes_exact_and_leave_full_sync);
    tcase_add_test(tc, pending_sessions_end_with_reset_and_delete);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
