/* SPDX-License-Identifier: MPL-2.0 */
/* buf.c -- srv_buf, the capped growable text buffer of http.h (hand-written JSON). */
#include <stdarg.h>
#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"

void srv_buf_init(srv_buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max ? max : (size_t)1 << 30;
}

static int buf_reserve(srv_buf *b, size_t extra)
{
    if (b->failed)
        return 0;
    if (extra > b->max || b->len + extra + 1 > b->max) {
        b->failed = 1;
        return 0;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 1;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need)
        ncap *= 2;
    if (ncap > b->max)
        ncap = b->max;
    char *p = realloc(b->data, ncap);
    if (!p) {
        b->failed = 1;
        return 0;
    }
    b->data = p;
    b->cap = ncap;
    return 1;
}

void srv_buf_append(srv_buf *b, const void *data, size_t len)
{
    if (!buf_reserve(b, len))
        return;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = 0;
}

void srv_buf_puts(srv_buf *b, const char *s) { srv_buf_append(b, s, strlen(s)); }

void srv_buf_printf(srv_buf *b, const char *fmt, ...)
{
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        srv_buf_append(b, small, (size_t)n);
        return;
    }
    if (!buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* 1 when a byte of the 8 in v is < 0x20, '"' or '\\' (exact for "any"). */
static int word_needs_escape(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t q = v ^ (ones * '"'), bs = v ^ (ones * '\\');
    return (((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((bs - ones) & ~bs)) & highs ? 1 : 0;
}

/* The length of the prefix of s that srv_buf_json_string copies as is. */
static size_t plain_run(const unsigned char *s, size_t len)
{
    size_t i = 0;
#ifdef __SSE2__
    /* sixteen at a time: a byte <= 0x1f (max(b, 0x1f) == 0x1f), '"' or '\\' */
    const __m128i ctl = _mm_set1_epi8(0x1f), quote = _mm_set1_epi8('"'), bsl = _mm_set1_epi8('\\');
    for (; i + 16 <= len; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bsl)));
        if (_mm_movemask_epi8(hit))
            break;
    }
#endif
    for (; i + 8 <= len; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        if (word_needs_escape(v))
            break;
    }
    while (i < len && s[i] >= 0x20 && s[i] != '"' && s[i] != '\\')
        i++;
    return i;
}

void srv_buf_json_string(srv_buf *b, const char *s, size_t len)
{
    static const char hexd[] = "0123456789abcdef";
    /* Worst case 6 bytes per input byte: reserve once. */
    if (len > (b->max / 6) || !buf_reserve(b, len * 6 + 2)) {
        b->failed = 1;
        return;
    }
    char *o = b->data + b->len;
    *o++ = '"';
    for (size_t i = 0; i < len; i++) {
        /* the run of bytes that need no escape, copied at once (a payload
         * is mostly one: base64 and JSON punctuation) */
        size_t run = plain_run((const unsigned char *)s + i, len - i);
        if (run) {
            memcpy(o, s + i, run);
            o += run;
            i += run;
            if (i == len)
                break;
        }
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = (char)ch;
        } else if (ch < 0x20) {
            *o++ = '\\';
            switch (ch) {
            case '\n':
                *o++ = 'n';
                break;
            case '\r':
                *o++ = 'r';
                break;
            case '\t':
                *o++ = 't';
                break;
            default:
                *o++ = 'u';
                *o++ = '0';
                *o++ = '0';
                *o++ = hexd[ch >> 4];
                *o++ = hexd[ch & 15];
            }
        } else {
            *o++ = (char)ch;
        }
    }
    *o++ = '"';
    *o = 0;
    b->len = (size_t)(o - b->data);
}

char *srv_buf_take(srv_buf *b, size_t *len)
{
    if (b->failed) {
        srv_buf_free(b);
        return NULL;
    }
    if (!b->data) {
        b->data = malloc(1);
        if (!b->data)
            return NULL;
        b->data[0] = 0;
    }
    char *d = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

void srv_buf_free(srv_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
