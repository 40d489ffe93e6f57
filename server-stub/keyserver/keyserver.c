/* keyserver.c -- keyserver lifecycle and the machinery every route shares:
 * errors, Hawk authentication, token issue, mail and rate limits. */
#include "keyserver/ks_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crypto/codec.h"
#include "crypto/kdf.h"
#include "crypto/nss.h"
#include "crypto/util.h"
#include "keyserver/ks_mail.h"
#include "keyserver/ks_parse.h"
#include "protocol/hostport.h"
#include "protocol/tokens.h"

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
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Request Entity Too Large";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

static json_t *error_json(int code, int errnum, const char *message)
{
    return json_pack("{s:i, s:i, s:s, s:s}", "code", code, "errno", errnum, "error",
                     reason(code), "message", message);
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
        json_object_foreach(j, key, v) wipe_strings(v, depth + 1);
    else if (json_is_array(j))
        json_array_foreach(j, i, v) wipe_strings(v, depth + 1);
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
static void *json_alloc(size_t n)
{
    return malloc(n);
}

static void json_wipe_free(void *p)
{
    if (p) {
        picl__wipe(p, malloc_usable_size(p));
        free(p);
    }
}

static void install_json_alloc(void)
{
    json_set_alloc_funcs(json_alloc, json_wipe_free);
}

void ks_json_wipe_on_free(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_json_alloc);
}

void ks_reply(picl_http_response *resp, json_t *json)
{
    if (!json) {
        resp->failed = 1;
        return;
    }
    picl_http_respond_json(resp, 200, json);
    ks_json_free(json);
}

void ks_error(picl_http_response *resp, int code, int errnum, const char *message)
{
    json_t *j = error_json(code, errnum, message);
    if (!j) {
        resp->failed = 1;
        return;
    }
    picl_http_respond_json(resp, code, j);
    json_decref(j);
}

void ks_error_retry(picl_http_response *resp, int code, int errnum, int64_t retry_after)
{
    if (retry_after < 1)
        retry_after = 1;
    json_t *j = error_json(code, errnum, code == 429 ? "too many requests" : "overloaded");
    if (!j || json_object_set_new(j, "retryAfter", json_integer(retry_after))) {
        json_decref(j);
        resp->failed = 1;
        return;
    }
    picl_http_respond_json(resp, code, j);
    json_decref(j);
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)retry_after);
    picl_http_set_header(resp, "Retry-After", v);
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

void ks_error_internal_(picl_http_response *resp, const char *func, int line)
{
    internal_func = func;
    internal_line = line;
    ks_error(resp, 500, KS_ERR_UNEXPECTED, "unexpected error");
}

void ks_error_parse(picl_http_response *resp, picl_status rc)
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

json_t *ks_body(picl_http_request *req, picl_http_response *resp)
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

picl_status ks_body_account(ks_server *s, picl_http_request *req, picl_http_response *resp, json_t **body,
                            ks_account *a)
{
    *body = ks_body(req, resp);
    if (!*body)
        return PICL_ERROR_ENCODING;
    picl_status rc = ks_parse_email(*body, "email", a->email, &a->email_len);
    if (rc != PICL_OK) {
        ks_error_parse(resp, rc);
        return rc;
    }
    rc = ks_db_account_by_email(s->db, a->email, a->email_len, a);
    if (rc == PICL_ERROR_NOT_FOUND)
        ks_error(resp, 400, KS_ERR_UNKNOWN, "unknown account");
    else if (rc != PICL_OK)
        ks_error_internal(resp);
    return rc;
}

/* ---- Hawk ------------------------------------------------------------- */

