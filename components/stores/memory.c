/* SPDX-License-Identifier: MPL-2.0 */
/* memory.c -- the in-memory store (tests) and the helpers every store shares. */
#include "stores/store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

picl_status picl__store_fail(picl_store *s, picl_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, ap);
    va_end(ap);
    return st;
}

typedef struct memstore {
    picl_store base;
    json_t *records; /* id -> live record */
    json_t *dirty;   /* id -> record or tombstone, the pending local changes */
} memstore;

static json_t *tombstone(const char *id) { return json_pack("{s:s, s:b}", "id", id, "deleted", 1); }

static int is_tombstone(const json_t *r) { return json_is_true(json_object_get(r, "deleted")); }

static picl_status mem_changes(picl_store *s, json_t **out)
{
    memstore *m = (memstore *)s;
    json_t *a = json_array();
    const char *id;
    json_t *r;
    json_object_foreach (m->dirty, id, r)
        json_array_append(a, r);
    *out = a;
    return a ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status mem_all(picl_store *s, json_t **out)
{
    memstore *m = (memstore *)s;
    json_t *a = json_array();
    const char *id;
    json_t *r;
    json_object_foreach (m->records, id, r)
        json_array_append(a, r);
    *out = a;
    return a ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status mem_get(picl_store *s, const char *id, json_t **out)
{
    memstore *m = (memstore *)s;
    *out = json_incref(json_object_get(m->records, id));
    return PICL_OK;
}

/* Validates a batch: objects with a string id. */
static picl_status check_records(picl_store *s, const json_t *records)
{
    if (!json_is_array(records))
        return picl__store_fail(s, PICL_ERROR_INVALID_ARGUMENT, "records must be an array");
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        if (!json_is_object(r) || !json_is_string(json_object_get(r, "id")))
            return picl__store_fail(s, PICL_ERROR_INVALID_ARGUMENT, "record %zu has no id", i);
    }
    return PICL_OK;
}

static picl_status mem_apply(picl_store *s, const json_t *records)
{
    memstore *m = (memstore *)s;
    picl_status st = check_records(s, records);
    if (st != PICL_OK)
        return st;
    /* shallow copies, all made before the store changes (all or nothing):
     * the record's own fields (a caller may set them afterwards), its values
     * shared (nothing changes them in place; get() hands out references) */
    json_t *copies = json_array();
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        if (!copies || json_array_append_new(copies, is_tombstone(r) ? json_null() : json_copy(r)) != 0) {
            st = picl__store_fail(s, PICL_ERROR_NO_MEMORY, "out of memory");
            goto done;
        }
    }
    json_array_foreach (records, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        if (is_tombstone(r))
            json_object_del(m->records, id);
        else
            json_object_set(m->records, id, json_array_get(copies, i));
    }
done:
    json_decref(copies);
    return st;
}

static picl_status mem_mark_synced(picl_store *s, const json_t *records)
{
    memstore *m = (memstore *)s;
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        json_t *cur = id ? json_object_get(m->dirty, id) : NULL;
        /* only if unchanged since it was reported */
        if (cur && json_equal(cur, r))
            json_object_del(m->dirty, id);
    }
    return PICL_OK;
}

static picl_status mem_reset(picl_store *s)
{
    memstore *m = (memstore *)s;
    json_object_clear(m->dirty);
    const char *id;
    json_t *r;
    json_object_foreach (m->records, id, r)
        json_object_set(m->dirty, id, r);
    return PICL_OK;
}

static picl_status mem_wipe(picl_store *s)
{
    memstore *m = (memstore *)s;
    json_object_clear(m->records);
    json_object_clear(m->dirty);
    return PICL_OK;
}

static void mem_close(picl_store *s)
{
    memstore *m = (memstore *)s;
    json_decref(m->records);
    json_decref(m->dirty);
    free(m);
}

static const picl_store_ops mem_ops = {
    .changes = mem_changes,
    .all = mem_all,
    .get = mem_get,
    .apply = mem_apply,
    .mark_synced = mem_mark_synced,
    .reset = mem_reset,
    .wipe = mem_wipe,
    .close = mem_close,
};

picl_status picl__memstore_open(picl_store **out, const char *collection)
{
    *out = NULL;
    memstore *m = calloc(1, sizeof *m);
    if (!m)
        return PICL_ERROR_NO_MEMORY;
    m->base.ops = &mem_ops;
    snprintf(m->base.collection, sizeof m->base.collection, "%s", collection);
    m->records = json_object();
    m->dirty = json_object();
    if (!m->records || !m->dirty) {
        mem_close(&m->base);
        return PICL_ERROR_NO_MEMORY;
    }
    *out = &m->base;
    return PICL_OK;
}

picl_status picl__memstore_put(picl_store *s, const json_t *record)
{
    memstore *m = (memstore *)s;
    const char *id = json_string_value(json_object_get(record, "id"));
    if (!json_is_object(record) || !id)
        return picl__store_fail(s, PICL_ERROR_INVALID_ARGUMENT, "record has no id");
    json_object_set_new(m->records, id, json_deep_copy(record));
    json_object_set_new(m->dirty, id, json_deep_copy(record));
    return PICL_OK;
}

picl_status picl__memstore_delete(picl_store *s, const char *id)
{
    memstore *m = (memstore *)s;
    if (!json_object_get(m->records, id))
        return picl__store_fail(s, PICL_ERROR_NOT_FOUND, "no record %s", id);
    json_object_del(m->records, id);
    json_object_set_new(m->dirty, id, tombstone(id));
    return PICL_OK;
}
