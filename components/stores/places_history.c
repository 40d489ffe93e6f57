/* SPDX-License-Identifier: MPL-2.0 */
/* places_history.c -- the history store: pages and visits of places.sqlite (see places.h). */
#include "stores/places_int.h"

#include <stdlib.h>
#include <string.h>

#define HISTORY_MAX_VISITS 20      /* per record, newest first (records.md §3) */
#define HISTORY_MAX_IN_VISITS 1000 /* an incoming record with more is malformed */
#define HISTORY_CURSOR_KEY "picl/history/lastSync"

/* Fields records.md gives a page and a visit; any other is kept as Firefox
 * keeps it: moz_places_extra / moz_historyvisits_extra.sync_json =
 * {"unknown_sync_fields": "<JSON text of the unknown fields>"}. */
static const char *const page_fields[] = {"id", "histUri", "title", "visits", "deleted"};
static const char *const visit_fields[] = {"date", "type"};

static int known(const char *k, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(k, list[i]) == 0)
            return 1;
    return 0;
}

/* Adds the fields of JSON object text `unknown` that rec lacks. */
static void merge_unknown(json_t *rec, const char *unknown, const char *const *list, size_t n)
{
    json_t *o = unknown ? json_loads(unknown, 0, NULL) : NULL;
    const char *k;
    json_t *v;
    if (json_is_object(o) && rec)
        json_object_foreach (o, k, v)
            if (!known(k, list, n) && !json_object_get(rec, k))
                json_object_set(rec, k, v);
    json_decref(o);
}

/* The unknown fields of obj as compact JSON text (malloc()ed), NULL if none. */
static char *unknown_text(const json_t *obj, const char *const *list, size_t n)
{
    json_t *u = json_object();
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)obj, k, v)
        if (!known(k, list, n))
            json_object_set(u, k, v);
    char *t = json_object_size(u) ? json_dumps(u, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(u);
    return t;
}

/* Stores unknown-field text for a page (place_id) or a visit (visit_id). */
static picl_status put_unknown(places *p, int page, int64_t id, const char *text)
{
    return picl__places_q(p,
                          page
                              ? "INSERT INTO moz_places_extra(place_id, sync_json) VALUES (?1, "
                                "json_object('unknown_sync_fields', ?2)) ON CONFLICT(place_id) DO UPDATE SET "
                                "sync_json = json_patch(sync_json, json_object('unknown_sync_fields', ?2))"
                              : "INSERT INTO moz_historyvisits_extra(visit_id, sync_json) VALUES (?1, "
                                "json_object('unknown_sync_fields', ?2)) ON CONFLICT(visit_id) DO UPDATE SET "
                                "sync_json = json_patch(sync_json, json_object('unknown_sync_fields', ?2))",
                          "it", id, text);
}

/* The history record of page place_id (guid, url, title given), or NULL in
 * *out when it has no visits.  types[t] is the one JSON integer t (1..9) the
 * visits of every record share (made here when NULL; the caller decrefs
 * them): 100 000 visits hold 9 integers, not 100 000 (issue 15). */
