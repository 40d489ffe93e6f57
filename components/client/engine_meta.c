/* SPDX-License-Identifier: MPL-2.0 */
/* engine_meta.c -- meta/global and the signed class map of the sync engine:
 * read (one listing for both), verified, created, repaired after a password
 * reset elsewhere, written conditionally (see engine.h). */
#include "client/engine.h"
#include "client/engine_int.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/util.h"
#include "crypto/alloc.h"
#include "protocol/synctime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ATTEMPTS 3
#define STORAGE_VERSION 5

static picl_status random_id(char out[13])
{
    uint8_t b[9];
    picl_status st = picl__random_bytes(b, sizeof b);
    if (st == PICL_OK)
        picl__base64url_encode(out, b, sizeof b, 0);
    return st;
}

/* Keys of a kid; class B needs kB in memory. */
static void meta_forget(picl_engine *e);

static picl_status put_meta(picl_engine *e, const char *id, const char *payload, int64_t ius,
                            int64_t *modified)
{
    json_t *bso = json_pack("{s:s, s:s}", "id", id, "payload", payload);
    if (!bso)
        return PICL_ERROR_NO_MEMORY;
    int64_t m = -1;
    meta_forget(e);
    picl_status st = picl__stc_put(e->stc, "meta", id, bso, ius, &m);
    json_decref(bso);
    if (st == PICL_OK && m > e->meta_written)
        e->meta_written = m; /* meta's timestamp is now ours */
    if (modified)
        *modified = m;
    return st;
}

/* One BSO of meta.  Both items (global, classes) come in one listing, kept
 * until the next write, so reading them both costs one request. */
static picl_status meta_get(picl_engine *e, const char *id, json_t **bso)
{
    *bso = NULL;
    if (!e->meta_cache) {
        json_t *items = NULL;
        picl_stc_query q = {0};
        q.newer = q.older = -1;
        q.full = 1;
        q.if_modified_since = q.if_unmodified_since = -1;
        picl_status st = picl__stc_get(e->stc, "meta", &q, &items, NULL);
        if (st == PICL_ERROR_NOT_FOUND) {
            items = json_array();
        } else if (st != PICL_OK) {
            return st;
        }
        e->meta_cache = json_object();
        size_t i;
        json_t *b;
        json_array_foreach (items, i, b) {
            const char *bid = json_string_value(json_object_get(b, "id"));
            if (bid)
                json_object_set(e->meta_cache, bid, b);
        }
        json_decref(items);
    }
    json_t *b = json_object_get(e->meta_cache, id);
    if (!b)
        return PICL_ERROR_NOT_FOUND;
    *bso = json_incref(b);
    return PICL_OK;
}

static void meta_forget(picl_engine *e)
{
    json_decref(e->meta_cache);
    e->meta_cache = NULL;
}

/* meta unchanged on the server since this device last read it? */
static int meta_unchanged(picl_engine *e)
{
    int64_t seen = picl__ts_parse(picl__state_last_sync(e->st, "meta"));
    json_t *v = json_object_get(e->info, "meta");
    int64_t now = picl__synctime_from_json(v, 0);
    return e->info && seen > 0 && now == seen;
}

/* ---- meta/global ------------------------------------------------------------ */

