/* SPDX-License-Identifier: MPL-2.0 */
/* nss.c -- NSS lifecycle: contexts of our own, never NSS_Init (see nss.h). */
#include "crypto/nss.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <nss.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned refs;           /* holders of picl__nss_acquire() */
static NSSInitContext *own_ctx; /* our no-DB context, or NULL in host mode */

static picl_status acquire(const char *dir)
{
    picl_status st = PICL_OK;
    pthread_mutex_lock(&lock);
    if (refs == 0) {
        if (NSS_IsInitialized()) {
            own_ctx = NULL; /* the host's NSS (Firefox, a test) serves us */
        } else if (dir) {
            char spec[4096];
            int n = snprintf(spec, sizeof spec, "sql:%s", dir);
            if (n < 0 || (size_t)n >= sizeof spec)
                st = PICL_ERROR_TOO_LARGE;
            else
                own_ctx = NSS_InitContext(spec, "", "", "", NULL,
                                          NSS_INIT_NOMODDB | NSS_INIT_NOROOTINIT | NSS_INIT_OPTIMIZESPACE);
            if (st == PICL_OK && !own_ctx)
                st = PICL_ERROR_NSS_INIT;
        } else {
            own_ctx = NSS_InitContext("", "", "", "", NULL,
                                      NSS_INIT_READONLY | NSS_INIT_NOCERTDB | NSS_INIT_NOMODDB |
                                          NSS_INIT_FORCEOPEN | NSS_INIT_NOROOTINIT | NSS_INIT_OPTIMIZESPACE);
            if (!own_ctx)
                st = PICL_ERROR_NSS_INIT;
        }
    }
    if (st == PICL_OK)
        refs++;
    pthread_mutex_unlock(&lock);
    return st;
}

picl_status picl__nss_acquire(void) { return acquire(NULL); }

picl_status picl__nss_acquire_dir(const char *dir)
{
    if (!dir || !*dir)
        return PICL_ERROR_INVALID_ARGUMENT;
    return acquire(dir);
}

void picl__nss_release(void)
{
    pthread_mutex_lock(&lock);
    if (refs > 0 && --refs == 0 && own_ctx) {
        NSS_ShutdownContext(own_ctx);
        own_ctx = NULL;
    }
    pthread_mutex_unlock(&lock);
}

int picl__nss_own_context_open(void)
{
    pthread_mutex_lock(&lock);
    int open = own_ctx != NULL;
    pthread_mutex_unlock(&lock);
    return open;
}

struct picl_nss_profile {
    NSSInitContext *ctx;
};

picl_status picl__nss_profile_open(const char *dir, int readwrite, picl_nss_profile **out)
{
    *out = NULL;
    if (!dir || !*dir)
        return PICL_ERROR_INVALID_ARGUMENT;
    char spec[4096];
    int n = snprintf(spec, sizeof spec, "sql:%s", dir);
    if (n < 0 || (size_t)n >= sizeof spec)
        return PICL_ERROR_TOO_LARGE;
    picl_nss_profile *p = calloc(1, sizeof *p);
    if (!p)
        return PICL_ERROR_NO_MEMORY;
    PRUint32 flags = NSS_INIT_NOROOTINIT | NSS_INIT_OPTIMIZESPACE | NSS_INIT_NOMODDB;
    if (!readwrite)
        flags |= NSS_INIT_READONLY;
    p->ctx = NSS_InitContext(spec, "", "", "", NULL, flags);
    if (!p->ctx) {
        free(p);
        return PICL_ERROR_NSS_INIT;
    }
    *out = p;
    return PICL_OK;
}

void picl__nss_profile_close(picl_nss_profile *p)
{
    if (!p)
        return;
    NSS_ShutdownContext(p->ctx);
    free(p);
}
