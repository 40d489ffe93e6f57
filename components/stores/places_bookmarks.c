/* SPDX-License-Identifier: MPL-2.0 */
/* places_bookmarks.c -- the bookmarks store over moz_bookmarks, tags and keywords (see places.h). */
#include "stores/places_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BM_MAX_TAGS 100
#define BM_MAX_TAG_LEN 100
#define BM_MAX_KEYWORD_LEN 256
#define BM_MAX_CHILDREN 10000
#define BM_NEW_POSITION 1000000000 /* a placeholder: renumbered before COMMIT */

/* Sync ids of the four synced roots and their Places GUIDs. */
static const struct {
    const char *sync, *guid;
} roots[] = {
    {"menu", "menu________"},
    {"toolbar", "toolbar_____"},
    {"unfiled", "unfiled_____"},
    {"mobile", "mobile______"},
};

/* Items that are records: the four roots and everything under them (UNION,
 * not UNION ALL: a corrupt parent cycle must not loop forever). */
#define SYNCABLE                                                                                             \
    "WITH RECURSIVE syncable(id) AS (SELECT id FROM moz_bookmarks WHERE guid IN ('menu________', "           \
    "'toolbar_____', 'unfiled_____', 'mobile______') UNION SELECT b.id FROM moz_bookmarks b "                \
    "JOIN syncable s ON b.parent = s.id) "

static picl_status syncable_item(places *p, const char *guid, int64_t *id, int64_t *type, int64_t *fk,
                                 int64_t *parent);

/* Sync id -> Places GUID (into buf); NULL when it is neither a root name nor a GUID. */
static const char *to_guid(const char *id, char buf[PLACES_GUID_LEN + 1])
{
    if (!id)
        return NULL;
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (strcmp(id, roots[i].sync) == 0)
            return roots[i].guid;
    if (!picl__places_valid_guid(id))
        return NULL;
    memcpy(buf, id, PLACES_GUID_LEN + 1);
    return buf;
}

/* Places GUID -> Sync id (root________ -> "places"). */
static const char *to_sync(const char *guid)
{
    if (!guid)
        return NULL;
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (strcmp(guid, roots[i].guid) == 0)
            return roots[i].sync;
    if (strcmp(guid, "root________") == 0)
        return "places";
    return guid;
}

static int is_root_guid(const char *g)
{
    return strcmp(g, "root________") == 0 || strcmp(g, "tags________") == 0 ||
           strcmp(g, "menu________") == 0 || strcmp(g, "toolbar_____") == 0 ||
           strcmp(g, "unfiled_____") == 0 || strcmp(g, "mobile______") == 0;
}

