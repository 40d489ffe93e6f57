/* SPDX-License-Identifier: MPL-2.0 */
/* http.h -- libmicrohttpd glue shared by the PiCL servers: listener, router,
 * request/response objects, body limits and per-service error rendering. */
#ifndef PICL_SERVER_HTTP_H
#define PICL_SERVER_HTTP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "http/log.h"
#include "picl_status.h"

/*
 * How to use it (a keyserver in six lines):
 *
 *   srv_http_server *srv;
 *   srv_http_config cfg = {.listen = "127.0.0.1:0", .max_body = 16384,
 *                           .require_content_length = 1};
 *   srv_http_server_new(&srv, &cfg);
 *   srv_http_route(srv, "POST", "/v1/account/create", create_cb, ks, &ks_hooks);
 *   srv_http_server_start(srv);                 // serves in MHD's threads
 *   ... srv_http_server_port(srv) ...           // the port really bound
 *   srv_http_server_free(srv);                  // stops, waits, frees
 *
 * Threads: MHD runs an internal polling thread pool (cfg.threads, default 4)
 * with HTTP/1.1 keep-alive.  Handlers run in those threads, may block (e.g. on
 * SQLite) and must be thread-safe.  A handler is called exactly once per
 * request, after the whole body has been received.
 *
 * Limits (a slow or idle client cannot hold the server): at most
 * cfg.max_connections connections, cfg.per_ip_connections per client
 * address, and a request's headers and body must arrive within
 * cfg.request_timeout_s however slowly they trickle in (a watchdog thread
 * closes the connection); cfg.timeout_s is the idle timeout while answering.
 *
 * Paths: routing is done on the RAW request target (as sent on the wire,
 * still percent-encoded), split at '/'.  A pattern is a literal path in
 * which a segment "*" matches exactly one non-empty segment; the matched
 * segments are percent-decoded and handed to the handler in req->params
 * (in order).  A decoded segment containing NUL is refused (400 via hook).
 * Routes are tried in the order added; when a path matches a pattern but no
 * route has the method, the answer is 405 with an Allow header.
 *
 * Bodies: a Content-Length over the route's cap (hooks.max_body, else
 * cfg.max_body) is answered 413 from the headers alone: the body is never
 * read (and "Expect: 100-continue" clients never send it).  The buffer
 * grows with the bytes that arrived (never Content-Length up front), after
 * hooks.before_body let the request through.  Without
 * Content-Length, POST/PUT/PATCH get 411 when cfg.require_content_length is
 * set; otherwise a chunked body streams in and the connection is dropped
 * once it passes the cap.  A request with two Content-Length headers (or a
 * list in one) that differ, with both Content-Length and Transfer-Encoding,
 * or with two Transfer-Encoding headers is 400 (SRV_HTTP_ERR_BAD_REQUEST)
 * before routing to the handler: a proxy in front could frame it otherwise
 * (request smuggling).
 */

typedef struct srv_http_server srv_http_server;
typedef struct srv_http_request srv_http_request;
typedef struct srv_http_response srv_http_response;

#define SRV_HTTP_MAX_PARAMS 4

/* Why the glue answered by itself; passed to the error hook. */
typedef enum srv_http_error {
    SRV_HTTP_ERR_NOT_FOUND = 1,       /* 404: no route matches the path */
    SRV_HTTP_ERR_METHOD = 2,          /* 405: path known, method not */
    SRV_HTTP_ERR_LENGTH_REQUIRED = 3, /* 411: POST/PUT/PATCH without Content-Length */
    SRV_HTTP_ERR_TOO_LARGE = 4,       /* 413: Content-Length (or body) over the limit */
    SRV_HTTP_ERR_BAD_REQUEST = 5,     /* 400: undecodable path segment */
    SRV_HTTP_ERR_INTERNAL = 6         /* 500: out of memory, handler set nothing */
} srv_http_error;

/* The request as the handler sees it.  Everything here is owned by the glue
 * and valid only during the handler call. */
struct srv_http_request {
    const char *method;                      /* "GET", "POST", ... as sent */
    const char *target;                      /* raw request target "path?query", undecoded */
    const char *path;                        /* raw path (target up to '?'), undecoded */
    const char *query;                       /* raw query after '?', undecoded; "" when none */
    const char *params[SRV_HTTP_MAX_PARAMS]; /* decoded "*" segments */
    size_t nparams;
    const uint8_t *body; /* body bytes, NUL-terminated; "" when none */
    size_t body_len;
    int has_content_length; /* 1 when the request carried Content-Length */
    void *conn_;            /* internal */
};

