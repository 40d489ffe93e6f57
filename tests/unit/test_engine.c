/* SPDX-License-Identifier: MPL-2.0 */
/* test_engine.c -- the sync engine over HTTP against a real storage server:
 * devices converge, conflicts, tombstones, the class map under attack, class
 * moves (also after a crash), and a password reset seen from another device. */
#include "testutil.h"
#include "storage_fixture.h"
#include "client/engine.h"
#include "client/records.h"
#include "crypto/codec.h"
#include "crypto/util.h"
#include "crypto/nss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char nssdir[64];

typedef struct device {
    char dir[64];
    picl_state *st;
    picl_stc *stc;
    picl_store *bm, *pw, *hi;
} device;

static uint8_t KA[32], KB[32];

/* The keyserver's class map anchor (records.md 4), in memory: the engine
 * tests run the storage server only; test_classmap_anchor.c runs both.  The
 * keyserver's rule: a higher version, or the same with the same hmac; a
 * password reset is current_epoch + 1. */
static picl_anchor ANCHOR;
static json_t *LAST_FAILURES; /* e.failures of the last dev_sync */

static picl_status anchor_get(void *ctx, picl_anchor *out)
{
    (void)ctx;
    *out = ANCHOR;
    return PICL_OK;
}

static int ANCHOR_POST_DOWN; /* the keyserver cannot be reached for a POST */

static picl_status anchor_post(void *ctx, uint64_t version, const char *hmac)
{
    (void)ctx;
    if (ANCHOR_POST_DOWN)
        return PICL_ERROR_NETWORK;
    if (version < ANCHOR.version || (version == ANCHOR.version && strcmp(hmac, ANCHOR.hmac)))
        return PICL_ERROR_CONFLICT;
    ANCHOR.version = version;
    snprintf(ANCHOR.hmac, sizeof ANCHOR.hmac, "%s", hmac);
    ANCHOR.epoch = ANCHOR.current_epoch;
    return PICL_OK;
}

static json_t *UPLOADS; /* when set: the bookmarks' "upload" notifications, [done, total] */

static void note_upload(void *ctx, const char *phase, const char *coll, int64_t done, int64_t total,
                        const char *msg)
{
    (void)ctx;
    (void)msg;
    if (UPLOADS && !strcmp(phase, "upload") && !strcmp(coll, "bookmarks"))
        json_array_append_new(UPLOADS, json_pack("[I, I]", (json_int_t)done, (json_int_t)total));
}

static void engine_init(picl_engine *e, picl_stc *stc, picl_state *st)
{
    picl__engine_init(e, stc, st);
    e->anchor_get = anchor_get;
    e->anchor_post = anchor_post;
    e->notify = note_upload;
}