static picl_status id_of(places *p, const char *guid, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    *id = 0;
    picl_status rc = picl__places_cached(p, &st, "SELECT id FROM moz_bookmarks WHERE guid = ?");
    if (rc != PICL_OK)
        return rc;
    sqlite3_bind_text(st, 1, guid, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    picl__places_release(p, st);
    return PICL_OK;
}

picl_status picl__places_bookmarks_init(places *p)
{
    picl_status rc =
        picl__places_exec(p, "CREATE TEMP TABLE IF NOT EXISTS picl_pos(id INTEGER PRIMARY KEY, rn INTEGER)");
    if (rc == PICL_OK)
        rc = id_of(p, "root________", &p->root_id);
    if (rc == PICL_OK)
        rc = id_of(p, "tags________", &p->tags_id);
    if (rc == PICL_OK)
        rc = id_of(p, "unfiled_____", &p->unfiled_id);
    if (rc == PICL_OK && (!p->root_id || !p->tags_id || !p->unfiled_id))
        rc = picl__store_fail(&p->base, PICL_ERROR_DATABASE, "places.sqlite has no bookmark roots");
    return rc;
}

/* ---- reading ------------------------------------------------------------- */

static picl_status text_list(places *p, const char *sql, int64_t arg, json_t *into)
{
    sqlite3_stmt *st = NULL;
    picl_status rc = picl__places_cached(p, &st, sql);
    if (rc != PICL_OK)
        return rc;
    sqlite3_bind_int64(st, 1, arg);
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(into, json_string(to_sync((const char *)sqlite3_column_text(st, 0))));
    picl__places_release(p, st);
    return r == SQLITE_DONE ? PICL_OK : picl__store_fail(&p->base, PICL_ERROR_DATABASE, "list failed");
}

/* The record of item `id` (a syncable item). */
static picl_status bookmark_record(places *p, int64_t id, json_t **out)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    picl_status rc =
        picl__places_cached(p, &st,
                            "SELECT b.guid, b.type, b.title, b.dateAdded, par.guid, par.title, h.url, h.id "
                            "FROM moz_bookmarks b LEFT JOIN moz_bookmarks par ON par.id = b.parent "
                            "LEFT JOIN moz_places h ON h.id = b.fk WHERE b.id = ?");
    if (rc != PICL_OK)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        picl__places_release(p, st);
        return PICL_OK;
    }
    const char *guid = (const char *)sqlite3_column_text(st, 0);
    int type = sqlite3_column_int(st, 1);
    const char *title = (const char *)sqlite3_column_text(st, 2);
    const char *url = (const char *)sqlite3_column_text(st, 6);
    int64_t place = sqlite3_column_int64(st, 7);
    const char *kind = type == 2                                 ? "folder"
                       : type == 3                               ? "separator"
                       : (url && strncmp(url, "place:", 6) == 0) ? "query"
                                                                 : "bookmark";
    const char *parent = to_sync((const char *)sqlite3_column_text(st, 4));
    const char *pname = (const char *)sqlite3_column_text(st, 5);
    json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:I}", "id", to_sync(guid), "type", kind, "parentid",
                          parent ? parent : "places", "parentName", pname ? pname : "", "dateAdded",
                          (json_int_t)(sqlite3_column_int64(st, 3) / 1000));
    if (r && type != 3)
        json_object_set_new(r, "title", json_string(title ? title : ""));
    if (r && type == 1 && url) {
        json_object_set_new(r, "bmkUri", json_string(url));
        json_t *tags = json_array();
        rc = text_list(
            p,
            PLACES_BY_FK(p, "SELECT t.title FROM", "e",
                         "JOIN moz_bookmarks t ON t.id = e.parent "
                         "WHERE e.fk = ?1 AND t.parent = (SELECT id FROM moz_bookmarks WHERE guid = "
                         "'tags________') ORDER BY t.title"),
            place, tags);
        json_object_set_new(r, "tags", tags);
        sqlite3_stmt *k = NULL;
        if (rc == PICL_OK && (rc = picl__places_cached(p, &k,
                                                       "SELECT keyword FROM moz_keywords WHERE place_id = ? "
                                                       "ORDER BY id LIMIT 1")) == PICL_OK) {
            sqlite3_bind_int64(k, 1, place);
            if (sqlite3_step(k) == SQLITE_ROW)
                json_object_set_new(r, "keyword", json_string((const char *)sqlite3_column_text(k, 0)));
        }
        picl__places_release(p, k);
    }
    if (r && type == 2 && rc == PICL_OK) {
        json_t *kids = json_array();
        rc = text_list(p, "SELECT guid FROM moz_bookmarks WHERE parent = ? ORDER BY position, id", id, kids);
        json_object_set_new(r, "children", kids);
    }
    picl__places_release(p, st);
    if (!r)
        return picl__store_fail(&p->base, PICL_ERROR_NO_MEMORY, "out of memory");
    if (rc != PICL_OK) {
        json_decref(r);
        return rc;
    }
    *out = r;
    return PICL_OK;
}

/* Records of the items a query selects (column 0 = item id, 1 = guid,
 * 2 = counter); remembers guid -> counter in `seen` when given. */
static picl_status collect(places *p, const char *sql, json_t *a, json_t *seen)
{
    sqlite3_stmt *st = NULL;
    picl_status rc = picl__places_prep(p, &st, sql);
    int r = SQLITE_DONE;
    while (rc == PICL_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *rec = NULL;
        rc = bookmark_record(p, sqlite3_column_int64(st, 0), &rec);
        if (rec)
            json_array_append_new(a, rec);
        if (seen)
            json_object_set_new(seen, (const char *)sqlite3_column_text(st, 1),
                                json_integer(sqlite3_column_int64(st, 2)));
    }
    if (rc == PICL_OK && r != SQLITE_DONE)
        rc = picl__store_fail(&p->base, PICL_ERROR_DATABASE, "places.sqlite: %s", sqlite3_errmsg(p->db));
    sqlite3_finalize(st);
    picl__places_idle(p);
    return rc;
}

