/* SPDX-License-Identifier: MPL-2.0 */
/* engine.h -- the sync algorithm of client.md section 3 with the security
 * classes of records.md: meta/global, the signed class map, per-collection
 * download / reconcile / apply / upload, class moves, the class map anchor
 * and the rebuild after a password reset. */
#ifndef PICL_CLIENT_ENGINE_H
#define PICL_CLIENT_ENGINE_H

#include <jansson.h>
#include "picl.h"
#include "client/records.h"
#include "client/state.h"
#include "client/storage_client.h"
#include "stores/store.h"

/* The class map anchor on the keyserver (records.md 4, keyserver.md 9). */
typedef struct picl_anchor {
    uint64_t version;       /* newest registered map's version, 0 = none */
    char hmac[65];          /* its hmac (lowercase hex), "" when none */
    uint64_t epoch;         /* the key epoch it was registered in */
    uint64_t current_epoch; /* the account's key epoch now (>= 1) */
} picl_anchor;

typedef struct picl_engine {
    picl_stc *stc;           /* borrowed: an authenticated storage client */
    picl_state *st;          /* borrowed: kA (and kB unless strict mode) inside */
    picl_observer_fn notify; /* may be NULL */
    void *notify_ctx;
    /* The keyserver's anchor: get reads it (GET /account/classmap), post
     * registers a map (POST; PICL_ERROR_CONFLICT for 409/123 "stale").
     * Required for anything that reads or writes the class map: without
     * them the engine refuses (PICL_ERROR_STATE), it never guesses. */
    picl_status (*anchor_get)(void *ctx, picl_anchor *out);
    picl_status (*anchor_post)(void *ctx, uint64_t version, const char *hmac);
    void *anchor_ctx;
    char error[256]; /* the last failure, for the user */
    /* per run */
    picl_classmap map;
    int have_map;
    int64_t map_modified; /* meta/classes last-modified, -1 unknown */
    int keys_changed;     /* this device rebuilt the map after a password reset */
    picl_anchor anchor;   /* as read this run (have_anchor) */
    int have_anchor;
    json_t *info;         /* /info/collections of this run */
    json_t *meta_cache;   /* meta's BSOs as last listed, id -> BSO */
    int64_t meta_written; /* last-modified of our last meta write, 0 none */
    json_t *failures;     /* [{collection, id, reason}]: records refused by an
                                 integrity check this run (NULL = none) */
    /* mass-deletion guard: a sync that would delete more than half of a
     * collection's records (and at least PICL_MASS_DELETE_MIN) applies and
     * uploads nothing for it unless allow_mass_delete (set by the caller);
     * either way the collection's restore point (its server timestamp
     * before the deletion) is saved first as "restorePoint" in its state */
    int allow_mass_delete;
    json_t *guarded; /* [{collection, deletions, records, restorePoint}]
                                 held back this run (NULL = none) */
} picl_engine;

#define PICL_MASS_DELETE_MIN 20

/* The ttl (seconds) of the BSOs of the tabs and clients collections: like
 * Firefox's, they go away 21 days after a device last uploaded them (the
 * stores upload them again at least weekly while the device syncs). */
#define PICL_DEVICE_RECORD_TTL_S (21 * 86400)

/* Sets up e (zeroed) for one run over an authenticated storage client. */
void picl__engine_init(picl_engine *e, picl_stc *stc, picl_state *st);
void picl__engine_done(picl_engine *e);

/*
 * Syncs each store's collection (stores[i]->collection).  summary (an
 * object, borrowed) receives {collection: {"downloaded", "applied",
 * "uploaded", "failed", "status"}}, and "keys_changed" plus "class_b" (the
 * class-B collections, for the user) when this device rebuilt the class map
 * after a password reset.  Records refused by an integrity check
 * (MAC, kid, id, not JSON) are never applied, the rest is, and they are
 * listed in e->failures (and told to the observer, phase "integrity"); the
 * run still returns PICL_OK for them: the caller decides (the service
 * returns PICL_ERROR_INTEGRITY).  A class-B collection without kB in
 * memory (strict mode) is skipped with status "locked".  Returns the first
 * hard failure (network, auth, conflict after retries, forged class map);
 * state is saved after every collection that committed.
 */
picl_status picl__engine_sync(picl_engine *e, picl_store *const *stores, size_t n, json_t *summary);

/*
 * Moves a collection to class cls ('A' or 'B'): every record re-encrypted
 * under the new class at generation + 1 in one atomic batch, then the map.
 * The intent is saved first, so a crash at any step is finished by the next
 * picl__engine_sync() or set_class.  Needs kB (the map is signed with it).
 */
picl_status picl__engine_set_class(picl_engine *e, const char *collection, char cls);

/* The class of a collection from the map (fetching it when needed). */
picl_status picl__engine_get_class(picl_engine *e, const char *collection, picl_class_entry *out);

/*
 * Undo (storage extension picl_restore_days): compares the collection as it
 * was at as_of (centis) with what it is now, both decrypted, into plan
 * {"collection", "asOf", "restore": [ids], "delete": [ids], "unreadable": n}:
 * records to bring back (absent, deleted or different now) and records that
 * did not exist then.  With apply, uploads them as ordinary changes
 * (re-encrypted under the collection's current key, conditional on the
 * listing just read), so every device's next sync follows.  A server
 * without the extension, or an as_of older than it keeps, is
 * PICL_ERROR_UNSUPPORTED with e->error saying which.
 */
picl_status picl__engine_restore(picl_engine *e, const char *collection, int64_t as_of, int apply,
                                 json_t *plan);

/* Deletes a collection on the server and forgets its cursor. */
picl_status picl__engine_wipe_server(picl_engine *e, const char *collection);

/* "123.45" <-> 12345 (hundredths of a second) through protocol/synctime.h,
 * for the cursor texts of state.h; NULL or malformed text is -1. */
int64_t picl__ts_parse(const char *text);
void picl__ts_format(char out[24], int64_t centis);

#endif
