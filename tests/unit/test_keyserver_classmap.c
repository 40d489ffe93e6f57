/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_classmap.c -- the key epoch and the class map anchor of
 * keyserver.md section 9 (GET/POST /v1/account/classmap) over HTTP, and the
 * schema migration that brings them to an existing database. */
#include "testutil.h"
#include "testutil_ks.h"
#include "testutil_pg.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "client/account.h"
#include "client/keyserver_client.h"
#include "keyserver/ks_db.h"
#include "protocol/tokens.h"

#define EMAIL "carol@example.org"
#define PW "tr0ub4dor&3"
#define PW2 "another one"

static tuks_srv srv;

static void setup(void)
{
    tu_nss_setup();
    tuks_start(&srv, NULL);
}

static void teardown(void)
{
    tuks_stop(&srv);
    tu_nss_teardown();
}

static void assert_err(tuks_resp *r, long code, int errnum)
{
    ck_assert_msg(r->status == code, "status %ld, want %ld (body %s)", r->status, code,
                  r->body ? r->body : "");
    ck_assert_int_eq(json_integer_value(json_object_get(r->json, "errno")), errnum);
    tuks_resp_free(r);
}

/* GET /v1/account/classmap: checks every field (hmac_hex NULL = null). */
static void expect_anchor(const uint8_t sess[32], long long version, const char *hmac_hex, long long epoch,
                          long long current)
{
    tuks_resp r;
    ck_assert_int_eq(
        tuks_hawk(srv.port, "GET", "/v1/account/classmap", sess, PICL_TOKEN_SESSION, NULL, 0, NULL, NULL, &r),
        200);
    ck_assert_int_eq(json_object_size(r.json), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "version")), version);
    if (hmac_hex)
        ck_assert_str_eq(json_string_value(json_object_get(r.json, "hmac")), hmac_hex);
    else
        ck_assert(json_is_null(json_object_get(r.json, "hmac")));
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "epoch")), epoch);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "currentEpoch")), current);
    tuks_resp_free(&r);
}

/* POST /v1/account/classmap {version, hmac = 32 bytes of `fill`}: status. */
static long put_anchor(const uint8_t sess[32], long long version, int fill, tuks_resp *r)
{
    char body[160];
    char h[65];
    for (int i = 0; i < 32; i++)
        snprintf(h + 2 * i, 3, "%02x", fill);
    snprintf(body, sizeof body, "{\"version\":%lld,\"hmac\":\"%s\"}", version, h);
    return tuks_hawk(srv.port, "POST", "/v1/account/classmap", sess, PICL_TOKEN_SESSION, body, 0, NULL, NULL,
                     r);
}

static void put_ok(const uint8_t sess[32], long long version, int fill)
{
    tuks_resp r;
    ck_assert_int_eq(put_anchor(sess, version, fill, &r), 200);
    ck_assert_str_eq(r.body, "{}");
    tuks_resp_free(&r);
}

static const char *hex_of(int fill)
{
    static char h[65];
    for (int i = 0; i < 32; i++)
        snprintf(h + 2 * i, 3, "%02x", fill);
    return h;
}

/* Forgotten password with a fresh wrapKb (kB changes), through the client. */
static void forgot_reset(const char *new_pw)
{
    picl_ks_client *c;
    uint8_t ft[32];
    char code[32];
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    ck_assert_int_eq(picl__account_forgot_start(c, EMAIL, strlen(EMAIL), ft), PICL_OK);
    ck_assert(tuks_take_mail(&srv, EMAIL, "X-Recovery-Code", code, sizeof code));
    ck_assert_int_eq(
        picl__account_forgot_finish(c, ft, code, EMAIL, strlen(EMAIL), new_pw, strlen(new_pw), tuks_params()),
        PICL_OK);
    picl__ksc_free(c);
}

