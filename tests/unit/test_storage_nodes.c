/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_nodes.c -- the service against more than one storage node
 * (storage.md 6, client.md 7): a user moved to another node mid-life (the
 * old node answers 401, the keyserver's token names the new one) syncs
 * again from the top there, a second 401 right after backs off instead of
 * looping; and destroying the account deletes the data on the storage
 * server first (checked in the node's database). */
#include "testutil.h"
#include "testutil_ks.h"
#include "picl.h"
#include "storage/storage.h"
#include "stores/fileutil.h"
#include "crypto/nss.h"
#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const uint8_t SECRET[] = "nodes-test-secret-0123456789abcdef-xyz";
static const uint8_t ROTATED[] = "nodes-test-secret-ROTATED-0123456789abc";
#define EMAIL "mover@example.org"
#define PW "correct horse"

typedef struct node {
    storage_server *srv;
    char dir[128];
    char listen[64];
} node;

static char tmp[64];
static tuks_srv ks; /* managed here: restarted on the same port and data */
static node n1, n2, n3;

static void node_start(node *n, const char *name, const uint8_t *secret, size_t len)
{
    if (!n->dir[0]) {
        snprintf(n->dir, sizeof n->dir, "%s/%s", tmp, name);
        ck_assert_int_eq(mkdir(n->dir, 0700), 0);
    }
    storage_config sc;
    memset(&sc, 0, sizeof sc);
    sc.listen = n->listen[0] ? n->listen : "127.0.0.1:0";
    sc.data_dir = n->dir;
    sc.secret = secret;
    sc.secret_len = len;
    sc.prune_interval_s = -1;
    ck_assert_int_eq(storage_server_new(&n->srv, &sc), PICL_OK);
    ck_assert_int_eq(storage_server_start(n->srv), PICL_OK);
    snprintf(n->listen, sizeof n->listen, "127.0.0.1:%u", storage_server_port(n->srv));
}

/* The node's secret changes (it no longer accepts the tokens it had). */
static void node_rotate(node *n, const uint8_t *secret, size_t len)
{
    storage_server_free(n->srv);
    n->srv = NULL;
    node_start(n, NULL, secret, len);
}

static void ks_run(const char *storage_node)
{
    /* test builds: the cheap stretching of test accounts is accepted */
    setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 0);
    ks_config kc;
    memset(&kc, 0, sizeof kc);
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", ks.port);
    kc.listen = listen;
    kc.data_dir = ks.dir;
    kc.secret = SECRET;
    kc.secret_len = sizeof SECRET - 1;
    kc.storage_node = storage_node;
    kc.threads = 4;
    ck_assert_int_eq(ks_server_new(&ks.ks, &kc), PICL_OK);
    ck_assert_int_eq(ks_server_start(ks.ks), PICL_OK);
    ks.port = ks_server_port(ks.ks);
    snprintf(ks.base, sizeof ks.base, "http://127.0.0.1:%u", ks.port);
}

/* The keyserver now assigns the user to another node (same port, same data). */
static void ks_reassign(const char *storage_node)
{
    ks_server_free(ks.ks);
    ks.ks = NULL;
    ks_run(storage_node);
}

static void setup(void)
{
    memset(&n1, 0, sizeof n1);
    memset(&n2, 0, sizeof n2);
    memset(&n3, 0, sizeof n3);
    memset(&ks, 0, sizeof ks);
    snprintf(tmp, sizeof tmp, "/tmp/picl-nodes-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    ck_assert_int_eq(picl__nss_acquire_dir(tmp), PICL_OK);
    node_start(&n1, "n1", SECRET, sizeof SECRET - 1);
    snprintf(ks.dir, sizeof ks.dir, "%s/ks", tmp);
    ck_assert_int_eq(mkdir(ks.dir, 0700), 0);
    ks_run(storage_server_node(n1.srv));
}

static void teardown(void)
{
    ks_server_free(ks.ks);
    storage_server_free(n1.srv);
    storage_server_free(n2.srv);
    storage_server_free(n3.srv);
    picl__nss_release();
    ck_assert_int_eq(tu_rmtree(tmp), 0);
}

typedef struct notes {
    int moved;
} notes;

static void on_note(void *ctx, const char *phase, const char *coll, int64_t done, int64_t total,
                    const char *msg)
{
    notes *n = ctx;
    if (msg && strstr(msg, "another storage node"))
        n->moved++;
}

static picl_service *device(const char *name)
{
    char d[128];
    snprintf(d, sizeof d, "%s/%s", tmp, name);
    picl_service *s;
    ck_assert_int_eq(picl_service_create(d, &s), PICL_OK);
    ck_assert_int_eq(picl_service_set_keyserver_url(s, ks.base), PICL_OK);
    ck_assert_int_eq(picl_service_set_stretching_floor(s, 1000, 1024, 8, 1, 1000), PICL_OK);
    snprintf(d, sizeof d, "%s/%s-store", tmp, name);
    mkdir(d, 0700);
    ck_assert_int_eq(picl_service_use_store_dir(s, d), PICL_OK);
    return s;
}

static void write_store(const char *dev, const char *coll, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s-store/%s.json", tmp, dev, coll);
    ck_assert_int_eq(picl__write_file_atomic(p, text, strlen(text), 0600), PICL_OK);
}

/* A signed-in, verified device with two bookmarks synced to the current node. */
static picl_service *signed_in_device(void)
{
    picl_service *d = device("d1");
    ck_assert_int_eq(picl_service_create_account(d, EMAIL, PW), PICL_OK);
    char code[128];
    ck_assert(tuks_take_mail(&ks, EMAIL, "X-Verify-Code", code, sizeof code));
    ck_assert_int_eq(picl_service_verify_email(d, code), PICL_OK);
    ck_assert_int_eq(picl_service_sign_in(d, EMAIL, PW), PICL_OK);
    write_store("d1", "bookmarks",
                "[{\"id\":\"bm1_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"One\"},"
                "{\"id\":\"bm2_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"Two\"}]");
    picl_status st = picl_service_sync(d, "bookmarks", NULL);
    ck_assert_msg(st == PICL_OK, "sync: %d %s", st, picl_service_last_error(d));
    return d;
}

/* Rows of the node's database (every user), by SQL count query. */
static long db_count(const node *n, const char *sql)
{
    char path[256];
    snprintf(path, sizeof path, "%s/storage.db", n->dir);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    long v = (long)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

static char *storage_of(picl_service *d)
{
    char *text;
    ck_assert_int_eq(picl_service_get_status_json(d, &text), PICL_OK);
    json_t *j = json_loads(text, 0, NULL);
    picl_free(text);
    char *s = strdup(json_string_value(json_object_get(j, "storage")));
    json_decref(j);
    return s;
}

START_TEST(test_node_reassignment)
{
    picl_service *d = signed_in_device();
    ck_assert_int_eq(db_count(&n1, "SELECT count(*) FROM bsos WHERE coll='bookmarks'"), 2);
    notes nt = {0};
    ck_assert_int_eq(picl_service_add_observer(d, on_note, &nt), PICL_OK);

    /* the admin drains n1: the user goes to n2, n1 refuses the old tokens */
    node_start(&n2, "n2", SECRET, sizeof SECRET - 1);
    ks_reassign(storage_server_node(n2.srv));
    node_rotate(&n1, ROTATED, sizeof ROTATED - 1);

    char *summary = NULL;
    picl_status st = picl_service_sync(d, "bookmarks", &summary);
    ck_assert_msg(st == PICL_OK, "sync after the move: %d %s", st, picl_service_last_error(d));
    ck_assert_int_eq(nt.moved, 1);
    json_t *j = json_loads(summary, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "ok");
    /* a fresh first sync on the new node: everything uploaded again */
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(j, "collections"), "bookmarks"), "uploaded")),
                     2);
    json_decref(j);
    picl_free(summary);
    char *ep = storage_of(d);
    ck_assert_ptr_nonnull(strstr(ep, storage_server_node(n2.srv)));
    free(ep);
    ck_assert_int_eq(db_count(&n2, "SELECT count(*) FROM bsos WHERE coll='bookmarks'"), 2);
    ck_assert_int_eq(db_count(&n2, "SELECT count(*) FROM bsos WHERE coll='meta' AND id='global'"), 1);

    /* the next sync stays on n2 and moves nothing */
    nt.moved = 0;
    st = picl_service_sync(d, "bookmarks", NULL);
    ck_assert_msg(st == PICL_OK, "%d %s", st, picl_service_last_error(d));
    ck_assert_int_eq(nt.moved, 0);

    /* moved again, to a node that refuses the new token too: one restart,
     * then a backoff with an error, never a loop */
    node_start(&n3, "n3", ROTATED, sizeof ROTATED - 1); /* not the keyserver's secret */
    ks_reassign(storage_server_node(n3.srv));
    node_rotate(&n2, ROTATED, sizeof ROTATED - 1);
    st = picl_service_sync(d, "bookmarks", NULL);
    ck_assert_int_eq(st, PICL_ERROR_BACKOFF);
    ck_assert_msg(strstr(picl_service_last_error(d), "try again later") != NULL, "%s",
                  picl_service_last_error(d));
    ck_assert_int_eq(nt.moved, 1);
    ck_assert_int_eq(db_count(&n3, "SELECT count(*) FROM bsos"), 0);
    picl_service_release(d);
}
END_TEST