int ks_hawk_auth(ks_server *s, picl_http_request *req, picl_http_response *resp, int type,
                 ks_token *tok)
{
    memset(tok, 0, sizeof *tok);
    picl_hawk_auth *auth = calloc(1, sizeof *auth);
    int ok = 0;
    if (!auth) {
        ks_error_internal(resp);
        return 0;
    }
    const char *hdr = picl_http_header(req, "Authorization");
    if (!hdr) {
        ks_error(resp, 401, KS_ERR_SIGNATURE, "missing Hawk Authorization header");
        goto done;
    }
    if (picl__hawk_parse(auth, hdr, strlen(hdr)) != PICL_OK) {
        ks_error(resp, 401, KS_ERR_SIGNATURE, "invalid Hawk Authorization header");
        goto done;
    }
    uint8_t id[32];
    size_t idlen = strlen(auth->id), got = 0;
    if (idlen != 64 || picl__hex_decode(id, sizeof id, &got, auth->id, idlen) != PICL_OK ||
        got != 32) {
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid token");
        goto done;
    }
    ks_sweep(s);
    int64_t now = ks_now(s);
    picl_status rc = ks_db_token_get(s->db, id, type, now, tok);
    if (rc == PICL_ERROR_NOT_FOUND || rc == PICL_ERROR_TOKEN) {
        ks_error(resp, 401, KS_ERR_TOKEN, "invalid or expired token");
        goto done;
    }
    if (rc != PICL_OK) {
        ks_error_internal(resp);
        goto done;
    }
    const char *hosthdr = picl_http_header(req, "Host");
    picl_hostport hp;
    if (!hosthdr || picl__hostport_parse(hosthdr, strlen(hosthdr), 80, 0, &hp) != PICL_OK) {
        ks_error(resp, 401, KS_ERR_SIGNATURE, "invalid Host header");
        goto done;
    }
    int has_body = !strcmp(req->method, "POST") || !strcmp(req->method, "PUT") ||
                   req->body_len > 0;
    const char *ctype = picl_http_header(req, "Content-Type");
    picl_hawk_request hr = {
        .method = req->method,
        .resource = req->target,
        .host = hp.host,
        .port = hp.port,
        .content_type = has_body ? (ctype ? ctype : "") : NULL,
        .body = req->body,
        .bodylen = req->body_len,
    };
    /* the nonce cache share is the account's, whatever token it uses */
    char who[32];
    snprintf(who, sizeof who, "account:%lld", (long long)tok->account);
    picl_hawk_verify_opts opts = {.now = now,
                                  .skew = s->skew,
                                  .require_hash = has_body,
                                  .nonces = s->nonces,
                                  .identity = who};
    rc = picl__hawk_verify(auth, tok->hmac_key, sizeof tok->hmac_key, &hr, &opts);
    /* several keyservers on one PostgreSQL database: a request replayed on
     * a sibling process is refused there too (the database holds them) */
    if (rc == PICL_OK) {
        picl_status nrc = ks_db_nonce_take(s->db, auth->id, auth->ts, auth->nonce,
                                           now + 2 * s->skew);
        rc = nrc == PICL_ERROR_CONFLICT ? PICL_HAWK_ERROR_REPLAY : nrc;
    }
    switch (rc) {
    case PICL_OK:
        ok = 1;
        /* a device's last access (keyserver.md section 9); best effort */
        if (type == PICL_TOKEN_SESSION)
            ks_db_session_touch(s->db, tok->id, now);
        break;
    case PICL_HAWK_ERROR_STALE: {
        json_t *j = error_json(401, KS_ERR_SKEW, "timestamp outside the allowed skew");
        if (j && !json_object_set_new(j, "serverTime", json_integer(now)))
            picl_http_respond_json(resp, 401, j);
        else
            resp->failed = 1;
        json_decref(j);
        break;
    }
    case PICL_HAWK_ERROR_REPLAY:
        ks_error(resp, 401, KS_ERR_NONCE, "nonce reused");
        break;
    case PICL_HAWK_ERROR_BUSY:
        ks_error_retry(resp, 503, KS_ERR_OVERLOADED, s->skew);
        break;
    case PICL_HAWK_ERROR_BAD_MAC:
    case PICL_HAWK_ERROR_MALFORMED:
    case PICL_HAWK_ERROR_TOO_LARGE:
        ks_error(resp, 401, KS_ERR_SIGNATURE, "invalid request signature");
        break;
    default:
        ks_error_internal(resp);
    }
done:
    picl__zfree(auth, sizeof *auth);
    if (!ok)
        picl__wipe(tok, sizeof *tok);
    return ok;
}

/* ---- tokens, mail, rate limits ----------------------------------------- */

