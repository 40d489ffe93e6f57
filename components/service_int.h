/* SPDX-License-Identifier: MPL-2.0 */
/* service_int.h -- what the files of the service object share.  The files:
 * service_int.c the helpers below, used by all and calling none of the others;
 * service.c the object, its vtable, configuration, classes, stores and sync;
 * service_account.c the account methods; service_acct.c devices, sessions,
 * events and the recovery key; service_devices.c send-tab and tabs;
 * service_undo.c, service_resend.c, service_ffi.c the flat additions.
 * Calls go from the method files to service_int.c only (and from service.c's
 * vtable to the methods): no two files call each other.  Not part of the
 * public API: see picl.h. */
#ifndef PICL_SERVICE_INT_H
#define PICL_SERVICE_INT_H

#include "picl.h"
#include "client/account.h"
#include "client/keyserver_client.h"
#include "client/state.h"
#include "protocol/stretch.h"
#include "client/engine.h"

#define MAX_OBSERVERS 16
#define MAX_CUSTOM 16
static const char *const DEFAULT_COLLECTIONS[] = {"bookmarks", "history", "passwords"};
/* What a Firefox profile syncs by default: also the other devices' and the
 * profile's smaller collections (class A unless moved; each joins the class
 * map, as a new version, when first uploaded).  forms is skipped, and said
 * so, while the profile has no formhistory.sqlite. */
static const char *const PROFILE_DEFAULT_COLLECTIONS[] = {"bookmarks", "history", "passwords", "clients",
                                                          "tabs",      "forms",   "prefs"};

typedef struct observer {
    picl_observer_fn fn;
    void *ctx;
} observer;

typedef struct custom_store {
    char collection[33];
    picl_store_callbacks cb;
    void *ctx;
} custom_store;

typedef struct service {
    picl_service base;
    uint32_t refs;
    picl_state *st;
    char error[512];
    picl_stretch_params floor;
    int floor_set;
    observer obs[MAX_OBSERVERS];
    size_t nobs;
    char *profile_dir;
    char *store_dir;
    custom_store custom[MAX_CUSTOM];
    size_t ncustom;
    char *primary;               /* the profile's primary password, wiped on release */
    int allow_mass_delete;       /* the next syncs may delete more than half a collection */
    char device_name[65];        /* this device's name at sign-in ("" = the host name) */
    char device_type[16];        /* cli, browser, desktop, mobile ("" = cli) */
    picl_stretch_params stretch; /* what passwords are stretched with when stretch_set */
    int stretch_set;
} service;

#define SVC(self) ((service *)(self))

/* ---- service_int.c ---- */

/* Records the outcome: "" after a success, else the message (printf-style;
 * NULL/"" = picl_strerror(st)).  Returns st. */
picl_status picl__svc_done(service *s, picl_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A malloc()ed copy of v ("" for NULL). */
char *picl__svc_dup_out(const char *v);
/* Passes a notification to every observer (a picl_observer_fn). */
void picl__svc_fanout(void *ctx, const char *phase, const char *coll, int64_t d, int64_t t, const char *msg);
/* The stretching floor the client accepts (NULL = the spec's). */
const picl_stretch_params *picl__svc_floor_of(service *s);
/* A keyserver client for the configured URL, or a message saying what is missing. */
picl_status picl__svc_ks_open(service *s, picl_ks_client **c);
/* A message for a failed account flow ("what: reason"); returns st. */
picl_status picl__svc_flow_fail(service *s, picl_status st, const char *what);
/* Deletes all of the signed-in user's data on the storage server (Hawk-signed
 * DELETE <api_endpoint>); PICL_OK also when the account was never verified
 * (no storage token, no data).  ctx is the service (a picl__account_destroy_with
 * hook); on failure the message says the account was not destroyed. */
picl_status picl__svc_delete_storage(void *ctx);
/* kA/kB from the keyFetchToken kept since signing up, once the email is
 * verified; PICL_OK when there is nothing to fetch. */
picl_status picl__svc_ensure_keys(service *s, picl_ks_client *c);
/* Reads the key epoch of the keys just fetched into the state (0 = unknown;
 * c NULL = a client of its own). */
void picl__svc_learn_key_epoch(service *s, picl_ks_client *c);

/* A storage connection: the keyserver client that fetched its token and the
 * storage client (both owned; picl__svc_conn_close frees them). */
typedef struct svc_conn {
    service *s;
    picl_ks_client *ks;
    picl_stc *stc;
} svc_conn;
/* Opens c for the signed-in account (keys, a storage token, the node's clock
 * offset); on failure nothing is left open and the message says why. */
picl_status picl__svc_conn_open(service *s, svc_conn *c);
/* Closes c (keeping the clock offset the client learned); c may be zeroed. */
void picl__svc_conn_close(svc_conn *c);
/* Sets up an engine over c for one call (picl__engine_done after it). */
void picl__svc_engine_setup(service *s, svc_conn *c, picl_engine *e);
/* Runs fn with an authenticated storage connection and an engine set up for
 * one call; returns fn's result or the connection's failure. */
picl_status picl__svc_with_engine(service *s, picl_status (*fn)(service *s, picl_engine *e, void *arg),
                                  void *arg);

/* Names this device's session on the keyserver (best effort, c NULL = a
 * client of its own). */
void picl__svc_name_device(service *s, picl_ks_client *c);
/* POST /v1/account/device {name, type} with the session. */
picl_status picl__svc_post_device(service *s, picl_ks_client *c, const char *name, const char *type);
/* This device's name and type: the configured ones, else $PICL_DEVICE_NAME
 * or the host name, and "cli". */
void picl__svc_device_of(service *s, char name[65], char type[16]);

/* ---- the method files ---- */

/* Completes a password reset keeping kB with a recovery key (service_account.c). */
picl_status picl__svc_reset_rk(picl_service *self, const char *code, const char *new_pw,
                               const char *recovery_key);

/* the device methods of the vtable (service_devices.c) */
picl_status picl__svc_send_tab(picl_service *self, const char *device, const char *url, const char *title);
picl_status picl__svc_remote_tabs(picl_service *self, char **json);
picl_status picl__svc_received_tabs(picl_service *self, char **json);

/* the account methods of the vtable (service_account.c) */
picl_status picl__svc_create(picl_service *self, const char *email, const char *password);
picl_status picl__svc_verify(picl_service *self, const char *code);
picl_status picl__svc_sign_in(picl_service *self, const char *email, const char *password);
picl_status picl__svc_sign_out(picl_service *self);
picl_status picl__svc_change_password(picl_service *self, const char *old_pw, const char *new_pw);
picl_status picl__svc_forgot(picl_service *self, const char *email);
picl_status picl__svc_reset(picl_service *self, const char *code, const char *new_pw);
picl_status picl__svc_destroy(picl_service *self, const char *password);
picl_status picl__svc_get_email(picl_service *self, char **email);
picl_status picl__svc_get_verified(picl_service *self, int *v);
picl_status picl__svc_get_uid(picl_service *self, char **uid);
picl_status picl__svc_status(picl_service *self, char **out);

#endif
