/* SPDX-License-Identifier: MPL-2.0 */
/* test_service.c -- the service object of picl.h end to end: a keyserver and
 * a storage server in process, two devices with JSON-file stores, account
 * life cycle, sync, class moves, a password reset, and its error messages. */
#include "testutil.h"
#include "testutil_ks.h"
#include "picl.h"
#include "storage/storage.h"
#include "stores/fileutil.h"
#include "crypto/nss.h"
#include "client/records.h"
#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const uint8_t SECRET[] = "service-test-secret-0123456789abcdef-xyz";
static storage_server *storage;
static tuks_srv ks;
static char tmp[64];

static void setup(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/picl-svc-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    /* as in the picl command, NSS is opened on a key database first (SDR) */
    ck_assert_int_eq(picl__nss_acquire_dir(tmp), PICL_OK);
    char d[128];
    snprintf(d, sizeof d, "%s/storage", tmp);
    ck_assert_int_eq(mkdir(d, 0700), 0);
    storage_config sc;
    memset(&sc, 0, sizeof sc);
    sc.listen = "127.0.0.1:0";
    sc.data_dir = d;
    sc.secret = SECRET;
    sc.secret_len = sizeof SECRET - 1;
    sc.prune_interval_s = -1;
    ck_assert_int_eq(storage_server_new(&storage, &sc), PICL_OK);
    ck_assert_int_eq(storage_server_start(storage), PICL_OK);
    ks_config kc;
    memset(&kc, 0, sizeof kc);
    kc.secret = SECRET;
    kc.secret_len = sizeof SECRET - 1;
    kc.storage_node = storage_server_node(storage);
    tuks_start(&ks, &kc);
}

static void teardown(void)
{
    tuks_stop(&ks);
    storage_server_free(storage);
    picl__nss_release();
    ck_assert_int_eq(tu_rmtree(tmp), 0);
}

typedef struct notes {
    int count;
    char last[256];
} notes;

static void on_note(void *ctx, const char *phase, const char *coll, int64_t done, int64_t total,
                    const char *msg)
{
    notes *n = ctx;
    n->count++;
    snprintf(n->last, sizeof n->last, "%s/%s/%s", phase, coll, msg);
}

static picl_service *device(const char *name)
{
    char d[128];
    snprintf(d, sizeof d, "%s/%s", tmp, name);
    picl_service *s;
    ck_assert_int_eq(picl_service_create(d, &s), PICL_OK);
    ck_assert_int_eq(picl_service_set_keyserver_url(s, ks.base), PICL_OK);
    /* cheap stretching for tests (the production floor is never lowered) */
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

static json_t *read_store(const char *dev, const char *coll)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s-store/%s.json", tmp, dev, coll);
    json_t *j = json_load_file(p, 0, NULL);
    return j ? j : json_array();
}

static json_t *status_of(picl_service *s)
{
    char *text;
    ck_assert_int_eq(picl_service_get_status_json(s, &text), PICL_OK);
    json_t *j = json_loads(text, 0, NULL);
    picl_free(text);
    ck_assert_ptr_nonnull(j);
    return j;
}

#define EMAIL "user@example.org"

static void sync_ok(picl_service *s)
{
    char *summary = NULL;
    picl_status st = picl_service_sync(s, "", &summary);
    ck_assert_msg(st == PICL_OK, "sync: %d %s", st, picl_service_last_error(s));
    json_t *j = json_loads(summary, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "ok");
    json_decref(j);
    picl_free(summary);
}

