/* SPDX-License-Identifier: MPL-2.0 */
/* synctime.c -- SyncStorage timestamps (see synctime.h). */
#include "protocol/synctime.h"

#include <inttypes.h>
#include <stdio.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }

picl_status picl__synctime_parse(const char *text, size_t len, int64_t *centis)
{
    if (!text || !centis)
        return PICL_ERROR_INVALID_ARGUMENT;
    int64_t secs = 0, frac = 0;
    size_t i = 0;
    for (; i < len && is_digit(text[i]); i++) {
        if (i >= PICL_SYNCTIME_MAX_INT_DIGITS)
            return PICL_ERROR_ENCODING;
        secs = secs * 10 + (text[i] - '0');
    }
    if (i == 0)
        return PICL_ERROR_ENCODING;
    if (i < len && text[i] == '.') {
        size_t fd = 0;
        for (i++; i < len && is_digit(text[i]); i++, fd++) {
            if (fd >= PICL_SYNCTIME_MAX_FRAC_DIGITS)
                return PICL_ERROR_ENCODING;
            if (fd < 2)
                frac = frac * 10 + (text[i] - '0');
        }
        if (fd == 0)
            return PICL_ERROR_ENCODING;
        if (fd == 1)
            frac *= 10;
    }
    if (i != len)
        return PICL_ERROR_ENCODING;
    *centis = secs * 100 + frac;
    return PICL_OK;
}

void picl__synctime_format(char out[PICL_SYNCTIME_BUF], int64_t centis)
{
    if (centis < 0)
        centis = 0;
    snprintf(out, PICL_SYNCTIME_BUF, "%" PRId64 ".%02d", centis / 100, (int)(centis % 100));
}

int64_t picl__synctime_from_seconds(double d, int64_t dflt)
{
    if (!(d >= 0 && d < 1e12)) /* NaN fails too */
        return dflt;
    return (int64_t)(d * 100.0 + 0.5);
}

int64_t picl__synctime_from_json(const json_t *v, int64_t dflt)
{
    return json_is_number(v) ? picl__synctime_from_seconds(json_number_value(v), dflt) : dflt;
}
