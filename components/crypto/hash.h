/* SPDX-License-Identifier: MPL-2.0 */
/* hash.h -- SHA-256, HMAC-SHA256 and random bytes, through NSS PK11. */
#ifndef PICL_CRYPTO_HASH_H
#define PICL_CRYPTO_HASH_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

#define PICL_SHA256_BYTES 32
#define PICL_HMAC_SHA256_BYTES 32
size_t picl__sha256_bytes(void);

/* All functions require NSS (picl__nss_acquire()) and return PICL_OK or
 * PICL_ERROR_CRYPTO / PICL_ERROR_NO_MEMORY.  Outputs are fixed 32 bytes. */
picl_status picl__sha256(uint8_t out[32], const void *in, size_t len);

/* Streaming SHA-256: init, any number of updates, final (which frees). */
typedef struct picl_sha256_ctx picl_sha256_ctx;
picl_status picl__sha256_init(picl_sha256_ctx **ctx);
picl_status picl__sha256_update(picl_sha256_ctx *ctx, const void *in, size_t len);
picl_status picl__sha256_final(picl_sha256_ctx *ctx, uint8_t out[32]); /* frees ctx */
void picl__sha256_abort(picl_sha256_ctx *ctx);                         /* frees ctx */

/* HMAC-SHA256 with any key length (0 included). */
picl_status picl__hmac_sha256(uint8_t out[32], const void *key, size_t keylen, const void *in, size_t len);

typedef struct picl_hmac_ctx picl_hmac_ctx;
picl_status picl__hmac_sha256_init(picl_hmac_ctx **ctx, const void *key, size_t keylen);
picl_status picl__hmac_sha256_update(picl_hmac_ctx *ctx, const void *in, size_t len);
picl_status picl__hmac_sha256_final(picl_hmac_ctx *ctx, uint8_t out[32]); /* frees ctx */
void picl__hmac_sha256_abort(picl_hmac_ctx *ctx);                         /* frees ctx */
/* Writes the MAC of what was fed since init (or the last result) and starts
 * the next MAC under the same key: many MACs under one key import it into
 * PK11 once (an import costs more than a short MAC).  ctx stays the
 * caller's (picl__hmac_sha256_abort frees it); after an error it can only
 * be freed. */
picl_status picl__hmac_sha256_result(picl_hmac_ctx *ctx, uint8_t out[32]);

/* Cryptographically secure random bytes (PK11_GenerateRandom). */
picl_status picl__random_bytes(void *out, size_t len);

#endif
