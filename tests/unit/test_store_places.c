/* SPDX-License-Identifier: MPL-2.0 */
/* test_store_places.c -- the bookmarks and history stores on places.sqlite of
 * profiles made by the real Firefox, checked back through Firefox itself. */
#include "testutil.h"
#include "testutil_profile.h"
#include "stores/places.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#define T0_MS 1705320000000LL /* the fixture's dates (make_profile.js) */

static const char *fresh_profile(void)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    return d;
}

static picl_store *open_ok(const char *dir, const char *coll)
{
    picl_store *s = NULL;
    char err[256] = "";
    picl_status st = picl__places_open(&s, dir, coll, err, sizeof err);
    ck_assert_msg(st == PICL_OK, "open %s: %d %s", coll, st, err);
    return s;
}

static picl_status apply_status(picl_store *s, const char *json)
{
    json_t *r = json_loads(json, 0, NULL);
    ck_assert_ptr_nonnull(r);
    picl_status st = picl__store_apply(s, r);
    json_decref(r);
    return st;
}

/* children of a record as one comma-joined string */
static const char *kids(const json_t *rec)
{
    static char buf[1024];
    buf[0] = '\0';
    size_t i;
    json_t *v;
    ck_assert_ptr_nonnull(rec);
    json_array_foreach (json_object_get(rec, "children"), i, v) {
        if (i)
            tu_append(buf, sizeof buf, ",");
        tu_append(buf, sizeof buf, json_string_value(v));
    }
    return buf;
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "(null)";
}

static int64_t sql_int(const char *dir, const char *sql)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/places.sqlite", dir);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    int r = sqlite3_step(st);
    int64_t v = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -12345;
    ck_assert(r == SQLITE_ROW || r == SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* Every column Places keeps coherent (not frecency, which Firefox recomputes),
 * as one text, to see whether Firefox's maintenance changed anything. */
static char *snapshot(const char *dir)
{
    static const char *const q[] = {
        "SELECT id, url, title, rev_host, visit_count, hidden, typed, last_visit_date, guid, foreign_count, "
        "url_hash, origin_id FROM moz_places ORDER BY id",
        "SELECT id, type, fk, parent, position, title, keyword_id, folder_type, dateAdded, lastModified, "
        "guid, "
        "syncStatus, syncChangeCounter FROM moz_bookmarks ORDER BY id",
        "SELECT id, keyword, place_id, post_data FROM moz_keywords ORDER BY id",
        "SELECT id, prefix, host FROM moz_origins ORDER BY id",
        "SELECT id, from_visit, place_id, visit_date, visit_type, source FROM moz_historyvisits ORDER BY id",
        "SELECT guid FROM moz_bookmarks_deleted ORDER BY guid",
    };
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/places.sqlite", dir);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        sqlite3_stmt *st = NULL;
        ck_assert_int_eq(sqlite3_prepare_v2(db, q[i], -1, &st, NULL), SQLITE_OK);
        fprintf(f, "-- %s\n", q[i]);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const unsigned char *t = sqlite3_column_text(st, c);
                fprintf(f, "%s|", t ? (const char *)t : "NULL");
            }
            fputc('\n', f);
        }
        sqlite3_finalize(st);
    }
    fclose(f);
    sqlite3_close(db);
    return buf;
}

/* ---- url_hash ------------------------------------------------------------ */

START_TEST(test_url_hash_matches_firefox)
{
    const char *u = "https://example.com/";
    ck_assert_uint_eq(picl__places_url_hash(u, strlen(u)), 47357371248711ULL);
    /* every page Firefox wrote: our hash equals its url_hash column */
    const char *d = fresh_profile();
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/places.sqlite", d);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT url, url_hash FROM moz_places", -1, &st, NULL),
                     SQLITE_OK);
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *url = (const char *)sqlite3_column_text(st, 0);
        ck_assert_msg(picl__places_url_hash(url, strlen(url)) == (uint64_t)sqlite3_column_int64(st, 1), "%s",
                      url);
        n++;
    }
    ck_assert_int_eq(n, 7);
    /* no ':' in the first 50 bytes: the plain hash */
    char longu[80];
    memset(longu, 'a', 60);
    memcpy(longu + 60, "://x", 5);
    ck_assert_uint_lt(picl__places_url_hash(longu, strlen(longu)), 1ULL << 32);
    sqlite3_finalize(st);
    sqlite3_close(db);
}
END_TEST

/* ---- refusing to open ---------------------------------------------------- */

START_TEST(test_open_refusals)
{
    picl_store *s = NULL;
    char err[256];
    ck_assert_int_eq(picl__places_open(&s, "/nonexistent/profile", "bookmarks", err, sizeof err),
                     PICL_ERROR_NOT_FOUND);
    ck_assert_ptr_null(s);
    const char *empty = tup_tmpdir();
    ck_assert_int_eq(picl__places_open(&s, empty, "history", err, sizeof err), PICL_ERROR_INVALID_ARGUMENT);
    const char *d = fresh_profile();
    ck_assert_int_eq(picl__places_open(&s, d, "passwords", err, sizeof err), PICL_ERROR_INVALID_ARGUMENT);
    /* a profile without places.sqlite */
    const char *nop = tup_tmpdir();
    tup_sh("touch '%s/prefs.js'", nop);
    ck_assert_int_eq(picl__places_open(&s, nop, "bookmarks", err, sizeof err), PICL_ERROR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err, "places.sqlite"));
}
END_TEST

START_TEST(test_locked_profile_untouched)
{
    const char *d = fresh_profile();
    pid_t holder = tup_hold_lock(d);
    uint64_t before = tup_dir_digest(d);
    picl_store *s = NULL;
    char err[256];
    ck_assert_int_eq(picl__places_open(&s, d, "bookmarks", err, sizeof err), PICL_ERROR_PROFILE_LOCKED);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(picl__places_open(&s, d, "history", err, sizeof err), PICL_ERROR_PROFILE_LOCKED);
    ck_assert(tup_dir_digest(d) == before);
    tup_release_lock(holder);
}
END_TEST

START_TEST(test_corrupt_places_untouched)
{
    const char *d = fresh_profile();
    tup_sh("head -c 4096 /dev/urandom > '%s/places.sqlite' && rm -f '%s/places.sqlite-wal' && touch "
           "'%s/.parentlock'",
           d, d, d);
    uint64_t before = tup_dir_digest(d);
    picl_store *s = NULL;
    char err[256];
    ck_assert_int_eq(picl__places_open(&s, d, "bookmarks", err, sizeof err), PICL_ERROR_DATABASE);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(err, "not an SQLite database"));
    ck_assert(tup_dir_digest(d) == before);
}
END_TEST

