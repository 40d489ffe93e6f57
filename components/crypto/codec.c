/* SPDX-License-Identifier: MPL-2.0 */
/* codec.c -- strict hex, base64 and base64url codecs (see codec.h). */
#include "crypto/codec.h"

#include <stdlib.h>
#include <string.h>

static const char hexdig[] = "0123456789abcdef";
static const char b64std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t picl__hex_encoded_len(size_t n) { return 2 * n; }

void picl__hex_encode(char *out, const uint8_t *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdig[in[i] >> 4];
        out[2 * i + 1] = hexdig[in[i] & 15];
    }
    out[2 * n] = 0;
}

char *picl__hex_encode_alloc(const uint8_t *in, size_t n)
{
    char *s = malloc(2 * n + 1);
    if (s)
        picl__hex_encode(s, in, n);
    return s;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

picl_status picl__hex_decode(uint8_t *out, size_t outcap, size_t *outlen, const char *in, size_t len)
{
    if (!in || (len % 2) != 0)
        return PICL_ERROR_ENCODING;
    for (size_t i = 0; i < len; i++)
        if (hexval((unsigned char)in[i]) < 0)
            return PICL_ERROR_ENCODING;
    if (len / 2 > outcap)
        return PICL_ERROR_TOO_LARGE;
    for (size_t i = 0; i < len / 2; i++)
        out[i] = (uint8_t)(hexval((unsigned char)in[2 * i]) << 4 | hexval((unsigned char)in[2 * i + 1]));
    if (outlen)
        *outlen = len / 2;
    return PICL_OK;
}

picl_status picl__hex_decode_exact(uint8_t *out, size_t want, const char *in)
{
    if (!in || strlen(in) != 2 * want)
        return PICL_ERROR_ENCODING;
    return picl__hex_decode(out, want, NULL, in, 2 * want);
}

picl_status picl__hex_decode_alloc(uint8_t **out, size_t *outlen, const char *in, size_t len)
{
    *out = NULL;
    uint8_t *buf = malloc(len / 2 + 1);
    if (!buf)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = picl__hex_decode(buf, len / 2 + 1, outlen, in, len);
    if (st != PICL_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return PICL_OK;
}

size_t picl__base64_encoded_len(size_t n) { return (n + 2) / 3 * 4; }

size_t picl__base64url_encoded_len(size_t n, int pad)
{
    return pad ? picl__base64_encoded_len(n) : (n / 3) * 4 + (n % 3 ? n % 3 + 1 : 0);
}

size_t picl__base64_decoded_max(size_t len) { return (len + 3) / 4 * 3; }

static void b64_encode(char *out, const uint8_t *in, size_t n, const char *alpha, int pad)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = alpha[v >> 18];
        out[o++] = alpha[(v >> 12) & 63];
        out[o++] = alpha[(v >> 6) & 63];
        out[o++] = alpha[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = alpha[v >> 18];
        out[o++] = alpha[(v >> 12) & 63];
        if (pad) {
            out[o++] = '=';
            out[o++] = '=';
        }
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = alpha[v >> 18];
        out[o++] = alpha[(v >> 12) & 63];
        out[o++] = alpha[(v >> 6) & 63];
        if (pad)
            out[o++] = '=';
    }
    out[o] = 0;
}

/* A base64 digit's value + 1 (0: not a digit of that alphabet), by byte: one
 * load per character in the decoder's two passes. */
/* clang-format off */
static const uint8_t b64std_val[256] = {
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, 63,  0,  0,  0, 64,
    53, 54, 55, 56, 57, 58, 59, 60, 61, 62,  0,  0,  0,  0,  0,  0,
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,  0,  0,  0,  0,  0,
     0, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
    42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
};
static const uint8_t b64url_val[256] = {
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0, 63,  0,  0,
    53, 54, 55, 56, 57, 58, 59, 60, 61, 62,  0,  0,  0,  0,  0,  0,
     0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,  0,  0,  0,  0, 64,
     0, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41,
    42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
};
/* clang-format on */

static int b64val(unsigned char c, int url) { return (int)(url ? b64url_val : b64std_val)[c] - 1; }

/* need_pad: 1 = padding required (std), 0 = padding optional but all-or-nothing. */
static picl_status b64_decode(uint8_t *out, size_t outcap, size_t *outlen, const char *in, size_t len,
                              int url, int need_pad)
{
    if (!in)
        return PICL_ERROR_ENCODING;
    size_t npad = 0;
    while (npad < len && npad < 3 && in[len - 1 - npad] == '=')
        npad++;
    if (npad > 2)
        return PICL_ERROR_ENCODING;
    size_t data = len - npad;
    if (npad || need_pad) {
        if (len % 4 != 0)
            return PICL_ERROR_ENCODING;
        /* the padding must be exactly what the data length calls for */
        if ((data % 4 == 2 && npad != 2) || (data % 4 == 3 && npad != 1) || (data % 4 == 0 && npad != 0))
            return PICL_ERROR_ENCODING;
    }
    if (data % 4 == 1)
        return PICL_ERROR_ENCODING;
    size_t n = data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0);
    for (size_t i = 0; i < data; i++)
        if (b64val((unsigned char)in[i], url) < 0)
            return PICL_ERROR_ENCODING;
    if (n > outcap)
        return PICL_ERROR_TOO_LARGE;
    size_t o = 0, i = 0;
    for (; i + 4 <= data; i += 4) {
        uint32_t v = (uint32_t)b64val((unsigned char)in[i], url) << 18 |
                     (uint32_t)b64val((unsigned char)in[i + 1], url) << 12 |
                     (uint32_t)b64val((unsigned char)in[i + 2], url) << 6 |
                     (uint32_t)b64val((unsigned char)in[i + 3], url);
        out[o++] = (uint8_t)(v >> 16);
        out[o++] = (uint8_t)(v >> 8);
        out[o++] = (uint8_t)v;
    }
    size_t rest = data - i;
    if (rest == 2) {
        uint32_t v = (uint32_t)b64val((unsigned char)in[i], url) << 18 |
                     (uint32_t)b64val((unsigned char)in[i + 1], url) << 12;
        if (v & 0xffff) /* non-zero pad bits: not canonical */
            return PICL_ERROR_ENCODING;
        out[o++] = (uint8_t)(v >> 16);
    } else if (rest == 3) {
        uint32_t v = (uint32_t)b64val((unsigned char)in[i], url) << 18 |
                     (uint32_t)b64val((unsigned char)in[i + 1], url) << 12 |
                     (uint32_t)b64val((unsigned char)in[i + 2], url) << 6;
        if (v & 0xff)
            return PICL_ERROR_ENCODING;
        out[o++] = (uint8_t)(v >> 16);
        out[o++] = (uint8_t)(v >> 8);
    }
    if (outlen)
        *outlen = o;
    return PICL_OK;
}