picl_status ks_token_issue(ks_server *s, int type, int64_t account, uint8_t raw[32],
                           const char *device_name, const char *device_type, const char *code,
                           int tries, int mailbox, int64_t expires, ks_token *out)
{
    picl_token_keys k;
    ks_token t;
    memset(&t, 0, sizeof t);
    picl_status rc = ks_random(s, picl__token_type_name((picl_token_type)type), raw, 32);
    if (rc == PICL_OK)
        rc = picl__token_derive(&k, (picl_token_type)type, raw);
    if (rc == PICL_OK) {
        memcpy(t.id, k.id, 32);
        memcpy(t.hmac_key, k.hmac_key, 32);
        memcpy(t.request_key, k.request_key, 32);
        t.type = type;
        t.account = account;
        t.created = ks_now(s);
        t.expires = expires;
        t.tries = tries;
        t.mailbox = mailbox;
        if (code)
            snprintf(t.code, sizeof t.code, "%s", code);
        if (type == PICL_TOKEN_SESSION) {
            uint8_t dev[16];
            rc = ks_random(s, "deviceId", dev, sizeof dev);
            picl__hex_encode(t.device_id, dev, sizeof dev);
            snprintf(t.device_name, sizeof t.device_name, "%s",
                     device_name && *device_name ? device_name : "PiCL device");
            snprintf(t.device_type, sizeof t.device_type, "%s",
                     device_type && *device_type ? device_type : "desktop");
        }
    }
    if (rc == PICL_OK)
        rc = ks_db_token_put(s->db, &t);
    if (rc == PICL_OK && out)
        *out = t;
    if (rc != PICL_OK)
        picl__wipe(raw, 32);
    picl__token_keys_wipe(&k);
    picl__wipe(&t, sizeof t);
    return rc;
}

picl_status ks_send_code(ks_server *s, const ks_account *a, int recovery, const char *code)
{
    char uid[2 * KS_UID_BYTES + 1], unique[33];
    uint8_t u[16];
    picl__hex_encode(uid, a->uid, KS_UID_BYTES);
    picl_status rc = picl__random_bytes(u, sizeof u);
    if (rc != PICL_OK)
        return rc;
    picl__hex_encode(unique, u, sizeof u);
    char body[1024];
    if (recovery)
        snprintf(body, sizeof body,
                 "Someone asked to reset the password of your PiCL account.\n"
                 "Your reset code is %s (valid 15 minutes, 3 tries).\n"
                 "Resetting keeps your class-A data; class-B data is lost by design.\n", code);
    else
        snprintf(body, sizeof body,
                 "Welcome to PiCL.\nVerify your email with:\n\n  picl account verify --code %s\n"
                 "\n"
                 "IMPORTANT: if you did not create this PiCL account yourself, do NOT\n"
                 "enter this code and do not pass it on to anyone.  Someone else chose\n"
                 "its password: entering the code would give them the data you later\n"
                 "sync into it.  Ignore this mail and the account is deleted within\n"
                 "48 hours; you can then create your own.\n",
                 code);
    ks_mail_msg m = {
        .from = s->mail_from,
        .to = a->email,
        .subject = recovery ? "Your PiCL password reset code" : "Verify your PiCL account",
        .uid_hex = uid,
        .code_header = recovery ? "X-Recovery-Code" : "X-Verify-Code",
        .code = code,
        .body = body,
        .unique = unique,
    };
    /* no Maildir (PostgreSQL without --data) and no SMTP: nowhere to send */
    rc = s->maildir || s->smtp_url ? ks_mail_send(s->maildir, s->smtp_url, &m) : PICL_ERROR_IO;
    picl__wipe(body, sizeof body);
    return rc;
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

int ks_take(ks_server *s, picl_http_response *resp, ks_rate *limits, size_t n)
{
    int ok = 0;
    int64_t retry = 0;
    if (ks_db_rate_take(s->db, limits, n, ks_now(s), &ok, &retry) != PICL_OK) {
        ks_error_internal(resp);
        return 0;
    }
    if (!ok)
        ks_error_retry(resp, 429, KS_ERR_THROTTLED, retry);
    return ok;
}

int ks_client_addr(ks_server *s, picl_http_request *req, char *out, size_t cap)
{
    if (picl_http_client_addr(req, out, cap) != PICL_OK)
        snprintf(out, cap, "unknown");
    /* Loopback is a local proxy (every user at once) or a test: limiting it
     * would let anyone lock everybody out, so it is exempt unless asked. */
    int loopback = !strncmp(out, "127.", 4) || !strcmp(out, "::1") ||
                   !strncmp(out, "::ffff:127.", 11);
    return !loopback || s->limit_loopback;
}

void ks_sweep(ks_server *s)
{
    int64_t now = ks_now(s);
    int64_t next = __atomic_load_n(&s->next_sweep, __ATOMIC_RELAXED);
    if (now < next ||
        !__atomic_compare_exchange_n(&s->next_sweep, &next, now + KS_SWEEP_EVERY, 0,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    int64_t longest = s->login_window > s->reset_window ? s->login_window : s->reset_window;
    /* a failure only delays the next sweep: requests never depend on it */
    ks_db_sweep(s->db, now, now - KS_UNVERIFIED_TTL, now - longest);
    /* verification mails whose request did not deliver them (a crash) */
    ks_outbox_deliver(s, 0, 8, NULL);
}

/* ---- hooks ----------------------------------------------------------- */

static void hook_error(picl_http_request *req, picl_http_response *resp, int status,
                       picl_http_error why, void *ctx)
{
    switch (why) {
    case PICL_HTTP_ERR_LENGTH_REQUIRED:
        ks_error(resp, 411, KS_ERR_LENGTH, "Content-Length required");
        break;
    case PICL_HTTP_ERR_TOO_LARGE:
        ks_error(resp, 413, KS_ERR_TOO_LARGE, "body too large");
        break;
    case PICL_HTTP_ERR_BAD_REQUEST:
        ks_error(resp, 400, KS_ERR_PARAM, "bad request");
        break;
    case PICL_HTTP_ERR_NOT_FOUND:
        ks_error(resp, 404, KS_ERR_UNEXPECTED, "not found");
        break;
    case PICL_HTTP_ERR_METHOD:
        ks_error(resp, 405, KS_ERR_UNEXPECTED, "method not allowed");
        break;
    default:
        ks_error(resp, status >= 400 ? status : 500, KS_ERR_UNEXPECTED, "unexpected error");
    }
}

static void hook_finish(picl_http_request *req, picl_http_response *resp, void *ctx)
{
    ks_server *s = ctx;
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)ks_now(s));
    picl_http_set_header(resp, "Timestamp", v);
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
                 storage_fault == 2 ? "disk full" : "I/O error",
                 s->data_dir ? s->data_dir : "(database URL)", storage_fault_msg);
    }
    storage_fault = 0;
    errno = 0;
    if (s->log && internal_func) {
        /* the request line itself is the HTTP glue's (http/log.h); this one
         * says where a 500 came from.  The target is the client's: redacted
         * and escaped, it cannot forge log lines. */
        char target[330], method[40];
        srvlog_redact_target(target, sizeof target, req->target);
        picl_http_log_escape(method, sizeof method, req->method ? req->method : "-", 16);
        srvlog(s->log, s->hook_ctx, SRVLOG_ERROR, "keyserver: %s %s %d: internal error in %.60s:%d%s",
               method, target, resp->failed ? 500 : resp->status, internal_func, internal_line,
               fault);
    }
    internal_func = NULL;
}

