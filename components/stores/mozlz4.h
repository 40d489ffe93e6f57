/* SPDX-License-Identifier: MPL-2.0 */
/* mozlz4.h -- Firefox's mozLz4 files (session store, search.json.mozlz4):
 * the magic "mozLz40\0", the decompressed size as 4 bytes little-endian,
 * then one LZ4 block. */
#ifndef PICL_STORES_MOZLZ4_H
#define PICL_STORES_MOZLZ4_H

#include <stddef.h>
#include <stdint.h>
#include "picl.h"

/* The largest decompressed size accepted (a session store is a few MiB). */
#define PICL_MOZLZ4_MAX (64u * 1024u * 1024u)

/* Decodes in[0..len) into a malloc()ed NUL-terminated buffer (*out, *outlen
 * without the NUL).  PICL_ERROR_ENCODING for a wrong magic, a truncated
 * header, a block that does not decompress to exactly the announced size;
 * PICL_ERROR_TOO_LARGE for a size over PICL_MOZLZ4_MAX.  On error *out is NULL. */
picl_status picl__mozlz4_decode(const uint8_t *in, size_t len, char **out, size_t *outlen);

/* Encodes (for tests and for writing such files): *out malloc()ed. */
picl_status picl__mozlz4_encode(const char *in, size_t len, uint8_t **out, size_t *outlen);

/* Reads and decodes a file; PICL_ERROR_NOT_FOUND when it is missing. */
picl_status picl__mozlz4_read_file(const char *path, char **out, size_t *outlen);

#endif
