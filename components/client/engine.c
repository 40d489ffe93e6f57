/* SPDX-License-Identifier: MPL-2.0 */
/* engine.c -- the sync algorithm with security classes (see engine.h). */
#include "client/engine.h"
#include "client/engine_int.h"
#include "client/reconcile.h"
#include "crypto/alloc.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/util.h"
#include "protocol/synctime.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ATTEMPTS 3

void picl__engine_init(picl_engine *e, picl_stc *stc, picl_state *st)
{
    memset(e, 0, sizeof *e);
    e->stc = stc;
    e->st = st;
    e->map_modified = -1;
}

void picl__engine_done(picl_engine *e)
{
    json_decref(e->info);
    e->info = NULL;
    json_decref(e->meta_cache);
    e->meta_cache = NULL;
    json_decref(e->failures);
    e->failures = NULL;
    json_decref(e->guarded);
    e->guarded = NULL;
}

/* ---- bookmarks: parents that are gone -------------------------------------- */

static int folder_known(picl_store *s, json_t *incoming, const char *id)
{
    if (picl__bookmark_is_root(id))
        return 1;
    json_t *r = json_object_get(incoming, id);
    if (r)
        return !picl__is_tombstone(r);
    json_t *local = NULL;
    if (picl__store_get(s, id, &local) != PICL_OK)
        return 1; /* cannot tell: leave it */
    int known = local != NULL;
    picl__json_zdecref(local);
    return known;
}

/* Items whose parent is gone move to "unfiled" (applied and uploaded). */
static void fix_orphans(picl_store *s, json_t *apply, json_t *upload, json_t *incoming)
{
    size_t i;
    json_t *r;
    json_t *moved = json_array();
    json_array_foreach (apply, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        const char *parent = json_string_value(json_object_get(r, "parentid"));
        if (picl__is_tombstone(r) || !parent || picl__bookmark_is_root(id) ||
            folder_known(s, incoming, parent))
            continue;
        json_object_set_new(r, "parentid", json_string("unfiled"));
        json_object_set_new(r, "parentName", json_string("Other Bookmarks"));
        json_array_append(moved, json_object_get(r, "id"));
        json_array_append(upload, r);
    }
    if (json_array_size(moved)) {
        json_t *unfiled = NULL;
        picl__store_get(s, "unfiled", &unfiled);
        json_t *u = unfiled ? json_deep_copy(unfiled)
                            : json_pack("{s:s, s:s, s:s, s:s, s:[]}", "id", "unfiled", "type", "folder",
                                        "parentid", "places", "title", "Other Bookmarks", "children");
        picl__json_zdecref(unfiled);
        json_t *kids = json_object_get(u, "children");
        if (!json_is_array(kids)) {
            kids = json_array();
            json_object_set_new(u, "children", kids);
        }
        json_array_extend(kids, moved);
        json_array_append_new(apply, json_incref(u));
        json_array_append_new(upload, u);
    }
    picl__json_zdecref(moved);
}

/* ---- one collection -------------------------------------------------------- */

static int64_t info_ts(picl_engine *e, const char *c)
{
    json_t *v = json_object_get(e->info, c);
    return picl__synctime_from_json(v, 0);
}

/* Changes whose upload succeeded (or that needed none). */
static json_t *synced_subset(json_t *changes, const picl_stc_post_result *pr)
{
    json_t *out = json_array();
    size_t i;
    json_t *r;
    json_array_foreach (changes, i, r) {
        json_t *id = json_object_get(r, "id");
        if (!pr || !json_object_get(pr->failed, json_string_value(id)))
            json_array_append(out, r);
    }
    return out;
}

static void crash_point(const char *point);

/* A store's progress inside apply(), as the engine's "apply" notifications. */
static void apply_progress(void *ctx, const char *coll, int64_t done, int64_t total)
{
    if (done > 0)
        picl__eng_notify(ctx, "apply", coll, done, total, NULL);
}

/* The mass-deletion guard (see engine.h).  Counts the deletions in upload;
 * from PICL_MASS_DELETE_MIN on, the collection's records are the store's
 * live records plus those deletions (a store that cannot tell stops the
 * sync: fail closed).  *held when the upload must not happen. */
