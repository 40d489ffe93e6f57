/* SPDX-License-Identifier: MPL-2.0 */
/* test_alloc_fail.c -- allocation-failure sweeps: for every N, the Nth
 * allocation (project malloc family via -Wl,--wrap, jansson, SQLite; see
 * crypto/alloc.h) fails, and the crypto, record, protocol, class-map and
 * store code paths must end with a clean error (PICL_ERROR_NO_MEMORY), their
 * outputs empty, files whole (the old or the new content, never a mix), and
 * -- in the ASan build -- nothing leaked.  Each sweep runs until a pass
 * completes without reaching the Nth allocation, once failing only the Nth
 * allocation and once failing it and every later one (error paths that
 * allocate while cleaning up). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <secmod.h>
#include <sqlite3.h>

#include "testutil.h"
#include "client/records.h"
#include "crypto/alloc.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/nss.h"
#include "crypto/envelope.h"
#include "crypto/util.h"
#include "protocol/bundle.h"
#include "protocol/hawk.h"
#include "protocol/tokenlib.h"
#include "stores/logins.h"
#include "stores/places.h"

/* ---- the project's own allocations (this binary is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup:
 * every call from the project's objects lands here) ---------------------- */
void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

void *__wrap_malloc(size_t n) { return picl__test_alloc_fail_now() ? NULL : __real_malloc(n); }

void *__wrap_calloc(size_t a, size_t b) { return picl__test_alloc_fail_now() ? NULL : __real_calloc(a, b); }

void *__wrap_realloc(void *p, size_t n) { return picl__test_alloc_fail_now() ? NULL : __real_realloc(p, n); }

char *__wrap_strdup(const char *s) { return picl__test_alloc_fail_now() ? NULL : __real_strdup(s); }

char *__wrap_strndup(const char *s, size_t n)
{
    return picl__test_alloc_fail_now() ? NULL : __real_strndup(s, n);
}

/* NSS's softoken opens key4.db through the same SQLite and crashes when
 * one of those allocations fails (SECMOD_OpenUserDB, NSS 3.87): not ours to
 * fix, so no failure is injected while it runs (the call is still made). */
SECMODModule *__real_SECMOD_OpenUserDB(const char *spec);
SECMODModule *__wrap_SECMOD_OpenUserDB(const char *spec);

SECMODModule *__wrap_SECMOD_OpenUserDB(const char *spec)
{
    picl__test_alloc_pause(1);
    SECMODModule *m = __real_SECMOD_OpenUserDB(spec);
    picl__test_alloc_pause(0);
    return m;
}

/* ---- the sweep ---------------------------------------------------------- */

/* One pass over a code path: runs it with the injector armed (op), then,
 * disarmed, checks what it left (check: st is the pass's status, failed
 * whether an allocation was made to fail) and cleans up. */
typedef struct sweep_path {
    const char *name;
    picl_status (*op)(void *ctx);
    void (*check)(void *ctx, picl_status st, int failed);
    void *ctx;
    /* besides NO_MEMORY, the documented errors of a layer below that fails
     * for want of memory in its own way (0 = none): SQLite's SQLITE_NOMEM
     * is a database error of the places store; NSS, which opens key4.db
     * through the same SQLite, answers NSS_INIT or CRYPTO */
    picl_status refusal[2];
    /* fail every stride-th allocation (0 or 1: every one); PICL_ALLOC_FULL=1
     * in the environment sweeps every one anyway (the long run) */
    long stride;
} sweep_path;

/* Sweeps N = 1.. in both modes; returns the allocation count of the path
 * (the passes it took).  Every failed pass must end in PICL_ERROR_NO_MEMORY
 * or the path's refusal (or PICL_OK when the path could do without that
 * allocation: check then verifies the result is the right one). */
static long sweep_n; /* the allocation failed in the current pass (for messages) */
static int sweep_sticky;

