/* SPDX-License-Identifier: MPL-2.0 */
/* engine_int.h -- what engine.c (the sync and the moves), engine_meta.c
 * (meta/global, the class map, the rebuild after a reset) and
 * engine_common.c (the helpers both use) share; not part of the engine's
 * API.  engine.c and engine_meta.c call engine_common.c, engine.c calls
 * engine_meta.c, never the other way round. */
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

/* ---- runs of records (engine_common.c) ---- */

/* The keys of collection c under kid: PICL_ERROR_STATE when this device
 * does not hold that class's key in memory.  The caller wipes *out. */
picl_status picl__eng_keys_for(picl_engine *e, const char *coll, const picl_class_entry *kid,
                               picl_keypair *out);
/* Lists a record refused by an integrity check in e->failures (once) and
 * tells the observer; the reason names the check only. */
void picl__eng_record_failure(picl_engine *e, const char *c, const char *id, picl_record_fault why);
/* Decrypts BSOs into out (id -> cleartext) under the map entry `entry`
 * (another generation or a stronger class accepted: a move); *held counts
 * the records not read (integrity failures also in e->failures; a key not
 * in memory is held, not a failure).  Each payload parsed once, each key
 * imported once, each BSO's payload dropped once read (bsos is only for
 * freeing afterwards).  PICL_OK or PICL_ERROR_NO_MEMORY. */
picl_status picl__eng_decrypt_all(picl_engine *e, const char *c, const picl_class_entry *entry, json_t *bsos,
                                  json_t *out, int64_t *held);
/* The same over pages as they arrive: one key ring for the whole run;
 * begin(defer): the integrity failures are kept until end(report = 1)
 * records them (report = 0 forgets them: a download that failed showed
 * nothing); pump: a storage client whose next page moves between records
 * (may be NULL).  begin returns NULL for want of memory. */
typedef struct picl_eng_decrypt_run picl_eng_decrypt_run;
picl_eng_decrypt_run *picl__eng_decrypt_begin(int defer, picl_stc *pump);
picl_status picl__eng_decrypt_page(picl_engine *e, const char *c, const picl_class_entry *entry,
                                   picl_eng_decrypt_run *d, json_t *bsos, json_t *out, int64_t *held);
picl_status picl__eng_decrypt_views(picl_engine *e, const char *c, const picl_class_entry *entry,
                                    picl_eng_decrypt_run *d, const picl_bso_view *items, size_t n,
                                    json_t *out, int64_t *held);
void picl__eng_decrypt_end(picl_engine *e, const char *c, picl_eng_decrypt_run *d, int report);
/* Encrypts cleartext records under entry into new BSOs {id, payload[, ttl]}
 * (*bsos, the caller's). */
picl_status picl__eng_encrypt_bsos(picl_engine *e, const char *c, const picl_class_entry *entry,
                                   json_t *records, json_t **bsos);
/* Uploads bsos in as few batches as the server's limits allow, each
 * conditional on the one before (ius first); results merged into *out
 * (the caller clears it). */
picl_status picl__eng_post_all(picl_engine *e, const char *c, json_t *bsos, int64_t ius,
                               picl_stc_post_result *out);
/* The server's limits, and how many records one upload batch holds
 * (max_total_records; 10 000 when the server sets none). */
picl_status picl__eng_upload_limits(picl_engine *e, picl_stc_limits *lim, size_t *per);
/* meta/global: created, or read; a changed syncID resets the collections'
 * cursors; collections not yet listed are added.  No request when meta did
 * not change since the last run. */
picl_status picl__eng_ensure_global(picl_engine *e, picl_store *const *stores, size_t n);
/* The class map in e->map under the anchor rules of records.md 4: verified
 * under kB, at or above the keyserver's anchor and the highest version this
 * device accepted; the first map created; refused (PICL_ERROR_CLASSMAP)
 * when missing, invalid or rolled back in the current key epoch; a reset on
 * another device stops the device (PICL_ERROR_KEYS_CHANGED: sign in again);
 * rebuilt by the first device after a reset. */
picl_status picl__eng_ensure_map(picl_engine *e);
/* Signs e->map (epoch = the current one, version above every version
 * seen), writes it with X-If-Unmodified-Since ius (-1: read the map's
 * last-modified first), then registers it on the keyserver. */
picl_status picl__eng_write_map(picl_engine *e, int64_t ius);
/* A collection's map entry; an unknown collection is added as class B. */
picl_status picl__eng_entry_for(picl_engine *e, const char *c, picl_class_entry *out);
/* Adds the collections of stores[0..n) the map does not have yet, each in its
 * default class at generation 1, as ONE new version of the map (one write,
 * one registration): a sync bringing several new collections changes the
 * map once.  Without kB nothing is added (entry_for then says why). */
picl_status picl__eng_add_missing(picl_engine *e, picl_store *const *stores, size_t n);

/* After a password reset: collection c becomes class B at `to` under the
 * new kB; its unreadable records are deleted from the server, its records
 * under kA re-encrypted, the local store merged in full at its next sync. */
picl_status picl__eng_rekey_after_reset(picl_engine *e, const char *c, const picl_class_entry *to);

#endif