START_TEST(test_account_sync_move_reset)
{
    picl_service *d1 = device("d1");
    notes n = {0};
    ck_assert_int_eq(picl_service_add_observer(d1, on_note, &n), PICL_OK);
    /* an unverified account cannot sync yet */
    ck_assert_int_eq(picl_service_create_account(d1, EMAIL, "correct horse"), PICL_OK);
    int verified = 1;
    ck_assert_int_eq(picl_service_get_verified(d1, &verified), PICL_OK);
    ck_assert_int_eq(verified, 0);
    ck_assert_int_eq(picl_service_sync(d1, "", NULL), PICL_ERROR_UNVERIFIED);
    ck_assert_ptr_nonnull(strstr(picl_service_last_error(d1), "verify"));
    char code[128];
    ck_assert(tuks_take_mail(&ks, EMAIL, "X-Verify-Code", code, sizeof code));
    char wrong[128];
    snprintf(wrong, sizeof wrong, "%s", code);
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    ck_assert_int_eq(picl_service_verify_email(d1, wrong), PICL_ERROR_INVALID_CODE);
    ck_assert_ptr_nonnull(strstr(picl_service_last_error(d1), "wrong or expired"));
    ck_assert_int_eq(picl_service_verify_email(d1, "00"),
                     PICL_ERROR_INVALID_CODE); /* malformed: same error */
    ck_assert_int_eq(picl_service_verify_email(d1, code), PICL_OK);
    /* keys need the password once more after verification */
    ck_assert_int_eq(picl_service_sign_in(d1, EMAIL, "wrong"), PICL_ERROR_WRONG_PASSWORD);
    ck_assert_ptr_nonnull(strstr(picl_service_last_error(d1), "incorrect password"));
    ck_assert_int_eq(picl_service_sign_in(d1, EMAIL, "correct horse"), PICL_OK);
    json_t *s1 = status_of(d1);
    ck_assert(json_is_true(json_object_get(s1, "verified")));
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(s1, "kB_fp"))), 32);

    write_store("d1", "bookmarks",
                "[{\"id\":\"bm1_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"One\"}]");
    write_store("d1", "passwords",
                "[{\"id\":\"{pw1}\",\"hostname\":\"https://a.example\",\"password\":\"s3cret\","
                "\"timePasswordChanged\":1}]");
    sync_ok(d1);
    ck_assert_int_gt(n.count, 0);

    picl_service *d2 = device("d2");
    ck_assert_int_eq(picl_service_sign_in(d2, EMAIL, "correct horse"), PICL_OK);
    json_t *s2 = status_of(d2);
    ck_assert_str_eq(json_string_value(json_object_get(s1, "kA_fp")),
                     json_string_value(json_object_get(s2, "kA_fp")));
    ck_assert_str_eq(json_string_value(json_object_get(s1, "kB_fp")),
                     json_string_value(json_object_get(s2, "kB_fp")));
    json_decref(s2);
    sync_ok(d2);
    json_t *a = read_store("d1", "passwords"), *b = read_store("d2", "passwords");
    ck_assert(json_equal(a, b));
    ck_assert_uint_eq(json_array_size(b), 1);
    json_decref(a);
    json_decref(b);

    /* classes: passwords B by default; move bookmarks to B, seen by d2 */
    char *cls;
    ck_assert_int_eq(picl_service_get_collection_class(d2, "passwords", &cls), PICL_OK);
    ck_assert_str_eq(cls, "B");
    picl_free(cls);
    ck_assert_int_eq(picl_service_set_collection_class(d1, "bookmarks", "C"), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl_service_set_collection_class(d1, "bookmarks", "B"), PICL_OK);
    write_store("d2", "bookmarks",
                "[{\"id\":\"bm1_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"One\"},"
                "{\"id\":\"bm2_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"Two\"}]");
    sync_ok(d2);
    ck_assert_int_eq(picl_service_get_collection_class(d2, "bookmarks", &cls), PICL_OK);
    ck_assert_str_eq(cls, "B");
    picl_free(cls);
    sync_ok(d1);
    a = read_store("d1", "bookmarks");
    ck_assert_uint_eq(json_array_size(a), 2);
    json_decref(a);
    char *cols;
    ck_assert_int_eq(picl_service_get_collections_json(d1, &cols), PICL_OK);
    ck_assert_ptr_nonnull(strstr(cols, "\"bookmarks\""));
    picl_free(cols);

    /* forgotten password on d2: kA kept, kB new */
    ck_assert_int_eq(picl_service_complete_password_reset(d2, "12345678", "new pw"), PICL_ERROR_STATE);
    ck_assert_int_eq(picl_service_forgot_password(d2, EMAIL), PICL_OK);
    ck_assert(tuks_take_mail(&ks, EMAIL, "X-Recovery-Code", code, sizeof code));
    ck_assert_int_eq(picl_service_complete_password_reset(d2, code, "new pw"), PICL_OK);
    json_t *s3 = status_of(d2);
    ck_assert_str_eq(json_string_value(json_object_get(s1, "kA_fp")),
                     json_string_value(json_object_get(s3, "kA_fp")));
    ck_assert_str_ne(json_string_value(json_object_get(s1, "kB_fp")),
                     json_string_value(json_object_get(s3, "kB_fp")));
    json_decref(s3);
    char *summary;
    ck_assert_int_eq(picl_service_sync(d2, "", &summary), PICL_OK);
    ck_assert_ptr_nonnull(strstr(summary, "keys_changed"));
    picl_free(summary);
    /* d1's session was revoked by the reset: it must sign in again */
    ck_assert_int_eq(picl_service_sync(d1, "", NULL), PICL_ERROR_TOKEN);
    ck_assert_ptr_nonnull(strstr(picl_service_last_error(d1), "sign in again"));
    ck_assert_int_eq(picl_service_sign_in(d1, EMAIL, "correct horse"), PICL_ERROR_WRONG_PASSWORD);
    ck_assert_int_eq(picl_service_sign_in(d1, EMAIL, "new pw"), PICL_OK);
    sync_ok(d1);
    a = read_store("d1", "bookmarks"); /* class B now (moved): re-uploaded by d2 under the new kB */
    ck_assert_uint_eq(json_array_size(a), 2);
    json_decref(a);
    json_decref(s1);
    ck_assert_int_eq(picl_service_remove_observer(d1, on_note, &n), PICL_OK);
    ck_assert_int_eq(picl_service_remove_observer(d1, on_note, &n), PICL_ERROR_NOT_FOUND);
    ck_assert_uint_eq(picl_service_release(d1), 0);
    ck_assert_uint_eq(picl_service_release(d2), 0);
}
END_TEST

