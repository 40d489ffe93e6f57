/* SPDX-License-Identifier: MPL-2.0 */
/* places_int.h -- what the places store's files share: places.c (open,
 * close), places_bookmarks.c, places_history.c and places_tags.c call the
 * helpers of places_db.c, which calls none of them back. */
#ifndef PICL_STORES_PLACES_INT_H
#define PICL_STORES_PLACES_INT_H

#include <sqlite3.h>
#include "stores/places.h"
#include "stores/profile.h"

#define PLACES_GUID_LEN 12
#define PLACES_MAX_URL 65536  /* Firefox's own cap on stored URLs */
#define PLACES_MAX_TITLE 4096 /* Firefox truncates titles at 4096 */
#define PLACES_VISIT_SOURCE_SYNC 1
#define PLACES_SYNC_STATUS_UNKNOWN 0
#define PLACES_SYNC_STATUS_NORMAL 2

#define PLACES_STMT_CACHE 64

/* SQL that looks moz_bookmarks up by fk (as `alias`): names Firefox's
 * moz_bookmarks_itemindex, since a browser-made sqlite_stat1 leads SQLite to
 * scan the table instead, but only where the index exists (a places.sqlite
 * made by other tools may lack it; naming a missing index fails to
 * prepare).  Both texts are literals, so the statement cache keeps each. */
#define PLACES_BY_FK(p, before, alias, after)                                                                \
    ((p)->itemindex ? before " moz_bookmarks " alias " INDEXED BY moz_bookmarks_itemindex " after            \
                    : before " moz_bookmarks " alias " " after)

typedef struct places {
    picl_store base;
    picl_profile *profile;
    sqlite3 *db;
    int history;                          /* 0 = bookmarks, 1 = history */
    int nss;                              /* picl__nss_acquire() held */
    json_t *reported;                     /* bookmarks: guid -> syncChangeCounter reported (0 = tombstone) */
    int64_t reported_until;               /* history: newest local visit date reported, µs */
    int64_t root_id, tags_id, unfiled_id; /* bookmarks: moz_bookmarks ids */
    int itemindex;                        /* moz_bookmarks_itemindex (fk, type) exists */
    struct {
        const char *sql; /* the text it was prepared from (the caller's literal) */
        sqlite3_stmt *st;
    } cache[PLACES_STMT_CACHE];
    size_t ncache;
} places;

/* SQLite helpers: every failure sets the store error and returns
 * PICL_ERROR_DATABASE. */
picl_status picl__places_exec(places *p, const char *sql);
/* Sets "places.sqlite: <what>: <sqlite message>" and returns PICL_ERROR_DATABASE. */
picl_status picl__places_dberr(places *p, const char *what);
picl_status picl__places_prep(places *p, sqlite3_stmt **st, const char *sql);
/* sqlite3_step expecting SQLITE_DONE. */
picl_status picl__places_done(places *p, sqlite3_stmt *st);
/* A statement prepared once per connection and kept for the next call with
 * the same SQL text (the statements of a long apply are not parsed again
 * for every record).  Hand it back with picl__places_release, never
 * sqlite3_finalize: release resets it and clears its bindings (a statement
 * the cache had no room for is finalized).  Not re-entrant per SQL text.
 * picl__places_close finalizes the cache. */
picl_status picl__places_cached(places *p, sqlite3_stmt **st, const char *sql);
void picl__places_release(places *p, sqlite3_stmt *st);
picl_status picl__places_begin(places *p);
picl_status picl__places_end(places *p, picl_status rc); /* COMMIT if rc OK, else ROLLBACK; then idle */
/* Between operations: the connection's page cache (up to 2 MiB of 32 KiB
 * pages) goes back to the heap, where the engine's records need it while
 * the store waits (issue 15; the pages are read again from the OS cache). */
void picl__places_idle(places *p);

/* Runs sql with parameters bound by `types` ('i' int64, 'n' int64 with 0 as
 * NULL, 't' text or NULL); q1 also gives the first column of the first row
 * (0 when none). */
picl_status picl__places_q(places *p, const char *sql, const char *types, ...);
picl_status picl__places_q1(places *p, int64_t *out, const char *sql, const char *types, ...);

/* A fresh Places GUID (12 characters of base64url). */
picl_status picl__places_new_guid(places *p, char out[PLACES_GUID_LEN + 1]);
/* 1 if s is 12 base64url characters. */
int picl__places_valid_guid(const char *s);
/* 1 if s is an URL Places accepts (scheme ':' rest, no control chars, capped). */
int picl__places_valid_url(const char *s);

/* The moz_places id of url, creating the page (guid given or fresh, origin,
 * url_hash, rev_host, frecency -1 / recalc) when absent.  Marks it touched. */
picl_status picl__places_page(places *p, const char *url, const char *guid, int64_t *id);
/* Remembers a page whose counters must be recomputed before COMMIT. */
picl_status picl__places_touch(places *p, int64_t place_id);
/* Recomputes visit_count, last_visit_date, foreign_count, typed, recalc flags
 * of every touched page, then forgets them. */
picl_status picl__places_fix_touched(places *p);

int64_t picl__places_now_us(void);

/* Closes either store (the close op of both; in places_db.c). */
void picl__places_close(picl_store *s);

/* places_tags.c: url's keyword becomes kw (NULL: none; a keyword names one
 * URL); url's tags become exactly `tags` (array of strings, NULL: none);
 * a URL no bookmark points at any more loses its tags and keyword. */
picl_status picl__places_set_keyword(places *p, int64_t place, const char *kw);
picl_status picl__places_set_tags(places *p, int64_t place, const json_t *tags, int64_t now);
picl_status picl__places_drop_orphan_url(places *p, int64_t place);

/* places_history.c */
extern const picl_store_ops picl__places_history_ops;

/* places_bookmarks.c */
extern const picl_store_ops picl__places_bookmark_ops;
picl_status picl__places_bookmarks_init(places *p);

#endif
