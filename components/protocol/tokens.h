/* SPDX-License-Identifier: MPL-2.0 */
/* tokens.h -- keyserver token derivation (keyserver.md section 5). */
#ifndef PICL_PROTOCOL_TOKENS_H
#define PICL_PROTOCOL_TOKENS_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

/*
 * Every keyserver token is PICL_TOKEN_BYTES random bytes made by the server.
 * Both sides derive from it, with KW(tokenType) as the HKDF info and no salt:
 *
 *     tokenID || reqHMACkey || requestKey = HKDF(token, no salt, KW(tokenType), 96)
 *
 * A Hawk request then uses id = hex(tokenID) and key = reqHMACkey (32 raw
 * bytes); requestKey keys the bundles of bundle.h.  The server stores these
 * three values, never the token itself.
 */
#define PICL_TOKEN_BYTES 32
#define PICL_TOKEN_ID_HEX_BYTES 64 /* hex(tokenID) without the NUL */

typedef enum picl_token_type {
    PICL_TOKEN_AUTH = 0,        /* "authToken" */
    PICL_TOKEN_SESSION,         /* "sessionToken" */
    PICL_TOKEN_KEY_FETCH,       /* "keyFetchToken" */
    PICL_TOKEN_ACCOUNT_RESET,   /* "accountResetToken" */
    PICL_TOKEN_FORGOT_PASSWORD, /* "forgotPasswordToken" */
    PICL_TOKEN_TYPE_COUNT_
} picl_token_type;

/* The three derived values of one token.  They are secrets (except the id
 * once it is on the wire): wipe with picl__token_keys_wipe(). */
typedef struct picl_token_keys {
    uint8_t id[32];          /* tokenID */
    uint8_t hmac_key[32];    /* reqHMACkey: the Hawk key */
    uint8_t request_key[32]; /* requestKey: keys the bundles */
} picl_token_keys;

/* The name hashed into KW(): "authToken" ...; NULL for an unknown type. */
const char *picl__token_type_name(picl_token_type type);

/* The type whose name is exactly name[0..len), for configuration and
 * storage; PICL_ERROR_INVALID_ARGUMENT when there is none. */
picl_status picl__token_type_from_name(picl_token_type *type, const char *name, size_t len);

/* Derives keys from a PICL_TOKEN_BYTES-byte token.  Requires NSS
 * (picl__nss_acquire).  Returns PICL_OK, PICL_ERROR_INVALID_ARGUMENT (NULL
 * pointer, unknown type), or the HKDF's PICL_ERROR_CRYPTO/NO_MEMORY; on any
 * failure *keys is zeroed. */
picl_status picl__token_derive(picl_token_keys *keys, picl_token_type type,
                               const uint8_t token[PICL_TOKEN_BYTES]);

/* Fills token with PICL_TOKEN_BYTES fresh random bytes (server side). */
picl_status picl__token_generate(uint8_t token[PICL_TOKEN_BYTES]);

/* Writes hex(keys->id), lowercase, NUL-terminated: out holds
 * PICL_TOKEN_ID_HEX_BYTES + 1 bytes.  This is the Hawk id. */
void picl__token_id_hex(char out[PICL_TOKEN_ID_HEX_BYTES + 1], const picl_token_keys *keys);

/* Zeroes all three values. */
void picl__token_keys_wipe(picl_token_keys *keys);

#endif