static long sweep(const sweep_path *p)
{
    long total = 0, step = p->stride > 1 ? p->stride : 1;
    const char *full = getenv("PICL_ALLOC_FULL");
    if (full && !strcmp(full, "1"))
        step = 1;
    for (int sticky = 0; sticky < 2; sticky++) {
        long n;
        for (n = 1; n < 200000; n += step) {
            sweep_n = n;
            sweep_sticky = sticky;
            picl__test_alloc_fail_at(n, sticky);
            picl_status st = p->op(p->ctx);
            long injected = picl__test_alloc_injected();
            long count = picl__test_alloc_count();
            picl__test_alloc_fail_at(0, 0);
            if (st != PICL_OK && st != PICL_ERROR_NO_MEMORY && !(p->refusal[0] && st == p->refusal[0]) &&
                !(p->refusal[1] && st == p->refusal[1]))
                ck_abort_msg("%s: allocation %ld failed (%s): status %d, not NO_MEMORY", p->name, n,
                             sticky ? "and all after" : "only", (int)st);
            if (!injected)
                ck_assert_msg(st == PICL_OK, "%s: status %d with no allocation failed", p->name, (int)st);
            p->check(p->ctx, st, injected > 0);
            if (!injected) {
                if (!sticky)
                    total = count;
                break;
            }
        }
        ck_assert_msg(n > 1, "%s: the path allocated nothing: the hook does not see it", p->name);
    }
    if (step == 1)
        printf("alloc sweep %s: %ld allocations, each failed in turn: clean\n", p->name, total);
    else
        printf("alloc sweep %s: %ld allocations, every %ld-th failed (PICL_ALLOC_FULL=1: each): clean\n",
               p->name, total, step);
    return total;
}

static void setup(void) { tu_nss_setup(); }

static void teardown(void) { tu_nss_teardown(); }

/* ---- crypto: record seal/open, codecs ------------------------------------ */

typedef struct crypto_ctx {
    picl_keypair keys;
    picl_mac_context mac;
    uint8_t *clear;
    size_t clearlen;
    char *hex, *b64;
    uint8_t *raw;
    size_t rawlen;
} crypto_ctx;

static const char MSG[] = "{\"id\":\"rec1\",\"password\":\"hunter2\",\"hostname\":\"https://example.com\"}";

static picl_status crypto_op(void *c_)
{
    crypto_ctx *c = c_;
    picl_sealed s;
    memset(&s, 0, sizeof s);
    picl_status st = picl__record_seal(&s, &c->keys, &c->mac, NULL, (const uint8_t *)MSG, strlen(MSG));
    if (st != PICL_OK)
        return st;
    st = picl__record_open(&c->clear, &c->clearlen, &c->keys, &c->mac, s.ciphertext, s.iv, s.hmac);
    picl__sealed_free(&s);
    if (st != PICL_OK)
        return st;
    c->hex = picl__hex_encode_alloc((const uint8_t *)MSG, 20);
    if (!c->hex)
        return PICL_ERROR_NO_MEMORY;
    c->b64 = picl__base64url_encode_alloc((const uint8_t *)MSG, 20, 0);
    if (!c->b64)
        return PICL_ERROR_NO_MEMORY;
    return picl__base64url_decode_alloc(&c->raw, &c->rawlen, c->b64, strlen(c->b64));
}

static void crypto_check(void *c_, picl_status st, int failed)
{
    crypto_ctx *c = c_;
    if (st == PICL_OK) {
        ck_assert_uint_eq(c->clearlen, strlen(MSG));
        ck_assert_mem_eq(c->clear, MSG, c->clearlen);
        ck_assert_uint_eq(c->rawlen, 20);
        ck_assert_mem_eq(c->raw, MSG, 20);
    } else {
        /* a failed step returns nothing: the later outputs were never made */
        ck_assert(c->raw == NULL);
    }
    if (c->clear)
        picl__zfree(c->clear, c->clearlen);
    free(c->hex);
    free(c->b64);
    free(c->raw);
    c->clear = c->raw = NULL;
    c->hex = c->b64 = NULL;
    c->clearlen = c->rawlen = 0;
    (void)failed;
}

START_TEST(test_crypto_record_and_codecs)
{
    crypto_ctx c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(picl__random_bytes(&c.keys, sizeof c.keys), PICL_OK);
    picl__record_v2_context(&c.mac, "passwords", "rec1", "B:1");
    sweep_path p = {"crypto (record seal+open, hex, base64url)", crypto_op, crypto_check, &c, {0, 0}, 1};
    ck_assert_int_gt(sweep(&p), 3);
}
END_TEST

/* ---- records: encrypt/decrypt of a JSON record ---------------------------- */

typedef struct rec_ctx {
    picl_keypair keys;
    json_t *clear;
    json_t *out;
    char *payload;
} rec_ctx;

