/* SPDX-License-Identifier: MPL-2.0 */
/* service_ffi.c -- the flat functions of picl.h (one per method of the
 * service object) for FFI callers such as js-ctypes, and the allocators. */
#include "picl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void picl_free(void *p) { free(p); }

char *picl_alloc_string(const char *s) { return s ? strdup(s) : NULL; }

#define CALL(svc, m, ...) ((svc) ? (svc)->vtbl->m((svc), __VA_ARGS__) : PICL_ERROR_INVALID_ARGUMENT)
#define CALL0(svc, m) ((svc) ? (svc)->vtbl->m((svc)) : PICL_ERROR_INVALID_ARGUMENT)

uint32_t picl_service_release(picl_service *s) { return s ? s->vtbl->Release(s) : 0; }
const char *picl_service_last_error(picl_service *s) { return s ? s->vtbl->GetLastError(s) : "no service"; }
picl_status picl_service_set_keyserver_url(picl_service *s, const char *u)
{
    return CALL(s, SetKeyserverURL, u);
}
picl_status picl_service_get_keyserver_url(picl_service *s, char **u) { return CALL(s, GetKeyserverURL, u); }
picl_status picl_service_set_storage_url(picl_service *s, const char *u) { return CALL(s, SetStorageURL, u); }
picl_status picl_service_set_persist_keys(picl_service *s, int p) { return CALL(s, SetPersistKeys, p); }
picl_status picl_service_set_stretching_floor(picl_service *s, uint32_t r1, uint64_t n, uint32_t r,
                                              uint32_t p, uint32_t r2)
{
    return CALL(s, SetStretchingFloor, r1, n, r, p, r2);
}
picl_status picl_service_create_account(picl_service *s, const char *e, const char *p)
{
    return CALL(s, CreateAccount, e, p);
}
picl_status picl_service_verify_email(picl_service *s, const char *c) { return CALL(s, VerifyEmail, c); }
picl_status picl_service_sign_in(picl_service *s, const char *e, const char *p)
{
    return CALL(s, SignIn, e, p);
}
picl_status picl_service_sign_out(picl_service *s) { return CALL0(s, SignOut); }
picl_status picl_service_change_password(picl_service *s, const char *o, const char *n)
{
    return CALL(s, ChangePassword, o, n);
}
picl_status picl_service_forgot_password(picl_service *s, const char *e)
{
    return CALL(s, ForgotPassword, e);
}
picl_status picl_service_complete_password_reset(picl_service *s, const char *c, const char *n)
{
    return CALL(s, CompletePasswordReset, c, n);
}
picl_status picl_service_destroy_account(picl_service *s, const char *p)
{
    return CALL(s, DestroyAccount, p);
}
picl_status picl_service_get_signed_in_email(picl_service *s, char **e)
{
    return CALL(s, GetSignedInEmail, e);
}
picl_status picl_service_get_verified(picl_service *s, int *v) { return CALL(s, GetVerified, v); }
picl_status picl_service_get_status_json(picl_service *s, char **j) { return CALL(s, GetStatusJSON, j); }
picl_status picl_service_get_collection_class(picl_service *s, const char *c, char **k)
{
    return CALL(s, GetCollectionClass, c, k);
}
picl_status picl_service_set_collection_class(picl_service *s, const char *c, const char *k)
{
    return CALL(s, SetCollectionClass, c, k);
}
picl_status picl_service_get_collections_json(picl_service *s, char **j)
{
    return CALL(s, GetCollectionsJSON, j);
}
picl_status picl_service_use_profile(picl_service *s, const char *d) { return CALL(s, UseProfile, d); }
picl_status picl_service_use_store_dir(picl_service *s, const char *d) { return CALL(s, UseStoreDir, d); }
picl_status picl_service_set_primary_password(picl_service *s, const char *p)
{
    return CALL(s, SetPrimaryPassword, p);
}
picl_status picl_service_set_store(picl_service *s, const char *c, const picl_store_callbacks *cb, void *ctx)
{
    return CALL(s, SetStore, c, cb, ctx);
}
picl_status picl_service_wipe_server(picl_service *s, const char *c) { return CALL(s, WipeServer, c); }
picl_status picl_service_reset_local_state(picl_service *s) { return CALL0(s, ResetLocalState); }
picl_status picl_service_add_observer(picl_service *s, picl_observer_fn f, void *c)
{
    return CALL(s, AddObserver, f, c);
}
picl_status picl_service_remove_observer(picl_service *s, picl_observer_fn f, void *c)
{
    return CALL(s, RemoveObserver, f, c);
}
picl_status picl_service_send_tab(picl_service *s, const char *d, const char *u, const char *t)
{
    return CALL(s, SendTab, d, u, t);
}
picl_status picl_service_get_remote_tabs_json(picl_service *s, char **j)
{
    return CALL(s, GetRemoteTabsJSON, j);
}
picl_status picl_service_get_received_tabs_json(picl_service *s, char **j)
{
    return CALL(s, GetReceivedTabsJSON, j);
}

picl_status picl_service_sync(picl_service *s, const char *csv, char **summary)
{
    if (!s)
        return PICL_ERROR_INVALID_ARGUMENT;
    const char *list[64];
    char buf[2048];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s", csv ? csv : "");
    if (strlen(csv ? csv : "") >= sizeof buf)
        return PICL_ERROR_TOO_LARGE;
    char *p = buf;
    while (*p && n < 64) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        if (*p)
            list[n++] = p;
        if (!comma)
            break;
        p = comma + 1;
    }
    return s->vtbl->Sync(s, list, n, summary);
}
