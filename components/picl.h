/* SPDX-License-Identifier: MPL-2.0 */
/* picl.h -- the one public header of libpicl (PiCL: Profile in the Cloud). */
#ifndef PICL_H
#define PICL_H

#include <stddef.h>
#include <stdint.h>

/* picl_status, PICL_OK and the PICL_ERROR_* codes (generated from
 * components/status.def; numbers are ABI). */
#include "picl_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PICL_BUILDING)
#define PICL_EXPORT __attribute__((visibility("default")))
#else
#define PICL_EXPORT
#endif

/* A short English description of a status; never NULL, static storage. */
PICL_EXPORT const char *picl_strerror(picl_status status);

/* Frees a string or buffer returned by libpicl (NULL is fine). */
PICL_EXPORT void picl_free(void *p);

/* ======================================================================
 * The service object: a COM-style interface in C (client.md sections 1-2).
 *
 * A picl_service is an object whose first member points to a table of
 * functions.  Every method returns a picl_status; on failure a message for
 * the user is kept in the object (GetLastError).  No function prints.
 * Strings are UTF-8; strings returned through `char **` are malloc()ed and
 * freed by the caller with picl_free().  An object is used by one thread at
 * a time (the browser binding calls it from one ChromeWorker); different
 * objects are independent.
 *
 * The same methods also exist as flat exported functions
 * (picl_service_sign_in(svc, ...) == svc->vtbl->SignIn(svc, ...)) for
 * FFI callers such as js-ctypes.
 * ==================================================================== */

typedef struct picl_service picl_service;

/* Interface ids, as in XPCOM: {uuid}.  QueryInterface knows two. */
typedef struct picl_iid {
    uint32_t m0;
    uint16_t m1, m2;
    uint8_t m3[8];
} picl_iid;
/* nsISupports {00000000-0000-0000-c000-000000000046} */
#define PICL_ISUPPORTS_IID                                                                                   \
    {                                                                                                        \
        0x00000000, 0x0000, 0x0000, { 0xc0, 0, 0, 0, 0, 0, 0, 0x46 }                                         \
    }
/* nsIPiCLService {5a2b9c1e-3f4d-4e8a-9b6c-2d1f0e7a8c44} (idl/nsIPiCLService.idl) */
/* one line, as tests/test_idl_consistency.py reads it */
/* clang-format off */
#define PICL_ISERVICE_IID {0x5a2b9c1e, 0x3f4d, 0x4e8a, {0x9b, 0x6c, 0x2d, 0x1f, 0x0e, 0x7a, 0x8c, 0x44}}
/* clang-format on */

/* Progress and status notifications.  phase: "download", "apply", "upload",
 * "status", "account", "integrity" (a record refused: message "<id>:
 * <reason> (not applied)"); collection may be ""; done/total count records
 * (total -1 when unknown); message is a short human sentence or "". */
typedef void (*picl_observer_fn)(void *ctx, const char *phase, const char *collection, int64_t done,
                                 int64_t total, const char *message);

/* A store implemented by the caller (the browser's live PlacesUtils /
 * Services.logins hooks).  Records cross as JSON text in the Sync formats of
 * records.md section 3; returned strings are malloc()ed by the callee with
 * the C allocator (the binding uses picl_alloc_string()).  Semantics are
 * those of components/stores/store.h. */
typedef struct picl_store_callbacks {
    picl_status (*changes)(void *ctx, char **records_json);
    picl_status (*all)(void *ctx, char **records_json);
    picl_status (*get)(void *ctx, const char *id, char **record_json); /* "" or "null" = none */
    picl_status (*apply)(void *ctx, const char *records_json);
    picl_status (*mark_synced)(void *ctx, const char *records_json);
    picl_status (*reset)(void *ctx);
    picl_status (*wipe)(void *ctx);
} picl_store_callbacks;

/* Copies s into a buffer libpicl will free (for store callbacks over FFI). */
PICL_EXPORT char *picl_alloc_string(const char *s);

