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
 *   picl_http_server *srv;
 *   picl_http_config cfg = {.listen = "127.0.0.1:0", .max_body = 16384,
 *                           .require_content_length = 1};
 *   picl_http_server_new(&srv, &cfg);
 *   picl_http_route(srv, "POST", "/v1/account/create", create_cb, ks, &ks_hooks);
 *   picl_http_server_start(srv);                 // serves in MHD's threads
 *   ... picl_http_server_port(srv) ...           // the port really bound
 *   picl_http_server_free(srv);                  // stops, waits, frees
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
 * or with two Transfer-Encoding headers is 400 (PICL_HTTP_ERR_BAD_REQUEST)
 * before routing to the handler: a proxy in front could frame it otherwise
 * (request smuggling).
 */

typedef struct picl_http_server picl_http_server;
typedef struct picl_http_request picl_http_request;
typedef struct picl_http_response picl_http_response;

#define PICL_HTTP_MAX_PARAMS 4

/* Why the glue answered by itself; passed to the error hook. */
typedef enum picl_http_error {
    PICL_HTTP_ERR_NOT_FOUND = 1,      /* 404: no route matches the path */
    PICL_HTTP_ERR_METHOD = 2,         /* 405: path known, method not */
    PICL_HTTP_ERR_LENGTH_REQUIRED = 3,/* 411: POST/PUT/PATCH without Content-Length */
    PICL_HTTP_ERR_TOO_LARGE = 4,      /* 413: Content-Length (or body) over the limit */
    PICL_HTTP_ERR_BAD_REQUEST = 5,    /* 400: undecodable path segment */
    PICL_HTTP_ERR_INTERNAL = 6        /* 500: out of memory, handler set nothing */
} picl_http_error;

/* The request as the handler sees it.  Everything here is owned by the glue
 * and valid only during the handler call. */
struct picl_http_request {
    const char *method;      /* "GET", "POST", ... as sent */
    const char *target;      /* raw request target "path?query", undecoded */
    const char *path;        /* raw path (target up to '?'), undecoded */
    const char *query;       /* raw query after '?', undecoded; "" when none */
    const char *params[PICL_HTTP_MAX_PARAMS]; /* decoded "*" segments */
    size_t nparams;
    const uint8_t *body;     /* body bytes, NUL-terminated; "" when none */
    size_t body_len;
    int has_content_length;  /* 1 when the request carried Content-Length */
    void *conn_;             /* internal */
};

/* A response under construction.  The status defaults to 200. */
struct picl_http_response {
    int status;
    char *body;              /* malloc()ed, owned by the response */
    size_t body_len;
    char *content_type;      /* malloc()ed or NULL */
    struct picl_http_hdr { char *name, *value; } *headers;
    size_t nheaders;
    int failed;              /* an allocation failed while building: sent as 500 */
};

typedef void (*picl_http_handler)(picl_http_request *req, picl_http_response *resp,
                                  void *ctx);

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
typedef struct picl_http_hooks {
    void (*error)(picl_http_request *req, picl_http_response *resp, int http_status,
                  picl_http_error why, void *ctx);
    void (*finish)(picl_http_request *req, picl_http_response *resp, void *ctx);
    void *ctx;
    size_t max_body; /* body cap of the service's routes; 0 = the server's max_body
                        (so two services with different caps can share one port) */
    /* before_body: called once the headers are in, for a request that
     * announces a body (Content-Length > 0 or chunked), before any byte of
     * it is read or any room is made for it; req->body is still "".  When
     * it sets resp->status, that is the answer (the finish hook still runs)
     * and the body is never read: e.g. authenticate from the headers so an
     * unauthenticated client costs no body buffer.  May be NULL. */
    void (*before_body)(picl_http_request *req, picl_http_response *resp, void *ctx);
} picl_http_hooks;

typedef struct picl_http_config {
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
    const picl_http_hooks *hooks;/* default hooks (copied); NULL = none */
    srvlog_sink log;             /* one line per answered request (http/log.h); NULL = none */
    void *log_ctx;
} picl_http_config;

/* Defaults for the three limits above when a config leaves them at 0 (a
 * server's command line sets them once, before any server is created; not
 * thread-safe).  NULL = back to the built-in defaults. */
typedef struct picl_http_limits {
    unsigned max_connections, per_ip_connections, request_timeout_s;
} picl_http_limits;
void picl_http_set_default_limits(const picl_http_limits *l);

/* Creates a server (not listening yet).  Caller frees with picl_http_server_free. */
picl_status picl_http_server_new(picl_http_server **out, const picl_http_config *cfg);

