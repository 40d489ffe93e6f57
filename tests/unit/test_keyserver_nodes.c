/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_nodes.c -- storage nodes in the keyserver (storage.md 6):
 * least-loaded assignment, per-node secrets, a password reset keeps the
 * node, drain (new node, rotated secret: the old node answers 401), purge
 * on the node that holds the data, the admin commands, and the PostgreSQL
 * backend's failures (unreachable, never half-migrated).  Runs on SQLite
 * and, with PICL_TEST_BACKEND=postgresql, on PostgreSQL. */
#include "testutil.h"
#include "testutil_ks.h"
#include "testutil_pg.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/account.h"
#include "client/keyserver_client.h"
#include "crypto/nss.h"
#include "keyserver/ks_db.h"
#include "protocol/hawk.h"
#include "protocol/tokenlib.h"
#include "protocol/tokens.h"
#include "storage/storage.h"

static const uint8_t SECRET[] = "nodes-keyserver-master-secret-0123456789";
#define PW "correct horse"
#define PW2 "battery staple"

static tuks_srv srv;
static int64_t clock_offset; /* the keyserver's clock = real + offset */
static char tmp[64];

typedef struct node {
    storage_server *srv;
    char dir[128];
    char listen[64];
    char url[96];
} node;

static node na, nb;

static int64_t fake_now(void *ctx) { return (int64_t)time(NULL) + clock_offset; }