typedef struct picl_service_vtbl {
    /* nsISupports */
    picl_status (*QueryInterface)(picl_service *self, const picl_iid *iid, void **out);
    uint32_t (*AddRef)(picl_service *self);
    uint32_t (*Release)(picl_service *self);

    /* configuration */
    picl_status (*SetKeyserverURL)(picl_service *self, const char *url);
    picl_status (*GetKeyserverURL)(picl_service *self, char **url);
    picl_status (*SetStorageURL)(picl_service *self, const char *url); /* override; "" = from token */
    picl_status (*SetPersistKeys)(picl_service *self, int persist);    /* default 1 */
    picl_status (*SetStretchingFloor)(picl_service *self, uint32_t pbkdf2_rounds_1, uint64_t scrypt_n,
                                      uint32_t scrypt_r, uint32_t scrypt_p, uint32_t pbkdf2_rounds_2);

    /* account (client.md section 2) */
    picl_status (*CreateAccount)(picl_service *self, const char *email, const char *password);
    picl_status (*VerifyEmail)(picl_service *self, const char *code);
    picl_status (*SignIn)(picl_service *self, const char *email, const char *password);
    picl_status (*SignOut)(picl_service *self);
    picl_status (*ChangePassword)(picl_service *self, const char *old_password, const char *new_password);
    picl_status (*ForgotPassword)(picl_service *self, const char *email);
    picl_status (*CompletePasswordReset)(picl_service *self, const char *code, const char *new_password);
    picl_status (*DestroyAccount)(picl_service *self, const char *password);
    picl_status (*GetSignedInEmail)(picl_service *self, char **email); /* "" when signed out */
    picl_status (*GetVerified)(picl_service *self, int *verified);
    picl_status (*GetUid)(picl_service *self, char **uid);
    /* {"email","uid","verified","kA_fp","kB_fp","keyserver","storage",...} */
    picl_status (*GetStatusJSON)(picl_service *self, char **json);

    /* classes (records.md sections 1 and 4) */
    picl_status (*GetCollectionClass)(picl_service *self, const char *collection, char **cls); /* "A"|"B" */
    picl_status (*SetCollectionClass)(picl_service *self, const char *collection, const char *cls);
    /* [{"name","class","generation","lastSync","records"}] */
    picl_status (*GetCollectionsJSON)(picl_service *self, char **json);

    /* stores: where each collection's local data lives */
    picl_status (*UseProfile)(picl_service *self, const char *profile_dir); /* places.sqlite, logins.json */
    picl_status (*UseStoreDir)(picl_service *self, const char *dir);        /* JSON files */
    picl_status (*SetStore)(picl_service *self, const char *collection, const picl_store_callbacks *cb,
                            void *ctx);

    /* sync (client.md section 3); n == 0 syncs every enabled collection;
     * *summary is a JSON text {"collections": {c: {downloaded, applied,
     * uploaded, failed, status}}, "failed": [{collection, id, reason}],
     * "status": ...}.  Records that fail their MAC, kid or id check or do
     * not parse are never applied, the rest is, and the call returns
     * PICL_ERROR_INTEGRITY naming them in "failed" (also told to the
     * observers, phase "integrity").  A password reset on another device
     * is PICL_ERROR_KEYS_CHANGED (sign in again); a missing, forged or
     * replayed class map PICL_ERROR_CLASSMAP; nothing is uploaded then. */
    picl_status (*Sync)(picl_service *self, const char *const *collections, size_t n, char **summary);
    picl_status (*WipeServer)(picl_service *self, const char *collection);
    picl_status (*ResetLocalState)(picl_service *self);

    /* observers */
    picl_status (*AddObserver)(picl_service *self, picl_observer_fn fn, void *ctx);
    picl_status (*RemoveObserver)(picl_service *self, picl_observer_fn fn, void *ctx);

    /* the message of the last failure ("" after a success); owned by the object */
    const char *(*GetLastError)(picl_service *self);

    /* The primary password of the Firefox profile given to UseProfile (its
     * key4.db), kept in memory only and wiped on Release; NULL forgets it.
     * Without it such a profile's passwords cannot be read (PICL_ERROR_STATE). */
    picl_status (*SetPrimaryPassword)(picl_service *self, const char *password);

    /* other devices (the clients and tabs collections).  SendTab puts a
     * displayURI command for url (http or https) into the clients record of
     * device (its id or its name, from GetRemoteTabsJSON); the target opens
     * or lists it once, at its next sync.  GetRemoteTabsJSON reads the
     * server: {"devices": [{"id","name","type","lastSeen","tabs": [{"title",
     * "url","urlHistory","icon","lastUsed"}]}], "skipped": [{"collection",
     * "id","reason"}]} without this device and without devices not seen for
     * 21 days.  GetReceivedTabsJSON: [{"flowID","uri","title","from","at"}]
     * received by this device, oldest first (local, no network). */
    picl_status (*SendTab)(picl_service *self, const char *device, const char *url, const char *title);
    picl_status (*GetRemoteTabsJSON)(picl_service *self, char **json);
    picl_status (*GetReceivedTabsJSON)(picl_service *self, char **json);
} picl_service_vtbl;

