/* SPDX-License-Identifier: MPL-2.0 */
/* callback.c -- a store implemented by the caller through picl_store_callbacks
 * (the browser's live PlacesUtils / Services.logins hooks over js-ctypes). */
#include "stores/store.h"
#include "crypto/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cbstore {
    picl_store base;
    picl_store_callbacks cb;
    void *ctx;
} cbstore;

/* Parses a callee-allocated JSON text (freed here). */
static picl_status take_json(picl_store *s, picl_status st, char *text, json_t **out, int want_array)
{
    *out = NULL;
    if (st != PICL_OK) {
        free(text);
        return picl__store_fail(s, st, "the %s store failed: %s", s->collection, picl_strerror(st));
    }
    if (!text || !*text || !strcmp(text, "null")) {
        free(text);
        if (want_array)
            return picl__store_fail(s, PICL_ERROR_PROTOCOL, "the %s store returned nothing", s->collection);
        return PICL_OK;
    }
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    free(text);
    if (!j || (want_array ? !json_is_array(j) : !json_is_object(j))) {
        json_decref(j);
        return picl__store_fail(s, PICL_ERROR_PROTOCOL, "the %s store returned malformed JSON",
                                s->collection);
    }
    *out = j;
    return PICL_OK;
}

static picl_status cb_changes(picl_store *s, json_t **out)
{
    cbstore *c = (cbstore *)s;
    char *text = NULL;
    picl_status st = c->cb.changes(c->ctx, &text); /* before text is read */
    return take_json(s, st, text, out, 1);
}

static picl_status cb_all(picl_store *s, json_t **out)
{
    cbstore *c = (cbstore *)s;
    char *text = NULL;
    picl_status st = c->cb.all(c->ctx, &text);
    return take_json(s, st, text, out, 1);
}

static picl_status cb_get(picl_store *s, const char *id, json_t **out)
{
    cbstore *c = (cbstore *)s;
    char *text = NULL;
    if (!c->cb.get) {
        *out = NULL;
        return PICL_OK;
    }
    picl_status st = c->cb.get(c->ctx, id, &text);
    return take_json(s, st, text, out, 0);
}

static picl_status pass_json(picl_store *s, picl_status (*fn)(void *, const char *), void *ctx,
                             const json_t *j)
{
    char *text = picl__json_dumps(j, JSON_COMPACT);
    if (!text)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = fn(ctx, text);
    free(text);
    if (st != PICL_OK)
        return picl__store_fail(s, st, "the %s store failed: %s", s->collection, picl_strerror(st));
    return PICL_OK;
}

static picl_status cb_apply(picl_store *s, const json_t *r)
{
    cbstore *c = (cbstore *)s;
    return pass_json(s, c->cb.apply, c->ctx, r);
}

static picl_status cb_mark(picl_store *s, const json_t *r)
{
    cbstore *c = (cbstore *)s;
    return pass_json(s, c->cb.mark_synced, c->ctx, r);
}

static picl_status simple(picl_store *s, picl_status (*fn)(void *), void *ctx)
{
    picl_status st = fn ? fn(ctx) : PICL_OK;
    if (st != PICL_OK)
        return picl__store_fail(s, st, "the %s store failed: %s", s->collection, picl_strerror(st));
    return PICL_OK;
}

static picl_status cb_reset(picl_store *s)
{
    cbstore *c = (cbstore *)s;
    return simple(s, c->cb.reset, c->ctx);
}

static picl_status cb_wipe(picl_store *s)
{
    cbstore *c = (cbstore *)s;
    return simple(s, c->cb.wipe, c->ctx);
}

static void cb_close(picl_store *s) { free(s); }

static const picl_store_ops cb_ops = {
    .changes = cb_changes,
    .all = cb_all,
    .get = cb_get,
    .apply = cb_apply,
    .mark_synced = cb_mark,
    .reset = cb_reset,
    .wipe = cb_wipe,
    .close = cb_close,
};

picl_status picl__cbstore_open(picl_store **out, const char *collection, const picl_store_callbacks *cb,
                               void *ctx)
{
    *out = NULL;
    if (!cb || !cb->changes || !cb->all || !cb->apply || !cb->mark_synced || !collection || !*collection ||
        strlen(collection) > 32)
        return PICL_ERROR_INVALID_ARGUMENT;
    cbstore *c = calloc(1, sizeof *c);
    if (!c)
        return PICL_ERROR_NO_MEMORY;
    c->base.ops = &cb_ops;
    snprintf(c->base.collection, sizeof c->base.collection, "%s", collection);
    c->cb = *cb;
    c->ctx = ctx;
    *out = &c->base;
    return PICL_OK;
}
