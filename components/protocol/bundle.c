/* SPDX-License-Identifier: MPL-2.0 */
/* bundle.c -- keyserver bundles seal/open: see bundle.h. */
#include "protocol/bundle.h"

#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/kdf.h"
#include "crypto/util.h"
#include "protocol/stretch.h"

size_t picl__bundle_max_payload(void) { return PICL_BUNDLE_MAX_PAYLOAD; }

size_t picl__bundle_len(size_t len) { return len + PICL_BUNDLE_MAC_BYTES; }

/* hmacKey || xorKey into one buffer of 32 + len bytes. */
static picl_status derive(uint8_t *okm, size_t len, const uint8_t *key, const char *context)
{
    char *info = NULL;
    size_t infolen = 0;
    picl_status st = picl__kw(&info, &infolen, context, NULL, 0);
    if (st != PICL_OK)
        return st;
    st = picl__hkdf_sha256(okm, 32 + len, key, PICL_BUNDLE_KEY_BYTES, NULL, 0, info, infolen);
    free(info);
    return st;
}

picl_status picl__bundle_keys(uint8_t hmac_key[32], uint8_t *xor_key, size_t len,
                              const uint8_t key[PICL_BUNDLE_KEY_BYTES], const char *context)
{
    uint8_t okm[32 + PICL_BUNDLE_MAX_PAYLOAD];
    picl_status st;

    if (!hmac_key || !xor_key || !key || !context || !*context || len == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (len > PICL_BUNDLE_MAX_PAYLOAD)
        return PICL_ERROR_TOO_LARGE;
    st = derive(okm, len, key, context);
    if (st == PICL_OK) {
        memcpy(hmac_key, okm, 32);
        memcpy(xor_key, okm + 32, len);
    }
    picl__wipe(okm, sizeof okm);
    return st;
}

picl_status picl__bundle_seal(uint8_t *out, const uint8_t key[PICL_BUNDLE_KEY_BYTES], const char *context,
                              const uint8_t *payload, size_t len)
{
    uint8_t okm[32 + PICL_BUNDLE_MAX_PAYLOAD];
    picl_status st;

    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (len > PICL_BUNDLE_MAX_PAYLOAD)
        return PICL_ERROR_TOO_LARGE;
    if (!key || !context || !*context || !payload || len == 0) {
        memset(out, 0, picl__bundle_len(len));
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    st = derive(okm, len, key, context);
    if (st == PICL_OK) {
        picl__xor(out, payload, okm + 32, len);
        st = picl__hmac_sha256(out + len, okm, 32, out, len);
    }
    if (st != PICL_OK)
        picl__wipe(out, picl__bundle_len(len));
    picl__wipe(okm, sizeof okm);
    return st;
}

picl_status picl__bundle_open(uint8_t *out, size_t outlen, const uint8_t key[PICL_BUNDLE_KEY_BYTES],
                              const char *context, const uint8_t *bundle, size_t bundlelen)
{
    uint8_t okm[32 + PICL_BUNDLE_MAX_PAYLOAD];
    uint8_t mac[PICL_BUNDLE_MAC_BYTES];
    picl_status st;

    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (outlen == 0 || outlen > PICL_BUNDLE_MAX_PAYLOAD || !key || !context || !*context) {
        if (outlen <= PICL_BUNDLE_MAX_PAYLOAD)
            memset(out, 0, outlen);
        return outlen > PICL_BUNDLE_MAX_PAYLOAD ? PICL_ERROR_TOO_LARGE : PICL_ERROR_INVALID_ARGUMENT;
    }
    if (!bundle || bundlelen != picl__bundle_len(outlen)) {
        memset(out, 0, outlen);
        return PICL_ERROR_DECRYPT;
    }
    st = derive(okm, outlen, key, context);
    if (st == PICL_OK)
        st = picl__hmac_sha256(mac, okm, 32, bundle, outlen);
    if (st == PICL_OK && !picl__memeq_ct(mac, bundle + outlen, sizeof mac))
        st = PICL_ERROR_DECRYPT;
    if (st == PICL_OK)
        picl__xor(out, bundle, okm + 32, outlen);
    else
        picl__wipe(out, outlen);
    picl__wipe(okm, sizeof okm);
    picl__wipe(mac, sizeof mac);
    return st;
}

picl_status picl__bundle_seal_hex(char **hex, const uint8_t key[PICL_BUNDLE_KEY_BYTES], const char *context,
                                  const uint8_t *payload, size_t len)
{
    uint8_t buf[PICL_BUNDLE_MAX_PAYLOAD + PICL_BUNDLE_MAC_BYTES];
    picl_status st;

    if (!hex)
        return PICL_ERROR_INVALID_ARGUMENT;
    *hex = NULL;
    if (len > PICL_BUNDLE_MAX_PAYLOAD)
        return PICL_ERROR_TOO_LARGE;
    st = picl__bundle_seal(buf, key, context, payload, len);
    if (st == PICL_OK) {
        *hex = picl__hex_encode_alloc(buf, picl__bundle_len(len));
        if (!*hex)
            st = PICL_ERROR_NO_MEMORY;
    }
    picl__wipe(buf, sizeof buf);
    return st;
}

picl_status picl__bundle_open_hex(uint8_t *out, size_t outlen, const uint8_t key[PICL_BUNDLE_KEY_BYTES],
                                  const char *context, const char *hex, size_t hexlen)
{
    uint8_t buf[PICL_BUNDLE_MAX_PAYLOAD + PICL_BUNDLE_MAC_BYTES];
    size_t n = 0;
    picl_status st;

    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (outlen == 0 || outlen > PICL_BUNDLE_MAX_PAYLOAD)
        return picl__bundle_open(out, outlen, key, context, NULL, 0);
    /* Length first: a wrong length never reaches the decoder. */
    if (!hex || hexlen != 2 * picl__bundle_len(outlen) ||
        picl__hex_decode(buf, sizeof buf, &n, hex, hexlen) != PICL_OK || n != picl__bundle_len(outlen)) {
        if (!key || !context || !*context)
            return picl__bundle_open(out, outlen, key, context, NULL, 0);
        memset(out, 0, outlen);
        picl__wipe(buf, sizeof buf);
        return PICL_ERROR_DECRYPT;
    }
    st = picl__bundle_open(out, outlen, key, context, buf, n);
    picl__wipe(buf, sizeof buf);
    return st;
}
