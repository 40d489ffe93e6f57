/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_codec.c -- libFuzzer target: the text codecs every parser leans on:
 * hex, base64 and base64url decoding (fixed-size, exact and allocating),
 * the SyncStorage timestamp parser, kid text ("A:3") and the storage
 * id/collection name checks.  Whatever a decoder accepts must encode back to
 * an input the decoder maps to the same bytes; a refusal is ENCODING or
 * TOO_LARGE, nothing else. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/records.h"
#include "crypto/codec.h"
#include "protocol/synctime.h"
#include "storage/storage_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void refused_ok(picl_status st)
{
    if (st != PICL_ERROR_ENCODING && st != PICL_ERROR_TOO_LARGE)
        __builtin_trap();
}

static void hex(const char *s, size_t n)
{
    uint8_t small[16], *big = NULL;
    size_t len = 0, len2 = 0;
    picl_status st = picl__hex_decode(small, sizeof small, &len, s, n);
    if (st == PICL_OK) {
        char enc[sizeof small * 2 + 1];
        if (len * 2 != n)
            __builtin_trap();
        picl__hex_encode(enc, small, len);
        if (strncasecmp(enc, s, n) != 0)
            __builtin_trap();
    } else {
        refused_ok(st);
    }
    st = picl__hex_decode_alloc(&big, &len2, s, n);
    if (st == PICL_OK) {
        char *enc = picl__hex_encode_alloc(big, len2);
        if (!enc || strlen(enc) != n || strncasecmp(enc, s, n) != 0)
            __builtin_trap();
        free(enc);
        free(big);
    } else if (st != PICL_ERROR_ENCODING && st != PICL_ERROR_NO_MEMORY) {
        __builtin_trap();
    }
    if (n == 32) {
        uint8_t x[16];
        st = picl__hex_decode_exact(x, sizeof x, s);
        if (st != PICL_OK)
            refused_ok(st);
    }
}

static void b64(const char *s, size_t n, int url)
{
    uint8_t *out = NULL, *again = NULL;
    size_t len = 0, len2 = 0;
    picl_status st =
        url ? picl__base64url_decode_alloc(&out, &len, s, n) : picl__base64_decode_alloc(&out, &len, s, n);
    if (st != PICL_OK) {
        if (st != PICL_ERROR_ENCODING && st != PICL_ERROR_NO_MEMORY)
            __builtin_trap();
        return;
    }
    if (len > picl__base64_decoded_max(n))
        __builtin_trap();
    /* encode and decode again: the same bytes */
    char *enc = url ? picl__base64url_encode_alloc(out, len, 0) : picl__base64_encode_alloc(out, len);
    if (!enc)
        __builtin_trap();
    st = url ? picl__base64url_decode_alloc(&again, &len2, enc, strlen(enc))
             : picl__base64_decode_alloc(&again, &len2, enc, strlen(enc));
    if (st != PICL_OK || len2 != len || memcmp(again, out, len) != 0)
        __builtin_trap();
    /* a too small buffer is refused, never overrun */
    if (len > 0) {
        uint8_t *tight = malloc(len - 1 ? len - 1 : 1);
        size_t got = 0;
        st = url ? picl__base64url_decode(tight, len - 1, &got, s, n)
                 : picl__base64_decode(tight, len - 1, &got, s, n);
        if (st == PICL_OK)
            __builtin_trap();
        free(tight);
    }
    free(enc);
    free(again);
    free(out);
}

static void timestamp(const char *s)
{
    int64_t c = -1;
    if (picl__synctime_parse(s, strlen(s), &c) == PICL_OK) {
        /* printed back with two decimals, it parses to the same value */
        char buf[PICL_SYNCTIME_BUF];
        int64_t c2 = -1;
        if (c < 0)
            __builtin_trap();
        picl__synctime_format(buf, c);
        if (picl__synctime_parse(buf, strlen(buf), &c2) != PICL_OK || c2 != c)
            __builtin_trap();
    }
}

static void kid(const char *s)
{
    picl_class_entry e;
    if (picl__kid_parse(s, &e) == PICL_OK) {
        char back[16];
        picl__kid_format(back, &e);
        if (strcmp(back, s) != 0)
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t n = size - 1;
    char *s = malloc(n + 1);
    if (!s)
        return 0;
    memcpy(s, data + 1, n);
    s[n] = 0;
    switch (data[0] % 6) {
    case 0:
        hex(s, n);
        break;
    case 1:
        b64(s, n, 0);
        break;
    case 2:
        b64(s, n, 1);
        break;
    case 3:
        timestamp(s);
        break;
    case 4:
        kid(s);
        break;
    default:
        if (storage__valid_id(s, n) && (strlen(s) != n || n > 64))
            __builtin_trap();
        (void)storage__valid_coll(s);
        break;
    }
    free(s);
    return 0;
}