static void setup(void)
{
    /* SDR needs a key database as the internal slot: open it first */
    snprintf(nssdir, sizeof nssdir, "/tmp/picl-eng-nss-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(nssdir));
    ck_assert_int_eq(picl__nss_acquire_dir(nssdir), PICL_OK);
    sf_setup();
    for (int i = 0; i < 32; i++) {
        KA[i] = (uint8_t)(0x20 + i);
        KB[i] = (uint8_t)(0x40 + i);
    }
    memset(&ANCHOR, 0, sizeof ANCHOR);
    ANCHOR.current_epoch = 1;
    ANCHOR_POST_DOWN = 0;
}

/* The same with a server whose batches hold at most 25 records. */
static void setup_small(void)
{
    snprintf(nssdir, sizeof nssdir, "/tmp/picl-eng-nss-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(nssdir));
    ck_assert_int_eq(picl__nss_acquire_dir(nssdir), PICL_OK);
    storage_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.limits.max_total_records = 25;
    cfg.limits.max_post_records = 10;
    sf_setup_with(&cfg);
    for (int i = 0; i < 32; i++) {
        KA[i] = (uint8_t)(0x20 + i);
        KB[i] = (uint8_t)(0x40 + i);
    }
    memset(&ANCHOR, 0, sizeof ANCHOR);
    ANCHOR.current_epoch = 1;
    ANCHOR_POST_DOWN = 0;
}

static void teardown(void)
{
    json_decref(LAST_FAILURES);
    LAST_FAILURES = NULL;
    sf_teardown();
    picl__nss_release();
    ck_assert_int_eq(tu_rmtree(nssdir), 0);
}

static void dev_open(device *d, const uint8_t *kb)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "/tmp/picl-eng-dev-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d->dir));
    ck_assert_int_eq(picl__state_load(&d->st, d->dir, 1), PICL_OK);
    memcpy(d->st->ka, KA, 32);
    d->st->has_ka = 1;
    d->st->key_epoch = ANCHOR.current_epoch; /* keys fetched now */
    if (kb) {
        memcpy(d->st->kb, kb, 32);
        d->st->has_kb = 1;
    }
    char ep[256];
    snprintf(ep, sizeof ep, "%s/1.5/%d", SF.node, SF_UID);
    ck_assert_int_eq(picl__stc_new(&d->stc, ep, SF.cred.token, SF.cred.key), PICL_OK);
    ck_assert_int_eq(picl__memstore_open(&d->bm, "bookmarks"), PICL_OK);
    ck_assert_int_eq(picl__memstore_open(&d->pw, "passwords"), PICL_OK);
    ck_assert_int_eq(picl__memstore_open(&d->hi, "history"), PICL_OK);
}

static void dev_close(device *d)
{
    picl__store_close(d->bm);
    picl__store_close(d->pw);
    picl__store_close(d->hi);
    picl__stc_free(d->stc);
    picl__state_free(d->st);
    ck_assert_int_eq(tu_rmtree(d->dir), 0);
}

/* Runs a sync of all three collections; returns the status, summary in *out. */
static picl_status dev_sync(device *d, json_t **out, char *err)
{
    picl_engine e;
    engine_init(&e, d->stc, d->st);
    picl_store *stores[3] = {d->bm, d->pw, d->hi};
    json_t *summary = json_object();
    picl_status st = picl__engine_sync(&e, stores, 3, summary);
    if (err)
        snprintf(err, 256, "%s", e.error);
    json_decref(LAST_FAILURES);
    LAST_FAILURES = e.failures ? json_deep_copy(e.failures) : json_array();
    picl__engine_done(&e);
    if (out)
        *out = summary;
    else
        json_decref(summary);
    return st;
}

static void sync_ok(device *d)
{
    char err[256];
    picl_status st = dev_sync(d, NULL, err);
    ck_assert_msg(st == PICL_OK, "sync failed: %d %s", st, err);
}

static json_t *J(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(j);
    return j;
}

static void put(picl_store *s, const char *text)
{
    json_t *r = J(text);
    ck_assert_int_eq(picl__memstore_put(s, r), PICL_OK);
    json_decref(r);
}

static json_t *get(picl_store *s, const char *id)
{
    json_t *r = NULL;
    ck_assert_int_eq(picl__store_get(s, id, &r), PICL_OK);
    return r;
}

static void assert_same_store(picl_store *a, picl_store *b)
{
    json_t *x, *y;
    ck_assert_int_eq(picl__store_all(a, &x), PICL_OK);
    ck_assert_int_eq(picl__store_all(b, &y), PICL_OK);
    ck_assert_uint_eq(json_array_size(x), json_array_size(y));
    size_t i;
    json_t *r;
    json_array_foreach (x, i, r) {
        json_t *o = get(b, json_string_value(json_object_get(r, "id")));
        ck_assert_msg(o && json_equal(o, r), "%s differs: %s", a->collection, json_dumps(r, JSON_COMPACT));
        json_decref(o);
    }
    json_decref(x);
    json_decref(y);
}

/* The BSO payload of an item on the server, via the raw API. */
static json_t *server_payload(const char *coll, const char *id)
{
    char path[256];
    snprintf(path, sizeof path, "/storage/%s/%s", coll, id);
    tu_resp r = sf_req("GET", path, NULL);
    json_t *p = NULL;
    if (r.status == 200) {
        json_t *bso = J(r.body);
        p = J(json_string_value(json_object_get(bso, "payload")));
        json_decref(bso);
    }
    tu_resp_free(&r);
    return p;
}

static const char *BM1 =
    "{\"id\":\"bm1_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"One\","
    "\"bmkUri\":\"https://one.example/\",\"tags\":[],\"dateAdded\":1}";
static const char *PW1 = "{\"id\":\"{pw-1}\",\"hostname\":\"https://site.example\",\"username\":\"u\","
                         "\"password\":\"p1\",\"timePasswordChanged\":1000}";
static const char *HI1 = "{\"id\":\"hi1_________\",\"histUri\":\"https://h.example/\",\"title\":\"H\","
                         "\"visits\":[{\"date\":1000000,\"type\":1}]}";

START_TEST(test_two_and_three_devices_converge)
{
    device d1, d2, d3;
    dev_open(&d1, KB);
    dev_open(&d2, KB);
    dev_open(&d3, KB);
    put(d1.bm, BM1);
    put(d1.pw, PW1);
    put(d1.hi, HI1);
    json_t *sum;
    ck_assert_int_eq(dev_sync(&d1, &sum, NULL), PICL_OK);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(sum, "passwords"), "uploaded")), 1);
    json_decref(sum);
    /* the ciphertext on the server names its key; passwords are class B */
    json_t *p = server_payload("passwords", "{pw-1}");
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:1");
    char *ptext = json_dumps(p, 0);
    ck_assert_ptr_null(strstr(ptext, "site.example")); /* long enough not to occur in base64 by chance */
    free(ptext);
    json_decref(p);
    p = server_payload("bookmarks", "bm1_________");
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "A:1");
    json_decref(p);
    sync_ok(&d2);
    assert_same_store(d1.bm, d2.bm);
    assert_same_store(d1.pw, d2.pw);
    assert_same_store(d1.hi, d2.hi);
    /* interleaved edits on three devices */
    put(d2.bm, "{\"id\":\"bm2_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"Two\"}");
    sync_ok(&d3);
    put(d3.pw, "{\"id\":\"{pw-3}\",\"hostname\":\"https://"
               "three.example\",\"password\":\"p3\",\"timePasswordChanged\":5}");
    ck_assert_int_eq(picl__memstore_delete(d1.hi, "hi1_________"), PICL_OK);
    sync_ok(&d2);
    sync_ok(&d3);
    sync_ok(&d1);
    sync_ok(&d2);
    sync_ok(&d3);
    for (int i = 0; i < 3; i++) {
        device *a = i == 0 ? &d1 : i == 1 ? &d2 : &d3, *b = i == 2 ? &d1 : i == 0 ? &d2 : &d3;
        assert_same_store(a->bm, b->bm);
        assert_same_store(a->pw, b->pw);
        assert_same_store(a->hi, b->hi);
    }
    json_t *gone = get(d3.hi, "hi1_________");
    ck_assert_ptr_null(gone); /* the tombstone travelled */
    json_t *two = get(d1.bm, "bm2_________");
    ck_assert_ptr_nonnull(two);
    json_decref(two);
    /* an incremental sync with one change: at most 3 requests each way */
    sync_ok(&d1);
    sync_ok(&d2);
    sync_ok(&d1); /* settle meta (written by the syncs above) */
    sync_ok(&d2);
    put(d1.bm, "{\"id\":\"bm2_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"Two!\"}");
    uint64_t r0 = picl__stc_request_count(d1.stc);
    sync_ok(&d1);
    ck_assert_uint_le(picl__stc_request_count(d1.stc) - r0, 3);
    r0 = picl__stc_request_count(d2.stc);
    sync_ok(&d2);
    ck_assert_uint_le(picl__stc_request_count(d2.stc) - r0, 3);
    json_t *two2 = get(d2.bm, "bm2_________");
    ck_assert_str_eq(json_string_value(json_object_get(two2, "title")), "Two!");
    json_decref(two2);
    /* nothing changed: the next sync is one request */
    r0 = picl__stc_request_count(d1.stc);
    sync_ok(&d1);
    ck_assert_uint_eq(picl__stc_request_count(d1.stc) - r0, 1);
    /* nothing changed: the next sync is a no-op */
    ck_assert_int_eq(dev_sync(&d1, &sum, NULL), PICL_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(sum, "bookmarks"), "status")),
                     "unchanged");
    json_decref(sum);
    dev_close(&d1);
    dev_close(&d2);
    dev_close(&d3);
}
END_TEST