picl_status picl__eng_ensure_global(picl_engine *e, picl_store *const *stores, size_t n)
{
    if (meta_unchanged(e) && *e->st->global_sync_id) {
        size_t known = 0;
        for (size_t i = 0; i < n; i++)
            known +=
                json_object_get(json_object_get(e->st->collections, stores[i]->collection), "syncID") != NULL;
        if (known == n)
            return PICL_OK; /* nothing to read: our copy is current */
    }
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        json_t *bso = NULL, *g = NULL;
        picl_status st = meta_get(e, "global", &bso);
        int64_t modified = 0;
        if (st == PICL_ERROR_NOT_FOUND) {
            char sid[13];
            if ((st = random_id(sid)) != PICL_OK)
                return st;
            g = json_pack("{s:s, s:i, s:{}, s:[]}", "syncID", sid, "storageVersion", STORAGE_VERSION,
                          "engines", "declined");
        } else if (st != PICL_OK) {
            return picl__eng_fail(e, st, "cannot read meta/global");
        } else {
            const char *payload = json_string_value(json_object_get(bso, "payload"));
            json_t *mod = json_object_get(bso, "modified");
            modified = picl__synctime_from_json(mod, 0);
            g = payload ? json_loads(payload, 0, NULL) : NULL;
            json_decref(bso);
            if (!json_is_object(g) || !json_is_string(json_object_get(g, "syncID"))) {
                json_decref(g);
                return picl__eng_fail(e, PICL_ERROR_PROTOCOL, "meta/global is malformed");
            }
            if (json_integer_value(json_object_get(g, "storageVersion")) != STORAGE_VERSION) {
                json_decref(g);
                return picl__eng_fail(e, PICL_ERROR_UNSUPPORTED,
                                      "the server holds data of another storage version");
            }
        }
        /* a new syncID: the server was wiped or reset; merge everything again */
        const char *sid = json_string_value(json_object_get(g, "syncID"));
        if (*e->st->global_sync_id && strcmp(sid, e->st->global_sync_id)) {
            const char *c;
            json_t *v;
            json_object_foreach (e->st->collections, c, v)
                picl__eng_mark_reset(e, c);
        }
        picl__state_set_str(&e->st->global_sync_id, sid);
        json_t *engines = json_object_get(g, "engines");
        if (!json_is_object(engines)) {
            engines = json_object();
            json_object_set_new(g, "engines", engines);
        }
        int changed = st == PICL_ERROR_NOT_FOUND;
        for (size_t i = 0; i < n; i++) {
            const char *c = stores[i]->collection;
            json_t *eng = json_object_get(engines, c);
            json_t *cs = picl__eng_coll_state(e, c);
            const char *mine = json_string_value(json_object_get(cs, "syncID"));
            if (!json_is_object(eng) || !json_is_string(json_object_get(eng, "syncID"))) {
                char esid[13];
                if (random_id(esid) != PICL_OK)
                    break;
                json_object_set_new(engines, c, json_pack("{s:i, s:s}", "version", 1, "syncID", esid));
                eng = json_object_get(engines, c);
                changed = 1;
            }
            const char *theirs = json_string_value(json_object_get(eng, "syncID"));
            /* never synced here (a new device, or a profile that another
             * program synced), or reset elsewhere: a full merge */
            if (!mine || strcmp(mine, theirs))
                picl__eng_mark_reset(e, c);
            json_object_set_new(cs, "syncID", json_string(theirs));
        }
        if (!changed) {
            json_decref(g);
            return PICL_OK;
        }
        char *text = picl__json_dumps(g, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(g);
        if (!text)
            return PICL_ERROR_NO_MEMORY;
        st = put_meta(e, "global", text, st == PICL_ERROR_NOT_FOUND ? 0 : modified, NULL);
        free(text);
        if (st == PICL_OK)
            return PICL_OK;
        if (st != PICL_ERROR_CONFLICT)
            return picl__eng_fail(e, st, "cannot write meta/global");
        /* someone else wrote it first: read theirs */
        meta_forget(e);
    }
    return picl__eng_fail(e, PICL_ERROR_CONFLICT, "meta/global keeps changing on the server");
}

/* ---- the class map (records.md 4: verify, anchor, refuse, rebuild) ------- */

