/* SPDX-License-Identifier: MPL-2.0 */
/* mozlz4.c -- the mozLz4 container of Firefox's session store (mozlz4.h), on
 * Debian's liblz4. */
#include "stores/mozlz4.h"
#include "stores/fileutil.h"

#include <lz4.h>
#include <stdlib.h>
#include <string.h>

static const char MAGIC[8] = {'m', 'o', 'z', 'L', 'z', '4', '0', '\0'};

picl_status picl__mozlz4_decode(const uint8_t *in, size_t len, char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (!in || len < 12 || memcmp(in, MAGIC, sizeof MAGIC))
        return PICL_ERROR_ENCODING;
    uint32_t size = (uint32_t)in[8] | (uint32_t)in[9] << 8 | (uint32_t)in[10] << 16 | (uint32_t)in[11] << 24;
    if (size > PICL_MOZLZ4_MAX)
        return PICL_ERROR_TOO_LARGE;
    if (len - 12 > (size_t)INT32_MAX)
        return PICL_ERROR_TOO_LARGE;
    char *buf = malloc((size_t)size + 1);
    if (!buf)
        return PICL_ERROR_NO_MEMORY;
    int got = LZ4_decompress_safe((const char *)in + 12, buf, (int)(len - 12), (int)size);
    if (got < 0 || (uint32_t)got != size) {
        free(buf);
        return PICL_ERROR_ENCODING;
    }
    buf[size] = 0;
    *out = buf;
    *outlen = size;
    return PICL_OK;
}

picl_status picl__mozlz4_encode(const char *in, size_t len, uint8_t **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (len > PICL_MOZLZ4_MAX)
        return PICL_ERROR_TOO_LARGE;
    int bound = LZ4_compressBound((int)len);
    uint8_t *buf = malloc(12 + (size_t)bound);
    if (!buf)
        return PICL_ERROR_NO_MEMORY;
    memcpy(buf, MAGIC, sizeof MAGIC);
    for (int i = 0; i < 4; i++)
        buf[8 + i] = (uint8_t)((uint32_t)len >> (8 * i));
    int n = LZ4_compress_default(in, (char *)buf + 12, (int)len, bound);
    if (n <= 0) {
        free(buf);
        return PICL_ERROR_INTERNAL;
    }
    *out = buf;
    *outlen = 12 + (size_t)n;
    return PICL_OK;
}

picl_status picl__mozlz4_read_file(const char *path, char **out, size_t *outlen)
{
    char *raw = NULL;
    size_t len = 0;
    *out = NULL;
    *outlen = 0;
    picl_status st = picl__read_file(path, PICL_MOZLZ4_MAX, &raw, &len);
    if (st == PICL_OK)
        st = picl__mozlz4_decode((const uint8_t *)raw, len, out, outlen);
    free(raw);
    return st;
}
