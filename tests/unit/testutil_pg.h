/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_pg.h -- a throw-away PostgreSQL cluster for the tests: the
 * servers' suites run a second time on PostgreSQL with
 * PICL_TEST_BACKEND=postgresql. */
#ifndef PICL_TESTUTIL_PG_H
#define PICL_TESTUTIL_PG_H

#include <stddef.h>

/*
 * With PICL_TEST_BACKEND=postgresql, a test binary starts its own cluster
 * before main (initdb + pg_ctl from PICL_PG_BIN, default
 * /usr/lib/postgresql/15/bin, in a fresh temporary directory; as the user
 * nobody when run as root), listening on a unix socket in that directory
 * and on 127.0.0.1 at a free port, trust authentication, fsync off.  It is
 * stopped and removed when the binary exits, also after a failed test (the
 * cluster belongs to the parent process; Check's forked children never stop
 * it) or on SIGINT/SIGTERM.  A binary run under another one that started a
 * cluster (PICL_TEST_PG_URL set) uses that one.  Failing to start it aborts
 * the binary with the log's last lines: a clear error, not a hang.
 */

/* 1 when the tests run on PostgreSQL. */
int tupg_enabled(void);

/* The cluster's URL of its maintenance database ("postgresql://picl@
 * 127.0.0.1:PORT/postgres"), or NULL when not enabled. */
const char *tupg_admin_url(void);

/* Makes a fresh, empty place for one server's tables (a schema of its own
 * in the cluster's database "picl", first in the search_path of the URL)
 * and writes its URL into url and its name into name.  Aborts the test on
 * failure. */
void tupg_create_db(char *url, size_t url_cap, char *name, size_t name_cap);

/* Drops what tupg_create_db made (the server using it must be stopped).
 * NULL or "" is allowed. */
void tupg_drop_db(const char *name);

/* Runs one SQL text against database url; returns 0 when it succeeded.
 * For tests that look into (or damage) a database. */
int tupg_exec(const char *url, const char *sql);

/* The first column of the first row of a query (as text) into out; 0 when
 * there was one. */
int tupg_query1(const char *url, const char *sql, char *out, size_t cap);

/* Opens a connection to url and runs sql (e.g. "BEGIN; SELECT ... FOR
 * UPDATE") in it, keeping its transaction open: another writer, for tests
 * of lock timeouts.  Aborts the test on failure.  tupg_release rolls back
 * and closes. */
void *tupg_hold(const char *url, const char *sql);
void tupg_release(void *held);

/* Stops / starts again the cluster (same port and data) from a test of the
 * binary that started it: 0 when done, -1 when there is none (another
 * binary's cluster, or not enabled). */
int tupg_stop_cluster(void);
int tupg_start_cluster(void);

#endif