static void setup(void)
{
    clock_offset = 0;
    memset(&na, 0, sizeof na);
    memset(&nb, 0, sizeof nb);
    snprintf(tmp, sizeof tmp, "/tmp/picl-ksnodes-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    ks_config c;
    memset(&c, 0, sizeof c);
    c.secret = SECRET;
    c.secret_len = sizeof SECRET - 1;
    c.now = fake_now;
    c.purge_grace_s = 100;
    c.purge_every_s = -1;
    tuks_start(&srv, &c);
}

static void teardown(void)
{
    tuks_stop(&srv);
    storage_server_free(na.srv);
    storage_server_free(nb.srv);
    tu_rmtree(tmp);
}

/* A storage node on a fixed port, signed with secret (text, 64 hex). */
static void node_run(node *n, const char *name, const char *secret)
{
    if (!n->dir[0]) {
        snprintf(n->dir, sizeof n->dir, "%s/%s", tmp, name);
        ck_assert_int_eq(mkdir(n->dir, 0700), 0);
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
    sc.threads = 2;
    ck_assert_int_eq(storage_server_new(&n->srv, &sc), PICL_OK);
    ck_assert_int_eq(storage_server_start(n->srv), PICL_OK);
    snprintf(n->listen, sizeof n->listen, "127.0.0.1:%u", storage_server_port(n->srv));
    snprintf(n->url, sizeof n->url, "%s", storage_server_node(n->srv));
}

/* The node's current secret from the keyserver. */
static void secret_of(const char *url, char hex[65])
{
    ck_assert_int_eq(ks_server_node_secret(srv.ks, url, hex), PICL_OK);
    ck_assert_uint_eq(strlen(hex), 64);
}

/* A node known to the keyserver and serving with its secret. */
static void node_up(node *n, const char *name, int64_t capacity)
{
    node_run(n, name, "placeholder-secret-until-the-port-is-known-0123");
    ck_assert_int_eq(ks_server_node_add(srv.ks, n->url, capacity), PICL_OK);
    char hex[65];
    secret_of(n->url, hex);
    node_run(n, name, hex);
}

typedef struct creds {
    char id[1024];
    char key[64];
    long long uid;
    char endpoint[256];
    long status;
} creds;

/* GET /v1/storage/token with a session of email. */
static void token_for(const char *email, creds *out)
{
    uint8_t kft[32], sess[32];
    tuks_session(&srv, email, PW, kft, sess);
    tuks_resp r;
    memset(out, 0, sizeof *out);
    out->status = tuks_hawk(srv.port, "GET", "/v1/storage/token", sess, PICL_TOKEN_SESSION, NULL,
                            fake_now(NULL), NULL, NULL, &r);
    if (out->status == 200) {
        snprintf(out->id, sizeof out->id, "%s", json_string_value(json_object_get(r.json, "id")));
        snprintf(out->key, sizeof out->key, "%s", json_string_value(json_object_get(r.json, "key")));
        out->uid = json_integer_value(json_object_get(r.json, "uid"));
        snprintf(out->endpoint, sizeof out->endpoint, "%s",
                 json_string_value(json_object_get(r.json, "api_endpoint")));
    }
    tuks_resp_free(&r);
}

/* A Hawk request to the node at c's endpoint (path after /1.5/uid). */
static long node_req(const node *n, const creds *c, const char *method, const char *path, const char *body)
{
    char target[512];
    snprintf(target, sizeof target, "/1.5/%lld%s", c->uid, path);
    picl_hawk_request hr = {.method = method,
                            .resource = target,
                            .host = "127.0.0.1",
                            .port = storage_server_port(n->srv),
                            .content_type = body ? "application/json" : NULL,
                            .body = body,
                            .bodylen = body ? strlen(body) : 0};
    char *authz = NULL;
    ck_assert_int_eq(
        picl__hawk_client_header(&authz, c->id, c->key, strlen(c->key), &hr, (int64_t)time(NULL), NULL, NULL),
        PICL_OK);
    char h1[2048];
    snprintf(h1, sizeof h1, "Authorization: %s", authz);
    free(authz);
    const char *hdrs[] = {h1, "Content-Type: application/json", NULL};
    tuks_resp r;
    long st =
        tuks_request(storage_server_port(n->srv), method, target, hdrs, body, body ? strlen(body) : 0, &r);
    tuks_resp_free(&r);
    return st;
}

/* A token for uid minted directly under the node's secret (what the node
 * would accept from anyone holding that secret). */
static void mint(const node *n, const char *secret, long long uid, creds *c)
{
    picl_tokenlib_payload p;
    memset(&p, 0, sizeof p);
    p.uid = uid;
    snprintf(p.node, sizeof p.node, "%s", n->url);
    p.expires = (int64_t)time(NULL) + 600;
    snprintf(p.fxa_uid, sizeof p.fxa_uid, "test");
    char *token = NULL, *key = NULL;
    ck_assert_int_eq(picl__tokenlib_mint(&token, &key, (const uint8_t *)secret, strlen(secret), &p), PICL_OK);
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "%s", token);
    snprintf(c->key, sizeof c->key, "%s", key);
    c->uid = uid;
    free(token);
    free(key);
}

/* Does the token in c verify under secret (64 hex text)? */
static int verifies(const creds *c, const char *secret)
{
    picl_tokenlib_payload p;
    return picl__tokenlib_parse(&p, (const uint8_t *)secret, strlen(secret), c->id, strlen(c->id),
                                (int64_t)time(NULL), 0) == PICL_OK &&
           p.uid == c->uid;
}

static void expect_endpoint(const creds *c, const node *n)
{
    char want[256];
    snprintf(want, sizeof want, "%s/1.5/%lld", n->url, c->uid);
    ck_assert_str_eq(c->endpoint, want);
}

/* node_req that keeps the body (NUL-terminated) in out. */
static long node_get(const node *n, const creds *c, const char *path, char *out, size_t cap)
{
    char target[512];
    snprintf(target, sizeof target, "/1.5/%lld%s", c->uid, path);
    picl_hawk_request hr = {
        .method = "GET", .resource = target, .host = "127.0.0.1", .port = storage_server_port(n->srv)};
    char *authz = NULL;
    ck_assert_int_eq(
        picl__hawk_client_header(&authz, c->id, c->key, strlen(c->key), &hr, (int64_t)time(NULL), NULL, NULL),
        PICL_OK);
    char h1[2048];
    snprintf(h1, sizeof h1, "Authorization: %s", authz);
    free(authz);
    const char *hdrs[] = {h1, NULL};
    tuks_resp r;
    long st = tuks_request(storage_server_port(n->srv), "GET", target, hdrs, NULL, 0, &r);
    snprintf(out, cap, "%s", r.body ? r.body : "");
    tuks_resp_free(&r);
    return st;
}

/* ---- assignment ------------------------------------------------------------ */

START_TEST(least_loaded_assignment_and_node_secrets)
{
    node_up(&na, "a", 2);
    node_up(&nb, "b", 3);
    ck_assert_int_eq(ks_server_node_add(srv.ks, na.url, 5), PICL_ERROR_CONFLICT);
    ck_assert_int_eq(ks_server_node_add(srv.ks, "ftp://x", 5), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(ks_server_node_add(srv.ks, "http://127.0.0.1:1/", 5), PICL_ERROR_INVALID_ARGUMENT);
    char sa[65], sb[65];
    secret_of(na.url, sa);
    secret_of(nb.url, sb);
    ck_assert_str_ne(sa, sb);

    /* spare capacity: b 3 vs a 2 -> b; then 2 vs 2 -> a (lower id); then
     * b (2 vs 1); then a (1 vs 1); then b (0 vs 1); then none is left: 503 */
    const char *emails[] = {"u1@example.org", "u2@example.org", "u3@example.org",
                            "u4@example.org", "u5@example.org", "u6@example.org"};
    const node *want[] = {&nb, &na, &nb, &na, &nb};
    creds c[6];
    for (int i = 0; i < 6; i++) {
        tuks_account(&srv, emails[i], PW, 1, NULL);
        token_for(emails[i], &c[i]);
    }
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(c[i].status, 200);
        expect_endpoint(&c[i], want[i]);
        ck_assert_int_ge(c[i].uid, 4294967296LL); /* never an account id */
        for (int j = 0; j < i; j++)
            ck_assert_int_ne(c[i].uid, c[j].uid);
        /* signed with its node's secret: not the other node's, not the master */
        const char *own = want[i] == &na ? sa : sb, *other = want[i] == &na ? sb : sa;
        ck_assert(verifies(&c[i], own));
        ck_assert(!verifies(&c[i], other));
        ck_assert(!verifies(&c[i], (const char *)SECRET));
    }
    ck_assert_int_eq(c[5].status, 503);

    /* the same user again: the same assignment */
    creds again;
    token_for(emails[0], &again);
    ck_assert_int_eq(again.status, 200);
    ck_assert_int_eq(again.uid, c[0].uid);
    expect_endpoint(&again, &nb);

    /* and the node accepts what the keyserver signed for it */
    ck_assert_int_eq(node_req(&nb, &c[0], "PUT", "/storage/bookmarks/x1", "{\"payload\":\"hello\"}"), 200);
    ck_assert_int_eq(node_req(&nb, &c[0], "GET", "/storage/bookmarks/x1", NULL), 200);
    ck_assert_int_eq(node_req(&na, &c[0], "GET", "/storage/bookmarks/x1", NULL), 401);
}
END_TEST

START_TEST(password_reset_keeps_assignment)
{
    node_up(&na, "a", 10);
    tuks_account(&srv, "keep@example.org", PW, 1, NULL);
    creds before;
    token_for("keep@example.org", &before);
    ck_assert_int_eq(before.status, 200);
    picl_ks_client *kc;
    picl_account a;
    ck_assert_int_eq(picl__ksc_new(&kc, srv.base), PICL_OK);
    ck_assert_int_eq(picl__account_change_password(kc, "keep@example.org", 16, PW, strlen(PW), PW2,
                                                   strlen(PW2), tuks_params(), tuks_params(), &a),
                     PICL_OK);
    picl__account_wipe(&a);
    picl__ksc_free(kc);
    /* the new password's session, the same node and uid */
    uint8_t kft[32], sess[32];
    tuks_session(&srv, "keep@example.org", PW2, kft, sess);
    tuks_resp r;
    ck_assert_int_eq(tuks_hawk(srv.port, "GET", "/v1/storage/token", sess, PICL_TOKEN_SESSION, NULL,
                               fake_now(NULL), NULL, NULL, &r),
                     200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "uid")), before.uid);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "api_endpoint")), before.endpoint);
    tuks_resp_free(&r);
}
END_TEST

