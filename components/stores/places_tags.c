/* SPDX-License-Identifier: MPL-2.0 */
/* places_tags.c -- tags and keywords, kept per URL the way Firefox keeps them (see places.h). */
#include "stores/places_int.h"

#include <string.h>

/* Makes url's keyword kw (NULL: none); a keyword names one URL. */
picl_status picl__places_set_keyword(places *p, int64_t place, const char *kw)
{
    picl_status rc =
        picl__places_q(p,
                       "INSERT OR IGNORE INTO temp.picl_touched(place_id) SELECT place_id FROM moz_keywords "
                       "WHERE keyword = ?1 OR place_id = ?2",
                       "ti", kw, place);
    if (rc == PICL_OK)
        rc =
            picl__places_q(p,
                           "DELETE FROM moz_keywords WHERE (place_id = ?2 AND (?1 IS NULL OR keyword != ?1)) "
                           "OR (keyword = ?1 AND place_id != ?2)",
                           "ti", kw, place);
    if (rc == PICL_OK && kw)
        rc = picl__places_q(p, "INSERT OR IGNORE INTO moz_keywords(keyword, place_id) VALUES (?, ?)", "ti",
                            kw, place);
    return rc;
}

/* Makes the tags of url exactly `tags` (an array of strings, NULL = none),
 * kept as Firefox does: a folder per tag under tags________ holding one
 * entry per tagged URL. */
picl_status picl__places_set_tags(places *p, int64_t place, const json_t *tags, int64_t now)
{
    sqlite3_stmt *st = NULL;
    picl_status rc = picl__places_cached(
        p, &st,
        PLACES_BY_FK(p, "SELECT e.id, t.title FROM", "e",
                     "JOIN moz_bookmarks t ON t.id = e.parent WHERE e.fk = ? AND t.parent = ?"));
    if (rc != PICL_OK)
        return rc;
    sqlite3_bind_int64(st, 1, place);
    sqlite3_bind_int64(st, 2, p->tags_id);
    json_t *have = json_object(); /* tag -> entry id */
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 1);
        json_object_set_new(have, t ? t : "", json_integer(sqlite3_column_int64(st, 0)));
    }
    picl__places_release(p, st);
    const char *tag;
    json_t *v;
    json_object_foreach (have, tag, v) {
        int keep = 0;
        size_t k;
        json_t *w;
        json_array_foreach (tags, k, w)
            keep |= strcmp(json_string_value(w), tag) == 0;
        if (!keep && rc == PICL_OK)
            rc = picl__places_q(p, "DELETE FROM moz_bookmarks WHERE id = ?", "i",
                                (int64_t)json_integer_value(v));
    }
    size_t k;
    json_array_foreach (tags, k, v) {
        const char *t = json_string_value(v);
        if (rc != PICL_OK || json_object_get(have, t))
            continue;
        json_object_set_new(have, t, json_integer(0)); /* a tag listed twice */
        int64_t folder = 0;
        char guid[PLACES_GUID_LEN + 1];
        rc = picl__places_q1(p, &folder,
                             "SELECT id FROM moz_bookmarks WHERE parent = ? AND type = 2 AND title = ?", "it",
                             p->tags_id, t);
        if (rc == PICL_OK && !folder && (rc = picl__places_new_guid(p, guid)) == PICL_OK) {
            rc = picl__places_q(
                p,
                "INSERT INTO moz_bookmarks(type, parent, position, title, dateAdded, lastModified, guid, "
                "syncStatus, syncChangeCounter) VALUES (2, ?1, (SELECT count(*) FROM moz_bookmarks "
                "WHERE parent = ?1), ?2, ?3, ?3, ?4, 2, 0)",
                "itit", p->tags_id, t, now, guid);
            folder = sqlite3_last_insert_rowid(p->db);
        }
        if (rc == PICL_OK)
            rc = picl__places_new_guid(p, guid);
        if (rc == PICL_OK)
            rc = picl__places_q(
                p,
                "INSERT INTO moz_bookmarks(type, fk, parent, position, dateAdded, lastModified, guid, "
                "syncStatus, syncChangeCounter) VALUES (1, ?1, ?2, (SELECT count(*) FROM moz_bookmarks "
                "WHERE parent = ?2), ?3, ?3, ?4, 2, 0)",
                "iiit", place, folder, now, guid);
    }
    json_decref(have);
    if (rc == PICL_OK)
        rc = picl__places_touch(p, place);
    return rc;
}

/* After bookmarks of a URL went away: a URL nobody bookmarks keeps no tags
 * and no keyword (as Firefox's Bookmarks.remove does). */
picl_status picl__places_drop_orphan_url(places *p, int64_t place)
{
    int64_t n = 0;
    picl_status rc = picl__places_q1(
        p, &n,
        PLACES_BY_FK(p, "SELECT count(*) FROM", "b",
                     "JOIN moz_bookmarks par ON par.id = b.parent WHERE b.fk = ? AND par.parent != ?"),
        "ii", place, p->tags_id);
    if (rc == PICL_OK && n == 0)
        rc = picl__places_set_tags(p, place, NULL, 0);
    if (rc == PICL_OK && n == 0)
        rc = picl__places_set_keyword(p, place, NULL);
    if (rc == PICL_OK)
        rc = picl__places_touch(p, place);
    return rc;
}