static int64_t bso_modified(json_t *bso)
{
    json_t *mod = json_object_get(bso, "modified");
    return picl__synctime_from_json(mod, -1);
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* The map is exactly the anchored one (version and hmac: public values). */
static int is_anchored(const picl_anchor *a, const picl_classmap *m)
{
    return a->version > 0 && a->version == m->version && !strcmp(a->hmac, m->hmac);
}

static picl_status accept_map(picl_engine *e, const char *payload)
{
    if (picl__state_set_str(&e->st->classmap_payload, payload) != PICL_OK)
        return PICL_ERROR_NO_MEMORY;
    e->st->classmap_version = max_u64(e->st->classmap_version, e->map.version);
    e->have_map = 1;
    return PICL_OK;
}

/* The keyserver's anchor, once per run. */
static picl_status read_anchor(picl_engine *e)
{
    if (e->have_anchor)
        return PICL_OK;
    if (!e->anchor_get || !e->anchor_post)
        return picl__eng_fail(e, PICL_ERROR_STATE, "cannot check the class map: no keyserver to ask");
    picl_status st = e->anchor_get(e->anchor_ctx, &e->anchor);
    if (st == PICL_ERROR_TOKEN)
        return picl__eng_fail(e, st, "the session has ended (password changed or reset?): sign in again");
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "cannot read the class map anchor from the keyserver");
    if (e->anchor.current_epoch < 1 || (e->anchor.version > 0 && strlen(e->anchor.hmac) != 64))
        return picl__eng_fail(e, PICL_ERROR_PROTOCOL, "the keyserver sent a malformed class map anchor");
    e->have_anchor = 1;
    return PICL_OK;
}

/* Registers e->map on the keyserver unless it is the anchor already. */
static picl_status register_map(picl_engine *e)
{
    if (is_anchored(&e->anchor, &e->map))
        return PICL_OK;
    picl_status st = e->anchor_post(e->anchor_ctx, e->map.version, e->map.hmac);
    if (st == PICL_OK) {
        e->anchor.version = e->map.version;
        snprintf(e->anchor.hmac, sizeof e->anchor.hmac, "%s", e->map.hmac);
        e->anchor.epoch = e->anchor.current_epoch;
    } else if (st == PICL_ERROR_CONFLICT) {
        e->have_anchor = 0; /* someone registered a newer map: read it again */
    }
    return st;
}

picl_status picl__eng_write_map(picl_engine *e, int64_t ius)
{
    picl_status st = read_anchor(e);
    if (st != PICL_OK)
        return st;
    if (!e->st->has_kb)
        return picl__eng_fail(e, PICL_ERROR_STATE, "enter the password once: the class map needs kB");
    if (ius < 0) {
        json_t *bso = NULL;
        meta_forget(e); /* a fresh read: the write is conditional on it */
        picl_status rs = meta_get(e, "classes", &bso);
        if (rs == PICL_ERROR_NOT_FOUND) {
            ius = 0;
        } else if (rs != PICL_OK) {
            return rs;
        } else {
            ius = bso_modified(bso);
            if (ius < 0)
                ius = 0;
            json_decref(bso);
        }
    }
    /* a write always goes above every version seen, in the current epoch */
    uint64_t top = max_u64(e->anchor.version, e->st->classmap_version);
    if (e->map.version <= top)
        e->map.version = top + 1;
    e->map.epoch = e->anchor.current_epoch;
    char *payload;
    st = picl__classmap_sign(&payload, &e->map, e->st->kb);
    if (st != PICL_OK)
        return st;
    int64_t modified = -1;
    /* storage first (conditional), then the keyserver */
    st = put_meta(e, "classes", payload, ius, &modified);
    if (st == PICL_OK) {
        e->map_modified = modified;
        st = accept_map(e, payload);
    }
    free(payload);
    if (st == PICL_OK)
        st = register_map(e);
    return st;
}

/* Reset elsewhere?  The epoch of this device's keys against the current
 * one.  A device whose key epoch is unknown (a state from before epochs)
 * learns it from the server's map in ensure_map_once (*legacy set). */
