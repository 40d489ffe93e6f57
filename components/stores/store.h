/* SPDX-License-Identifier: MPL-2.0 */
/* store.h -- the profile store interface of client.md section 5: what the
 * sync engine needs from bookmarks, history and passwords, whatever holds them. */
#ifndef PICL_STORES_STORE_H
#define PICL_STORES_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "picl.h"

/*
 * Records crossing this interface are cleartext JSON objects in the Firefox
 * Sync formats of records.md section 3 (bookmarks, passwords, history), keyed
 * by "id" (the Places / login GUID).  A deletion is the tombstone
 * {"id": ..., "deleted": true}.
 *
 * Change tracking is the store's job: changes() reports every record created,
 * changed or deleted locally since the last mark_synced(), and a record the
 * store wrote through apply() is NOT a local change.  A store remembers what
 * it reported, so mark_synced() can clear exactly those changes and keep any
 * that happened meanwhile (a change made during a sync is uploaded next time).
 *
 * Ownership: json_t results are new references the caller json_decref()s;
 * arguments are borrowed.  Every operation returns a picl_status and sets a
 * message retrievable with picl__store_error() (static until the next call).
 */
typedef struct picl_store picl_store;

typedef struct picl_store_ops {
    /* Local changes since the last mark_synced(): a JSON array of records
     * and tombstones, at most one per id. */
    picl_status (*changes)(picl_store *s, json_t **records);
    /* Every live record (no tombstones): for a first sync, a class move, or
     * re-uploading class B after a password reset. */
    picl_status (*all)(picl_store *s, json_t **records);
    /* One record by id; *record is NULL when the store has none. */
    picl_status (*get)(picl_store *s, const char *id, json_t **record);
    /* Applies incoming records and tombstones in ONE transaction: all or
     * nothing.  Unknown fields of a record are kept where the store can. */
    picl_status (*apply)(picl_store *s, const json_t *records);
    /* The given records (as returned by changes()) are now on the server. */
    picl_status (*mark_synced)(picl_store *s, const json_t *records);
    /* Forget sync state: the next changes() reports every live record. */
    picl_status (*reset)(picl_store *s);
    /* Delete every local record of this collection (a server-side wipe seen
     * with an empty server is NOT a reason; the engine calls this only on
     * the user's explicit request). */
    picl_status (*wipe)(picl_store *s);
    /* Frees the store (and closes its files). */
    void (*close)(picl_store *s);
} picl_store_ops;

struct picl_store {
    const picl_store_ops *ops;
    char collection[33]; /* "bookmarks", "history", "passwords", ... */
    char error[256];     /* last error message, "" when none */
    /* Progress while apply() works through many records: set by the caller
     * (the engine; NULL = nobody listens), called through
     * picl__store_progress() from inside apply(). */
    void (*progress)(void *ctx, const char *collection, int64_t done, int64_t total);
    void *progress_ctx;
};

/* Reports apply() progress every 256 records (see picl_store.progress). */
static inline void picl__store_progress(picl_store *s, size_t done, size_t total)
{
    if (s->progress && done % 256 == 0)
        s->progress(s->progress_ctx, s->collection, (int64_t)done, (int64_t)total);
}

/* Convenience wrappers (NULL-safe close). */
static inline picl_status picl__store_changes(picl_store *s, json_t **r) { return s->ops->changes(s, r); }
static inline picl_status picl__store_all(picl_store *s, json_t **r) { return s->ops->all(s, r); }
static inline picl_status picl__store_get(picl_store *s, const char *id, json_t **r)
{
    return s->ops->get(s, id, r);
}
static inline picl_status picl__store_apply(picl_store *s, const json_t *r) { return s->ops->apply(s, r); }
static inline picl_status picl__store_mark_synced(picl_store *s, const json_t *r)
{
    return s->ops->mark_synced(s, r);
}
static inline picl_status picl__store_reset(picl_store *s) { return s->ops->reset(s); }
static inline picl_status picl__store_wipe(picl_store *s) { return s->ops->wipe(s); }
static inline void picl__store_close(picl_store *s)
{
    if (s)
        s->ops->close(s);
}
static inline const char *picl__store_error(const picl_store *s) { return s->error; }

/* Sets s->error (printf-style) and returns st: `return picl__store_fail(s, st, "...")`. */
picl_status picl__store_fail(picl_store *s, picl_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- the memory store (tests) ------------------------------------------- */
/* An in-memory store of one collection.  picl__memstore_put/delete are
 * "local edits" (they count as changes); apply() does not. */
picl_status picl__memstore_open(picl_store **out, const char *collection);
picl_status picl__memstore_put(picl_store *s, const json_t *record);
picl_status picl__memstore_delete(picl_store *s, const char *id);

/* ---- the JSON-file store (picl sync --store-dir DIR) -------------------- */
/* DIR/<collection>.json is a JSON array of cleartext records, edited by the
 * user or a script; DIR/.picl-<collection>.synced remembers what was last
 * synced so an edit or a removal between syncs is a local change (a removal
 * becomes a tombstone).  apply() rewrites the file atomically (temp file,
 * fsync, rename).  A malformed file is PICL_ERROR_ENCODING and nothing is
 * written. */
picl_status picl__filestore_open(picl_store **out, const char *dir, const char *collection);

/* ---- a store implemented by the caller (picl.h picl_store_callbacks) --- */
/* changes/all/apply/mark_synced are required; get/reset/wipe may be NULL.
 * Returned JSON texts are malloc()ed by the callee and freed here. */
picl_status picl__cbstore_open(picl_store **out, const char *collection, const picl_store_callbacks *cb,
                               void *ctx);

#endif