/* ---- lifecycle -------------------------------------------------------- */

static char *dup_or_null(const char *s, picl_status *rc)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *rc = PICL_ERROR_NO_MEMORY;
    return d;
}

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
    return picl__stretch_check_params(p, &s->stretch_floor) == PICL_OK
               ? PICL_OK
               : PICL_ERROR_INVALID_ARGUMENT;
}

/* Creates path 0600 when absent; makes it (and its -wal/-shm, when there)
 * 0600 when it is not. */
static picl_status ks_private_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return PICL_ERROR_IO;
    int ok = fchmod(fd, 0600) == 0;
    ok = close(fd) == 0 && ok;
    static const char *const side[] = {"-wal", "-shm", "-journal"};
    for (size_t i = 0; ok && i < sizeof side / sizeof side[0]; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s%s", path, side[i]);
        ok = chmod(p, 0600) == 0 || errno == ENOENT;
    }
    return ok ? PICL_OK : PICL_ERROR_IO;
}

picl_status ks_server_new(ks_server **out, const ks_config *cfg)
{
    *out = NULL;
    if (!cfg || (!cfg->data_dir && !cfg->database) || (cfg->secret && cfg->secret_len < 32) ||
        (cfg->storage_node && !cfg->secret) || cfg->secret_len > 1024)
        return PICL_ERROR_INVALID_ARGUMENT;
    ks_server *s = calloc(1, sizeof *s);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    picl_status rc = PICL_OK;
    s->listen = dup_or_null(cfg->listen, &rc);
    s->data_dir = dup_or_null(cfg->data_dir, &rc);
    s->storage_node = dup_or_null(cfg->storage_node, &rc);
    s->database = dup_or_null(cfg->database, &rc);
    s->db_pool = cfg->db_pool;
    s->purge_grace = cfg->purge_grace_s > 0 ? cfg->purge_grace_s : 7 * 86400;
    s->purge_every = cfg->purge_every_s ? cfg->purge_every_s : 3600;
    pthread_mutex_init(&s->purge_mu, NULL);
    pthread_cond_init(&s->purge_cv, NULL);
    s->smtp_url = dup_or_null(cfg->smtp_url, &rc);
    s->mail_from = dup_or_null(cfg->mail_from ? cfg->mail_from : "picl@localhost", &rc);
    s->skew = cfg->hawk_skew_s > 0 ? cfg->hawk_skew_s : PICL_HAWK_DEFAULT_SKEW;
    s->srp_ttl = cfg->srp_token_ttl_s > 0 ? cfg->srp_token_ttl_s : 60;
    s->login_max = cfg->login_max > 0 ? cfg->login_max : 10;
    s->login_window = cfg->login_window_s > 0 ? cfg->login_window_s : 900;
    s->addr_login_max = cfg->addr_login_max > 0 ? cfg->addr_login_max : 4 * s->login_max;
    s->limit_loopback = cfg->limit_loopback;
    s->reset_max = cfg->reset_max > 0 ? cfg->reset_max : 3;
    s->reset_window = cfg->reset_window_s > 0 ? cfg->reset_window_s : 3600;
    s->start_max = cfg->start_max > 0 ? cfg->start_max : 3 * s->login_max;
    s->addr_start_max = cfg->addr_start_max > 0 ? cfg->addr_start_max : 4 * s->start_max;
    ks_stretch_bounds(&s->stretch_floor, &s->stretch_ceiling);
    s->threads = cfg->threads;
    s->timeout_s = cfg->timeout_s;
    s->log = cfg->log;
    s->now_hook = cfg->now;
    s->random_hook = cfg->random;
    s->hook_ctx = cfg->hook_ctx;
    s->hooks.error = hook_error;
    s->hooks.finish = hook_finish;
    s->hooks.ctx = s;
    /* the 16 KiB cap travels with the routes: refused from the headers (413)
     * also on a shared server with a bigger default (picl server) */
    s->hooks.max_body = KS_MAX_BODY;
    if (rc != PICL_OK)
        goto fail;
    if (cfg->secret) {
        s->secret = malloc(cfg->secret_len);
        if (!s->secret) {
            rc = PICL_ERROR_NO_MEMORY;
            goto fail;
        }
        memcpy(s->secret, cfg->secret, cfg->secret_len);
        s->secret_len = cfg->secret_len;
    }
    ks_json_wipe_on_free();
    rc = picl__nss_acquire();
    if (rc != PICL_OK)
        goto fail;
    s->nss = 1;
    if (s->secret) {
        static const char info[] = "picl/keyserver/hashed-uid";
        rc = picl__hkdf_sha256(s->hashed_uid_key, 32, s->secret, s->secret_len, NULL, 0, info,
                               sizeof info - 1);
        if (rc != PICL_OK)
            goto fail;
    }
    /* live nonces expire after 2 x skew: room for ~2000 Hawk requests/s, of
     * which one account may hold 1/64 (it cannot fill it for everyone) */
    size_t entries = cfg->nonce_cache_entries ? cfg->nonce_cache_entries : 1u << 18;
    rc = picl__hawk_nonce_cache_new(&s->nonces, entries);
    if (rc == PICL_OK)
        rc = picl__hawk_nonce_cache_set_share(s->nonces, entries / 64 ? entries / 64 : 1);
    if (rc != PICL_OK)
        goto fail;
    char path[4096];
    if (!s->data_dir) /* PostgreSQL without a directory: mail only by SMTP */
        goto open_db;
    if ((size_t)snprintf(path, sizeof path, "%s/mail", s->data_dir) >= sizeof path) {
        rc = PICL_ERROR_INVALID_ARGUMENT;
        goto fail;
    }
    s->maildir = strdup(path);
    if (!s->maildir) {
        rc = PICL_ERROR_NO_MEMORY;
        goto fail;
    }
    rc = ks_mail_init(s->maildir);
    if (rc != PICL_OK)
        goto fail;
open_db:
    if (s->database) {
        const char *why = NULL;
        rc = ks_db_open(&s->db, s->database, s->db_pool, &why);
        if (rc != PICL_OK && s->log) {
            char line[256];
            snprintf(line, sizeof line, "database: %s", why ? why : picl_strerror(rc));
            srvlog(s->log, s->hook_ctx, SRVLOG_ERROR, "%s", line);
        }
        if (rc != PICL_OK)
            goto fail;
        *out = s;
        return PICL_OK;
    }
    snprintf(path, sizeof path, "%s/keyserver.db", s->data_dir);
    /* kA, wrapKb and verifiers: owner only, whatever the umask or the
     * directory's mode (SQLite gives -wal and -shm the database's mode) */
    rc = ks_private_file(path);
    if (rc == PICL_OK)
        rc = ks_db_open(&s->db, path, 0, NULL);
    if (rc != PICL_OK)
        goto fail;
    *out = s;
    return PICL_OK;
fail:
    ks_server_free(s);
    return rc;
}