static picl_status rec_op(void *c_)
{
    rec_ctx *c = c_;
    picl_class_entry b1 = {'B', 1};
    picl_record_fault why = PICL_RECORD_FAULT_NONE;
    picl_status st = picl__record_encrypt(&c->payload, "passwords", c->clear, &c->keys, &b1);
    if (st != PICL_OK)
        return st;
    return picl__record_decrypt(&c->out, "passwords", "rec1", c->payload, &c->keys, &b1, 0, &why);
}

static void rec_check(void *c_, picl_status st, int failed)
{
    rec_ctx *c = c_;
    if (st == PICL_OK)
        ck_assert(json_equal(c->out, c->clear));
    else
        ck_assert(c->out == NULL);
    json_decref(c->out);
    free(c->payload);
    c->out = NULL;
    c->payload = NULL;
    (void)failed;
}

START_TEST(test_records_encrypt_decrypt)
{
    rec_ctx c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(picl__random_bytes(&c.keys, sizeof c.keys), PICL_OK);
    c.clear = json_loads(MSG, 0, NULL);
    ck_assert_ptr_nonnull(c.clear);
    sweep_path p = {"records (encrypt+decrypt)", rec_op, rec_check, &c, {0, 0}, 1};
    ck_assert_int_gt(sweep(&p), 3);
    json_decref(c.clear);
}
END_TEST

/* ---- protocol: tokenlib, Hawk, bundles ------------------------------------ */

static const uint8_t SECRET[] = "picl alloc-fail sweep secret, 32+ bytes";

typedef struct proto_ctx {
    picl_hawk_nonce_cache *nonces;
    picl_tokenlib_payload in, out;
    char *token, *key, *header, *bundle;
    uint8_t opened[64];
    int verified;
} proto_ctx;

static picl_status proto_op(void *c_)
{
    proto_ctx *c = c_;
    picl_status st = picl__tokenlib_mint(&c->token, &c->key, SECRET, sizeof SECRET - 1, &c->in);
    if (st != PICL_OK)
        return st;
    st = picl__tokenlib_parse(&c->out, SECRET, sizeof SECRET - 1, c->token, strlen(c->token), 0, 0);
    if (st != PICL_OK)
        return st;
    picl_hawk_request req = {
        "POST", "/1.5/42/storage/bookmarks?batch=true", "example.com", 443, "application/json", "[]", 2};
    st = picl__hawk_client_header(&c->header, c->token, c->key, strlen(c->key), &req, 1700000000, NULL, NULL);
    if (st != PICL_OK)
        return st;
    picl_hawk_auth a;
    st = picl__hawk_parse(&a, c->header, strlen(c->header));
    if (st != PICL_OK)
        return st;
    picl_hawk_verify_opts o = {.now = 1700000000, .skew = 60, .require_hash = 1, .nonces = c->nonces};
    st = picl__hawk_verify(&a, c->key, strlen(c->key), &req, &o);
    if (st != PICL_OK)
        return st;
    c->verified = 1;
    uint8_t key[32], payload[64];
    memset(key, 7, sizeof key);
    memset(payload, 9, sizeof payload);
    st = picl__bundle_seal_hex(&c->bundle, key, PICL_BUNDLE_ACCOUNT_KEYS, payload, sizeof payload);
    if (st != PICL_OK)
        return st;
    return picl__bundle_open_hex(c->opened, sizeof c->opened, key, PICL_BUNDLE_ACCOUNT_KEYS, c->bundle,
                                 strlen(c->bundle));
}

static void proto_check(void *c_, picl_status st, int failed)
{
    proto_ctx *c = c_;
    static const uint8_t zero[64];
    uint8_t nines[64];
    memset(nines, 9, sizeof nines);
    if (st == PICL_OK) {
        ck_assert(memcmp(&c->in.uid, &c->out.uid, sizeof c->in.uid) == 0);
        ck_assert_str_eq(c->out.node, c->in.node);
        ck_assert_int_eq(c->verified, 1);
        ck_assert_mem_eq(c->opened, nines, sizeof nines);
    } else {
        /* a bundle that could not be opened leaves zeros, never half a key */
        ck_assert(memcmp(c->opened, zero, sizeof zero) == 0);
    }
    free(c->token);
    if (c->key)
        picl__zfree(c->key, strlen(c->key));
    free(c->header);
    free(c->bundle);
    c->token = c->key = c->header = c->bundle = NULL;
    memset(c->opened, 0, sizeof c->opened);
    memset(&c->out, 0, sizeof c->out);
    c->verified = 0;
    /* a fresh nonce cache per pass: the same header is replayed on purpose */
    picl__hawk_nonce_cache_free(c->nonces);
    c->nonces = NULL;
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c->nonces, 64), PICL_OK);
    (void)failed;
}

