/* SPDX-License-Identifier: MPL-2.0 */
/* envelope.h -- the sealed envelope of every record, the record cipher
 * (records.md section 3): AES-256-CBC, encrypt-then-MAC with HMAC-SHA256
 * over a labelled macInput that covers the context fields, the IV text and
 * the ciphertext text. */
#ifndef PICL_CRYPTO_ENVELOPE_H
#define PICL_CRYPTO_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

typedef struct picl_keypair {
    uint8_t enc[32];
    uint8_t hmac[32];
} picl_keypair;

/* The three text fields of an encrypted record; each malloc()ed, NUL-terminated. */
typedef struct picl_sealed {
    char *ciphertext; /* base64 */
    char *iv;         /* base64 of 16 bytes */
    char *hmac;       /* lowercase hex of 32 bytes */
} picl_sealed;

/* What the MAC binds besides the IV and the ciphertext:
 *   macInput = label LF fields[0] LF ... LF fields[n-1] LF <IV b64> LF <ciphertext b64>
 * (LF = one 0x0A byte; every part is the exact text that travels).  A label
 * or field containing LF is refused.  Records use PICL_RECORD_V2_LABEL with
 * the fields {collection, BSO id, kid} (picl__record_v2_context). */
#define PICL_RECORD_V2_LABEL "picl-record-v2"
#define PICL_MAC_CONTEXT_MAX_FIELDS 4
typedef struct picl_mac_context {
    const char *label;
    const char *fields[PICL_MAC_CONTEXT_MAX_FIELDS];
    size_t nfields;
} picl_mac_context;

/* The record v2 context; the strings are borrowed (they must outlive ctx). */
void picl__record_v2_context(picl_mac_context *ctx, const char *collection, const char *bso_id,
                             const char *kid);

/* Encrypts cleartext.  iv NULL = 16 fresh random bytes (a fixed iv is for
 * vectors only).  ctx is required (PICL_ERROR_INVALID_ARGUMENT when NULL or
 * holding LF).  On success the caller owns *sealed (picl__sealed_free). */
picl_status picl__record_seal(picl_sealed *sealed, const picl_keypair *keys, const picl_mac_context *ctx,
                              const uint8_t *iv, const uint8_t *clear, size_t len);

/* Checks the HMAC over macInput(ctx, iv_b64, ciphertext_b64) in constant
 * time, then decodes and decrypts.  Every failure (no or bad context, bad
 * hex, base64, IV length, MAC, padding, wrong key) is PICL_ERROR_DECRYPT,
 * except PICL_ERROR_NO_MEMORY / PICL_ERROR_TOO_LARGE.  On success *clear is
 * a malloc()ed buffer of *clearlen bytes plus a NUL (caller picl__zfree's it). */
#define PICL_RECORD_MAX_CIPHERTEXT (8u * 1024u * 1024u)
picl_status picl__record_open(uint8_t **clear, size_t *clearlen, const picl_keypair *keys,
                              const picl_mac_context *ctx, const char *ciphertext_b64, const char *iv_b64,
                              const char *hmac_hex);

void picl__sealed_free(picl_sealed *sealed);

/* A keypair imported into PK11 once for a run of records under it (the AES
 * key and an HMAC context restarted per record): seal and open as above,
 * without an import per record.  The key bytes are not kept in our memory.
 * Not for concurrent use; picl__sealer_free releases it (NULL is fine). */
typedef struct picl_sealer picl_sealer;
picl_status picl__sealer_new(picl_sealer **out, const picl_keypair *keys);
void picl__sealer_free(picl_sealer *s);
picl_status picl__record_seal_with(picl_sealed *sealed, picl_sealer *keys, const picl_mac_context *ctx,
                                   const uint8_t *iv, const uint8_t *clear, size_t len);
picl_status picl__record_open_with(uint8_t **clear, size_t *clearlen, picl_sealer *keys,
                                   const picl_mac_context *ctx, const char *ciphertext_b64,
                                   const char *iv_b64, const char *hmac_hex);

#endif
