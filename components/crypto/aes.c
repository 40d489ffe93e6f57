/* SPDX-License-Identifier: MPL-2.0 */
/* aes.c -- AES-256 ECB/CBC/CBC-PKCS#7/GCM through PK11_Encrypt/PK11_Decrypt (see aes.h). */
#include "crypto/aes.h"
#include "crypto/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <pk11pub.h>
#include <pkcs11t.h>

static PK11SymKey *import_key(const uint8_t *key, size_t keylen, CK_MECHANISM_TYPE mech, CK_ATTRIBUTE_TYPE op)
{
    PK11SlotInfo *slot = PK11_GetInternalSlot();
    if (!slot)
        return NULL;
    SECItem item = {siBuffer, (unsigned char *)key, (unsigned int)keylen};
    PK11SymKey *k = PK11_ImportSymKey(slot, mech, PK11_OriginUnwrap, op, &item, NULL);
    PK11_FreeSlot(slot);
    return k;
}

/* One PK11 call under an imported key; *outlen receives the byte count. */
static picl_status run_key(int encrypt, CK_MECHANISM_TYPE mech, SECItem *param, PK11SymKey *k, uint8_t *out,
                           size_t *outlen, size_t maxout, const uint8_t *in, size_t len)
{
    if (len > UINT_MAX - 64 || maxout > UINT_MAX)
        return PICL_ERROR_TOO_LARGE;
    static const unsigned char empty[1] = {0};
    unsigned int n = 0;
    SECStatus rv =
        encrypt ? PK11_Encrypt(k, mech, param, out, &n, (unsigned)maxout, len ? in : empty, (unsigned)len)
                : PK11_Decrypt(k, mech, param, out, &n, (unsigned)maxout, len ? in : empty, (unsigned)len);
    if (rv != SECSuccess)
        return encrypt ? PICL_ERROR_CRYPTO : PICL_ERROR_DECRYPT;
    *outlen = n;
    return PICL_OK;
}

/* One PK11 call with a key imported for it. */
static picl_status run(int encrypt, CK_MECHANISM_TYPE mech, SECItem *param, const uint8_t *key, size_t keylen,
                       uint8_t *out, size_t *outlen, size_t maxout, const uint8_t *in, size_t len)
{
    if (len > UINT_MAX - 64 || maxout > UINT_MAX)
        return PICL_ERROR_TOO_LARGE;
    if (keylen != 16 && keylen != 24 && keylen != 32)
        return PICL_ERROR_INVALID_ARGUMENT;
    PK11SymKey *k = import_key(key, keylen, mech, encrypt ? CKA_ENCRYPT : CKA_DECRYPT);
    if (!k)
        return PICL_ERROR_CRYPTO;
    picl_status st = run_key(encrypt, mech, param, k, out, outlen, maxout, in, len);
    PK11_FreeSymKey(k);
    return st;
}

/* ---- a key imported once ------------------------------------------------ */

struct picl_aes_key {
    PK11SymKey *enc, *dec; /* CKA_ENCRYPT / CKA_DECRYPT imports of the same key */
};

picl_status picl__aes_key_new(picl_aes_key **out, const uint8_t key[32])
{
    *out = NULL;
    picl_aes_key *k = calloc(1, sizeof *k);
    if (!k)
        return PICL_ERROR_NO_MEMORY;
    k->enc = import_key(key, 32, CKM_AES_CBC_PAD, CKA_ENCRYPT);
    k->dec = k->enc ? import_key(key, 32, CKM_AES_CBC_PAD, CKA_DECRYPT) : NULL;
    if (!k->dec) {
        picl__aes_key_free(k);
        return PICL_ERROR_CRYPTO;
    }
    *out = k;
    return PICL_OK;
}

void picl__aes_key_free(picl_aes_key *k)
{
    if (!k)
        return;
    if (k->enc)
        PK11_FreeSymKey(k->enc);
    if (k->dec)
        PK11_FreeSymKey(k->dec);
    free(k);
}

