/* record.c -- the Sync record cipher: AES-256-CBC + HMAC-SHA256 over the
 * base64 ciphertext, MAC checked first, one error for all (see record.h). */
#include "crypto/record.h"
#include "crypto/aes.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/util.h"

#include <stdlib.h>
#include <string.h>

void picl__sealed_free(picl_sealed *s)
{
    if (!s)
        return;
    free(s->ciphertext);
    free(s->iv);
    free(s->hmac);
    s->ciphertext = s->iv = s->hmac = NULL;
}

picl_status picl__record_seal(picl_sealed *sealed, const picl_keypair *keys, const uint8_t *iv,
                              const uint8_t *clear, size_t len)
{
    memset(sealed, 0, sizeof *sealed);
    if (len > PICL_RECORD_MAX_CIPHERTEXT - 16)
        return PICL_ERROR_TOO_LARGE;
    uint8_t ivbuf[16], mac[32];
    picl_status st = PICL_OK;
    size_t clen = 0;
    uint8_t *ct = malloc(picl__aes256_cbc_pad_len(len));
    if (!ct)
        return PICL_ERROR_NO_MEMORY;
    if (iv)
        memcpy(ivbuf, iv, 16);
    else if ((st = picl__random_bytes(ivbuf, 16)) != PICL_OK)
        goto done;
    if ((st = picl__aes256_cbc_encrypt(ct, &clen, keys->enc, ivbuf, clear, len)) != PICL_OK)
        goto done;
    sealed->ciphertext = picl__base64_encode_alloc(ct, clen);
    sealed->iv = picl__base64_encode_alloc(ivbuf, 16);
    if (!sealed->ciphertext || !sealed->iv) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    st = picl__hmac_sha256(mac, keys->hmac, 32, sealed->ciphertext, strlen(sealed->ciphertext));
    if (st != PICL_OK)
        goto done;
    sealed->hmac = picl__hex_encode_alloc(mac, 32);
    if (!sealed->hmac)
        st = PICL_ERROR_NO_MEMORY;
done:
    free(ct);
    if (st != PICL_OK)
        picl__sealed_free(sealed);
    return st;
}

picl_status picl__record_open(uint8_t **clear, size_t *clearlen, const picl_keypair *keys,
                              const char *ct_b64, const char *iv_b64, const char *hmac_hex)
{
    *clear = NULL;
    *clearlen = 0;
    if (!ct_b64 || !iv_b64 || !hmac_hex)
        return PICL_ERROR_DECRYPT;
    size_t ctlen_txt = strlen(ct_b64);
    if (ctlen_txt > picl__base64_encoded_len(PICL_RECORD_MAX_CIPHERTEXT))
        return PICL_ERROR_TOO_LARGE;
    uint8_t want[32], got[32], iv[16];
    uint8_t *ct = NULL, *pt = NULL;
    size_t ivlen = 0, ctlen = 0, ptlen = 0;
    picl_status st = PICL_ERROR_DECRYPT;

    /* 1. the MAC, over the base64 text exactly as received, in constant time */
    if (picl__hex_decode_exact(want, 32, hmac_hex) != PICL_OK)
        goto done;
    if (picl__hmac_sha256(got, keys->hmac, 32, ct_b64, ctlen_txt) != PICL_OK)
        goto done;
    if (!picl__memeq_ct(want, got, 32))
        goto done;
    /* 2. only now decode and decrypt */
    if (picl__base64_decode(iv, sizeof iv, &ivlen, iv_b64, strlen(iv_b64)) != PICL_OK || ivlen != 16)
        goto done;
    picl_status dst = picl__base64_decode_alloc(&ct, &ctlen, ct_b64, ctlen_txt);
    if (dst == PICL_ERROR_NO_MEMORY) {
        st = dst;
        goto done;
    }
    if (dst != PICL_OK)
        goto done;
    pt = malloc(ctlen + 1);
    if (!pt) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    if (picl__aes256_cbc_decrypt(pt, &ptlen, keys->enc, iv, ct, ctlen) != PICL_OK)
        goto done;
    pt[ptlen] = 0;
    *clear = pt;
    *clearlen = ptlen;
    pt = NULL;
    st = PICL_OK;
done:
    if (pt)
        picl__zfree(pt, ctlen + 1);
    free(ct);
    picl__wipe(got, sizeof got);
    return st;
}