/* ---- drain and purge ----------------------------------------------------------- */

/* node migrate: a drained node's users' records are on their next node
 * before they ask (payloads and sortindex; meta/global too), a user who
 * moved already is left to the devices, a node not drained is refused. */
START_TEST(migrate_copies_records_to_the_next_node)
{
    node_up(&na, "a", 10);
    tuks_account(&srv, "copied@example.org", PW, 1, NULL);
    tuks_account(&srv, "early@example.org", PW, 1, NULL);
    creds c1, e1;
    token_for("copied@example.org", &c1);
    token_for("early@example.org", &e1);
    expect_endpoint(&c1, &na);
    expect_endpoint(&e1, &na);
    ck_assert_int_eq(
        node_req(&na, &c1, "PUT", "/storage/bookmarks/b1", "{\"payload\":\"one\",\"sortindex\":5}"), 200);
    ck_assert_int_eq(node_req(&na, &c1, "PUT", "/storage/bookmarks/b2", "{\"payload\":\"two\"}"), 200);
    ck_assert_int_eq(
        node_req(&na, &c1, "PUT", "/storage/meta/global", "{\"payload\":\"{\\\"syncID\\\":\\\"abc\\\"}\"}"),
        200);
    ck_assert_int_eq(node_req(&na, &e1, "PUT", "/storage/bookmarks/x1", "{\"payload\":\"x\"}"), 200);
    int64_t users = -1, records = -1, failed = -1;
    /* not drained: refused, nothing made */
    ck_assert_int_eq(ks_server_node_migrate(srv.ks, na.url, &users, &records, &failed), PICL_ERROR_STATE);
    ck_assert_int_eq(ks_server_node_migrate(srv.ks, "http://127.0.0.1:1", &users, &records, &failed),
                     PICL_ERROR_NOT_FOUND);
    node_up(&nb, "b", 10);
    int64_t moved = 0;
    ck_assert_int_eq(ks_server_node_drain(srv.ks, na.url, &moved), PICL_OK);
    ck_assert_int_eq(moved, 2);
    char hex[65];
    secret_of(na.url, hex);
    node_run(&na, "a", hex); /* frozen: old tokens get 401 */
    creds e2;                /* this one asks first: a new, empty place on b */
    token_for("early@example.org", &e2);
    expect_endpoint(&e2, &nb);
    ck_assert_int_eq(ks_server_node_migrate(srv.ks, na.url, &users, &records, &failed), PICL_OK);
    ck_assert_int_eq(users, 1);
    ck_assert_int_eq(records, 3);
    ck_assert_int_eq(failed, 0);
    /* the copied user's token: the assignment migrate made, on b, with the records */
    creds c2;
    token_for("copied@example.org", &c2);
    expect_endpoint(&c2, &nb);
    ck_assert_int_ne(c2.uid, c1.uid);
    char body[4096];
    ck_assert_int_eq(node_get(&nb, &c2, "/storage/bookmarks?full=1&sort=index", body, sizeof body), 200);
    json_t *j = json_loads(body, 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_array_size(j), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "id")), "b1");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "payload")), "one");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(j, 0), "sortindex")), 5);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 1), "payload")), "two");
    json_decref(j);
    ck_assert_int_eq(node_get(&nb, &c2, "/storage/meta/global", body, sizeof body), 200);
    ck_assert_ptr_nonnull(strstr(body, "syncID"));
    /* the early one's new place is untouched (its devices upload) */
    ck_assert_int_eq(node_get(&nb, &e2, "/info/collections", body, sizeof body), 200);
    ck_assert_str_eq(body, "{}");
    /* nothing left to move */
    ck_assert_int_eq(ks_server_node_migrate(srv.ks, na.url, &users, &records, &failed), PICL_OK);
    ck_assert_int_eq(users, 0);
}
END_TEST