START_TEST(test_destroy_deletes_storage_first)
{
    picl_service *d = signed_in_device();
    ck_assert_int_eq(db_count(&n1, "SELECT count(*) FROM bsos WHERE coll='bookmarks'"), 2);
    long all = db_count(&n1, "SELECT count(*) FROM bsos");

    /* the storage server cannot be reached: nothing is destroyed */
    storage_server_set_unavailable(n1.srv, 30);
    picl_status st = picl_service_destroy_account(d, PW);
    ck_assert_int_eq(st, PICL_ERROR_BACKOFF);
    ck_assert_msg(strstr(picl_service_last_error(d), "not destroyed") != NULL, "%s",
                  picl_service_last_error(d));
    storage_server_set_unavailable(n1.srv, 0);
    ck_assert_int_eq(db_count(&n1, "SELECT count(*) FROM bsos"), all);

    /* a wrong password deletes nothing either (the data goes only once the
     * password is proven) */
    ck_assert_int_eq(picl_service_destroy_account(d, "wrong"), PICL_ERROR_WRONG_PASSWORD);
    ck_assert_int_eq(db_count(&n1, "SELECT count(*) FROM bsos"), all);

    ck_assert_int_eq(picl_service_destroy_account(d, PW), PICL_OK);
    ck_assert_int_eq(db_count(&n1, "SELECT count(*) FROM bsos"), 0);
    ck_assert_int_eq(db_count(&n1, "SELECT count(*) FROM collections"), 0);
    ck_assert_int_eq(db_count(&n1, "SELECT count(*) FROM batches"), 0);
    picl_service_release(d);
    /* and the account is gone */
    picl_service *d2 = device("d2");
    ck_assert_int_eq(picl_service_sign_in(d2, EMAIL, PW), PICL_ERROR_UNKNOWN_ACCOUNT);
    picl_service_release(d2);
}
END_TEST