START_TEST(test_protocol_tokens_hawk_bundles)
{
    proto_ctx c;
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(picl__hawk_nonce_cache_new(&c.nonces, 64), PICL_OK);
    c.in.uid = 42;
    snprintf(c.in.node, sizeof c.in.node, "https://storage.example.com");
    c.in.expires = 4000000000;
    snprintf(c.in.fxa_uid, sizeof c.in.fxa_uid, "fxa42");
    snprintf(c.in.fxa_kid, sizeof c.in.fxa_kid, "kid42");
    snprintf(c.in.hashed_fxa_uid, sizeof c.in.hashed_fxa_uid, "h42");
    snprintf(c.in.hashed_device_id, sizeof c.in.hashed_device_id, "dev");
    snprintf(c.in.salt, sizeof c.in.salt, "abc123");
    sweep_path p = {"protocol (tokenlib mint+parse, Hawk header+parse+verify, bundle seal+open)",
                    proto_op,
                    proto_check,
                    &c,
                    {0, 0},
                    1};
    ck_assert_int_gt(sweep(&p), 3);
    picl__hawk_nonce_cache_free(c.nonces);
}
END_TEST

/* ---- class map: sign, verify, parse ------------------------------------- */

typedef struct map_ctx {
    uint8_t kb[32];
    picl_classmap m, back, trusted;
    char *payload;
} map_ctx;

static picl_status map_op(void *c_)
{
    map_ctx *c = c_;
    picl_status st = picl__classmap_defaults(&c->m, c->kb);
    if (st != PICL_OK)
        return st;
    picl_class_entry b2 = {'B', 2};
    if ((st = picl__classmap_set(&c->m, "history", &b2)) != PICL_OK)
        return st;
    if ((st = picl__classmap_sign(&c->payload, &c->m, c->kb)) != PICL_OK)
        return st;
    if ((st = picl__classmap_verify(&c->back, c->payload, c->kb)) != PICL_OK)
        return st;
    return picl__classmap_parse_trusted(&c->trusted, c->payload);
}

static void map_check(void *c_, picl_status st, int failed)
{
    map_ctx *c = c_;
    if (st == PICL_OK) {
        const picl_class_entry *e = picl__classmap_get(&c->back, "history");
        ck_assert(e && e->cls == 'B' && e->generation == 2);
        e = picl__classmap_get(&c->trusted, "passwords");
        ck_assert(e && e->cls == 'B');
        ck_assert_str_eq(c->back.hmac, c->m.hmac);
    } else {
        /* a map that failed to verify or parse is empty, never partial */
        ck_assert(c->back.n == 0 || c->trusted.n == 0);
    }
    free(c->payload);
    c->payload = NULL;
    memset(&c->m, 0, sizeof c->m);
    memset(&c->back, 0, sizeof c->back);
    memset(&c->trusted, 0, sizeof c->trusted);
    (void)failed;
}

START_TEST(test_classmap_sign_verify_parse)
{
    map_ctx c;
    memset(&c, 0, sizeof c);
    memset(c.kb, 0x42, sizeof c.kb);
    sweep_path p = {
        "class map (defaults, set, sign, verify, parse_trusted)", map_op, map_check, &c, {0, 0}, 1};
    ck_assert_int_gt(sweep(&p), 3);
}
END_TEST

/* ---- stores: logins.json and places.sqlite ------------------------------ */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = __real_malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
}

typedef struct store_ctx {
    char dir[64];
    char file[128];
    const char *collection;
    const char *records;  /* JSON text applied in each pass */
    const char *probe_id; /* a record the pass adds */
    char *before;         /* the file before the pass */
    size_t before_len;
    picl_store *s;
    int applied_anyway; /* failed passes whose transaction was durable */
} store_ctx;

static picl_status store_open(store_ctx *c, picl_store **s)
{
    char err[256] = "";
    if (!strcmp(c->collection, "passwords"))
        return picl__logins_open(s, c->dir, c->dir, NULL, NULL, err, sizeof err);
    return picl__places_open(s, c->dir, c->collection, err, sizeof err);
}

