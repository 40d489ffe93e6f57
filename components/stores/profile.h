/* SPDX-License-Identifier: MPL-2.0 */
/* profile.h -- a Firefox profile directory: is it one, and is Firefox running on it. */
#ifndef PICL_STORES_PROFILE_H
#define PICL_STORES_PROFILE_H

#include <stddef.h>
#include "picl.h"

/*
 * A running Firefox holds an fcntl() write lock on DIR/.parentlock (and points
 * the DIR/lock symlink at "IP:+PID").  After a clean quit the symlink stays
 * behind, stale, so only the fcntl lock means "running"; the symlink is never
 * looked at.
 *
 * picl__profile_open() checks DIR and takes that same lock, so a browser
 * started while we work sees the profile as in use.  Results:
 *   PICL_ERROR_NOT_FOUND          DIR does not exist or is not a directory
 *   PICL_ERROR_INVALID_ARGUMENT   DIR holds none of the files of a profile
 *                                 (prefs.js, times.json, places.sqlite,
 *                                 key4.db, logins.json, cert9.db,
 *                                 compatibility.ini, .parentlock)
 *   PICL_ERROR_PROFILE_LOCKED     another process holds the lock
 *   PICL_ERROR_IO                 the lock file could not be opened
 * On any error nothing in DIR was created or changed.  On success DIR/.parentlock
 * exists (created empty if it was missing, as Firefox does, and then removed
 * again by the last close, so the profile's file set is left as found).
 *
 * fcntl locks belong to a process and the first close() of ANY descriptor of
 * the file drops them, so the lock is shared, reference counted, by all
 * handles of one process on the same directory and released with the last
 * picl__profile_close().  Thread-safe.
 *
 * `err` (may be NULL) receives a one-line message on failure.
 * Ownership: *out is freed with picl__profile_close() (NULL-safe).
 */
typedef struct picl_profile picl_profile;

picl_status picl__profile_open(const char *dir, picl_profile **out, char *err, size_t errlen);
void picl__profile_close(picl_profile *p);

/* The directory as given to open (borrowed, lives as long as p). */
const char *picl__profile_dir(const picl_profile *p);

/* buf = "<dir>/<name>"; PICL_ERROR_TOO_LARGE when it does not fit. */
picl_status picl__profile_path(const picl_profile *p, const char *name, char *buf, size_t n);

/* Without taking anything: PICL_OK when no process holds the lock (or there
 * is no .parentlock), PICL_ERROR_PROFILE_LOCKED when one does (a lock held
 * by this very process does not count: fcntl cannot see it). */
picl_status picl__profile_check_unlocked(const char *dir);

#endif
