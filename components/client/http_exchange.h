/* SPDX-License-Identifier: MPL-2.0 */
/* http_exchange.h -- THE HTTP exchange of both clients (keyserver_client.c
 * and storage_client*.c), the way Gecko's Sync talks HTTP through one
 * Resource class: one request through libcurl with the same protocols,
 * timeouts, body cap and "too large" outcome, the Hawk Authorization line,
 * and the response headers both read.  Internal to the library. */
#ifndef PICL_CLIENT_HTTP_EXCHANGE_H
#define PICL_CLIENT_HTTP_EXCHANGE_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "picl.h"
#include "protocol/hawk.h"

/* Limits common to both clients. */
#define PICL_HX_PROTOCOLS "http,https" /* never file:, ftp:, ... whatever a URL says */
#define PICL_HX_CONNECT_TIMEOUT_S 30L
#define PICL_HX_MAX_OFFSET 1024u  /* X-Weave-Next-Offset kept up to this length */
#define PICL_HX_MAX_WWW_AUTH 512u /* WWW-Authenticate kept up to this length */

typedef struct picl_hx_request {
    const char *method;         /* "GET", "POST", ... (sent as given) */
    const char *url;            /* full URL; the path is sent as is (it is what Hawk signed) */
    const char *const *headers; /* NULL-terminated "Name: value" lines, or NULL;
                                     Accept: application/json and an empty Expect:
                                     are always added */
    const char *body;           /* NULL = none */
    size_t body_len;
    size_t max_answer; /* answer bodies over this many bytes stop the
                                     transfer: PICL_ERROR_TOO_LARGE */
    long timeout_s;    /* whole exchange */
    char **spare;      /* optional: a free buffer of *spare_cap bytes the body may
                                     be written into (taken: *spare set to NULL), so
                                     a run of large answers does not grow and fault
                                     in a new block each time */
    size_t *spare_cap;
} picl_hx_request;

/*
 * What came back.  Header numbers are parsed by protocol/synctime.h (the
 * SyncStorage grammar, which both servers use for them); -1 when absent or
 * malformed.  body, www_auth and next_offset are malloc()ed and the caller's
 * (picl__hx_response_free wipes and frees what is left in it).
 */
typedef struct picl_hx_response {
    long status;                /* HTTP status; 0 when there was no answer */
    char *body;                 /* NUL-terminated, NULL when empty */
    size_t len, cap;            /* cap: the bytes allocated (for a wipe) */
    int too_large;              /* the answer passed max_answer */
    int64_t last_modified;      /* X-Last-Modified, centis */
    int64_t weave_timestamp;    /* X-Weave-Timestamp, centis */
    int64_t weave_backoff_s;    /* X-Weave-Backoff, whole seconds */
    int64_t retry_after_s;      /* Retry-After (delay-seconds form), whole seconds */
    int64_t records;            /* X-Weave-Records */
    int64_t quota_remaining_kb; /* X-Weave-Quota-Remaining, whole KB */
    char *www_auth;             /* WWW-Authenticate (up to PICL_HX_MAX_WWW_AUTH) */
    int has_next_offset;        /* X-Weave-Next-Offset was sent ... */
    char *next_offset;          /* ... with this value; NULL when empty or too long */
    char neterr[160];           /* libcurl's words for a transport failure */
} picl_hx_response;

/*
 * One exchange on h (reset first; the caller keeps h for connection reuse).
 * *rs is initialised here.  PICL_OK when an HTTP answer came (any status:
 * the caller maps it), PICL_ERROR_TOO_LARGE when the answer passed
 * rq->max_answer, PICL_ERROR_NETWORK when no answer came (rs->neterr says
 * why), PICL_ERROR_NO_MEMORY.  No retry, no backoff bookkeeping: the
 * clients decide.
 */
picl_status picl__hx_perform(CURL *h, const picl_hx_request *rq, picl_hx_response *rs);

/*
 * The same exchange driven by a multi handle, so the caller can work while
 * the server answers: begin adds h to m and sends what can be sent; pump
 * moves data without waiting; end waits for the answer and returns what
 * picl__hx_perform would; abort drops the exchange unfinished.  The request's
 * strings may go once begin returned; rs and x stay put until end or abort
 * (exactly one of them follows a begin that returned PICL_OK).
 */
typedef struct picl_hx_xfer {
    CURLM *m;
    CURL *h;
    struct curl_slist *hl;
    void *sink;
    int done;
    CURLcode result;
} picl_hx_xfer;
picl_status picl__hx_begin(picl_hx_xfer *x, CURLM *m, CURL *h, const picl_hx_request *rq,
                           picl_hx_response *rs);
void picl__hx_pump(picl_hx_xfer *x);
picl_status picl__hx_end(picl_hx_xfer *x, picl_hx_response *rs);
void picl__hx_abort(picl_hx_xfer *x);

/* Wipes and frees what rs still holds; rs may then be reused. */
void picl__hx_response_free(picl_hx_response *rs);

/* "Authorization: Hawk ..." for hr signed with key at now (seconds) into a
 * malloc()ed line *out (the caller wipes and frees it: picl__zfree). */
picl_status picl__hx_hawk_line(char **out, const char *id, const void *key, size_t keylen,
                               const picl_hawk_request *hr, int64_t now);

#endif