static picl_status check_epoch(picl_engine *e, int *legacy)
{
    *legacy = 0;
    if (e->st->key_epoch == 0) {
        if (e->anchor.version == 0 && e->anchor.current_epoch == 1) {
            e->st->key_epoch = 1; /* no reset ever: the keys are current */
            return PICL_OK;
        }
        *legacy = 1;
        return PICL_OK;
    }
    if (e->anchor.current_epoch > e->st->key_epoch)
        return picl__eng_fail(
            e, PICL_ERROR_KEYS_CHANGED,
            "the password was reset on another device: sign in again (nothing was uploaded)");
    if (e->anchor.current_epoch < e->st->key_epoch)
        return picl__eng_fail(e, PICL_ERROR_PROTOCOL,
                              "the keyserver's key epoch went backwards: refusing to sync");
    return PICL_OK;
}

static picl_status refuse(picl_engine *e, const char *what)
{
    picl__eng_notify(e, "status", "", 0, -1, "class map refused: nothing is uploaded until it is repaired");
    return picl__eng_fail(e, PICL_ERROR_CLASSMAP,
                          "the class map on the storage server %s: refusing to sync, nothing was uploaded",
                          what);
}

/* Merges one source into the rebuilt map: the stronger class wins, and the
 * highest generation. */
static void merge_source(picl_classmap *out, const picl_classmap *src)
{
    for (size_t i = 0; i < src->n; i++) {
        const picl_class_entry *have = picl__classmap_get(out, src->items[i].name);
        picl_class_entry e = src->items[i].e;
        if (have) {
            if (have->cls == 'B')
                e.cls = 'B';
            if (have->generation > e.generation)
                e.generation = have->generation;
        }
        picl__classmap_set(out, src->items[i].name, &e);
    }
}

/* The first device to sync after a password reset (the anchored map is of
 * an older epoch): a new map from the strongest class of every source; the
 * class-B collections get a new generation under the new kB, their
 * unreadable records replaced (records first, then the map). */
static picl_status rebuild(picl_engine *e, const char *server_payload, int64_t ius)
{
    picl_classmap own, srv, defs, out;
    memset(&out, 0, sizeof out);
    uint64_t top = max_u64(e->anchor.version, e->st->classmap_version);
    if (*e->st->classmap_payload && picl__classmap_parse_trusted(&own, e->st->classmap_payload) == PICL_OK) {
        merge_source(&out, &own);
        top = max_u64(top, own.version);
    }
    if (server_payload && picl__classmap_parse_trusted(&srv, server_payload) == PICL_OK) {
        merge_source(&out, &srv); /* unverifiable: it can only make a class stronger */
        top = max_u64(top, srv.version);
    }
    picl__classmap_defaults(&defs, e->st->kb);
    merge_source(&out, &defs);
    char names[512] = "";
    for (size_t i = 0; i < out.n; i++) {
        if (out.items[i].e.cls != 'B')
            continue;
        out.items[i].e.generation++;
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", out.items[i].name);
    }
    out.version = top + 1;
    out.epoch = e->anchor.current_epoch;
    for (size_t i = 0; i < out.n; i++) {
        if (out.items[i].e.cls != 'B')
            continue;
        picl_status st = picl__eng_rekey_after_reset(e, out.items[i].name, &out.items[i].e);
        if (st != PICL_OK)
            return st;
    }
    e->map = out;
    picl_status st = picl__eng_write_map(e, ius);
    if (st == PICL_ERROR_CONFLICT)
        return st;
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "cannot write the class map rebuilt after the password reset");
    e->keys_changed = 1;
    char msg[640];
    snprintf(
        msg, sizeof msg,
        "The password was reset: class-A data is kept; class-B data on the server was made under the old "
        "password and is replaced by this device's copy. Class B: %s.",
        *names ? names : "(none)");
    picl__eng_notify(e, "status", "", 0, -1, msg);
    return PICL_OK;
}

/* This device signed in again after a password reset (its kB changed since it
 * accepted a map): the server lost class B, so every local class-B record
 * goes up again (a full merge, nothing deleted locally). */