static picl_status mass_delete_guard(picl_engine *e, picl_store *s, json_t *upload, int64_t restore_point,
                                     int *held)
{
    const char *c = s->collection;
    *held = 0;
    size_t i;
    json_t *r;
    int64_t deletions = 0, records = 0;
    json_array_foreach (upload, i, r)
        deletions += picl__is_tombstone(r) ? 1 : 0;
    if (deletions < PICL_MASS_DELETE_MIN)
        return PICL_OK;
    json_t *all = NULL;
    picl_status st = picl__store_all(s, &all);
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "%s: cannot count the records before deleting %lld of them: %s", c,
                              (long long)deletions, picl__store_error(s));
    json_array_foreach (all, i, r)
        records += picl__is_tombstone(r) ? 0 : 1;
    picl__json_zdecref(all);
    records += deletions;
    if (deletions * 2 <= records)
        return PICL_OK;
    char ts[24];
    picl__ts_format(ts, restore_point);
    json_object_set_new(picl__eng_coll_state(e, c), "restorePoint", json_string(ts));
    if ((st = picl__state_save(e->st)) != PICL_OK)
        return picl__eng_fail(e, st, "cannot save the local state");
    if (e->allow_mass_delete) {
        char msg[200];
        snprintf(msg, sizeof msg, "deleting %lld of %lld records (allowed); restore point %s",
                 (long long)deletions, (long long)records, ts);
        picl__eng_notify(e, "mass-delete", c, deletions, records, msg);
        return PICL_OK;
    }
    *held = 1;
    if (!e->guarded)
        e->guarded = json_array();
    json_array_append_new(e->guarded, json_pack("{s:s, s:I, s:I, s:s}", "collection", c, "deletions",
                                                (json_int_t)deletions, "records", (json_int_t)records,
                                                "restorePoint", ts));
    char msg[256];
    snprintf(
        msg, sizeof msg,
        "this sync would delete %lld of the %lld records: nothing was changed; if that is meant, sync again "
        "with --allow-mass-delete (restore point %s)",
        (long long)deletions, (long long)records, ts);
    picl__eng_notify(e, "mass-delete", c, deletions, records, msg);
    if (!*e->error)
        snprintf(e->error, sizeof e->error, "%.32s: %.200s", c, msg);
    return PICL_OK;
}

/* One collection's sync: what it counts for the summary. */
typedef struct coll_run {
    picl_engine *e;
    picl_store *s;
    const char *c;
    picl_class_entry entry;
    int64_t downloaded, applied, uploaded, failed;
    const char *status;
} coll_run;

/* A download's pages as they arrive: decrypted into incoming, their
 * ciphertext dropped (the next page is already on its way meanwhile). */
typedef struct dl_run {
    coll_run *r;
    picl_eng_decrypt_run *d;
    json_t *incoming;
    int64_t count, held;
    picl_status failed; /* what the page function itself failed with */
} dl_run;

static picl_status dl_page(void *ctx, const picl_bso_view *items, size_t n)
{
    dl_run *dl = ctx;
    coll_run *r = dl->r;
    dl->count += (int64_t)n;
    picl_status st = picl__eng_decrypt_views(r->e, r->c, &r->entry, dl->d, items, n, dl->incoming, &dl->held);
    if (st != PICL_OK)
        dl->failed = st;
    return st;
}

/* 2. download what is newer than lastSync (last), decrypted into a new
 * *incoming (the caller's, also on failure).  The cursor follows only what
 * the listing proved it handed over (its X-Last-Modified, counts,
 * completeness), never /info/collections: an incomplete answer is an error.
 * Each page is decrypted as it comes; what it shows (records refused, the
 * count) is told only once the download is complete.
 * PICL_ERROR_CONFLICT: the collection changed meanwhile (try again). */
static picl_status download_step(coll_run *r, int64_t last, int64_t srv, json_t **incoming,
                                 int64_t *coll_modified, int64_t *undecryptable, int *hold_cursor)
{
    picl_engine *e = r->e;
    *incoming = json_object();
    *coll_modified = srv;
    *undecryptable = 0;
    *hold_cursor = 0;
    if (srv <= last)
        return PICL_OK;
    dl_run dl = {.r = r, .incoming = *incoming, .failed = PICL_OK};
    int64_t listed = -1;
    int report = 0;
    picl_status st = PICL_ERROR_NO_MEMORY;
    dl.d = picl__eng_decrypt_begin(1, e->stc);
    if (!dl.d || !*incoming)
        goto done;
    st = picl__stc_download_each(e->stc, r->c, last, 0, dl_page, &dl, &listed);
    if (st != PICL_OK && st != PICL_ERROR_NOT_FOUND) {
        /* nothing of an incomplete download is used or told */
        json_object_clear(*incoming);
        if (st != PICL_ERROR_CONFLICT && dl.failed == PICL_OK)
            picl__eng_fail(e, st, "%s: download failed", r->c);
        goto done;
    }
    if (st == PICL_OK)
        *coll_modified = listed;
    else
        *hold_cursor = 1; /* 404: nothing received, nothing to advance to */
    st = PICL_OK;
    r->downloaded += dl.count;
    picl__eng_notify(e, "download", r->c, r->downloaded, r->downloaded, NULL);
    *undecryptable = dl.held;
    report = 1;
done:;
    size_t before = json_array_size(e->failures);
    picl__eng_decrypt_end(e, r->c, dl.d, report);
    r->failed += (int64_t)(json_array_size(e->failures) - before);
    if (report)
        crash_point("sync-downloaded");
    return st;
}

/* 3. reconcile the incoming records with the local changes (and what an
 * earlier attempt still has to upload, pending) into apply and upload. */
