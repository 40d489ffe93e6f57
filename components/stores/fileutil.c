/* SPDX-License-Identifier: MPL-2.0 */
/* fileutil.c -- crash-safe file replacement and bounded reads (see fileutil.h). */
#include "stores/fileutil.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

picl_status picl__write_file_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return PICL_ERROR_TOO_LARGE;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return PICL_ERROR_IO;
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            return PICL_ERROR_IO;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        return PICL_ERROR_IO;
    }
    if (rename(tmp, path) != 0) {
        unlink(tmp);
        return PICL_ERROR_IO;
    }
    /* make the rename itself durable */
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    int dfd = open(dirname(dirbuf), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return PICL_OK;
}

picl_status picl__read_file(const char *path, size_t max, char **data, size_t *len)
{
    *data = NULL;
    if (len)
        *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return errno == ENOENT ? PICL_ERROR_NOT_FOUND : PICL_ERROR_IO;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    picl_status st = PICL_OK;
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, fp);
        n += r;
        if (n > max) {
            st = PICL_ERROR_TOO_LARGE;
            break;
        }
        if (r == 0) {
            if (ferror(fp))
                st = PICL_ERROR_IO;
            break;
        }
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
            } else {
                buf = nb;
            }
        }
    }
    fclose(fp);
    if (!buf)
        return PICL_ERROR_NO_MEMORY;
    if (st != PICL_OK) {
        free(buf);
        return st;
    }
    buf[n] = 0;
    *data = buf;
    if (len)
        *len = n;
    return PICL_OK;
}
