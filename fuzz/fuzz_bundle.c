/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_bundle.c -- libFuzzer target: keyserver bundles as a client receives
 * them (picl__bundle_open_hex, picl__bundle_open) for each payload length of
 * the protocol; random input never opens, every failure is DECRYPT with the
 * output zeroed.  Inputs with a valid seal (the payload sealed first, then
 * the input's first byte flips one bit or none) open only when unchanged. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/nss.h"
#include "protocol/bundle.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t key[PICL_BUNDLE_KEY_BYTES];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (int i = 0; i < PICL_BUNDLE_KEY_BYTES; i++)
        key[i] = (uint8_t)(0x80 + i);
    if (picl__nss_acquire() != PICL_OK)
        __builtin_trap();
    return 0;
}

static const struct {
    const char *ctx;
    size_t len;
} KINDS[] = {{PICL_BUNDLE_AUTH_FINISH, 32},
             {PICL_BUNDLE_SESSION_CREATE, 64},
             {PICL_BUNDLE_PASSWORD_CHANGE, 64},
             {PICL_BUNDLE_ACCOUNT_KEYS, 64},
             {PICL_BUNDLE_ACCOUNT_RESET, 288}};

static int all_zero(const uint8_t *p, size_t n)
{
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t out[288];
    if (size < 1)
        return 0;
    const size_t kinds = sizeof KINDS / sizeof KINDS[0];
    size_t k = data[0] % kinds;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;

    /* 1. the input as hex and as raw bytes: never opens */
    memset(out, 0xEE, sizeof out);
    if (picl__bundle_open_hex(out, KINDS[k].len, key, KINDS[k].ctx, (const char *)rest, n) !=
            PICL_ERROR_DECRYPT ||
        !all_zero(out, KINDS[k].len))
        __builtin_trap();
    memset(out, 0xEE, sizeof out);
    if (picl__bundle_open(out, KINDS[k].len, key, KINDS[k].ctx, rest, n) != PICL_ERROR_DECRYPT ||
        !all_zero(out, KINDS[k].len))
        __builtin_trap();

    /* 2. the input as a payload: sealed, maybe one bit flipped, opened */
    if (n < 1 || n > PICL_BUNDLE_MAX_PAYLOAD)
        return 0;
    char *hex = NULL;
    if (picl__bundle_seal_hex(&hex, key, KINDS[k].ctx, rest, n) != PICL_OK)
        __builtin_trap();
    size_t hl = strlen(hex);
    size_t flip = (size_t)data[0] * 7 % (hl + 1);
    if (flip < hl) {
        /* another hex digit at one place: the bundle no longer opens */
        hex[flip] = hex[flip] == '0' ? '1' : '0';
    }
    uint8_t *got = malloc(n);
    if (!got)
        __builtin_trap();
    picl_status st = picl__bundle_open_hex(got, n, key, KINDS[k].ctx, hex, hl);
    if (flip < hl) {
        if (st != PICL_ERROR_DECRYPT || !all_zero(got, n))
            __builtin_trap();
    } else if (st != PICL_OK || memcmp(got, rest, n) != 0) {
        __builtin_trap();
    }
    /* the right bytes under another context never open */
    size_t other = (k + 1) % kinds;
    if (flip >= hl && strcmp(KINDS[other].ctx, KINDS[k].ctx) != 0 &&
        picl__bundle_open_hex(got, n, key, KINDS[other].ctx, hex, hl) != PICL_ERROR_DECRYPT)
        __builtin_trap();
    free(got);
    free(hex);
    return 0;
}