static void reconcile_step(coll_run *r, json_t *pending, json_t *changes, json_t *incoming, json_t *apply,
                           json_t *upload)
{
    json_t *local = json_object();
    size_t i;
    json_t *rec;
    const char *id;
    json_object_foreach (pending, id, rec)
        json_object_set(local, id, rec);
    json_array_foreach (changes, i, rec)
        json_object_set(local, json_string_value(json_object_get(rec, "id")), rec);
    json_object_foreach (incoming, id, rec) {
        json_t *a = NULL, *u = NULL;
        if (picl__reconcile(r->c, json_object_get(local, id), rec, &a, &u) == PICL_OK) {
            if (a)
                json_array_append_new(apply, a);
            if (u)
                json_array_append_new(upload, u);
        } else {
            r->failed++;
        }
    }
    json_object_foreach (local, id, rec) {
        if (!json_object_get(incoming, id))
            json_array_append(upload, rec);
    }
    if (!strcmp(r->c, "bookmarks"))
        fix_orphans(r->s, apply, upload, incoming);
    picl__json_zdecref(local);
}

/* 4. apply in one transaction. */
static picl_status apply_step(coll_run *r, json_t *apply)
{
    picl_store *s = r->s;
    if (!json_array_size(apply))
        return PICL_OK;
    picl__eng_notify(r->e, "apply", r->c, 0, (int64_t)json_array_size(apply), NULL);
    s->progress = apply_progress; /* the bar moves during a long apply */
    s->progress_ctx = r->e;
    picl_status st = picl__store_apply(s, apply);
    s->progress = NULL;
    if (st != PICL_OK)
        return picl__eng_fail(r->e, st, "%s: applying incoming records failed: %s", r->c,
                              picl__store_error(s));
    r->applied += (int64_t)json_array_size(apply);
    picl__eng_notify(r->e, "apply", r->c, r->applied, r->applied, NULL);
    crash_point("sync-applied");
    return PICL_OK;
}

/* The records of an upload, encrypted one at a time as the storage
 * client's streamed POST asks for them (picl__stc_post_stream). */
typedef struct up_src {
    picl_engine *e;
    const char *c;
    const picl_class_entry *entry;
    json_t *records;
    picl_sealer *k; /* the keys imported once for the whole upload */
    size_t per;
    int ttl; /* a device's own records expire when it stops syncing */
} up_src;

/* BSO text of a record whose id is not a string (jansson writes it). */
static char *bso_text_tree(json_t *id, const char *payload, size_t plen, int ttl)
{
    json_t *bso = json_object();
    char *text = NULL;
    if (bso && !json_object_set(bso, "id", id) &&
        !json_object_set_new_nocheck(bso, "payload", json_stringn_nocheck(payload, plen)) &&
        !(ttl && json_object_set_new(bso, "ttl", json_integer(PICL_DEVICE_RECORD_TTL_S))))
        text = picl__json_dumps(bso, JSON_COMPACT);
    json_decref(bso);
    return text;
}

static picl_status up_next(void *ctx, size_t i, char **text, size_t *payload_len)
{
    up_src *u = ctx;
    json_t *r = json_array_get(u->records, i), *id = json_object_get(r, "id");
    char *payload;
    picl_status st = picl__record_encrypt_with(&payload, u->c, r, u->k, u->entry);
    if (st != PICL_OK)
        return st;
    *payload_len = strlen(payload);
    /* the text jansson would write for {id, payload[, ttl]}, written directly */
    *text = json_is_string(id) && strlen(json_string_value(id)) == json_string_length(id)
                ? picl__record_bso_text(json_string_value(id), payload, *payload_len,
                                        u->ttl ? PICL_DEVICE_RECORD_TTL_S : -1)
                : bso_text_tree(id, payload, *payload_len, u->ttl);
    free(payload);
    return *text ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

/* Progress between the batches of a large upload: at the end of each
 * max_total_records part of the records, else within that part. */
static void up_done(void *ctx, size_t end)
{
    up_src *u = ctx;
    size_t n = json_array_size(u->records), from = end / u->per * u->per;
    if (end % u->per == 0)
        picl__eng_notify(u->e, "upload", u->c, (int64_t)end, (int64_t)n, NULL);
    else
        picl__eng_notify(u->e, "upload", u->c, (int64_t)(end - from),
                         (int64_t)(n - from < u->per ? n - from : u->per), NULL);
}

/* Encrypts and uploads cleartext records as picl__eng_encrypt_bsos +
 * picl__eng_post_all do, one server batch's worth (max_total_records) at a
 * time, each part conditional on the one before (*out as for
 * picl__eng_post_all), and each part encrypted while the one before is in
 * flight: a large upload never holds more than two parts' ciphertexts. */
static picl_status encrypt_post_stream(picl_engine *e, const char *c, const picl_class_entry *entry,
                                       json_t *records, int64_t ius, picl_stc_post_result *out)
{
    memset(out, 0, sizeof *out);
    picl_stc_limits lim;
    up_src u = {.e = e, .c = c, .entry = entry, .records = records};
    picl_status st = picl__eng_upload_limits(e, &lim, &u.per);
    if (st != PICL_OK)
        return st;
    u.ttl = !strcmp(c, "tabs") || !strcmp(c, "clients");
    picl_keypair keys;
    st = picl__eng_keys_for(e, c, entry, &keys);
    if (st == PICL_OK)
        st = picl__sealer_new(&u.k, &keys);
    picl__wipe(&keys, sizeof keys);
    if (st != PICL_OK)
        return st;
    picl_stc_stream s = {.n = json_array_size(records),
                         .per = u.per,
                         .byte_cap = lim.max_total_bytes > 0 ? lim.max_total_bytes * 9 / 10 : INT64_MAX,
                         .next = up_next,
                         .done = up_done,
                         .ctx = &u};
    st = picl__stc_post_stream(e->stc, c, &s, ius, out);
    picl__sealer_free(u.k);
    return st;
}

/* 5. upload, conditional on what we downloaded (coll_modified); *posted
 * and *new_last (the last commit's timestamp) when something went up.
 * PICL_ERROR_CONFLICT: someone wrote meanwhile.  *pr is the caller's. */
static picl_status upload_step(coll_run *r, json_t *upload, int64_t coll_modified, picl_stc_post_result *pr,
                               int *posted, int64_t *new_last)
{
    picl_engine *e = r->e;
    *posted = 0;
    if (!json_array_size(upload))
        return PICL_OK;
    picl__eng_notify(e, "upload", r->c, 0, (int64_t)json_array_size(upload), NULL);
    picl_status st =
        encrypt_post_stream(e, r->c, &r->entry, upload, coll_modified > 0 ? coll_modified : 0, pr);
    if (st == PICL_ERROR_CONFLICT)
        return st;
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "%s: upload failed", r->c);
    *posted = 1;
    crash_point("sync-uploaded");
    r->uploaded += (int64_t)json_array_size(pr->success);
    r->failed += (int64_t)json_object_size(pr->failed);
    *new_last = pr->modified;
    picl__eng_notify(e, "upload", r->c, r->uploaded, r->uploaded, NULL);
    return PICL_OK;
}

