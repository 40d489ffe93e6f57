/* engine_int.h -- what engine.c (the sync and the moves) and engine_meta.c
 * (meta/global, the class map) share; not part of the engine's API. */
#ifndef PICL_CLIENT_ENGINE_INT_H
#define PICL_CLIENT_ENGINE_INT_H

#include "client/engine.h"

/* Sets e->error (printf-style) and returns st. */
picl_status picl__eng_fail(picl_engine *e, picl_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Tells the observer, if any. */
void picl__eng_notify(picl_engine *e, const char *phase, const char *coll, int64_t done, int64_t total,
                      const char *msg);
/* The state object of a collection (created empty when missing). */
json_t *picl__eng_coll_state(picl_engine *e, const char *c);
/* Cursor back to 0 and a store reset at the collection's next sync: a full
 * merge, never a deletion of local data. */
void picl__eng_mark_reset(picl_engine *e, const char *c);

/* meta/global: created, or read; a changed syncID resets the collections'
 * cursors; collections not yet listed are added.  No request when meta did
 * not change since the last run. */
picl_status picl__eng_ensure_global(picl_engine *e, picl_store *const *stores, size_t n);
/* The class map in e->map: verified from the server (or the accepted copy
 * when meta did not change), created with the defaults by the first device,
 * re-uploaded from our copy when lost, repaired after a reset elsewhere. */
picl_status picl__eng_ensure_map(picl_engine *e);
/* Signs e->map and writes it with X-If-Unmodified-Since ius (-1: read the
 * map's last-modified first). */
picl_status picl__eng_write_map(picl_engine *e, int64_t ius);
/* A collection's map entry; an unknown collection is added as class B. */
picl_status picl__eng_entry_for(picl_engine *e, const char *c, picl_class_entry *out);

#endif
