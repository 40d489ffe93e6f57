/* SPDX-License-Identifier: MPL-2.0 */
/* kdf.c -- PBKDF2 and HKDF over NSS PK11, scrypt over libscrypt (see kdf.h). */
#include "crypto/kdf.h"
#include "crypto/hash.h"
#include "crypto/util.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <libscrypt.h>
#include <pk11pub.h>
#include <secoid.h>

size_t picl__hkdf_sha256_max_out(void) { return PICL_HKDF_SHA256_MAX_OUT; }

picl_status picl__pbkdf2_sha256(uint8_t *out, size_t outlen, const void *pw, size_t pwlen, const void *salt,
                                size_t saltlen, uint32_t iterations)
{
    if (outlen == 0 || iterations == 0 || iterations > INT_MAX)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (outlen > PICL_PBKDF2_MAX_OUT || pwlen > UINT_MAX || saltlen > UINT_MAX)
        return PICL_ERROR_TOO_LARGE;
    /* PK11 refuses zero-length items; a one-byte buffer with len 0 is fine. */
    static const unsigned char empty[1] = {0};
    SECItem saltitem = {siBuffer, (unsigned char *)(saltlen ? salt : empty), (unsigned int)saltlen};
    SECItem pwitem = {siBuffer, (unsigned char *)(pwlen ? pw : empty), (unsigned int)pwlen};
    picl_status st = PICL_ERROR_CRYPTO;
    PK11SlotInfo *slot = NULL;
    PK11SymKey *key = NULL;
    /* cipherAlg SHA-1 only makes NSS produce a generic secret of outlen
     * bytes; the PRF is the third argument, HMAC-SHA256. */
    SECAlgorithmID *alg =
        PK11_CreatePBEV2AlgorithmID(SEC_OID_PKCS5_PBKDF2, SEC_OID_HMAC_SHA1, SEC_OID_HMAC_SHA256, (int)outlen,
                                    (int)iterations, &saltitem);
    if (!alg)
        goto done;
    slot = PK11_GetInternalSlot();
    if (!slot)
        goto done;
    key = PK11_PBEKeyGen(slot, alg, &pwitem, PR_FALSE, NULL);
    if (!key || PK11_ExtractKeyValue(key) != SECSuccess)
        goto done;
    SECItem *data = PK11_GetKeyData(key);
    if (!data || data->len != outlen)
        goto done;
    memcpy(out, data->data, outlen);
    st = PICL_OK;
done:
    if (key)
        PK11_FreeSymKey(key);
    if (slot)
        PK11_FreeSlot(slot);
    if (alg)
        SECOID_DestroyAlgorithmID(alg, PR_TRUE);
    return st;
}

picl_status picl__hkdf_sha256_extract(uint8_t prk[32], const void *salt, size_t saltlen, const void *ikm,
                                      size_t ikmlen)
{
    static const uint8_t zeros[32] = {0};
    if (!salt || saltlen == 0) { /* RFC 5869 2.2: not provided = HashLen zeros */
        salt = zeros;
        saltlen = sizeof zeros;
    }
    return picl__hmac_sha256(prk, salt, saltlen, ikm, ikmlen);
}

picl_status picl__hkdf_sha256_expand(uint8_t *out, size_t outlen, const uint8_t *prk, size_t prklen,
                                     const void *info, size_t infolen)
{
    if (outlen == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (outlen > PICL_HKDF_SHA256_MAX_OUT)
        return PICL_ERROR_TOO_LARGE;
    /* one HMAC context keyed with prk for every block: the key is imported
     * into PK11 once, and the context restarted per block */
    uint8_t t[32];
    size_t tlen = 0, done = 0;
    picl_hmac_ctx *ctx = NULL;
    picl_status st = picl__hmac_sha256_init(&ctx, prk, prklen);
    for (unsigned counter = 1; st == PICL_OK && done < outlen; counter++) {
        uint8_t c = (uint8_t)counter;
        if ((st = picl__hmac_sha256_update(ctx, t, tlen)) != PICL_OK ||
            (st = picl__hmac_sha256_update(ctx, info, infolen)) != PICL_OK ||
            (st = picl__hmac_sha256_update(ctx, &c, 1)) != PICL_OK ||
            (st = picl__hmac_sha256_result(ctx, t)) != PICL_OK)
            break;
        tlen = 32;
        size_t n = outlen - done < 32 ? outlen - done : 32;
        memcpy(out + done, t, n);
        done += n;
    }
    picl__hmac_sha256_abort(ctx); /* NULL-safe */
    picl__wipe(t, sizeof t);
    if (st != PICL_OK)
        picl__wipe(out, outlen);
    return st;
}

picl_status picl__hkdf_sha256(uint8_t *out, size_t outlen, const void *ikm, size_t ikmlen, const void *salt,
                              size_t saltlen, const void *info, size_t infolen)
{
    if (outlen == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (outlen > PICL_HKDF_SHA256_MAX_OUT)
        return PICL_ERROR_TOO_LARGE;
    uint8_t prk[32];
    picl_status st = picl__hkdf_sha256_extract(prk, salt, saltlen, ikm, ikmlen);
    if (st == PICL_OK)
        st = picl__hkdf_sha256_expand(out, outlen, prk, sizeof prk, info, infolen);
    picl__wipe(prk, sizeof prk);
    return st;
}

picl_status picl__scrypt(uint8_t *out, size_t outlen, const void *pw, size_t pwlen, const void *salt,
                         size_t saltlen, uint64_t N, uint32_t r, uint32_t p, uint64_t maxmem)
{
    if (outlen == 0 || N < 2 || (N & (N - 1)) != 0 || r == 0 || p == 0 || (uint64_t)r * p >= (1u << 30))
        return PICL_ERROR_INVALID_ARGUMENT;
    /* ROMix V (128 r N) + B (128 r p) + XY (256 r): refuse what cannot fit */
    if (N > UINT64_MAX / 128 / r)
        return PICL_ERROR_NO_MEMORY;
    uint64_t need = 128ull * r * N + 128ull * r * p + 256ull * r;
    if ((maxmem && need > maxmem) || need > SIZE_MAX / 2)
        return PICL_ERROR_NO_MEMORY;
    static const uint8_t empty[1] = {0};
    errno = 0;
    int rc =
        libscrypt_scrypt(pwlen ? pw : empty, pwlen, saltlen ? salt : empty, saltlen, N, r, p, out, outlen);
    if (rc != 0) {
        picl__wipe(out, outlen);
        return errno == ENOMEM ? PICL_ERROR_NO_MEMORY : PICL_ERROR_INVALID_ARGUMENT;
    }
    return PICL_OK;
}