START_TEST(test_unknown_schema_untouched)
{
    const char *d = fresh_profile();
    tup_sh("sqlite3 '%s/places.sqlite' 'PRAGMA user_version = 87' >/dev/null 2>&1 || true", d);
    if (sql_int(d, "PRAGMA user_version") != 87) { /* no sqlite3 CLI: do it here */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/places.sqlite", d);
        sqlite3 *db = NULL;
        ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 87", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
    }
    ck_assert_int_eq(sql_int(d, "PRAGMA user_version"), 87);
    tup_sh("touch '%s/.parentlock'", d);
    uint64_t before = tup_dir_digest(d);
    picl_store *s = NULL;
    char err[256];
    ck_assert_int_eq(picl__places_open(&s, d, "bookmarks", err, sizeof err), PICL_ERROR_UNSUPPORTED);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(err, "87"));
    ck_assert_int_eq(picl__places_open(&s, d, "history", err, sizeof err), PICL_ERROR_UNSUPPORTED);
    ck_assert(tup_dir_digest(d) == before);
}
END_TEST

/* ---- bookmarks: reading what Firefox wrote -------------------------------- */

START_TEST(test_bookmarks_read_firefox_profile)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "bookmarks");
    ck_assert_str_eq(s->collection, "bookmarks");
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 13); /* 4 roots + 9 items, no root________ or tags */
    ck_assert_ptr_null(tup_find(a, "id", "places"));
    ck_assert_ptr_null(tup_find(a, "id", "tags________"));
    json_t *menu = tup_find(a, "id", "menu");
    ck_assert_str_eq(str(menu, "type"), "folder");
    ck_assert_str_eq(str(menu, "parentid"), "places");
    ck_assert_str_eq(kids(menu), "fldrSample01");
    json_t *f = tup_find(a, "id", "fldrSample01");
    ck_assert_str_eq(str(f, "parentid"), "menu");
    ck_assert_str_eq(str(f, "title"), "Sample Folder");
    ck_assert_str_eq(kids(f), "bmkExample01,sepSample001,bmkFirefox01,fldrNested01");
    ck_assert_int_eq(json_integer_value(json_object_get(f, "dateAdded")), T0_MS);
    json_t *ex = tup_find(a, "id", "bmkExample01");
    ck_assert_str_eq(str(ex, "type"), "bookmark");
    ck_assert_str_eq(str(ex, "bmkUri"), "https://example.com/");
    ck_assert_str_eq(str(ex, "title"), "Example");
    ck_assert_str_eq(str(ex, "parentName"), "Sample Folder");
    ck_assert_str_eq(str(ex, "keyword"), "ex");
    json_t *tags = json_object_get(ex, "tags");
    ck_assert_int_eq(json_array_size(tags), 2);
    ck_assert_str_eq(json_string_value(json_array_get(tags, 0)), "sample");
    ck_assert_str_eq(json_string_value(json_array_get(tags, 1)), "test");
    ck_assert_int_eq(json_integer_value(json_object_get(ex, "dateAdded")), T0_MS + 1000);
    json_t *sep = tup_find(a, "id", "sepSample001");
    ck_assert_str_eq(str(sep, "type"), "separator");
    ck_assert_str_eq(str(tup_find(a, "id", "bmkMobile001"), "parentid"), "mobile");
    ck_assert_str_eq(kids(tup_find(a, "id", "toolbar")), "bmkToolbar01");
    json_t *one = NULL;
    ck_assert_int_eq(picl__store_get(s, "bmkExample01", &one), PICL_OK);
    ck_assert(json_equal(one, ex));
    json_decref(one);
    ck_assert_int_eq(picl__store_get(s, "nosuchguid01", &one), PICL_OK);
    ck_assert_ptr_null(one);
    ck_assert_int_eq(picl__store_get(s, "tags________", &one), PICL_OK);
    ck_assert_ptr_null(one);

    /* a fresh profile: everything is a local change; mark_synced clears it */
    json_t *c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 13);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    json_decref(a);
    picl__store_close(s);
}
END_TEST

/* Firefox's own way of recording a local edit and a deletion. */
static void firefox_like_edit(const char *d)
{
    ck_assert_int_eq(
        sql_int(d, "UPDATE moz_bookmarks SET title = 'HN!', syncChangeCounter = syncChangeCounter + 1 "
                   "WHERE guid = 'bmkToolbar01' RETURNING 1"),
        1);
    ck_assert_int_eq(
        sql_int(d, "INSERT INTO moz_bookmarks_deleted(guid, dateRemoved) VALUES ('gonegone0001', 1) "
                   "RETURNING 1"),
        1);
}

START_TEST(test_bookmarks_change_tracking)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "bookmarks");
    json_t *c = tup_changes(s);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    picl__store_close(s);
    firefox_like_edit(d);
    s = open_ok(d, "bookmarks");
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 2);
    ck_assert_str_eq(str(tup_find(c, "id", "bmkToolbar01"), "title"), "HN!");
    ck_assert(json_is_true(json_object_get(tup_find(c, "id", "gonegone0001"), "deleted")));
    /* an edit between tup_changes() and mark_synced() stays a change */
    picl__store_close(s);
    ck_assert_int_eq(sql_int(d, "UPDATE moz_bookmarks SET syncChangeCounter = syncChangeCounter + 1 "
                                "WHERE guid = 'bmkToolbar01' RETURNING 1"),
                     1);
    s = open_ok(d, "bookmarks");
    json_t *c2 = tup_changes(s);
    ck_assert_int_eq(json_array_size(c2), 2);
    json_decref(c2);
    picl__store_close(s);
    ck_assert_int_eq(sql_int(d, "UPDATE moz_bookmarks SET syncChangeCounter = syncChangeCounter + 1 "
                                "WHERE guid = 'bmkToolbar01' RETURNING 1"),
                     1);
    s = open_ok(d, "bookmarks");
    /* the store forgot what it reported on close: report again, then edit */
    c2 = tup_changes(s);
    ck_assert_int_eq(sql_int(d, "UPDATE moz_bookmarks SET syncChangeCounter = syncChangeCounter + 1 "
                                "WHERE guid = 'bmkToolbar01' RETURNING 1"),
                     1);
    ck_assert_int_eq(picl__store_mark_synced(s, c2), PICL_OK);
    json_decref(c2);
    c2 = tup_changes(s);
    ck_assert_int_eq(json_array_size(c2), 1);
    ck_assert_str_eq(str(json_array_get(c2, 0), "id"), "bmkToolbar01");
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_bookmarks_deleted"), 0);
    json_decref(c2);
    json_decref(c);
    /* reset: every live item is a change again, tombstones forgotten */
    ck_assert_int_eq(picl__store_reset(s), PICL_OK);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 13);
    json_decref(c);
    picl__store_close(s);
}
END_TEST

/* ---- bookmarks: writing, read back by Firefox ------------------------------ */