static picl_status bm_changes(picl_store *s, json_t **out)
{
    places *p = (places *)s;
    *out = NULL;
    json_t *a = json_array(), *seen = json_object();
    picl_status rc = collect(p,
                             SYNCABLE "SELECT b.id, b.guid, b.syncChangeCounter FROM moz_bookmarks b "
                                      "WHERE b.syncChangeCounter > 0 AND b.id IN syncable ORDER BY b.id",
                             a, seen);
    sqlite3_stmt *st = NULL;
    if (rc == PICL_OK)
        rc = picl__places_prep(p, &st, "SELECT guid FROM moz_bookmarks_deleted ORDER BY dateRemoved, guid");
    int r = SQLITE_DONE;
    while (rc == PICL_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        const char *g = (const char *)sqlite3_column_text(st, 0);
        if (json_object_get(seen, g))
            continue; /* re-created since: the live record wins */
        json_array_append_new(a, json_pack("{s:s, s:b}", "id", to_sync(g), "deleted", 1));
        json_object_set_new(seen, g, json_integer(0));
    }
    sqlite3_finalize(st);
    if (rc != PICL_OK || r != SQLITE_DONE) {
        json_decref(a);
        json_decref(seen);
        return rc != PICL_OK ? rc : picl__store_fail(s, PICL_ERROR_DATABASE, "tombstones");
    }
    json_decref(p->reported);
    p->reported = seen;
    *out = a;
    return PICL_OK;
}

static picl_status bm_all(picl_store *s, json_t **out)
{
    places *p = (places *)s;
    json_t *a = json_array();
    picl_status rc = collect(p,
                             SYNCABLE "SELECT b.id, b.guid, 0 FROM moz_bookmarks b WHERE b.id IN syncable "
                                      "ORDER BY b.id",
                             a, NULL);
    if (rc != PICL_OK) {
        json_decref(a);
        a = NULL;
    }
    *out = a;
    return rc;
}

static picl_status bm_get(picl_store *s, const char *id, json_t **out)
{
    places *p = (places *)s;
    char buf[PLACES_GUID_LEN + 1];
    const char *g = to_guid(id, buf);
    *out = NULL;
    if (!g)
        return PICL_OK;
    int64_t item, type, fk, parent;
    picl_status rc = syncable_item(p, g, &item, &type, &fk, &parent);
    if (rc != PICL_OK)
        return rc;
    return item ? bookmark_record(p, item, out) : PICL_OK;
}

/* ---- parsing incoming records (the one parser of bookmark input) --------- */

typedef struct bm_in {
    char guid[PLACES_GUID_LEN + 1];
    char parent[PLACES_GUID_LEN + 1];
    int deleted, root, type; /* type: 1 bookmark/query, 2 folder/livemark, 3 separator */
    const char *title, *url, *keyword;
    char kwbuf[BM_MAX_KEYWORD_LEN + 1]; /* the keyword, lowercased as Firefox stores it */
    const json_t *tags, *children;
    int64_t date_added; /* µs, 0 = not given */
} bm_in;

static picl_status bad(places *p, size_t i, const char *what)
{
    return picl__store_fail(&p->base, PICL_ERROR_ENCODING, "bookmark record %zu: %s", i, what);
}

