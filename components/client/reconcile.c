/* SPDX-License-Identifier: MPL-2.0 */
/* reconcile.c -- per-record reconciliation rules of client.md section 3 step 3
 * (see reconcile.h). */
#include "client/reconcile.h"

#include <stdlib.h>
#include <string.h>

int picl__is_tombstone(const json_t *r) { return r && json_is_true(json_object_get(r, "deleted")); }

int picl__bookmark_is_root(const char *id)
{
    static const char *roots[] = {"menu", "toolbar", "unfiled", "mobile", "places"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++)
        if (!strcmp(id, roots[i]))
            return 1;
    return 0;
}

static int valid(const json_t *r)
{
    return !r || (json_is_object(r) && json_is_string(json_object_get(r, "id")));
}

/* ---- passwords ----------------------------------------------------------- */

static json_int_t changed_at(const json_t *r)
{
    json_t *t = json_object_get(r, "timePasswordChanged");
    return json_is_integer(t) ? json_integer_value(t) : 0;
}

/* ---- history --------------------------------------------------------------- */

static int visit_cmp(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t dx = json_integer_value(json_object_get(x, "date")),
               dy = json_integer_value(json_object_get(y, "date"));
    if (dx != dy)
        return dx > dy ? -1 : 1; /* newest first */
    json_int_t tx = json_integer_value(json_object_get(x, "type")),
               ty = json_integer_value(json_object_get(y, "type"));
    return (tx > ty) - (tx < ty);
}

static json_int_t newest_visit(const json_t *r)
{
    json_int_t best = 0;
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(r, "visits"), i, v) {
        json_int_t d = json_integer_value(json_object_get(v, "date"));
        if (d > best)
            best = d;
    }
    return best;
}

static json_t *merge_history(const json_t *local, const json_t *remote)
{
    json_t *out = json_deep_copy(remote);
    if (newest_visit(local) > newest_visit(remote)) {
        json_t *title = json_object_get(local, "title");
        if (title)
            json_object_set(out, "title", title);
    }
    /* union, deduplicated by (date, type) */
    size_t cap = json_array_size(json_object_get(local, "visits")) +
                 json_array_size(json_object_get(remote, "visits"));
    json_t **all = calloc(cap + 1, sizeof *all);
    size_t n = 0, i;
    json_t *v;
    const json_t *sides[2] = {remote, local};
    for (int s = 0; s < 2; s++) {
        json_array_foreach (json_object_get(sides[s], "visits"), i, v) {
            if (!json_is_object(v) || !json_is_integer(json_object_get(v, "date")))
                continue;
            int dup = 0;
            for (size_t j = 0; j < n && !dup; j++)
                dup = visit_cmp(&all[j], &v) == 0;
            if (!dup)
                all[n++] = v;
        }
    }
    qsort(all, n, sizeof *all, visit_cmp);
    json_t *visits = json_array();
    for (size_t j = 0; j < n && j < PICL_HISTORY_MAX_VISITS; j++)
        json_array_append_new(visits, json_pack("{s:I, s:I}", "date",
                                                json_integer_value(json_object_get(all[j], "date")), "type",
                                                json_integer_value(json_object_get(all[j], "type"))));
    free(all);
    json_object_set_new(out, "visits", visits);
    return out;
}

/* ---- bookmarks ------------------------------------------------------------- */

static int array_has_string(const json_t *a, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach (a, i, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), s))
            return 1;
    }
    return 0;
}

/* remote's entries in order, then the local-only ones in local order */
static json_t *union_strings(const json_t *remote, const json_t *local)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach (remote, i, v) {
        if (json_is_string(v) && !array_has_string(out, json_string_value(v)))
            json_array_append(out, v);
    }
    json_array_foreach (local, i, v) {
        if (json_is_string(v) && !array_has_string(out, json_string_value(v)))
            json_array_append(out, v);
    }
    return out;
}

static json_t *merge_bookmark(const json_t *local, const json_t *remote)
{
    json_t *out = json_deep_copy(remote);
    json_t *lc = json_object_get(local, "children"), *rc = json_object_get(remote, "children");
    if (json_is_array(lc) || json_is_array(rc))
        json_object_set_new(out, "children", union_strings(rc, lc));
    json_t *lt = json_object_get(local, "tags"), *rt = json_object_get(remote, "tags");
    if (json_is_array(lt) || json_is_array(rt))
        json_object_set_new(out, "tags", union_strings(rt, lt));
    return out;
}

/* ---- dispatcher ------------------------------------------------------------ */

picl_status picl__reconcile(const char *collection, const json_t *local, const json_t *remote, json_t **apply,
                            json_t **upload)
{
    *apply = *upload = NULL;
    if (!valid(local) || !valid(remote))
        return PICL_ERROR_INVALID_ARGUMENT;
    if (local && remote &&
        strcmp(json_string_value(json_object_get(local, "id")),
               json_string_value(json_object_get(remote, "id"))))
        return PICL_ERROR_INVALID_ARGUMENT;
    if (!local && !remote)
        return PICL_OK;
    if (!local) {
        *apply = json_incref((json_t *)remote);
        return PICL_OK;
    }
    if (!remote) {
        *upload = json_incref((json_t *)local);
        return PICL_OK;
    }
    int ld = picl__is_tombstone(local), rd = picl__is_tombstone(remote);
    if (ld && rd)
        return PICL_OK; /* both deleted */
    if (ld) {           /* deleted here, edited there: keep the edit */
        *apply = json_incref((json_t *)remote);
        return PICL_OK;
    }
    if (rd) { /* edited here, deleted there: keep the edit, resurrect it */
        *upload = json_incref((json_t *)local);
        return PICL_OK;
    }
    if (json_equal(local, remote))
        return PICL_OK;

    json_t *merged;
    if (!strcmp(collection, "passwords")) {
        merged = json_incref((json_t *)(changed_at(local) > changed_at(remote) ? local : remote));
    } else if (!strcmp(collection, "history")) {
        merged = merge_history(local, remote);
    } else if (!strcmp(collection, "bookmarks")) {
        merged = merge_bookmark(local, remote);
    } else {
        merged = json_incref((json_t *)remote);
    }
    if (!merged)
        return PICL_ERROR_NO_MEMORY;
    if (!json_equal(merged, local))
        *apply = json_incref(merged);
    if (!json_equal(merged, remote))
        *upload = json_incref(merged);
    json_decref(merged);
    return PICL_OK;
}
