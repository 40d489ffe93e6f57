/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_store_records.c -- libFuzzer target: incoming records (a JSON array
 * from the server) applied to the bookmarks, history and passwords stores
 * of a scratch profile; every answer must be OK or a clean refusal, and the
 * stores must stay readable. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "crypto/nss.h"
#include "stores/logins.h"
#include "stores/places.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Places schema 86 as Firefox ESR 153 creates it (the tables the stores use). */
static const char SCHEMA[] =
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

static picl_store *stores[3];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static char dir[] = "/tmp/picl-fuzz-store-XXXXXX";
    char path[256], err[256];
    sqlite3 *db = NULL;
    if (picl__nss_acquire() != PICL_OK || !mkdtemp(dir))
        __builtin_trap();
    fz_remove_at_exit(dir);
    snprintf(path, sizeof path, "%s/places.sqlite", dir);
    if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_exec(db, SCHEMA, NULL, NULL, NULL) != SQLITE_OK)
        __builtin_trap();
    sqlite3_close(db);
    if (picl__places_open(&stores[0], dir, "bookmarks", err, sizeof err) != PICL_OK ||
        picl__places_open(&stores[1], dir, "history", err, sizeof err) != PICL_OK ||
        picl__logins_open(&stores[2], dir, dir, NULL, NULL, err, sizeof err) != PICL_OK) {
        fprintf(stderr, "fuzz_store_records: %s\n", err);
        __builtin_trap();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *records = json_loadb((const char *)data, size, 0, NULL);
    if (!records)
        return 0;
    for (int i = 0; i < 3; i++) {
        picl_status st = picl__store_apply(stores[i], records);
        if (st != PICL_OK && st != PICL_ERROR_ENCODING && st != PICL_ERROR_INVALID_ARGUMENT &&
            st != PICL_ERROR_CONFLICT)
            __builtin_trap();
        json_t *all = NULL;
        if (picl__store_all(stores[i], &all) != PICL_OK || !json_is_array(all))
            __builtin_trap();
        json_decref(all);
    }
    json_decref(records);
    return 0;
}