static picl_status parse_bookmark(places *p, const json_t *r, size_t i, bm_in *b)
{
    char buf[PLACES_GUID_LEN + 1];
    memset(b, 0, sizeof *b);
    if (!json_is_object(r))
        return bad(p, i, "not an object");
    const char *id = json_string_value(json_object_get(r, "id"));
    const char *g = to_guid(id, buf);
    if (!g || strcmp(g, "root________") == 0 || strcmp(g, "tags________") == 0)
        return bad(p, i, "bad id");
    memcpy(b->guid, g, PLACES_GUID_LEN + 1);
    b->root = is_root_guid(g);
    if ((id && strcmp(id, g) == 0) && b->root)
        return bad(p, i, "a root is named menu/toolbar/unfiled/mobile");
    json_t *del = json_object_get(r, "deleted");
    if (del && !json_is_boolean(del))
        return bad(p, i, "bad deleted");
    if (json_is_true(del)) {
        if (b->root)
            return bad(p, i, "a root cannot be deleted");
        b->deleted = 1;
        return PICL_OK;
    }
    const char *type = json_string_value(json_object_get(r, "type"));
    if (!type)
        return bad(p, i, "no type");
    if (strcmp(type, "bookmark") == 0 || strcmp(type, "query") == 0)
        b->type = 1;
    else if (strcmp(type, "folder") == 0 || strcmp(type, "livemark") == 0)
        b->type = 2;
    else if (strcmp(type, "separator") == 0)
        b->type = 3;
    else
        return bad(p, i, "unknown type");
    if (b->root && b->type != 2)
        return bad(p, i, "a root is a folder");
    if (!b->root) {
        const char *par = to_guid(json_string_value(json_object_get(r, "parentid")), buf);
        if (!par || strcmp(par, "tags________") == 0 || strcmp(par, "root________") == 0 ||
            strcmp(par, b->guid) == 0)
            return bad(p, i, "bad parentid");
        memcpy(b->parent, par, PLACES_GUID_LEN + 1);
    }
    json_t *t = json_object_get(r, "title");
    if (t && !json_is_null(t) && !json_is_string(t))
        return bad(p, i, "bad title");
    b->title = json_string_value(t);
    if (b->title && strlen(b->title) > PLACES_MAX_TITLE)
        return bad(p, i, "title too long");
    if (b->type == 1) {
        b->url = json_string_value(json_object_get(r, "bmkUri"));
        if (!picl__places_valid_url(b->url))
            return bad(p, i, "bad bmkUri");
        json_t *tags = json_object_get(r, "tags");
        if (tags && !json_is_null(tags)) {
            if (!json_is_array(tags) || json_array_size(tags) > BM_MAX_TAGS)
                return bad(p, i, "bad tags");
            size_t k;
            json_t *v;
            json_array_foreach (tags, k, v) {
                const char *s = json_string_value(v);
                if (!s || !*s || strlen(s) > BM_MAX_TAG_LEN)
                    return bad(p, i, "bad tag");
            }
            b->tags = tags;
        }
        json_t *kw = json_object_get(r, "keyword");
        if (kw && !json_is_null(kw)) {
            b->keyword = json_string_value(kw);
            if (!b->keyword || !*b->keyword || strlen(b->keyword) > BM_MAX_KEYWORD_LEN ||
                strpbrk(b->keyword, " \t\r\n"))
                return bad(p, i, "bad keyword");
            size_t k = 0;
            for (; b->keyword[k]; k++) {
                char c = b->keyword[k];
                b->kwbuf[k] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
            }
            b->kwbuf[k] = '\0';
            b->keyword = b->kwbuf;
        }
    }
    json_t *kids = json_object_get(r, "children");
    if (kids && !json_is_null(kids)) {
        if (b->type != 2 || !json_is_array(kids) || json_array_size(kids) > BM_MAX_CHILDREN)
            return bad(p, i, "bad children");
        size_t k;
        json_t *v;
        json_array_foreach (kids, k, v) {
            if (!to_guid(json_string_value(v), buf))
                return bad(p, i, "bad child id");
        }
        b->children = kids;
    }
    json_t *da = json_object_get(r, "dateAdded");
    if (da && !json_is_null(da)) {
        if (!json_is_integer(da) || json_integer_value(da) < 0 || json_integer_value(da) > 0x7fffffffffffLL)
            return bad(p, i, "bad dateAdded");
        b->date_added = (int64_t)json_integer_value(da) * 1000;
    }
    return PICL_OK;
}

/* ---- applying ------------------------------------------------------------ */

/* Positions 0..n-1 in the current order (placeholders and ties by id). */
static picl_status renumber(places *p, int64_t parent)
{
    /* computed first, then written: a correlated subquery would see the
     * rows it is rewriting */
    picl_status rc = picl__places_q(p, "DELETE FROM temp.picl_pos", "");
    if (rc == PICL_OK)
        rc = picl__places_q(
            p,
            "INSERT INTO temp.picl_pos(id, rn) SELECT id, ROW_NUMBER() OVER (ORDER BY position, id) - 1 "
            "FROM moz_bookmarks WHERE parent = ?1",
            "i", parent);
    if (rc == PICL_OK)
        rc = picl__places_q(p,
                            "UPDATE moz_bookmarks SET position = (SELECT rn FROM temp.picl_pos r WHERE r.id "
                            "= moz_bookmarks.id) "
                            "WHERE parent = ?1 AND position != (SELECT rn FROM temp.picl_pos r WHERE r.id = "
                            "moz_bookmarks.id)",
                            "i", parent);
    return rc;
}

static picl_status mark_parent(places *p, json_t *parents, int64_t id)
{
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)id);
    return json_object_set_new(parents, key, json_true()) == 0
               ? PICL_OK
               : picl__store_fail(&p->base, PICL_ERROR_NO_MEMORY, "out of memory");
}

