/* engine_meta.c -- meta/global and the signed class map of the sync engine:
 * read (one listing for both), verified, created, repaired after a password
 * reset elsewhere, written conditionally (see engine.h). */
#include "client/engine.h"
#include "client/engine_int.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/util.h"

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

static picl_status put_meta(picl_engine *e, const char *id, const char *payload, int64_t ius, int64_t *modified)
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
        json_array_foreach(items, i, b) {
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
    int64_t now = json_is_number(v) ? (int64_t)(json_number_value(v) * 100 + 0.5) : 0;
    return e->info && seen > 0 && now == seen;
}

/* ---- meta/global ------------------------------------------------------------ */

/* Marks a collection for a full merge: cursor back to 0, store reset at its
 * next sync.  Local data is never deleted for this. */
void picl__eng_mark_reset(picl_engine *e, const char *c)
{
    json_t *cs = picl__eng_coll_state(e, c);
    json_object_set_new(cs, "lastSync", json_string("0"));
    json_object_set_new(cs, "reset", json_true());
}

picl_status picl__eng_ensure_global(picl_engine *e, picl_store *const *stores, size_t n)
{
    if (meta_unchanged(e) && *e->st->global_sync_id) {
        size_t known = 0;
        for (size_t i = 0; i < n; i++)
            known += json_object_get(json_object_get(e->st->collections, stores[i]->collection), "syncID") != NULL;
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
            g = json_pack("{s:s, s:i, s:{}, s:[]}", "syncID", sid, "storageVersion", STORAGE_VERSION, "engines",
                          "declined");
        } else if (st != PICL_OK) {
            return picl__eng_fail(e, st, "cannot read meta/global");
        } else {
            const char *payload = json_string_value(json_object_get(bso, "payload"));
            json_t *mod = json_object_get(bso, "modified");
            modified = json_is_number(mod) ? (int64_t)(json_number_value(mod) * 100 + 0.5) : 0;
            g = payload ? json_loads(payload, 0, NULL) : NULL;
            json_decref(bso);
            if (!json_is_object(g) || !json_is_string(json_object_get(g, "syncID"))) {
                json_decref(g);
                return picl__eng_fail(e, PICL_ERROR_PROTOCOL, "meta/global is malformed");
            }
            if (json_integer_value(json_object_get(g, "storageVersion")) != STORAGE_VERSION) {
                json_decref(g);
                return picl__eng_fail(e, PICL_ERROR_UNSUPPORTED, "the server holds data of another storage version");
            }
        }
        /* a new syncID: the server was wiped or reset; merge everything again */
        const char *sid = json_string_value(json_object_get(g, "syncID"));
        if (*e->st->global_sync_id && strcmp(sid, e->st->global_sync_id)) {
            const char *c;
            json_t *v;
            json_object_foreach(e->st->collections, c, v) picl__eng_mark_reset(e, c);
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
        char *text = json_dumps(g, JSON_COMPACT | JSON_SORT_KEYS);
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

/* ---- the class map -------------------------------------------------------- */

static picl_status accept_map(picl_engine *e, const char *payload)
{
    if (picl__state_set_str(&e->st->classmap_payload, payload) != PICL_OK)
        return PICL_ERROR_NO_MEMORY;
    e->st->classmap_version = e->map.version;
    e->have_map = 1;
    return PICL_OK;
}

/* Signs e->map and writes it with X-If-Unmodified-Since ius (-1: the
 * map's last-modified is unknown, so read it first). */
picl_status picl__eng_write_map(picl_engine *e, int64_t ius)
{
    if (ius < 0) {
        json_t *bso = NULL;
        meta_forget(e); /* a fresh read: the write is conditional on it */
        picl_status rs = meta_get(e, "classes", &bso);
        if (rs == PICL_ERROR_NOT_FOUND) {
            ius = 0;
        } else if (rs != PICL_OK) {
            return rs;
        } else {
            json_t *mod = json_object_get(bso, "modified");
            ius = json_is_number(mod) ? (int64_t)(json_number_value(mod) * 100 + 0.5) : 0;
            json_decref(bso);
        }
    }
    char *payload;
    picl_status st = picl__classmap_sign(&payload, &e->map, e->st->kb);
    if (st != PICL_OK)
        return st;
    int64_t modified = -1;
    st = put_meta(e, "classes", payload, ius, &modified);
    if (st == PICL_OK) {
        e->map_modified = modified;
        st = accept_map(e, payload);
    }
    free(payload);
    return st;
}

/* The map is signed under another kB: a password reset happened elsewhere.
 * Class-B data on the server is unreadable for everyone: delete it, keep the
 * classes, re-upload class B from this device under the current kB. */
static picl_status repair_after_reset(picl_engine *e, uint64_t server_version)
{
    if (e->confirm_keys) {
        picl_status st = e->confirm_keys(e->confirm_ctx);
        if (st != PICL_OK)
            return picl__eng_fail(e, st, "the class map was made under another password: sign in again");
    }
    picl_classmap base;
    if (!*e->st->classmap_payload || picl__classmap_parse_trusted(&base, e->st->classmap_payload) != PICL_OK)
        picl__classmap_defaults(&base, e->st->kb);
    uint64_t v = base.version > server_version ? base.version : server_version;
    e->map = base;
    e->map.version = v + 1;
    picl__key_fingerprint(e->map.kb_fp, e->st->kb);
    for (size_t i = 0; i < e->map.n; i++) {
        if (e->map.items[i].e.cls != 'B')
            continue;
        const char *c = e->map.items[i].name;
        picl_status st = picl__stc_delete(e->stc, c, NULL, 0, -1, NULL);
        if (st != PICL_OK && st != PICL_ERROR_NOT_FOUND)
            return picl__eng_fail(e, st, "cannot delete unreadable class-B collection %s", c);
        picl__eng_mark_reset(e, c);
    }
    e->keys_changed = 1;
    picl__eng_notify(e, "status", "", 0, -1,
           "The password was reset on another device: class-B data of other devices was lost by design; "
           "this device's class-B data is uploaded again.");
    picl_status st = picl__eng_write_map(e, e->map_modified >= 0 ? e->map_modified : -1);
    if (st != PICL_OK)
        return picl__eng_fail(e, st, "cannot write the repaired class map");
    return PICL_OK;
}

/* This device signed in again after a password reset (its kB changed since it
 * accepted a map): the server lost class B, so every local class-B record
 * goes up again (a full merge, nothing deleted locally). */
static void reupload_if_kb_changed(picl_engine *e, const char *prev_fp)
{
    char fp[33];
    if (!*prev_fp || !e->st->has_kb || picl__key_fingerprint(fp, e->st->kb) != PICL_OK || !strcmp(fp, prev_fp))
        return;
    for (size_t i = 0; i < e->map.n; i++)
        if (e->map.items[i].e.cls == 'B')
            picl__eng_mark_reset(e, e->map.items[i].name);
}

static picl_status ensure_map_once(picl_engine *e);

picl_status picl__eng_ensure_map(picl_engine *e)
{
    if (e->have_map)
        return PICL_OK;
    /* meta unchanged since we accepted our copy (under this very kB): no read */
    if (meta_unchanged(e) && *e->st->classmap_payload && e->st->has_kb) {
        picl_classmap m;
        char fp[33];
        if (picl__classmap_parse_trusted(&m, e->st->classmap_payload) == PICL_OK &&
            picl__key_fingerprint(fp, e->st->kb) == PICL_OK && !strcmp(fp, m.kb_fp) &&
            m.version == e->st->classmap_version) {
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
    picl_status st = ensure_map_once(e);
    if (st == PICL_OK)
        reupload_if_kb_changed(e, prev_fp);
    return st;
}

static picl_status ensure_map_once(picl_engine *e)
{
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        json_t *bso = NULL;
        picl_status st = meta_get(e, "classes", &bso);
        if (st == PICL_ERROR_NOT_FOUND) {
            if (!e->st->has_kb) {
                if (*e->st->classmap_payload &&
                    picl__classmap_parse_trusted(&e->map, e->st->classmap_payload) == PICL_OK) {
                    e->have_map = 1;
                    return PICL_OK;
                }
                return picl__eng_fail(e, PICL_ERROR_STATE, "enter the password once: the class map needs kB");
            }
            /* gone from the server: our own last copy (version + 1), never the defaults */
            if (*e->st->classmap_payload &&
                picl__classmap_parse_trusted(&e->map, e->st->classmap_payload) == PICL_OK) {
                e->map.version++;
                picl__key_fingerprint(e->map.kb_fp, e->st->kb);
            } else {
                picl__classmap_defaults(&e->map, e->st->kb);
            }
            st = picl__eng_write_map(e, 0); /* create only if absent: two first devices cannot both win */
            if (st == PICL_ERROR_CONFLICT)
                continue;
            return st == PICL_OK ? PICL_OK : picl__eng_fail(e, st, "cannot write the class map");
        }
        if (st != PICL_OK)
            return picl__eng_fail(e, st, "cannot read the class map");
        const char *payload = json_string_value(json_object_get(bso, "payload"));
        json_t *mod = json_object_get(bso, "modified");
        e->map_modified = json_is_number(mod) ? (int64_t)(json_number_value(mod) * 100 + 0.5) : -1;
        char *copy = payload ? strdup(payload) : NULL;
        json_decref(bso);
        if (!copy)
            return picl__eng_fail(e, PICL_ERROR_CLASSMAP, "the class map on the server is malformed");
        if (!e->st->has_kb) {
            /* strict mode without kB: our own accepted copy, class B locked */
            free(copy);
            if (*e->st->classmap_payload &&
                picl__classmap_parse_trusted(&e->map, e->st->classmap_payload) == PICL_OK) {
                e->have_map = 1;
                return PICL_OK;
            }
            return picl__eng_fail(e, PICL_ERROR_STATE, "enter the password once: the class map needs kB");
        }
        st = picl__classmap_verify(&e->map, copy, e->st->kb, e->st->classmap_version);
        if (st == PICL_OK) {
            st = accept_map(e, copy);
            free(copy);
            return st;
        }
        if (st == PICL_ERROR_KEYS_CHANGED) {
            picl_classmap claimed;
            uint64_t sv = picl__classmap_parse_trusted(&claimed, copy) == PICL_OK ? claimed.version : 0;
            free(copy);
            return repair_after_reset(e, sv);
        }
        free(copy);
        return picl__eng_fail(e, st, "the class map on the server was forged, replayed or weakened: refusing to sync");
    }
    return picl__eng_fail(e, PICL_ERROR_CONFLICT, "the class map keeps changing on the server");
}

picl_status picl__engine_get_class(picl_engine *e, const char *c, picl_class_entry *out)
{
    picl_status st = picl__eng_ensure_map(e);
    if (st != PICL_OK)
        return st;
    const picl_class_entry *x = picl__classmap_get(&e->map, c);
    out->cls = x ? x->cls : 'B';
    out->generation = x ? x->generation : 1;
    return PICL_OK;
}

/* The map entry of a collection, adding an unknown one as class B (the
 * stronger default) at generation 1. */
picl_status picl__eng_entry_for(picl_engine *e, const char *c, picl_class_entry *out)
{
    const picl_class_entry *x = picl__classmap_get(&e->map, c);
    if (x) {
        *out = *x;
        return PICL_OK;
    }
    if (!e->st->has_kb)
        return picl__eng_fail(e, PICL_ERROR_STATE, "enter the password once: %s is not in the class map yet", c);
    picl_class_entry b = {'B', 1};
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
