/* SPDX-License-Identifier: MPL-2.0 */
/* forms.c -- the forms store: a profile's form history (formhistory.sqlite,
 * moz_formhistory) as Firefox Sync forms records {id, name, value} (forms.h). */
#include "stores/forms.h"
#include "stores/fileutil.h"
#include "stores/profile.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#define SNAPSHOT_MAX (64u * 1024u * 1024u)

typedef struct forms_store {
    picl_store base;
    picl_profile *profile;
    sqlite3 *db;
    char snapshot[4096]; /* STATE/forms-synced.json: guid -> [name, value] as last synced */
    json_t *kept;        /* guids whose local edit apply() kept: not marked synced */
} forms_store;

static picl_status load_snapshot(forms_store *f, json_t **out)
{
    char *text = NULL;
    size_t len = 0;
    picl_status st = picl__read_file(f->snapshot, SNAPSHOT_MAX, &text, &len);
    *out = NULL;
    if (st == PICL_ERROR_NOT_FOUND) {
        *out = json_object();
        return *out ? PICL_OK : PICL_ERROR_NO_MEMORY;
    }
    if (st != PICL_OK)
        return picl__store_fail(&f->base, st, "cannot read %s", f->snapshot);
    *out = json_loadb(text, len, 0, NULL);
    free(text);
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return picl__store_fail(&f->base, PICL_ERROR_ENCODING,
                                "%s is damaged (remove it: the next sync merges all)", f->snapshot);
    }
    return PICL_OK;
}

static picl_status save_snapshot(forms_store *f, const json_t *snap)
{
    char *text = json_dumps(snap, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = picl__write_file_atomic(f->snapshot, text, strlen(text), 0600);
    free(text);
    return st == PICL_OK ? st : picl__store_fail(&f->base, st, "cannot write %s", f->snapshot);
}

static picl_status db_fail(forms_store *f)
{
    return picl__store_fail(&f->base, PICL_ERROR_DATABASE, "formhistory.sqlite: %s", sqlite3_errmsg(f->db));
}

/* Every entry with a guid: guid -> {id, name, value}. */
static picl_status read_all(forms_store *f, json_t **out)
{
    sqlite3_stmt *q = NULL;
    *out = json_object();
    if (!*out)
        return PICL_ERROR_NO_MEMORY;
    if (sqlite3_prepare_v2(f->db, "SELECT guid, fieldname, value FROM moz_formhistory WHERE guid IS NOT NULL",
                           -1, &q, NULL) != SQLITE_OK) {
        json_decref(*out);
        *out = NULL;
        return db_fail(f);
    }
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *guid = (const char *)sqlite3_column_text(q, 0);
        const char *name = (const char *)sqlite3_column_text(q, 1);
        const char *value = (const char *)sqlite3_column_text(q, 2);
        if (!guid || !*guid || !name || !value)
            continue;
        json_object_set_new(*out, guid,
                            json_pack("{s:s, s:s, s:s}", "id", guid, "name", name, "value", value));
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        json_decref(*out);
        *out = NULL;
        return db_fail(f);
    }
    return PICL_OK;
}

static int same(const json_t *rec, const json_t *snap_entry)
{
    return json_is_array(snap_entry) &&
           json_equal(json_object_get(rec, "name"), json_array_get(snap_entry, 0)) &&
           json_equal(json_object_get(rec, "value"), json_array_get(snap_entry, 1));
}

static picl_status fm_changes(picl_store *s, json_t **out)
{
    forms_store *f = (forms_store *)s;
    json_t *cur = NULL, *snap = NULL;
    picl_status st = read_all(f, &cur);
    if (st == PICL_OK)
        st = load_snapshot(f, &snap);
    *out = NULL;
    if (st == PICL_OK) {
        *out = json_array();
        const char *id;
        json_t *r;
        json_object_foreach (cur, id, r)
            if (!same(r, json_object_get(snap, id)))
                json_array_append(*out, r);
        json_object_foreach (snap, id, r)
            if (!json_object_get(cur, id))
                json_array_append_new(*out, json_pack("{s:s, s:b}", "id", id, "deleted", 1));
    }
    json_decref(cur);
    json_decref(snap);
    return st;
}