static picl_status history_record(places *p, int64_t place_id, const char *guid, const char *url,
                                  const char *title, json_t *types[10], json_t **out)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    picl_status rc = picl__places_cached(
        p, &st,
        "SELECT v.visit_date, v.visit_type, json_extract(e.sync_json, '$.unknown_sync_fields') "
        "FROM moz_historyvisits v LEFT JOIN moz_historyvisits_extra e ON e.visit_id = v.id WHERE v.place_id "
        "= ? "
        "AND v.visit_type BETWEEN 1 AND 9 ORDER BY v.visit_date DESC, v.id DESC LIMIT 20");
    if (rc != PICL_OK)
        return rc;
    sqlite3_bind_int64(st, 1, place_id);
    json_t *visits = json_array();
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int t = sqlite3_column_int(st, 1); /* 1..9: the query's condition */
        if (!types[t])
            types[t] = json_integer(t);
        json_t *v =
            json_pack("{s:I, s:O}", "date", (json_int_t)sqlite3_column_int64(st, 0), "type", types[t]);
        merge_unknown(v, (const char *)sqlite3_column_text(st, 2), visit_fields, 2);
        json_array_append_new(visits, v);
    }
    if (r != SQLITE_DONE)
        rc = picl__places_dberr(p, "visits");
    picl__places_release(p, st);
    size_t nvisits = json_array_size(visits);
    if (rc == PICL_OK && nvisits > 0)
        *out = json_pack("{s:s, s:s, s:s, s:O}", "id", guid, "histUri", url, "title", title ? title : "",
                         "visits", visits); /* no title = "", as Firefox's history sync sends it */
    json_decref(visits);
    if (rc == PICL_OK && nvisits > 0 && !*out)
        rc = picl__store_fail(&p->base, PICL_ERROR_NO_MEMORY, "out of memory");
    if (*out) { /* fields of the record we did not know, kept by apply() */
        st = NULL;
        if (picl__places_cached(p, &st,
                                "SELECT json_extract(sync_json, '$.unknown_sync_fields') FROM "
                                "moz_places_extra WHERE place_id = ?") == PICL_OK) {
            sqlite3_bind_int64(st, 1, place_id);
            if (sqlite3_step(st) == SQLITE_ROW)
                merge_unknown(*out, (const char *)sqlite3_column_text(st, 0), page_fields, 5);
        }
        picl__places_release(p, st);
    }
    return rc;
}

/* Appends the records of the pages a query selects (id, guid, url, title). */
static picl_status history_collect(places *p, sqlite3_stmt *q, json_t *a)
{
    picl_status rc = PICL_OK;
    json_t *types[10] = {NULL};
    int r;
    while (rc == PICL_OK && (r = sqlite3_step(q)) == SQLITE_ROW) {
        json_t *rec = NULL;
        rc = history_record(p, sqlite3_column_int64(q, 0), (const char *)sqlite3_column_text(q, 1),
                            (const char *)sqlite3_column_text(q, 2), (const char *)sqlite3_column_text(q, 3),
                            types, &rec);
        if (rec)
            json_array_append_new(a, rec);
    }
    if (rc == PICL_OK && r != SQLITE_DONE)
        rc = picl__places_dberr(p, "pages");
    for (size_t t = 0; t < 10; t++)
        json_decref(types[t]);
    picl__places_idle(p);
    return rc;
}

static picl_status history_cursor(places *p, int64_t *cursor)
{
    sqlite3_stmt *st = NULL;
    *cursor = 0;
    picl_status rc =
        picl__places_prep(p, &st, "SELECT value FROM moz_meta WHERE key = '" HISTORY_CURSOR_KEY "'");
    if (rc != PICL_OK)
        return rc;
    if (sqlite3_step(st) == SQLITE_ROW)
        *cursor = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return PICL_OK;
}