/* 6. only now: the store's change marks (pr: what the upload accepted,
 * NULL = nothing was uploaded), then the cursor, saved. */
static picl_status commit_step(coll_run *r, json_t *changes, const picl_stc_post_result *pr, int64_t new_last)
{
    json_t *done = synced_subset(changes, pr);
    picl_status st = picl__store_mark_synced(r->s, done);
    picl__json_zdecref(done);
    if (st != PICL_OK)
        return picl__eng_fail(r->e, st, "%s: %s", r->c, picl__store_error(r->s));
    char ts[24];
    picl__ts_format(ts, new_last);
    picl__state_set_last_sync(r->e->st, r->c, ts);
    st = picl__state_save(r->e->st);
    return st == PICL_OK ? PICL_OK : picl__eng_fail(r->e, st, "cannot save the local state");
}

/* Steps 2-6 once.  *again when the server changed meanwhile: what must
 * still go up is in pending for the next attempt. */
static picl_status sync_attempt(coll_run *r, json_t *pending, json_t *changes, int64_t last, int64_t srv,
                                int *again)
{
    json_t *incoming = NULL, *apply = json_array(), *upload = json_array();
    picl_stc_post_result pr = {0};
    int64_t coll_modified = srv, undecryptable = 0;
    int hold_cursor = 0, held = 0, posted = 0;
    *again = 0;
    picl_status st = download_step(r, last, srv, &incoming, &coll_modified, &undecryptable, &hold_cursor);
    if (st != PICL_OK) {
        *again = st == PICL_ERROR_CONFLICT;
        goto done;
    }
    reconcile_step(r, pending, changes, incoming, apply, upload);
    if ((st = mass_delete_guard(r->e, r->s, upload, coll_modified, &held)) != PICL_OK || held) {
        if (held)
            r->status = "held";
        goto done; /* nothing applied, uploaded or advanced */
    }
    if ((st = apply_step(r, apply)) != PICL_OK)
        goto done;
    int64_t new_last = coll_modified > last ? coll_modified : last;
    st = upload_step(r, upload, coll_modified, &pr, &posted, &new_last);
    if (st == PICL_ERROR_CONFLICT) {
        /* keep what must go up, download again */
        size_t i;
        json_t *rec;
        json_array_foreach (upload, i, rec)
            json_object_set(pending, json_string_value(json_object_get(rec, "id")), rec);
        *again = 1;
        goto done;
    }
    if (st != PICL_OK)
        goto done;
    /* a record we could not read (corrupt, forged, or a move another
     * device has not finished) is fetched again next time, not skipped */
    if (undecryptable > 0 || (hold_cursor && !posted))
        new_last = last;
    if ((st = commit_step(r, changes, posted ? &pr : NULL, new_last)) == PICL_OK)
        json_object_clear(pending);
done:
    picl__stc_post_result_clear(&pr);
    picl__json_zdecref(incoming);
    picl__json_zdecref(apply);
    picl__json_zdecref(upload);
    return st;
}

/* 1. the collection's class and state, then attempts of steps 2-6 until one
 * is not interrupted by another writer (at most MAX_ATTEMPTS). */
