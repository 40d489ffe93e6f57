/* demo.c -- `picl demo`: placeholder until the profile demo lands. */
#include "cli.h"

int cli_demo(const cli_opts *o, const char *self)
{
    (void)o;
    (void)self;
    fprintf(stderr, "picl demo: not built yet\n");
    return CLI_FAILURE;
}
