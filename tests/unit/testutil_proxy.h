/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_proxy.h -- a flaky HTTP proxy for the tests: listens on
 * 127.0.0.1, forwards each request to one upstream server (with
 * Connection: close) and, on the requests a test picks, drops the connection
 * mid-response, delays, answers 500/503 with Retry-After itself, truncates
 * the JSON body or sends a huge one.  The upstream's own host:port in a
 * response body (a token's api_endpoint) is rewritten to the proxy's, so a
 * client that signs in through the proxy keeps talking through it. */
#ifndef PICL_TESTUTIL_PROXY_H
#define PICL_TESTUTIL_PROXY_H

typedef enum tupx_fault {
    TUPX_PASS = 0, /* forward as is */
    TUPX_DROP,     /* the upstream's status line, headers and half its body, then close */
    TUPX_RESET,    /* close the connection without answering */
    TUPX_DELAY,    /* wait arg milliseconds, then forward */
    TUPX_STATUS,   /* answer status arg (500, 503, ...) with Retry-After: 1, not forwarded */
    TUPX_TRUNCATE, /* the upstream's answer with its body cut to half (Content-Length fits) */
    TUPX_HUGE,     /* 200 application/json, the upstream's other headers, a body of arg MiB:
                        one record whose payload is that long */
} tupx_fault;

typedef struct tupx tupx;

/* Starts a proxy in front of upstream_url ("http://127.0.0.1:PORT").
 * Aborts the test on failure.  Stop with tupx_stop. */
tupx *tupx_start(const char *upstream_url);
void tupx_stop(tupx *p);

/* "http://127.0.0.1:PORT" of the proxy (valid until tupx_stop). */
const char *tupx_url(const tupx *p);

/* From now on, the next `count` requests (count < 0: every request) whose
 * request line ("GET /1.5/... HTTP/1.1") contains the parts of `match`
 * split at '*', in that order ("GET *storage/passwords?"; NULL or "": any)
 * get fault f; the others pass.  Resets the faulted counter. */
void tupx_set(tupx *p, tupx_fault f, const char *match, int count, long arg);

/* Requests faulted since the last tupx_set. */
int tupx_faulted(const tupx *p);

/* Requests seen (all, faulted or not) since tupx_start. */
int tupx_seen(const tupx *p);

#endif