static picl_status sync_collection(picl_engine *e, picl_store *s, json_t *summary)
{
    coll_run r = {.e = e, .s = s, .c = s->collection, .status = "ok"};
    const char *c = r.c;
    picl_status st = picl__eng_entry_for(e, c, &r.entry);
    if (st != PICL_OK)
        return st;
    json_t *cs = picl__eng_coll_state(e, c);
    if (r.entry.cls == 'B' && !e->st->has_kb) {
        json_object_set_new(summary, c,
                            json_pack("{s:i, s:i, s:i, s:i, s:s}", "downloaded", 0, "applied", 0, "uploaded",
                                      0, "failed", 0, "status", "locked"));
        picl__eng_notify(e, "status", c, 0, -1, "class B: enter the password to sync this collection");
        return PICL_OK;
    }
    if (json_is_true(json_object_get(cs, "reset"))) {
        if ((st = picl__store_reset(s)) != PICL_OK)
            return picl__eng_fail(e, st, "%s: %s", c, picl__store_error(s));
        json_object_del(cs, "reset");
    }
    json_t *pending = json_object(); /* merge results still to upload, across retries */
    json_t *changes = NULL;
    for (int attempt = 0;; attempt++) {
        if (attempt == MAX_ATTEMPTS) {
            st = picl__eng_fail(e, PICL_ERROR_CONFLICT,
                                "%s: the server kept changing during the sync; try again", c);
            break;
        }
        picl__json_zdecref(changes);
        changes = NULL;
        if ((st = picl__store_changes(s, &changes)) != PICL_OK) {
            st = picl__eng_fail(e, st, "%s: %s", c, picl__store_error(s));
            break;
        }
        int64_t last = picl__ts_parse(picl__state_last_sync(e->st, c));
        if (attempt > 0) {
            json_t *fresh = NULL;
            if ((st = picl__stc_info(e->stc, "collections", -1, &fresh)) != PICL_OK) {
                st = picl__eng_fail(e, st, "cannot read /info/collections");
                break;
            }
            json_decref(e->info);
            e->info = fresh;
        }
        int64_t srv = info_ts(e, c);
        if (srv <= last && json_array_size(changes) == 0 && json_object_size(pending) == 0) {
            r.status = "unchanged";
            st = PICL_OK;
            break;
        }
        int again = 0;
        st = sync_attempt(&r, pending, changes, last, srv, &again);
        if (!again)
            break;
    }
    picl__json_zdecref(changes);
    picl__json_zdecref(pending);
    if (r.failed && st == PICL_OK)
        r.status = "partial";
    json_object_set_new(summary, c,
                        json_pack("{s:I, s:I, s:I, s:I, s:s}", "downloaded", (json_int_t)r.downloaded,
                                  "applied", (json_int_t)r.applied, "uploaded", (json_int_t)r.uploaded,
                                  "failed", (json_int_t)r.failed, "status",
                                  st == PICL_OK ? r.status : "error"));
    return st;
}

/* ---- moves ------------------------------------------------------------------ */

/* Fault injection for the crash tests: PICL_TEST_CRASH_AT=<point> kills the
 * process (SIGKILL, nothing flushed) when the move reaches that point. */
static void crash_point(const char *point)
{
#ifdef PICL_TEST_HOOKS /* test builds only (Makefile.in: TEST_HOOKS) */
    const char *t = getenv("PICL_TEST_CRASH_AT");
    if (t && !strcmp(t, point))
        raise(SIGKILL);
#else
    (void)point;
#endif
}

