/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_tokenlib.c -- libFuzzer target: the tokenlib token parser
 * (picl__tokenlib_parse), fed the input both as token text and as a
 * correctly signed payload (to reach the JSON checks); whatever it accepts
 * must mint back to a token that parses to the same fields. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/kdf.h"
#include "crypto/nss.h"
#include "protocol/tokenlib.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char SECRET[] = "picl tokenlib test secret, 32+ bytes long";
static uint8_t signing_key[32];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (picl__nss_acquire() != PICL_OK ||
        picl__hkdf_sha256(signing_key, 32, SECRET, strlen(SECRET), NULL, 0, PICL_TOKENLIB_SIGNING_INFO,
                          strlen(PICL_TOKENLIB_SIGNING_INFO)) != PICL_OK)
        __builtin_trap();
    return 0;
}

static void check_accepted(const picl_tokenlib_payload *p)
{
    picl_tokenlib_payload q;
    char *token = NULL, *key = NULL;
    if (picl__tokenlib_mint(&token, &key, (const uint8_t *)SECRET, strlen(SECRET), p) != PICL_OK)
        __builtin_trap();
    if (picl__tokenlib_parse(&q, (const uint8_t *)SECRET, strlen(SECRET), token, strlen(token), 0, 0) !=
            PICL_OK ||
        memcmp(p, &q, sizeof q) != 0)
        __builtin_trap();
    free(token);
    free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    picl_tokenlib_payload p;
    uint8_t *raw;
    char *token;

    /* 1. the input as a token */
    if (picl__tokenlib_parse(&p, (const uint8_t *)SECRET, strlen(SECRET), (const char *)data, size, 0, 0) ==
        PICL_OK)
        check_accepted(&p);

    /* 2. the input as a signed payload */
    if (size > 1400)
        return 0;
    raw = malloc(size + 32);
    if (!raw)
        return 0;
    memcpy(raw, data, size);
    if (picl__hmac_sha256(raw + size, signing_key, 32, raw, size) != PICL_OK)
        __builtin_trap();
    token = picl__base64url_encode_alloc(raw, size + 32, 1);
    free(raw);
    if (!token)
        return 0;
    picl_status st =
        picl__tokenlib_parse(&p, (const uint8_t *)SECRET, strlen(SECRET), token, strlen(token), 0, 0);
    if (st == PICL_OK)
        check_accepted(&p);
    else if (st == PICL_ERROR_DECRYPT && size > 0)
        __builtin_trap(); /* it was signed */
    free(token);
    return 0;
}