static picl_status store_op(void *c_)
{
    store_ctx *c = c_;
    /* (jansson's own loader would drop a character of an id under a failed
     * allocation and apply another record: see crypto/alloc.h) */
    int oom;
    json_t *recs = picl__json_loadb(c->records, strlen(c->records), 0, NULL, &oom);
    if (!recs)
        return oom ? PICL_ERROR_NO_MEMORY : PICL_ERROR_ENCODING;
    picl_status st = picl__store_apply(c->s, recs);
    json_decref(recs);
    return st;
}

/* The probe record, as the store gives it back (NULL when absent). */
static json_t *store_probe(store_ctx *c)
{
    picl_store *s = NULL;
    json_t *r = NULL;
    ck_assert_int_eq(store_open(c, &s), PICL_OK);
    ck_assert_int_eq(picl__store_get(s, c->probe_id, &r), PICL_OK);
    picl__store_close(s);
    return r;
}

static void store_check(void *c_, picl_status st, int failed)
{
    store_ctx *c = c_;
    size_t len = 0;
    char *now = slurp(c->file, &len);
    picl__store_close(c->s);
    c->s = NULL;
    json_t *probe = store_probe(c);
    if (st == PICL_OK) {
        ck_assert_msg(probe != NULL, "%s: applied (allocation %ld failed%s), but the record is not there",
                      c->collection, sweep_n, sweep_sticky ? " and all after" : "");
    } else {
        /* all or nothing: logins.json is byte for byte what it was (never
         * half written) and the record is not there.  SQLite may report a
         * COMMIT that ran out of memory after the transaction was durable:
         * then the whole record is there (a later apply is the same), never
         * a part of it */
        if (probe && !strcmp(c->collection, "passwords")) {
            /* logins.json was written whole; the state file after it failed */
            ck_assert_str_eq(json_string_value(json_object_get(probe, "username")), "carol");
            ck_assert_str_eq(json_string_value(json_object_get(probe, "password")), "pw");
            c->applied_anyway++;
        } else if (probe) {
            ck_assert_str_eq(json_string_value(json_object_get(probe, "title")), "Rust");
            ck_assert_str_eq(json_string_value(json_object_get(probe, "bmkUri")),
                             "https://www.rust-lang.org/");
            ck_assert_str_eq(json_string_value(json_object_get(probe, "parentid")), "toolbar");
            c->applied_anyway++;
        } else if (!strcmp(c->collection, "passwords")) {
            ck_assert_uint_eq(len, c->before_len);
            ck_assert_mem_eq(now, c->before, len);
        }
    }
    if (!strcmp(c->collection, "passwords")) {
        json_t *doc = json_loadb(now, len, 0, NULL);
        ck_assert_msg(json_is_array(json_object_get(doc, "logins")), "logins.json is not whole");
        json_decref(doc);
    } else {
        /* SQLite: the database is consistent whatever failed */
        sqlite3 *db = NULL;
        char path[160];
        snprintf(path, sizeof path, "%s/places.sqlite", c->dir);
        ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_stmt *q = NULL;
        ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL), SQLITE_OK);
        ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
        ck_assert_str_eq((const char *)sqlite3_column_text(q, 0), "ok");
        sqlite3_finalize(q);
        sqlite3_close(db);
    }
    int present = probe != NULL;
    json_decref(probe);
    free(now);
    /* undo a pass that applied (so the next one applies again) and reopen */
    if (present) {
        if (!strcmp(c->collection, "passwords")) {
            put_file(c->file, c->before);
        } else {
            picl_store *s = NULL;
            ck_assert_int_eq(store_open(c, &s), PICL_OK);
            json_t *del = json_pack("[{s:s, s:b}]", "id", c->probe_id, "deleted", 1);
            picl_status ust = picl__store_apply(s, del);
            ck_assert_msg(ust == PICL_OK, "undo after pass %ld: %d %s", sweep_n, (int)ust,
                          picl__store_error(s));
            json_decref(del);
            picl__store_close(s);
        }
    }
    free(c->before);
    c->before = slurp(c->file, &c->before_len);
    ck_assert_int_eq(store_open(c, &c->s), PICL_OK);
    (void)failed;
}

