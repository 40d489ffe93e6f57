/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_util.h -- shared bits of the fuzz targets: removal of a target's
 * scratch directory when the process exits (libFuzzer and the replay
 * driver both end with exit()).  Header-only (static). */
#ifndef PICL_FUZZ_UTIL_H
#define PICL_FUZZ_UTIL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static const char *fz_scratch;

static int fz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void fz_rm_scratch(void)
{
    if (fz_scratch)
        nftw(fz_scratch, fz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* dir (kept by the caller for the process's life) is removed at exit. */
static inline void fz_remove_at_exit(const char *dir)
{
    fz_scratch = dir;
    atexit(fz_rm_scratch);
}

#endif