START_TEST(drain_moves_users_rotates_secret_and_purge_deletes)
{
    node_up(&na, "a", 10);
    tuks_account(&srv, "mover@example.org", PW, 1, NULL);
    creds old;
    token_for("mover@example.org", &old);
    expect_endpoint(&old, &na);
    ck_assert_int_eq(node_req(&na, &old, "PUT", "/storage/passwords/p1", "{\"payload\":\"secret stuff\"}"),
                     200);

    /* a second node, then drain the first */
    node_up(&nb, "b", 10);
    char sa_before[65], sa_after[65];
    secret_of(na.url, sa_before);
    int64_t moved = -1;
    ck_assert_int_eq(ks_server_node_drain(srv.ks, "http://127.0.0.1:1", &moved), PICL_ERROR_NOT_FOUND);
    ck_assert_int_eq(ks_server_node_drain(srv.ks, na.url, &moved), PICL_OK);
    ck_assert_int_eq(moved, 1);
    secret_of(na.url, sa_after);
    ck_assert_str_ne(sa_before, sa_after);
    char q[256];
    snprintf(q, sizeof q,
             "SELECT downed * 1000 + available * 100 + current_load FROM nodes"
             " WHERE url = '%s'",
             na.url);
    ck_assert_int_eq(tuks_db_int(&srv, q), 1000); /* downed, not available, empty */
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM assignments WHERE replaced_at > 0"), 1);

    /* the old node restarted with its rotated secret: 401 for the old token */
    node_run(&na, "a", sa_after);
    ck_assert_int_eq(node_req(&na, &old, "GET", "/storage/passwords/p1", NULL), 401);

    /* the next token request: the other node, a new uid */
    creds now;
    token_for("mover@example.org", &now);
    ck_assert_int_eq(now.status, 200);
    expect_endpoint(&now, &nb);
    ck_assert_int_ne(now.uid, old.uid);
    /* a new user never goes to the drained node */
    tuks_account(&srv, "late@example.org", PW, 1, NULL);
    creds late;
    token_for("late@example.org", &late);
    expect_endpoint(&late, &nb);

    /* within the grace period nothing is purged: the data is still there */
    int64_t purged = -1, failed = -1;
    ck_assert_int_eq(ks_server_purge(srv.ks, &purged, &failed), PICL_OK);
    ck_assert_int_eq(purged, 0);
    ck_assert_int_eq(failed, 0);
    creds probe;
    mint(&na, sa_after, old.uid, &probe);
    ck_assert_int_eq(node_req(&na, &probe, "GET", "/storage/passwords/p1", NULL), 200);

    /* a node that cannot be reached: kept for the next run */
    clock_offset = 101;
    storage_server_free(na.srv);
    na.srv = NULL;
    ck_assert_int_eq(ks_server_purge(srv.ks, &purged, &failed), PICL_OK);
    ck_assert_int_eq(purged, 0);
    ck_assert_int_eq(failed, 1);
    /* back up: purged on the node that holds it, and forgotten */
    node_run(&na, "a", sa_after);
    ck_assert_int_eq(ks_server_purge(srv.ks, &purged, &failed), PICL_OK);
    ck_assert_int_eq(purged, 1);
    ck_assert_int_eq(failed, 0);
    ck_assert_int_eq(node_req(&na, &probe, "GET", "/storage/passwords/p1", NULL), 404);
    ck_assert_int_eq(ks_server_purge(srv.ks, &purged, &failed), PICL_OK);
    ck_assert_int_eq(purged, 0);
    /* the moved user's new node was not touched */
    ck_assert_int_eq(node_req(&nb, &now, "PUT", "/storage/passwords/p1", "{\"payload\":\"again\"}"), 200);
    ck_assert_int_eq(ks_server_purge(srv.ks, &purged, &failed), PICL_OK);
    ck_assert_int_eq(node_req(&nb, &now, "GET", "/storage/passwords/p1", NULL), 200);
}
END_TEST

