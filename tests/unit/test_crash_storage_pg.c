/* SPDX-License-Identifier: MPL-2.0 */
/* test_crash_storage_pg.c -- the storage server's crash sweep
 * (test_crash_storage.c: kill -9 at random points of PUT/POST/batch
 * streams, 0 acknowledged writes lost, 0 half batches) on PostgreSQL, in
 * every make check: the binary runs itself again with
 * PICL_TEST_BACKEND=postgresql when it was not given it, so that its own
 * throw-away cluster (testutil_pg.h) is started before main. */
#define CRASH_STORAGE_NO_MAIN
#include "test_crash_storage.c"

#include <errno.h>

int main(int argc, char **argv)
{
    (void)argc;
    if (!tupg_enabled()) {
        setenv("PICL_TEST_BACKEND", "postgresql", 1);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "test_crash_storage_pg: cannot run itself again: %s\n", strerror(errno));
        return 1;
    }
    return tu_run(suite());
}