/* Places schema 86 as Firefox ESR creates it (the tables the stores use). */
static const char PLACES[] =
    "PRAGMA journal_mode = WAL;"
    "CREATE TABLE moz_origins (id INTEGER PRIMARY KEY, prefix TEXT NOT NULL, host TEXT NOT NULL, frecency "
    "INTEGER "
    " NOT NULL, recalc_frecency INTEGER NOT NULL DEFAULT 0, alt_frecency INTEGER, recalc_alt_frecency "
    "INTEGER NOT "
    " NULL DEFAULT 0, block_until_ms INTEGER, block_pages_until_ms INTEGER, UNIQUE (prefix, host));"
    "CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url LONGVARCHAR, title LONGVARCHAR, rev_host "
    "LONGVARCHAR, "
    " visit_count INTEGER DEFAULT 0, hidden INTEGER DEFAULT 0 NOT NULL, typed INTEGER DEFAULT 0 NOT NULL, "
    "frecency "
    " INTEGER DEFAULT -1 NOT NULL, last_visit_date INTEGER, guid TEXT, foreign_count INTEGER DEFAULT 0 NOT "
    "NULL, "
    " url_hash INTEGER DEFAULT 0 NOT NULL, description TEXT, preview_image_url TEXT, site_name TEXT, "
    "origin_id "
    " INTEGER REFERENCES moz_origins(id), recalc_frecency INTEGER NOT NULL DEFAULT 0, alt_frecency INTEGER, "
    " recalc_alt_frecency INTEGER NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX moz_places_guid_uniqueindex ON moz_places (guid);"
    "CREATE INDEX moz_places_url_hashindex ON moz_places (url_hash);"
    "CREATE TABLE moz_places_extra (place_id INTEGER PRIMARY KEY NOT NULL, sync_json TEXT);"
    "CREATE TABLE moz_historyvisits (id INTEGER PRIMARY KEY, from_visit INTEGER, place_id INTEGER, "
    "visit_date "
    " INTEGER, visit_type INTEGER, session INTEGER, source INTEGER DEFAULT 0 NOT NULL, triggeringPlaceId "
    "INTEGER);"
    "CREATE TABLE moz_historyvisits_extra (visit_id INTEGER PRIMARY KEY NOT NULL, sync_json TEXT);"
    "CREATE TABLE moz_inputhistory (place_id INTEGER NOT NULL, input LONGVARCHAR NOT NULL, use_count "
    "INTEGER, "
    " PRIMARY KEY (place_id, input));"
    "CREATE TABLE moz_bookmarks (id INTEGER PRIMARY KEY, type INTEGER, fk INTEGER DEFAULT NULL, parent "
    "INTEGER, "
    " position INTEGER, title LONGVARCHAR, keyword_id INTEGER, folder_type TEXT, dateAdded INTEGER, "
    "lastModified "
    " INTEGER, guid TEXT, syncStatus INTEGER NOT NULL DEFAULT 0, syncChangeCounter INTEGER NOT NULL DEFAULT "
    "1);"
    "CREATE UNIQUE INDEX moz_bookmarks_guid_uniqueindex ON moz_bookmarks (guid);"
    "CREATE INDEX moz_bookmarks_itemindex ON moz_bookmarks (fk, type);"
    "CREATE TABLE moz_bookmarks_deleted (guid TEXT PRIMARY KEY, dateRemoved INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE moz_keywords (id INTEGER PRIMARY KEY AUTOINCREMENT, keyword TEXT UNIQUE, place_id INTEGER, "
    " post_data TEXT);"
    "CREATE UNIQUE INDEX moz_keywords_placepostdata_uniqueindex ON moz_keywords (place_id, post_data);"
    "CREATE TABLE moz_annos (id INTEGER PRIMARY KEY, place_id INTEGER NOT NULL, anno_attribute_id INTEGER, "
    "content "
    " LONGVARCHAR, flags INTEGER DEFAULT 0, expiration INTEGER DEFAULT 0, type INTEGER DEFAULT 0, dateAdded "
    "INTEGER "
    " DEFAULT 0, lastModified INTEGER DEFAULT 0);"
    "CREATE TABLE moz_meta (key TEXT PRIMARY KEY, value NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE moz_places_metadata (id INTEGER PRIMARY KEY, place_id INTEGER NOT NULL, referrer_place_id "
    "INTEGER, "
    " created_at INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL DEFAULT 0, total_view_time INTEGER "
    "NOT NULL "
    " DEFAULT 0, typing_time INTEGER NOT NULL DEFAULT 0, key_presses INTEGER NOT NULL DEFAULT 0, "
    "scrolling_time "
    " INTEGER NOT NULL DEFAULT 0, scrolling_distance INTEGER NOT NULL DEFAULT 0, document_type INTEGER NOT "
    "NULL "
    " DEFAULT 0, search_query_id INTEGER);"
    "INSERT INTO moz_bookmarks(id, type, parent, position, title, guid, dateAdded, lastModified) VALUES"
    " (1, 2, 0, 0, '', 'root________', 1, 1), (2, 2, 1, 0, 'menu', 'menu________', 1, 1),"
    " (3, 2, 1, 1, 'toolbar', 'toolbar_____', 1, 1), (4, 2, 1, 2, 'tags', 'tags________', 1, 1),"
    " (5, 2, 1, 3, 'unfiled', 'unfiled_____', 1, 1), (6, 2, 1, 4, 'mobile', 'mobile______', 1, 1);"
    "PRAGMA user_version = 86;";

