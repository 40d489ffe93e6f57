/* SPDX-License-Identifier: MPL-2.0 */
/* alloc.h -- allocations that fail cleanly: picl__json_dumps, and the
 * allocation-failure injection of the tests (PICL_TEST_HOOKS only). */
#ifndef PICL_CRYPTO_ALLOC_H
#define PICL_CRYPTO_ALLOC_H

#include <jansson.h>
#include <stddef.h>

/*
 * json_dumps() that returns NULL when an allocation fails, never a damaged
 * text: jansson's json_dumps drops an object key it could not append and
 * carries on ({"id":"r",":"x"} for {"id":"r","password":"x"}; seen with
 * jansson 2.14 under the allocation sweep), which would encrypt, sign or
 * write a record that is not the one meant.  Here the text is built by our
 * own callback, which remembers any failure.  The buffers it outgrows are
 * wiped (the text may hold secrets); the caller frees the result (free(), or
 * picl__zfree for secrets).
 */
char *picl__json_dumps(const json_t *json, size_t flags);

/*
 * json_loadb() that tells an allocation failure from bad input: jansson's
 * loader drops a character it could not append to a string and carries on
 * ("https://storag.example.com" for "https://storage.example.com", seen
 * with jansson 2.14 under the allocation sweep), or reports the failure as
 * a syntax error.  Here every allocation jansson makes during the call is
 * watched (a json_set_alloc_funcs wrapper chained to the allocator in place,
 * installed on first use; the flag is per thread): when one failed, the
 * result is dropped, NULL is returned and *oom set to 1.  Otherwise it is
 * json_loadb's result and *oom is 0.  err may be NULL.
 */
json_t *picl__json_loadb(const char *buf, size_t len, size_t flags, json_error_t *err, int *oom);

#ifdef PICL_TEST_HOOKS
#include <stddef.h>
#include "picl_status.h"

/*
 * Makes the Nth allocation from now fail, so that a test can sweep N over a
 * code path and see a clean error at every step (tests/unit/test_alloc_fail.c).
 *
 * What is counted: every allocation that goes through
 *   - jansson (json_set_alloc_funcs, chained to the allocator in place),
 *   - SQLite (sqlite3_config(SQLITE_CONFIG_MALLOC), wrapping the default
 *     allocator: xMalloc and xRealloc can fail),
 *   - the project's own malloc/calloc/realloc/strdup/strndup calls, when the
 *     binary is linked with -Wl,--wrap=malloc,... and defines __wrap_*
 *     calling picl__test_alloc_fail_now() (the test binary does: a library
 *     cannot, since the real functions are only named at that link).
 * NSS allocates inside libnss3/libsoftokn3 (PORT_Alloc, PL_Arena): the
 * project never calls PORT_Alloc itself, so those are not reachable here;
 * an NSS call failing for want of memory reaches the project as an NSS
 * error (PICL_ERROR_CRYPTO), which the sweep accepts as clean.
 *
 * Thread-safe (atomics); the count is process-wide, so a sweep runs with
 * no other thread allocating.
 */

/* Installs the jansson and SQLite hooks.  Must run before SQLite is first
 * used (sqlite3_config refuses after sqlite3_initialize): PICL_ERROR_STATE
 * then.  Idempotent. */
picl_status picl__test_alloc_hooks_install(void);

/* Arms the injector: the nth counted allocation from now fails (n >= 1);
 * with sticky, that one and every later one fail.  n = 0 disarms. */
void picl__test_alloc_fail_at(long n, int sticky);

/* Pauses (on = 1) or resumes counting and failing in this thread: for a
 * library call that is not robust to a failed allocation of its own. */
void picl__test_alloc_pause(int on);

/* Counts one allocation; 1 when it must fail.  For the __wrap_* functions. */
int picl__test_alloc_fail_now(void);

/* Allocations counted since the last picl__test_alloc_fail_at(). */
long picl__test_alloc_count(void);

/* How many allocations were made to fail since the last arming (0 = the
 * path completed without reaching the Nth allocation: the sweep is over). */
long picl__test_alloc_injected(void);

#endif /* PICL_TEST_HOOKS */
#endif