static void reupload_if_kb_changed(picl_engine *e, const char *prev_fp)
{
    char fp[33];
    if (!*prev_fp || !e->st->has_kb || picl__key_fingerprint(fp, e->st->kb) != PICL_OK ||
        !strcmp(fp, prev_fp))
        return;
    for (size_t i = 0; i < e->map.n; i++)
        if (e->map.items[i].e.cls == 'B')
            picl__eng_mark_reset(e, e->map.items[i].name);
}

static picl_status ensure_map_once(picl_engine *e, int legacy);

picl_status picl__eng_ensure_map(picl_engine *e)
{
    if (e->have_map)
        return PICL_OK;
    int legacy = 0;
    picl_status st = read_anchor(e);
    if (st == PICL_OK)
        st = check_epoch(e, &legacy);
    if (st != PICL_OK)
        return st;
    /* meta unchanged since we accepted our copy, which is the anchored map
     * (signed under this very kB): no read */
    if (!legacy && meta_unchanged(e) && *e->st->classmap_payload) {
        picl_classmap m;
        char fp[33];
        if (picl__classmap_parse_trusted(&m, e->st->classmap_payload) == PICL_OK &&
            m.version == e->st->classmap_version && is_anchored(&e->anchor, &m) &&
            (!e->st->has_kb || (picl__key_fingerprint(fp, e->st->kb) == PICL_OK && !strcmp(fp, m.kb_fp)))) {
            e->map = m;
            e->have_map = 1;
            e->map_modified = -1; /* unknown: a write re-reads the map first */
            return PICL_OK;
        }
    }
    char prev_fp[33] = "";
    picl_classmap prev;
    if (*e->st->classmap_payload && picl__classmap_parse_trusted(&prev, e->st->classmap_payload) == PICL_OK)
        snprintf(prev_fp, sizeof prev_fp, "%s", prev.kb_fp);
    st = ensure_map_once(e, legacy);
    if (st == PICL_OK)
        reupload_if_kb_changed(e, prev_fp);
    return st;
}

/* A legacy device (key epoch unknown) cannot tell whether its keys are
 * current when the map is not a verified one of the current epoch. */
static picl_status legacy_stop(picl_engine *e)
{
    return picl__eng_fail(e, PICL_ERROR_KEYS_CHANGED,
                          "the keys of this device may be from before a password reset: sign in again "
                          "(nothing was uploaded)");
}

/* ensure_map_once's rebuild after a reset from the server's (unverifiable)
 * map; frees copy.  *again: a concurrent write won, read again. */
static picl_status rebuild_from(picl_engine *e, char *copy, int64_t ius, int *again)
{
    picl_status st = rebuild(e, copy, ius);
    free(copy);
    if (st == PICL_ERROR_CONFLICT) {
        meta_forget(e);
        *again = 1;
    }
    return st;
}

/* ensure_map_once's step for a map missing on the server: rebuilt after a
 * reset, the first map written, or our anchored copy put back; else refused.
 * *again: a concurrent write won, read again. */
static picl_status map_missing(picl_engine *e, int legacy, int rebuild_ok, int own_anchored,
                               const picl_classmap *own, int *again)
{
    const picl_anchor *a = &e->anchor;
    picl_status st;
    if (legacy)
        return legacy_stop(e);
    if (rebuild_ok) {
        st = rebuild(e, NULL, 0);
    } else if (a->version == 0) {
        /* the first map: this device's own choices, else the defaults */
        if (!*e->st->classmap_payload ||
            picl__classmap_parse_trusted(&e->map, e->st->classmap_payload) != PICL_OK)
            picl__classmap_defaults(&e->map, e->st->kb);
        st = picl__eng_write_map(e, 0); /* create only if absent: two first devices cannot both win */
        if (st != PICL_OK && st != PICL_ERROR_CONFLICT)
            return picl__eng_fail(e, st, "cannot write the class map");
    } else if (own_anchored) {
        /* lost by the server: put back our copy, which is exactly the anchored map */
        int64_t m = -1;
        st = put_meta(e, "classes", e->st->classmap_payload, 0, &m);
        if (st == PICL_OK) {
            e->map = *own;
            e->map_modified = m;
            e->have_map = 1;
            picl__eng_notify(e, "status", "", 0, -1,
                             "the class map was missing on the storage server: put back the anchored copy");
            return PICL_OK;
        }
        if (st != PICL_ERROR_CONFLICT)
            return picl__eng_fail(e, st, "cannot put back the class map");
    } else {
        char what[128];
        snprintf(what, sizeof what, "is missing (deleted or lost) while the keyserver anchors version %llu",
                 (unsigned long long)a->version);
        return refuse(e, what);
    }
    if (st == PICL_ERROR_CONFLICT) {
        meta_forget(e);
        *again = 1;
    }
    return st;
}

