/* SPDX-License-Identifier: MPL-2.0 */
/* stretch.c -- "PBKDF2/scrypt/PBKDF2/v1" password stretching and the main
 * KDF of keyserver.md section 2 (see stretch.h). */
#include "protocol/stretch.h"
#include "crypto/kdf.h"
#include "crypto/util.h"

#include <stdlib.h>
#include <string.h>

void picl__stretch_default_params(picl_stretch_params *p)
{
    p->pbkdf2_rounds_1 = 20000;
    p->scrypt_n = 65536;
    p->scrypt_r = 8;
    p->scrypt_p = 1;
    p->pbkdf2_rounds_2 = 20000;
}

void picl__stretch_ceiling_params(picl_stretch_params *p)
{
    picl__stretch_default_params(p);
    p->pbkdf2_rounds_1 *= PICL_STRETCH_CEILING_FACTOR;
    p->scrypt_n *= PICL_STRETCH_CEILING_FACTOR;
    p->scrypt_r *= PICL_STRETCH_CEILING_FACTOR;
    p->scrypt_p *= PICL_STRETCH_CEILING_FACTOR;
    p->pbkdf2_rounds_2 *= PICL_STRETCH_CEILING_FACTOR;
}

picl_status picl__stretch_check_params(const picl_stretch_params *p, const picl_stretch_params *floor)
{
    picl_stretch_params def;
    if (!floor) {
        picl__stretch_default_params(&def);
        floor = &def;
    }
    if (p->scrypt_n < 2 || (p->scrypt_n & (p->scrypt_n - 1)) != 0 || p->scrypt_r == 0 || p->scrypt_p == 0 ||
        p->pbkdf2_rounds_1 == 0 || p->pbkdf2_rounds_2 == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (p->pbkdf2_rounds_1 < floor->pbkdf2_rounds_1 || p->scrypt_n < floor->scrypt_n ||
        p->scrypt_r < floor->scrypt_r || p->scrypt_p < floor->scrypt_p ||
        p->pbkdf2_rounds_2 < floor->pbkdf2_rounds_2)
        return PICL_ERROR_WEAK_PARAMS;
    /* nor above 4x the spec's values, whatever the floor: a hostile server
     * must not make us allocate or compute without bound either */
    picl_stretch_params top;
    picl__stretch_ceiling_params(&top);
    if (p->pbkdf2_rounds_1 > top.pbkdf2_rounds_1 || p->scrypt_n > top.scrypt_n ||
        p->scrypt_r > top.scrypt_r || p->scrypt_p > top.scrypt_p || p->pbkdf2_rounds_2 > top.pbkdf2_rounds_2)
        return PICL_ERROR_UNSUPPORTED;
    return PICL_OK;
}

picl_status picl__kw(char **out, size_t *len, const char *name, const char *email, size_t emaillen)
{
    size_t plen = strlen(PICL_KW_PREFIX), nlen = strlen(name);
    size_t total = plen + nlen + (email ? 1 + emaillen : 0);
    char *s = malloc(total + 1);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    memcpy(s, PICL_KW_PREFIX, plen);
    memcpy(s + plen, name, nlen);
    if (email) {
        s[plen + nlen] = ':';
        memcpy(s + plen + nlen + 1, email, emaillen);
    }
    s[total] = 0;
    *out = s;
    *len = total;
    return PICL_OK;
}

picl_status picl__stretch(uint8_t stretched[32], const picl_stretch_params *params,
                          const picl_stretch_params *floor, const char *email, size_t emaillen,
                          const char *password, size_t pwlen, picl_stretch_trace *trace)
{
    uint8_t k1[32], k2[32];
    uint8_t *k2pw = NULL;
    char *salt1 = NULL, *salt2 = NULL, *salt_s = NULL;
    size_t l1, l2, ls;
    picl_status st = picl__stretch_check_params(params, floor);
    if (st != PICL_OK) {
        picl__wipe(stretched, 32); /* never a stale key in the caller's buffer */
        return st;
    }
    if ((st = picl__kw(&salt1, &l1, "first-PBKDF", email, emaillen)) != PICL_OK ||
        (st = picl__kw(&salt2, &l2, "second-PBKDF", email, emaillen)) != PICL_OK ||
        (st = picl__kw(&salt_s, &ls, "scrypt", NULL, 0)) != PICL_OK)
        goto done;
    k2pw = malloc(32 + pwlen + 1);
    if (!k2pw) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    if ((st = picl__pbkdf2_sha256(k1, 32, password, pwlen, salt1, l1, params->pbkdf2_rounds_1)) != PICL_OK)
        goto done;
    if ((st = picl__scrypt(k2, 32, k1, 32, salt_s, ls, params->scrypt_n, params->scrypt_r, params->scrypt_p,
                           0)) != PICL_OK)
        goto done;
    memcpy(k2pw, k2, 32);
    memcpy(k2pw + 32, password, pwlen);
    if ((st = picl__pbkdf2_sha256(stretched, 32, k2pw, 32 + pwlen, salt2, l2, params->pbkdf2_rounds_2)) !=
        PICL_OK)
        goto done;
    if (trace) {
        memcpy(trace->k1, k1, 32);
        memcpy(trace->k2, k2, 32);
    }
done:
    if (st != PICL_OK)
        picl__wipe(stretched, 32);
    picl__wipe(k1, sizeof k1);
    picl__wipe(k2, sizeof k2);
    if (k2pw)
        picl__zfree(k2pw, 32 + pwlen + 1);
    free(salt1);
    free(salt2);
    free(salt_s);
    return st;
}

picl_status picl__main_kdf(uint8_t srp_pw[32], uint8_t unwrap_bkey[32], const uint8_t stretched[32],
                           const uint8_t *main_salt, size_t saltlen)
{
    uint8_t out[64];
    char *info = NULL;
    size_t ilen;
    picl_status st = picl__kw(&info, &ilen, "mainKDF", NULL, 0);
    if (st != PICL_OK)
        return st;
    st = picl__hkdf_sha256(out, 64, stretched, 32, main_salt, saltlen, info, ilen);
    if (st == PICL_OK) {
        memcpy(srp_pw, out, 32);
        memcpy(unwrap_bkey, out + 32, 32);
    }
    picl__wipe(out, sizeof out);
    free(info);
    return st;
}