START_TEST(anchor_register_and_compare)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    tuks_resp r;
    /* none yet: version 0, hmac null, epoch 0; the account is in epoch 1 */
    expect_anchor(sess, 0, NULL, 0, 1);

    put_ok(sess, 1, 0xa1);
    expect_anchor(sess, 1, hex_of(0xa1), 1, 1);
    put_ok(sess, 1, 0xa1); /* the same map again: fine, nothing changes */
    expect_anchor(sess, 1, hex_of(0xa1), 1, 1);

    /* the same version with another hmac, or an older version: stale */
    put_anchor(sess, 1, 0xb2, &r);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "error")), "Conflict");
    assert_err(&r, 409, 123);
    put_ok(sess, 5, 0xc3);
    put_anchor(sess, 4, 0xd4, &r);
    assert_err(&r, 409, 123);
    put_anchor(sess, 1, 0xa1, &r);
    assert_err(&r, 409, 123);
    expect_anchor(sess, 5, hex_of(0xc3), 1, 1);

    /* malformed: version 0, negative, not an integer, hmac short or missing */
    put_anchor(sess, 0, 0xe5, &r);
    assert_err(&r, 400, 107);
    put_anchor(sess, -3, 0xe5, &r);
    assert_err(&r, 400, 107);
    const char *bad[] = {"{\"version\":\"6\",\"hmac\":\"00\"}", "{\"version\":6.5,\"hmac\":\"00\"}",
                         "{\"version\":6,\"hmac\":\"abcd\"}", "{\"version\":6,\"hmac\":7}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tuks_hawk(srv.port, "POST", "/v1/account/classmap", sess, PICL_TOKEN_SESSION, bad[i], 0, NULL, NULL,
                  &r);
        assert_err(&r, 400, 107);
    }
    tuks_hawk(srv.port, "POST", "/v1/account/classmap", sess, PICL_TOKEN_SESSION, "{\"version\":6}", 0, NULL,
              NULL, &r);
    assert_err(&r, 400, 108);
    /* only a sessionToken: the keyFetchToken is refused */
    tuks_hawk(srv.port, "GET", "/v1/account/classmap", kft, PICL_TOKEN_KEY_FETCH, NULL, 0, NULL, NULL, &r);
    assert_err(&r, 401, 110);
    tuks_request(srv.port, "GET", "/v1/account/classmap", NULL, NULL, 0, &r);
    assert_err(&r, 401, 109);
    expect_anchor(sess, 5, hex_of(0xc3), 1, 1); /* nothing above changed it */
}
END_TEST

START_TEST(anchor_needs_verified_account)
{
    tuks_account(&srv, EMAIL, PW, 0, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    tuks_resp r;
    put_anchor(sess, 1, 0x11, &r);
    assert_err(&r, 400, 104);
    expect_anchor(sess, 0, NULL, 0, 1);
}
END_TEST

/* Concurrent registrations of the same version: exactly one wins. */
typedef struct racer {
    const uint8_t *sess;
    int fill;
    long status;
} racer;

static void *race(void *p)
{
    racer *x = p;
    tuks_resp r;
    x->status = put_anchor(x->sess, 2, x->fill, &r);
    tuks_resp_free(&r);
    return NULL;
}

START_TEST(anchor_concurrent_registrations)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    put_ok(sess, 1, 0x01);
    enum { N = 6 };
    pthread_t th[N];
    racer x[N];
    for (int i = 0; i < N; i++) {
        x[i] = (racer){sess, 0x40 + i, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, race, &x[i]), 0);
    }
    int wins = 0, winner = -1;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(x[i].status == 200 || x[i].status == 409, "status %ld", x[i].status);
        if (x[i].status == 200) {
            wins++;
            winner = x[i].fill;
        }
    }
    ck_assert_int_eq(wins, 1);
    expect_anchor(sess, 2, hex_of(winner), 1, 1);
}
END_TEST