struct picl_service {
    const picl_service_vtbl *vtbl;
};

/*
 * Creates a service whose local state (client.md section 4) lives in
 * state_dir (created 0700 if missing).  Inside a host whose NSS is already
 * initialised (Firefox) the host's NSS is used and never shut down; else a
 * private NSS context is opened.  The object starts with one reference;
 * Release() frees it.
 */
PICL_EXPORT picl_status picl_service_create(const char *state_dir, picl_service **out);

/* Flat forms of the methods above, for FFI callers. */
PICL_EXPORT uint32_t picl_service_release(picl_service *s);
PICL_EXPORT const char *picl_service_last_error(picl_service *s);
PICL_EXPORT picl_status picl_service_set_keyserver_url(picl_service *s, const char *url);
PICL_EXPORT picl_status picl_service_get_keyserver_url(picl_service *s, char **url);
PICL_EXPORT picl_status picl_service_set_storage_url(picl_service *s, const char *url);
PICL_EXPORT picl_status picl_service_set_persist_keys(picl_service *s, int persist);
PICL_EXPORT picl_status picl_service_set_stretching_floor(picl_service *s, uint32_t r1, uint64_t n,
                                                          uint32_t r, uint32_t p, uint32_t r2);
PICL_EXPORT picl_status picl_service_create_account(picl_service *s, const char *email, const char *password);
PICL_EXPORT picl_status picl_service_verify_email(picl_service *s, const char *code);
/* Mails the verification code of the signed-in, unverified account again
 * (the keyserver may have stopped before mailing it).  PICL_ERROR_STATE when
 * not signed in or already verified. */
PICL_EXPORT picl_status picl_service_resend_verification(picl_service *s);
PICL_EXPORT picl_status picl_service_sign_in(picl_service *s, const char *email, const char *password);
PICL_EXPORT picl_status picl_service_sign_out(picl_service *s);
PICL_EXPORT picl_status picl_service_change_password(picl_service *s, const char *old_pw, const char *new_pw);
PICL_EXPORT picl_status picl_service_forgot_password(picl_service *s, const char *email);
PICL_EXPORT picl_status picl_service_complete_password_reset(picl_service *s, const char *code,
                                                             const char *new_pw);
PICL_EXPORT picl_status picl_service_destroy_account(picl_service *s, const char *password);
PICL_EXPORT picl_status picl_service_get_signed_in_email(picl_service *s, char **email);
PICL_EXPORT picl_status picl_service_get_verified(picl_service *s, int *verified);
PICL_EXPORT picl_status picl_service_get_status_json(picl_service *s, char **json);
PICL_EXPORT picl_status picl_service_get_collection_class(picl_service *s, const char *c, char **cls);
PICL_EXPORT picl_status picl_service_set_collection_class(picl_service *s, const char *c, const char *cls);
PICL_EXPORT picl_status picl_service_get_collections_json(picl_service *s, char **json);
PICL_EXPORT picl_status picl_service_use_profile(picl_service *s, const char *profile_dir);
PICL_EXPORT picl_status picl_service_use_store_dir(picl_service *s, const char *dir);
PICL_EXPORT picl_status picl_service_set_primary_password(picl_service *s, const char *password);
PICL_EXPORT picl_status picl_service_set_store(picl_service *s, const char *collection,
                                               const picl_store_callbacks *cb, void *ctx);
/* collections_csv: "bookmarks,passwords" or "" for all (easier over FFI) */
PICL_EXPORT picl_status picl_service_sync(picl_service *s, const char *collections_csv, char **summary);
PICL_EXPORT picl_status picl_service_wipe_server(picl_service *s, const char *collection);
PICL_EXPORT picl_status picl_service_reset_local_state(picl_service *s);
PICL_EXPORT picl_status picl_service_add_observer(picl_service *s, picl_observer_fn fn, void *ctx);
PICL_EXPORT picl_status picl_service_remove_observer(picl_service *s, picl_observer_fn fn, void *ctx);
PICL_EXPORT picl_status picl_service_send_tab(picl_service *s, const char *device, const char *url,
                                              const char *title);