void picl__base64_encode(char *out, const uint8_t *in, size_t n) { b64_encode(out, in, n, b64std, 1); }

char *picl__base64_encode_alloc(const uint8_t *in, size_t n)
{
    char *s = malloc(picl__base64_encoded_len(n) + 1);
    if (s)
        picl__base64_encode(s, in, n);
    return s;
}

picl_status picl__base64_decode(uint8_t *out, size_t outcap, size_t *outlen, const char *in, size_t len)
{
    return b64_decode(out, outcap, outlen, in, len, 0, 1);
}

void picl__base64url_encode(char *out, const uint8_t *in, size_t n, int pad)
{
    b64_encode(out, in, n, b64url, pad);
}

char *picl__base64url_encode_alloc(const uint8_t *in, size_t n, int pad)
{
    char *s = malloc(picl__base64url_encoded_len(n, pad) + 1);
    if (s)
        picl__base64url_encode(s, in, n, pad);
    return s;
}

picl_status picl__base64url_decode(uint8_t *out, size_t outcap, size_t *outlen, const char *in, size_t len)
{
    return b64_decode(out, outcap, outlen, in, len, 1, 0);
}

static picl_status decode_alloc(uint8_t **out, size_t *outlen, const char *in, size_t len, int url)
{
    *out = NULL;
    size_t cap = picl__base64_decoded_max(len) + 1;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = url ? picl__base64url_decode(buf, cap, outlen, in, len)
                         : picl__base64_decode(buf, cap, outlen, in, len);
    if (st != PICL_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return PICL_OK;
}

picl_status picl__base64_decode_alloc(uint8_t **out, size_t *outlen, const char *in, size_t len)
{
    return decode_alloc(out, outlen, in, len, 0);
}

picl_status picl__base64url_decode_alloc(uint8_t **out, size_t *outlen, const char *in, size_t len)
{
    return decode_alloc(out, outlen, in, len, 1);
}
