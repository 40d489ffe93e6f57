/* SPDX-License-Identifier: MPL-2.0 */
/* service_undo.c -- the undo methods of the service: the mass-deletion guard's switch and restoring a collection as it was (storage extension picl_restore_days). */
#include "service_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client/engine.h"
#include "client/records.h"
#include "protocol/synctime.h"

PICL_EXPORT picl_status picl_service_set_allow_mass_delete(picl_service *self, int allow)
{
    service *s = SVC(self);
    s->allow_mass_delete = allow != 0;
    return picl__svc_done(s, PICL_OK, NULL);
}

typedef struct restore_arg {
    const char *collection;
    int64_t as_of;
    int apply;
    json_t *plan;
} restore_arg;

static picl_status run_restore(service *s, picl_engine *e, void *arg)
{
    restore_arg *a = arg;
    return picl__engine_restore(e, a->collection, a->as_of, a->apply, a->plan);
}

PICL_EXPORT picl_status picl_service_restore_collection(picl_service *self, const char *collection,
                                                        double as_of, int apply, char **plan_json)
{
    service *s = SVC(self);
    picl_status st = PICL_OK;
    json_t *plan = NULL;
    if (plan_json)
        *plan_json = NULL;
    if (!collection || !picl__collection_name_ok(collection) || !strcmp(collection, "meta") ||
        !strcmp(collection, "crypto"))
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid collection name");
    if (!isfinite(as_of) || as_of < 0 || as_of > 1e11)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "invalid time to restore to");
    if (!(plan = json_object()))
        return picl__svc_done(s, PICL_ERROR_NO_MEMORY, NULL);
    restore_arg a = {collection, picl__synctime_from_seconds(as_of, 0), apply != 0, plan};
    st = picl__svc_with_engine(s, run_restore, &a);
    if (st != PICL_OK)
        goto done;
    /* this device follows at once, through an ordinary sync */
    if (apply && json_is_true(json_object_get(plan, "applied"))) {
        /* the guard stays as set: the restore's own deletions came from the
         * server, only this device's pending deletions could trip it */
        st = s->base.vtbl->Sync(&s->base, &collection, 1, NULL);
        if (st != PICL_OK)
            goto done;
    }
    if (plan_json && !(*plan_json = json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS)))
        st = picl__svc_done(s, PICL_ERROR_NO_MEMORY, NULL);
    else
        st = picl__svc_done(s, PICL_OK, NULL);
done:
    json_decref(plan);
    return st;
}
