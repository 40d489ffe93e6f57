/* SPDX-License-Identifier: MPL-2.0 */
/* util.c -- constant-time comparison, wiping and XOR (see util.h). */
#include "crypto/util.h"

#include <stdlib.h>
#include <string.h>
#include <secport.h>

int picl__memeq_ct(const void *a, const void *b, size_t n)
{
    if (n == 0)
        return 1;
    return NSS_SecureMemcmp(a, b, n) == 0;
}

int picl__iszero_ct(const void *p, size_t n)
{
    if (n == 0)
        return 1;
    return NSS_SecureMemcmpZero(p, n) == 0;
}

void picl__wipe(void *p, size_t n)
{
    if (p && n)
        explicit_bzero(p, n);
}

void picl__zfree(void *p, size_t n)
{
    if (!p)
        return;
    picl__wipe(p, n);
    free(p);
}

void picl__xor(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = a[i] ^ b[i];
}
