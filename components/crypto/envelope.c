/* SPDX-License-Identifier: MPL-2.0 */
/* envelope.c -- the record cipher: AES-256-CBC + HMAC-SHA256 over the labelled
 * macInput (context, IV text, ciphertext text), MAC checked first, one error
 * for all (see envelope.h). */
#include "crypto/envelope.h"
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

void picl__record_v2_context(picl_mac_context *ctx, const char *collection, const char *bso_id,
                             const char *kid)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->label = PICL_RECORD_V2_LABEL;
    ctx->fields[0] = collection;
    ctx->fields[1] = bso_id;
    ctx->fields[2] = kid;
    ctx->nfields = 3;
}

static int context_ok(const picl_mac_context *ctx)
{
    if (!ctx || !ctx->label || !*ctx->label || strchr(ctx->label, '\n') ||
        ctx->nfields > PICL_MAC_CONTEXT_MAX_FIELDS)
        return 0;
    for (size_t i = 0; i < ctx->nfields; i++)
        if (!ctx->fields[i] || strchr(ctx->fields[i], '\n'))
            return 0;
    return 1;
}

struct picl_sealer {
    picl_aes_key *aes;
    picl_hmac_ctx *mac; /* restarted after every MAC (picl__hmac_sha256_result) */
    int broken;         /* a MAC failed midway: the context cannot be trusted again */
};

picl_status picl__sealer_new(picl_sealer **out, const picl_keypair *keys)
{
    *out = NULL;
    picl_sealer *s = calloc(1, sizeof *s);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = picl__aes_key_new(&s->aes, keys->enc);
    if (st == PICL_OK)
        st = picl__hmac_sha256_init(&s->mac, keys->hmac, 32);
    if (st != PICL_OK) {
        picl__sealer_free(s);
        return st;
    }
    *out = s;
    return PICL_OK;
}

void picl__sealer_free(picl_sealer *s)
{
    if (!s)
        return;
    picl__aes_key_free(s->aes);
    picl__hmac_sha256_abort(s->mac);
    free(s);
}

/* HMAC-SHA256(key, macInput) under the sealer's context */
static picl_status mac_input(uint8_t out[32], picl_sealer *k, const picl_mac_context *ctx, const char *iv_b64,
                             const char *ct_b64, size_t ctlen)
{
    if (k->broken)
        return PICL_ERROR_CRYPTO;
    picl_hmac_ctx *h = k->mac;
    /* the short parts in one update when they fit (each update is a PK11
     * call): the same bytes in the same order */
    char head[512];
    size_t hl = strlen(ctx->label), ivl = strlen(iv_b64), need = hl + 1 + ivl + 1;
    for (size_t i = 0; i < ctx->nfields; i++)
        need += strlen(ctx->fields[i]) + 1;
    picl_status st;
    if (need <= sizeof head) {
        size_t o = 0;
        memcpy(head, ctx->label, hl);
        o = hl;
        for (size_t i = 0; i < ctx->nfields; i++) {
            size_t fl = strlen(ctx->fields[i]);
            head[o++] = '\n';
            memcpy(head + o, ctx->fields[i], fl);
            o += fl;
        }
        head[o++] = '\n';
        memcpy(head + o, iv_b64, ivl);
        o += ivl;
        head[o++] = '\n';
        st = picl__hmac_sha256_update(h, head, o);
    } else {
        st = picl__hmac_sha256_update(h, ctx->label, hl);
        for (size_t i = 0; st == PICL_OK && i < ctx->nfields; i++) {
            st = picl__hmac_sha256_update(h, "\n", 1);
            if (st == PICL_OK)
                st = picl__hmac_sha256_update(h, ctx->fields[i], strlen(ctx->fields[i]));
        }
        if (st == PICL_OK)
            st = picl__hmac_sha256_update(h, "\n", 1);
        if (st == PICL_OK)
            st = picl__hmac_sha256_update(h, iv_b64, ivl);
        if (st == PICL_OK)
            st = picl__hmac_sha256_update(h, "\n", 1);
    }
    if (st == PICL_OK)
        st = picl__hmac_sha256_update(h, ct_b64, ctlen);
    if (st == PICL_OK)
        st = picl__hmac_sha256_result(h, out);
    if (st != PICL_OK)
        k->broken = 1; /* half a macInput may be in it */
    return st;
}

