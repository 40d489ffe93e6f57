/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_http.h -- test helpers for the HTTP servers: tokenlib tokens,
 * Hawk-signed requests over libcurl, response headers. */
#ifndef PICL_TESTUTIL_HTTP_H
#define PICL_TESTUTIL_HTTP_H

#include <stddef.h>
#include <stdint.h>

/* Storage credentials as the keyserver hands them out. */
typedef struct tu_cred {
    char *token; /* Hawk id */
    char *key;   /* Hawk key (ASCII) */
} tu_cred;

/* Mints a tokenlib token for uid/node expiring at now + expires_in seconds
 * (negative = already expired).  Needs NSS (picl__nss_acquire).  Aborts the
 * test on failure.  Free with tu_cred_free. */
void tu_mint(tu_cred *c, const uint8_t *secret, size_t secretlen, const char *node, int64_t uid,
             int64_t expires_in);
void tu_cred_free(tu_cred *c);

typedef struct tu_resp {
    long status;
    char *body; /* NUL-terminated */
    size_t len;
    char *headers; /* raw header block of the final response */
} tu_resp;

/* Options of one request; zero = defaults. */
typedef struct tu_req {
    const char *ctype; /* Content-Type or NULL */
    const void *body;  /* NULL = no body */
    size_t len;
    const char *const *headers; /* NULL-terminated "Name: value" list, or NULL */
    const tu_cred *cred;        /* NULL = no Authorization */
    int hawk_hash;              /* 1: include the payload hash */
    int64_t hawk_ts_offset;     /* added to the Hawk ts (skew tests) */
    const char *hawk_nonce;     /* NULL = random */
    const char *sign_target;    /* sign this resource instead of the target (tamper tests) */
} tu_req;

/* Sends METHOD base+target (target is sent exactly as given) and fills r.
 * Returns 0, or -1 when the transport failed (r->status 0). */
int tu_http(tu_resp *r, const char *method, const char *base, const char *target, const tu_req *o);
void tu_resp_free(tu_resp *r);

/* The value of a response header (case-insensitive), malloc()ed, or NULL. */
char *tu_resp_header(const tu_resp *r, const char *name);

#endif