/* A response under construction.  The status defaults to 200. */
struct srv_http_response {
    int status;
    char *body; /* malloc()ed, owned by the response */
    size_t body_len;
    char *content_type; /* malloc()ed or NULL */
    struct srv_http_hdr {
        char *name, *value;
    } * headers;
    size_t nheaders;
    int failed; /* an allocation failed while building: sent as 500 */
};

typedef void (*srv_http_handler)(srv_http_request *req, srv_http_response *resp, void *ctx);

/*
 * Per-service hooks (a route carries its service's hooks; requests matching
 * no route use the server's default hooks from the config).
 *   error:  renders an answer the glue produced by itself (404, 405, 411,
 *           413, 400, 500): set resp->status = http_status and a body.  NULL
 *           = a plain JSON body {"code": status}.
 *   finish: called on every response of the service just before it is sent
 *           (handler answers and glue errors alike), e.g. to add a timestamp
 *           header.  May be NULL.
 */
typedef struct srv_http_hooks {
    void (*error)(srv_http_request *req, srv_http_response *resp, int http_status, srv_http_error why,
                  void *ctx);
    void (*finish)(srv_http_request *req, srv_http_response *resp, void *ctx);
    void *ctx;
    size_t max_body; /* body cap of the service's routes; 0 = the server's max_body
                        (so two services with different caps can share one port) */
    /* before_body: called once the headers are in, for a request that
     * announces a body (Content-Length > 0 or chunked), before any byte of
     * it is read or any room is made for it; req->body is still "".  When
     * it sets resp->status, that is the answer (the finish hook still runs)
     * and the body is never read: e.g. authenticate from the headers so an
     * unauthenticated client costs no body buffer.  May be NULL. */
    void (*before_body)(srv_http_request *req, srv_http_response *resp, void *ctx);
} srv_http_hooks;

typedef struct srv_http_config {
    const char *listen;          /* "HOST:PORT", "[V6]:PORT"; PORT 0 = any free port */
    size_t max_body;             /* default body cap in bytes for every route (0 = 1 MiB) */
    int require_content_length;  /* 1: POST/PUT/PATCH without Content-Length get 411 */
    unsigned threads;            /* MHD thread pool size (0 = 4) */
    unsigned timeout_s;          /* idle connection timeout (0 = 60) */
    unsigned max_connections;    /* open connections at most (0 = 1000); never more than
                                    RLIMIT_NOFILE less 64 descriptors: when full, new
                                    connections wait in the listen queue */
    unsigned per_ip_connections; /* open connections per client address (0 = 64); more
                                    are closed at once */
    unsigned request_timeout_s;  /* a request's headers and body must arrive within this
                                    many seconds of the connection (or of the previous
                                    answer on a kept-alive one), however steadily they
                                    trickle in; else the connection is closed (0 = 60) */
    const srv_http_hooks *hooks; /* default hooks (copied); NULL = none */
    int plain_bodies;            /* 1: request and response bodies are freed without being
                                    wiped first (a server whose bodies carry no secret: the
                                    storage server's are ciphertext and metadata); 0: wiped
                                    (the keyserver's carry tokens, codes and keys) */
    srvlog_sink log;             /* one line per answered request (http/log.h); NULL = none */
    void *log_ctx;
} srv_http_config;

/* Defaults for the three limits above when a config leaves them at 0 (a
 * server's command line sets them once, before any server is created; not
 * thread-safe).  NULL = back to the built-in defaults. */
typedef struct srv_http_limits {
    unsigned max_connections, per_ip_connections, request_timeout_s;
} srv_http_limits;
void srv_http_set_default_limits(const srv_http_limits *l);

/* Creates a server (not listening yet).  Caller frees with srv_http_server_free. */
picl_status srv_http_server_new(srv_http_server **out, const srv_http_config *cfg);

/* Adds a route before start.  `hooks` NULL = the server's default hooks.
 * The route's body cap is hooks->max_body, else the server's max_body.
 * PICL_ERROR_INVALID_ARGUMENT on a
 * pattern with more than SRV_HTTP_MAX_PARAMS "*" or after start. */
picl_status srv_http_route(srv_http_server *srv, const char *method, const char *pattern, srv_http_handler fn,
                           void *ctx, const srv_http_hooks *hooks);

