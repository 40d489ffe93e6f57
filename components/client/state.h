/* SPDX-License-Identifier: MPL-2.0 */
/* state.h -- the component's local state (client.md section 4): endpoints,
 * account, tokens, per-collection sync cursors, the last accepted class map;
 * secrets through NSS SDR, the file written atomically. */
#ifndef PICL_CLIENT_STATE_H
#define PICL_CLIENT_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "picl.h"

typedef struct picl_state {
    char *dir;              /* the state directory (0700) */
    int persist_keys;       /* kB persisted (SDR) or only in memory (strict) */
    char *keyserver;        /* keyserver base URL, "" when unset */
    char *storage_override; /* storage api_endpoint override, "" = from token */
    char *uid;              /* 32 hex, "" when signed out */
    char *email;            /* "" when signed out */
    int verified;
    uint8_t session[32]; /* sessionToken */
    int has_session;
    uint8_t ka[32], kb[32];
    int has_ka, has_kb;
    /* After signing up (unverified): the keyFetchToken and unwrapBKey that
     * fetch kA/kB once the email is verified (client.md section 7).  As
     * secret as kB: SDR-encrypted when persist_keys, else memory only. */
    uint8_t kft[32], unwrap[32];
    int has_kft;
    json_t *storage_token;     /* {id, key, api_endpoint, uid, expires}, memory + SDR */
    json_t *collections;       /* name -> {"lastSync": "T.tt", "syncID": "...", "enabled": bool} */
    uint64_t classmap_version; /* the highest class map version accepted (never goes down) */
    char *classmap_payload;    /* the last class map accepted, as received */
    uint64_t key_epoch;        /* the account's key epoch when kA/kB were fetched, 0 = unknown */
    int64_t clock_offset;      /* seconds the storage node's clock is ahead of ours, as a
                               401 it signed (Hawk tsm) taught; kept so that each
                               sync does not pay the 401 again (|x| <= 1 year) */
    char *global_sync_id;      /* meta/global syncID seen */
    uint8_t forgot[32];        /* forgotPasswordToken between "forgot" and "reset" */
    int has_forgot;
    char *forgot_email;
} picl_state;

/* Loads DIR/state.json (a missing file is an empty state) and decrypts the
 * secrets in it.  Secrets that cannot be decrypted (the key database changed
 * or is locked) are dropped: the user signs in again.  The directory is
 * created 0700.  *out is freed with picl__state_free(). */
picl_status picl__state_load(picl_state **out, const char *dir, int persist_keys);

/* Writes DIR/state.json atomically (0600).  kA, the session and the storage
 * token are SDR-encrypted; kB and the pending keyFetchToken/unwrapBKey too
 * when persist_keys, else they are not written. */
picl_status picl__state_save(const picl_state *st);

/* Forgets the account: secrets wiped, uid/email/tokens/cursors/class map
 * cleared; the endpoints are kept. */
void picl__state_sign_out(picl_state *st);

/* Forgets the pending keyFetchToken and unwrapBKey (wiped). */
void picl__state_drop_kft(picl_state *st);

/* Wipes secrets and frees (NULL-safe). */
void picl__state_free(picl_state *st);

/* Per-collection cursor: lastSync as the server's timestamp text ("0" when
 * never synced); set takes the X-Last-Modified text. */
const char *picl__state_last_sync(const picl_state *st, const char *collection);
picl_status picl__state_set_last_sync(picl_state *st, const char *collection, const char *ts);

/* Replaces a string field (NULL = ""). */
picl_status picl__state_set_str(char **field, const char *value);

#endif