START_TEST(test_errors_and_interfaces)
{
    picl_service *d = device("e1");
    /* COM basics */
    picl_iid iservice = PICL_ISERVICE_IID, isupports = PICL_ISUPPORTS_IID, other = {1, 2, 3, {4}};
    void *p;
    ck_assert_int_eq(d->vtbl->QueryInterface(d, &iservice, &p), PICL_OK);
    ck_assert_ptr_eq(p, d);
    ck_assert_int_eq(d->vtbl->QueryInterface(d, &isupports, &p), PICL_OK);
    ck_assert_int_eq(d->vtbl->QueryInterface(d, &other, &p), PICL_ERROR_NOT_FOUND);
    ck_assert_ptr_null(p);
    ck_assert_uint_eq(d->vtbl->Release(d), 2);
    ck_assert_uint_eq(d->vtbl->Release(d), 1);
    /* state errors */
    ck_assert_int_eq(picl_service_verify_email(d, "abc"), PICL_ERROR_STATE);
    ck_assert_int_eq(picl_service_sync(d, "", NULL), PICL_ERROR_STATE);
    ck_assert_int_eq(picl_service_set_keyserver_url(d, "ftp://x"), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl_service_sign_in(d, EMAIL, "x"), PICL_ERROR_UNKNOWN_ACCOUNT);
    ck_assert_int_eq(picl_service_create_account(d, EMAIL, ""), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl_service_create_account(d, EMAIL, "pw"), PICL_OK);
    picl_service *d2 = device("e2");
    ck_assert_int_eq(picl_service_create_account(d2, EMAIL, "pw2"), PICL_ERROR_ACCOUNT_EXISTS);
    ck_assert_ptr_nonnull(strstr(picl_service_last_error(d2), "already exists"));
    char code[128];
    ck_assert(tuks_take_mail(&ks, EMAIL, "X-Verify-Code", code, sizeof code));
    ck_assert_int_eq(picl_service_verify_email(d, code), PICL_OK);
    ck_assert_int_eq(picl_service_sign_in(d, EMAIL, "pw"), PICL_OK);
    /* a malformed store file: a clear error, the file untouched */
    write_store("e1", "bookmarks", "{not json");
    ck_assert_int_eq(picl_service_sync(d, "bookmarks", NULL), PICL_ERROR_ENCODING);
    ck_assert_ptr_nonnull(strstr(picl_service_last_error(d), "bookmarks.json"));
    char p2[256], *text;
    snprintf(p2, sizeof p2, "%s/e1-store/bookmarks.json", tmp);
    ck_assert_int_eq(picl__read_file(p2, 4096, &text, NULL), PICL_OK);
    ck_assert_str_eq(text, "{not json");
    free(text);
    ck_assert_int_eq(picl_service_sync(d, "bad/name", NULL), PICL_ERROR_INVALID_ARGUMENT);
    /* the keyserver gone: a network error that says so */
    ck_assert_int_eq(picl_service_set_keyserver_url(d2, "http://127.0.0.1:1"), PICL_OK);
    ck_assert_int_eq(picl_service_sign_in(d2, EMAIL, "pw"), PICL_ERROR_NETWORK);
    ck_assert_ptr_nonnull(strstr(picl_service_last_error(d2), "cannot reach"));
    /* destroy: wrong password refused, right one erases */
    ck_assert_int_eq(picl_service_destroy_account(d, "nope"), PICL_ERROR_WRONG_PASSWORD);
    ck_assert_int_eq(picl_service_destroy_account(d, "pw"), PICL_OK);
    char *email;
    ck_assert_int_eq(picl_service_get_signed_in_email(d, &email), PICL_OK);
    ck_assert_str_eq(email, "");
    picl_free(email);
    ck_assert_int_eq(picl_service_sign_in(d, EMAIL, "pw"), PICL_ERROR_UNKNOWN_ACCOUNT);
    picl_service_release(d);
    picl_service_release(d2);
    ck_assert_int_eq(picl_service_create(NULL, &d), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* Scans a file (and its -wal) for a byte string. */
static int file_contains(const char *path, const char *needle)
{
    char p[600];
    for (int w = 0; w < 2; w++) {
        snprintf(p, sizeof p, "%s%s", path, w ? "-wal" : "");
        char *data;
        size_t len;
        if (picl__read_file(p, 256u << 20, &data, &len) != PICL_OK)
            continue;
        int found = memmem(data, len, needle, strlen(needle)) != NULL;
        free(data);
        if (found)
            return 1;
    }
    return 0;
}

/* What stealing the databases gives: the storage database alone holds no
 * plaintext; with kA from the keyserver database class A decrypts and class
 * B does not. */
START_TEST(test_compromise)
{
    picl_service *d = device("c1");
    ck_assert_int_eq(picl_service_create_account(d, EMAIL, "pw"), PICL_OK);
    char code[128];
    ck_assert(tuks_take_mail(&ks, EMAIL, "X-Verify-Code", code, sizeof code));
    ck_assert_int_eq(picl_service_verify_email(d, code), PICL_OK);
    ck_assert_int_eq(picl_service_sign_in(d, EMAIL, "pw"), PICL_OK);
    write_store("c1", "bookmarks",
                "[{\"id\":\"bmMarker0001\",\"type\":\"bookmark\",\"parentid\":\"menu\","
                "\"title\":\"PLAINTEXT-BOOKMARK-MARKER\",\"bmkUri\":\"https://marker.example/\"}]");
    write_store("c1", "passwords",
                "[{\"id\":\"{pwMarker}\",\"hostname\":\"https://marker.example\","
                "\"password\":\"PLAINTEXT-PASSWORD-MARKER\",\"timePasswordChanged\":1}]");
    sync_ok(d);
    char sdb[256], kdb[600];
    snprintf(sdb, sizeof sdb, "%s/storage/storage.db", tmp);
    snprintf(kdb, sizeof kdb, "%s/keyserver.db", ks.dir);
    ck_assert(file_contains(sdb, "bookmarks")); /* control: the scan sees what is stored */
    ck_assert(!file_contains(sdb, "PLAINTEXT-BOOKMARK-MARKER"));
    ck_assert(!file_contains(sdb, "PLAINTEXT-PASSWORD-MARKER"));
    ck_assert(!file_contains(sdb, "marker.example"));
    ck_assert(!file_contains(kdb, "PLAINTEXT"));
    /* the attacker reads kA from the keyserver database */
    sqlite3 *k, *st;
    ck_assert_int_eq(sqlite3_open_v2(kdb, &k, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    ck_assert_int_eq(sqlite3_prepare_v2(k, "SELECT ka FROM accounts", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_bytes(q, 0), 32);
    uint8_t ka[32];
    memcpy(ka, sqlite3_column_blob(q, 0), 32);
    sqlite3_finalize(q);
    sqlite3_close(k);
    ck_assert_int_eq(sqlite3_open_v2(sdb, &st, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    const char *colls[2] = {"bookmarks", "passwords"};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sqlite3_prepare_v2(st, "SELECT id, payload FROM bsos WHERE coll = ?", -1, &q, NULL),
                         SQLITE_OK);
        sqlite3_bind_text(q, 1, colls[i], -1, SQLITE_STATIC);
        ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
        const char *id = (const char *)sqlite3_column_text(q, 0),
                   *payload = (const char *)sqlite3_column_text(q, 1);
        picl_class_entry kid;
        ck_assert_int_eq(picl__record_kid(payload, &kid), PICL_OK);
        /* with kA, whatever the kid claims, try the class-A key of generation 1 */
        picl_keypair keys;
        ck_assert_int_eq(picl__collection_keys(&keys, ka, colls[i], 1), PICL_OK);
        picl_class_entry as_a = {'A', 1};
        json_t *clear = NULL;
        picl_status rs = picl__record_decrypt(&clear, colls[i], id, payload, &keys, &as_a, 1, NULL);
        if (i == 0) {
            ck_assert(kid.cls == 'A');
            ck_assert_int_eq(rs, PICL_OK);
            ck_assert_str_eq(json_string_value(json_object_get(clear, "title")), "PLAINTEXT-BOOKMARK-MARKER");
        } else {
            ck_assert(kid.cls == 'B');
            ck_assert_int_eq(rs, PICL_ERROR_DECRYPT);
            ck_assert_ptr_null(clear);
            /* nor by pretending the record is class A under the kA keys */
            picl_class_entry as_b = {'B', 1};
            ck_assert_int_eq(picl__record_decrypt(&clear, colls[i], id, payload, &keys, &as_b, 0, NULL),
                             PICL_ERROR_DECRYPT);
        }
        json_decref(clear);
        sqlite3_finalize(q);
    }
    sqlite3_close(st);
    picl_service_release(d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("service");
    TCase *tc = tcase_create("service");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_account_sync_move_reset);
    tcase_add_test(tc, test_errors_and_interfaces);
    tcase_add_test(tc, test_compromise);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
