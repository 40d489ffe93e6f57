/* SPDX-License-Identifier: MPL-2.0 */
/* filestore.c -- the JSON-file store: DIR/<collection>.json, a JSON array of
 * cleartext records edited by people and scripts (client.md section 5). */
#include "stores/store.h"
#include "stores/fileutil.h"
#include "crypto/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FILESTORE_MAX (256u * 1024u * 1024u)

typedef struct filestore {
    picl_store base;
    char path[4096];   /* DIR/<collection>.json */
    char synced[4096]; /* DIR/.picl-<collection>.synced: id -> record as last synced */
} filestore;

/* Loads the collection file as id -> record.  Missing file = empty. */
static picl_status load_records(filestore *f, json_t **out)
{
    *out = NULL;
    char *text;
    size_t len;
    picl_status st = picl__read_file(f->path, FILESTORE_MAX, &text, &len);
    if (st == PICL_ERROR_NOT_FOUND) {
        *out = json_object();
        return *out ? PICL_OK : PICL_ERROR_NO_MEMORY;
    }
    if (st != PICL_OK)
        return picl__store_fail(&f->base, st, "cannot read %s", f->path);
    json_error_t err;
    json_t *a = json_loadb(text, len, 0, &err);
    free(text);
    if (!json_is_array(a)) {
        json_decref(a);
        return picl__store_fail(&f->base, PICL_ERROR_ENCODING,
                                "%s: not a JSON array of records (%s, line %d)", f->path, err.text, err.line);
    }
    json_t *m = json_object();
    size_t i;
    json_t *r;
    json_array_foreach (a, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        if (!json_is_object(r) || !id || !*id || json_object_get(m, id)) {
            json_decref(a);
            json_decref(m);
            return picl__store_fail(&f->base, PICL_ERROR_ENCODING,
                                    "%s: record %zu has no id, or a duplicate id", f->path, i);
        }
        json_object_set(m, id, r);
    }
    json_decref(a);
    *out = m;
    return PICL_OK;
}

static picl_status load_synced(filestore *f, json_t **out)
{
    char *text;
    size_t len;
    picl_status st = picl__read_file(f->synced, FILESTORE_MAX, &text, &len);
    if (st == PICL_ERROR_NOT_FOUND) {
        *out = json_object();
        return PICL_OK;
    }
    if (st != PICL_OK)
        return picl__store_fail(&f->base, st, "cannot read %s", f->synced);
    *out = json_loadb(text, len, 0, NULL);
    free(text);
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return picl__store_fail(&f->base, PICL_ERROR_ENCODING, "%s is corrupt", f->synced);
    }
    return PICL_OK;
}

static picl_status save_map(filestore *f, const char *path, const json_t *m, int as_array)
{
    json_t *doc = (json_t *)m;
    json_t *a = NULL;
    if (as_array) {
        /* keep a stable order: by id */
        a = json_array();
        const char **ids = malloc((json_object_size(m) + 1) * sizeof *ids);
        size_t n = 0;
        const char *id;
        json_t *r;
        json_object_foreach ((json_t *)m, id, r)
            ids[n++] = id;
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && strcmp(ids[j - 1], ids[j]) > 0; j--) {
                const char *t = ids[j];
                ids[j] = ids[j - 1];
                ids[j - 1] = t;
            }
        for (size_t i = 0; i < n; i++)
            json_array_append(a, json_object_get(m, ids[i]));
        free(ids);
        doc = a;
    }
    char *text = picl__json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(a);
    if (!text)
        return PICL_ERROR_NO_MEMORY;
    size_t len = strlen(text);
    text[len] = 0;
    char *withnl = realloc(text, len + 2);
    if (withnl) {
        text = withnl;
        text[len++] = '\n';
        text[len] = 0;
    }
    picl_status st = picl__write_file_atomic(path, text, len, 0600);
    free(text);
    if (st != PICL_OK)
        return picl__store_fail(&f->base, st, "cannot write %s", path);
    return PICL_OK;
}

static json_t *tombstone(const char *id) { return json_pack("{s:s, s:b}", "id", id, "deleted", 1); }

static picl_status fs_changes(picl_store *s, json_t **out)
{
    filestore *f = (filestore *)s;
    json_t *cur = NULL, *synced = NULL;
    *out = NULL;
    picl_status st = load_records(f, &cur);
    if (st == PICL_OK)
        st = load_synced(f, &synced);
    if (st == PICL_OK) {
        json_t *a = json_array();
        const char *id;
        json_t *r;
        json_object_foreach (cur, id, r) {
            if (!json_equal(r, json_object_get(synced, id)))
                json_array_append(a, r);
        }
        json_object_foreach (synced, id, r) {
            if (!json_object_get(cur, id))
                json_array_append_new(a, tombstone(id));
        }
        *out = a;
    }
    json_decref(cur);
    json_decref(synced);
    return st;
}