START_TEST(destroyed_account_purged_at_once)
{
    node_up(&na, "a", 10);
    tuks_account(&srv, "gone@example.org", PW, 1, NULL);
    tuks_account(&srv, "stays@example.org", PW, 1, NULL);
    creds g, s;
    token_for("gone@example.org", &g);
    token_for("stays@example.org", &s);
    ck_assert_int_eq(node_req(&na, &g, "PUT", "/storage/history/h1", "{\"payload\":\"g\"}"), 200);
    ck_assert_int_eq(node_req(&na, &s, "PUT", "/storage/history/h1", "{\"payload\":\"s\"}"), 200);
    uint8_t auth[32];
    tuks_auth_token(&srv, "gone@example.org", PW, auth);
    tuks_resp r;
    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/account/destroy", auth, PICL_TOKEN_AUTH, "{}",
                               fake_now(NULL), NULL, NULL, &r),
                     200);
    tuks_resp_free(&r);
    /* no grace for a destroyed account */
    int64_t purged = -1, failed = -1;
    ck_assert_int_eq(ks_server_purge(srv.ks, &purged, &failed), PICL_OK);
    ck_assert_int_eq(purged, 1);
    ck_assert_int_eq(failed, 0);
    ck_assert_int_eq(node_req(&na, &g, "GET", "/storage/history/h1", NULL), 404);
    ck_assert_int_eq(node_req(&na, &s, "GET", "/storage/history/h1", NULL), 200);
    /* its load went down with it */
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT current_load FROM nodes"), 1);
}
END_TEST

/* The server runs the purge by itself (here every second). */
START_TEST(server_purges_periodically)
{
    tuks_stop(&srv);
    ks_config c;
    memset(&c, 0, sizeof c);
    c.secret = SECRET;
    c.secret_len = sizeof SECRET - 1;
    c.now = fake_now;
    c.purge_grace_s = 100;
    c.purge_every_s = 1;
    tuks_start(&srv, &c);
    node_up(&na, "a", 10);
    tuks_account(&srv, "auto@example.org", PW, 1, NULL);
    creds g;
    token_for("auto@example.org", &g);
    ck_assert_int_eq(node_req(&na, &g, "PUT", "/storage/history/h1", "{\"payload\":\"g\"}"), 200);
    uint8_t auth[32];
    tuks_auth_token(&srv, "auto@example.org", PW, auth);
    tuks_resp r;
    ck_assert_int_eq(tuks_hawk(srv.port, "POST", "/v1/account/destroy", auth, PICL_TOKEN_AUTH, "{}",
                               fake_now(NULL), NULL, NULL, &r),
                     200);
    tuks_resp_free(&r);
    long st = 200;
    for (int i = 0; i < 50 && st == 200; i++) {
        usleep(100000);
        st = node_req(&na, &g, "GET", "/storage/history/h1", NULL);
    }
    ck_assert_int_eq(st, 404);
    /* the purger forgets the assignment just after the node's answer */
    long long left = 1;
    for (int i = 0; i < 50 && left; i++) {
        left = tuks_db_int(&srv, "SELECT count(*) FROM assignments");
        if (left)
            usleep(100000);
    }
    ck_assert_int_eq(left, 0);
}
END_TEST

/* Concurrent first token requests of one user make ONE assignment. */
typedef struct racer {
    const uint8_t *sess;
    long long uid;
} racer;

static void *race_token(void *arg)
{
    racer *rc = arg;
    tuks_resp r;
    if (tuks_hawk(srv.port, "GET", "/v1/storage/token", rc->sess, PICL_TOKEN_SESSION, NULL, fake_now(NULL),
                  NULL, NULL, &r) == 200)
        rc->uid = json_integer_value(json_object_get(r.json, "uid"));
    tuks_resp_free(&r);
    return NULL;
}

START_TEST(concurrent_first_tokens_one_assignment)
{
    node_up(&na, "a", 100);
    tuks_account(&srv, "race@example.org", PW, 1, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, "race@example.org", PW, kft, sess);
    pthread_t th[8];
    racer rs[8];
    for (int i = 0; i < 8; i++) {
        rs[i].sess = sess;
        rs[i].uid = 0;
        ck_assert_int_eq(pthread_create(&th[i], NULL, race_token, &rs[i]), 0);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_ge(rs[i].uid, 4294967296LL);
        ck_assert_int_eq(rs[i].uid, rs[0].uid);
    }
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM assignments"), 1);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT current_load FROM nodes"), 1);
}
END_TEST

/* ---- the admin commands ------------------------------------------------------- */