static const char *INCOMING_BOOKMARKS =
    "["
    "{\"id\":\"toolbar\",\"type\":\"folder\",\"parentid\":\"places\",\"title\":\"toolbar\","
    " \"children\":[\"newFolder001\",\"bmkFirefox01\",\"bmkToolbar01\"]},"
    "{\"id\":\"newFolder001\",\"type\":\"folder\",\"parentid\":\"toolbar\",\"parentName\":\"toolbar\","
    " \"title\":\"From Sync\",\"children\":[\"newBookmk002\",\"newSeparat01\",\"newBookmk001\"],"
    " \"dateAdded\":1700000000000},"
    "{\"id\":\"newBookmk001\",\"type\":\"bookmark\",\"parentid\":\"newFolder001\",\"title\":\"Rust\","
    " \"bmkUri\":\"https://www.rust-lang.org/learn\",\"tags\":[\"lang\",\"sample\"],\"keyword\":\"RS\","
    " \"dateAdded\":1700000001000},"
    "{\"id\":\"newBookmk002\",\"type\":\"bookmark\",\"parentid\":\"newFolder001\",\"title\":\"Example "
    "again\","
    " \"bmkUri\":\"https://example.com/\",\"tags\":[\"sample\",\"test\"],\"keyword\":\"ex\"},"
    "{\"id\":\"newSeparat01\",\"type\":\"separator\",\"parentid\":\"newFolder001\"},"
    "{\"id\":\"bmkFirefox01\",\"type\":\"bookmark\",\"parentid\":\"toolbar\",\"title\":\"Firefox (moved)\","
    " \"bmkUri\":\"https://www.mozilla.org/en-US/firefox/\",\"tags\":[]},"
    "{\"id\":\"orphanItem01\",\"type\":\"bookmark\",\"parentid\":\"noSuchParent\",\"title\":\"Orphan\","
    " \"bmkUri\":\"https://orphan.example.com/\"},"
    "{\"id\":\"bmkMDN000001\",\"deleted\":true},"
    "{\"id\":\"fldrNested01\",\"deleted\":true},"
    "{\"id\":\"bmkUnfiled01\",\"deleted\":true}"
    "]";

START_TEST(test_bookmarks_apply_read_back_by_firefox)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "bookmarks");
    json_t *c = tup_changes(s);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    tup_apply_ok(s, INCOMING_BOOKMARKS);
    /* what we applied is not a local change; only the orphan we had to put in
     * unfiled (and unfiled itself) are, so the server learns where it went */
    c = tup_changes(s);
    ck_assert_msg(json_array_size(c) == 2, "%s", json_dumps(c, 0));
    ck_assert_str_eq(str(tup_find(c, "id", "orphanItem01"), "parentid"), "unfiled");
    ck_assert_str_eq(kids(tup_find(c, "id", "unfiled")), "orphanItem01");
    json_decref(c);
    json_t *a = tup_all(s);
    ck_assert_str_eq(kids(tup_find(a, "id", "toolbar")), "newFolder001,bmkFirefox01,bmkToolbar01");
    ck_assert_str_eq(kids(tup_find(a, "id", "newFolder001")), "newBookmk002,newSeparat01,newBookmk001");
    ck_assert_str_eq(kids(tup_find(a, "id", "fldrSample01")), "bmkExample01,sepSample001");
    ck_assert_str_eq(str(tup_find(a, "id", "orphanItem01"), "parentid"), "unfiled");
    ck_assert_ptr_null(tup_find(a, "id", "bmkMDN000001"));
    ck_assert_ptr_null(tup_find(a, "id", "fldrNested01"));
    json_decref(a);
    picl__store_close(s);

    /* Firefox's view of the same profile */
    json_t *dump = tup_dump_profile(d);
    json_t *bm = json_object_get(dump, "bookmarks");
    json_t *tb = tup_find(bm, "guid", "toolbar_____");
    ck_assert_str_eq(kids(tb), "newFolder001,bmkFirefox01,bmkToolbar01");
    json_t *nf = tup_find(bm, "guid", "newFolder001");
    ck_assert_str_eq(str(nf, "title"), "From Sync");
    ck_assert_str_eq(str(nf, "type"), "folder");
    ck_assert_int_eq(json_integer_value(json_object_get(nf, "dateAdded")), 1700000000000LL);
    ck_assert_str_eq(kids(nf), "newBookmk002,newSeparat01,newBookmk001");
    json_t *rs = tup_find(bm, "guid", "newBookmk001");
    ck_assert_str_eq(str(rs, "url"), "https://www.rust-lang.org/learn");
    ck_assert_str_eq(str(rs, "title"), "Rust");
    ck_assert_str_eq(str(rs, "keyword"), "rs");
    ck_assert_int_eq(json_integer_value(json_object_get(rs, "index")), 2);
    ck_assert(json_is_true(json_object_get(rs, "byUrl")));
    ck_assert_int_eq(json_array_size(json_object_get(rs, "tags")), 2);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(rs, "tags"), 0)), "lang");
    ck_assert_str_eq(str(tup_find(bm, "guid", "newSeparat01"), "type"), "separator");
    json_t *ff = tup_find(bm, "guid", "bmkFirefox01");
    ck_assert_str_eq(str(ff, "parentGuid"), "toolbar_____");
    ck_assert_str_eq(str(ff, "title"), "Firefox (moved)");
    ck_assert(json_is_true(json_object_get(ff, "byUrl")));
    ck_assert_str_eq(str(tup_find(bm, "guid", "orphanItem01"), "parentGuid"), "unfiled_____");
    ck_assert_ptr_null(tup_find(bm, "guid", "bmkMDN000001"));
    ck_assert_ptr_null(tup_find(bm, "guid", "bmkUnfiled01"));
    ck_assert_ptr_null(tup_find(bm, "guid", "fldrNested01"));
    ck_assert_str_eq(kids(tup_find(bm, "guid", "fldrSample01")), "bmkExample01,sepSample001");
    /* the same URL bookmarked twice shares tags and keyword */
    json_t *ex = tup_find(bm, "guid", "bmkExample01");
    ck_assert_str_eq(str(ex, "keyword"), "ex");
    ck_assert_int_eq(json_array_size(json_object_get(ex, "tags")), 2);
    json_decref(dump);
    /* the counters Firefox's triggers would have kept */
    ck_assert_int_eq(sql_int(d, "SELECT foreign_count FROM moz_places WHERE url = 'https://example.com/'"),
                     2 + 2 + 1); /* two bookmarks, two tag entries, one keyword */
    /* a page left without bookmark or visit goes, as Places' expiration does */
    ck_assert_int_eq(
        sql_int(d, "SELECT count(*) FROM moz_places WHERE url = 'https://developer.mozilla.org/'"), 0);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_origins WHERE host = 'developer.mozilla.org'"), 0);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_places h WHERE foreign_count != "
                                "(SELECT count(*) FROM moz_bookmarks b WHERE b.fk = h.id) + "
                                "(SELECT count(*) FROM moz_keywords k WHERE k.place_id = h.id)"),
                     0);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_places WHERE url_hash = 0 OR origin_id IS NULL "
                                "OR guid IS NULL OR rev_host IS NULL"),
                     0);
    ck_assert_int_eq(
        sql_int(d, "SELECT recalc_frecency FROM moz_places WHERE url = 'https://www.rust-lang.org/learn'"),
        1);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_origins WHERE host = 'www.rust-lang.org' "
                                "AND prefix = 'https://'"),
                     1);
    ck_assert_int_eq(
        sql_int(d, "SELECT count(*) FROM moz_bookmarks WHERE guid = 'newBookmk001' AND syncStatus = 2 "
                   "AND syncChangeCounter = 0 AND lastModified > 1700000000000000"),
        1);
    /* positions dense in every folder */
    ck_assert_int_eq(
        sql_int(d, "SELECT count(*) FROM (SELECT parent, count(*) n, max(position) m FROM moz_bookmarks "
                   "WHERE parent > 0 GROUP BY parent) WHERE m != n - 1"),
        0);
    /* the tag 'test' still exists (example.com), the MDN url kept no tag */
    ck_assert_int_eq(sql_int(d,
                             "SELECT count(*) FROM moz_bookmarks t JOIN moz_bookmarks r ON t.parent = r.id "
                             "WHERE r.guid = 'tags________' AND t.title = 'lang'"),
                     1);
}
END_TEST

