/* SPDX-License-Identifier: MPL-2.0 */
/* places.h -- the bookmarks and history stores over a Firefox profile's places.sqlite. */
#ifndef PICL_STORES_PLACES_H
#define PICL_STORES_PLACES_H

#include <stddef.h>
#include <stdint.h>
#include "stores/store.h"

/*
 * picl__places_open(&s, DIR, "bookmarks" | "history", err, errlen) opens
 * DIR/places.sqlite for the sync engine (store.h) while Firefox is NOT
 * running: the profile lock (profile.h) is taken first and held until close,
 * so a locked profile is PICL_ERROR_PROFILE_LOCKED and nothing is opened.
 * A places.sqlite whose schema version (PRAGMA user_version) is not the one
 * measured (PICL_PLACES_SCHEMA, Firefox ESR 153) is PICL_ERROR_UNSUPPORTED,
 * refused before anything is written; a missing one is PICL_ERROR_NOT_FOUND.
 * err (may be NULL) gets a message when opening fails.  The store needs NSS
 * (GUIDs come from picl__random_bytes) and acquires it itself.
 *
 * Firefox keeps some columns with TEMP triggers that exist only on its own
 * connections, so every apply() maintains them itself, in the same single
 * transaction: moz_places.visit_count (visits not of type 0/4/7/8/9),
 * last_visit_date, foreign_count (bookmarks + keywords), typed, hidden,
 * url_hash, origin_id/moz_origins; frecency is left to Firefox (recalc_frecency
 * = 1, frecency -1 on new pages).
 *
 * Bookmarks: records.md §3 bookmark/folder/separator/query records (a
 * "livemark" is stored as a folder); ids are Places GUIDs except the roots
 * menu/toolbar/unfiled/mobile (menu________ ...); root________ and the tags
 * folder are never records.  Tags live as Firefox keeps them (a folder per tag
 * under tags________), keywords in moz_keywords; both belong to the URL, and
 * an incoming bookmark without "tags" / "keyword" leaves its URL without.
 * A folder record's "children" orders the folder (listed first, in order;
 * others keep their order after them) and pulls listed items into it.  Change tracking is Firefox's
 * own: syncChangeCounter > 0 is a local change, moz_bookmarks_deleted holds
 * local deletions (tombstones); apply() writes syncStatus NORMAL and counter 0
 * and records no tombstone.  mark_synced() subtracts what changes() reported,
 * so an edit made meanwhile stays a change.  An incoming item whose parent is
 * missing goes to unfiled; a deleted folder's surviving children too; both
 * moves are local changes (counter bumped, with unfiled's) so the server
 * learns the new structure.
 *
 * History: records {id, histUri, title, visits[{date µs, type}]} (newest 20),
 * keyed by the page GUID.  Local changes are pages with a visit not written by
 * sync (moz_historyvisits.source != 1) newer than the cursor kept in moz_meta
 * (a visit imported with a date older than the cursor is not seen)
 * ("picl/history/lastSync", µs); apply() writes visits with source 1.  Local
 * page deletions are not reported (Firefox keeps no history tombstones).  An
 * incoming page known locally by URL takes the incoming GUID; one whose GUID
 * names another URL locally is skipped.  A page left without bookmark, keyword
 * or visit is removed, as Places' expiration would.  Unknown fields of a page
 * or a visit are kept as Firefox's history sync keeps them (moz_places_extra /
 * moz_historyvisits_extra sync_json {"unknown_sync_fields": "<JSON>"}) and
 * given back on read; unknown fields of bookmark records are not kept.
 *
 * Bad incoming records (wrong id form, unknown type, missing or over-long URL,
 * malformed tags/children/visits) reject the whole batch with
 * PICL_ERROR_ENCODING before anything is written.
 */
#define PICL_PLACES_SCHEMA 86

picl_status picl__places_open(picl_store **out, const char *profile_dir, const char *collection, char *err,
                              size_t errlen);

/* Firefox's moz_places.url_hash of a URL (48 bits; see the notes). */
uint64_t picl__places_url_hash(const char *url, size_t len);

#endif