/* Is `anc` the item `id` or one of its ancestors? */
/* Walks up from item `from` (itself first), one indexed lookup per level,
 * at most 512 levels (a corrupt parent cycle stays finite): *hit when the
 * walk meets item `want` (want > 0) or, with want == 0, one of the four
 * syncable roots.  The cost is the item's depth.  (A recursive SQL join
 * did this before, and SQLite built a Bloom filter over all of
 * moz_bookmarks for it at every call: an apply of n records was
 * quadratic.) */
static picl_status walk_up(places *p, int64_t from, int64_t want, int *hit)
{
    *hit = 0;
    sqlite3_stmt *st = NULL;
    picl_status rc = picl__places_cached(p, &st, "SELECT parent, guid FROM moz_bookmarks WHERE id = ?");
    if (rc != PICL_OK)
        return rc;
    int64_t cur = from;
    for (int depth = 0; rc == PICL_OK && depth <= 512 && cur > 0 && !*hit; depth++) {
        if (want > 0 && cur == want) {
            *hit = 1;
            break;
        }
        sqlite3_bind_int64(st, 1, cur);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            const char *g = (const char *)sqlite3_column_text(st, 1);
            size_t k = 0;
            for (; want == 0 && g && k < sizeof roots / sizeof roots[0]; k++)
                if (!strcmp(g, roots[k].guid)) {
                    *hit = 1;
                    break;
                }
            cur = sqlite3_column_type(st, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 0);
        } else if (r == SQLITE_DONE) {
            cur = 0;
        } else {
            rc = picl__places_dberr(p, "walking up the bookmarks tree");
        }
        sqlite3_reset(st);
    }
    picl__places_release(p, st);
    return rc;
}

/* 1 in *yes when anc is id or one of its ancestors. */
static picl_status is_ancestor(places *p, int64_t anc, int64_t id, int *yes)
{
    return walk_up(p, id, anc, yes);
}

static picl_status syncable_item(places *p, const char *guid, int64_t *id, int64_t *type, int64_t *fk,
                                 int64_t *parent)
{
    /* The item, then a walk UP its parents to one of the four roots: the
     * cost is the item's depth, not the size of the tree (applying n records
     * stays linear).  The depth cap keeps a corrupt parent cycle finite. */
    sqlite3_stmt *st = NULL;
    *id = *type = *fk = *parent = 0;
    int64_t i = 0, t = 0, f = 0, par = 0;
    picl_status rc =
        picl__places_cached(p, &st, "SELECT id, type, fk, parent FROM moz_bookmarks WHERE guid = ?");
    if (rc != PICL_OK)
        return rc;
    sqlite3_bind_text(st, 1, guid, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        i = sqlite3_column_int64(st, 0);
        t = sqlite3_column_int64(st, 1);
        f = sqlite3_column_int64(st, 2);
        par = sqlite3_column_int64(st, 3);
    }
    picl__places_release(p, st);
    if (!i)
        return PICL_OK;
    int syncable = 0;
    if ((rc = walk_up(p, i, 0, &syncable)) != PICL_OK)
        return rc;
    if (syncable) {
        *id = i;
        *type = t;
        *fk = f;
        *parent = par;
    }
    return PICL_OK;
}

static picl_status apply_delete(places *p, const bm_in *b, json_t *parents, int64_t now)
{
    int64_t id, type, fk, parent;
    picl_status rc = syncable_item(p, b->guid, &id, &type, &fk, &parent);
    if (rc == PICL_OK)
        rc = picl__places_q(p, "DELETE FROM moz_bookmarks_deleted WHERE guid = ?", "t", b->guid);
    if (rc != PICL_OK || !id)
        return rc;
    if (type == 2) { /* surviving children go to unfiled (records.md: parent gone), a local change */
        rc = picl__places_q(
            p,
            "UPDATE moz_bookmarks SET parent = ?1, position = ?2 + position, lastModified = ?3, "
            "syncChangeCounter = syncChangeCounter + 1 WHERE parent = ?4",
            "iiii", p->unfiled_id, (int64_t)BM_NEW_POSITION, now, id);
        if (rc == PICL_OK)
            rc = picl__places_q(
                p,
                "UPDATE moz_bookmarks SET syncChangeCounter = syncChangeCounter + 1 WHERE id = ?1 AND "
                "EXISTS (SELECT 1 FROM moz_bookmarks WHERE parent = ?1 AND position >= ?2)",
                "ii", p->unfiled_id, (int64_t)BM_NEW_POSITION);
        if (rc == PICL_OK)
            rc = mark_parent(p, parents, p->unfiled_id);
    }
    if (rc == PICL_OK)
        rc = picl__places_q(p, "DELETE FROM moz_bookmarks WHERE id = ?", "i", id);
    if (rc == PICL_OK)
        rc = mark_parent(p, parents, parent);
    if (rc == PICL_OK && fk)
        rc = picl__places_drop_orphan_url(p, fk);
    return rc;
}

