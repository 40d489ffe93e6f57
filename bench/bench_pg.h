/* SPDX-License-Identifier: MPL-2.0 */
/* bench_pg.h -- a throw-away PostgreSQL cluster for picl-bench storage and
 * loadtest (--backend postgresql without --database). */
#ifndef PICL_BENCH_PG_H
#define PICL_BENCH_PG_H

#include <stddef.h>

/*
 * bench_pg_start makes a cluster in a fresh temporary directory (initdb and
 * pg_ctl from PICL_PG_BIN, default /usr/lib/postgresql/15/bin; as the user
 * nobody when run as root), listening on 127.0.0.1 at a free port, trust
 * authentication, with the durability of a real server (fsync on, as the
 * SQLite figures beside it fsync too), and writes the URL of a fresh
 * database "picl" into url.  0, or -1 with the reason on stderr.
 * bench_pg_database makes one more database `name` there and writes its URL.
 * bench_pg_stop stops the cluster and removes its directory (also safe when
 * it never started).
 */
int bench_pg_start(char *url, size_t cap);
int bench_pg_database(const char *name, char *url, size_t cap);
void bench_pg_stop(void);

#endif
