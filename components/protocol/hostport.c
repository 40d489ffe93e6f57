/* SPDX-License-Identifier: MPL-2.0 */
/* hostport.c -- "host[:port]" authorities (see hostport.h). */
#include "protocol/hostport.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static int hexdig(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* RFC 3986 reg-name (IPv4address is a subset): n > 0 characters. */
static int reg_name(const char *s, size_t n)
{
    if (!n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            (c != 0 && strchr("-._~!$&'()*+,;=", c) != NULL))
            continue;
        if (c == '%' && i + 2 < n && hexdig(s[i + 1]) && hexdig(s[i + 2])) {
            i += 2;
            continue;
        }
        return 0;
    }
    return 1;
}

/* "[" IPv6address "]": the inside as inet_pton(AF_INET6) takes it. */
static int ipv6_literal(const char *s, size_t n)
{
    char tmp[INET6_ADDRSTRLEN + 1];
    unsigned char addr[16];
    if (n < 2 || n - 2 >= sizeof tmp)
        return 0;
    memcpy(tmp, s + 1, n - 2);
    tmp[n - 2] = 0;
    if (memchr(tmp, 0, n - 2))
        return 0;
    return inet_pton(AF_INET6, tmp, addr) == 1;
}

static int parse_port(const char *s, size_t n, unsigned *port)
{
    unsigned v = 0;
    if (n < 1 || n > 5)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v > 65535)
        return 0;
    *port = v;
    return 1;
}

picl_status picl__hostport_parse(const char *text, size_t len, unsigned default_port, int require_port,
                                 picl_hostport *out)
{
    if (!text || !out)
        return PICL_ERROR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    size_t hl; /* length of the host part, brackets included */
    int v6 = len > 0 && text[0] == '[';
    if (v6) {
        const char *rb = memchr(text, ']', len);
        hl = rb ? (size_t)(rb - text) + 1 : 0;
        if (!hl || !ipv6_literal(text, hl))
            goto bad;
    } else {
        const char *colon = memchr(text, ':', len);
        hl = colon ? (size_t)(colon - text) : len;
        if (!reg_name(text, hl))
            goto bad;
    }
    if (hl > PICL_HOSTPORT_MAX_HOST)
        goto bad;
    unsigned port = default_port;
    int has_port = hl < len;
    if (has_port && (text[hl] != ':' || !parse_port(text + hl + 1, len - hl - 1, &port)))
        goto bad;
    if (require_port && !has_port)
        goto bad;
    memcpy(out->host, text, hl);
    out->host[hl] = 0;
    memcpy(out->name, v6 ? text + 1 : text, v6 ? hl - 2 : hl);
    out->port = port;
    out->has_port = has_port;
    out->ipv6 = v6;
    return PICL_OK;
bad:
    memset(out, 0, sizeof *out);
    return PICL_ERROR_ENCODING;
}

picl_status picl__hostport_format(char *out, size_t cap, const char *host, unsigned port)
{
    if (!out || !cap || !host)
        return PICL_ERROR_INVALID_ARGUMENT;
    int bare_v6 = host[0] != '[' && strchr(host, ':') != NULL;
    int n = bare_v6 ? snprintf(out, cap, "[%s]:%u", host, port) : snprintf(out, cap, "%s:%u", host, port);
    if (n < 0 || (size_t)n >= cap) {
        out[0] = 0;
        return PICL_ERROR_TOO_LARGE;
    }
    return PICL_OK;
}
