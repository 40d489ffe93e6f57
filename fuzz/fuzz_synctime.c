/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_synctime.c -- libFuzzer target: THE SyncStorage timestamp parser
 * (picl__synctime_parse) and its formatter.  Whatever the parser accepts is
 * non-negative, bounded by the grammar, and formats to a text that parses
 * back to the same centis; a refusal is ENCODING and leaves the output as it
 * was. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "protocol/synctime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    int64_t c = -7;
    picl_status st = picl__synctime_parse(s, size, &c);
    if (st != PICL_OK) {
        if (st != PICL_ERROR_ENCODING || c != -7)
            __builtin_trap();
        return 0;
    }
    /* accepted: digits, at most one '.', nothing else */
    size_t digits = 0;
    while (digits < size && s[digits] >= '0' && s[digits] <= '9')
        digits++;
    if (!digits || digits > PICL_SYNCTIME_MAX_INT_DIGITS || size > 33 || memchr(s, 0, size))
        __builtin_trap();
    if (c < 0 || c >= (int64_t)100000000000000)
        __builtin_trap();
    char out[PICL_SYNCTIME_BUF];
    int64_t back = -1;
    picl__synctime_format(out, c);
    if (picl__synctime_parse(out, strlen(out), &back) != PICL_OK || back != c)
        __builtin_trap();
    /* the formatted text has exactly two decimals */
    const char *dot = strchr(out, '.');
    if (!dot || strlen(dot) != 3)
        __builtin_trap();
    return 0;
}
