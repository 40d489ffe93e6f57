/* SPDX-License-Identifier: MPL-2.0 */
/* test_stores_basic.c -- the memory and JSON-file stores: change tracking,
 * apply, tombstones both ways, atomic rewrite, malformed files refused. */
#include "testutil.h"
#include "stores/store.h"
#include "stores/fileutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void mkdir_setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/picl-fs-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_teardown(void) { ck_assert_int_eq(tu_rmtree(dir), 0); }

static json_t *bm(const char *id, const char *title)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "type", "bookmark", "parentid", "menu", "title",
                     title, "bmkUri", "https://example.org/");
}

static size_t count_ids(const json_t *a, const char *id, int tomb)
{
    size_t i, n = 0;
    json_t *r;
    json_array_foreach (a, i, r) {
        if (!strcmp(json_string_value(json_object_get(r, "id")), id) &&
            tomb == json_is_true(json_object_get(r, "deleted")))
            n++;
    }
    return n;
}

START_TEST(test_memstore)
{
    picl_store *s;
    ck_assert_int_eq(picl__memstore_open(&s, "bookmarks"), PICL_OK);
    json_t *a = bm("aaaaaaaaaaaa", "A"), *b = bm("bbbbbbbbbbbb", "B");
    ck_assert_int_eq(picl__memstore_put(s, a), PICL_OK);
    json_t *ch;
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch), 1);
    /* incoming records are not local changes */
    json_t *in = json_pack("[O]", b);
    ck_assert_int_eq(picl__store_apply(s, in), PICL_OK);
    json_t *ch2;
    ck_assert_int_eq(picl__store_changes(s, &ch2), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch2), 1);
    json_decref(ch2);
    /* a change made after changes() survives mark_synced */
    json_t *a2 = bm("aaaaaaaaaaaa", "A2");
    ck_assert_int_eq(picl__memstore_put(s, a2), PICL_OK);
    ck_assert_int_eq(picl__store_mark_synced(s, ch), PICL_OK);
    ck_assert_int_eq(picl__store_changes(s, &ch2), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch2), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ch2, 0), "title")), "A2");
    ck_assert_int_eq(picl__store_mark_synced(s, ch2), PICL_OK);
    json_decref(ch2);
    json_decref(ch);
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch), 0);
    json_decref(ch);
    /* local deletion is a tombstone; incoming tombstone removes */
    ck_assert_int_eq(picl__memstore_delete(s, "aaaaaaaaaaaa"), PICL_OK);
    ck_assert_int_eq(picl__memstore_delete(s, "zzzzzzzzzzzz"), PICL_ERROR_NOT_FOUND);
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_OK);
    ck_assert_uint_eq(count_ids(ch, "aaaaaaaaaaaa", 1), 1);
    json_decref(ch);
    json_t *tomb = json_pack("[{s:s, s:b}]", "id", "bbbbbbbbbbbb", "deleted", 1);
    ck_assert_int_eq(picl__store_apply(s, tomb), PICL_OK);
    json_t *got;
    ck_assert_int_eq(picl__store_get(s, "bbbbbbbbbbbb", &got), PICL_OK);
    ck_assert_ptr_null(got);
    /* reset: every live record becomes a change */
    ck_assert_int_eq(picl__store_apply(s, in), PICL_OK);
    ck_assert_int_eq(picl__store_reset(s), PICL_OK);
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch), 1);
    json_decref(ch);
    /* bad input */
    json_t *bad = json_pack("[{s:s}]", "x", "y");
    ck_assert_int_eq(picl__store_apply(s, bad), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_str_eq(picl__store_error(s), "record 0 has no id");
    json_decref(bad);
    json_decref(tomb);
    json_decref(in);
    json_decref(a);
    json_decref(a2);
    json_decref(b);
    picl__store_close(s);
}
END_TEST

static void write_text(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    ck_assert_int_eq(picl__write_file_atomic(p, text, strlen(text), 0600), PICL_OK);
}

static char *read_text(const char *name)
{
    char p[256], *t;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    ck_assert_int_eq(picl__read_file(p, 1 << 20, &t, NULL), PICL_OK);
    return t;
}

