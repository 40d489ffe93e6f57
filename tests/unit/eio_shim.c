/* SPDX-License-Identifier: MPL-2.0 */
/* eio_shim.c -- an LD_PRELOAD library for the I/O fault tests: write, pwrite,
 * writev, fsync and fdatasync fail with EIO or ENOSPC on chosen calls.
 *
 * Environment (read at each call, so a test can aim it precisely):
 *   PICL_EIO_PATH    only calls on a file whose path contains this string
 *                    (required: without it the shim never fails anything, so
 *                    sockets, pipes and stderr are never hit by accident)
 *   PICL_EIO_CALLS   comma list of write,pwrite,writev,fsync (fsync covers
 *                    fdatasync); default all
 *   PICL_EIO_ERRNO   EIO (default) or ENOSPC
 *   PICL_EIO_AT      the Nth matching call (1-based) is the first to fail;
 *                    default 1
 *   PICL_EIO_COUNT   how many calls fail from there; 0 (default) = all later
 *   PICL_EIO_SWITCH  a file: faults happen only while it exists (a test
 *                    creates and removes it to start and end the fault
 *                    without restarting the process)
 *   PICL_EIO_LOG     a file: one line per failed call ("fsync <path>"),
 *                    so a test can show the fault was really injected
 * Built by the Makefile as $(B)/tests/eio_shim.so; test-only, never linked
 * into anything. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long matched;

/* 1 when this call on fd must fail (errno is then set). */
static int should_fail(int fd, const char *call)
{
    const char *want = getenv("PICL_EIO_PATH");
    if (!want || !*want || fd < 0)
        return 0;
    const char *calls = getenv("PICL_EIO_CALLS");
    if (calls && *calls) {
        size_t n = strlen(call);
        const char *p = calls;
        int found = 0;
        while (p && *p && !found) {
            found = !strncmp(p, call, n) && (p[n] == ',' || p[n] == 0);
            p = strchr(p, ',');
            p = p ? p + 1 : NULL;
        }
        if (!found)
            return 0;
    }
    const char *sw = getenv("PICL_EIO_SWITCH");
    struct stat sb;
    if (sw && *sw && stat(sw, &sb) != 0)
        return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = 0;
    if (!strstr(path, want))
        return 0;
    const char *at_s = getenv("PICL_EIO_AT"), *count_s = getenv("PICL_EIO_COUNT");
    unsigned long at = at_s && *at_s ? strtoul(at_s, NULL, 10) : 1,
                  count = count_s ? strtoul(count_s, NULL, 10) : 0;
    pthread_mutex_lock(&lock);
    unsigned long k = ++matched;
    pthread_mutex_unlock(&lock);
    if (k < at || (count && k >= at + count))
        return 0;
    const char *log = getenv("PICL_EIO_LOG");
    if (log && *log) {
        /* the real write: the log is not a file we fail (different path) */
        int lfd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (lfd >= 0) {
            char line[4200];
            int len = snprintf(line, sizeof line, "%s %s\n", call, path);
            ssize_t (*real)(int, const void *, size_t) =
                (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
            if (real && len > 0)
                (void)!real(lfd, line, (size_t)len);
            close(lfd);
        }
    }
    const char *e = getenv("PICL_EIO_ERRNO");
    errno = e && !strcmp(e, "ENOSPC") ? ENOSPC : EIO;
    return 1;
}

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*pwrite64_fn)(int, const void *, size_t, off64_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef int (*fsync_fn)(int);
typedef fsync_fn fdatasync_fn;

/* the next definition of name (libc's) */
#define REAL(name)                                                                                           \
    static name##_fn real_##name;                                                                            \
    if (!real_##name)                                                                                        \
    real_##name = (name##_fn)dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(write);
    if (should_fail(fd, "write"))
        return -1;
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite);
    if (should_fail(fd, "pwrite"))
        return -1;
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    REAL(pwrite64);
    if (should_fail(fd, "pwrite"))
        return -1;
    return real_pwrite64(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    REAL(writev);
    if (should_fail(fd, "writev"))
        return -1;
    return real_writev(fd, iov, cnt);
}

int fsync(int fd)
{
    REAL(fsync);
    if (should_fail(fd, "fsync"))
        return -1;
    return real_fsync(fd);
}

int fdatasync(int fd)
{
    REAL(fdatasync);
    if (should_fail(fd, "fsync"))
        return -1;
    return real_fdatasync(fd);
}