/* A places.sqlite without Firefox's moz_bookmarks_itemindex (made by another
 * tool, or an index dropped): the store reads and writes tags and keywords
 * exactly as on Firefox's schema, and does not add the index. */
START_TEST(test_bookmarks_without_itemindex)
{
    const char *with = fresh_profile(), *without = fresh_profile();
    sql_int(without, "DROP INDEX moz_bookmarks_itemindex");
    ck_assert_int_eq(
        sql_int(without, "SELECT count(*) FROM sqlite_master WHERE name = 'moz_bookmarks_itemindex'"), 0);
    const char *const tagged =
        "[{\"id\":\"bmkExample01\",\"type\":\"bookmark\",\"parentid\":\"fldrSample01\","
        "\"parentName\":\"Sample Folder\",\"title\":\"Example\",\"bmkUri\":\"https://example.com/\","
        "\"tags\":[\"sample\",\"zeta\"],\"keyword\":\"ex\",\"dateAdded\":1705320001000}]";
    const char *const untagged =
        "[{\"id\":\"bmkExample01\",\"type\":\"bookmark\",\"parentid\":\"fldrSample01\","
        "\"parentName\":\"Sample Folder\",\"title\":\"Example\",\"bmkUri\":\"https://example.com/\","
        "\"dateAdded\":1705320001000}]";
    json_t *seen[2][3];
    const char *dirs[2] = {with, without};
    for (int i = 0; i < 2; i++) {
        picl_store *s = open_ok(dirs[i], "bookmarks");
        seen[i][0] = tup_all(s);
        ck_assert_int_eq(apply_status(s, tagged), PICL_OK);
        seen[i][1] = tup_all(s);
        ck_assert_int_eq(apply_status(s, untagged), PICL_OK);
        seen[i][2] = tup_all(s);
        picl__store_close(s);
    }
    json_t *ex = tup_find(seen[1][0], "id", "bmkExample01");
    ck_assert_int_eq(json_array_size(json_object_get(ex, "tags")), 2);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(ex, "tags"), 0)), "sample");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(ex, "tags"), 1)), "test");
    ex = tup_find(seen[1][1], "id", "bmkExample01");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(ex, "tags"), 1)), "zeta");
    ck_assert_int_eq(json_array_size(json_object_get(tup_find(seen[1][2], "id", "bmkExample01"), "tags")), 0);
    for (int k = 0; k < 3; k++) {
        ck_assert_msg(json_equal(seen[0][k], seen[1][k]), "step %d differs without the index", k);
        json_decref(seen[0][k]);
        json_decref(seen[1][k]);
    }
    /* the tag folders nobody uses any more went away on both */
    ck_assert_int_eq(sql_int(without, "SELECT count(*) FROM moz_bookmarks WHERE parent = "
                                      "(SELECT id FROM moz_bookmarks WHERE guid = 'tags________')"),
                     sql_int(with, "SELECT count(*) FROM moz_bookmarks WHERE parent = "
                                   "(SELECT id FROM moz_bookmarks WHERE guid = 'tags________')"));
    ck_assert_int_eq(
        sql_int(without, "SELECT count(*) FROM sqlite_master WHERE name = 'moz_bookmarks_itemindex'"), 0);
}
END_TEST

START_TEST(test_bookmarks_reorder_only)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "bookmarks");
    tup_apply_ok(
        s, "[{\"id\":\"fldrSample01\",\"type\":\"folder\",\"parentid\":\"menu\",\"title\":\"Sample Folder\","
           "\"children\":[\"bmkFirefox01\",\"fldrNested01\",\"bmkExample01\"]}]");
    json_t *r = NULL;
    ck_assert_int_eq(picl__store_get(s, "fldrSample01", &r), PICL_OK);
    /* listed first in order; the unlisted separator keeps its place after them */
    ck_assert_str_eq(kids(r), "bmkFirefox01,fldrNested01,bmkExample01,sepSample001");
    json_decref(r);
    picl__store_close(s);
    ck_assert_int_eq(
        sql_int(d, "SELECT count(*) FROM (SELECT parent, count(*) n, max(position) m, min(position) l "
                   "FROM moz_bookmarks GROUP BY parent) WHERE m != n - 1 OR l != 0"),
        0);
    json_t *dump = tup_dump_profile(d);
    ck_assert_str_eq(kids(tup_find(json_object_get(dump, "bookmarks"), "guid", "fldrSample01")),
                     "bmkFirefox01,fldrNested01,bmkExample01,sepSample001");
    json_decref(dump);
}
END_TEST

/* The walks up the tree (is this item under a root? is the new parent
 * inside the item?) go level by level: a folder moved into its own child
 * lands in unfiled, and items in a parent cycle cut off from the roots (a
 * corrupt file) are not records, answered at once. */