picl_status picl__aes_key_cbc_encrypt(picl_aes_key *k, uint8_t *out, size_t *outlen, const uint8_t iv[16],
                                      const uint8_t *in, size_t len)
{
    SECItem ivitem = {siBuffer, (unsigned char *)iv, 16};
    size_t want = picl__aes256_cbc_pad_len(len);
    picl_status st = run_key(1, CKM_AES_CBC_PAD, &ivitem, k->enc, out, outlen, want, in, len);
    if (st == PICL_OK && *outlen != want)
        st = PICL_ERROR_CRYPTO;
    return st;
}

picl_status picl__aes_key_cbc_decrypt(picl_aes_key *k, uint8_t *out, size_t *outlen, const uint8_t iv[16],
                                      const uint8_t *in, size_t len)
{
    *outlen = 0;
    if (len == 0 || len % 16) {
        if (len)
            picl__wipe(out, len);
        return PICL_ERROR_DECRYPT;
    }
    SECItem ivitem = {siBuffer, (unsigned char *)iv, 16};
    picl_status st = run_key(0, CKM_AES_CBC_PAD, &ivitem, k->dec, out, outlen, len, in, len);
    if (st != PICL_OK) {
        picl__wipe(out, len);
        *outlen = 0;
        return PICL_ERROR_DECRYPT;
    }
    return PICL_OK;
}

picl_status picl__aes256_ecb_encrypt(uint8_t *out, const uint8_t key[32], const uint8_t *in, size_t len)
{
    if (len == 0 || len % 16)
        return PICL_ERROR_INVALID_ARGUMENT;
    SECItem noparam = {siBuffer, NULL, 0};
    size_t n;
    return run(1, CKM_AES_ECB, &noparam, key, 32, out, &n, len, in, len);
}

picl_status picl__aes256_cbc_raw(int encrypt, uint8_t *out, const uint8_t key[32], const uint8_t iv[16],
                                 const uint8_t *in, size_t len)
{
    if (len == 0 || len % 16)
        return PICL_ERROR_INVALID_ARGUMENT;
    SECItem ivitem = {siBuffer, (unsigned char *)iv, 16};
    size_t n;
    return run(encrypt, CKM_AES_CBC, &ivitem, key, 32, out, &n, len, in, len);
}

size_t picl__aes256_cbc_pad_len(size_t len) { return len + 16 - len % 16; }

picl_status picl__aes256_cbc_encrypt(uint8_t *out, size_t *outlen, const uint8_t key[32],
                                     const uint8_t iv[16], const uint8_t *in, size_t len)
{
    return picl__aes_cbc_encrypt_k(out, outlen, key, 32, iv, in, len);
}

picl_status picl__aes_cbc_encrypt_k(uint8_t *out, size_t *outlen, const uint8_t *key, size_t keylen,
                                    const uint8_t iv[16], const uint8_t *in, size_t len)
{
    SECItem ivitem = {siBuffer, (unsigned char *)iv, 16};
    size_t want = picl__aes256_cbc_pad_len(len);
    picl_status st = run(1, CKM_AES_CBC_PAD, &ivitem, key, keylen, out, outlen, want, in, len);
    if (st == PICL_OK && *outlen != want)
        st = PICL_ERROR_CRYPTO;
    return st;
}

picl_status picl__aes256_cbc_decrypt(uint8_t *out, size_t *outlen, const uint8_t key[32],
                                     const uint8_t iv[16], const uint8_t *in, size_t len)
{
    return picl__aes_cbc_decrypt_k(out, outlen, key, 32, iv, in, len);
}