START_TEST(test_conflicts)
{
    device d1, d2;
    dev_open(&d1, KB);
    dev_open(&d2, KB);
    put(d1.pw, PW1);
    put(d1.hi, HI1);
    sync_ok(&d1);
    sync_ok(&d2);
    /* both change the same login; the later change wins everywhere */
    put(d1.pw,
        "{\"id\":\"{pw-1}\",\"hostname\":\"https://site.example\",\"username\":\"u\",\"password\":\"late\","
        "\"timePasswordChanged\":3000}");
    put(d2.pw,
        "{\"id\":\"{pw-1}\",\"hostname\":\"https://site.example\",\"username\":\"u\",\"password\":\"early\","
        "\"timePasswordChanged\":2000}");
    /* both visit the same page */
    put(d1.hi, "{\"id\":\"hi1_________\",\"histUri\":\"https://h.example/\",\"title\":\"H\","
               "\"visits\":[{\"date\":3000000,\"type\":1},{\"date\":1000000,\"type\":1}]}");
    put(d2.hi, "{\"id\":\"hi1_________\",\"histUri\":\"https://h.example/\",\"title\":\"H2\","
               "\"visits\":[{\"date\":2000000,\"type\":2},{\"date\":1000000,\"type\":1}]}");
    sync_ok(&d1);
    sync_ok(&d2);
    sync_ok(&d1);
    json_t *a = get(d1.pw, "{pw-1}"), *b = get(d2.pw, "{pw-1}");
    ck_assert_str_eq(json_string_value(json_object_get(a, "password")), "late");
    ck_assert(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    a = get(d1.hi, "hi1_________");
    b = get(d2.hi, "hi1_________");
    ck_assert(json_equal(a, b));
    ck_assert_uint_eq(json_array_size(json_object_get(a, "visits")), 3);
    json_decref(a);
    json_decref(b);
    /* deleted on one device, edited on the other: the edit survives */
    ck_assert_int_eq(picl__memstore_delete(d1.pw, "{pw-1}"), PICL_OK);
    sync_ok(&d1);
    put(d2.pw,
        "{\"id\":\"{pw-1}\",\"hostname\":\"https://site.example\",\"username\":\"u\",\"password\":\"kept\","
        "\"timePasswordChanged\":4000}");
    /* d2 had not seen the deletion: it downloads the tombstone with its own edit pending */
    sync_ok(&d2);
    sync_ok(&d1);
    a = get(d1.pw, "{pw-1}");
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(json_string_value(json_object_get(a, "password")), "kept");
    json_decref(a);
    dev_close(&d1);
    dev_close(&d2);
}
END_TEST

START_TEST(test_bookmark_orphan_to_unfiled)
{
    device d1, d2;
    dev_open(&d1, KB);
    dev_open(&d2, KB);
    put(d1.bm,
        "{\"id\":\"child_______\",\"type\":\"bookmark\",\"parentid\":\"folderGone__\",\"title\":\"C\"}");
    sync_ok(&d1);
    sync_ok(&d2);
    json_t *c = get(d2.bm, "child_______");
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(json_string_value(json_object_get(c, "parentid")), "unfiled");
    json_decref(c);
    json_t *u = get(d2.bm, "unfiled");
    ck_assert_ptr_nonnull(u);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(u, "children"), 0)), "child_______");
    json_decref(u);
    sync_ok(&d1); /* the repair travelled back */
    c = get(d1.bm, "child_______");
    ck_assert_str_eq(json_string_value(json_object_get(c, "parentid")), "unfiled");
    json_decref(c);
    dev_close(&d1);
    dev_close(&d2);
}
END_TEST

/* Writes a BSO on the server directly (a hostile or buggy server). */
static void server_put(const char *coll, const char *id, const char *payload)
{
    json_t *bso = json_pack("{s:s}", "payload", payload);
    char *body = json_dumps(bso, 0), path[256];
    snprintf(path, sizeof path, "/storage/%s/%s", coll, id);
    tu_resp r = sf_req("PUT", path, body);
    ck_assert_int_eq(r.status, 200);
    tu_resp_free(&r);
    free(body);
    json_decref(bso);
}

static const char *map_class(json_t *map, const char *c)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(map, "collections"), c), "class"));
}