/* Runs picl-keyserver with args; its output into out; the exit status. */
static int run_ks(char *out, size_t cap, const char *args)
{
    const char *b = getenv("PICL_BUILD");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/picl-keyserver %s 2>&1", b ? b : "build", args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(admin_commands)
{
    char where[512], out[4096], args[1024];
    /* the same database the test server uses: a path or the URL */
    if (srv.dburl[0])
        snprintf(where, sizeof where, "--database '%s' --secret-file %s/secret", srv.dburl, tmp);
    else
        snprintf(where, sizeof where, "--data %s", srv.dir);
    if (srv.dburl[0]) { /* the keyserver's secret as a file */
        char p[128];
        snprintf(p, sizeof p, "%s/secret", tmp);
        FILE *f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "%s\n", (const char *)SECRET);
        fclose(f);
        chmod(p, 0600);
    } else { /* --data: <data>/secret */
        char p[512];
        snprintf(p, sizeof p, "%s/secret", srv.dir);
        FILE *f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "%s\n", (const char *)SECRET);
        fclose(f);
    }
    snprintf(args, sizeof args, "node add http://127.0.0.1:4001 --capacity 50 %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 0);
    ck_assert_ptr_nonnull(strstr(out, "added http://127.0.0.1:4001"));
    ck_assert_int_eq(run_ks(out, sizeof out, args), 5); /* exists */
    ck_assert_ptr_nonnull(strstr(out, "exists already"));
    snprintf(args, sizeof args, "node add http://127.0.0.1:4002 %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 2); /* no --capacity */
    snprintf(args, sizeof args, "node add http://127.0.0.1:4002 --capacity 7 %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 0);
    snprintf(args, sizeof args, "node list %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 0);
    ck_assert_str_eq(out, "http://127.0.0.1:4001\tcapacity 50\tload 0\tavailable\n"
                          "http://127.0.0.1:4002\tcapacity 7\tload 0\tavailable\n");
    /* node secret = what the server signs with */
    snprintf(args, sizeof args, "node secret http://127.0.0.1:4001 %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 0);
    char hex[65];
    secret_of("http://127.0.0.1:4001", hex);
    char want[80];
    snprintf(want, sizeof want, "%s\n", hex);
    ck_assert_str_eq(out, want);
    snprintf(args, sizeof args, "node drain http://127.0.0.1:4001 %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 0);
    ck_assert_ptr_nonnull(strstr(out, "drained http://127.0.0.1:4001: 0 users"));
    snprintf(args, sizeof args, "node drain http://127.0.0.1:4009 %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 1);
    ck_assert_ptr_nonnull(strstr(out, "no node http://127.0.0.1:4009"));
    snprintf(args, sizeof args, "node list %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 0);
    ck_assert_ptr_nonnull(strstr(out, "http://127.0.0.1:4001\tcapacity 50\tload 0\tdrained\n"));
    snprintf(args, sizeof args, "node secret http://127.0.0.1:4001 %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 0);
    ck_assert_str_ne(out, want); /* rotated by the drain */
    snprintf(args, sizeof args, "purge %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 0);
    ck_assert_ptr_nonnull(strstr(out, "purged 0 users' data, 0 failed"));
    /* usage errors */
    ck_assert_int_eq(run_ks(out, sizeof out, "node list"), 2);
    ck_assert_int_eq(run_ks(out, sizeof out, "node frobnicate --data /tmp"), 2);
    snprintf(args, sizeof args, "node list --capacity %s", where);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 2);
}
END_TEST

/* ---- PostgreSQL: failures ------------------------------------------------------- */

START_TEST(pg_unreachable_is_a_clear_error)
{
    /* nothing listens on port 1: an error at once, never a hang */
    time_t t0 = time(NULL);
    ks_db *db = NULL;
    const char *why = NULL;
    ck_assert_int_eq(ks_db_open(&db, "postgresql://picl@127.0.0.1:1/picl", 2, &why), PICL_ERROR_DATABASE);
    ck_assert_ptr_null(db);
    ck_assert_ptr_nonnull(why);
    ck_assert_ptr_nonnull(strstr(why, "cannot connect to PostgreSQL"));
    ck_assert_ptr_nonnull(strstr(why, "127.0.0.1"));
    /* a host that drops packets: connect_timeout in the URL bounds it */
    ck_assert_int_eq(ks_db_open(&db, "postgresql://picl@192.0.2.1:5432/picl?connect_timeout=2", 1, &why),
                     PICL_ERROR_DATABASE);
    ck_assert_int_le(time(NULL) - t0, 6);
    /* the program says why and exits 1 */
    char out[2048], args[512], sf[128];
    snprintf(sf, sizeof sf, "%s/secret", tmp);
    FILE *f = fopen(sf, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", (const char *)SECRET);
    fclose(f);
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --database postgresql://picl@127.0.0.1:1/picl"
             " --secret-file %s --smtp smtp://127.0.0.1:1",
             sf);
    ck_assert_int_eq(run_ks(out, sizeof out, args), 1);
    ck_assert_ptr_nonnull(strstr(out, "cannot connect to PostgreSQL"));
    ck_assert_ptr_null(strstr(out, "picl@")); /* the URL (it may hold a password) is not said */
    ck_assert_int_eq(run_ks(out, sizeof out, "--listen 127.0.0.1:0 --database mysql://x"), 2);
    if (!tupg_enabled())
        return;
    /* a database that does not exist */
    char url[256];
    const char *admin = tupg_admin_url();
    snprintf(url, sizeof url, "%.*s/no_such_db", (int)(strrchr(admin, '/') - admin), admin);
    ck_assert_int_eq(ks_db_open(&db, url, 1, &why), PICL_ERROR_DATABASE);
    ck_assert_ptr_nonnull(strstr(why, "no_such_db"));
}
END_TEST

START_TEST(pg_never_half_migrated)
{
    if (!tupg_enabled())
        return;
    char url[256], name[64], sql[256], out[64];
    tupg_create_db(url, sizeof url, name, sizeof name);
    /* a table in the way: the schema fails in the middle of its creation */
    ck_assert_int_eq(tupg_exec(url, "CREATE TABLE nodes (something TEXT)"), 0);
    ks_db *db = NULL;
    const char *why = NULL;
    ck_assert_int_eq(ks_db_open(&db, url, 2, &why), PICL_ERROR_DATABASE);
    ck_assert_ptr_nonnull(why);
    ck_assert_ptr_nonnull(strstr(why, "cannot create the schema"));
    /* nothing of it left behind: only the table that was there */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM information_schema.tables WHERE table_schema = '%s'",
             name);
    ck_assert_int_eq(tupg_query1(url, sql, out, sizeof out), 0);
    ck_assert_str_eq(out, "1");
    /* out of the way: it works, several starting at once make it once */
    ck_assert_int_eq(tupg_exec(url, "DROP TABLE nodes"), 0);
    ks_db *d1 = NULL, *d2 = NULL;
    ck_assert_int_eq(ks_db_open(&d1, url, 2, &why), PICL_OK);
    ck_assert_int_eq(ks_db_open(&d2, url, 2, &why), PICL_OK);
    ck_assert_str_eq(ks_db_backend(d1), "postgresql");
    ck_assert_int_eq(ks_db_ping(d2), PICL_OK);
    ks_db_close(d1);
    ks_db_close(d2);
    ck_assert_int_eq(tupg_query1(url, "SELECT value FROM meta WHERE key = 'schema_version'", out, sizeof out),
                     0);
    ck_assert_int_eq(strtoll(out, NULL, 10), KS_SCHEMA_VERSION);
    /* written by a newer keyserver: refused, untouched */
    ck_assert_int_eq(tupg_exec(url, "UPDATE meta SET value = 99 WHERE key = 'schema_version'"), 0);
    ck_assert_int_eq(ks_db_open(&db, url, 1, &why), PICL_ERROR_DATABASE);
    ck_assert_ptr_nonnull(strstr(why, "newer keyserver"));
    ck_assert_int_eq(tupg_query1(url, "SELECT value FROM meta WHERE key = 'schema_version'", out, sizeof out),
                     0);
    ck_assert_str_eq(out, "99");
    tupg_drop_db(name);
}
END_TEST

/* Two keyservers on one PostgreSQL database (behind one load balancer: the
 * same Host): a request captured at one is refused at the other. */
START_TEST(pg_nonce_shared_by_sibling_processes)
{
    if (!tupg_enabled()) /* one process per SQLite file */
        return;
    tuks_account(&srv, "twin@example.org", PW, 1, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, "twin@example.org", PW, kft, sess);
    ks_config c;
    memset(&c, 0, sizeof c);
    c.listen = "127.0.0.1:0";
    c.data_dir = tmp;
    c.database = srv.dburl;
    c.secret = SECRET;
    c.secret_len = sizeof SECRET - 1;
    c.purge_every_s = -1;
    ks_server *twin = NULL;
    ck_assert_int_eq(ks_server_new(&twin, &c), PICL_OK);
    ck_assert_int_eq(ks_server_start(twin), PICL_OK);
    unsigned twin_port = ks_server_port(twin);

    /* one signed request, as the client made it for the balancer's address */
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    picl_token_keys k;
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_SESSION, sess), PICL_OK);
    char id[PICL_TOKEN_ID_HEX_BYTES + 1];
    picl__token_id_hex(id, &k);
    picl_hawk_request hr = {
        .method = "GET", .resource = "/v1/account/devices", .host = "127.0.0.1", .port = srv.port};
    char *authz = NULL;
    ck_assert_int_eq(
        picl__hawk_client_header(&authz, id, k.hmac_key, 32, &hr, fake_now(NULL), "captured-nonce-1", NULL),
        PICL_OK);
    char h1[1024], h2[64];
    snprintf(h1, sizeof h1, "Authorization: %s", authz);
    snprintf(h2, sizeof h2, "Host: 127.0.0.1:%u", srv.port);
    free(authz);
    const char *hdrs[] = {h1, h2, NULL};
    tuks_resp r;
    ck_assert_int_eq(tuks_request(srv.port, "GET", "/v1/account/devices", hdrs, NULL, 0, &r), 200);
    tuks_resp_free(&r);
    /* the same bytes at the sibling: a replay */
    ck_assert_int_eq(tuks_request(twin_port, "GET", "/v1/account/devices", hdrs, NULL, 0, &r), 401);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "errno")), 115);
    tuks_resp_free(&r);
    /* a fresh request is served by the sibling: it is the same database */
    snprintf(h2, sizeof h2, "Host: 127.0.0.1:%u", twin_port);
    hr.port = twin_port;
    ck_assert_int_eq(
        picl__hawk_client_header(&authz, id, k.hmac_key, 32, &hr, fake_now(NULL), "fresh-nonce-2", NULL),
        PICL_OK);
    snprintf(h1, sizeof h1, "Authorization: %s", authz);
    free(authz);
    ck_assert_int_eq(tuks_request(twin_port, "GET", "/v1/account/devices", hdrs, NULL, 0, &r), 200);
    tuks_resp_free(&r);
    picl__token_keys_wipe(&k);
    picl__nss_release();
    ks_server_free(twin);
}
END_TEST

/* PostgreSQL goes away under a running keyserver: answers come at once
 * (503 from the heartbeat, never a hang), and it recovers by itself when
 * the database is back. */
START_TEST(pg_restart_under_a_running_keyserver)
{
    if (!tupg_enabled())
        return;
    tuks_account(&srv, "steady@example.org", PW, 1, NULL);
    tuks_resp r;
    ck_assert_int_eq(tuks_request(srv.port, "GET", "/__heartbeat__", NULL, NULL, 0, &r), 200);
    tuks_resp_free(&r);
    ck_assert_int_eq(tupg_stop_cluster(), 0);
    time_t t0 = time(NULL);
    ck_assert_int_eq(tuks_request(srv.port, "GET", "/__heartbeat__", NULL, NULL, 0, &r), 503);
    tuks_resp_free(&r);
    ck_assert_int_eq(tuks_request(srv.port, "GET", "/__heartbeat__", NULL, NULL, 0, &r), 503);
    tuks_resp_free(&r);
    ck_assert_int_le(time(NULL) - t0, 5);
    ck_assert_int_eq(tupg_start_cluster(), 0);
    long st = 0;
    for (int i = 0; i < 5 && st != 200; i++) {
        st = tuks_request(srv.port, "GET", "/__heartbeat__", NULL, NULL, 0, &r);
        tuks_resp_free(&r);
    }
    ck_assert_int_eq(st, 200);
    /* and the account is there: a login works */
    uint8_t kft[32], sess[32];
    tuks_session(&srv, "steady@example.org", PW, kft, sess);
}
END_TEST

/* A SQLite database of schema 2 (before nodes) is migrated: its account is
 * kept, and assignment uids still start above every account id. */
START_TEST(sqlite_v2_migrated)
{
    if (tupg_enabled()) /* SQLite's migration: its pass covers it */
        return;
    tuks_account(&srv, "old@example.org", PW, 1, NULL);
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s", srv.dir);
    srv.dir[0] = 0; /* keep the directory */
    tuks_stop(&srv);
    snprintf(path, sizeof path, "%s/keyserver.db", dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db,
                          "DROP TABLE assignments; DROP TABLE nodes;"
                          "DELETE FROM sqlite_sequence WHERE name IN ('assignments','nodes');"
                          "UPDATE meta SET value = 2 WHERE key = 'schema_version';",
                          NULL, NULL, &err);
    ck_assert_msg(rc == SQLITE_OK, "%s", err ? err : "");
    sqlite3_close(db);
    ks_config c;
    memset(&c, 0, sizeof c);
    c.secret = SECRET;
    c.secret_len = sizeof SECRET - 1;
    c.purge_every_s = -1;
    c.listen = "127.0.0.1:0";
    c.data_dir = dir;
    ck_assert_int_eq(ks_server_new(&srv.ks, &c), PICL_OK);
    ck_assert_int_eq(ks_server_start(srv.ks), PICL_OK);
    srv.port = ks_server_port(srv.ks);
    snprintf(srv.base, sizeof srv.base, "http://127.0.0.1:%u", srv.port);
    snprintf(srv.dir, sizeof srv.dir, "%s", dir);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT value FROM meta WHERE key = 'schema_version'"),
                     KS_SCHEMA_VERSION);
    node_up(&na, "a", 10);
    creds cr;
    token_for("old@example.org", &cr);
    ck_assert_int_eq(cr.status, 200);
    ck_assert_int_eq(cr.uid, 4294967296LL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_nodes");
    TCase *tc = tcase_create("nodes");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, least_loaded_assignment_and_node_secrets);
    tcase_add_test(tc, password_reset_keeps_assignment);
    tcase_add_test(tc, drain_moves_users_rotates_secret_and_purge_deletes);
    tcase_add_test(tc, migrate_copies_records_to_the_next_node);
    tcase_add_test(tc, destroyed_account_purged_at_once);
    tcase_add_test(tc, concurrent_first_tokens_one_assignment);
    tcase_add_test(tc, server_purges_periodically);
    tcase_add_test(tc, admin_commands);
    tcase_add_test(tc, pg_unreachable_is_a_clear_error);
    tcase_add_test(tc, pg_never_half_migrated);
    tcase_add_test(tc, sqlite_v2_migrated);
    tcase_add_test(tc, pg_nonce_shared_by_sibling_processes);
    tcase_add_test(tc, pg_restart_under_a_running_keyserver);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
