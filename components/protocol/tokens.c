/* SPDX-License-Identifier: MPL-2.0 */
/* tokens.c -- keyserver token derivation: see tokens.h. */
#include "protocol/tokens.h"

#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/kdf.h"
#include "crypto/util.h"
#include "protocol/stretch.h"

static const char *const type_names[PICL_TOKEN_TYPE_COUNT_] = {
    [PICL_TOKEN_AUTH] = "authToken",
    [PICL_TOKEN_SESSION] = "sessionToken",
    [PICL_TOKEN_KEY_FETCH] = "keyFetchToken",
    [PICL_TOKEN_ACCOUNT_RESET] = "accountResetToken",
    [PICL_TOKEN_FORGOT_PASSWORD] = "forgotPasswordToken",
};

const char *picl__token_type_name(picl_token_type type)
{
    if ((unsigned)type >= PICL_TOKEN_TYPE_COUNT_)
        return NULL;
    return type_names[type];
}

picl_status picl__token_type_from_name(picl_token_type *type, const char *name, size_t len)
{
    if (!type || !name)
        return PICL_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < PICL_TOKEN_TYPE_COUNT_; i++) {
        if (strlen(type_names[i]) == len && memcmp(type_names[i], name, len) == 0) {
            *type = (picl_token_type)i;
            return PICL_OK;
        }
    }
    return PICL_ERROR_INVALID_ARGUMENT;
}

picl_status picl__token_derive(picl_token_keys *keys, picl_token_type type,
                               const uint8_t token[PICL_TOKEN_BYTES])
{
    uint8_t out[96];
    char *info = NULL;
    size_t infolen = 0;
    picl_status st;

    if (!keys)
        return PICL_ERROR_INVALID_ARGUMENT;
    memset(keys, 0, sizeof *keys);
    if (!token || !picl__token_type_name(type))
        return PICL_ERROR_INVALID_ARGUMENT;
    st = picl__kw(&info, &infolen, picl__token_type_name(type), NULL, 0);
    if (st != PICL_OK)
        return st;
    st = picl__hkdf_sha256(out, sizeof out, token, PICL_TOKEN_BYTES, NULL, 0, info, infolen);
    if (st == PICL_OK) {
        memcpy(keys->id, out, 32);
        memcpy(keys->hmac_key, out + 32, 32);
        memcpy(keys->request_key, out + 64, 32);
    }
    picl__wipe(out, sizeof out);
    free(info);
    return st;
}

picl_status picl__token_generate(uint8_t token[PICL_TOKEN_BYTES])
{
    if (!token)
        return PICL_ERROR_INVALID_ARGUMENT;
    return picl__random_bytes(token, PICL_TOKEN_BYTES);
}

void picl__token_id_hex(char out[PICL_TOKEN_ID_HEX_BYTES + 1], const picl_token_keys *keys)
{
    picl__hex_encode(out, keys->id, sizeof keys->id);
}

void picl__token_keys_wipe(picl_token_keys *keys)
{
    if (keys)
        picl__wipe(keys, sizeof *keys);
}