START_TEST(epoch_follows_kb_and_reset_keeps_anchor)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    put_ok(sess, 3, 0x33);

    /* forgotten password: kB changes, the epoch goes up, the anchor stays
     * (registered in epoch 1) */
    forgot_reset(PW2);
    tuks_resp r;
    tuks_hawk(srv.port, "GET", "/v1/account/classmap", sess, PICL_TOKEN_SESSION, NULL, 0, NULL, NULL, &r);
    assert_err(&r, 401, 110); /* the reset revoked the old session */
    tuks_session(&srv, EMAIL, PW2, kft, sess);
    expect_anchor(sess, 3, hex_of(0x33), 1, 2);

    /* the first device after the reset registers a rebuilt map: epoch 2 */
    put_ok(sess, 4, 0x44);
    expect_anchor(sess, 4, hex_of(0x44), 2, 2);

    /* a password change keeps kB: the epoch does not move */
    picl_ks_client *c;
    picl_account a;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    ck_assert_int_eq(picl__account_change_password(c, EMAIL, strlen(EMAIL), PW2, strlen(PW2), PW, strlen(PW),
                                                   tuks_params(), tuks_params(), &a),
                     PICL_OK);
    ck_assert(a.have_keys);
    picl__account_wipe(&a);
    picl__ksc_free(c);
    tuks_session(&srv, EMAIL, PW, kft, sess);
    expect_anchor(sess, 4, hex_of(0x44), 2, 2);
}
END_TEST

START_TEST(destroy_removes_anchor)
{
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    uint8_t kft[32], sess[32], auth[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    put_ok(sess, 9, 0x99);
    tuks_auth_token(&srv, EMAIL, PW, auth);
    tuks_resp r;
    ck_assert_int_eq(
        tuks_hawk(srv.port, "POST", "/v1/account/destroy", auth, PICL_TOKEN_AUTH, "{}", 0, NULL, NULL, &r),
        200);
    tuks_resp_free(&r);
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    tuks_session(&srv, EMAIL, PW, kft, sess);
    expect_anchor(sess, 0, NULL, 0, 1);
    put_ok(sess, 1, 0x01); /* a new account starts over at version 1 */
}
END_TEST

/* A database written by the previous keyserver (schema 1) is migrated:
 * its account keeps working, in epoch 1 with no anchor. */
START_TEST(schema_v1_migrated)
{
    if (tupg_enabled()) /* SQLite's migration: its pass covers it */
        return;
    /* make an account, then turn the database back into what schema 1 was */
    tuks_account(&srv, EMAIL, PW, 1, NULL);
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s", srv.dir);
    srv.dir[0] = 0; /* keep the directory */
    tuks_stop(&srv);
    snprintf(path, sizeof path, "%s/keyserver.db", dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    const char *down = "DROP INDEX tokens_expires; DROP INDEX accounts_unverified;"
                       "ALTER TABLE accounts DROP COLUMN epoch; ALTER TABLE accounts DROP COLUMN cm_version;"
                       "ALTER TABLE accounts DROP COLUMN cm_hmac; ALTER TABLE accounts DROP COLUMN cm_epoch;"
                       "ALTER TABLE tokens DROP COLUMN mailbox;"
                       "UPDATE meta SET value = 1 WHERE key = 'schema_version';";
    char *err = NULL;
    int rc = sqlite3_exec(db, down, NULL, NULL, &err);
    ck_assert_msg(rc == SQLITE_OK, "%s", err ? err : "");
    sqlite3_close(db);

    ks_config cfg = {.data_dir = dir, .listen = "127.0.0.1:0", .threads = 2};
    ck_assert_int_eq(ks_server_new(&srv.ks, &cfg), PICL_OK);
    ck_assert_int_eq(ks_server_start(srv.ks), PICL_OK);
    srv.port = ks_server_port(srv.ks);
    snprintf(srv.base, sizeof srv.base, "http://127.0.0.1:%u", srv.port);
    snprintf(srv.dir, sizeof srv.dir, "%s", dir);

    uint8_t kft[32], sess[32];
    tuks_session(&srv, EMAIL, PW, kft, sess);
    expect_anchor(sess, 0, NULL, 0, 1);
    put_ok(sess, 1, 0x5a);
    expect_anchor(sess, 1, hex_of(0x5a), 1, 1);

    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    ck_assert_int_eq(
        sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema_version'", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), KS_SCHEMA_VERSION);
    sqlite3_finalize(q);
    sqlite3_close(db);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_classmap");
    TCase *tc = tcase_create("classmap");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, anchor_register_and_compare);
    tcase_add_test(tc, anchor_needs_verified_account);
    tcase_add_test(tc, anchor_concurrent_registrations);
    tcase_add_test(tc, epoch_follows_kb_and_reset_keeps_anchor);
    tcase_add_test(tc, destroy_removes_anchor);
    tcase_add_test(tc, schema_v1_migrated);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
