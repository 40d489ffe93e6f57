/* SPDX-License-Identifier: MPL-2.0 */
/* storage_client_internal.h -- what storage_client.c and
 * storage_client_write.c share (not part of the client's API). */
#ifndef PICL_CLIENT_STORAGE_CLIENT_INTERNAL_H
#define PICL_CLIENT_STORAGE_CLIENT_INTERNAL_H

#include <curl/curl.h>

#include "client/http_exchange.h"
#include "client/storage_client.h"

struct picl_stc {
    char *endpoint;  /* as given */
    char *origin;    /* "http://host:port" */
    char *base_path; /* "/1.5/42" */
    char host[256];
    unsigned port;
    char *id, *key;
    CURL *curl;
    int64_t clock_offset;
    double backoff_until; /* monotonic seconds */
    picl_stc_refresh_fn refresh;
    void *refresh_ctx;
    int have_limits;
    picl_stc_limits limits;
    picl_stc_result last;
    uint64_t requests; /* HTTP exchanges made (benchmarks, tests) */
    int node_changed;  /* a refresh named another api_endpoint: every call fails */
    char neterr[160];  /* libcurl's words for the last transport failure */
    char *spare;       /* a body buffer kept for the next answer (http_exchange.h) */
    size_t spare_cap;
    /* the next page of a download, requested while the caller works on the
     * one before (storage_client.c: prefetch); consumed by the request it
     * matches, dropped by any other */
    struct {
        int active;
        char *rel;
        int64_t ims, ius;
        const char *method, *ctype, *body; /* borrowed until taken or dropped */
        size_t blen;
        char *extra; /* the extra header lines, each ending in '\n' */
        CURL *curl;
        CURLM *multi;
        picl_hx_xfer x;
        picl_hx_response rs;
    } pf;
};

typedef struct stc_reply {
    char *body;
    size_t len, cap; /* cap: the bytes allocated */
    int too_large;
    picl_stc_result *res;
    char *next_offset;
    int bad_offset; /* X-Weave-Next-Offset empty or too long */
    char *www_auth; /* the WWW-Authenticate value, or NULL */
} stc_reply;

/* One request below the endpoint (rel already percent-encoded), with the
 * 401 handling and the status mapping of storage_client.h.  r is reset
 * first; free it with picl__stc_reply_free. */
picl_status picl__stc_request(picl_stc *c, const char *method, const char *rel, const char *ctype,
                              const char *body, size_t blen, int64_t ims, int64_t ius,
                              const char *const *extra, stc_reply *r);
void picl__stc_reply_free(stc_reply *r);
/* The answer as JSON of type want_type (-1 = any): PICL_ERROR_PROTOCOL else. */
picl_status picl__stc_parse_json(stc_reply *r, json_t **out, int want_type);
/* Sends this request now without waiting for its answer (method, ctype
 * and body borrowed: they must stay until the answer is taken or dropped);
 * picl__stc_request of the very same request later takes its answer
 * (status mapping and 401 handling as usual) instead of sending it again;
 * any other request drops it (unfinished: aborted).  Nothing is sent when
 * the client must not send (backoff, node moved) or cannot: the later
 * request then goes the ordinary way. */
void picl__stc_ahead(picl_stc *c, const char *method, const char *rel, const char *ctype, const char *body,
                     size_t blen, int64_t ims, int64_t ius, const char *const *extra);
/* Percent-encodes everything but unreserved characters (truncates at cap). */
void picl__stc_encode(char *out, size_t cap, const char *s);
/* "/storage/<coll>?<query>" (malloc()ed). */
picl_status picl__stc_build_get(const char *coll, const picl_stc_query *q, char **out);

#endif
