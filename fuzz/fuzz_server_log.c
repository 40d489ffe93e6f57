/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_server_log.c -- libFuzzer target: the servers' log formatter
 * (server-stub/http/log.h) on a hostile request target, method and client
 * address.  Whatever comes in, a log line is one line of printable ASCII
 * within its cap, and the value of a query parameter outside the harmless
 * list never reaches a request line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every line: printable ASCII within its cap.  A request line (ctx set):
 * a "secret=" query value (made of 'S') is never in it.  (A message line
 * says what its caller wrote: callers pass targets through
 * srvlog_redact_target first.) */
static void check_line(void *ctx, const char *line)
{
    size_t n = strlen(line);
    if (n >= SRVLOG_LINE_MAX)
        __builtin_trap();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] >= 0x7f)
            __builtin_trap();
    const char *q = strchr(line, '?'); /* the path never holds a raw '?' */
    if (ctx && q && strstr(q, "secret=S"))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the input is "<target>\0<method>\0<addr>" (missing parts are NULL) */
    char *buf = malloc(size + 3);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = buf[size + 2] = 0;
    const char *target = buf;
    const char *method = target + strlen(target) + 1;
    const char *addr = method <= buf + size ? method + strlen(method) + 1 : NULL;
    if (method > buf + size)
        method = NULL;
    if (addr && addr > buf + size)
        addr = NULL;
    /* the method and the address (the glue's, never a query) hold no '?':
     * the check above finds the query by it */
    for (char *p = buf + strlen(target); p < buf + size + 2; p++)
        if (*p == '?')
            *p = '_';
    char out[64];
    size_t n = srvlog_redact_target(out, sizeof out, target);
    if (n != strlen(out) || n >= sizeof out)
        __builtin_trap();
    srvlog_request(check_line, (void *)1, addr, method, target, (int)(size % 700), (int64_t)size);
    srvlog(check_line, NULL, (srvlog_level)(size % 3), "x %s y", target);
    free(buf);
    return 0;
}
