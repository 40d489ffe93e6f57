/* SPDX-License-Identifier: MPL-2.0 */
/* util.h -- constant-time comparison, wiping and secret buffers. */
#ifndef PICL_CRYPTO_UTIL_H
#define PICL_CRYPTO_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

/* 1 if a[0..n) == b[0..n), else 0; time depends on n only (NSS_SecureMemcmp). */
int picl__memeq_ct(const void *a, const void *b, size_t n);

/* 1 if every byte of p[0..n) is zero, in time depending on n only. */
int picl__iszero_ct(const void *p, size_t n);

/* Overwrite n bytes with zeros in a way the compiler cannot elide. */
void picl__wipe(void *p, size_t n);

/* Wipe n bytes then free(p).  NULL is allowed. */
void picl__zfree(void *p, size_t n);

/* dst[i] = a[i] ^ b[i] for i < n (dst may alias a or b). */
void picl__xor(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n);

#endif