/* ensure_map_once's step for a server map that verifies under our kB (m,
 * whose text is copy, freed here): accepted when current, else rebuilt after
 * a reset, else refused as old.  *legacy cleared once it proves our keys
 * current.  *again: a concurrent write won, read again. */
static picl_status map_verified(picl_engine *e, int *legacy, int rebuild_ok, char *copy,
                                const picl_classmap *m, int64_t ius, int *again)
{
    const picl_anchor *a = &e->anchor;
    picl_status st;
    int newer = a->version == 0 || m->version > a->version;
    int current = newer || is_anchored(a, m);
    if (*legacy) {
        /* the anchored map of the current epoch verifies under our kB: our keys are current */
        if (!is_anchored(a, m) || a->epoch != a->current_epoch) {
            free(copy);
            return legacy_stop(e);
        }
        e->st->key_epoch = a->current_epoch;
        *legacy = 0;
    }
    if (current && m->version >= e->st->classmap_version) {
        e->map = *m;
        st = accept_map(e, copy);
        if (st == PICL_OK && newer)
            st = register_map(e); /* a device crashed between its two writes, or the first map */
        free(copy);
        if (st == PICL_ERROR_CONFLICT) {
            e->have_map = 0;
            *again = 1;
            return st;
        }
        return st == PICL_OK ? st : picl__eng_fail(e, st, "cannot register the class map on the keyserver");
    }
    if (rebuild_ok)
        return rebuild_from(e, copy, ius, again);
    char what[160];
    snprintf(what, sizeof what,
             "is an old version (%llu; the keyserver anchors %llu, this device accepted %llu)",
             (unsigned long long)m->version, (unsigned long long)a->version,
             (unsigned long long)e->st->classmap_version);
    free(copy);
    return refuse(e, what);
}

static picl_status ensure_map_once(picl_engine *e, int legacy)
{
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        int again = 0;
        picl_status st = read_anchor(e);
        if (st != PICL_OK)
            return st;
        const picl_anchor *a = &e->anchor;
        /* only the first device after a reset may write a map without a
         * valid one on the server */
        int rebuild_ok = a->version > 0 ? a->epoch < a->current_epoch : a->current_epoch > 1;
        picl_classmap own;
        int own_anchored = *e->st->classmap_payload &&
                           picl__classmap_parse_trusted(&own, e->st->classmap_payload) == PICL_OK &&
                           is_anchored(a, &own);
        if (!e->st->has_kb) {
            /* strict mode without kB: only our own copy, and only while it
             * is the anchored map (a newer one cannot be verified) */
            if (own_anchored && !legacy) {
                e->map = own;
                e->have_map = 1;
                return PICL_OK;
            }
            return picl__eng_fail(e, PICL_ERROR_STATE, "enter the password once: the class map needs kB");
        }
        json_t *bso = NULL;
        st = meta_get(e, "classes", &bso);
        if (st == PICL_ERROR_NOT_FOUND) {
            st = map_missing(e, legacy, rebuild_ok, own_anchored, &own, &again);
            if (again)
                continue;
            return st;
        }
        if (st != PICL_OK)
            return picl__eng_fail(e, st, "cannot read the class map");
        const char *text = json_string_value(json_object_get(bso, "payload"));
        e->map_modified = bso_modified(bso);
        char *copy = text ? strdup(text) : NULL;
        json_decref(bso);
        if (!copy && text)
            return PICL_ERROR_NO_MEMORY;
        picl_classmap m;
        st = copy ? picl__classmap_verify(&m, copy, e->st->kb) : PICL_ERROR_CLASSMAP;
        if (st == PICL_ERROR_NO_MEMORY) {
            free(copy);
            return st;
        }
        int64_t ius = e->map_modified >= 0 ? e->map_modified : 0;
        if (st == PICL_OK)
            st = map_verified(e, &legacy, rebuild_ok, copy, &m, ius, &again);
        else if (legacy) { /* not valid under our kB */
            free(copy);
            return legacy_stop(e);
        } else if (rebuild_ok)
            st = rebuild_from(e, copy, ius, &again);
        else {
            free(copy);
            return refuse(e, "is forged or malformed (its HMAC does not verify under this device's key)");
        }
        if (again)
            continue;
        return st;
    }
    return picl__eng_fail(e, PICL_ERROR_CONFLICT, "the class map keeps changing on the server");
}

