/* engine.h -- the sync algorithm of client.md section 3 with the security
 * classes of records.md: meta/global, the signed class map, per-collection
 * download / reconcile / apply / upload, class moves, password-reset repair. */
#ifndef PICL_CLIENT_ENGINE_H
#define PICL_CLIENT_ENGINE_H

#include <jansson.h>
#include "picl.h"
#include "client/records.h"
#include "client/state.h"
#include "client/storage_client.h"
#include "stores/store.h"

typedef struct picl_engine {
    picl_stc *stc;            /* borrowed: an authenticated storage client */
    picl_state *st;           /* borrowed: kA (and kB unless strict mode) inside */
    picl_observer_fn notify;  /* may be NULL */
    void *notify_ctx;
    /* Asked before acting on a class map signed under another kB: must
     * confirm that st->kb is the keyserver's current kB (e.g. the session
     * is still valid).  NULL = trust st->kb. */
    picl_status (*confirm_keys)(void *ctx);
    void *confirm_ctx;
    char error[256];          /* the last failure, for the user */
    /* per run */
    picl_classmap map;
    int have_map;
    int64_t map_modified;     /* meta/classes last-modified, -1 unknown */
    int keys_changed;         /* a password reset elsewhere was repaired */
    json_t *info;             /* /info/collections of this run */
    json_t *meta_cache;       /* meta's BSOs as last listed, id -> BSO */
    int64_t meta_written;     /* last-modified of our last meta write, 0 none */
} picl_engine;

/* Sets up e (zeroed) for one run over an authenticated storage client. */
void picl__engine_init(picl_engine *e, picl_stc *stc, picl_state *st);
void picl__engine_done(picl_engine *e);

/*
 * Syncs each store's collection (stores[i]->collection).  summary (an
 * object, borrowed) receives {collection: {"downloaded", "applied",
 * "uploaded", "failed", "status"}} and "keys_changed" when a password reset
 * elsewhere made class B unreadable.  A class-B collection without kB in
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

/* Deletes a collection on the server and forgets its cursor. */
picl_status picl__engine_wipe_server(picl_engine *e, const char *collection);

/* "123.45" <-> 12345 (hundredths of a second); malformed text is -1. */
int64_t picl__ts_parse(const char *text);
void picl__ts_format(char out[24], int64_t centis);

#endif
