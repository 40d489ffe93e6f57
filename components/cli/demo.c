/* SPDX-License-Identifier: MPL-2.0 */
/* demo.c -- `picl demo`: runs the demo script (the story on a scratch server,
 * see README) from the source tree this picl was built in, or from the copy
 * `make install` puts in <prefix>/share/picl/demo beside <prefix>/bin/picl. */
#include "cli.h"

#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Where the script is, in order:
 *   $PICL_DEMO_SCRIPT                          (a script of one's own)
 *   <dir of picl>/../scripts/demo.sh           (a build directory of the tree)
 *   <dir of picl>/../share/picl/demo/scripts/demo.sh   (installed: the script,
 *        tests/make-profile.sh and the Firefox profile tools it runs, in the
 *        same layout as in the tree)
 * Both are found relative to the running binary, so a staged install
 * (DESTDIR) or another prefix works too.  The script gets the directory of
 * this picl as its BUILD_DIR: it runs $BUILD_DIR/picl.
 */
int cli_demo(const cli_opts *o, const char *self)
{
    (void)o;
    char exe[PATH_MAX], dir[PATH_MAX], tree[PATH_MAX + 64], installed[PATH_MAX + 64];
    const char *script = NULL;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(exe, sizeof exe, "%s", self);
        n = (ssize_t)strlen(exe);
    }
    exe[n] = 0;
    snprintf(dir, sizeof dir, "%s", exe);
    char *bdir = dirname(dir); /* build/ (or build-NAME/), or <prefix>/bin */
    snprintf(tree, sizeof tree, "%s/../scripts/demo.sh", bdir);
    snprintf(installed, sizeof installed, "%s/../share/picl/demo/scripts/demo.sh", bdir);
    const char *env = getenv("PICL_DEMO_SCRIPT");
    if (env && *env) {
        if (access(env, R_OK) != 0) {
            fprintf(stderr, "picl demo: PICL_DEMO_SCRIPT names %s, which cannot be read\n", env);
            return CLI_FAILURE;
        }
        script = env;
    } else if (access(tree, R_OK) == 0) {
        script = tree;
    } else if (access(installed, R_OK) == 0) {
        script = installed;
    } else {
        fprintf(
            stderr,
            "picl demo: the demo script is not here: this picl (%s) is neither in a build directory of the "
            "source tree (%s) nor installed with it by make install (%s).\n"
            "Run `make demo` in the source tree, or `make install` from it; the demo also needs firefox-esr "
            "and python3.\n",
            exe, tree, installed);
        return CLI_FAILURE;
    }
    execl("/bin/sh", "sh", script, bdir, (char *)NULL);
    fprintf(stderr, "picl demo: cannot run /bin/sh %s\n", script);
    return CLI_FAILURE;
}
