/* SPDX-License-Identifier: MPL-2.0 */
/* tokenlib.h -- Mozilla tokenlib tokens: the storage credentials minted by
 * the keyserver and checked by the storage server (storage.md section 2). */
#ifndef PICL_PROTOCOL_TOKENLIB_H
#define PICL_PROTOCOL_TOKENLIB_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

/*
 * payload    = JSON text {"uid", "node", "expires", "fxa_uid", "fxa_kid",
 *                         "hashed_fxa_uid", "hashed_device_id", "salt"}
 * signingKey = HKDF(secret, no salt, "services.mozilla.com/tokenlib/v1/signing", 32)
 * token      = base64url(payload || HMAC-SHA256(signingKey, payload))   ('=' padded)
 * key        = base64url(HKDF(secret, salt = ASCII salt,
 *                             "services.mozilla.com/tokenlib/v1/derive/" + token, 32))
 *
 * The token is the Hawk id, the ASCII text of key the Hawk key.  The JSON is
 * printed like Python's json.dumps (", " and ": " separators, the key order
 * above), so a token minted here is byte-identical to Python tokenlib's for
 * the same payload with an integer expires.
 */
#define PICL_TOKENLIB_SIGNING_INFO "services.mozilla.com/tokenlib/v1/signing"
#define PICL_TOKENLIB_DERIVE_INFO "services.mozilla.com/tokenlib/v1/derive/"

/* Caps (characters, without the NUL). */
#define PICL_TOKENLIB_MAX_TOKEN 2048u /* base64url text */
#define PICL_TOKENLIB_MAX_NODE 256u
#define PICL_TOKENLIB_MAX_ID 128u   /* fxa_uid, fxa_kid, hashed_fxa_uid, hashed_device_id */
#define PICL_TOKENLIB_SALT_CHARS 6u /* lowercase hex */
#define PICL_TOKENLIB_KEY_CHARS 44u /* base64url of 32 bytes, padded */
#define PICL_TOKENLIB_MAX_SECRET 1024u
/* Largest expires accepted (year 9999): keeps every sum below in range. */
#define PICL_TOKENLIB_MAX_EXPIRES 253402300799LL

typedef struct picl_tokenlib_payload {
    int64_t uid;                           /* 0 .. 2^53 */
    char node[PICL_TOKENLIB_MAX_NODE + 1]; /* e.g. "https://host:port" */
    int64_t expires;                       /* unix seconds (a float is floored) */
    char fxa_uid[PICL_TOKENLIB_MAX_ID + 1];
    char fxa_kid[PICL_TOKENLIB_MAX_ID + 1];
    char hashed_fxa_uid[PICL_TOKENLIB_MAX_ID + 1];
    char hashed_device_id[PICL_TOKENLIB_MAX_ID + 1];
    char salt[PICL_TOKENLIB_SALT_CHARS + 1]; /* "" when minting = fresh random */
} picl_tokenlib_payload;

/*
 * Mints a token for payload p under secret (1..PICL_TOKENLIB_MAX_SECRET
 * bytes; the servers refuse secrets under 32 bytes at start-up).  An empty
 * p->salt is replaced by 6 random hex characters (the salt used is what the
 * token carries).  *token and *key are malloc()ed and NUL-terminated; the
 * caller frees them (key is a secret: picl__zfree(key, strlen(key))).  Fields
 * must be within the caps, printable ASCII, the salt 6 lowercase hex
 * characters, 0 <= uid <= 2^53, 0 <= expires <= PICL_TOKENLIB_MAX_EXPIRES,
 * else PICL_ERROR_INVALID_ARGUMENT.  Needs NSS.  On failure both are NULL.
 */
picl_status picl__tokenlib_mint(char **token, char **key, const uint8_t *secret, size_t secretlen,
                                const picl_tokenlib_payload *p);

/*
 * THE parser of a token received as a Hawk id (tokenlen characters, need not
 * be NUL-terminated).  In order:
 *   over PICL_TOKENLIB_MAX_TOKEN                      PICL_ERROR_TOO_LARGE
 *   not strict base64url (padded or not), or decoded
 *   to 32 bytes or fewer                               PICL_ERROR_ENCODING
 *   HMAC mismatch (constant time; checked before the
 *   JSON is looked at)                                 PICL_ERROR_DECRYPT
 *   not a JSON object, duplicate key,
 *   missing field, wrong type, field over its cap or
 *   not printable ASCII, bad salt, uid/expires out
 *   of range                                           PICL_ERROR_ENCODING
 *   now > expires + grace                              PICL_ERROR_TOKEN
 * Keys other than the eight above (Mozilla's tokenservers add some) are
 * ignored, whatever their value: the MAC covers them, nothing reads them.
 * expires may be an integer or a number with a fraction (floored).
 * grace (seconds, 0..PICL_TOKENLIB_MAX_EXPIRES) lets GET /info/collections
 * accept a recently expired token.  On failure *out is zeroed.  Needs NSS.
 */
picl_status picl__tokenlib_parse(picl_tokenlib_payload *out, const uint8_t *secret, size_t secretlen,
                                 const char *token, size_t tokenlen, int64_t now, int64_t grace);

/* key for a token (see above) into out (PICL_TOKENLIB_KEY_CHARS + 1 bytes,
 * NUL-terminated; a secret: the caller wipes it).  salt is the payload's. */
picl_status picl__tokenlib_derive_key(char out[PICL_TOKENLIB_KEY_CHARS + 1], const uint8_t *secret,
                                      size_t secretlen, const char *token, size_t tokenlen, const char *salt);

#endif