picl_status picl__aes_cbc_decrypt_k(uint8_t *out, size_t *outlen, const uint8_t *key, size_t keylen,
                                    const uint8_t iv[16], const uint8_t *in, size_t len)
{
    *outlen = 0;
    if (len == 0 || len % 16) {
        if (len)
            picl__wipe(out, len);
        return PICL_ERROR_DECRYPT;
    }
    SECItem ivitem = {siBuffer, (unsigned char *)iv, 16};
    picl_status st = run(0, CKM_AES_CBC_PAD, &ivitem, key, keylen, out, outlen, len, in, len);
    if (st != PICL_OK) {
        picl__wipe(out, len);
        *outlen = 0;
        return PICL_ERROR_DECRYPT;
    }
    return PICL_OK;
}

static picl_status gcm(int encrypt, uint8_t *out, const uint8_t *key, size_t keylen, const uint8_t *iv,
                       size_t ivlen, const uint8_t *aad, size_t aadlen, const uint8_t *in, size_t len,
                       size_t taglen)
{
    if (!iv || ivlen == 0 || taglen < 12 || taglen > 16)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (ivlen > 1024 || aadlen > UINT_MAX)
        return PICL_ERROR_UNSUPPORTED;
    static const unsigned char empty[1] = {0};
    CK_NSS_GCM_PARAMS gp;
    gp.pIv = (CK_BYTE_PTR)iv;
    gp.ulIvLen = ivlen;
    gp.pAAD = (CK_BYTE_PTR)(aadlen ? aad : empty);
    gp.ulAADLen = aadlen;
    gp.ulTagBits = taglen * 8;
    SECItem param = {siBuffer, (unsigned char *)&gp, sizeof gp};
    size_t n = 0;
    if (encrypt) {
        picl_status st = run(1, CKM_AES_GCM, &param, key, keylen, out, &n, len + taglen, in, len);
        return (st == PICL_OK && n != len + taglen) ? PICL_ERROR_CRYPTO : st;
    }
    if (len < taglen)
        return PICL_ERROR_DECRYPT;
    /* NSS may want room for the whole input: decrypt into scratch space. */
    uint8_t *tmp = malloc(len + 1);
    if (!tmp)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = run(0, CKM_AES_GCM, &param, key, keylen, tmp, &n, len, in, len);
    if (st != PICL_OK || n != len - taglen) {
        picl__wipe(out, len - taglen);
        st = PICL_ERROR_DECRYPT;
    } else {
        memcpy(out, tmp, n);
    }
    picl__zfree(tmp, len + 1);
    return st;
}

picl_status picl__aes256_gcm_encrypt(uint8_t *out, const uint8_t key[32], const uint8_t *iv, size_t ivlen,
                                     const uint8_t *aad, size_t aadlen, const uint8_t *in, size_t len,
                                     size_t taglen)
{
    return gcm(1, out, key, 32, iv, ivlen, aad, aadlen, in, len, taglen);
}

picl_status picl__aes256_gcm_decrypt(uint8_t *out, const uint8_t key[32], const uint8_t *iv, size_t ivlen,
                                     const uint8_t *aad, size_t aadlen, const uint8_t *in, size_t len,
                                     size_t taglen)
{
    return gcm(0, out, key, 32, iv, ivlen, aad, aadlen, in, len, taglen);
}

picl_status picl__aes_gcm_encrypt_k(uint8_t *out, const uint8_t *key, size_t keylen, const uint8_t *iv,
                                    size_t ivlen, const uint8_t *aad, size_t aadlen, const uint8_t *in,
                                    size_t len, size_t taglen)
{
    return gcm(1, out, key, keylen, iv, ivlen, aad, aadlen, in, len, taglen);
}

picl_status picl__aes_gcm_decrypt_k(uint8_t *out, const uint8_t *key, size_t keylen, const uint8_t *iv,
                                    size_t ivlen, const uint8_t *aad, size_t aadlen, const uint8_t *in,
                                    size_t len, size_t taglen)
{
    return gcm(0, out, key, keylen, iv, ivlen, aad, aadlen, in, len, taglen);
}