START_TEST(test_class_map_attacks)
{
    device d1, d2;
    dev_open(&d1, KB);
    dev_open(&d2, KB);
    put(d1.pw, PW1);
    sync_ok(&d1);
    json_t *map = server_payload("meta", "classes");
    ck_assert_int_eq(json_integer_value(json_object_get(map, "version")), 1);
    ck_assert_uint_eq(ANCHOR.version, 1); /* registered on the keyserver */
    /* the server rewrites passwords to class A (to read them with kA) */
    json_t *forged = json_deep_copy(map);
    json_object_set_new(json_object_get(json_object_get(forged, "collections"), "passwords"), "class",
                        json_string("A"));
    char *text = json_dumps(forged, JSON_COMPACT | JSON_SORT_KEYS);
    server_put("meta", "classes", text);
    free(text);
    /* ... also with another kB field and a garbage hmac, which the old code
     * took for a password reset and "repaired" from the defaults */
    json_object_set_new(forged, "kB", json_string("00112233445566778899aabbccddeeff"));
    json_object_set_new(forged, "hmac",
                        json_string("6a6b6c6d6e6f6a6b6c6d6e6f6a6b6c6d6e6f6a6b6c6d6e6f6a6b6c6d6e6f0000"));
    char *text2 = json_dumps(forged, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(forged);
    put(d2.pw, "{\"id\":\"{pw-2}\",\"hostname\":\"https://"
               "two.example\",\"password\":\"secret2\",\"timePasswordChanged\":1}");
    char err[256];
    ck_assert_int_eq(dev_sync(&d2, NULL, err), PICL_ERROR_CLASSMAP);
    ck_assert_ptr_nonnull(strstr(err, "forged"));
    server_put("meta", "classes", text2);
    free(text2);
    ck_assert_int_eq(dev_sync(&d2, NULL, err), PICL_ERROR_CLASSMAP);
    ck_assert_ptr_nonnull(strstr(err, "forged"));
    ck_assert_int_eq(dev_sync(&d1, NULL, err), PICL_ERROR_CLASSMAP);
    json_t *none = server_payload("passwords", "{pw-2}");
    ck_assert_ptr_null(none);                          /* nothing uploaded under a weaker class */
    json_t *still = server_payload("meta", "classes"); /* and the forgery was not replaced by a "repair" */
    ck_assert_str_eq(json_string_value(json_object_get(still, "kB")), "00112233445566778899aabbccddeeff");
    json_decref(still);
    ck_assert_uint_eq(ANCHOR.version, 1);
    /* a replayed older map is refused too */
    text = json_dumps(map, JSON_COMPACT | JSON_SORT_KEYS);
    server_put("meta", "classes", text); /* genuine v1 back */
    ck_assert_int_eq(dev_sync(&d2, NULL, err), PICL_OK);
    picl_engine e;
    engine_init(&e, d1.stc, d1.st);
    ck_assert_int_eq(picl__engine_set_class(&e, "history", 'B'), PICL_OK); /* map v2 */
    picl__engine_done(&e);
    ck_assert_uint_eq(ANCHOR.version, 2);
    server_put("meta", "classes", text); /* v1 replayed */
    ck_assert_int_eq(dev_sync(&d1, NULL, err), PICL_ERROR_CLASSMAP);
    ck_assert_ptr_nonnull(strstr(err, "old version"));
    /* to a device that never saw v2: the anchor refuses it */
    put(d2.hi, HI1);
    ck_assert_int_eq(dev_sync(&d2, NULL, err), PICL_ERROR_CLASSMAP);
    ck_assert_ptr_null(server_payload("history", "hi1_________"));
    /* and to a fresh device (nothing accepted yet) */
    device d3;
    dev_open(&d3, KB);
    put(d3.hi, "{\"id\":\"hi3_________\",\"histUri\":\"https://three.example/\",\"visits\":[]}");
    ck_assert_int_eq(dev_sync(&d3, NULL, err), PICL_ERROR_CLASSMAP);
    ck_assert_ptr_null(server_payload("history", "hi3_________"));
    free(text);
    json_decref(map);
    /* the map disappears: a fresh device refuses and writes no defaults */
    tu_resp r = sf_req("DELETE", "/storage/meta/classes", NULL);
    tu_resp_free(&r);
    ck_assert_int_eq(dev_sync(&d3, NULL, err), PICL_ERROR_CLASSMAP);
    ck_assert_ptr_nonnull(strstr(err, "missing"));
    ck_assert_ptr_null(server_payload("meta", "classes"));
    ck_assert_ptr_null(server_payload("history", "hi3_________"));
    /* d1 puts back its own copy, which is exactly the anchored map */
    sync_ok(&d1);
    map = server_payload("meta", "classes");
    ck_assert_int_eq(json_integer_value(json_object_get(map, "version")), 2);
    ck_assert_str_eq(map_class(map, "history"), "B");
    ck_assert_str_eq(map_class(map, "passwords"), "B");
    json_decref(map);
    /* then the others go on, with history in class B */
    sync_ok(&d3);
    json_t *p = server_payload("history", "hi3_________");
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:2");
    json_decref(p);
    dev_close(&d1);
    dev_close(&d2);
    dev_close(&d3);
}
END_TEST

START_TEST(test_move_and_resume)
{
    device d1, d2;
    dev_open(&d1, KB);
    dev_open(&d2, KB);
    put(d1.bm, BM1);
    put(d1.bm, "{\"id\":\"bm2_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"Two\"}");
    sync_ok(&d1);
    sync_ok(&d2);
    picl_engine e;
    engine_init(&e, d1.stc, d1.st);
    ck_assert_int_eq(picl__engine_set_class(&e, "bookmarks", 'B'), PICL_OK);
    picl_class_entry ce;
    ck_assert_int_eq(picl__engine_get_class(&e, "bookmarks", &ce), PICL_OK);
    ck_assert(ce.cls == 'B' && ce.generation == 2);
    picl__engine_done(&e);
    json_t *p = server_payload("bookmarks", "bm1_________");
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:2");
    json_decref(p);
    /* the other device picks it up without any action and keeps syncing */
    put(d2.bm, "{\"id\":\"bm3_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"Three\"}");
    sync_ok(&d2);
    p = server_payload("bookmarks", "bm3_________");
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:2");
    json_decref(p);
    sync_ok(&d1);
    assert_same_store(d1.bm, d2.bm);
    /* a device without kB (strict mode, no password this run) cannot move */
    device d3;
    dev_open(&d3, NULL);
    engine_init(&e, d3.stc, d3.st);
    ck_assert_int_eq(picl__engine_set_class(&e, "bookmarks", 'A'), PICL_ERROR_STATE);
    picl__engine_done(&e);
    dev_close(&d3);
    /* a crash after the intent was saved: the next sync finishes the move */
    json_object_set_new(json_object_get(d2.st->collections, "bookmarks"), "move",
                        json_pack("{s:s, s:i}", "class", "A", "generation", 3));
    sync_ok(&d2);
    ck_assert_ptr_null(json_object_get(json_object_get(d2.st->collections, "bookmarks"), "move"));
    p = server_payload("bookmarks", "bm2_________");
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "A:3");
    json_decref(p);
    json_t *map = server_payload("meta", "classes");
    json_t *bmc = json_object_get(json_object_get(map, "collections"), "bookmarks");
    ck_assert_str_eq(json_string_value(json_object_get(bmc, "class")), "A");
    ck_assert_int_eq(json_integer_value(json_object_get(bmc, "generation")), 3);
    json_decref(map);
    sync_ok(&d1);
    assert_same_store(d1.bm, d2.bm);
    dev_close(&d1);
    dev_close(&d2);
}
END_TEST

static int64_t total_failed(json_t *sum)
{
    const char *c;
    json_t *v;
    int64_t n = 0;
    json_object_foreach (sum, c, v)
        n += json_integer_value(json_object_get(v, "failed"));
    return n;
}