/* Creates or updates the item of b (parent set later, in place_item). */
static picl_status apply_upsert(places *p, const bm_in *b, size_t i, json_t *parents, int64_t now)
{
    int64_t id, type, fk, parent, place = 0;
    picl_status rc = syncable_item(p, b->guid, &id, &type, &fk, &parent);
    if (rc == PICL_OK)
        rc = picl__places_q(p, "DELETE FROM moz_bookmarks_deleted WHERE guid = ?", "t", b->guid);
    if (rc != PICL_OK)
        return rc;
    if (b->root)
        return id ? mark_parent(p, parents, id) : PICL_OK;
    if (!id) {
        int64_t other = 0;
        if ((rc = id_of(p, b->guid, &other)) != PICL_OK)
            return rc;
        if (other) /* a tag entry or other non-synced item holds this GUID */
            return picl__store_fail(&p->base, PICL_ERROR_CONFLICT, "bookmark %s: GUID taken", b->guid);
    }
    if (b->type == 1 && (rc = picl__places_page(p, b->url, NULL, &place)) != PICL_OK)
        return rc;
    if (type == 2 && b->type != 2) { /* a folder became something else: keep its children */
        rc = picl__places_q(
            p, "UPDATE moz_bookmarks SET parent = ?1, position = ?2 + position WHERE parent = ?3", "iii",
            p->unfiled_id, (int64_t)BM_NEW_POSITION, id);
        if (rc == PICL_OK)
            rc = mark_parent(p, parents, p->unfiled_id);
    }
    int64_t added = b->date_added ? b->date_added : now;
    if (rc == PICL_OK && id) {
        rc = picl__places_q(
            p,
            "UPDATE moz_bookmarks SET type = ?1, fk = ?2, title = ?3, dateAdded = min(dateAdded, ?4), "
            "lastModified = max(?5, min(dateAdded, ?4)), syncStatus = 2, syncChangeCounter = 0 WHERE id = ?6",
            "intiii", (int64_t)b->type, place, b->type == 3 ? NULL : (b->title ? b->title : ""), added, now,
            id);
        if (rc == PICL_OK && fk && fk != place)
            rc = picl__places_drop_orphan_url(p, fk);
    } else if (rc == PICL_OK) {
        rc = picl__places_q(
            p,
            "INSERT INTO moz_bookmarks(type, fk, parent, position, title, dateAdded, lastModified, guid, "
            "syncStatus, syncChangeCounter) VALUES (?1, ?2, ?3, ?4, ?5, ?6, max(?6, ?7), ?8, 2, 0)",
            "iniitiit", (int64_t)b->type, place, p->unfiled_id, (int64_t)BM_NEW_POSITION + (int64_t)i,
            b->type == 3 ? NULL : (b->title ? b->title : ""), added, now, b->guid);
        if (rc == PICL_OK)
            rc = mark_parent(p, parents, p->unfiled_id);
    }
    if (rc == PICL_OK && place) {
        rc = picl__places_set_tags(p, place, b->tags, now);
        if (rc == PICL_OK)
            rc = picl__places_set_keyword(p, place, b->keyword);
    }
    if (rc == PICL_OK && parent)
        rc = mark_parent(p, parents, parent);
    return rc;
}

/* Puts item `guid` under folder `want` (a GUID), or unfiled when that folder
 * is missing or would make a cycle. */
