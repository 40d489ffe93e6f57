/* SPDX-License-Identifier: MPL-2.0 */
/* hostport.h -- THE parser and formatter of "host[:port]" authorities: the
 * Host header both servers check Hawk against, and the HOST:PORT of every
 * listen address (picl-keyserver, picl-storage, picl server). */
#ifndef PICL_PROTOCOL_HOSTPORT_H
#define PICL_PROTOCOL_HOSTPORT_H

#include <stddef.h>
#include "picl_status.h"

/*
 * Grammar (RFC 7230 section 5.4 Host = uri-host [ ":" port ], with uri-host
 * from RFC 3986 section 3.2.2), strict:
 *
 *     host   = "[" IPv6address "]" / IPv4address / reg-name
 *     reg-name: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / sub-delims /
 *                   "%" HEXDIG HEXDIG )
 *     port   = 1*5DIGIT, value 0..65535
 *
 * Refused: an empty host, a ':' inside an unbracketed host ("a:b:80"), an
 * IPv6 literal without brackets or that inet_pton does not take (zone ids and
 * IPvFuture included), anything after ']' but ":" port, an empty port
 * ("host:"), a port over 5 digits or 65535, whitespace, control characters,
 * userinfo ('@'), a host over PICL_HOSTPORT_MAX_HOST characters.
 */
#define PICL_HOSTPORT_MAX_HOST 255u /* = PICL_HAWK_MAX_HOST, brackets included */

typedef struct picl_hostport {
    char host[PICL_HOSTPORT_MAX_HOST + 1]; /* as written, an IPv6 literal with its
                                              brackets (what Hawk's MAC covers) */
    char name[PICL_HOSTPORT_MAX_HOST + 1]; /* the same without brackets (for
                                              getaddrinfo / inet_pton) */
    unsigned port;                         /* the port, or the default when absent */
    int has_port;                          /* 1 when the text named a port */
    int ipv6;                              /* 1 for a bracketed IPv6 literal */
} picl_hostport;

/* Parses len bytes of text (no NUL needed).  A missing port becomes
 * default_port; require_port (listen addresses) refuses a text without one.
 * PICL_ERROR_ENCODING when text is malformed (*out is then zeroed),
 * PICL_ERROR_INVALID_ARGUMENT when text or out is NULL. */
picl_status picl__hostport_parse(const char *text, size_t len, unsigned default_port, int require_port,
                                 picl_hostport *out);

/* Writes "host:port" into out (cap bytes), bracketing a bare IPv6 name
 * ("::1" -> "[::1]:8000"); a host already bracketed is kept.
 * PICL_ERROR_TOO_LARGE when it does not fit (out is then ""). */
picl_status picl__hostport_format(char *out, size_t cap, const char *host, unsigned port);

#endif