/* A password reset (kA kept, kB new, the key epoch + 1): the first device
 * to sync rebuilds the map keeping every class-B choice, replaces the dead
 * class-B records; the device with the old keys stops and uploads nothing;
 * nobody reports the dead records as failures. */
START_TEST(test_password_reset_elsewhere)
{
    device d1, d2, d3;
    dev_open(&d1, KB);
    put(d1.pw, PW1);
    put(d1.bm, BM1);
    put(d1.hi, HI1);
    sync_ok(&d1);
    picl_engine e;
    engine_init(&e, d1.stc, d1.st);
    ck_assert_int_eq(picl__engine_set_class(&e, "history", 'B'), PICL_OK); /* the user's choice */
    picl__engine_done(&e);
    /* the password was reset: kA is kept, kB is new, the epoch moves on */
    ANCHOR.current_epoch = 2;
    uint8_t kb2[32];
    memset(kb2, 0x77, 32);
    dev_open(&d2, kb2);
    put(d2.pw, "{\"id\":\"{pw-2}\",\"hostname\":\"https://"
               "two.example\",\"password\":\"mine\",\"timePasswordChanged\":1}");
    json_t *sum;
    char err[256];
    ck_assert_int_eq(dev_sync(&d2, &sum, err), PICL_OK);
    ck_assert(json_is_true(json_object_get(sum, "keys_changed")));
    json_t *cb = json_object_get(sum, "class_b");
    ck_assert_uint_eq(json_array_size(cb), 2);
    ck_assert_str_eq(json_string_value(json_array_get(cb, 0)), "history");
    ck_assert_str_eq(json_string_value(json_array_get(cb, 1)), "passwords");
    ck_assert_int_eq(total_failed(sum), 0);
    json_decref(sum);
    json_t *bm = get(d2.bm, "bm1_________"); /* class A survived */
    ck_assert_ptr_nonnull(bm);
    json_decref(bm);
    json_t *old = get(d2.pw, "{pw-1}"); /* class B of the other device: lost by design */
    ck_assert_ptr_null(old);
    ck_assert_ptr_null(server_payload("passwords", "{pw-1}")); /* the dead records are gone */
    ck_assert_ptr_null(server_payload("history", "hi1_________"));
    json_t *p = server_payload("passwords", "{pw-2}");
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:2");
    json_decref(p);
    json_t *map = server_payload("meta", "classes");
    ck_assert_str_eq(map_class(map, "history"), "B"); /* the choice kept */
    ck_assert_str_eq(map_class(map, "passwords"), "B");
    ck_assert_str_eq(map_class(map, "bookmarks"), "A");
    ck_assert_int_eq(json_integer_value(json_object_get(map, "epoch")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(map, "version")), 3);
    ck_assert_uint_eq(ANCHOR.version, 3);
    ck_assert_uint_eq(ANCHOR.epoch, 2);
    char *map_text = json_dumps(map, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(map);
    /* the old device (keys of epoch 1) stops: sign in again, nothing uploaded */
    put(d1.bm, "{\"id\":\"bm9_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"N\"}");
    put(d1.hi, "{\"id\":\"hi9_________\",\"histUri\":\"https://nine.example/\",\"visits\":[]}");
    ck_assert_int_eq(dev_sync(&d1, NULL, err), PICL_ERROR_KEYS_CHANGED);
    ck_assert_ptr_nonnull(strstr(err, "sign in again"));
    ck_assert_ptr_null(server_payload("bookmarks", "bm9_________"));
    ck_assert_ptr_null(server_payload("history", "hi9_________"));
    map = server_payload("meta", "classes");
    char *now = json_dumps(map, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_str_eq(now, map_text); /* unchanged */
    free(now);
    json_decref(map);
    /* a new device signed in with the new password reads everything */
    dev_open(&d3, kb2);
    ck_assert_int_eq(dev_sync(&d3, &sum, err), PICL_OK);
    ck_assert_int_eq(total_failed(sum), 0);
    ck_assert_ptr_null(json_object_get(sum, "keys_changed"));
    json_decref(sum);
    assert_same_store(d2.pw, d3.pw);
    assert_same_store(d2.bm, d3.bm);
    /* d1 signs in again (new kB, epoch 2): it keeps its class-A and its own
     * class-B data, and the server's class B is re-established from it */
    memcpy(d1.st->kb, kb2, 32);
    d1.st->key_epoch = 2;
    ck_assert_int_eq(dev_sync(&d1, &sum, err), PICL_OK);
    ck_assert_int_eq(total_failed(sum), 0);
    json_decref(sum);
    old = get(d1.pw, "{pw-1}");
    ck_assert_ptr_nonnull(old);
    json_decref(old);
    p = server_payload("passwords", "{pw-1}");
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:2");
    json_decref(p);
    p = server_payload("history", "hi1_________");
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:3");
    json_decref(p);
    for (int round = 0; round < 2; round++) {
        device *ds[3] = {&d3, &d2, &d1};
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(dev_sync(ds[i], &sum, err), PICL_OK);
            ck_assert_int_eq(total_failed(sum), 0);
            json_decref(sum);
        }
    }
    assert_same_store(d1.pw, d3.pw);
    assert_same_store(d2.pw, d3.pw);
    assert_same_store(d1.bm, d2.bm);
    assert_same_store(d1.hi, d3.hi);
    map = server_payload("meta", "classes");
    ck_assert_str_eq(map_class(map, "history"), "B");
    json_decref(map);
    free(map_text);
    dev_close(&d1);
    dev_close(&d2);
    dev_close(&d3);
}
END_TEST

/* After a reset the server's unverifiable map can only make a class
 * stronger: claiming history is class B moves it to B (its class-A
 * records re-encrypted under the new kB, nothing lost), and claiming
 * passwords is class A changes nothing. */
START_TEST(test_reset_rebuild_only_strengthens)
{
    device d1, d2, d3;
    dev_open(&d1, KB);
    put(d1.hi, HI1);
    put(d1.pw, PW1);
    sync_ok(&d1);
    ANCHOR.current_epoch = 2; /* the password was reset */
    json_t *map = server_payload("meta", "classes");
    json_t *cols = json_object_get(map, "collections");
    json_object_set_new(json_object_get(cols, "history"), "class", json_string("B"));
    json_object_set_new(json_object_get(cols, "passwords"), "class", json_string("A"));
    char *text = json_dumps(map, JSON_COMPACT | JSON_SORT_KEYS);
    server_put("meta", "classes", text);
    free(text);
    json_decref(map);
    uint8_t kb2[32];
    memset(kb2, 0x55, 32);
    dev_open(&d2, kb2);
    json_t *sum;
    char err[256];
    ck_assert_int_eq(dev_sync(&d2, &sum, err), PICL_OK);
    ck_assert_int_eq(total_failed(sum), 0);
    json_decref(sum);
    map = server_payload("meta", "classes");
    ck_assert_str_eq(map_class(map, "history"), "B");
    ck_assert_str_eq(map_class(map, "passwords"), "B");
    ck_assert_str_eq(map_class(map, "bookmarks"), "A");
    json_decref(map);
    json_t *p = server_payload("history", "hi1_________");
    ck_assert_str_eq(json_string_value(json_object_get(p, "kid")), "B:2"); /* re-encrypted, not deleted */
    json_decref(p);
    json_t *h = get(d2.hi, "hi1_________");
    ck_assert_ptr_nonnull(h);
    json_decref(h);
    ck_assert_ptr_null(server_payload("passwords", "{pw-1}")); /* under the old kB: gone */
    dev_open(&d3, kb2);
    ck_assert_int_eq(dev_sync(&d3, &sum, err), PICL_OK);
    ck_assert_int_eq(total_failed(sum), 0);
    json_decref(sum);
    assert_same_store(d2.hi, d3.hi);
    dev_close(&d1);
    dev_close(&d2);
    dev_close(&d3);
}
END_TEST

/* A device that crashed (or lost the keyserver) between its two writes
 * left a valid map newer than the anchor: the next device accepts and
 * registers it.  A device whose key epoch is unknown (a state from before
 * epochs) learns it from the anchored map, or stops after a reset. */
START_TEST(test_anchor_newer_map_and_unknown_epoch)
{
    device d1, d2, d3, d4;
    dev_open(&d1, KB);
    dev_open(&d2, KB);
    put(d1.bm, BM1);
    sync_ok(&d1);
    sync_ok(&d2);
    ck_assert_uint_eq(ANCHOR.version, 1);
    ANCHOR_POST_DOWN = 1;
    picl_engine e;
    engine_init(&e, d1.stc, d1.st);
    ck_assert_int_eq(picl__engine_set_class(&e, "history", 'B'), PICL_ERROR_NETWORK);
    picl__engine_done(&e);
    ANCHOR_POST_DOWN = 0;
    json_t *map = server_payload("meta", "classes");
    ck_assert_int_eq(json_integer_value(json_object_get(map, "version")), 2); /* on storage, not anchored */
    json_decref(map);
    ck_assert_uint_eq(ANCHOR.version, 1);
    sync_ok(&d2); /* valid and newer than the anchor: accepted and registered */
    ck_assert_uint_eq(ANCHOR.version, 2);
    picl_class_entry ce;
    engine_init(&e, d2.stc, d2.st);
    ck_assert_int_eq(picl__engine_get_class(&e, "history", &ce), PICL_OK);
    ck_assert(ce.cls == 'B' && ce.generation == 2);
    picl__engine_done(&e);
    /* a state without a key epoch: the anchored map verifies under its kB */
    dev_open(&d3, KB);
    d3.st->key_epoch = 0;
    sync_ok(&d3);
    ck_assert_uint_eq(d3.st->key_epoch, 1);
    /* after a reset (epoch 2) a device with an unknown epoch cannot tell
     * whether its keys are current: it stops, uploading nothing */
    ANCHOR.current_epoch = 2;
    dev_open(&d4, KB);
    d4.st->key_epoch = 0;
    put(d4.bm, "{\"id\":\"bm4_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"Four\"}");
    char err[256];
    ck_assert_int_eq(dev_sync(&d4, NULL, err), PICL_ERROR_KEYS_CHANGED);
    ck_assert_ptr_nonnull(strstr(err, "sign in again"));
    ck_assert_uint_eq(d4.st->key_epoch, 0);
    ck_assert_ptr_null(server_payload("bookmarks", "bm4_________"));
    /* and a device that knows its keys are of epoch 1 is told the same as
     * soon as it has anything to do (with nothing to do, it asks nobody) */
    ck_assert_int_eq(dev_sync(&d2, NULL, err), PICL_OK);
    put(d2.bm, "{\"id\":\"bm5_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"Five\"}");
    ck_assert_int_eq(dev_sync(&d2, NULL, err), PICL_ERROR_KEYS_CHANGED);
    ck_assert_ptr_null(server_payload("bookmarks", "bm5_________"));
    dev_close(&d1);
    dev_close(&d2);
    dev_close(&d3);
    dev_close(&d4);
}
END_TEST

START_TEST(test_strict_mode_locks_class_b)
{
    device d1, d2;
    dev_open(&d1, KB);
    put(d1.pw, PW1);
    put(d1.bm, BM1);
    sync_ok(&d1);
    dev_open(&d2, KB);
    sync_ok(&d2); /* accepts the map with kB */
    picl__wipe(d2.st->kb, 32);
    d2.st->has_kb = 0; /* a restart in strict mode */
    put(d1.bm, "{\"id\":\"bm2_________\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"title\":\"Two\"}");
    sync_ok(&d1);
    json_t *sum;
    ck_assert_int_eq(dev_sync(&d2, &sum, NULL), PICL_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(sum, "passwords"), "status")),
                     "locked");
    json_decref(sum);
    json_t *b = get(d2.bm, "bm2_________"); /* class A still syncs */
    ck_assert_ptr_nonnull(b);
    json_decref(b);
    dev_close(&d1);
    dev_close(&d2);
}
END_TEST

