/* SPDX-License-Identifier: MPL-2.0 */
/* places.c -- places.sqlite: opening the store (see places.h); closing it
 * and the SQL helpers are in places_db.c. */
#include "stores/places_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/nss.h"

/* ---- open ---------------------------------------------------------------- */

/* The schema version from the file header (offset 60, big-endian), valid
 * when no WAL holds newer pages; -1 when unreadable. */
static long header_version(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char h[100];
    long v = -1;
    if (f && fread(h, 1, sizeof h, f) == sizeof h && memcmp(h, "SQLite format 3", 16) == 0)
        v = ((long)h[60] << 24) | ((long)h[61] << 16) | ((long)h[62] << 8) | (long)h[63];
    if (f)
        fclose(f);
    return v;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

picl_status picl__places_open(picl_store **out, const char *profile_dir, const char *collection, char *err,
                              size_t errlen)
{
    char path[4096], wal[4100];
    struct stat sb;
    *out = NULL;
    if (!collection || (strcmp(collection, "bookmarks") != 0 && strcmp(collection, "history") != 0)) {
        seterr(err, errlen, "places.sqlite holds bookmarks and history, not %s",
               collection ? collection : "?");
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    places *p = calloc(1, sizeof *p);
    if (!p)
        return PICL_ERROR_NO_MEMORY;
    p->history = strcmp(collection, "history") == 0;
    p->base.ops = p->history ? &picl__places_history_ops : &picl__places_bookmark_ops;
    snprintf(p->base.collection, sizeof p->base.collection, "%s", collection);
    picl_status rc = picl__profile_open(profile_dir, &p->profile, err, errlen);
    if (rc != PICL_OK)
        goto fail;
    if ((rc = picl__profile_path(p->profile, "places.sqlite", path, sizeof path)) != PICL_OK)
        goto fail;
    if (stat(path, &sb) != 0) {
        seterr(err, errlen, "%s does not exist", path);
        rc = PICL_ERROR_NOT_FOUND;
        goto fail;
    }
    /* Refuse an unknown schema before SQLite opens (and maybe writes) anything. */
    snprintf(wal, sizeof wal, "%s-wal", path);
    long hv = header_version(path);
    if (hv < 0) {
        seterr(err, errlen, "%s is not an SQLite database", path);
        rc = PICL_ERROR_DATABASE;
        goto fail;
    }
    if (hv != PICL_PLACES_SCHEMA && (stat(wal, &sb) != 0 || sb.st_size == 0)) {
        if (err && errlen)
            snprintf(err, errlen, "places.sqlite schema version %ld is not the supported %d", hv,
                     PICL_PLACES_SCHEMA);
        rc = PICL_ERROR_UNSUPPORTED;
        goto fail;
    }
    if ((rc = picl__nss_acquire()) != PICL_OK) {
        seterr(err, errlen, "%s", "NSS could not be initialised");
        goto fail;
    }
    p->nss = 1;
    if (sqlite3_open_v2(path, &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        seterr(err, errlen, "cannot open places.sqlite: %s", p->db ? sqlite3_errmsg(p->db) : "out of memory");
        rc = PICL_ERROR_DATABASE;
        goto fail;
    }
    sqlite3_busy_timeout(p->db, 2000);
    sqlite3_stmt *st = NULL;
    int version = -1;
    if (sqlite3_prepare_v2(p->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (version != PICL_PLACES_SCHEMA) {
        if (err && errlen)
            snprintf(err, errlen, "places.sqlite schema version %d is not the supported %d", version,
                     PICL_PLACES_SCHEMA);
        rc = version < 0 ? PICL_ERROR_DATABASE : PICL_ERROR_UNSUPPORTED;
        goto fail;
    }
    if (sqlite3_prepare_v2(p->db,
                           "SELECT 1 FROM sqlite_master WHERE type = 'index' AND "
                           "name = 'moz_bookmarks_itemindex' AND tbl_name = 'moz_bookmarks'",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        p->itemindex = 1;
    sqlite3_finalize(st);
    if (sqlite3_exec(p->db, "CREATE TEMP TABLE IF NOT EXISTS picl_touched(place_id INTEGER PRIMARY KEY)",
                     NULL, NULL, NULL) != SQLITE_OK) {
        seterr(err, errlen, "places.sqlite: %s", sqlite3_errmsg(p->db));
        rc = PICL_ERROR_DATABASE;
        goto fail;
    }
    if (!p->history && (rc = picl__places_bookmarks_init(p)) != PICL_OK) {
        seterr(err, errlen, "%s", p->base.error);
        goto fail;
    }
    *out = &p->base;
    return PICL_OK;
fail:
    picl__places_close(&p->base);
    return rc;
}