START_TEST(test_filestore_tracking)
{
    write_text("bookmarks.json", "[{\"id\":\"aaaaaaaaaaaa\",\"title\":\"A\",\"extra\":{\"kept\":true}},"
                                 "{\"id\":\"bbbbbbbbbbbb\",\"title\":\"B\"}]");
    picl_store *s;
    ck_assert_int_eq(picl__filestore_open(&s, dir, "bookmarks"), PICL_OK);
    json_t *ch;
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch), 2); /* first sync: everything */
    ck_assert_int_eq(picl__store_mark_synced(s, ch), PICL_OK);
    json_decref(ch);
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch), 0);
    json_decref(ch);
    /* the user edits one record and removes the other */
    write_text("bookmarks.json",
               "[{\"id\":\"aaaaaaaaaaaa\",\"title\":\"A edited\",\"extra\":{\"kept\":true}}]");
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch), 2);
    ck_assert_uint_eq(count_ids(ch, "aaaaaaaaaaaa", 0), 1);
    ck_assert_uint_eq(count_ids(ch, "bbbbbbbbbbbb", 1), 1); /* removal = tombstone */
    ck_assert_int_eq(picl__store_mark_synced(s, ch), PICL_OK);
    json_decref(ch);
    /* incoming: a new record and a tombstone; not reported back as changes */
    json_t *in = json_pack("[{s:s, s:s}, {s:s, s:b}]", "id", "cccccccccccc", "title", "C", "id",
                           "aaaaaaaaaaaa", "deleted", 1);
    ck_assert_int_eq(picl__store_apply(s, in), PICL_OK);
    json_decref(in);
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch), 0);
    json_decref(ch);
    char *t = read_text("bookmarks.json");
    json_t *file = json_loads(t, 0, NULL);
    free(t);
    ck_assert_uint_eq(json_array_size(file), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(file, 0), "id")), "cccccccccccc");
    json_decref(file);
    /* no temp files left behind */
    char p[256];
    snprintf(p, sizeof p, "%s/bookmarks.json.tmp-%ld", dir, (long)getpid());
    ck_assert_int_ne(access(p, F_OK), 0);
    picl__store_close(s);
}
END_TEST

START_TEST(test_filestore_malformed)
{
    static const char *bad[] = {"{\"id\":\"x\"}",          "[1,2]",
                                "[{\"title\":\"no id\"}]", "[{\"id\":\"a\"},{\"id\":\"a\"}]",
                                "[{\"id\":\"a\"}",         "not json"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text("passwords.json", bad[i]);
        picl_store *s = (picl_store *)1;
        ck_assert_msg(picl__filestore_open(&s, dir, "passwords") == PICL_ERROR_ENCODING, "accepted %s",
                      bad[i]);
        ck_assert_ptr_null(s);
        char *t = read_text("passwords.json");
        ck_assert_str_eq(t, bad[i]); /* untouched */
        free(t);
    }
    picl_store *s;
    ck_assert_int_eq(picl__filestore_open(&s, dir, "../evil"), PICL_ERROR_INVALID_ARGUMENT);
    /* a missing file is an empty collection */
    ck_assert_int_eq(picl__filestore_open(&s, dir, "history"), PICL_OK);
    json_t *all;
    ck_assert_int_eq(picl__store_all(s, &all), PICL_OK);
    ck_assert_uint_eq(json_array_size(all), 0);
    json_decref(all);
    /* the file broken after open: the error is reported, nothing written */
    write_text("history.json", "[{]");
    json_t *in = json_pack("[{s:s}]", "id", "x");
    ck_assert_int_eq(picl__store_apply(s, in), PICL_ERROR_ENCODING);
    ck_assert_ptr_nonnull(strstr(picl__store_error(s), "history.json"));
    char *t = read_text("history.json");
    ck_assert_str_eq(t, "[{]");
    free(t);
    json_decref(in);
    picl__store_close(s);
}
END_TEST

/* An incoming record with an empty id (found by fuzz_device_stores): refused
 * with nothing written -- accepted, it made a file the store's own reader
 * refuses, and every later sync of the directory failed. */