/* Adds a route before start.  `hooks` NULL = the server's default hooks.
 * The route's body cap is hooks->max_body, else the server's max_body.
 * PICL_ERROR_INVALID_ARGUMENT on a
 * pattern with more than PICL_HTTP_MAX_PARAMS "*" or after start. */
picl_status picl_http_route(picl_http_server *srv, const char *method, const char *pattern,
                            picl_http_handler fn, void *ctx, const picl_http_hooks *hooks);

/* Where picl_http_server_start describes why it could not listen ("cannot
 * listen on 127.0.0.1:8000: Address already in use"); buf (NULL = none) is
 * the caller's and must outlive the start call. */
void picl_http_server_set_error_buffer(picl_http_server *srv, char *buf, size_t cap);

/* Binds and starts serving.  PICL_ERROR_INVALID_ARGUMENT for a bad listen
 * address, PICL_ERROR_NETWORK when it cannot bind. */
picl_status picl_http_server_start(picl_http_server *srv);

/* The TCP port actually bound (after start), else 0. */
unsigned picl_http_server_port(const picl_http_server *srv);

/* Stops listening, closes connections, waits for handlers to return. Idempotent. */
void picl_http_server_stop(picl_http_server *srv);

/* Stops (if needed) and frees.  NULL is allowed. */
void picl_http_server_free(picl_http_server *srv);

/* ---- request helpers (valid during the handler only) ----------------- */

/* A request header by case-insensitive name, or NULL.  The pointer is the
 * glue's; valid during the handler only. */
const char *picl_http_header(const picl_http_request *req, const char *name);

/* The peer's IP address as text ("127.0.0.1", "::1") into out (cap >= 46
 * recommended).  PICL_ERROR_NOT_FOUND when unknown, PICL_ERROR_TOO_LARGE
 * when out is too small. */
picl_status picl_http_client_addr(const picl_http_request *req, char *out, size_t cap);

/*
 * The first query parameter `name` (compared against the raw, undecoded key),
 * percent- and '+'-decoded into a malloc()ed string the caller frees.
 * PICL_ERROR_NOT_FOUND when absent, PICL_ERROR_ENCODING when the value has a
 * bad %-escape or decodes to a NUL, PICL_ERROR_NO_MEMORY.
 */
picl_status picl_http_query(const picl_http_request *req, const char *name, char **value);

/* 1 when a query parameter `name` is present (with or without a value). */
int picl_http_query_has(const picl_http_request *req, const char *name);

/* srvlog_escape of http/log.h (the one escaper of the servers' log). */
size_t picl_http_log_escape(char *out, size_t cap, const char *in, size_t max_in);

/* Percent-decodes in[0..len) into a malloc()ed NUL-terminated string
 * (plus_is_space: '+' becomes ' ').  PICL_ERROR_ENCODING on a bad escape or
 * an encoded NUL.  Caller frees *out. */
picl_status picl_http_unescape(const char *in, size_t len, int plus_is_space, char **out);

/* ---- response helpers ------------------------------------------------ */

/* Sets status and body (copied).  ctype NULL = no Content-Type. */
void picl_http_respond(picl_http_response *resp, int status, const char *ctype,
                       const void *body, size_t len);

/* Takes ownership of a malloc()ed body. */
void picl_http_respond_owned(picl_http_response *resp, int status, const char *ctype,
                             char *body, size_t len);

/* Serialises `json` (borrowed; compact, JSON_ENCODE_ANY) as application/json. */
void picl_http_respond_json(picl_http_response *resp, int status, const json_t *json);

/* Adds a header (both strings copied).  Later headers with the same name
 * are sent too; use picl_http_set_header to replace. */
void picl_http_add_header(picl_http_response *resp, const char *name, const char *value);
void picl_http_set_header(picl_http_response *resp, const char *name, const char *value);

/* The value of a response header already set, or NULL. */
const char *picl_http_response_header(const picl_http_response *resp, const char *name);

/* ---- a growable text buffer with a hard cap (for hand-written JSON) --- */

typedef struct picl_buf {
    char *data;  /* NUL-terminated when len > 0 or after any append */
    size_t len, cap, max;
    int failed;  /* set on allocation failure or when max would be passed */
} picl_buf;

/* max 0 = 1 GiB.  Appends never fail loudly: they set b->failed. */
void picl_buf_init(picl_buf *b, size_t max);
void picl_buf_append(picl_buf *b, const void *data, size_t len);
void picl_buf_puts(picl_buf *b, const char *s);
void picl_buf_printf(picl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..len) as a JSON string literal with quotes (s must be UTF-8). */
void picl_buf_json_string(picl_buf *b, const char *s, size_t len);
/* Hands the data to the caller (who frees it) and resets b; NULL if failed. */
char *picl_buf_take(picl_buf *b, size_t *len);
void picl_buf_free(picl_buf *b);

#endif