static picl_status finish_move(picl_engine *e, const char *c, const picl_class_entry *to)
{
    picl_status st = PICL_OK;
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        json_t *bsos = NULL;
        picl_stc_query q = {0};
        q.newer = q.older = -1;
        q.full = 1;
        q.limit = 1000;
        q.if_modified_since = q.if_unmodified_since = -1;
        st = picl__stc_get_all(e->stc, c, &q, 0, &bsos);
        if (st == PICL_ERROR_CONFLICT)
            continue;
        if (st == PICL_ERROR_NOT_FOUND) {
            st = PICL_OK;
            bsos = json_array();
        }
        if (st != PICL_OK)
            return picl__eng_fail(e, st, "%s: cannot read the records to move", c);
        int64_t coll_modified = picl__stc_last(e->stc)->last_modified;
        json_t *clear = json_object();
        int64_t held = 0;
        /* read under whatever key each record names (a weaker class is still
         * refused by the map entry as it was before the move) */
        const picl_class_entry *was = picl__classmap_get(&e->map, c);
        picl_class_entry from = was ? *was : *to;
        if (from.cls == 'B' && to->cls == 'A')
            from.cls = 'A'; /* moving down: allow both */
        st = picl__eng_decrypt_all(e, c, &from, bsos, clear, &held);
        json_decref(bsos);
        if (st != PICL_OK) {
            picl__json_zdecref(clear);
            return st;
        }
        json_t *records = json_array();
        const char *id;
        json_t *r;
        json_object_foreach (clear, id, r)
            json_array_append(records, r);
        picl__json_zdecref(clear);
        json_t *out = NULL;
        st = picl__eng_encrypt_bsos(e, c, to, records, &out);
        picl__json_zdecref(records);
        if (st != PICL_OK)
            return picl__eng_fail(e, st, "%s: cannot re-encrypt", c);
        picl_stc_post_result pr = {0};
        if (json_array_size(out)) {
            picl__eng_notify(e, "upload", c, 0, (int64_t)json_array_size(out),
                             "re-encrypting for the new class");
            st = picl__eng_post_all(e, c, out, coll_modified > 0 ? coll_modified : 0, &pr);
        }
        json_decref(out);
        picl__stc_post_result_clear(&pr);
        if (st == PICL_ERROR_CONFLICT)
            continue;
        if (st != PICL_OK)
            return picl__eng_fail(e, st, "%s: uploading the re-encrypted records failed", c);
        crash_point("move-uploaded");
        break;
    }
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "%s: the server kept changing during the move", c);
    /* then the map, conditionally; on a conflict re-read and try again */
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const picl_class_entry *cur = picl__classmap_get(&e->map, c);
        if (cur && cur->cls == to->cls && cur->generation >= to->generation)
            return PICL_OK;
        if ((st = picl__classmap_set(&e->map, c, to)) != PICL_OK)
            return st;
        e->map.version++;
        st = picl__eng_write_map(e, e->map_modified);
        if (st == PICL_OK)
            crash_point("move-map");
        if (st != PICL_ERROR_CONFLICT)
            return st == PICL_OK ? PICL_OK : picl__eng_fail(e, st, "cannot write the class map");
        e->have_map = 0;
        if ((st = picl__eng_ensure_map(e)) != PICL_OK)
            return st;
    }
    return picl__eng_fail(e, PICL_ERROR_CONFLICT, "the class map keeps changing on the server");
}

/* A move recorded in the state but not finished (a crash): finish it. */
static picl_status finish_pending_moves(picl_engine *e)
{
    const char *c;
    json_t *cs;
    json_object_foreach (e->st->collections, c, cs) {
        json_t *mv = json_object_get(cs, "move");
        if (!json_is_object(mv))
            continue;
        const char *cls = json_string_value(json_object_get(mv, "class"));
        json_int_t gen = json_integer_value(json_object_get(mv, "generation"));
        if (!cls || (cls[0] != 'A' && cls[0] != 'B') || gen < 1) {
            json_object_del(cs, "move");
            continue;
        }
        picl_class_entry to = {cls[0], (uint32_t)gen};
        picl_status st = finish_move(e, c, &to);
        if (st != PICL_OK)
            return st;
        json_object_del(cs, "move");
        if ((st = picl__state_save(e->st)) != PICL_OK)
            return picl__eng_fail(e, st, "cannot save the local state");
    }
    return PICL_OK;
}

picl_status picl__engine_set_class(picl_engine *e, const char *c, char cls)
{
    if (!picl__collection_name_ok(c) || (cls != 'A' && cls != 'B'))
        return picl__eng_fail(e, PICL_ERROR_INVALID_ARGUMENT, "usage: a collection name and class A or B");
    if (!e->st->has_kb)
        return picl__eng_fail(e, PICL_ERROR_STATE, "enter the password: moving a collection needs kB");
    picl_status st = picl__eng_ensure_map(e);
    if (st == PICL_OK)
        st = finish_pending_moves(e);
    if (st != PICL_OK)
        return st;
    const picl_class_entry *cur = picl__classmap_get(&e->map, c);
    if (cur && cur->cls == cls)
        return PICL_OK;
    picl_class_entry to = {cls, cur ? cur->generation + 1 : 1};
    /* the intent first, so a crash at any later step is finished next time */
    json_t *cs = picl__eng_coll_state(e, c);
    char cl[2] = {cls, 0};
    json_object_set_new(cs, "move", json_pack("{s:s, s:i}", "class", cl, "generation", (int)to.generation));
    if ((st = picl__state_save(e->st)) != PICL_OK)
        return picl__eng_fail(e, st, "cannot save the local state");
    crash_point("move-intent");
    if ((st = finish_move(e, c, &to)) != PICL_OK)
        return st;
    json_object_del(cs, "move");
    st = picl__state_save(e->st);
    picl__eng_notify(e, "status", c, 0, -1, cls == 'A' ? "moved to class A" : "moved to class B");
    return st == PICL_OK ? PICL_OK : picl__eng_fail(e, st, "cannot save the local state");
}

picl_status picl__engine_wipe_server(picl_engine *e, const char *c)
{
    if (!picl__collection_name_ok(c))
        return picl__eng_fail(e, PICL_ERROR_INVALID_ARGUMENT, "invalid collection name");
    picl_status st = picl__stc_delete(e->stc, c, NULL, 0, -1, NULL);
    if (st != PICL_OK && st != PICL_ERROR_NOT_FOUND)
        return picl__eng_fail(e, st, "cannot delete %s on the server", c);
    picl__eng_mark_reset(e, c);
    return picl__state_save(e->st);
}

/* ---- the run -------------------------------------------------------------- */