static picl_status place_item(places *p, const char *guid, const char *want, size_t i, json_t *parents)
{
    int64_t id, type, fk, parent, target = 0, ttype, tfk, tparent;
    picl_status rc = syncable_item(p, guid, &id, &type, &fk, &parent);
    if (rc == PICL_OK && id)
        rc = syncable_item(p, want, &target, &ttype, &tfk, &tparent);
    if (rc != PICL_OK || !id)
        return rc;
    int cycle = 0;
    if (target && (ttype != 2 || (rc = is_ancestor(p, id, target, &cycle)) != PICL_OK || cycle))
        target = 0;
    if (rc != PICL_OK)
        return rc;
    if (!target) {
        /* not where the server says: a local change, so the server learns it */
        target = p->unfiled_id;
        rc = picl__places_q(
            p, "UPDATE moz_bookmarks SET syncChangeCounter = syncChangeCounter + 1 WHERE id IN (?1, ?2)",
            "ii", id, target);
        if (rc != PICL_OK)
            return rc;
    }
    if (target == parent)
        return PICL_OK;
    rc = picl__places_q(p, "UPDATE moz_bookmarks SET parent = ?1, position = ?2 WHERE id = ?3", "iii", target,
                        (int64_t)BM_NEW_POSITION + (int64_t)i, id);
    if (rc == PICL_OK)
        rc = mark_parent(p, parents, target);
    if (rc == PICL_OK)
        rc = mark_parent(p, parents, parent);
    return rc;
}

/* A folder record's children come first, in its order; others keep theirs. */
static picl_status order_children(places *p, const bm_in *b, json_t *parents)
{
    int64_t folder = 0;
    picl_status rc = id_of(p, b->guid, &folder);
    if (rc == PICL_OK && folder)
        rc = mark_parent(p, parents, folder); /* renumbered below */
    size_t k;
    json_t *v;
    char buf[PLACES_GUID_LEN + 1];
    json_array_foreach (b->children, k, v) {
        if (rc != PICL_OK)
            break;
        rc =
            picl__places_q(p, "UPDATE moz_bookmarks SET position = ?1 WHERE guid = ?2 AND parent = ?3", "iti",
                           (int64_t)k - BM_MAX_CHILDREN - 1, to_guid(json_string_value(v), buf), folder);
    }
    return rc;
}

static picl_status bm_apply(picl_store *s, const json_t *records)
{
    places *p = (places *)s;
    if (!json_is_array(records))
        return picl__store_fail(s, PICL_ERROR_INVALID_ARGUMENT, "records must be an array");
    size_t n = json_array_size(records);
    bm_in *in = calloc(n ? n : 1, sizeof *in);
    json_t *parents = json_object();
    if (!in || !parents) {
        free(in);
        json_decref(parents);
        return picl__store_fail(s, PICL_ERROR_NO_MEMORY, "out of memory");
    }
    picl_status rc = PICL_OK;
    for (size_t i = 0; rc == PICL_OK && i < n; i++)
        rc = parse_bookmark(p, json_array_get(records, i), i, &in[i]);
    int64_t now = picl__places_now_us();
    if (rc == PICL_OK && (rc = picl__places_begin(p)) == PICL_OK) {
        for (size_t i = 0; rc == PICL_OK && i < n; i++)
            if (in[i].deleted)
                rc = apply_delete(p, &in[i], parents, now);
        for (size_t i = 0; rc == PICL_OK && i < n; i++) {
            picl__store_progress(s, i, n);
            if (!in[i].deleted)
                rc = apply_upsert(p, &in[i], i, parents, now);
        }
        for (size_t i = 0; rc == PICL_OK && i < n; i++)
            if (!in[i].deleted && !in[i].root)
                rc = place_item(p, in[i].guid, in[i].parent, i, parents);
        /* a folder's listed children that came without a record of their own */
        for (size_t i = 0; rc == PICL_OK && i < n; i++) {
            size_t k;
            json_t *v;
            char buf[PLACES_GUID_LEN + 1];
            json_array_foreach (in[i].children, k, v) {
                const char *cg = to_guid(json_string_value(v), buf);
                int listed = 0;
                for (size_t j = 0; j < n && !listed; j++)
                    listed = strcmp(in[j].guid, cg) == 0;
                if (!listed && rc == PICL_OK && !is_root_guid(cg))
                    rc = place_item(p, cg, in[i].guid, n + k, parents);
            }
        }
        for (size_t i = 0; rc == PICL_OK && i < n; i++)
            if (in[i].children)
                rc = order_children(p, &in[i], parents);
        const char *key;
        json_t *v;
        json_object_foreach (parents, key, v) {
            if (rc != PICL_OK)
                break;
            int64_t pid = strtoll(key, NULL, 10);
            rc = renumber(p, pid);
            if (rc == PICL_OK)
                rc = picl__places_q(
                    p, "UPDATE moz_bookmarks SET lastModified = max(lastModified, ?1) WHERE id = ?2", "ii",
                    now, pid);
        }
        /* tag folders left empty go, and the tags root is renumbered */
        if (rc == PICL_OK)
            rc = picl__places_q(p,
                                "DELETE FROM moz_bookmarks WHERE parent = ?1 AND type = 2 AND NOT EXISTS "
                                "(SELECT 1 FROM moz_bookmarks c WHERE c.parent = moz_bookmarks.id)",
                                "i", p->tags_id);
        if (rc == PICL_OK) {
            sqlite3_stmt *st = NULL;
            rc = picl__places_prep(p, &st, "SELECT id FROM moz_bookmarks WHERE parent = ? AND type = 2");
            if (rc == PICL_OK) {
                sqlite3_bind_int64(st, 1, p->tags_id);
                int64_t ids[1024];
                size_t m = 0;
                while (m < 1024 && sqlite3_step(st) == SQLITE_ROW)
                    ids[m++] = sqlite3_column_int64(st, 0);
                sqlite3_finalize(st);
                for (size_t j = 0; rc == PICL_OK && j < m; j++)
                    rc = renumber(p, ids[j]);
            }
        }
        if (rc == PICL_OK)
            rc = renumber(p, p->tags_id);
        if (rc == PICL_OK)
            rc = picl__places_fix_touched(p);
        rc = picl__places_end(p, rc);
    }
    free(in);
    json_decref(parents);
    return rc;
}

