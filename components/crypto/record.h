/* record.h -- the Sync record cipher (records.md section 3): AES-256-CBC,
 * encrypt-then-MAC with HMAC-SHA256 over the base64 ciphertext text. */
#ifndef PICL_CRYPTO_RECORD_H
#define PICL_CRYPTO_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include "picl.h"

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

/* Encrypts cleartext.  iv NULL = 16 fresh random bytes (a fixed iv is for
 * vectors only).  On success the caller owns *sealed (picl__sealed_free). */
picl_status picl__record_seal(picl_sealed *sealed, const picl_keypair *keys,
                              const uint8_t *iv, const uint8_t *clear, size_t len);

/* Checks the HMAC in constant time, then decrypts.  Every failure (bad hex,
 * base64, IV length, MAC, padding, wrong key) is PICL_ERROR_DECRYPT, except
 * PICL_ERROR_NO_MEMORY / PICL_ERROR_TOO_LARGE.  On success *clear is a
 * malloc()ed buffer of *clearlen bytes plus a NUL (caller picl__zfree's it). */
#define PICL_RECORD_MAX_CIPHERTEXT (8u * 1024u * 1024u)
picl_status picl__record_open(uint8_t **clear, size_t *clearlen, const picl_keypair *keys,
                              const char *ciphertext_b64, const char *iv_b64,
                              const char *hmac_hex);

void picl__sealed_free(picl_sealed *sealed);

#endif
