/* SPDX-License-Identifier: MPL-2.0 */
/* nss.h -- NSS lifecycle for a library that lives inside other processes. */
#ifndef PICL_CRYPTO_NSS_H
#define PICL_CRYPTO_NSS_H

#include "picl_status.h"

/*
 * libpicl never calls NSS_Init/NSS_Shutdown: the host (Firefox) may have NSS
 * up already.  picl__nss_acquire() makes sure NSS is usable:
 *   - if NSS is already initialised by the host and no context of ours is
 *     open, it uses the host's NSS and opens nothing;
 *   - otherwise it opens (once, reference counted) an NSS_InitContext with no
 *     databases, read-only.
 * picl__nss_release() drops one reference; the last one shuts down only the
 * context we opened.  Both are thread-safe.
 */
picl_status picl__nss_acquire(void);
void picl__nss_release(void);

/* Like picl__nss_acquire(), but when NSS is not up yet the context it opens
 * is read-write on the key database in `dir` (created if missing), so that
 * the internal key slot - what SDR uses - is that database.  When NSS is
 * already up (a host, or another holder) it behaves like picl__nss_acquire(). */
picl_status picl__nss_acquire_dir(const char *dir);

/* 1 when our own no-DB context is open (for tests), else 0. */
int picl__nss_own_context_open(void);

/*
 * A context on a profile directory (key4.db), for SDR.  `readwrite` opens
 * the database writable.  *ctx receives an opaque handle to pass to
 * picl__nss_profile_close(), which shuts down this context only.
 */
typedef struct picl_nss_profile picl_nss_profile;
picl_status picl__nss_profile_open(const char *dir, int readwrite, picl_nss_profile **ctx);
void picl__nss_profile_close(picl_nss_profile *ctx);

#endif
