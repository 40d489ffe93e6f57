/* SPDX-License-Identifier: MPL-2.0 */
/* hash.c -- SHA-256, HMAC-SHA256 and random bytes through NSS PK11 (see hash.h). */
#include "crypto/hash.h"
#include "crypto/util.h"

#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <pk11pub.h>
#include <sechash.h>

size_t picl__sha256_bytes(void) { return PICL_SHA256_BYTES; }

struct picl_sha256_ctx {
    PK11Context *pk;
};

struct picl_hmac_ctx {
    PK11SymKey *key;
    PK11Context *pk;
};

picl_status picl__sha256(uint8_t out[32], const void *in, size_t len)
{
    picl_sha256_ctx *ctx;
    picl_status st = picl__sha256_init(&ctx);
    if (st != PICL_OK)
        return st;
    st = picl__sha256_update(ctx, in, len);
    if (st != PICL_OK) {
        picl__sha256_abort(ctx);
        return st;
    }
    return picl__sha256_final(ctx, out);
}

picl_status picl__sha256_init(picl_sha256_ctx **out)
{
    *out = NULL;
    picl_sha256_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return PICL_ERROR_NO_MEMORY;
    ctx->pk = PK11_CreateDigestContext(SEC_OID_SHA256);
    if (!ctx->pk || PK11_DigestBegin(ctx->pk) != SECSuccess) {
        if (ctx->pk)
            PK11_DestroyContext(ctx->pk, PR_TRUE);
        free(ctx);
        return PICL_ERROR_CRYPTO;
    }
    *out = ctx;
    return PICL_OK;
}

/* PK11_DigestOp takes an unsigned int length: feed huge inputs in pieces. */
static picl_status digest_op(PK11Context *pk, const void *in, size_t len)
{
    const unsigned char *p = in;
    while (len > 0) {
        unsigned int n = len > (1u << 30) ? (1u << 30) : (unsigned int)len;
        if (PK11_DigestOp(pk, p, n) != SECSuccess)
            return PICL_ERROR_CRYPTO;
        p += n;
        len -= n;
    }
    return PICL_OK;
}

picl_status picl__sha256_update(picl_sha256_ctx *ctx, const void *in, size_t len)
{
    return digest_op(ctx->pk, in, len);
}

picl_status picl__sha256_final(picl_sha256_ctx *ctx, uint8_t out[32])
{
    unsigned int n = 0;
    SECStatus rv = PK11_DigestFinal(ctx->pk, out, &n, 32);
    PK11_DestroyContext(ctx->pk, PR_TRUE);
    free(ctx);
    return (rv == SECSuccess && n == 32) ? PICL_OK : PICL_ERROR_CRYPTO;
}

void picl__sha256_abort(picl_sha256_ctx *ctx)
{
    if (!ctx)
        return;
    PK11_DestroyContext(ctx->pk, PR_TRUE);
    free(ctx);
}

picl_status picl__hmac_sha256_init(picl_hmac_ctx **out, const void *key, size_t keylen)
{
    *out = NULL;
    /* HMAC pads a short key with zeros to the block size, so the empty key
     * and the one-byte key 0x00 are the same key; PK11 refuses empty keys. */
    static const uint8_t zero = 0;
    if (keylen == 0) {
        key = &zero;
        keylen = 1;
    }
    if (keylen > UINT_MAX)
        return PICL_ERROR_TOO_LARGE;
    picl_hmac_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return PICL_ERROR_NO_MEMORY;
    PK11SlotInfo *slot = PK11_GetInternalSlot();
    if (!slot) {
        free(ctx);
        return PICL_ERROR_CRYPTO;
    }
    SECItem item = {siBuffer, (unsigned char *)key, (unsigned int)keylen};
    ctx->key = PK11_ImportSymKey(slot, CKM_SHA256_HMAC, PK11_OriginUnwrap, CKA_SIGN, &item, NULL);
    PK11_FreeSlot(slot);
    SECItem noparam = {siBuffer, NULL, 0};
    if (ctx->key)
        ctx->pk = PK11_CreateContextBySymKey(CKM_SHA256_HMAC, CKA_SIGN, ctx->key, &noparam);
    if (!ctx->pk || PK11_DigestBegin(ctx->pk) != SECSuccess) {
        picl__hmac_sha256_abort(ctx);
        return PICL_ERROR_CRYPTO;
    }
    *out = ctx;
    return PICL_OK;
}

picl_status picl__hmac_sha256_update(picl_hmac_ctx *ctx, const void *in, size_t len)
{
    return digest_op(ctx->pk, in, len);
}

picl_status picl__hmac_sha256_final(picl_hmac_ctx *ctx, uint8_t out[32])
{
    unsigned int n = 0;
    SECStatus rv = PK11_DigestFinal(ctx->pk, out, &n, 32);
    picl__hmac_sha256_abort(ctx);
    return (rv == SECSuccess && n == 32) ? PICL_OK : PICL_ERROR_CRYPTO;
}

picl_status picl__hmac_sha256_result(picl_hmac_ctx *ctx, uint8_t out[32])
{
    unsigned int n = 0;
    if (PK11_DigestFinal(ctx->pk, out, &n, 32) != SECSuccess || n != 32)
        return PICL_ERROR_CRYPTO;
    return PK11_DigestBegin(ctx->pk) == SECSuccess ? PICL_OK : PICL_ERROR_CRYPTO;
}

void picl__hmac_sha256_abort(picl_hmac_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->pk)
        PK11_DestroyContext(ctx->pk, PR_TRUE);
    if (ctx->key)
        PK11_FreeSymKey(ctx->key);
    free(ctx);
}

picl_status picl__hmac_sha256(uint8_t out[32], const void *key, size_t keylen, const void *in, size_t len)
{
    picl_hmac_ctx *ctx;
    picl_status st = picl__hmac_sha256_init(&ctx, key, keylen);
    if (st != PICL_OK)
        return st;
    st = picl__hmac_sha256_update(ctx, in, len);
    if (st != PICL_OK) {
        picl__hmac_sha256_abort(ctx);
        return st;
    }
    return picl__hmac_sha256_final(ctx, out);
}

picl_status picl__random_bytes(void *out, size_t len)
{
    unsigned char *p = out;
    while (len > 0) {
        int n = len > (1u << 20) ? (1 << 20) : (int)len;
        if (PK11_GenerateRandom(p, n) != SECSuccess)
            return PICL_ERROR_CRYPTO;
        p += n;
        len -= (size_t)n;
    }
    return PICL_OK;
}