START_TEST(test_bookmarks_tree_walks)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "bookmarks");
    tup_apply_ok(
        s, "[{\"id\":\"fldrSample01\",\"type\":\"folder\",\"parentid\":\"fldrNested01\","
           "\"title\":\"Sample Folder\",\"children\":[\"bmkFirefox01\",\"fldrNested01\",\"bmkExample01\"]}]");
    json_t *r = NULL;
    ck_assert_int_eq(picl__store_get(s, "fldrSample01", &r), PICL_OK);
    ck_assert_str_eq(str(r, "parentid"), "unfiled");
    json_decref(r);
    r = NULL;
    ck_assert_int_eq(picl__store_get(s, "fldrNested01", &r), PICL_OK);
    ck_assert_str_eq(str(r, "parentid"), "fldrSample01");
    json_decref(r);
    picl__store_close(s);
    /* the two folders made each other's parent, away from every root */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/places.sqlite", d);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(db,
                     "UPDATE moz_bookmarks SET parent = (SELECT id FROM moz_bookmarks WHERE guid = "
                     "'fldrNested01') WHERE guid = 'fldrSample01'",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    s = open_ok(d, "bookmarks");
    json_t *sentinel = json_object(); /* get() must overwrite what r held */
    r = sentinel;
    ck_assert_int_eq(picl__store_get(s, "fldrSample01", &r), PICL_OK);
    ck_assert_ptr_null(r);
    json_decref(sentinel);
    ck_assert_int_eq(picl__store_get(s, "bmkFirefox01", &r), PICL_OK);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(picl__store_get(s, "menu", &r), PICL_OK);
    ck_assert_ptr_nonnull(r);
    json_decref(r);
    picl__store_close(s);
}
END_TEST

START_TEST(test_bookmarks_bad_records_change_nothing)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "bookmarks");
    picl__store_close(s); /* the first open settles the WAL files */
    uint64_t before = tup_dir_digest(d);
    s = open_ok(d, "bookmarks");
    static const char *bad[] = {
        "{}",
        "[1]",
        "[{\"type\":\"bookmark\",\"parentid\":\"menu\",\"bmkUri\":\"https://a.example/\"}]",
        "[{\"id\":\"short\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"bmkUri\":\"https://a.example/\"}]",
        "[{\"id\":\"places\",\"type\":\"folder\",\"parentid\":\"places\"}]",
        "[{\"id\":\"tags________\",\"type\":\"folder\",\"parentid\":\"places\"}]",
        "[{\"id\":\"menu________\",\"type\":\"folder\",\"parentid\":\"places\"}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"livemarkish\",\"parentid\":\"menu\"}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"bookmark\",\"parentid\":\"menu\"}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"bmkUri\":\"not a url\"}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"bmkUri\":\"https://a/"
        "\",\"tags\":\"x\"}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"bmkUri\":\"https://a/"
        "\",\"tags\":[1]}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"bmkUri\":\"https://a/"
        "\",\"keyword\":\"a b\"}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"bmkUri\":\"https://a/"
        "\",\"title\":7}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"bmkUri\":\"https://a/"
        "\",\"dateAdded\":-1}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"folder\",\"parentid\":\"menu\",\"children\":[\"bad id!\"]}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"folder\",\"parentid\":\"tags________\"}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"folder\",\"parentid\":\"abcdefghijkl\"}]",
        "[{\"id\":\"abcdefghijkl\",\"type\":\"folder\"}]",
        "[{\"id\":\"menu\",\"deleted\":true}]",
        "[{\"id\":\"menu\",\"type\":\"bookmark\",\"bmkUri\":\"https://a/\"}]",
        "[{\"id\":\"abcdefghijkl\",\"deleted\":\"yes\"}]",
        /* one good record before a bad one: nothing of the batch is kept */
        "[{\"id\":\"goodgoodgood\",\"type\":\"bookmark\",\"parentid\":\"menu\",\"bmkUri\":\"https://"
        "good.example/\"},"
        " {\"id\":\"bmkExample01\",\"deleted\":true}, {\"id\":\"x\"}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        picl_status st = apply_status(s, bad[i]);
        ck_assert_msg(st == (i == 0 ? PICL_ERROR_INVALID_ARGUMENT : PICL_ERROR_ENCODING), "case %zu: %d", i,
                      st);
        ck_assert_msg(picl__store_error(s)[0] != '\0', "case %zu: no message", i);
    }
    picl__store_close(s);
    ck_assert(tup_dir_digest(d) == before);
}
END_TEST

START_TEST(test_bookmarks_wipe)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "bookmarks");
    ck_assert_int_eq(picl__store_wipe(s), PICL_OK);
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 4);
    ck_assert_str_eq(kids(tup_find(a, "id", "menu")), "");
    json_decref(a);
    picl__store_close(s);
    json_t *dump = tup_dump_profile(d);
    ck_assert_int_eq(json_array_size(json_object_get(dump, "bookmarks")), 5); /* root + 4 */
    json_decref(dump);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_keywords"), 0);
    ck_assert_int_eq(sql_int(d, "SELECT max(foreign_count) FROM moz_places"), 0);
}
END_TEST

/* ---- history --------------------------------------------------------------- */

START_TEST(test_history_read_firefox_profile)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "history");
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 3); /* pages with visits only */
    json_t *h = NULL;
    size_t i;
    json_t *r;
    json_array_foreach (a, i, r)
        if (strcmp(str(r, "histUri"), "https://history-only.example.org/a/b") == 0)
            h = r;
    ck_assert_ptr_nonnull(h);
    ck_assert_str_eq(str(h, "title"), "History only");
    json_t *v = json_object_get(h, "visits");
    ck_assert_int_eq(json_array_size(v), 3);
    /* newest first: RELOAD at T0-600s, REDIRECT_PERMANENT, LINK */
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(v, 0), "date")),
                     (T0_MS - 600000) * 1000);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(v, 0), "type")), 9);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(v, 1), "type")), 5);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(v, 2), "type")), 1);
    json_t *one = NULL;
    ck_assert_int_eq(picl__store_get(s, str(h, "id"), &one), PICL_OK);
    ck_assert(json_equal(one, h));
    json_decref(one);
    /* a bookmarked page never visited is not a history record */
    ck_assert_int_eq(picl__store_get(s, "nosuchguid01", &one), PICL_OK);
    ck_assert_ptr_null(one);
    json_t *c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 3);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    /* the cursor lives in places.sqlite: a new store agrees */
    picl__store_close(s);
    s = open_ok(d, "history");
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 0);
    json_decref(c);
    /* a new local visit (as Firefox writes it) is a change */
    picl__store_close(s);
    ck_assert_int_eq(
        sql_int(d, "INSERT INTO moz_historyvisits(from_visit, place_id, visit_date, visit_type, session, "
                   "source) SELECT 0, id, 1800000000000000, 1, 0, 0 FROM moz_places WHERE url = "
                   "'https://example.com/' RETURNING 1"),
        1);
    s = open_ok(d, "history");
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 1);
    ck_assert_str_eq(str(json_array_get(c, 0), "histUri"), "https://example.com/");
    json_decref(c);
    ck_assert_int_eq(picl__store_reset(s), PICL_OK);
    c = tup_changes(s);
    ck_assert_int_eq(json_array_size(c), 3);
    json_decref(c);
    json_decref(a);
    picl__store_close(s);
}
END_TEST