/* Where srv_http_server_start describes why it could not listen ("cannot
 * listen on 127.0.0.1:8000: Address already in use"); buf (NULL = none) is
 * the caller's and must outlive the start call. */
void srv_http_server_set_error_buffer(srv_http_server *srv, char *buf, size_t cap);

/* Binds and starts serving.  PICL_ERROR_INVALID_ARGUMENT for a bad listen
 * address, PICL_ERROR_NETWORK when it cannot bind. */
picl_status srv_http_server_start(srv_http_server *srv);

/* The TCP port actually bound (after start), else 0. */
unsigned srv_http_server_port(const srv_http_server *srv);

/* Stops listening, closes connections, waits for handlers to return. Idempotent. */
void srv_http_server_stop(srv_http_server *srv);

/* Stops (if needed) and frees.  NULL is allowed. */
void srv_http_server_free(srv_http_server *srv);

/* ---- request helpers (valid during the handler only) ----------------- */

/* A request header by case-insensitive name, or NULL.  The pointer is the
 * glue's; valid during the handler only. */
const char *srv_http_header(const srv_http_request *req, const char *name);

/* The peer's IP address as text ("127.0.0.1", "::1") into out (cap >= 46
 * recommended).  PICL_ERROR_NOT_FOUND when unknown, PICL_ERROR_TOO_LARGE
 * when out is too small. */
picl_status srv_http_client_addr(const srv_http_request *req, char *out, size_t cap);

/*
 * The first query parameter `name` (compared against the raw, undecoded key),
 * percent- and '+'-decoded into a malloc()ed string the caller frees.
 * PICL_ERROR_NOT_FOUND when absent, PICL_ERROR_ENCODING when the value has a
 * bad %-escape or decodes to a NUL, PICL_ERROR_NO_MEMORY.
 */
picl_status srv_http_query(const srv_http_request *req, const char *name, char **value);

/* 1 when a query parameter `name` is present (with or without a value). */
int srv_http_query_has(const srv_http_request *req, const char *name);

/* srvlog_escape of http/log.h (the one escaper of the servers' log). */
size_t srv_http_log_escape(char *out, size_t cap, const char *in, size_t max_in);

/* Percent-decodes in[0..len) into a malloc()ed NUL-terminated string
 * (plus_is_space: '+' becomes ' ').  PICL_ERROR_ENCODING on a bad escape or
 * an encoded NUL.  Caller frees *out. */
picl_status srv_http_unescape(const char *in, size_t len, int plus_is_space, char **out);

/* ---- response helpers ------------------------------------------------ */

/* Sets status and body (copied).  ctype NULL = no Content-Type. */
void srv_http_respond(srv_http_response *resp, int status, const char *ctype, const void *body, size_t len);

/* Takes ownership of a malloc()ed body. */
void srv_http_respond_owned(srv_http_response *resp, int status, const char *ctype, char *body, size_t len);

/* Serialises `json` (borrowed; compact, JSON_ENCODE_ANY) as application/json. */
void srv_http_respond_json(srv_http_response *resp, int status, const json_t *json);

/* Adds a header (both strings copied).  Later headers with the same name
 * are sent too; use srv_http_set_header to replace. */
void srv_http_add_header(srv_http_response *resp, const char *name, const char *value);
void srv_http_set_header(srv_http_response *resp, const char *name, const char *value);

/* The value of a response header already set, or NULL. */
const char *srv_http_response_header(const srv_http_response *resp, const char *name);

/* ---- a growable text buffer with a hard cap (for hand-written JSON) --- */

typedef struct srv_buf {
    char *data; /* NUL-terminated when len > 0 or after any append */
    size_t len, cap, max;
    int failed; /* set on allocation failure or when max would be passed */
} srv_buf;

/* max 0 = 1 GiB.  Appends never fail loudly: they set b->failed. */
void srv_buf_init(srv_buf *b, size_t max);
void srv_buf_append(srv_buf *b, const void *data, size_t len);
void srv_buf_puts(srv_buf *b, const char *s);
void srv_buf_printf(srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..len) as a JSON string literal with quotes (s must be UTF-8). */
void srv_buf_json_string(srv_buf *b, const char *s, size_t len);
/* Hands the data to the caller (who frees it) and resets b; NULL if failed. */
char *srv_buf_take(srv_buf *b, size_t *len);
void srv_buf_free(srv_buf *b);

#endif