/* A node that asks the client to wait: the sync stops with the delay in its
 * message; a delay of years is capped at a day, and said so. */
START_TEST(test_backoff_reported_and_capped)
{
    picl_service *d = signed_in_device();
    storage_server_set_unavailable(n1.srv, 30);
    ck_assert_int_eq(picl_service_sync(d, "bookmarks", NULL), PICL_ERROR_BACKOFF);
    ck_assert_msg(strstr(picl_service_last_error(d), "wait 30 s") != NULL, "%s", picl_service_last_error(d));
    storage_server_set_unavailable(n1.srv, 2000000000);
    ck_assert_int_eq(picl_service_sync(d, "bookmarks", NULL), PICL_ERROR_BACKOFF);
    ck_assert_msg(strstr(picl_service_last_error(d), "wait 86400 s") != NULL &&
                      strstr(picl_service_last_error(d), "capped") != NULL,
                  "%s", picl_service_last_error(d));
    storage_server_set_unavailable(n1.srv, 0);
    ck_assert_int_eq(picl_service_sync(d, "bookmarks", NULL), PICL_OK);
    picl_service_release(d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_nodes");
    TCase *tc = tcase_create("nodes");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_node_reassignment);
    tcase_add_test(tc, test_destroy_deletes_storage_first);
    tcase_add_test(tc, test_backoff_reported_and_capped);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
