/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_srv.h -- one picl-storage or picl-keyserver process per test, on
 * a free loopback port, with its own data directory and descriptor limit. */
#ifndef PICL_TESTUTIL_SRV_H
#define PICL_TESTUTIL_SRV_H

#include <sys/resource.h>
#include <sys/types.h>

typedef struct {
    char dir[64];  /* scratch directory: data/, secret, server.log */
    pid_t pid;     /* 0 when no server runs */
    unsigned port; /* the port the server printed */
} tu_srv;

/* Makes a fresh scratch directory /tmp/<prefix>-XXXXXX (a Check fixture). */
void tu_srv_setup(tu_srv *s, const char *prefix);

/* Stops the server (SIGTERM, then waits) and removes the scratch directory. */
void tu_srv_teardown(tu_srv *s);

/* Starts build/picl-storage (storage != 0) or build/picl-keyserver with at
 * most `nofile` descriptors, a fixed token secret and the cheap test
 * stretching floor; opt/val (may be NULL) is one more "--opt value" pair.
 * Fails the test when the server does not print its port within 10 s. */
void tu_srv_start(tu_srv *s, int storage, rlim_t nofile, const char *opt, const char *val);

/* The same with any number of further arguments (extra: NULL-terminated,
 * may be NULL), e.g. --database URL --node URL. */
void tu_srv_start_argv(tu_srv *s, int storage, rlim_t nofile, const char *const *extra);

#endif
