/* SPDX-License-Identifier: MPL-2.0 */
/* ks_reply.c -- the keyserver's answers and what they need, calling no other
 * keyserver file: time and random draws (with the test hooks), JSON error
 * answers, wiping secrets in JSON, the storage faults the database notes and
 * the HTTP glue's error and finish hooks that turn them into 503s and log
 * lines, rate-limit keys, client addresses and the stretching bounds.  The
 * database backends call into it (ks_db_note_fault), so it stays below
 * ks_db.c (scripts/filecycles.py). */
#include "keyserver/ks_internal.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/codec.h"
#include "crypto/util.h"
#include "http/log.h"
#include "keyserver/ks_parse.h"

/* ---- time, random ------------------------------------------------------- */

int64_t ks_now(const ks_server *s)
{
    if (s->now_hook)
        return s->now_hook(s->hook_ctx);
    return (int64_t)time(NULL);
}

picl_status ks_random(const ks_server *s, const char *what, uint8_t *out, size_t len)
{
    if (s->random_hook && s->random_hook(s->hook_ctx, what, out, len) == PICL_OK)
        return PICL_OK;
    return picl__random_bytes(out, len);
}

/* ---- answers ------------------------------------------------------------ */

static const char *reason(int code)
{
    switch (code) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 413:
        return "Request Entity Too Large";
    case 429:
        return "Too Many Requests";
    case 503:
        return "Service Unavailable";
    default:
        return "Internal Server Error";
    }
}

json_t *ks_error_json(int code, int errnum, const char *message)
{
    return json_pack("{s:i, s:i, s:s, s:s}", "code", code, "errno", errnum, "error", reason(code), "message",
                     message);
}

/* ---- secrets in JSON ---------------------------------------------------- */

/* Zeroes every string value under j in place (jansson keeps its own copy). */
static void wipe_strings(json_t *j, int depth)
{
    const char *key;
    json_t *v;
    size_t i;
    if (!j || depth > 64)
        return;
    if (json_is_string(j))
        picl__wipe((char *)json_string_value(j), json_string_length(j));
    else if (json_is_object(j))
        json_object_foreach (j, key, v)
            wipe_strings(v, depth + 1);
    else if (json_is_array(j))
        json_array_foreach (j, i, v)
            wipe_strings(v, depth + 1);
}

void ks_json_free(json_t *j)
{
    if (!j)
        return;
    if (j->refcount == 1)
        wipe_strings(j, 0);
    json_decref(j);
}

/* jansson's own buffers (the parser's, json_dumps's, replaced values) are
 * freed through this: wiped whatever they held. */
static void *json_alloc(size_t n) { return malloc(n); }

static void json_wipe_free(void *p)
{
    if (p) {
        picl__wipe(p, malloc_usable_size(p));
        free(p);
    }
}

static void install_json_alloc(void) { json_set_alloc_funcs(json_alloc, json_wipe_free); }

void ks_json_wipe_on_free(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_json_alloc);
}

void ks_reply(srv_http_response *resp, json_t *json)
{
    if (!json) {
        resp->failed = 1;
        return;
    }
    srv_http_respond_json(resp, 200, json);
    ks_json_free(json);
}

void ks_error(srv_http_response *resp, int code, int errnum, const char *message)
{
    json_t *j = ks_error_json(code, errnum, message);
    if (!j) {
        resp->failed = 1;
        return;
    }
    srv_http_respond_json(resp, code, j);
    json_decref(j);
}

void ks_error_retry(srv_http_response *resp, int code, int errnum, int64_t retry_after)
{
    if (retry_after < 1)
        retry_after = 1;
    json_t *j = ks_error_json(code, errnum, code == 429 ? "too many requests" : "overloaded");
    if (!j || json_object_set_new(j, "retryAfter", json_integer(retry_after))) {
        json_decref(j);
        resp->failed = 1;
        return;
    }
    srv_http_respond_json(resp, code, j);
    json_decref(j);
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)retry_after);
    srv_http_set_header(resp, "Retry-After", v);
}

/* The last internal error of this thread's request, for the log line. */
static __thread const char *internal_func;
static __thread int internal_line;
/* The last storage failure under the database on this thread (2 = disk
 * full, 1 = I/O error; ks_db_note_fault), so that a request it broke is
 * answered 503 + Retry-After and logged with the cause, not 500/999. */
static __thread int storage_fault;
static __thread char storage_fault_msg[160];

void ks_db_note_fault(int full, const char *msg)
{
    storage_fault = full ? 2 : 1;
    snprintf(storage_fault_msg, sizeof storage_fault_msg, "%s", msg ? msg : "");
}

void ks_error_internal_(srv_http_response *resp, const char *func, int line)
{
    internal_func = func;
    internal_line = line;
    ks_error(resp, 500, KS_ERR_UNEXPECTED, "unexpected error");
}

void ks_error_parse(srv_http_response *resp, picl_status rc)
{
    switch (rc) {
    case PICL_ERROR_NOT_FOUND:
        ks_error(resp, 400, KS_ERR_MISSING, "missing parameter");
        break;
    case PICL_ERROR_ENCODING:
        ks_error(resp, 400, KS_ERR_JSON, "body is not a JSON object");
        break;
    case PICL_ERROR_INVALID_ARGUMENT:
    case PICL_ERROR_TOO_LARGE:
        ks_error(resp, 400, KS_ERR_PARAM, "invalid parameter");
        break;
    default:
        ks_error_internal(resp);
    }
}