/* The reason given for a (collection, id) in LAST_FAILURES, or NULL. */
static const char *failure_reason(const char *c, const char *id)
{
    size_t i;
    json_t *f;
    json_array_foreach (LAST_FAILURES, i, f) {
        if (!strcmp(json_string_value(json_object_get(f, "collection")), c) &&
            !strcmp(json_string_value(json_object_get(f, "id")), id))
            return json_string_value(json_object_get(f, "reason"));
    }
    return NULL;
}

/* Swapped, forged, truncated, non-JSON and IV-rewritten records: each
 * refused, named with its reason, never applied; the rest applied. */
START_TEST(test_malicious_records)
{
    device d1, d2;
    dev_open(&d1, KB);
    dev_open(&d2, KB);
    const char *ids[7] = {"{r1}", "{r2}", "{r3}", "{r4}", "{r5}", "{r6}", "{r7}"};
    for (int i = 0; i < 7; i++) {
        char rec[256];
        snprintf(rec, sizeof rec,
                 "{\"id\":\"%s\",\"hostname\":\"https://%d.example\",\"password\":\"p%d\","
                 "\"timePasswordChanged\":%d}",
                 ids[i], i, i, i + 1);
        put(d1.pw, rec);
    }
    sync_ok(&d1);
    json_t *p1 = server_payload("passwords", "{r1}"), *p2 = server_payload("passwords", "{r2}");
    char *t1 = json_dumps(p1, JSON_COMPACT), *t2 = json_dumps(p2, JSON_COMPACT);
    server_put("passwords", "{r1}", t2); /* a server swapping two records */
    server_put("passwords", "{r2}", t1);
    free(t1);
    free(t2);
    json_decref(p1);
    json_decref(p2);
    json_t *p3 = server_payload("passwords", "{r3}");
    json_object_set_new(p3, "hmac",
                        json_string("0000000000000000000000000000000000000000000000000000000000000000"));
    char *t3 = json_dumps(p3, JSON_COMPACT);
    server_put("passwords", "{r3}", t3); /* a bad HMAC */
    t3[strlen(t3) / 2] = 0;
    server_put("passwords", "{r4}", t3); /* truncated */
    server_put("passwords", "{r5}", "not JSON at all");
    free(t3);
    json_decref(p3);
    /* the IV rewritten: in Sync 1.5 this changes the first cleartext block
     * ({"id":"{r6}","h... -> another id or content) without touching the MAC */
    json_t *p6 = server_payload("passwords", "{r6}");
    uint8_t iv[16];
    size_t ivlen;
    const char *ivb = json_string_value(json_object_get(p6, "IV"));
    ck_assert_int_eq(picl__base64_decode(iv, 16, &ivlen, ivb, strlen(ivb)), PICL_OK);
    iv[9] ^= '6' ^ '7'; /* {"id":"{r6}" -> {"id":"{r7}" (byte 9) */
    char iv2[32];
    picl__base64_encode(iv2, iv, 16);
    json_object_set_new(p6, "IV", json_string(iv2));
    char *t6 = json_dumps(p6, JSON_COMPACT);
    server_put("passwords", "{r6}", t6);
    free(t6);
    json_decref(p6);
    json_t *sum;
    char err[256];
    ck_assert_int_eq(dev_sync(&d2, &sum, err), PICL_OK);
    json_t *ps = json_object_get(sum, "passwords");
    ck_assert_int_eq(json_integer_value(json_object_get(ps, "failed")), 6);
    ck_assert_int_eq(json_integer_value(json_object_get(ps, "applied")), 1);
    ck_assert_str_eq(json_string_value(json_object_get(ps, "status")), "partial");
    json_decref(sum);
    ck_assert_uint_eq(json_array_size(LAST_FAILURES), 6);
    ck_assert_str_eq(failure_reason("passwords", "{r1}"), "hmac mismatch");
    ck_assert_str_eq(failure_reason("passwords", "{r2}"), "hmac mismatch");
    ck_assert_str_eq(failure_reason("passwords", "{r3}"), "hmac mismatch");
    ck_assert_str_eq(failure_reason("passwords", "{r4}"), "not JSON");
    ck_assert_str_eq(failure_reason("passwords", "{r5}"), "not JSON");
    ck_assert_str_eq(failure_reason("passwords", "{r6}"), "hmac mismatch");
    ck_assert_ptr_null(failure_reason("passwords", "{r7}"));
    json_t *all;
    ck_assert_int_eq(picl__store_all(d2.pw, &all), PICL_OK);
    ck_assert_uint_eq(json_array_size(all), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(all, 0), "id")), "{r7}");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(all, 0), "password")), "p6");
    json_decref(all);
    /* the next sync names them again (they are fetched again, never skipped) */
    ck_assert_int_eq(dev_sync(&d2, NULL, err), PICL_OK);
    ck_assert_uint_eq(json_array_size(LAST_FAILURES), 6);
    dev_close(&d1);
    dev_close(&d2);
}
END_TEST