START_TEST(test_filestore_empty_id_refused)
{
    picl_store *s;
    ck_assert_int_eq(picl__filestore_open(&s, dir, "bookmarks"), PICL_OK);
    json_t *in = json_pack("[o]", bm("aaaaaaaaaaaa", "A"));
    ck_assert_int_eq(picl__store_apply(s, in), PICL_OK);
    json_decref(in);
    char *before = read_text("bookmarks.json");
    in = json_pack("[o, {s:s, s:b}]", bm("bbbbbbbbbbbb", "B"), "id", "", "deleted", 1);
    ck_assert_int_eq(picl__store_apply(s, in), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(picl__store_error(s), "record 1 has no id"));
    json_decref(in);
    in = json_pack("[{s:s, s:s}]", "id", "", "title", "no id");
    ck_assert_int_eq(picl__store_apply(s, in), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(in);
    char *after = read_text("bookmarks.json");
    ck_assert_str_eq(after, before); /* nothing written */
    free(before);
    free(after);
    json_t *all;
    ck_assert_int_eq(picl__store_all(s, &all), PICL_OK);
    ck_assert_uint_eq(json_array_size(all), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(all, 0), "id")), "aaaaaaaaaaaa");
    json_decref(all);
    picl__store_close(s);
    /* and the directory still opens */
    ck_assert_int_eq(picl__filestore_open(&s, dir, "bookmarks"), PICL_OK);
    picl__store_close(s);
}
END_TEST

/* A store implemented through picl_store_callbacks (what the browser binding uses). */
typedef struct cbctx {
    int applied;
    char last_apply[256];
} cbctx;

static picl_status cb_changes(void *ctx, char **out)
{
    *out = picl_alloc_string("[{\"id\":\"aaaaaaaaaaaa\",\"title\":\"A\"}]");
    return PICL_OK;
}
static picl_status cb_all(void *ctx, char **out)
{
    *out = picl_alloc_string("[]");
    return PICL_OK;
}
static picl_status cb_get(void *ctx, const char *id, char **out)
{
    *out = picl_alloc_string(strcmp(id, "known") ? "null" : "{\"id\":\"known\"}");
    return PICL_OK;
}
static picl_status cb_apply(void *ctx, const char *json)
{
    cbctx *c = ctx;
    c->applied++;
    snprintf(c->last_apply, sizeof c->last_apply, "%s", json);
    return PICL_OK;
}
static picl_status cb_fail(void *ctx, const char *json) { return PICL_ERROR_DATABASE; }
static picl_status cb_bad(void *ctx, char **out)
{
    *out = picl_alloc_string("{not an array");
    return PICL_OK;
}

START_TEST(test_callback_store)
{
    cbctx ctx = {0};
    picl_store_callbacks cb = {
        .changes = cb_changes, .all = cb_all, .get = cb_get, .apply = cb_apply, .mark_synced = cb_apply};
    picl_store *s;
    ck_assert_int_eq(picl__cbstore_open(&s, "bookmarks", &cb, &ctx), PICL_OK);
    json_t *ch;
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_OK);
    ck_assert_uint_eq(json_array_size(ch), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ch, 0), "title")), "A");
    json_t *r;
    ck_assert_int_eq(picl__store_get(s, "known", &r), PICL_OK);
    ck_assert_ptr_nonnull(r);
    json_decref(r);
    ck_assert_int_eq(picl__store_get(s, "other", &r), PICL_OK);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(picl__store_apply(s, ch), PICL_OK);
    ck_assert_int_eq(ctx.applied, 1);
    ck_assert_str_eq(ctx.last_apply, "[{\"id\":\"aaaaaaaaaaaa\",\"title\":\"A\"}]");
    ck_assert_int_eq(picl__store_reset(s), PICL_OK); /* NULL reset is a no-op */
    json_decref(ch);
    picl__store_close(s);
    /* failures come back with the collection named */
    picl_store_callbacks bad = {.changes = cb_bad, .all = cb_all, .apply = cb_fail, .mark_synced = cb_apply};
    ck_assert_int_eq(picl__cbstore_open(&s, "passwords", &bad, &ctx), PICL_OK);
    ck_assert_int_eq(picl__store_changes(s, &ch), PICL_ERROR_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(picl__store_error(s), "passwords"));
    json_t *empty = json_array();
    ck_assert_int_eq(picl__store_apply(s, empty), PICL_ERROR_DATABASE);
    json_decref(empty);
    picl__store_close(s);
    picl_store_callbacks missing = {
        .all = cb_all, .apply = cb_apply, .mark_synced = cb_apply}; /* no changes */
    ck_assert_int_eq(picl__cbstore_open(&s, "x", &missing, &ctx), PICL_ERROR_INVALID_ARGUMENT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stores_basic");
    TCase *tc = tcase_create("stores_basic");
    tcase_add_checked_fixture(tc, mkdir_setup, rm_teardown);
    tcase_add_test(tc, test_memstore);
    tcase_add_test(tc, test_filestore_tracking);
    tcase_add_test(tc, test_filestore_malformed);
    tcase_add_test(tc, test_filestore_empty_id_refused);
    tcase_add_test(tc, test_callback_store);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