static void store_sweep(const char *collection, const char *records, const char *probe_id, const char *file,
                        long stride)
{
    store_ctx c;
    memset(&c, 0, sizeof c);
    snprintf(c.dir, sizeof c.dir, "/tmp/picl-allocfail-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(c.dir));
    c.collection = collection;
    c.records = records;
    c.probe_id = probe_id;
    snprintf(c.file, sizeof c.file, "%s/%s", c.dir, file);
    /* a profile: places.sqlite with Firefox's schema; logins.json with one login */
    char path[160];
    sqlite3 *db = NULL;
    snprintf(path, sizeof path, "%s/places.sqlite", c.dir);
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, PLACES, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    if (!strcmp(collection, "passwords")) {
        picl_store *s = NULL;
        ck_assert_int_eq(store_open(&c, &s), PICL_OK);
        json_t *one =
            json_loads("[{\"id\":\"{00000000-0000-4000-8000-000000000001}\",\"hostname\":"
                       "\"https://old.example\",\"formSubmitURL\":\"https://old.example\",\"httpRealm\":null,"
                       "\"username\":\"old\",\"password\":\"old-pw\",\"usernameField\":\"u\","
                       "\"passwordField\":\"p\"}]",
                       0, NULL);
        ck_assert_int_eq(picl__store_apply(s, one), PICL_OK);
        json_decref(one);
        picl__store_close(s);
    }
    c.before = slurp(c.file, &c.before_len);
    ck_assert_int_eq(store_open(&c, &c.s), PICL_OK);
    char name[96];
    snprintf(name, sizeof name, "store %s (apply)", collection);
    /* ~150 passes per mode in make check (a pass reopens the store) */
    sweep_path p = {name, store_op, store_check, &c, {PICL_ERROR_DATABASE, 0}, stride};
    if (!strcmp(collection, "passwords")) {
        p.refusal[0] = PICL_ERROR_NSS_INIT;
        p.refusal[1] = PICL_ERROR_CRYPTO;
    }
    ck_assert_int_gt(sweep(&p), 3);
    if (c.applied_anyway)
        printf("alloc sweep %s: %d failed passes had made their write durable first (the whole record, as "
               "a retry makes it)\n",
               name, c.applied_anyway);
    picl__store_close(c.s);
    free(c.before);
    tu_rmtree(c.dir);
}

START_TEST(test_store_logins_apply)
{
    store_sweep(
        "passwords",
        "[{\"id\":\"{11111111-2222-4333-8444-555555555555}\",\"hostname\":\"https://new.example.net\","
        "\"formSubmitURL\":\"https://new.example.net\",\"httpRealm\":null,\"username\":\"carol\","
        "\"password\":\"pw\",\"usernameField\":\"u\",\"passwordField\":\"p\",\"timesUsed\":3,"
        "\"futureField\":{\"x\":1}}]",
        "{11111111-2222-4333-8444-555555555555}", "logins.json", 7);
}
END_TEST

START_TEST(test_store_bookmarks_apply)
{
    store_sweep(
        "bookmarks",
        "[{\"id\":\"toolbar\",\"type\":\"folder\",\"parentid\":\"places\",\"children\":[\"newBookmk001\"]},"
        "{\"id\":\"newBookmk001\",\"type\":\"bookmark\",\"parentid\":\"toolbar\",\"title\":\"Rust\","
        "\"bmkUri\":\"https://www.rust-lang.org/\",\"tags\":[\"a\"],\"keyword\":\"rs\"}]",
        "newBookmk001", "places.sqlite", 23);
}
END_TEST

/* picl__json_dumps / picl__json_loadb under every failed allocation: the
 * exact text / value, or nothing -- where jansson's own json_dumps gives
 * {"id":"rec1",":"hunter2"} and its loader drops a character of a string. */
START_TEST(test_json_text_whole_or_nothing)
{
    static const char TEXT[] =
        "{\"id\":\"rec1\",\"password\":\"hunter2\",\"hostname\":\"https://example.com/a/b\","
        "\"n\":[1,2,{\"deep\":\"value with \\u00e9\"}]}";
    json_t *want = json_loads(TEXT, 0, NULL);
    ck_assert_ptr_nonnull(want);
    char *exact = picl__json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_ptr_nonnull(exact);
    long dumps = 0, loads = 0, damaged_by_jansson = 0;
    for (long n = 1;; n++) {
        picl__test_alloc_fail_at(n, 0);
        char *t = picl__json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
        long injected = picl__test_alloc_injected();
        picl__test_alloc_fail_at(n, 0);
        char *raw = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);
        picl__test_alloc_fail_at(0, 0);
        if (t)
            ck_assert_str_eq(t, exact);
        if (raw && strcmp(raw, exact) != 0)
            damaged_by_jansson++;
        free(t);
        free(raw);
        if (!injected) {
            dumps = n - 1;
            break;
        }
    }
    for (long n = 1;; n++) {
        int oom = -1;
        picl__test_alloc_fail_at(n, 0);
        json_t *j = picl__json_loadb(TEXT, strlen(TEXT), JSON_REJECT_DUPLICATES, NULL, &oom);
        long injected = picl__test_alloc_injected();
        picl__test_alloc_fail_at(n, 0);
        json_t *raw = json_loadb(TEXT, strlen(TEXT), JSON_REJECT_DUPLICATES, NULL);
        picl__test_alloc_fail_at(0, 0);
        if (j) {
            ck_assert(json_equal(j, want));
            ck_assert_int_eq(oom, 0);
        } else {
            ck_assert_int_eq(oom, injected ? 1 : 0);
        }
        if (raw && !json_equal(raw, want))
            damaged_by_jansson++;
        json_decref(j);
        json_decref(raw);
        if (!injected) {
            ck_assert_ptr_nonnull(j);
            loads = n - 1;
            break;
        }
    }
    ck_assert_int_gt(dumps, 3);
    ck_assert_int_gt(loads, 3);
    printf("alloc sweep json text: %ld dump and %ld load allocations: never damaged (jansson alone damaged "
           "%ld)\n",
           dumps, loads, damaged_by_jansson);
    free(exact);
    json_decref(want);
}
END_TEST

