/* SPDX-License-Identifier: MPL-2.0 */
/* kdf.h -- PBKDF2-HMAC-SHA256, HKDF-SHA256 (NSS) and scrypt (libscrypt). */
#ifndef PICL_CRYPTO_KDF_H
#define PICL_CRYPTO_KDF_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

#define PICL_HKDF_SHA256_MAX_OUT (255u * 32u)
size_t picl__hkdf_sha256_max_out(void);

/* PBKDF2-HMAC-SHA256 (RFC 8018) through PK11_PBEKeyGen.  iterations >= 1,
 * 1 <= outlen <= PICL_PBKDF2_MAX_OUT. Empty password and salt are allowed. */
#define PICL_PBKDF2_MAX_OUT 4096u
picl_status picl__pbkdf2_sha256(uint8_t *out, size_t outlen, const void *pw, size_t pwlen, const void *salt,
                                size_t saltlen, uint32_t iterations);

/* HKDF-SHA256 (RFC 5869).  salt may be NULL/0 ("no salt" = 32 zero bytes).
 * outlen over 255*32 is PICL_ERROR_TOO_LARGE; 0 is PICL_ERROR_INVALID_ARGUMENT. */
picl_status picl__hkdf_sha256_extract(uint8_t prk[32], const void *salt, size_t saltlen, const void *ikm,
                                      size_t ikmlen);
picl_status picl__hkdf_sha256_expand(uint8_t *out, size_t outlen, const uint8_t *prk, size_t prklen,
                                     const void *info, size_t infolen);
picl_status picl__hkdf_sha256(uint8_t *out, size_t outlen, const void *ikm, size_t ikmlen, const void *salt,
                              size_t saltlen, const void *info, size_t infolen);

/* scrypt (RFC 7914) through libscrypt.  N a power of two > 1, r*p < 2^30.
 * Memory that cannot be had is PICL_ERROR_NO_MEMORY (never a crash);
 * `maxmem` (bytes, 0 = no cap) refuses parameters needing more than that
 * with PICL_ERROR_NO_MEMORY before allocating. */
picl_status picl__scrypt(uint8_t *out, size_t outlen, const void *pw, size_t pwlen, const void *salt,
                         size_t saltlen, uint64_t N, uint32_t r, uint32_t p, uint64_t maxmem);

#endif
