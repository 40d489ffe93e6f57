/* SPDX-License-Identifier: MPL-2.0 */
/* stretch.h -- client-side password stretching "PBKDF2/scrypt/PBKDF2/v1"
 * and the main KDF (keyserver.md section 2). */
#ifndef PICL_PROTOCOL_STRETCH_H
#define PICL_PROTOCOL_STRETCH_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

#define PICL_KW_PREFIX "identity.mozilla.com/picl/v1/"
#define PICL_STRETCH_TYPE "PBKDF2/scrypt/PBKDF2/v1"

typedef struct picl_stretch_params {
    uint32_t pbkdf2_rounds_1;
    uint64_t scrypt_n;
    uint32_t scrypt_r;
    uint32_t scrypt_p;
    uint32_t pbkdf2_rounds_2;
} picl_stretch_params;

/* The spec's values: 20000, 65536/8/1, 20000.  Also the default floor. */
void picl__stretch_default_params(picl_stretch_params *p);

/* The ceiling: each of the spec's values times 4 (80000, 262144/32/4,
 * 80000).  It does not move with a lowered floor. */
#define PICL_STRETCH_CEILING_FACTOR 4
void picl__stretch_ceiling_params(picl_stretch_params *p);

/* PICL_OK when every parameter is at least the floor's and at most the
 * ceiling's (keyserver.md 9: client and server refuse the same range), N a
 * power of two; PICL_ERROR_WEAK_PARAMS below the floor, PICL_ERROR_UNSUPPORTED
 * above the ceiling, PICL_ERROR_INVALID_ARGUMENT for zero or N not a power
 * of two.  floor NULL = the default floor. */
picl_status picl__stretch_check_params(const picl_stretch_params *p, const picl_stretch_params *floor);

/* Intermediate values, exposed for vectors; wiped by picl__stretch_wipe(). */
typedef struct picl_stretch_trace {
    uint8_t k1[32];
    uint8_t k2[32];
} picl_stretch_trace;

/* stretchedPW = PBKDF2(K2 || password, KWE("second-PBKDF", email), r2) with
 * K1, K2 as in the spec.  Refuses weak params (see above) before any work;
 * scrypt memory failure is PICL_ERROR_NO_MEMORY.  trace may be NULL. */
picl_status picl__stretch(uint8_t stretched[32], const picl_stretch_params *params,
                          const picl_stretch_params *floor, const char *email, size_t emaillen,
                          const char *password, size_t pwlen, picl_stretch_trace *trace);

/* srpPW || unwrapBKey = HKDF(stretchedPW, mainSalt, KW("mainKDF"), 64). */
picl_status picl__main_kdf(uint8_t srp_pw[32], uint8_t unwrap_bkey[32], const uint8_t stretched[32],
                           const uint8_t *main_salt, size_t saltlen);

/* Builds KW(name) (and KWE(name, email) when email != NULL) into a malloc()ed
 * buffer; *len receives its length (no NUL counted, but one is written). */
picl_status picl__kw(char **out, size_t *len, const char *name, const char *email, size_t emaillen);

#endif