/* The injector itself: exactly the Nth counted allocation fails. */
START_TEST(test_injector_counts)
{
    picl__test_alloc_fail_at(3, 0);
    void *a = malloc(8), *b = malloc(8), *c = malloc(8), *d = malloc(8);
    long injected = picl__test_alloc_injected(), count = picl__test_alloc_count();
    picl__test_alloc_fail_at(0, 0);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(injected, 1);
    ck_assert_int_eq(count, 4);
    /* jansson and SQLite allocations are counted too */
    picl__test_alloc_fail_at(1, 0);
    json_t *j = json_object();
    ck_assert_ptr_null(j);
    ck_assert_int_eq(picl__test_alloc_injected(), 1);
    picl__test_alloc_fail_at(1, 0);
    void *s = sqlite3_malloc(16);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(picl__test_alloc_injected(), 1);
    picl__test_alloc_fail_at(0, 0);
    free(a);
    free(b);
    free(d);
}
END_TEST

int main(void)
{
    /* before anything touches SQLite */
    if (picl__test_alloc_hooks_install() != PICL_OK) {
        fprintf(stderr, "test_alloc_fail: the allocation hooks could not be installed\n");
        return 1;
    }
    Suite *s = suite_create("alloc_fail");
    TCase *tc = tcase_create("alloc_fail");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_injector_counts);
    tcase_add_test(tc, test_json_text_whole_or_nothing);
    tcase_add_test(tc, test_crypto_record_and_codecs);
    tcase_add_test(tc, test_records_encrypt_decrypt);
    tcase_add_test(tc, test_protocol_tokens_hawk_bundles);
    tcase_add_test(tc, test_classmap_sign_verify_parse);
    tcase_add_test(tc, test_store_logins_apply);
    tcase_add_test(tc, test_store_bookmarks_apply);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