static picl_status fm_all(picl_store *s, json_t **out)
{
    json_t *cur = NULL;
    picl_status st = read_all((forms_store *)s, &cur);
    *out = NULL;
    if (st != PICL_OK)
        return st;
    *out = json_array();
    const char *id;
    json_t *r;
    json_object_foreach (cur, id, r)
        json_array_append(*out, r);
    json_decref(cur);
    return PICL_OK;
}

static picl_status fm_get(picl_store *s, const char *id, json_t **out)
{
    json_t *cur = NULL;
    picl_status st = read_all((forms_store *)s, &cur);
    *out = NULL;
    if (st == PICL_OK)
        *out = json_incref(json_object_get(cur, id));
    json_decref(cur);
    return st;
}

static int exec_one(sqlite3 *db, const char *sql, const char *a, const char *b, const char *c, long long t)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return -1;
    const char *args[] = {a, b, c};
    int n = sqlite3_bind_parameter_count(q);
    for (int i = 0; i < n && i < 3; i++)
        sqlite3_bind_text(q, i + 1, args[i], -1, SQLITE_TRANSIENT);
    if (n == 4)
        sqlite3_bind_int64(q, 4, t);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? sqlite3_changes(db) : -1;
}

/* A record is applied only when it is well formed (strings, bounded). */
static int record_ok(const json_t *r)
{
    const char *name = json_string_value(json_object_get(r, "name"));
    const char *value = json_string_value(json_object_get(r, "value"));
    return name && value && *name && strlen(name) <= 200 && strlen(value) <= PICL_FORMS_VALUE_MAX;
}

static picl_status fm_apply(picl_store *s, const json_t *records)
{
    forms_store *f = (forms_store *)s;
    json_t *snap = NULL;
    picl_status st = load_snapshot(f, &snap);
    if (st != PICL_OK)
        return st;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    long long now = (long long)tv.tv_sec * 1000000 + tv.tv_usec;
    if (sqlite3_exec(f->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        json_decref(snap);
        return db_fail(f);
    }
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        if (!id || !*id || strlen(id) > 64)
            continue;
        if (json_is_true(json_object_get(r, "deleted"))) {
            if (exec_one(f->db, "DELETE FROM moz_formhistory WHERE guid = ?", id, NULL, NULL, 0) < 0)
                goto fail;
            json_object_del(snap, id);
            continue;
        }
        if (!record_ok(r))
            continue;                             /* not a form entry: nothing written */
        if (same(r, json_object_get(snap, id))) { /* what was last synced (a class move, a
                                                   * re-download): a local edit stays, uploaded next time */
            json_object_set_new(f->kept, id, json_true());
            continue;
        }
        const char *name = json_string_value(json_object_get(r, "name"));
        const char *value = json_string_value(json_object_get(r, "value"));
        int n = exec_one(f->db, "UPDATE moz_formhistory SET fieldname = ?, value = ? WHERE guid = ?", name,
                         value, id, 0);
        if (n < 0)
            goto fail;
        if (n == 0) { /* the same entry under another guid takes the incoming one */
            n = exec_one(f->db, "UPDATE moz_formhistory SET guid = ? WHERE fieldname = ? AND value = ?", id,
                         name, value, 0);
            if (n < 0)
                goto fail;
        }
        if (n == 0 &&
            exec_one(f->db,
                     "INSERT INTO moz_formhistory (fieldname, value, guid, timesUsed, firstUsed, lastUsed) "
                     "VALUES (?, ?, ?, 1, ?4, ?4)",
                     name, value, id, now) < 0)
            goto fail;
        json_object_set_new(snap, id, json_pack("[s, s]", name, value));
    }
    if (sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    st = save_snapshot(f, snap);
    json_decref(snap);
    return st;
fail:
    st = db_fail(f);
    sqlite3_exec(f->db, "ROLLBACK", NULL, NULL, NULL);
    json_decref(snap);
    return st;
}

static picl_status fm_mark_synced(picl_store *s, const json_t *records)
{
    forms_store *f = (forms_store *)s;
    json_t *snap = NULL, *cur = NULL;
    picl_status st = load_snapshot(f, &snap);
    if (st == PICL_OK)
        st = read_all(f, &cur);
    if (st != PICL_OK) {
        json_decref(snap);
        return st;
    }
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        if (!id)
            continue;
        /* only what the database still says: an entry an incoming record
         * won over in this sync keeps the mark apply() gave it */
        json_t *now = json_object_get(cur, id);
        if (json_object_get(f->kept, id))
            continue;
        if (json_is_true(json_object_get(r, "deleted")) ? now != NULL : !json_equal(now, r))
            continue;
        if (json_is_true(json_object_get(r, "deleted")))
            json_object_del(snap, id);
        else if (record_ok(r))
            json_object_set_new(snap, id,
                                json_pack("[O, O]", json_object_get(r, "name"), json_object_get(r, "value")));
    }
    st = save_snapshot(f, snap);
    json_decref(snap);
    json_decref(cur);
    return st;
}