picl_status picl__record_seal_with(picl_sealed *sealed, picl_sealer *keys, const picl_mac_context *ctx,
                                   const uint8_t *iv, const uint8_t *clear, size_t len)
{
    memset(sealed, 0, sizeof *sealed);
    if (!context_ok(ctx))
        return PICL_ERROR_INVALID_ARGUMENT;
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
    if ((st = picl__aes_key_cbc_encrypt(keys->aes, ct, &clen, ivbuf, clear, len)) != PICL_OK)
        goto done;
    sealed->ciphertext = picl__base64_encode_alloc(ct, clen);
    sealed->iv = picl__base64_encode_alloc(ivbuf, 16);
    if (!sealed->ciphertext || !sealed->iv) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    st = mac_input(mac, keys, ctx, sealed->iv, sealed->ciphertext, strlen(sealed->ciphertext));
    if (st != PICL_OK)
        goto done;
    sealed->hmac = picl__hex_encode_alloc(mac, 32);
    if (!sealed->hmac)
        st = PICL_ERROR_NO_MEMORY;
done:
    picl__zfree(ct, picl__aes256_cbc_pad_len(len));
    if (st != PICL_OK)
        picl__sealed_free(sealed);
    return st;
}

picl_status picl__record_seal(picl_sealed *sealed, const picl_keypair *keys, const picl_mac_context *ctx,
                              const uint8_t *iv, const uint8_t *clear, size_t len)
{
    memset(sealed, 0, sizeof *sealed);
    if (!context_ok(ctx))
        return PICL_ERROR_INVALID_ARGUMENT;
    if (len > PICL_RECORD_MAX_CIPHERTEXT - 16)
        return PICL_ERROR_TOO_LARGE;
    picl_sealer *k = NULL;
    picl_status st = picl__sealer_new(&k, keys);
    if (st == PICL_OK)
        st = picl__record_seal_with(sealed, k, ctx, iv, clear, len);
    picl__sealer_free(k);
    return st;
}

picl_status picl__record_open_with(uint8_t **clear, size_t *clearlen, picl_sealer *keys,
                                   const picl_mac_context *ctx, const char *ct_b64, const char *iv_b64,
                                   const char *hmac_hex)
{
    *clear = NULL;
    *clearlen = 0;
    if (!ct_b64 || !iv_b64 || !hmac_hex || !context_ok(ctx))
        return PICL_ERROR_DECRYPT;
    size_t ctlen_txt = strlen(ct_b64);
    if (ctlen_txt > picl__base64_encoded_len(PICL_RECORD_MAX_CIPHERTEXT))
        return PICL_ERROR_TOO_LARGE;
    uint8_t want[32], got[32], iv[16];
    uint8_t *ct = NULL, *pt = NULL;
    size_t ivlen = 0, ctlen = 0, ptlen = 0;
    picl_status st = PICL_ERROR_DECRYPT;

    /* 1. the MAC over macInput, the texts exactly as received, in constant time */
    if (picl__hex_decode_exact(want, 32, hmac_hex) != PICL_OK)
        goto done;
    /* a MAC we could not compute for want of memory is not a forgery */
    picl_status mst = mac_input(got, keys, ctx, iv_b64, ct_b64, ctlen_txt);
    if (mst != PICL_OK) {
        if (mst == PICL_ERROR_NO_MEMORY)
            st = mst;
        goto done;
    }
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
    picl_status ast = picl__aes_key_cbc_decrypt(keys->aes, pt, &ptlen, iv, ct, ctlen);
    if (ast != PICL_OK) {
        if (ast == PICL_ERROR_NO_MEMORY)
            st = ast;
        goto done;
    }
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

picl_status picl__record_open(uint8_t **clear, size_t *clearlen, const picl_keypair *keys,
                              const picl_mac_context *ctx, const char *ct_b64, const char *iv_b64,
                              const char *hmac_hex)
{
    *clear = NULL;
    *clearlen = 0;
    if (!ct_b64 || !iv_b64 || !hmac_hex || !context_ok(ctx))
        return PICL_ERROR_DECRYPT;
    if (strlen(ct_b64) > picl__base64_encoded_len(PICL_RECORD_MAX_CIPHERTEXT))
        return PICL_ERROR_TOO_LARGE;
    picl_sealer *k = NULL;
    picl_status st = picl__sealer_new(&k, keys);
    if (st == PICL_OK)
        st = picl__record_open_with(clear, clearlen, k, ctx, ct_b64, iv_b64, hmac_hex);
    else if (st != PICL_ERROR_NO_MEMORY)
        st = PICL_ERROR_DECRYPT; /* one error for every failure (see envelope.h) */
    picl__sealer_free(k);
    return st;
}