picl_status picl__engine_get_class(picl_engine *e, const char *c, picl_class_entry *out)
{
    picl_status st = picl__eng_ensure_map(e);
    if (st != PICL_OK)
        return st;
    const picl_class_entry *x = picl__classmap_get(&e->map, c);
    out->cls = x ? x->cls : picl__classmap_default_class(c);
    out->generation = x ? x->generation : 1;
    return PICL_OK;
}

picl_status picl__eng_add_missing(picl_engine *e, picl_store *const *stores, size_t n)
{
    size_t added = 0;
    for (size_t i = 0; e->st->has_kb && i < n; i++) {
        const char *c = stores[i]->collection;
        if (picl__classmap_get(&e->map, c))
            continue;
        picl_class_entry b = {picl__classmap_default_class(c), 1};
        picl_status st = picl__classmap_set(&e->map, c, &b);
        if (st != PICL_OK)
            return picl__eng_fail(e, st, "invalid collection name %s", c);
        added++;
    }
    if (!added)
        return PICL_OK;
    e->map.version++;
    picl_status st = picl__eng_write_map(e, e->map_modified);
    return st == PICL_OK ? st
                         : picl__eng_fail(e, st, "cannot add %zu new collection(s) to the class map", added);
}

/* The map entry of a collection, adding an unknown one at generation 1 in
 * its default class (picl__classmap_default_class: B unless named). */
picl_status picl__eng_entry_for(picl_engine *e, const char *c, picl_class_entry *out)
{
    const picl_class_entry *x = picl__classmap_get(&e->map, c);
    if (x) {
        *out = *x;
        return PICL_OK;
    }
    if (!e->st->has_kb)
        return picl__eng_fail(e, PICL_ERROR_STATE, "enter the password once: %s is not in the class map yet",
                              c);
    picl_class_entry b = {picl__classmap_default_class(c), 1};
    picl_status st = picl__classmap_set(&e->map, c, &b);
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "invalid collection name %s", c);
    e->map.version++;
    st = picl__eng_write_map(e, e->map_modified);
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "cannot add %s to the class map", c);
    *out = b;
    return PICL_OK;
}

/* ---- the rebuild after a password reset ----------------------------------- */

/* After a password reset (records.md 4, "Rebuild"): collection c becomes
 * class B at `to` under the new kB.  Its records under class B of the old
 * kB are unreadable for everyone: deleted.  Records under kA (the
 * collection was class A before, or a move was under way) are read and
 * re-encrypted under `to` in one batch, as a move does; records already
 * under `to` (an earlier, interrupted rebuild) stay.  None of these is an
 * integrity failure; a record under kA whose MAC fails is, and is deleted
 * too (nobody can read it).  The local store is merged in full afterwards. */
