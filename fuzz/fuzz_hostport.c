/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_hostport.c -- libFuzzer target: THE parser of "host[:port]" (the
 * Host header of both servers, every listen address).  A refusal is ENCODING
 * with the output zeroed; what is accepted has no byte outside the RFC 3986
 * host alphabet, a port within 0..65535, and formats back to a text that
 * parses to the same host and port. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "protocol/hostport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const picl_hostport zero;
    picl_hostport hp, again;
    int require = size > 0 && (data[0] & 1);
    picl_status st = picl__hostport_parse((const char *)data, size, 80, require, &hp);
    if (st != PICL_OK) {
        if (st != PICL_ERROR_ENCODING || memcmp(&hp, &zero, sizeof hp) != 0)
            __builtin_trap();
        return 0;
    }
    size_t hl = strlen(hp.host);
    if (!hl || hl > PICL_HOSTPORT_MAX_HOST || hp.port > 65535 || (require && !hp.has_port) ||
        (!hp.has_port && hp.port != 80) || hl > size || memcmp(hp.host, data, hl) != 0)
        __builtin_trap();
    if (strspn(hp.host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "-._~!$&'()*+,;=%[]:") != hl)
        __builtin_trap();
    if (hp.ipv6 != (hp.host[0] == '[') || (!hp.ipv6 && strchr(hp.host, ':')))
        __builtin_trap();
    char text[PICL_HOSTPORT_MAX_HOST + 16];
    if (picl__hostport_format(text, sizeof text, hp.host, hp.port) != PICL_OK ||
        picl__hostport_parse(text, strlen(text), 0, 1, &again) != PICL_OK ||
        strcmp(again.host, hp.host) != 0 || strcmp(again.name, hp.name) != 0 || again.port != hp.port)
        __builtin_trap();
    return 0;
}