PICL_EXPORT picl_status picl_service_get_remote_tabs_json(picl_service *s, char **json);
PICL_EXPORT picl_status picl_service_get_received_tabs_json(picl_service *s, char **json);

/* Undo (the storage server's picl_restore_days extension).
 * SetAllowMassDelete: by default a sync that would delete more than half of
 * a collection's records (and at least 20) changes nothing for that
 * collection, saves a restore point and returns PICL_ERROR_CONFLICT naming
 * it (observers: phase "mass-delete"); allow = 1 lets such deletions
 * through (a restore point is still saved).
 * RestoreCollection: as_of in seconds since 1970 (UTC); *plan_json (may be
 * NULL; free with picl_free) is {"collection", "asOf", "restore": [ids],
 * "delete": [ids], "unreadable", "applied"}.  With apply = 0 nothing is
 * changed (a preview); with apply = 1 the records are uploaded as ordinary
 * changes and the collection is synced, so this device and then every other
 * device follow.  PICL_ERROR_UNSUPPORTED when the server keeps no earlier
 * versions or not that far back. */
PICL_EXPORT picl_status picl_service_set_allow_mass_delete(picl_service *s, int allow);
PICL_EXPORT picl_status picl_service_restore_collection(picl_service *s, const char *collection, double as_of,
                                                        int apply, char **plan_json);

/* ---- devices, security events, recovery key, stretching (client.md 7) ----
 * Each needs a signed-in device unless said otherwise; a device signed out
 * from elsewhere gets PICL_ERROR_TOKEN ("sign in again").
 * set_device: this device's name (1..64 characters, NULL/"" = the host
 *   name) and type ("cli", "browser", "desktop", "mobile"; NULL/"" = cli),
 *   used when it signs in (no network).
 * get_devices_json: {"devices": [{"id","name","type","createdAt",
 *   "lastAccessAt","current"}]} (times in Unix seconds; current marks this
 *   device).  rename_device names this device.  sign_out_device signs the
 *   device with that id out (PICL_ERROR_INVALID_ARGUMENT for an unknown id).
 * get_security_events_json: {"events": [{"type","time","device","address"}]},
 *   newest first, the last 100.
 * create_recovery_key: checks the password (a fresh sign-in), seals kB
 *   under a new random key and stores it on the keyserver, replacing an
 *   earlier one; *key (picl_free) is the key as 13 groups of 4 characters,
 *   shown once: it is not kept anywhere.
 * complete_password_reset_with_recovery_key: like complete_password_reset,
 *   but kB is kept (class-B data survives); the key is used up.  A wrong key
 *   is PICL_ERROR_INVALID_CODE and changes nothing (the code is spent).
 * set_stretching: the password stretching to register (inside the accepted
 *   range); a sign-in to an account stretched more weakly re-stretches it
 *   with these, keeping kB. */
PICL_EXPORT picl_status picl_service_set_device(picl_service *s, const char *name, const char *type);
PICL_EXPORT picl_status picl_service_get_devices_json(picl_service *s, char **json);
PICL_EXPORT picl_status picl_service_rename_device(picl_service *s, const char *name);
PICL_EXPORT picl_status picl_service_sign_out_device(picl_service *s, const char *id);
PICL_EXPORT picl_status picl_service_get_security_events_json(picl_service *s, char **json);
PICL_EXPORT picl_status picl_service_create_recovery_key(picl_service *s, const char *password, char **key);
PICL_EXPORT picl_status picl_service_get_recovery_key_exists(picl_service *s, int *exists);
PICL_EXPORT picl_status picl_service_remove_recovery_key(picl_service *s);
PICL_EXPORT picl_status picl_service_complete_password_reset_with_recovery_key(picl_service *s,
                                                                               const char *code,
                                                                               const char *new_pw,
                                                                               const char *recovery_key);
PICL_EXPORT picl_status picl_service_set_stretching(picl_service *s, uint32_t r1, uint64_t n, uint32_t r,
                                                    uint32_t p, uint32_t r2);

#ifdef __cplusplus
}
#endif
#endif /* PICL_H */