picl_status picl__engine_sync(picl_engine *e, picl_store *const *stores, size_t n, json_t *summary)
{
    e->error[0] = 0;
    json_t *info = NULL;
    picl_status st = picl__stc_info(e->stc, "collections", -1, &info);
    if (st != PICL_OK) {
        char why[400];
        picl__stc_describe(e->stc, st, why, sizeof why); /* a 503 is not "cannot reach" */
        return picl__eng_fail(e, st, "%s", why);
    }
    json_decref(e->info);
    e->info = info ? info : json_object();
    /* nothing changed anywhere: this one request was the whole sync */
    int quiet = 1;
    int64_t meta_seen = picl__ts_parse(picl__state_last_sync(e->st, "meta"));
    if (info_ts(e, "meta") != meta_seen || !*e->st->classmap_payload)
        quiet = 0;
    if (quiet && e->st->has_kb) {
        /* kB changed since the map was accepted (a reset, then a new sign-in) */
        picl_classmap local;
        char fp[33];
        if (picl__classmap_parse_trusted(&local, e->st->classmap_payload) != PICL_OK ||
            picl__key_fingerprint(fp, e->st->kb) != PICL_OK || strcmp(fp, local.kb_fp))
            quiet = 0;
    }
    for (size_t i = 0; quiet && i < n; i++) {
        const char *c = stores[i]->collection;
        json_t *cs = json_object_get(e->st->collections, c);
        if (info_ts(e, c) > picl__ts_parse(picl__state_last_sync(e->st, c)) || json_object_get(cs, "move") ||
            json_is_true(json_object_get(cs, "reset")) || !json_object_get(cs, "syncID"))
            quiet = 0;
        json_t *ch = NULL;
        if (quiet && (picl__store_changes(stores[i], &ch) != PICL_OK || json_array_size(ch)))
            quiet = 0;
        picl__json_zdecref(ch);
    }
    if (quiet) {
        for (size_t i = 0; i < n; i++)
            json_object_set_new(summary, stores[i]->collection,
                                json_pack("{s:i, s:i, s:i, s:i, s:s}", "downloaded", 0, "applied", 0,
                                          "uploaded", 0, "failed", 0, "status", "unchanged"));
        return PICL_OK;
    }
    /* the class map first: a device whose map is refused, or whose keys
     * are from before a password reset, writes nothing at all (not even
     * meta/global) */
    if ((st = picl__eng_ensure_map(e)) != PICL_OK ||
        (st = picl__eng_ensure_global(e, stores, n)) != PICL_OK ||
        (st = picl__eng_add_missing(e, stores, n)) != PICL_OK)
        return st;
    if (e->st->has_kb && (st = finish_pending_moves(e)) != PICL_OK)
        return st;
    picl_status first = PICL_OK;
    for (size_t i = 0; i < n; i++) {
        st = sync_collection(e, stores[i], summary);
        if (st != PICL_OK && first == PICL_OK)
            first = st;
        if (st == PICL_ERROR_TOKEN || st == PICL_ERROR_NETWORK || st == PICL_ERROR_BACKOFF)
            break; /* the others would fail the same way */
    }
    if (first == PICL_OK && e->guarded)
        first = PICL_ERROR_CONFLICT; /* e->error names the collection and --allow-mass-delete */
    /* remember meta's timestamp as read -- unless we wrote meta ourselves:
     * another device may have written it too meanwhile, so the next sync
     * reads it once more rather than trust our own write */
    if (first == PICL_OK && e->meta_written == 0) {
        json_t *v = json_object_get(e->info, "meta");
        int64_t m = picl__synctime_from_json(v, 0);
        char ts[24];
        picl__ts_format(ts, m);
        picl__state_set_last_sync(e->st, "meta", ts);
        picl__state_save(e->st);
    }
    if (e->keys_changed) {
        /* the user is told which collections are class B after the rebuild */
        json_t *b = json_array();
        for (size_t i = 0; i < e->map.n; i++)
            if (e->map.items[i].e.cls == 'B')
                json_array_append_new(b, json_string(e->map.items[i].name));
        json_object_set_new(summary, "keys_changed", json_true());
        json_object_set_new(summary, "class_b", b);
    }
    return first;
}

/* ---- undo: a collection as it was (storage extension picl_restore_days) ------ */

/* Every full BSO of c now (as_of < 0) or as it was at as_of, decrypted into
 * out (id -> cleartext); *listed gets the listing's X-Last-Modified. */
static picl_status restore_list(picl_engine *e, const char *c, const picl_class_entry *entry, int64_t as_of,
                                json_t *out, int64_t *unreadable, int64_t *listed)
{
    picl_stc_query q;
    memset(&q, 0, sizeof q);
    q.newer = q.older = q.if_modified_since = q.if_unmodified_since = -1;
    q.full = 1;
    q.has_as_of = as_of >= 0;
    q.as_of = as_of;
    json_t *bsos = NULL;
    picl_status st = picl__stc_get_all(e->stc, c, &q, 0, &bsos);
    if (st == PICL_ERROR_NOT_FOUND) {
        *listed = 0;
        return PICL_OK;
    }
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "%s: cannot list the collection%s", c, as_of >= 0 ? " as it was" : "");
    *listed = picl__stc_last(e->stc)->last_modified;
    st = picl__eng_decrypt_all(e, c, entry, bsos, out, unreadable);
    picl__json_zdecref(bsos);
    return st;
}

