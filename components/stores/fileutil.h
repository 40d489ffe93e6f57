/* SPDX-License-Identifier: MPL-2.0 */
/* fileutil.h -- crash-safe file replacement and bounded whole-file reads. */
#ifndef PICL_STORES_FILEUTIL_H
#define PICL_STORES_FILEUTIL_H

#include <stddef.h>
#include "picl.h"

/* Replaces path with data: writes path.tmp-<pid>, fsync()s it, rename()s it
 * over path and fsync()s the directory, so a crash leaves the old file or the
 * new one, never a mix.  `mode` is used when creating (e.g. 0600). */
picl_status picl__write_file_atomic(const char *path, const void *data, size_t len, unsigned mode);

/* Reads a whole file (at most max bytes, else PICL_ERROR_TOO_LARGE) into a
 * malloc()ed NUL-terminated buffer.  A missing file is PICL_ERROR_NOT_FOUND. */
picl_status picl__read_file(const char *path, size_t max, char **data, size_t *len);

#endif
