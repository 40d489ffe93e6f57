/* SPDX-License-Identifier: MPL-2.0 */
/* profile.c -- Firefox profile directories and their .parentlock (see profile.h). */
#include "stores/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One fcntl lock per (device, inode) of a .parentlock, shared in the process. */
typedef struct plock {
    dev_t dev;
    ino_t ino;
    int fd;
    unsigned refs;
    char *created; /* the path when we created the file (removed at the end) */
    struct plock *next;
} plock;

static pthread_mutex_t locks_mutex = PTHREAD_MUTEX_INITIALIZER;
static plock *locks;

struct picl_profile {
    char *dir;
    plock *lock;
};

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static picl_status join(char *buf, size_t n, const char *dir, const char *name)
{
    int w = snprintf(buf, n, "%s/%s", dir, name);
    return (w < 0 || (size_t)w >= n) ? PICL_ERROR_TOO_LARGE : PICL_OK;
}

/* 1 when dir holds a file every Firefox profile has (one is enough). */
static int looks_like_profile(const char *dir)
{
    static const char *const marks[] = {"prefs.js",    "times.json", "places.sqlite",     "key4.db",
                                        "logins.json", "cert9.db",   "compatibility.ini", ".parentlock"};
    char path[4096];
    struct stat st;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
        if (join(path, sizeof path, dir, marks[i]) == PICL_OK && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            return 1;
    }
    return 0;
}

/* Whole-file write lock, F_SETLK (never waits), as Firefox's nsProfileLock. */
static int try_lock(int fd)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    return fcntl(fd, F_SETLK, &fl);
}

/* The registry entry of the file at path, or NULL; locks_mutex held.  Uses
 * stat(), never open(): opening and closing the file would drop our lock. */
static plock *find_lock(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    for (plock *l = locks; l; l = l->next)
        if (l->dev == st.st_dev && l->ino == st.st_ino)
            return l;
    return NULL;
}

/* F_GETLK on path: PICL_OK (free, or no file), PICL_ERROR_PROFILE_LOCKED, or
 * PICL_ERROR_IO.  locks_mutex held and path not one of ours. */
static picl_status probe(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? PICL_OK : PICL_ERROR_IO;
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    int r = fcntl(fd, F_GETLK, &fl);
    close(fd);
    if (r != 0)
        return PICL_ERROR_IO;
    return fl.l_type == F_UNLCK ? PICL_OK : PICL_ERROR_PROFILE_LOCKED;
}

picl_status picl__profile_check_unlocked(const char *dir)
{
    char path[4096];
    if (!dir || join(path, sizeof path, dir, ".parentlock") != PICL_OK)
        return PICL_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&locks_mutex);
    picl_status rc = find_lock(path) ? PICL_OK : probe(path);
    pthread_mutex_unlock(&locks_mutex);
    return rc;
}

picl_status picl__profile_open(const char *dir, picl_profile **out, char *err, size_t errlen)
{
    char path[4096];
    struct stat st;
    picl_status rc = PICL_OK;
    int fd = -1, existed = 1;
    *out = NULL;
    seterr(err, errlen, "%s", "");
    if (!dir || !*dir) {
        seterr(err, errlen, "no profile directory given");
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        seterr(err, errlen, "profile directory %s does not exist", dir);
        return PICL_ERROR_NOT_FOUND;
    }
    if (!looks_like_profile(dir)) {
        seterr(err, errlen, "%s is not a Firefox profile", dir);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    if (join(path, sizeof path, dir, ".parentlock") != PICL_OK) {
        seterr(err, errlen, "profile path too long");
        return PICL_ERROR_TOO_LARGE;
    }
    picl_profile *p = calloc(1, sizeof *p);
    if (!p || !(p->dir = strdup(dir))) {
        free(p);
        return PICL_ERROR_NO_MEMORY;
    }
    pthread_mutex_lock(&locks_mutex);
    plock *l = find_lock(path);
    if (l) { /* this process holds it already: share it */
        l->refs++;
        p->lock = l;
        goto done;
    }
    /* Ask first, so a locked profile is refused without creating anything. */
    if ((rc = probe(path)) != PICL_OK)
        goto locked;
    existed = access(path, F_OK) == 0;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || fstat(fd, &st) != 0) {
        rc = PICL_ERROR_IO;
        seterr(err, errlen, "cannot open %s: %s", path, strerror(errno));
        goto done;
    }
    if (try_lock(fd) != 0) {
        rc = (errno == EACCES || errno == EAGAIN) ? PICL_ERROR_PROFILE_LOCKED : PICL_ERROR_IO;
        goto locked;
    }
    if (!(l = calloc(1, sizeof *l))) {
        rc = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    l->fd = fd;
    l->refs = 1;
    if (!existed && !(l->created = strdup(path))) {
        free(l);
        rc = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    l->next = locks;
    locks = l;
    p->lock = l;
    fd = -1; /* owned by the entry now */
    goto done;
locked:
    if (rc == PICL_ERROR_PROFILE_LOCKED)
        seterr(err, errlen, "Firefox is running on %s (quit it first)", dir);
    else
        seterr(err, errlen, "cannot test the lock of %s", dir);
done:
    pthread_mutex_unlock(&locks_mutex);
    if (rc != PICL_OK) {
        if (fd >= 0) {
            if (!existed)
                unlink(path);
            close(fd);
        }
        free(p->dir);
        free(p);
        return rc;
    }
    *out = p;
    return PICL_OK;
}

void picl__profile_close(picl_profile *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&locks_mutex);
    plock *l = p->lock;
    if (l && --l->refs == 0) {
        for (plock **pp = &locks; *pp; pp = &(*pp)->next) {
            if (*pp == l) {
                *pp = l->next;
                break;
            }
        }
        if (l->created) /* leave the profile's file set as we found it */
            unlink(l->created);
        close(l->fd); /* releases the fcntl lock */
        free(l->created);
        free(l);
    }
    pthread_mutex_unlock(&locks_mutex);
    free(p->dir);
    free(p);
}

const char *picl__profile_dir(const picl_profile *p) { return p->dir; }

picl_status picl__profile_path(const picl_profile *p, const char *name, char *buf, size_t n)
{
    return join(buf, n, p->dir, name);
}
