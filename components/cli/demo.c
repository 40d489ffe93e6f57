/* demo.c -- `picl demo`: runs scripts/demo.sh of the source tree this picl
 * was built in (the story on a scratch server, see README). */
#include "cli.h"

#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_demo(const cli_opts *o, const char *self)
{
    (void)o;
    char exe[PATH_MAX], dir[PATH_MAX], script[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(exe, sizeof exe, "%s", self);
        n = (ssize_t)strlen(exe);
    }
    exe[n] = 0;
    snprintf(dir, sizeof dir, "%s", exe);
    char *bdir = dirname(dir); /* BUILD_DIR (build/ or build-asan/) */
    const char *env = getenv("PICL_DEMO_SCRIPT");
    if (env && *env)
        snprintf(script, sizeof script, "%s", env);
    else
        snprintf(script, sizeof script, "%s/../scripts/demo.sh", bdir);
    if (access(script, X_OK) != 0) {
        fprintf(stderr, "picl demo: %s not found: run it from a source tree (make demo), or set PICL_DEMO_SCRIPT\n",
                script);
        return CLI_FAILURE;
    }
    execl("/bin/sh", "sh", script, bdir, (char *)NULL);
    fprintf(stderr, "picl demo: cannot run %s\n", script);
    return CLI_FAILURE;
}