static picl_status fm_reset(picl_store *s)
{
    json_t *empty = json_object();
    picl_status st = save_snapshot((forms_store *)s, empty);
    json_decref(empty);
    return st;
}

static picl_status fm_wipe(picl_store *s)
{
    forms_store *f = (forms_store *)s;
    if (sqlite3_exec(f->db, "DELETE FROM moz_formhistory", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(f);
    return fm_reset(s);
}

static void fm_close(picl_store *s)
{
    forms_store *f = (forms_store *)s;
    if (f->db)
        sqlite3_close(f->db);
    picl__profile_close(f->profile);
    json_decref(f->kept);
    free(f);
}

static const picl_store_ops forms_ops = {
    .changes = fm_changes,
    .all = fm_all,
    .get = fm_get,
    .apply = fm_apply,
    .mark_synced = fm_mark_synced,
    .reset = fm_reset,
    .wipe = fm_wipe,
    .close = fm_close,
};

picl_status picl__forms_open(picl_store **out, const char *profile_dir, const char *state_dir, char *err,
                             size_t errlen)
{
    char path[4096];
    struct stat sb;
    *out = NULL;
    if (!profile_dir || !state_dir || strlen(state_dir) >= 4000)
        return PICL_ERROR_INVALID_ARGUMENT;
    forms_store *f = calloc(1, sizeof *f);
    if (!f)
        return PICL_ERROR_NO_MEMORY;
    f->base.ops = &forms_ops;
    snprintf(f->base.collection, sizeof f->base.collection, "%s", "forms");
    snprintf(f->snapshot, sizeof f->snapshot, "%s/forms-synced.json", state_dir);
    f->kept = json_object();
    picl_status rc =
        f->kept ? picl__profile_open(profile_dir, &f->profile, err, errlen) : PICL_ERROR_NO_MEMORY;
    if (rc != PICL_OK)
        goto fail;
    if ((rc = picl__profile_path(f->profile, "formhistory.sqlite", path, sizeof path)) != PICL_OK)
        goto fail;
    if (stat(path, &sb) != 0) { /* Firefox makes it when a form is first filled in */
        snprintf(err, errlen, "%s does not exist (open the profile in Firefox once)", path);
        rc = PICL_ERROR_NOT_FOUND;
        goto fail;
    }
    if (sqlite3_open_v2(path, &f->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open %s", path);
        rc = PICL_ERROR_DATABASE;
        goto fail;
    }
    sqlite3_busy_timeout(f->db, 2000);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(f->db, "SELECT guid, fieldname, value FROM moz_formhistory LIMIT 0", -1, &q,
                           NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s has no moz_formhistory table: not a form history", path);
        rc = PICL_ERROR_DATABASE;
        goto fail;
    }
    sqlite3_finalize(q);
    *out = &f->base;
    return PICL_OK;
fail:
    fm_close(&f->base);
    return rc;
}