picl_status ks_server_mount(ks_server *s, picl_http_server *http, int skip_heartbeat)
{
    /* verification mails a crash left in the outbox, before any answer */
    ks_outbox_deliver(s, 1, 1000, NULL);
    return ks_routes_mount(s, http, skip_heartbeat);
}

picl_status ks_server_start(ks_server *s)
{
    if (!s || !s->listen || s->http)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_http_config hc = {
        .listen = s->listen,
        .max_body = KS_MAX_BODY,
        .require_content_length = 1,
        .threads = s->threads,
        .timeout_s = s->timeout_s,
        .hooks = &s->hooks,
        .log = s->log,
        .log_ctx = s->hook_ctx,
    };
    picl_status rc = picl_http_server_new(&s->http, &hc);
    if (rc == PICL_OK) /* verification mails a crash left in the outbox, before any answer */
        ks_outbox_deliver(s, 1, 1000, NULL);
    if (rc == PICL_OK)
        rc = ks_routes_mount(s, s->http, 0);
    if (rc == PICL_OK)
        rc = picl_http_server_start(s->http);
    if (rc == PICL_OK)
        rc = ks_nodes_start_purger(s);
    if (rc != PICL_OK) {
        picl_http_server_free(s->http);
        s->http = NULL;
    }
    return rc;
}

