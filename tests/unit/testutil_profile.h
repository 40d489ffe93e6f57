/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_profile.h -- test helpers for the profile stores: real Firefox
 * profiles made and read back by the browser (tests/make-profile.sh),
 * directory fingerprints, and a child process that holds the profile lock. */
#ifndef PICL_TESTUTIL_PROFILE_H
#define PICL_TESTUTIL_PROFILE_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

/* A fresh empty directory under /tmp (at most 8 per test process), removed
 * with its side files at exit unless PICL_KEEP_TMP=1. */
const char *tup_tmpdir(void);

/* Creates a profile in dir (must not exist or be empty) with the sample data
 * of tests/xpcshell/make_profile.js, through firefox-esr -xpcshell.
 * primary may be NULL.  ck_abort()s when the browser is missing or fails:
 * these tests FAIL without Firefox, they never skip. */
void tup_make_profile(const char *dir, const char *primary);

/* What Firefox reads from dir ({bookmarks, history, logins}), via
 * tests/xpcshell/dump_profile.js; ck_abort()s on failure.  New reference. */
json_t *tup_dump_profile(const char *dir);
/* The same for a profile with a primary password: Firefox checks pw by
 * changing it to "" -- the profile is left without its primary password. */
json_t *tup_dump_profile_pw(const char *dir, const char *pw);

/* The user deletes the saved logins of `user` in Firefox
 * (Services.logins.removeLoginAsync, tests/xpcshell/edit_profile.js):
 * ck_abort()s when the browser fails or there is no such login. */
void tup_remove_login(const char *dir, const char *user);

/* A fingerprint of every regular file directly in dir (name, size, mode and
 * a 64-bit FNV-1a of the content): equal fingerprints = nothing changed. */
uint64_t tup_dir_digest(const char *dir);

/* Forks a child that takes the fcntl write lock on dir/.parentlock the way a
 * running Firefox does and holds it until tup_release_lock(). */
pid_t tup_hold_lock(const char *dir);
void tup_release_lock(pid_t pid);

/* Runs cmd with /bin/sh; returns its exit status (or -1). */
int tup_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The element of array a whose key k equals string v, or NULL (borrowed). */
json_t *tup_find(const json_t *a, const char *k, const char *v);

/* Store calls that must succeed (the store's message on failure):
 * every live record / the local changes (new references), and applying a
 * JSON text of records. */
#include "stores/store.h"
json_t *tup_all(picl_store *s);
json_t *tup_changes(picl_store *s);
void tup_apply_ok(picl_store *s, const char *json);

#endif