static picl_status fs_all(picl_store *s, json_t **out)
{
    filestore *f = (filestore *)s;
    json_t *cur;
    *out = NULL;
    picl_status st = load_records(f, &cur);
    if (st != PICL_OK)
        return st;
    json_t *a = json_array();
    const char *id;
    json_t *r;
    json_object_foreach (cur, id, r)
        json_array_append(a, r);
    json_decref(cur);
    *out = a;
    return PICL_OK;
}

static picl_status fs_get(picl_store *s, const char *id, json_t **out)
{
    filestore *f = (filestore *)s;
    json_t *cur;
    *out = NULL;
    picl_status st = load_records(f, &cur);
    if (st != PICL_OK)
        return st;
    *out = json_incref(json_object_get(cur, id));
    json_decref(cur);
    return PICL_OK;
}

static picl_status fs_apply(picl_store *s, const json_t *records)
{
    filestore *f = (filestore *)s;
    json_t *cur = NULL, *synced = NULL;
    picl_status st = load_records(f, &cur);
    if (st == PICL_OK)
        st = load_synced(f, &synced);
    if (st == PICL_OK && !json_is_array(records))
        st = picl__store_fail(s, PICL_ERROR_INVALID_ARGUMENT, "records must be an array");
    size_t i;
    json_t *r;
    if (st == PICL_OK) {
        json_array_foreach (records, i, r) {
            const char *id = json_string_value(json_object_get(r, "id"));
            /* "" too: the file would hold a record its own reader refuses,
             * and every later sync of the directory would fail */
            if (!json_is_object(r) || !id || !*id) {
                st = picl__store_fail(s, PICL_ERROR_INVALID_ARGUMENT, "record %zu has no id", i);
                break;
            }
            if (json_is_true(json_object_get(r, "deleted"))) {
                json_object_del(cur, id);
                json_object_del(synced, id);
            } else {
                json_object_set(cur, id, r);
                json_object_set(synced, id, r);
            }
        }
    }
    /* the records file first: a crash before the second write only makes
     * applied records look like local changes, which re-uploads them */
    if (st == PICL_OK)
        st = save_map(f, f->path, cur, 1);
    if (st == PICL_OK)
        st = save_map(f, f->synced, synced, 0);
    json_decref(cur);
    json_decref(synced);
    return st;
}

static picl_status fs_mark_synced(picl_store *s, const json_t *records)
{
    filestore *f = (filestore *)s;
    json_t *synced;
    picl_status st = load_synced(f, &synced);
    if (st != PICL_OK)
        return st;
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        if (!id)
            continue;
        if (json_is_true(json_object_get(r, "deleted")))
            json_object_del(synced, id);
        else
            json_object_set(synced, id, r);
    }
    st = save_map(f, f->synced, synced, 0);
    json_decref(synced);
    return st;
}

static picl_status fs_reset(picl_store *s)
{
    filestore *f = (filestore *)s;
    json_t *empty = json_object();
    picl_status st = save_map(f, f->synced, empty, 0);
    json_decref(empty);
    return st;
}

static picl_status fs_wipe(picl_store *s)
{
    filestore *f = (filestore *)s;
    json_t *empty = json_object();
    picl_status st = save_map(f, f->path, empty, 1);
    if (st == PICL_OK)
        st = save_map(f, f->synced, empty, 0);
    json_decref(empty);
    return st;
}

static void fs_close(picl_store *s) { free(s); }

static const picl_store_ops fs_ops = {
    .changes = fs_changes,
    .all = fs_all,
    .get = fs_get,
    .apply = fs_apply,
    .mark_synced = fs_mark_synced,
    .reset = fs_reset,
    .wipe = fs_wipe,
    .close = fs_close,
};

picl_status picl__filestore_open(picl_store **out, const char *dir, const char *collection)
{
    *out = NULL;
    if (!dir || !collection || !*collection || strchr(collection, '/') || strlen(collection) > 32)
        return PICL_ERROR_INVALID_ARGUMENT;
    filestore *f = calloc(1, sizeof *f);
    if (!f)
        return PICL_ERROR_NO_MEMORY;
    f->base.ops = &fs_ops;
    snprintf(f->base.collection, sizeof f->base.collection, "%s", collection);
    int a = snprintf(f->path, sizeof f->path, "%s/%s.json", dir, collection);
    int b = snprintf(f->synced, sizeof f->synced, "%s/.picl-%s.synced", dir, collection);
    if (a < 0 || b < 0 || (size_t)a >= sizeof f->path || (size_t)b >= sizeof f->synced) {
        free(f);
        return PICL_ERROR_TOO_LARGE;
    }
    /* a malformed file is reported at open, before any sync work */
    json_t *probe;
    picl_status st = load_records(f, &probe);
    if (st != PICL_OK) {
        free(f);
        return st;
    }
    json_decref(probe);
    *out = &f->base;
    return PICL_OK;
}