unsigned ks_server_port(const ks_server *s)
{
    return s && s->http ? picl_http_server_port(s->http) : 0;
}

void ks_server_free(ks_server *s)
{
    if (!s)
        return;
    ks_nodes_stop_purger(s);
    picl_http_server_free(s->http);
    ks_db_close(s->db);
    picl__hawk_nonce_cache_free(s->nonces);
    if (s->secret)
        picl__zfree(s->secret, s->secret_len);
    picl__wipe(s->hashed_uid_key, sizeof s->hashed_uid_key);
    free(s->listen);
    free(s->data_dir);
    free(s->maildir);
    free(s->storage_node);
    free(s->database);
    pthread_mutex_destroy(&s->purge_mu);
    pthread_cond_destroy(&s->purge_cv);
    free(s->smtp_url);
    free(s->mail_from);
    if (s->nss)
        picl__nss_release();
    free(s);
}

/* ---- shared secret file ------------------------------------------------ */

picl_status ks_secret_load_or_create(const char *path, uint8_t **secret, size_t *len)
{
    *secret = NULL;
    *len = 0;
    if (!path)
        return PICL_ERROR_INVALID_ARGUMENT;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        uint8_t raw[32];
        char text[66];
        picl_status rc = picl__nss_acquire();
        if (rc == PICL_OK) {
            rc = picl__random_bytes(raw, sizeof raw);
            picl__nss_release();
        }
        if (rc != PICL_OK)
            return rc;
        picl__hex_encode(text, raw, sizeof raw);
        picl__wipe(raw, sizeof raw);
        text[64] = '\n';
        text[65] = 0;
        int w = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (w < 0) {
            picl__wipe(text, sizeof text);
            return PICL_ERROR_IO;
        }
        ssize_t n = write(w, text, 65);
        int ok = n == 65 && fsync(w) == 0;
        ok = close(w) == 0 && ok;
        picl__wipe(text, sizeof text);
        if (!ok)
            return PICL_ERROR_IO;
        fd = open(path, O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0)
        return PICL_ERROR_IO;
    char buf[1100];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf && (n = read(fd, buf + got, sizeof buf - got)) > 0)
        got += (size_t)n;
    close(fd);
    while (got && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
        got--;
    picl_status rc = PICL_OK;
    if (got < 32 || got > 1024)
        rc = PICL_ERROR_ENCODING;
    for (size_t i = 0; rc == PICL_OK && i < got; i++)
        if (buf[i] < 0x20 || buf[i] > 0x7e)
            rc = PICL_ERROR_ENCODING;
    if (rc == PICL_OK) {
        *secret = malloc(got);
        if (!*secret)
            rc = PICL_ERROR_NO_MEMORY;
        else {
            memcpy(*secret, buf, got);
            *len = got;
        }
    }
    picl__wipe(buf, sizeof buf);
    return rc;
}