picl_status picl__engine_restore(picl_engine *e, const char *c, int64_t as_of, int apply, json_t *plan)
{
    e->error[0] = 0;
    json_t *then = json_object(), *now = json_object(), *upload = json_array();
    json_t *restore_ids = json_array(), *delete_ids = json_array(), *cfg = NULL, *info = NULL;
    picl_class_entry entry;
    int64_t unreadable = 0, listed_then = 0, listed_now = 0;
    picl_status st = picl__stc_info(e->stc, "configuration", -1, &cfg);
    if (st != PICL_OK) {
        st = picl__eng_fail(e, st, "cannot read the storage server's configuration");
        goto done;
    }
    json_t *days = json_object_get(cfg, "picl_restore_days");
    if (!json_is_integer(days) || json_integer_value(days) <= 0) {
        st = picl__eng_fail(e, PICL_ERROR_UNSUPPORTED,
                            "this storage server keeps no earlier versions "
                            "(picl_restore_days is %s)",
                            json_is_integer(days) ? "0" : "absent");
        goto done;
    }
    int64_t oldest = (int64_t)time(NULL) * 100 - (int64_t)json_integer_value(days) * 86400 * 100;
    if (as_of < oldest) {
        st = picl__eng_fail(e, PICL_ERROR_UNSUPPORTED,
                            "the storage server keeps earlier versions for %lld days only",
                            (long long)json_integer_value(days));
        goto done;
    }
    if ((st = picl__stc_info(e->stc, "collections", -1, &info)) != PICL_OK) {
        char why[400];
        picl__stc_describe(e->stc, st, why, sizeof why);
        st = picl__eng_fail(e, st, "%s", why);
        goto done;
    }
    json_decref(e->info);
    e->info = info ? info : json_object();
    if ((st = picl__eng_ensure_map(e)) != PICL_OK || (st = picl__eng_entry_for(e, c, &entry)) != PICL_OK)
        goto done;
    if ((st = restore_list(e, c, &entry, -1, now, &unreadable, &listed_now)) != PICL_OK ||
        (st = restore_list(e, c, &entry, as_of, then, &unreadable, &listed_then)) != PICL_OK)
        goto done;
    const char *id;
    json_t *r;
    json_object_foreach (then, id, r) {
        json_t *cur = json_object_get(now, id);
        if (picl__is_tombstone(r)) {
            if (cur && !picl__is_tombstone(cur)) {
                json_array_append_new(delete_ids, json_string(id));
                json_array_append_new(upload, json_pack("{s:s, s:b}", "id", id, "deleted", 1));
            }
        } else if (!cur || !json_equal(cur, r)) {
            json_array_append_new(restore_ids, json_string(id));
            json_array_append(upload, r);
        }
    }
    json_object_foreach (now, id, r) {
        if (!json_object_get(then, id) && !picl__is_tombstone(r)) {
            json_array_append_new(delete_ids, json_string(id));
            json_array_append_new(upload, json_pack("{s:s, s:b}", "id", id, "deleted", 1));
        }
    }
    char ts[24];
    picl__ts_format(ts, as_of);
    json_object_set_new(plan, "collection", json_string(c));
    json_object_set_new(plan, "asOf", json_string(ts));
    json_object_set(plan, "restore", restore_ids);
    json_object_set(plan, "delete", delete_ids);
    json_object_set_new(plan, "unreadable", json_integer((json_int_t)unreadable));
    json_object_set_new(plan, "applied", json_false());
    if (!apply || !json_array_size(upload))
        goto done;
    json_t *bsos = NULL;
    picl_stc_post_result pr = {0};
    if ((st = picl__eng_encrypt_bsos(e, c, &entry, upload, &bsos)) == PICL_OK) {
        picl__eng_notify(e, "upload", c, 0, (int64_t)json_array_size(bsos), NULL);
        st = picl__eng_post_all(e, c, bsos, listed_now > 0 ? listed_now : 0, &pr);
    }
    json_decref(bsos);
    if (st == PICL_OK && json_object_size(pr.failed))
        st = PICL_ERROR_PROTOCOL;
    picl__stc_post_result_clear(&pr);
    if (st == PICL_ERROR_CONFLICT)
        st = picl__eng_fail(
            e, st, "%s changed on the server during the restore: nothing was restored, try again", c);
    else if (st != PICL_OK)
        st = picl__eng_fail(e, st, "%s: uploading the restored records failed", c);
    else
        json_object_set_new(plan, "applied", json_true());
done:
    (void)listed_then;
    json_decref(cfg);
    picl__json_zdecref(then);
    picl__json_zdecref(now);
    picl__json_zdecref(upload);
    json_decref(restore_ids);
    json_decref(delete_ids);
    return st;
}
