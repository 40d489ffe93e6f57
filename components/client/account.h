/* SPDX-License-Identifier: MPL-2.0 */
/* account.h -- the account flows of client.md section 2 on top of the
 * keyserver client: create, verify, sign in, keys, password change,
 * forgotten password, sign out, destroy. */
#ifndef PICL_CLIENT_ACCOUNT_H
#define PICL_CLIENT_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "client/keyserver_client.h"
#include "picl.h"
#include "protocol/stretch.h"

/*
 * Passwords and emails are raw bytes (no normalisation).  `params` are the
 * stretching parameters to register at create/change/reset (NULL = the
 * spec's defaults); `floor` is the minimum the client accepts from
 * /auth/start (NULL = the default floor; tests may lower it, production
 * never does).  Every flow wipes its intermediate secrets on every path.
 *
 * A picl_account holds the result of a sign-in; it contains secrets (the
 * sessionToken, kA and kB): the caller wipes it with picl__account_wipe().
 */
typedef struct picl_account {
    char uid[33]; /* hex */
    char email[256];
    size_t email_len;
    int verified;
    int have_session;
    uint8_t session_token[32];
    int have_keys; /* kA and kB fetched (needs a verified email) */
    uint8_t ka[32];
    uint8_t kb[32];
    /* An unverified sign-in keeps what fetches the keys later without the
     * password (client.md section 7): the keyFetchToken (24 h, single use)
     * and the password's unwrapBKey.  Secrets like kB. */
    int have_kft;
    uint8_t kft[32];
    uint8_t unwrap[32];
    picl_stretch_params params; /* the account's stretching at this sign-in */
} picl_account;

void picl__account_wipe(picl_account *a);

/* Fingerprint hex(SHA-256(key)[0:16]) into out (33 bytes).  For kB it is
 * Sync's X-Client-State. */
picl_status picl__account_fingerprint(char out[33], const uint8_t key[32]);

/* Creates the account: random salts, stretch, verifier; the server mails a
 * verification code.  uid receives the hex uid. */
picl_status picl__account_create(picl_ks_client *c, const char *email, size_t emaillen, const char *password,
                                 size_t pwlen, const picl_stretch_params *params, char uid[33]);

/* Verifies the email with the code from the mail (hex). */
picl_status picl__account_verify(picl_ks_client *c, const char *uid, const char *code);

/*
 * Signs in: auth/start -> stretch (server's parameters, refused below the
 * floor with PICL_ERROR_WEAK_PARAMS, unknown type PICL_ERROR_UNSUPPORTED)
 * -> SRP -> auth/finish -> session/create -> (when verified) account/keys,
 * kB = wrapKb xor unwrapBKey.  An unverified account signs in with
 * have_keys = 0 and have_kft = 1 (keyFetchToken and unwrapBKey kept for
 * picl__account_keys_from_token()).  *out is filled on PICL_OK, zeroed
 * otherwise.
 */
picl_status picl__account_login(picl_ks_client *c, const char *email, size_t emaillen, const char *password,
                                size_t pwlen, const picl_stretch_params *floor, picl_account *out);

/* Fetches kA and kB with a keyFetchToken kept from an unverified sign-in:
 * account/keys, kB = wrapKb xor unwrap.  The server consumes the token even
 * when it fails, so call it only once the email is known to be verified.
 * PICL_ERROR_TOKEN: the token expired or was used (the password is needed);
 * PICL_ERROR_UNVERIFIED: still unverified.  ka/kb are zeroed on failure. */
picl_status picl__account_keys_from_token(picl_ks_client *c, const uint8_t kft[32], const uint8_t unwrap[32],
                                          uint8_t ka[32], uint8_t kb[32]);

/* session/destroy, then wipes the session from *a. */
picl_status picl__account_logout(picl_ks_client *c, picl_account *a);

/* Changes the password keeping kB: signs in with the old one, password/
 * change/start, account/keys, re-wraps kB under the new password and
 * account/reset.  Every old token is revoked by the server; *out (may be
 * NULL) receives a fresh sign-in with the new password. */
picl_status picl__account_change_password(picl_ks_client *c, const char *email, size_t emaillen,
                                          const char *old_pw, size_t oldlen, const char *new_pw,
                                          size_t newlen, const picl_stretch_params *params,
                                          const picl_stretch_params *floor, picl_account *out);

/* Forgotten password, step 1: mails a reset code; forgot_token receives the
 * forgotPasswordToken (a secret the caller keeps for step 2). */
picl_status picl__account_forgot_start(picl_ks_client *c, const char *email, size_t emaillen,
                                       uint8_t forgot_token[32]);

/* Step 2: verifies the 8-digit code, then account/reset with a zero wrapKb
 * so the server makes a fresh one: kB changes, kA stays. */
picl_status picl__account_forgot_finish(picl_ks_client *c, const uint8_t forgot_token[32], const char *code,
                                        const char *email, size_t emaillen, const char *new_pw, size_t newlen,
                                        const picl_stretch_params *params);

/* Step 2 with a recovery key (keyserver.md section 9): verifies the code,
 * fetches recoveryData for the key's id, opens kB with the key, and resets
 * with wrapKb = kB xor newUnwrapBKey naming the key: kB (and class B) is
 * kept, the key is used up.  A wrong key is PICL_ERROR_INVALID_CODE (the
 * keyserver knows no such key) or PICL_ERROR_DECRYPT, and nothing changes
 * (the code is spent: ask for a new one). */
picl_status picl__account_forgot_finish_rk(picl_ks_client *c, const uint8_t forgot_token[32],
                                           const char *code, const char *email, size_t emaillen,
                                           const char *new_pw, size_t newlen,
                                           const picl_stretch_params *params, const uint8_t recovery_key[32]);

/* Signs in (proving the password) and destroys the account. */
picl_status picl__account_destroy(picl_ks_client *c, const char *email, size_t emaillen, const char *password,
                                  size_t pwlen, const picl_stretch_params *floor);
/* The same, calling before(ctx) once the password is proven and before the
 * account is destroyed (the storage data goes first, client.md 7); when
 * before fails the account is left as it was and its status returned. */
picl_status picl__account_destroy_with(picl_ks_client *c, const char *email, size_t emaillen,
                                       const char *password, size_t pwlen, const picl_stretch_params *floor,
                                       picl_status (*before)(void *ctx), void *ctx);

#endif