picl_status picl__eng_rekey_after_reset(picl_engine *e, const char *c, const picl_class_entry *to)
{
    picl_status st = PICL_OK;
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        json_t *bsos = NULL, *records = json_array(), *dead = json_array(), *out = NULL;
        picl_stc_query q = {0};
        q.newer = q.older = -1;
        q.full = 1;
        q.limit = 1000;
        q.if_modified_since = q.if_unmodified_since = -1;
        st = picl__stc_get_all(e->stc, c, &q, 0, &bsos);
        if (st == PICL_ERROR_NOT_FOUND) {
            st = PICL_OK;
            bsos = json_array();
        }
        int64_t modified = picl__stc_last(e->stc)->last_modified;
        size_t i;
        json_t *b;
        json_array_foreach (st == PICL_OK ? bsos : NULL, i, b) {
            const char *id = json_string_value(json_object_get(b, "id"));
            const char *payload = json_string_value(json_object_get(b, "payload"));
            picl_class_entry kid;
            picl_keypair keys;
            json_t *clear = NULL;
            if (!id)
                continue;
            if (!payload || picl__record_kid(payload, &kid) != PICL_OK) {
                json_array_append_new(dead, json_string(id));
                continue;
            }
            int readable = picl__eng_keys_for(e, c, &kid, &keys) == PICL_OK;
            picl_record_fault why = PICL_RECORD_FAULT_NONE;
            picl_class_entry any = {'A', kid.generation};
            if (readable && picl__record_decrypt(&clear, c, id, payload, &keys, &any, 1, &why) != PICL_OK)
                readable = 0;
            picl__wipe(&keys, sizeof keys);
            if (kid.cls == 'B' && kid.generation == to->generation && readable) {
                picl__json_zdecref(clear); /* already under the new key */
                continue;
            }
            if (kid.cls == 'A' && readable) {
                json_array_append_new(records, clear);
                continue;
            }
            picl__json_zdecref(clear);
            if (kid.cls == 'A')
                picl__eng_record_failure(e, c, id, why);
            json_array_append_new(dead, json_string(id));
        }
        size_t total = json_array_size(bsos);
        json_decref(bsos);
        if (st == PICL_OK && total > 0 && json_array_size(dead) == total) {
            /* the usual case: all of it was class B under the old kB, one request */
            st = picl__stc_delete(e->stc, c, NULL, 0, -1, NULL);
            if (st == PICL_ERROR_NOT_FOUND)
                st = PICL_OK;
            json_array_clear(dead);
        }
        if (st == PICL_OK && json_array_size(records)) {
            st = picl__eng_encrypt_bsos(e, c, to, records, &out);
            picl_stc_post_result pr = {0};
            if (st == PICL_OK) {
                picl__eng_notify(e, "upload", c, 0, (int64_t)json_array_size(out),
                                 "re-encrypting under the new key");
                st = picl__eng_post_all(e, c, out, modified > 0 ? modified : 0, &pr);
            }
            picl__stc_post_result_clear(&pr);
            json_decref(out);
        }
        /* the unreadable ones, 100 ids a request */
        for (size_t from = 0; st == PICL_OK && from < json_array_size(dead); from += 100) {
            const char *ids[100];
            size_t n = 0;
            for (; n < 100 && from + n < json_array_size(dead); n++)
                ids[n] = json_string_value(json_array_get(dead, from + n));
            st = picl__stc_delete(e->stc, c, ids, n, -1, NULL);
            if (st == PICL_ERROR_NOT_FOUND)
                st = PICL_OK;
        }
        picl__json_zdecref(records);
        picl__json_zdecref(dead);
        if (st == PICL_ERROR_CONFLICT)
            continue;
        break;
    }
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "%s: cannot replace the records made unreadable by the password reset",
                              c);
    picl__eng_mark_reset(e, c);
    return PICL_OK;
}