static picl_status hist_changes(picl_store *s, json_t **out)
{
    places *p = (places *)s;
    int64_t cursor, newest = 0;
    sqlite3_stmt *q = NULL;
    *out = NULL;
    picl_status rc = history_cursor(p, &cursor);
    if (rc == PICL_OK)
        rc = picl__places_prep(
            p, &q,
            "SELECT h.id, h.guid, h.url, h.title, (SELECT max(visit_date) FROM moz_historyvisits v "
            "  WHERE v.place_id = h.id AND v.source != 1) "
            "FROM moz_places h WHERE h.id IN (SELECT place_id FROM moz_historyvisits "
            "  WHERE source != 1 AND visit_date > ?1) ORDER BY h.id");
    json_t *a = json_array();
    if (rc == PICL_OK) {
        sqlite3_bind_int64(q, 1, cursor);
        rc = history_collect(p, q, a);
        sqlite3_reset(q);
    }
    if (rc == PICL_OK) {
        sqlite3_finalize(q);
        q = NULL;
        rc = picl__places_prep(p, &q, "SELECT max(visit_date) FROM moz_historyvisits WHERE source != 1");
        if (rc == PICL_OK && sqlite3_step(q) == SQLITE_ROW)
            newest = sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    if (rc != PICL_OK) {
        json_decref(a);
        return rc;
    }
    p->reported_until = newest > cursor ? newest : cursor;
    *out = a;
    return PICL_OK;
}

static picl_status hist_all(picl_store *s, json_t **out)
{
    places *p = (places *)s;
    sqlite3_stmt *q = NULL;
    *out = NULL;
    picl_status rc =
        picl__places_prep(p, &q,
                          "SELECT id, guid, url, title FROM moz_places WHERE last_visit_date IS NOT NULL "
                          "ORDER BY last_visit_date DESC, id");
    json_t *a = json_array();
    if (rc == PICL_OK)
        rc = history_collect(p, q, a);
    sqlite3_finalize(q);
    if (rc != PICL_OK) {
        json_decref(a);
        return rc;
    }
    *out = a;
    return PICL_OK;
}

static picl_status hist_get(picl_store *s, const char *id, json_t **out)
{
    places *p = (places *)s;
    sqlite3_stmt *q = NULL;
    *out = NULL;
    picl_status rc = picl__places_prep(p, &q, "SELECT id, guid, url, title FROM moz_places WHERE guid = ?");
    json_t *a = json_array();
    if (rc == PICL_OK) {
        sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
        rc = history_collect(p, q, a);
    }
    sqlite3_finalize(q);
    if (rc == PICL_OK && json_array_size(a) == 1)
        *out = json_incref(json_array_get(a, 0));
    json_decref(a);
    return rc;
}

/* One incoming history record, checked (the one parser of history input). */
typedef struct hist_in {
    const json_t *rec;
    const char *id;
    int deleted;
    const char *url;
    const char *title; /* NULL: leave the title */
    const json_t *visits;
} hist_in;

static picl_status parse_history(places *p, const json_t *r, size_t i, hist_in *h)
{
    memset(h, 0, sizeof *h);
    h->rec = r;
    if (!json_is_object(r))
        return picl__store_fail(&p->base, PICL_ERROR_ENCODING, "history record %zu is not an object", i);
    h->id = json_string_value(json_object_get(r, "id"));
    if (!picl__places_valid_guid(h->id))
        return picl__store_fail(&p->base, PICL_ERROR_ENCODING, "history record %zu: bad id", i);
    json_t *del = json_object_get(r, "deleted");
    if (del && !json_is_boolean(del))
        return picl__store_fail(&p->base, PICL_ERROR_ENCODING, "history record %s: bad deleted", h->id);
    if (json_is_true(del)) {
        h->deleted = 1;
        return PICL_OK;
    }
    h->url = json_string_value(json_object_get(r, "histUri"));
    if (!picl__places_valid_url(h->url))
        return picl__store_fail(&p->base, PICL_ERROR_ENCODING, "history record %s: bad histUri", h->id);
    json_t *t = json_object_get(r, "title");
    if (t && !json_is_null(t) && !json_is_string(t))
        return picl__store_fail(&p->base, PICL_ERROR_ENCODING, "history record %s: bad title", h->id);
    h->title = json_string_value(t);
    if (h->title && !*h->title)
        h->title = NULL; /* "" is no title: a known page keeps its own */
    if (h->title && strlen(h->title) > PLACES_MAX_TITLE)
        return picl__store_fail(&p->base, PICL_ERROR_ENCODING, "history record %s: title too long", h->id);
    h->visits = json_object_get(r, "visits");
    if (!json_is_array(h->visits) || json_array_size(h->visits) > HISTORY_MAX_IN_VISITS)
        return picl__store_fail(&p->base, PICL_ERROR_ENCODING, "history record %s: bad visits", h->id);
    size_t k;
    json_t *v;
    json_array_foreach (h->visits, k, v) {
        json_t *d = json_object_get(v, "date"), *ty = json_object_get(v, "type");
        if (!json_is_integer(d) || json_integer_value(d) <= 0 || !json_is_integer(ty) ||
            json_integer_value(ty) < 1 || json_integer_value(ty) > 9)
            return picl__store_fail(&p->base, PICL_ERROR_ENCODING, "history record %s: bad visit %zu", h->id,
                                    k);
    }
    return PICL_OK;
}

/* Removes page guid's visits, and the page itself unless bookmarked. */
static picl_status history_delete(places *p, const char *guid)
{
    static const char *const sql[] = {
        "DELETE FROM moz_historyvisits_extra WHERE visit_id IN (SELECT v.id FROM moz_historyvisits v "
        "  JOIN moz_places h ON h.id = v.place_id WHERE h.guid = ?1)",
        "DELETE FROM moz_historyvisits WHERE place_id = (SELECT id FROM moz_places WHERE guid = ?1)",
        "INSERT OR IGNORE INTO temp.picl_touched(place_id) SELECT id FROM moz_places WHERE guid = ?1",
        "DELETE FROM moz_places_extra WHERE place_id = (SELECT id FROM moz_places WHERE guid = ?1 "
        "  AND foreign_count = 0)",
        "DELETE FROM moz_places WHERE guid = ?1 AND foreign_count = 0",
    };
    picl_status rc = PICL_OK;
    for (size_t i = 0; rc == PICL_OK && i < sizeof sql / sizeof sql[0]; i++) {
        sqlite3_stmt *st = NULL;
        if ((rc = picl__places_prep(p, &st, sql[i])) == PICL_OK) {
            sqlite3_bind_text(st, 1, guid, -1, SQLITE_STATIC);
            rc = picl__places_done(p, st);
        }
        sqlite3_finalize(st);
    }
    return rc;
}

/* The page of an incoming history record: the one its guid names, else the
 * one of its URL (which adopts the incoming guid), else a new one (*created).
 * *pid stays 0 when the guid names a page of another URL: not ours to
 * rename, the record is skipped. */
static picl_status history_page(places *p, const hist_in *h, int64_t *pidp, int *createdp)
{
    sqlite3_stmt *st = NULL;
    int64_t pid = 0;
    int created = 0;
    picl_status rc;
    *pidp = 0;
    *createdp = 0;
    /* the record's guid names the page; a page known by URL takes it */
    if ((rc = picl__places_cached(p, &st, "SELECT id, url FROM moz_places WHERE guid = ?")) != PICL_OK)
        return rc;
    sqlite3_bind_text(st, 1, h->id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        if (strcmp((const char *)sqlite3_column_text(st, 1), h->url) != 0) {
            picl__places_release(p, st);
            return PICL_OK; /* same GUID, another URL: not ours to rename; skipped */
        }
        pid = sqlite3_column_int64(st, 0);
    }
    picl__places_release(p, st);
    st = NULL;
    if (!pid) {
        int64_t before = 0;
        sqlite3_stmt *c = NULL;
        if ((rc = picl__places_cached(p, &c, "SELECT max(id) FROM moz_places")) != PICL_OK)
            return rc;
        if (sqlite3_step(c) == SQLITE_ROW)
            before = sqlite3_column_int64(c, 0);
        picl__places_release(p, c);
        if ((rc = picl__places_page(p, h->url, h->id, &pid)) != PICL_OK)
            return rc;
        created = pid > before;
        if (!created) { /* known by URL under another guid: adopt the incoming one */
            if ((rc = picl__places_cached(p, &st,
                                          "UPDATE moz_places SET guid = ?1 WHERE id = ?2 AND NOT EXISTS "
                                          "(SELECT 1 FROM moz_places WHERE guid = ?1)")) != PICL_OK)
                return rc;
            sqlite3_bind_text(st, 1, h->id, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, pid);
            rc = picl__places_done(p, st);
            picl__places_release(p, st);
            st = NULL;
            if (rc != PICL_OK)
                return rc;
        }
    }
    *pidp = pid;
    *createdp = created;
    return PICL_OK;
}

/* The visits of an incoming record on page pid (EMBED visits never stored, a
 * visit already there not doubled); *visible when one is a top-level visit. */
static picl_status history_visits(places *p, const hist_in *h, int64_t pid, int *visible)
{
    /* The check and the insert are two statements: an INSERT ... SELECT may
     * write several rows, so SQLite keeps a statement journal for it, and
     * with places.sqlite's 32 KiB pages every visit copied the pages it
     * changed to a temporary file.  A one-row INSERT ... VALUES needs none. */
    sqlite3_stmt *have = NULL, *ins = NULL;
    picl_status rc = picl__places_cached(p, &have,
                                         "SELECT 1 FROM moz_historyvisits WHERE place_id = ?1 AND "
                                         "visit_date = ?2 AND visit_type = ?3 LIMIT 1");
    if (rc == PICL_OK)
        rc = picl__places_cached(
            p, &ins,
            "INSERT INTO moz_historyvisits(from_visit, place_id, visit_date, visit_type, session, source) "
            "VALUES (0, ?1, ?2, ?3, 0, 1)");
    size_t k;
    json_t *v;
    *visible = 0;
    json_array_foreach (h->visits, k, v) {
        if (rc != PICL_OK)
            break;
        int type = (int)json_integer_value(json_object_get(v, "type"));
        if (type == 4)
            continue; /* EMBED visits are never stored */
        if (type != 8)
            *visible = 1;
        sqlite3_int64 date = json_integer_value(json_object_get(v, "date"));
        sqlite3_bind_int64(have, 1, pid);
        sqlite3_bind_int64(have, 2, date);
        sqlite3_bind_int(have, 3, type);
        int r = sqlite3_step(have);
        sqlite3_reset(have);
        if (r == SQLITE_ROW)
            continue; /* already there: not doubled */
        if (r != SQLITE_DONE) {
            rc = picl__places_dberr(p, "visit lookup");
            break;
        }
        sqlite3_bind_int64(ins, 1, pid);
        sqlite3_bind_int64(ins, 2, date);
        sqlite3_bind_int(ins, 3, type);
        rc = picl__places_done(p, ins);
        char *vu = rc == PICL_OK ? unknown_text(v, visit_fields, 2) : NULL;
        if (vu)
            rc = put_unknown(p, 0, sqlite3_last_insert_rowid(p->db), vu);
        free(vu);
    }
    picl__places_release(p, have);
    picl__places_release(p, ins);
    return rc;
}

static picl_status history_put(places *p, const hist_in *h)
{
    sqlite3_stmt *st = NULL;
    int64_t pid = 0;
    int created = 0, visible = 0;
    picl_status rc;
    if ((rc = history_page(p, h, &pid, &created)) != PICL_OK || !pid)
        return rc;
    if ((rc = picl__places_touch(p, pid)) != PICL_OK)
        return rc;
    char *pu = unknown_text(h->rec, page_fields, 5);
    if (pu)
        rc = put_unknown(p, 1, pid, pu);
    free(pu);
    if (rc != PICL_OK)
        return rc;
    if (h->title) {
        if ((rc = picl__places_cached(p, &st, "UPDATE moz_places SET title = ?1 WHERE id = ?2")) != PICL_OK)
            return rc;
        sqlite3_bind_text(st, 1, h->title, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, pid);
        rc = picl__places_done(p, st);
        picl__places_release(p, st);
        st = NULL;
        if (rc != PICL_OK)
            return rc;
    }
    if ((rc = history_visits(p, h, pid, &visible)) != PICL_OK)
        return rc;
    /* FRAMED_LINK-only pages are hidden; any top-level visit shows them */
    if (visible || created) {
        if ((rc = picl__places_cached(p, &st, "UPDATE moz_places SET hidden = ?1 WHERE id = ?2")) != PICL_OK)
            return rc;
        sqlite3_bind_int(st, 1, visible ? 0 : 1);
        sqlite3_bind_int64(st, 2, pid);
        rc = picl__places_done(p, st);
        picl__places_release(p, st);
    }
    return rc;
}

static picl_status hist_apply(picl_store *s, const json_t *records)
{
    places *p = (places *)s;
    if (!json_is_array(records))
        return picl__store_fail(s, PICL_ERROR_INVALID_ARGUMENT, "records must be an array");
    size_t n = json_array_size(records);
    hist_in *in = calloc(n ? n : 1, sizeof *in);
    if (!in)
        return picl__store_fail(s, PICL_ERROR_NO_MEMORY, "out of memory");
    picl_status rc = PICL_OK;
    for (size_t i = 0; rc == PICL_OK && i < n; i++)
        rc = parse_history(p, json_array_get(records, i), i, &in[i]);
    if (rc == PICL_OK && (rc = picl__places_begin(p)) == PICL_OK) {
        for (size_t i = 0; rc == PICL_OK && i < n; i++) {
            picl__store_progress(s, i, n);
            rc = in[i].deleted ? history_delete(p, in[i].id) : history_put(p, &in[i]);
        }
        if (rc == PICL_OK)
            rc = picl__places_fix_touched(p);
        if (rc == PICL_OK)
            rc = picl__places_exec(p, "DELETE FROM moz_origins WHERE NOT EXISTS "
                                      "(SELECT 1 FROM moz_places WHERE origin_id = moz_origins.id)");
        rc = picl__places_end(p, rc);
    }
    free(in);
    return rc;
}

static picl_status set_cursor(places *p, int64_t v)
{
    sqlite3_stmt *st = NULL;
    picl_status rc = picl__places_prep(
        p, &st, "INSERT OR REPLACE INTO moz_meta(key, value) VALUES ('" HISTORY_CURSOR_KEY "', ?)");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, v);
        rc = picl__places_done(p, st);
    }
    sqlite3_finalize(st);
    return rc;
}