START_TEST(test_history_apply_read_back_by_firefox)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "history");
    json_t *c = tup_changes(s);
    ck_assert_int_eq(picl__store_mark_synced(s, c), PICL_OK);
    json_decref(c);
    char guid_hist[16];
    snprintf(guid_hist, sizeof guid_hist, "%s", "");
    json_t *a = tup_all(s);
    size_t i;
    json_t *r;
    json_array_foreach (a, i, r)
        if (strcmp(str(r, "histUri"), "https://history-only.example.org/a/b") == 0)
            snprintf(guid_hist, sizeof guid_hist, "%s", str(r, "id"));
    json_decref(a);
    char *batch = NULL;
    ck_assert(
        asprintf(
            &batch,
            "[{\"id\":\"newPage00001\",\"histUri\":\"https://sync.example.net/p?x=1\",\"title\":\"Synced "
            "page\","
            "  \"futurePage\":{\"a\":[1,2]},"
            "  \"visits\":[{\"date\":1705000000000000,\"type\":1,\"futureVisit\":\"v\"},"
            "              {\"date\":1705000100000000,\"type\":2},"
            "              {\"date\":1705000200000000,\"type\":4},{\"date\":1705000300000000,\"type\":9}]},"
            " {\"id\":\"framedPage01\",\"histUri\":\"https://frame.example.net/\",\"title\":null,"
            "  \"visits\":[{\"date\":1705000000000000,\"type\":8}]},"
            " {\"id\":\"otherGuid001\",\"histUri\":\"https://example.com/\",\"title\":\"Example (remote)\","
            "  \"visits\":[{\"date\":1705318200000000,\"type\":1},{\"date\":1705400000000000,\"type\":1}]},"
            " {\"id\":\"%s\",\"deleted\":true}]",
            guid_hist) > 0);
    tup_apply_ok(s, batch);
    tup_apply_ok(s, batch); /* idempotent: no duplicate visits */
    free(batch);
    c = tup_changes(s);
    ck_assert_msg(json_array_size(c) == 0, "applied visits reported as local: %s", json_dumps(c, 0));
    json_decref(c);
    json_t *np = NULL;
    ck_assert_int_eq(picl__store_get(s, "newPage00001", &np), PICL_OK);
    ck_assert_int_eq(json_array_size(json_object_get(np, "visits")), 3); /* EMBED not stored */
    /* unknown fields come back, page and visit */
    ck_assert_int_eq(
        json_integer_value(json_array_get(json_object_get(json_object_get(np, "futurePage"), "a"), 1)), 2);
    ck_assert_str_eq(str(json_array_get(json_object_get(np, "visits"), 2), "futureVisit"), "v");
    ck_assert_ptr_null(json_object_get(json_array_get(json_object_get(np, "visits"), 0), "futureVisit"));
    json_decref(np);
    picl__store_close(s);

    json_t *dump = tup_dump_profile(d);
    json_t *hist = json_object_get(dump, "history");
    json_t *p = tup_find(hist, "guid", "newPage00001");
    ck_assert_ptr_nonnull(p);
    ck_assert(json_is_true(json_object_get(p, "byUrl")));
    ck_assert_str_eq(str(p, "title"), "Synced page");
    ck_assert_int_eq(json_array_size(json_object_get(p, "visits")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "visit_count")), 2); /* RELOAD does not count */
    ck_assert_int_eq(json_integer_value(json_object_get(p, "last_visit_date")), 1705000300000000LL);
    ck_assert_int_eq(json_integer_value(json_object_get(p, "hidden")), 0);
    /* Firefox's own history sync would upload them too */
    json_t *suf = json_object_get(p, "syncUnknownFields");
    ck_assert_int_eq(
        json_integer_value(json_array_get(json_object_get(json_object_get(suf, "futurePage"), "a"), 0)), 1);
    json_t *sv = json_object_get(p, "syncVisits");
    ck_assert_int_eq(json_array_size(sv), 3);
    ck_assert_str_eq(str(json_array_get(sv, 2), "futureVisit"), "v");
    json_t *fr = tup_find(hist, "guid", "framedPage01");
    ck_assert_ptr_nonnull(fr);
    ck_assert_int_eq(json_integer_value(json_object_get(fr, "hidden")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(fr, "visit_count")), 0);
    /* the known URL adopted the incoming GUID and got one new visit */
    json_t *ex = tup_find(hist, "url", "https://example.com/");
    ck_assert_str_eq(str(ex, "guid"), "otherGuid001");
    ck_assert_str_eq(str(ex, "title"), "Example (remote)");
    ck_assert_int_eq(json_array_size(json_object_get(ex, "visits")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(ex, "visit_count")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(ex, "foreign_count")), 4); /* bookmark untouched */
    ck_assert_ptr_null(tup_find(hist, "guid", guid_hist));
    ck_assert_int_eq(
        sql_int(d, "SELECT count(*) FROM moz_places WHERE url = 'https://history-only.example.org/a/b'"), 0);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_origins WHERE host = 'history-only.example.org'"),
                     0);
    ck_assert_int_eq(sql_int(d, "SELECT typed FROM moz_places WHERE guid = 'newPage00001'"), 1);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_historyvisits WHERE source = 1"), 5);
    json_decref(dump);
}
END_TEST

START_TEST(test_history_twenty_newest)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "history");
    json_t *visits = json_array();
    for (int k = 0; k < 25; k++)
        json_array_append_new(visits, json_pack("{s:I, s:i}", "date",
                                                (json_int_t)(1705000000000000LL + k * 1000000LL), "type", 1));
    json_t *batch = json_pack("[{s:s, s:s, s:s, s:o}]", "id", "manyVisits01", "histUri",
                              "https://many.example/", "title", "Many", "visits", visits);
    ck_assert_int_eq(picl__store_apply(s, batch), PICL_OK);
    json_decref(batch);
    json_t *r = NULL;
    ck_assert_int_eq(picl__store_get(s, "manyVisits01", &r), PICL_OK);
    json_t *v = json_object_get(r, "visits");
    ck_assert_int_eq(json_array_size(v), 20);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(v, 0), "date")), 1705000024000000LL);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(v, 19), "date")), 1705000005000000LL);
    json_decref(r);
    picl__store_close(s);
    ck_assert_int_eq(sql_int(d, "SELECT visit_count FROM moz_places WHERE guid = 'manyVisits01'"), 25);
}
END_TEST

/* The first column of the first row of sql as text (malloc()ed; "" if none). */
static char *sql_text(const char *dir, const char *sql)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/places.sqlite", dir);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    int r = sqlite3_step(st);
    ck_assert(r == SQLITE_ROW || r == SQLITE_DONE);
    const unsigned char *t = r == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
    char *out = strdup(t ? (const char *)t : "");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