json_t *ks_body(srv_http_request *req, srv_http_response *resp)
{
    json_t *j = NULL;
    if (req->body_len > KS_MAX_BODY) {
        ks_error(resp, 413, KS_ERR_TOO_LARGE, "body too large");
        return NULL;
    }
    if (ks_parse_body(&j, req->body, req->body_len) != PICL_OK)
        ks_error(resp, 400, KS_ERR_JSON, "body is not a JSON object");
    return j;
}

void ks_rate_set(ks_rate *l, int64_t max, int64_t window, int count, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->key, sizeof l->key, fmt, ap);
    va_end(ap);
    l->max = max;
    l->window = window;
    l->count = count;
    l->event = 0;
}

int ks_client_addr(ks_server *s, srv_http_request *req, char *out, size_t cap)
{
    if (srv_http_client_addr(req, out, cap) != PICL_OK)
        snprintf(out, cap, "unknown");
    /* Loopback is a local proxy (every user at once) or a test: limiting it
     * would let anyone lock everybody out, so it is exempt unless asked. */
    int loopback = !strncmp(out, "127.", 4) || !strcmp(out, "::1") || !strncmp(out, "::ffff:127.", 11);
    return !loopback || s->limit_loopback;
}

/* ---- hooks ----------------------------------------------------------- */

void ks_hook_error(srv_http_request *req, srv_http_response *resp, int status, srv_http_error why, void *ctx)
{
    switch (why) {
    case SRV_HTTP_ERR_LENGTH_REQUIRED:
        ks_error(resp, 411, KS_ERR_LENGTH, "Content-Length required");
        break;
    case SRV_HTTP_ERR_TOO_LARGE:
        ks_error(resp, 413, KS_ERR_TOO_LARGE, "body too large");
        break;
    case SRV_HTTP_ERR_BAD_REQUEST:
        ks_error(resp, 400, KS_ERR_PARAM, "bad request");
        break;
    case SRV_HTTP_ERR_NOT_FOUND:
        ks_error(resp, 404, KS_ERR_UNEXPECTED, "not found");
        break;
    case SRV_HTTP_ERR_METHOD:
        ks_error(resp, 405, KS_ERR_UNEXPECTED, "method not allowed");
        break;
    default:
        ks_error(resp, status >= 400 ? status : 500, KS_ERR_UNEXPECTED, "unexpected error");
    }
}

void ks_hook_finish(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)ks_now(s));
    srv_http_set_header(resp, "Timestamp", v);
    char fault[400] = "";
    /* a statement of the request that failed for want of disk leaves its
     * errno (errno is cleared after every answer of this thread) */
    int e = errno;
    if (!storage_fault && internal_func && (e == ENOSPC || e == EDQUOT || e == EIO))
        ks_db_note_fault(e != EIO, strerror(e));
    if (storage_fault && internal_func && (resp->failed || resp->status == 500)) {
        /* a full disk or an I/O error is the server's passing trouble, not
         * the request's: 503 + Retry-After, and the operator is told why */
        resp->failed = 0;
        ks_error_retry(resp, 503, KS_ERR_OVERLOADED, 30);
        snprintf(fault, sizeof fault, "; %s on the database in %.200s: %.120s",
                 storage_fault == 2 ? "disk full" : "I/O error", s->data_dir ? s->data_dir : "(database URL)",
                 storage_fault_msg);
    }
    storage_fault = 0;
    errno = 0;
    if (s->log && internal_func) {
        /* the request line itself is the HTTP glue's (http/log.h); this one
         * says where a 500 came from.  The target is the client's: redacted
         * and escaped, it cannot forge log lines. */
        char target[330], method[40];
        srvlog_redact_target(target, sizeof target, req->target);
        srv_http_log_escape(method, sizeof method, req->method ? req->method : "-", 16);
        srvlog(s->log, s->hook_ctx, SRVLOG_ERROR, "keyserver: %s %s %d: internal error in %.60s:%d%s", method,
               target, resp->failed ? 500 : resp->status, internal_func, internal_line, fault);
    }
    internal_func = NULL;
}

/* ---- stretching bounds ------------------------------------------------ */

void ks_stretch_bounds(picl_stretch_params *floor, picl_stretch_params *ceiling)
{
    picl__stretch_default_params(floor);
    picl__stretch_ceiling_params(ceiling);
#ifdef PICL_TEST_HOOKS
    /* test builds only: the cheap parameters the tests' accounts use */
    const char *f = getenv("PICL_TEST_STRETCH_FLOOR");
    if (f && !strcmp(f, "cheap"))
        *floor = (picl_stretch_params){1000, 1024, 8, 1, 1000};
#endif
}

picl_status ks_stretch_ok(const ks_server *s, const picl_stretch_params *p)
{
    return picl__stretch_check_params(p, &s->stretch_floor) == PICL_OK ? PICL_OK
                                                                       : PICL_ERROR_INVALID_ARGUMENT;
}

/* ---- JSON helpers ----------------------------------------------------------- */

/* Adds a hex string of b[0..n) to obj under key (no-op on earlier failure). */
int ks_set_hex(json_t *obj, const char *key, const uint8_t *b, size_t n)
{
    char *h = picl__hex_encode_alloc(b, n);
    if (!h)
        return -1;
    int r = json_object_set_new(obj, key, json_string(h));
    picl__zfree(h, 2 * n);
    return r;
}