static picl_status bm_mark_synced(picl_store *s, const json_t *records)
{
    places *p = (places *)s;
    if (!json_is_array(records))
        return picl__store_fail(s, PICL_ERROR_INVALID_ARGUMENT, "records must be an array");
    picl_status rc = picl__places_begin(p);
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        char buf[PLACES_GUID_LEN + 1];
        const char *g = to_guid(json_string_value(json_object_get(r, "id")), buf);
        json_t *c = g ? json_object_get(p->reported, g) : NULL;
        if (!c || rc != PICL_OK)
            continue;
        if (json_integer_value(c) == 0)
            rc = picl__places_q(p, "DELETE FROM moz_bookmarks_deleted WHERE guid = ?", "t", g);
        else /* a change made since changes() keeps its share of the counter */
            rc = picl__places_q(
                p,
                "UPDATE moz_bookmarks SET syncChangeCounter = max(syncChangeCounter - ?1, 0), syncStatus = 2 "
                "WHERE guid = ?2",
                "it", (int64_t)json_integer_value(c), g);
        json_object_del(p->reported, g);
    }
    return picl__places_end(p, rc);
}

static picl_status bm_reset(picl_store *s)
{
    places *p = (places *)s;
    picl_status rc = picl__places_begin(p);
    if (rc == PICL_OK)
        rc = picl__places_q(p,
                            SYNCABLE "UPDATE moz_bookmarks SET syncChangeCounter = 1, syncStatus = 0 "
                                     "WHERE id IN syncable",
                            "");
    if (rc == PICL_OK)
        rc = picl__places_q(p, "DELETE FROM moz_bookmarks_deleted", "");
    json_decref(p->reported);
    p->reported = NULL;
    return picl__places_end(p, rc);
}

/* Deletes every bookmark (and tag and keyword) but keeps the roots. */
static picl_status bm_wipe(picl_store *s)
{
    places *p = (places *)s;
    picl_status rc = picl__places_begin(p);
    if (rc == PICL_OK)
        rc = picl__places_q(p,
                            "INSERT OR IGNORE INTO temp.picl_touched(place_id) SELECT fk FROM moz_bookmarks "
                            "WHERE fk IS NOT NULL "
                            "UNION SELECT place_id FROM moz_keywords",
                            "");
    if (rc == PICL_OK)
        rc = picl__places_q(
            p,
            "DELETE FROM moz_bookmarks WHERE guid NOT IN ('root________', 'menu________', 'toolbar_____', "
            "'unfiled_____', 'mobile______', 'tags________')",
            "");
    if (rc == PICL_OK)
        rc = picl__places_q(p, "DELETE FROM moz_keywords", "");
    if (rc == PICL_OK)
        rc = picl__places_q(p, "UPDATE moz_bookmarks SET lastModified = ?1 WHERE guid != 'root________'", "i",
                            picl__places_now_us());
    if (rc == PICL_OK)
        rc = picl__places_fix_touched(p);
    return picl__places_end(p, rc);
}

const picl_store_ops picl__places_bookmark_ops = {
    .changes = bm_changes,
    .all = bm_all,
    .get = bm_get,
    .apply = bm_apply,
    .mark_synced = bm_mark_synced,
    .reset = bm_reset,
    .wipe = bm_wipe,
    .close = picl__places_close,
};