/* Which visits apply() stores, exactly: a visit already there (from sync or
 * local, or earlier in the same record) is not doubled and its unknown
 * fields are not kept; a new one is stored with source 1 and its unknown
 * fields.  The visit insert is a lookup plus a one-row INSERT (issue 15);
 * these are the rows the INSERT ... SELECT WHERE NOT EXISTS it replaced
 * wrote. */
START_TEST(test_history_visits_exact)
{
    static const char *const rows =
        "SELECT group_concat((visit_date - 1706000000000000) || ':' || visit_type || ':' || source || ':' || "
        "coalesce(json_extract(e.sync_json, '$.unknown_sync_fields'), '-'), ' ') FROM (SELECT * FROM "
        "moz_historyvisits ORDER BY id) v JOIN moz_places h ON h.id = v.place_id "
        "LEFT JOIN moz_historyvisits_extra e ON e.visit_id = v.id WHERE h.guid = 'visitExact01'";
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "history");
    tup_apply_ok(s, "[{\"id\":\"visitExact01\",\"histUri\":\"https://exact.example/\",\"title\":\"E\","
                    "  \"visits\":[{\"date\":1706000000000000,\"type\":1,\"futureVisit\":\"first\"},"
                    "              {\"date\":1706000000000000,\"type\":1,\"futureVisit\":\"second\"},"
                    "              {\"date\":1706000000000000,\"type\":2},"
                    "              {\"date\":1706000001000000,\"type\":4},"
                    "              {\"date\":1706000001000000,\"type\":9}]}]");
    picl__store_close(s);
    char *t = sql_text(d, rows);
    ck_assert_str_eq(t, "0:1:1:{\"futureVisit\":\"first\"} 0:2:1:- 1000000:9:1:-");
    free(t);
    /* a local visit, as Firefox writes it */
    ck_assert_int_eq(
        sql_int(d, "INSERT INTO moz_historyvisits(from_visit, place_id, visit_date, visit_type, session, "
                   "source) SELECT 0, id, 1706000002000000, 1, 0, 0 FROM moz_places WHERE guid = "
                   "'visitExact01' RETURNING 1"),
        1);
    s = open_ok(d, "history");
    tup_apply_ok(s, "[{\"id\":\"visitExact01\",\"histUri\":\"https://exact.example/\",\"title\":\"E\","
                    "  \"visits\":[{\"date\":1706000002000000,\"type\":1,\"futureVisit\":\"third\"},"
                    "              {\"date\":1706000001000000,\"type\":9},"
                    "              {\"date\":1706000002000000,\"type\":5},"
                    "              {\"date\":1706000003000000,\"type\":1,\"futureVisit\":\"fourth\"}]}]");
    picl__store_close(s);
    t = sql_text(d, rows);
    ck_assert_str_eq(t, "0:1:1:{\"futureVisit\":\"first\"} 0:2:1:- 1000000:9:1:- 2000000:1:0:- "
                        "2000000:5:1:- 3000000:1:1:{\"futureVisit\":\"fourth\"}");
    free(t);
    /* read back: the records share one JSON integer per visit type (issue
     * 15); each visit still reads as its own */
    s = open_ok(d, "history");
    json_t *a = tup_all(s);
    json_t *r = tup_find(a, "id", "visitExact01");
    ck_assert_ptr_nonnull(r);
    char *txt = json_dumps(json_object_get(r, "visits"), JSON_COMPACT);
    ck_assert_str_eq(txt, "[{\"date\":1706000003000000,\"type\":1,\"futureVisit\":\"fourth\"},"
                          "{\"date\":1706000002000000,\"type\":5},{\"date\":1706000002000000,\"type\":1},"
                          "{\"date\":1706000001000000,\"type\":9},{\"date\":1706000000000000,\"type\":2},"
                          "{\"date\":1706000000000000,\"type\":1,\"futureVisit\":\"first\"}]");
    free(txt);
    json_decref(a);
    picl__store_close(s);
    ck_assert_int_eq(sql_int(d, "SELECT visit_count FROM moz_places WHERE guid = 'visitExact01'"), 5);
    ck_assert_int_eq(sql_int(d, "SELECT last_visit_date FROM moz_places WHERE guid = 'visitExact01'"),
                     1706000003000000LL);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_historyvisits_extra"), 2);
}
END_TEST

/* moz_origins as apply() leaves it: a page of a known origin marks it for
 * recalculation, a new origin is made once (frecency -1, both recalc
 * flags) and its later pages point to it.  Written by a lookup plus a
 * one-row UPDATE or INSERT since issue 15; these are the rows the upsert
 * it replaced wrote. */
START_TEST(test_history_origins_exact)
{
    const char *d = fresh_profile();
    sql_int(d, "UPDATE moz_origins SET recalc_frecency = 0, recalc_alt_frecency = 0, frecency = 5");
    int64_t before = sql_int(d, "SELECT count(*) FROM moz_origins");
    int64_t known =
        sql_int(d, "SELECT id FROM moz_origins WHERE prefix = 'https://' AND host = 'example.com'");
    ck_assert_int_gt(known, 0);
    picl_store *s = open_ok(d, "history");
    tup_apply_ok(s,
                 "[{\"id\":\"originPage01\",\"histUri\":\"https://example.com/o1\",\"title\":\"O1\","
                 "  \"visits\":[{\"date\":1706000000000000,\"type\":1}]},"
                 " {\"id\":\"originPage02\",\"histUri\":\"https://u@Fresh.example:8080/a\",\"title\":\"O2\","
                 "  \"visits\":[{\"date\":1706000001000000,\"type\":1}]},"
                 " {\"id\":\"originPage03\",\"histUri\":\"https://Fresh.example:8080/b?x\",\"title\":\"O3\","
                 "  \"visits\":[{\"date\":1706000002000000,\"type\":1}]}]");
    picl__store_close(s);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_origins"), before + 1);
    char *t =
        sql_text(d, "SELECT group_concat(prefix || '|' || host || '|' || recalc_frecency || '|' || "
                    "recalc_alt_frecency || '|' || (frecency = -1), ' ') FROM (SELECT * FROM moz_origins "
                    "WHERE host IN ('example.com', 'Fresh.example:8080') ORDER BY id)");
    ck_assert_str_eq(t, "https://|example.com|1|1|0 https://|Fresh.example:8080|1|1|1");
    free(t);
    ck_assert_int_eq(sql_int(d, "SELECT origin_id FROM moz_places WHERE guid = 'originPage01'"), known);
    t = sql_text(
        d, "SELECT group_concat(o.host, ' ') FROM moz_places h JOIN moz_origins o ON o.id = h.origin_id "
           "WHERE h.guid IN ('originPage02', 'originPage03')");
    ck_assert_str_eq(t, "Fresh.example:8080 Fresh.example:8080");
    free(t);
    /* the other origins keep their flags */
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_origins WHERE recalc_frecency = 1"), 2);
}
END_TEST