/* 1000 random edits, deletions and syncs on two devices (fixed seed): the
 * devices end identical, with no lost and no duplicated record. */
START_TEST(test_random_interleavings)
{
    device d[2];
    dev_open(&d[0], KB);
    dev_open(&d[1], KB);
    unsigned seed = 20131203;
    int clock = 1;
    for (int step = 0; step < 1000; step++) {
        device *x = &d[rand_r(&seed) % 2];
        int op = (int)(rand_r(&seed) % 10), k = (int)(rand_r(&seed) % 12);
        char id[32], rec[512];
        picl_store *s = (op & 1) ? x->pw : (op & 2) ? x->hi : x->bm;
        if (op < 3) {
            sync_ok(x);
            continue;
        }
        snprintf(id, sizeof id, "rec%09d", k);
        if (op == 3) {
            json_t *have = get(s, id);
            if (have)
                ck_assert_int_eq(picl__memstore_delete(s, id), PICL_OK);
            json_decref(have);
            continue;
        }
        clock++;
        if (s == x->pw)
            snprintf(rec, sizeof rec,
                     "{\"id\":\"%s\",\"hostname\":\"https://h%d\",\"password\":\"v%d\","
                     "\"timePasswordChanged\":%d}",
                     id, k, clock, clock);
        else if (s == x->hi)
            snprintf(rec, sizeof rec,
                     "{\"id\":\"%s\",\"histUri\":\"https://h%d/\",\"title\":\"t\","
                     "\"visits\":[{\"date\":%d,\"type\":1}]}",
                     id, k, clock * 1000);
        else
            snprintf(rec, sizeof rec,
                     "{\"id\":\"%s\",\"type\":\"bookmark\",\"parentid\":\"menu\","
                     "\"title\":\"v%d\"}",
                     id, clock);
        put(s, rec);
    }
    for (int i = 0; i < 3; i++) {
        sync_ok(&d[0]);
        sync_ok(&d[1]);
    }
    assert_same_store(d[0].bm, d[1].bm);
    assert_same_store(d[0].pw, d[1].pw);
    assert_same_store(d[0].hi, d[1].hi);
    /* and the server holds exactly the live records (tombstones aside) */
    json_t *all;
    ck_assert_int_eq(picl__store_all(d[0].pw, &all), PICL_OK);
    size_t live = json_array_size(all);
    json_decref(all);
    device fresh;
    dev_open(&fresh, KB);
    sync_ok(&fresh);
    ck_assert_int_eq(picl__store_all(fresh.pw, &all), PICL_OK);
    ck_assert_uint_eq(json_array_size(all), live);
    json_decref(all);
    assert_same_store(d[0].hi, fresh.hi);
    dev_close(&fresh);
    dev_close(&d[0]);
    dev_close(&d[1]);
}
END_TEST