static picl_status hist_mark_synced(picl_store *s, const json_t *records)
{
    places *p = (places *)s;
    int64_t cursor;
    picl_status rc = history_cursor(p, &cursor);
    if (rc == PICL_OK && p->reported_until > cursor)
        rc = set_cursor(p, p->reported_until);
    return rc;
}

static picl_status hist_reset(picl_store *s)
{
    places *p = (places *)s;
    p->reported_until = 0;
    return picl__places_exec(p, "DELETE FROM moz_meta WHERE key = '" HISTORY_CURSOR_KEY "'");
}

static picl_status hist_wipe(picl_store *s)
{
    places *p = (places *)s;
    picl_status rc = picl__places_begin(p);
    if (rc == PICL_OK)
        rc = picl__places_exec(
            p, "DELETE FROM moz_historyvisits_extra;"
               "DELETE FROM moz_historyvisits;"
               "DELETE FROM moz_places_extra WHERE place_id IN (SELECT id FROM moz_places WHERE "
               "foreign_count = 0);"
               "DELETE FROM moz_places WHERE foreign_count = 0;"
               "UPDATE moz_places SET visit_count = 0, last_visit_date = NULL, recalc_frecency = 1,"
               "  recalc_alt_frecency = 1;"
               "DELETE FROM moz_origins WHERE NOT EXISTS (SELECT 1 FROM moz_places WHERE origin_id = "
               "moz_origins.id);"
               "UPDATE moz_origins SET recalc_frecency = 1, recalc_alt_frecency = 1;");
    return picl__places_end(p, rc);
}

const picl_store_ops picl__places_history_ops = {
    .changes = hist_changes,
    .all = hist_all,
    .get = hist_get,
    .apply = hist_apply,
    .mark_synced = hist_mark_synced,
    .reset = hist_reset,
    .wipe = hist_wipe,
    .close = picl__places_close,
};