START_TEST(test_history_bad_records_change_nothing)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "history");
    picl__store_close(s);
    uint64_t before = tup_dir_digest(d);
    s = open_ok(d, "history");
    static const char *bad[] = {
        "[\"x\"]",
        "[{\"histUri\":\"https://a.example/\",\"visits\":[]}]",
        "[{\"id\":\"toolong_guid_\",\"histUri\":\"https://a.example/\",\"visits\":[]}]",
        "[{\"id\":\"abcdefghijkl\",\"visits\":[]}]",
        "[{\"id\":\"abcdefghijkl\",\"histUri\":\"javascript alert\",\"visits\":[]}]",
        "[{\"id\":\"abcdefghijkl\",\"histUri\":\"https://a.example/\"}]",
        "[{\"id\":\"abcdefghijkl\",\"histUri\":\"https://a.example/\",\"visits\":{}}]",
        "[{\"id\":\"abcdefghijkl\",\"histUri\":\"https://a.example/\",\"visits\":[{\"date\":1}]}]",
        "[{\"id\":\"abcdefghijkl\",\"histUri\":\"https://a.example/\",\"visits\":[{\"date\":1,\"type\":0}]}]",
        "[{\"id\":\"abcdefghijkl\",\"histUri\":\"https://a.example/"
        "\",\"visits\":[{\"date\":1,\"type\":10}]}]",
        "[{\"id\":\"abcdefghijkl\",\"histUri\":\"https://a.example/"
        "\",\"visits\":[{\"date\":-5,\"type\":1}]}]",
        "[{\"id\":\"abcdefghijkl\",\"histUri\":\"https://a.example/"
        "\",\"visits\":[{\"date\":\"1\",\"type\":1}]}]",
        "[{\"id\":\"abcdefghijkl\",\"histUri\":\"https://a.example/\",\"title\":[],\"visits\":[]}]",
        "[{\"id\":\"abcdefghijkl\",\"deleted\":1}]",
        "[{\"id\":\"goodgoodgood\",\"histUri\":\"https://good.example/"
        "\",\"visits\":[{\"date\":1,\"type\":1}]},"
        " {\"id\":\"bad\"}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        picl_status st = apply_status(s, bad[i]);
        ck_assert_msg(st == PICL_ERROR_ENCODING, "case %zu: %d", i, st);
    }
    ck_assert_int_eq(apply_status(s, "{}"), PICL_ERROR_INVALID_ARGUMENT);
    picl__store_close(s);
    ck_assert(tup_dir_digest(d) == before);
}
END_TEST

START_TEST(test_history_wipe)
{
    const char *d = fresh_profile();
    picl_store *s = open_ok(d, "history");
    ck_assert_int_eq(picl__store_wipe(s), PICL_OK);
    json_t *a = tup_all(s);
    ck_assert_int_eq(json_array_size(a), 0);
    json_decref(a);
    picl__store_close(s);
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_historyvisits"), 0);
    /* bookmarked pages stay, the rest go */
    ck_assert_int_eq(sql_int(d, "SELECT count(*) FROM moz_places"), 6);
    json_t *dump = tup_dump_profile(d);
    ck_assert_int_eq(json_array_size(json_object_get(dump, "history")), 0);
    ck_assert_int_eq(json_array_size(json_object_get(dump, "bookmarks")), 14);
    json_decref(dump);
}
END_TEST

/* What we write is what Firefox's own maintenance considers coherent. */
START_TEST(test_firefox_maintenance_finds_nothing_to_fix)
{
    const char *d = fresh_profile();
    const char *src = getenv("PICL_SRCDIR") ? getenv("PICL_SRCDIR") : ".";
    /* first settle what Firefox itself left (the fixture's explicit old dates) */
    ck_assert_int_eq(tup_sh("'%s/tests/make-profile.sh' --maintain '%s' >'%s.maintlog' 2>&1", src, d, d), 0);
    picl_store *s = open_ok(d, "bookmarks");
    tup_apply_ok(s, INCOMING_BOOKMARKS);
    picl__store_close(s);
    s = open_ok(d, "history");
    tup_apply_ok(
        s, "[{\"id\":\"newPage00001\",\"histUri\":\"https://sync.example.net/p?x=1\",\"title\":\"S\","
           "\"visits\":[{\"date\":1705000000000000,\"type\":1},{\"date\":1705000300000000,\"type\":9}]},"
           "{\"id\":\"framedPage01\",\"histUri\":\"https://frame.example.net/\","
           "\"visits\":[{\"date\":1705000000000000,\"type\":8}]}]");
    picl__store_close(s);
    char *before = snapshot(d);
    ck_assert_int_eq(tup_sh("'%s/tests/make-profile.sh' --maintain '%s' >'%s.maintlog' 2>&1", src, d, d), 0);
    char *after = snapshot(d);
    if (strcmp(before, after) != 0) {
        char a[PATH_MAX], b[PATH_MAX];
        snprintf(a, sizeof a, "%s.before", d);
        snprintf(b, sizeof b, "%s.after", d);
        FILE *fa = fopen(a, "w"), *fb = fopen(b, "w");
        fputs(before, fa);
        fputs(after, fb);
        fclose(fa);
        fclose(fb);
        tup_sh("diff '%s' '%s' >&2", a, b);
    }
    ck_assert_msg(strcmp(before, after) == 0, "Firefox's maintenance changed what we wrote (diff above)");
    free(before);
    free(after);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("store_places");
    TCase *t = tcase_create("places");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_url_hash_matches_firefox);
    tcase_add_test(t, test_open_refusals);
    tcase_add_test(t, test_locked_profile_untouched);
    tcase_add_test(t, test_unknown_schema_untouched);
    tcase_add_test(t, test_corrupt_places_untouched);
    tcase_add_test(t, test_bookmarks_read_firefox_profile);
    tcase_add_test(t, test_bookmarks_change_tracking);
    tcase_add_test(t, test_bookmarks_apply_read_back_by_firefox);
    tcase_add_test(t, test_bookmarks_reorder_only);
    tcase_add_test(t, test_bookmarks_without_itemindex);
    tcase_add_test(t, test_bookmarks_tree_walks);
    tcase_add_test(t, test_bookmarks_bad_records_change_nothing);
    tcase_add_test(t, test_bookmarks_wipe);
    tcase_add_test(t, test_history_read_firefox_profile);
    tcase_add_test(t, test_history_apply_read_back_by_firefox);
    tcase_add_test(t, test_history_twenty_newest);
    tcase_add_test(t, test_history_visits_exact);
    tcase_add_test(t, test_history_origins_exact);
    tcase_add_test(t, test_history_bad_records_change_nothing);
    tcase_add_test(t, test_history_wipe);
    tcase_add_test(t, test_firefox_maintenance_finds_nothing_to_fix);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(suite()); }