START_TEST(test_timestamps)
{
    ck_assert_int_eq(picl__ts_parse("123.45"), 12345);
    ck_assert_int_eq(picl__ts_parse("0"), 0);
    ck_assert_int_eq(picl__ts_parse("7.5"), 750);
    ck_assert_int_eq(picl__ts_parse(""), -1);
    ck_assert_int_eq(picl__ts_parse("-1"), -1);
    ck_assert_int_eq(picl__ts_parse("1.2x"), -1);
    char t[24];
    picl__ts_format(t, 12305);
    ck_assert_str_eq(t, "123.05");
}
END_TEST

/* More records than one batch may hold: uploaded in several batches. */
START_TEST(test_upload_over_batch_limit)
{
    device d1, d2;
    dev_open(&d1, KB);
    dev_open(&d2, KB);
    for (int i = 0; i < 60; i++) {
        char rec[256];
        snprintf(rec, sizeof rec,
                 "{\"id\":\"bm%010d\",\"type\":\"bookmark\",\"parentid\":\"menu\","
                 "\"title\":\"n%d\"}",
                 i, i);
        put(d1.bm, rec);
    }
    json_t *sum;
    UPLOADS = json_array();
    ck_assert_int_eq(dev_sync(&d1, &sum, NULL), PICL_OK);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(sum, "bookmarks"), "uploaded")), 60);
    json_decref(sum);
    /* three batches of max_total_records (25, 25, 10), progress after each
     * but the last */
    char *t = json_dumps(UPLOADS, JSON_COMPACT);
    ck_assert_str_eq(t, "[[0,60],[25,60],[50,60],[60,60]]");
    free(t);
    json_decref(UPLOADS);
    UPLOADS = NULL;
    sync_ok(&d2);
    assert_same_store(d1.bm, d2.bm);
    json_t *all;
    ck_assert_int_eq(picl__store_all(d2.bm, &all), PICL_OK);
    ck_assert_uint_eq(json_array_size(all), 60);
    json_decref(all);
    /* a class move of 60 records goes through too */
    picl_engine e;
    engine_init(&e, d1.stc, d1.st);
    ck_assert_int_eq(picl__engine_set_class(&e, "bookmarks", 'B'), PICL_OK);
    picl__engine_done(&e);
    sync_ok(&d2);
    assert_same_store(d1.bm, d2.bm);
    dev_close(&d1);
    dev_close(&d2);
}
END_TEST

/* The upload writes each BSO's text itself: byte for byte jansson's compact
 * dump of {id, payload[, ttl]}, escapes and non-ASCII included. */
START_TEST(test_bso_text_as_jansson)
{
    static const char *const ids[] = {"abc", "a\"b\\c/d\n\t\b\f\r\x01\x1f\x7f",
                                      "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", ""};
    static const char *const pays[] = {"{\"ciphertext\":\"q/+=\",\"IV\":\"x\",\"hmac\":\"00ff\"}", "",
                                       "\x02\x1e\\\"", "\xc3\xa9 ok"};
    static const int64_t ttls[] = {-1, 1814400, 0};
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 4; j++)
            for (size_t k = 0; k < 3; k++) {
                json_t *o = json_pack("{s:s, s:s}", "id", ids[i], "payload", pays[j]);
                ck_assert_ptr_nonnull(o);
                if (ttls[k] >= 0)
                    json_object_set_new(o, "ttl", json_integer(ttls[k]));
                char *want = json_dumps(o, JSON_COMPACT);
                char *got = picl__record_bso_text(ids[i], pays[j], strlen(pays[j]), ttls[k]);
                ck_assert_str_eq(got, want);
                free(want);
                free(got);
                json_decref(o);
            }
    char *t = picl__record_bso_text("i\"d", "{\"a\":\"\x01\"}", 9, 5);
    ck_assert_str_eq(t, "{\"id\":\"i\\\"d\",\"payload\":\"{\\\"a\\\":\\\"\\u0001\\\"}\",\"ttl\":5}");
    free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("engine");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_two_and_three_devices_converge);
    tcase_add_test(tc, test_conflicts);
    tcase_add_test(tc, test_bookmark_orphan_to_unfiled);
    tcase_add_test(tc, test_class_map_attacks);
    tcase_add_test(tc, test_move_and_resume);
    tcase_add_test(tc, test_password_reset_elsewhere);
    tcase_add_test(tc, test_reset_rebuild_only_strengthens);
    tcase_add_test(tc, test_anchor_newer_map_and_unknown_epoch);
    tcase_add_test(tc, test_strict_mode_locks_class_b);
    tcase_add_test(tc, test_malicious_records);
    tcase_add_test(tc, test_random_interleavings);
    tcase_add_test(tc, test_timestamps);
    tcase_add_test(tc, test_bso_text_as_jansson);
    suite_add_tcase(s, tc);
    TCase *small = tcase_create("engine_small_batches");
    tcase_set_timeout(small, 60);
    tcase_add_checked_fixture(small, setup_small, teardown);
    tcase_add_test(small, test_upload_over_batch_limit);
    suite_add_tcase(s, small);
    return tu_run(s);
}
