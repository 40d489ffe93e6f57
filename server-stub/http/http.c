/* SPDX-License-Identifier: MPL-2.0 */
/* http.c -- libmicrohttpd glue: listener, router, body limits, responses (see http.h). */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "crypto/util.h"
#include "protocol/hostport.h"

#define DEFAULT_MAX_BODY (1024u * 1024u)
#define DEFAULT_MAX_CONNECTIONS 1000u
#define DEFAULT_PER_IP 64u
#define DEFAULT_REQUEST_TIMEOUT 60u
#define FD_RESERVE 64u /* descriptors kept for databases, logs, mail */

/* One open connection, for the request deadline (a slow client cannot hold
 * a connection by sending a byte now and then: the idle timeout restarts
 * with every byte, this deadline does not). */
typedef struct conn_track {
    struct conn_track *prev, *next;
    int fd;
    double deadline; /* monotonic seconds; 0 = none (a handler is running or sending) */
    int shut;
} conn_track;

typedef struct route {
    char *method;
    char **segs;
    size_t nsegs;
    srv_http_handler fn;
    void *ctx;
    srv_http_hooks hooks;
} route;

struct srv_http_server {
    struct MHD_Daemon *mhd;
    char *listen;
    size_t max_body;
    int require_cl;
    int plain; /* cfg->plain_bodies */
    unsigned threads, timeout_s;
    unsigned max_conns, per_ip, request_timeout_s;
    srv_http_hooks hooks;
    srvlog_sink log; /* request lines (http/log.h); NULL = none */
    void *log_ctx;
    pthread_mutex_t lock; /* guards conns */
    conn_track *conns;
    pthread_t watchdog;
    int watchdog_running, stopping;
    pthread_cond_t wake;
    char *errbuf; /* the caller's, for start failures */
    size_t errcap;
    route *routes;
    size_t nroutes;
    unsigned port;
};

/* Per-request state: created by the URI log callback (so it holds the raw
 * target) and freed by the completion callback. */
typedef struct reqstate {
    char *target;
    int started, responded;
    int status;      /* what was sent, for the log line; 0 = nothing */
    int plain;       /* the server's plain_bodies */
    double t0;       /* monotonic seconds when the request line came in */
    char method[16]; /* a copy for the log line (cut if longer) */
    const route *rt;
    srv_http_request req;
    char *params[SRV_HTTP_MAX_PARAMS];
    char *pathbuf; /* target copy split into path\0query */
    uint8_t *body;
    size_t body_len, body_cap, limit;
    size_t announced; /* Content-Length, or 0 */
} reqstate;

/* ---- responses -------------------------------------------------------- */

/* Frees a malloc()ed body after wiping it: request and response bodies
 * carry tokens, codes and keys. */
static void wipe_free(void *p)
{
    if (p) {
        picl__wipe(p, malloc_usable_size(p));
        free(p);
    }
}

/* A request's or response's body freed as its server asks
 * (srv_http_config.plain_bodies). */
static void body_free(int plain, void *p)
{
    if (plain)
        free(p);
    else
        wipe_free(p);
}

void srv_http_respond_owned(srv_http_response *resp, int status, const char *ctype, char *body, size_t len)
{
    wipe_free(resp->body);
    free(resp->content_type);
    resp->status = status;
    resp->body = body;
    resp->body_len = body ? len : 0;
    resp->content_type = NULL;
    if (ctype && !(resp->content_type = strdup(ctype)))
        resp->failed = 1;
}

void srv_http_respond(srv_http_response *resp, int status, const char *ctype, const void *body, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) {
        resp->failed = 1;
        return;
    }
    if (len)
        memcpy(copy, body, len);
    copy[len] = 0;
    srv_http_respond_owned(resp, status, ctype, copy, len);
}

void srv_http_respond_json(srv_http_response *resp, int status, const json_t *json)
{
    char *text = json_dumps(json, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) {
        resp->failed = 1;
        return;
    }
    srv_http_respond_owned(resp, status, "application/json", text, strlen(text));
}

void srv_http_add_header(srv_http_response *resp, const char *name, const char *value)
{
    struct srv_http_hdr *h = realloc(resp->headers, (resp->nheaders + 1) * sizeof *h);
    if (!h) {
        resp->failed = 1;
        return;
    }
    resp->headers = h;
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        resp->failed = 1;
        return;
    }
    h[resp->nheaders].name = n;
    h[resp->nheaders].value = v;
    resp->nheaders++;
}

void srv_http_set_header(srv_http_response *resp, const char *name, const char *value)
{
    for (size_t i = 0; i < resp->nheaders; i++) {
        if (!strcasecmp(resp->headers[i].name, name)) {
            char *v = strdup(value);
            if (!v) {
                resp->failed = 1;
                return;
            }
            free(resp->headers[i].value);
            resp->headers[i].value = v;
            return;
        }
    }
    srv_http_add_header(resp, name, value);
}

const char *srv_http_response_header(const srv_http_response *resp, const char *name)
{
    for (size_t i = 0; i < resp->nheaders; i++)
        if (!strcasecmp(resp->headers[i].name, name))
            return resp->headers[i].value;
    return NULL;
}

static void response_clear(srv_http_response *resp)
{
    wipe_free(resp->body);
    free(resp->content_type);
    for (size_t i = 0; i < resp->nheaders; i++) {
        free(resp->headers[i].name);
        free(resp->headers[i].value);
    }
    free(resp->headers);
    memset(resp, 0, sizeof *resp);
}

/* ---- request helpers -------------------------------------------------- */

size_t srv_http_log_escape(char *out, size_t cap, const char *in, size_t max_in)
{
    return srvlog_escape(out, cap, in, max_in);
}

const char *srv_http_header(const srv_http_request *req, const char *name)
{
    return MHD_lookup_connection_value((struct MHD_Connection *)req->conn_, MHD_HEADER_KIND, name);
}

static picl_status conn_addr(struct MHD_Connection *c, char *out, size_t cap)
{
    if (!out || !cap)
        return PICL_ERROR_INVALID_ARGUMENT;
    out[0] = 0;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return PICL_ERROR_NOT_FOUND;
    char buf[INET6_ADDRSTRLEN];
    const struct sockaddr *sa = ci->client_addr;
    const char *r = NULL;
    if (sa->sa_family == AF_INET)
        r = inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, sizeof buf);
    else if (sa->sa_family == AF_INET6)
        r = inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, sizeof buf);
    if (!r)
        return PICL_ERROR_NOT_FOUND;
    if (strlen(buf) >= cap)
        return PICL_ERROR_TOO_LARGE;
    memcpy(out, buf, strlen(buf) + 1);
    return PICL_OK;
}

picl_status srv_http_client_addr(const srv_http_request *req, char *out, size_t cap)
{
    return conn_addr((struct MHD_Connection *)req->conn_, out, cap);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

picl_status srv_http_unescape(const char *in, size_t len, int plus_is_space, char **out)
{
    *out = NULL;
    char *o = malloc(len + 1);
    if (!o)
        return PICL_ERROR_NO_MEMORY;
    size_t j = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == '%') {
            if (i + 2 >= len) {
                free(o);
                return PICL_ERROR_ENCODING;
            }
            int a = hexval(in[i + 1]), b = hexval(in[i + 2]);
            if (a < 0 || b < 0 || (a == 0 && b == 0)) {
                free(o);
                return PICL_ERROR_ENCODING;
            }
            o[j++] = (char)(a * 16 + b);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            o[j++] = ' ';
        } else if (c == 0) {
            free(o);
            return PICL_ERROR_ENCODING;
        } else {
            o[j++] = c;
        }
    }
    o[j] = 0;
    *out = o;
    return PICL_OK;
}

/* Finds parameter `name` in the raw query: val and vlen get the raw value
 * (NULL/0 when the key has no '=').  Returns 1 when found. */
static int query_find(const char *q, const char *name, const char **val, size_t *vlen)
{
    size_t nl = strlen(name);
    while (q && *q) {
        const char *end = strchr(q, '&');
        size_t seglen = end ? (size_t)(end - q) : strlen(q);
        const char *eq = memchr(q, '=', seglen);
        size_t klen = eq ? (size_t)(eq - q) : seglen;
        if (klen == nl && !memcmp(q, name, nl)) {
            *val = eq ? eq + 1 : NULL;
            *vlen = eq ? seglen - klen - 1 : 0;
            return 1;
        }
        q = end ? end + 1 : NULL;
    }
    return 0;
}

picl_status srv_http_query(const srv_http_request *req, const char *name, char **value)
{
    const char *v;
    size_t vl;
    *value = NULL;
    if (!query_find(req->query, name, &v, &vl))
        return PICL_ERROR_NOT_FOUND;
    return srv_http_unescape(v ? v : "", vl, 1, value);
}

int srv_http_query_has(const srv_http_request *req, const char *name)
{
    const char *v;
    size_t vl;
    return query_find(req->query, name, &v, &vl);
}

/* ---- routing ---------------------------------------------------------- */

/* Splits "/a/b" into a malloc()ed array of malloc()ed segments. */
static picl_status split_path(const char *path, size_t len, char ***segs, size_t *n)
{
    *segs = NULL;
    *n = 0;
    if (!len || path[0] != '/')
        return PICL_ERROR_INVALID_ARGUMENT;
    size_t count = 1;
    for (size_t i = 1; i < len; i++)
        count += path[i] == '/';
    char **s = calloc(count, sizeof *s);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    size_t k = 0, start = 1;
    for (size_t i = 1; i <= len; i++) {
        if (i == len || path[i] == '/') {
            s[k] = strndup(path + start, i - start);
            if (!s[k]) {
                for (size_t j = 0; j < k; j++)
                    free(s[j]);
                free(s);
                return PICL_ERROR_NO_MEMORY;
            }
            k++;
            start = i + 1;
        }
    }
    *segs = s;
    *n = k;
    return PICL_OK;
}

static void free_segs(char **segs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(segs[i]);
    free(segs);
}

/* Matches a raw path against a route: 1 and the raw "*" segments on match. */
static int route_match(const route *rt, const char *path, size_t plen, const char **caps, size_t *caplens,
                       size_t *ncaps)
{
    if (!plen || path[0] != '/')
        return 0;
    size_t k = 0, start = 1, nc = 0;
    for (size_t i = 1; i <= plen; i++) {
        if (i < plen && path[i] != '/')
            continue;
        if (k >= rt->nsegs)
            return 0;
        const char *seg = path + start;
        size_t sl = i - start;
        const char *ps = rt->segs[k];
        if (!strcmp(ps, "*")) {
            if (!sl)
                return 0;
            caps[nc] = seg;
            caplens[nc] = sl;
            nc++;
        } else if (strlen(ps) != sl || memcmp(ps, seg, sl)) {
            return 0;
        }
        k++;
        start = i + 1;
    }
    if (k != rt->nsegs)
        return 0;
    *ncaps = nc;
    return 1;
}

picl_status srv_http_route(srv_http_server *srv, const char *method, const char *pattern, srv_http_handler fn,
                           void *ctx, const srv_http_hooks *hooks)
{
    if (!srv || !method || !pattern || !fn || srv->mhd)
        return PICL_ERROR_INVALID_ARGUMENT;
    route rt;
    memset(&rt, 0, sizeof rt);
    picl_status st = split_path(pattern, strlen(pattern), &rt.segs, &rt.nsegs);
    if (st != PICL_OK)
        return st;
    size_t stars = 0;
    for (size_t i = 0; i < rt.nsegs; i++)
        stars += !strcmp(rt.segs[i], "*");
    if (stars > SRV_HTTP_MAX_PARAMS) {
        free_segs(rt.segs, rt.nsegs);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    rt.method = strdup(method);
    route *r = realloc(srv->routes, (srv->nroutes + 1) * sizeof *r);
    if (!rt.method || !r) {
        free(rt.method);
        free_segs(rt.segs, rt.nsegs);
        if (r)
            srv->routes = r;
        return PICL_ERROR_NO_MEMORY;
    }
    srv->routes = r;
    rt.fn = fn;
    rt.ctx = ctx;
    rt.hooks = hooks ? *hooks : srv->hooks;
    srv->routes[srv->nroutes++] = rt;
    return PICL_OK;
}

/* ---- connection deadlines -------------------------------------------- */

/* Process-wide defaults for the limits a config leaves at 0. */
static srv_http_limits g_limits;

void srv_http_set_default_limits(const srv_http_limits *l)
{
    if (l)
        g_limits = *l;
    else
        memset(&g_limits, 0, sizeof g_limits);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    srv_http_server *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_track *t = calloc(1, sizeof *t);
        if (!t || !ci) {
            free(t);
            return; /* no deadline for this one: the idle timeout still applies */
        }
        t->fd = ci->connect_fd;
        t->deadline = mono_now() + srv->request_timeout_s;
        pthread_mutex_lock(&srv->lock);
        t->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = t;
        srv->conns = t;
        pthread_mutex_unlock(&srv->lock);
        *socket_context = t;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        /* MHD closes the descriptor only after this returns: the watchdog
         * never shuts down a descriptor that was reused */
        conn_track *t = *socket_context;
        pthread_mutex_lock(&srv->lock);
        if (t->prev)
            t->prev->next = t->next;
        else
            srv->conns = t->next;
        if (t->next)
            t->next->prev = t->prev;
        pthread_mutex_unlock(&srv->lock);
        free(t);
        *socket_context = NULL;
    }
}

/* Arms (1) or clears (0) the deadline of the connection carrying c. */
static void set_deadline(srv_http_server *srv, struct MHD_Connection *c, int arm)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_track *t = ci ? ci->socket_context : NULL;
    if (!t)
        return;
    pthread_mutex_lock(&srv->lock);
    t->deadline = arm ? mono_now() + srv->request_timeout_s : 0;
    pthread_mutex_unlock(&srv->lock);
}

/* Closes (shutdown; MHD then sees the end and frees it) every connection
 * whose request did not arrive in time. */
static void *watchdog_main(void *arg)
{
    srv_http_server *srv = arg;
    pthread_mutex_lock(&srv->lock);
    while (!srv->stopping) {
        double now = mono_now();
        for (conn_track *t = srv->conns; t; t = t->next) {
            if (!t->shut && t->deadline > 0 && now > t->deadline) {
                shutdown(t->fd, SHUT_RDWR);
                t->shut = 1;
            }
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&srv->wake, &srv->lock, &until);
    }
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

/* ---- request processing ----------------------------------------------- */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    reqstate *st = calloc(1, sizeof *st);
    if (st && !(st->target = strdup(uri ? uri : "/"))) {
        free(st);
        st = NULL;
    }
    if (st)
        st->t0 = mono_now();
    return st;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    srv_http_server *srv = cls;
    reqstate *st = *con_cls;
    /* a kept-alive connection has the same time for its next request */
    set_deadline(cls, c, 1);
    if (!st)
        return;
    if (srv->log) {
        /* one line per request, answered or not (status 0: nothing sent) */
        char addr[INET6_ADDRSTRLEN];
        if (conn_addr(c, addr, sizeof addr) != PICL_OK)
            addr[0] = 0;
        srvlog_request(srv->log, srv->log_ctx, addr, st->method, st->target,
                       toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? st->status : 0,
                       (int64_t)((mono_now() - st->t0) * 1000.0));
    }
    for (size_t i = 0; i < SRV_HTTP_MAX_PARAMS; i++)
        free(st->params[i]);
    free(st->pathbuf);
    body_free(st->plain, st->body);
    free(st->target);
    free(st);
    *con_cls = NULL;
}

static const srv_http_hooks *hooks_for(srv_http_server *srv, reqstate *st)
{
    return st->rt ? &st->rt->hooks : &srv->hooks;
}

static enum MHD_Result send_response(struct MHD_Connection *c, reqstate *st, srv_http_response *resp)
{
    if (resp->failed) {
        static const char body[] = "{\"code\":500}";
        response_clear(resp);
        resp->status = 500;
        srv_http_respond(resp, 500, "application/json", body, sizeof body - 1);
        if (resp->failed)
            return MHD_NO;
    }
    struct MHD_Response *r;
    if (resp->body) {
        r = MHD_create_response_from_buffer_with_free_callback(resp->body_len, resp->body,
                                                               st->plain ? free : wipe_free);
        if (r)
            resp->body = NULL; /* now MHD's */
    } else {
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    if (!r)
        return MHD_NO;
    if (resp->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
    for (size_t i = 0; i < resp->nheaders; i++)
        MHD_add_response_header(r, resp->headers[i].name, resp->headers[i].value);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)resp->status, r);
    MHD_destroy_response(r);
    if (ret == MHD_YES)
        st->status = resp->status;
    return ret;
}

/* Renders and queues an answer of the glue itself. */
static enum MHD_Result glue_error(srv_http_server *srv, struct MHD_Connection *c, reqstate *st, int status,
                                  srv_http_error why, const char *allow)
{
    srv_http_response resp;
    memset(&resp, 0, sizeof resp);
    resp.status = status;
    const srv_http_hooks *h = hooks_for(srv, st);
    if (h->error) {
        h->error(&st->req, &resp, status, why, h->ctx);
    } else {
        char body[32];
        int n = snprintf(body, sizeof body, "{\"code\":%d}", status);
        srv_http_respond(&resp, status, "application/json", body, (size_t)n);
    }
    if (allow)
        srv_http_set_header(&resp, "Allow", allow);
    if (h->finish)
        h->finish(&st->req, &resp, h->ctx);
    st->responded = 1;
    enum MHD_Result r = send_response(c, st, &resp);
    response_clear(&resp);
    return r;
}

/* What frames the body: every Content-Length and Transfer-Encoding header. */
typedef struct framing {
    unsigned n_cl, n_te;
    int cl_conflict; /* two Content-Length values that differ */
    const char *first_cl;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    framing *f = cls;
    if (!key)
        return MHD_YES;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        if (f->n_cl++ && strcmp(f->first_cl, value ? value : ""))
            f->cl_conflict = 1;
        if (f->n_cl == 1)
            f->first_cl = value ? value : "";
        /* "5, 5" in one header is a list: ambiguous too */
        if (value && strchr(value, ','))
            f->cl_conflict = 1;
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        f->n_te++;
    }
    return MHD_YES;
}

/* The route of method + path into st->rt (NULL when none) with its
 * captures; the methods other routes of the same path take into allow.
 * Returns 1 when some route has this path (whatever its method). */
static int find_route(srv_http_server *srv, reqstate *st, const char *method, const char **caps,
                      size_t *caplens, size_t *ncaps, char *allow, size_t allow_cap)
{
    const char *path = st->pathbuf;
    size_t plen = strlen(path);
    int path_known = 0;
    for (size_t i = 0; i < srv->nroutes && !st->rt; i++) {
        const route *rt = &srv->routes[i];
        size_t nc;
        if (!route_match(rt, path, plen, caps, caplens, &nc))
            continue;
        if (!strcmp(rt->method, method)) {
            st->rt = rt;
            *ncaps = nc;
        } else {
            path_known = 1;
            size_t used = strlen(allow);
            if (!strstr(allow, rt->method) && used + strlen(rt->method) + 3 < allow_cap)
                snprintf(allow + used, allow_cap - used, "%s%s", used ? ", " : "", rt->method);
        }
    }
    return path_known;
}

/* Called once the headers are in: route, check the body limits. */
static enum MHD_Result start_request(srv_http_server *srv, struct MHD_Connection *c, reqstate *st,
                                     const char *method)
{
    st->pathbuf = strdup(st->target);
    if (!st->pathbuf)
        return MHD_NO;
    char *q = strchr(st->pathbuf, '?');
    if (q)
        *q++ = 0;
    st->req.method = method;
    snprintf(st->method, sizeof st->method, "%s", method);
    st->req.target = st->target;
    st->req.path = st->pathbuf;
    st->req.query = q ? q : "";
    st->req.body = (const uint8_t *)"";
    st->req.conn_ = c;

    const char *path = st->pathbuf;
    size_t plen = strlen(path);
    const char *caps[SRV_HTTP_MAX_PARAMS];
    size_t caplens[SRV_HTTP_MAX_PARAMS], ncaps = 0;
    char allow[128] = "";
    int path_known = find_route(srv, st, method, caps, caplens, &ncaps, allow, sizeof allow);
    if (!st->rt) {
        if (path_known) {
            /* Render with the hooks of the service owning the path. */
            for (size_t i = 0; i < srv->nroutes; i++) {
                size_t nc;
                if (route_match(&srv->routes[i], path, plen, caps, caplens, &nc)) {
                    st->rt = &srv->routes[i];
                    break;
                }
            }
            enum MHD_Result r = glue_error(srv, c, st, 405, SRV_HTTP_ERR_METHOD, allow);
            st->rt = NULL;
            return r;
        }
        return glue_error(srv, c, st, 404, SRV_HTTP_ERR_NOT_FOUND, NULL);
    }
    for (size_t i = 0; i < ncaps; i++) {
        if (srv_http_unescape(caps[i], caplens[i], 0, &st->params[i]) != PICL_OK)
            return glue_error(srv, c, st, 400, SRV_HTTP_ERR_BAD_REQUEST, NULL);
        st->req.params[i] = st->params[i];
    }
    st->req.nparams = ncaps;

    st->limit = st->rt->hooks.max_body ? st->rt->hooks.max_body : srv->max_body;
    /* Request smuggling: a proxy in front may frame the body by another
     * Content-Length, or by the chunks, than we do.  Refuse any ambiguity. */
    framing fr;
    memset(&fr, 0, sizeof fr);
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &fr);
    if (fr.cl_conflict || (fr.n_cl && fr.n_te) || fr.n_te > 1)
        return glue_error(srv, c, st, 400, SRV_HTTP_ERR_BAD_REQUEST, NULL);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    int body_method = !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH");
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno || end == cl || *end || cl[0] == '-')
            return glue_error(srv, c, st, 400, SRV_HTTP_ERR_BAD_REQUEST, NULL);
        if (n > st->limit)
            return glue_error(srv, c, st, 413, SRV_HTTP_ERR_TOO_LARGE, NULL);
        st->req.has_content_length = 1;
        st->announced = (size_t)n;
    } else if (body_method && srv->require_cl) {
        return glue_error(srv, c, st, 411, SRV_HTTP_ERR_LENGTH_REQUIRED, NULL);
    }
    if ((st->announced || fr.n_te) && st->rt->hooks.before_body) {
        srv_http_response resp;
        memset(&resp, 0, sizeof resp);
        st->rt->hooks.before_body(&st->req, &resp, st->rt->hooks.ctx);
        if (resp.status || resp.failed) {
            if (st->rt->hooks.finish)
                st->rt->hooks.finish(&st->req, &resp, st->rt->hooks.ctx);
            st->responded = 1;
            enum MHD_Result r = send_response(c, st, &resp);
            response_clear(&resp);
            return r;
        }
        response_clear(&resp);
    }
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size,
                                  void **con_cls)
{
    srv_http_server *srv = cls;
    reqstate *st = *con_cls;
    if (!st) {
        st = on_uri(NULL, url, c);
        if (!st)
            return MHD_NO;
        *con_cls = st;
    }
    if (!st->started) {
        st->started = 1;
        st->plain = srv->plain;
        return start_request(srv, c, st, method);
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (st->responded)
            return MHD_YES;
        if (n > st->limit || st->body_len + n > st->limit)
            return MHD_NO; /* only reachable without Content-Length: drop it */
        if (st->body_len + n + 1 > st->body_cap) {
            size_t ncap = st->body_cap ? st->body_cap : 4096;
            while (ncap < st->body_len + n + 1)
                ncap *= 2;
            /* never more than announced: the room follows the bytes */
            if (st->announced && ncap > st->announced + 1 && st->announced + 1 >= st->body_len + n + 1)
                ncap = st->announced + 1;
            uint8_t *p = malloc(ncap);
            if (!p)
                return MHD_NO;
            if (st->body_len)
                memcpy(p, st->body, st->body_len);
            body_free(st->plain, st->body); /* not realloc: the old block is wiped (unless plain) */
            st->body = p;
            st->body_cap = ncap;
        }
        memcpy(st->body + st->body_len, upload, n);
        st->body_len += n;
        return MHD_YES;
    }
    if (st->responded)
        return MHD_YES;
    if (st->body) {
        st->body[st->body_len] = 0; /* body_cap > body_len always */
        st->req.body = st->body;
        st->req.body_len = st->body_len;
    }
    srv_http_response resp;
    memset(&resp, 0, sizeof resp);
    resp.status = 200;
    set_deadline(srv, c, 0); /* the request is in; the idle timeout covers the answer */
    st->rt->fn(&st->req, &resp, st->rt->ctx);
    if (st->rt->hooks.finish)
        st->rt->hooks.finish(&st->req, &resp, st->rt->hooks.ctx);
    st->responded = 1;
    enum MHD_Result r = send_response(c, st, &resp);
    response_clear(&resp);
    return r;
}

/* ---- lifecycle -------------------------------------------------------- */

picl_status srv_http_server_new(srv_http_server **out, const srv_http_config *cfg)
{
    *out = NULL;
    if (!cfg || !cfg->listen)
        return PICL_ERROR_INVALID_ARGUMENT;
    srv_http_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return PICL_ERROR_NO_MEMORY;
    srv->listen = strdup(cfg->listen);
    if (!srv->listen) {
        free(srv);
        return PICL_ERROR_NO_MEMORY;
    }
    srv->max_body = cfg->max_body ? cfg->max_body : DEFAULT_MAX_BODY;
    srv->require_cl = cfg->require_content_length;
    srv->threads = cfg->threads ? cfg->threads : 4;
    srv->plain = cfg->plain_bodies != 0;
    srv->timeout_s = cfg->timeout_s ? cfg->timeout_s : 60;
    srv->max_conns = cfg->max_connections       ? cfg->max_connections
                     : g_limits.max_connections ? g_limits.max_connections
                                                : DEFAULT_MAX_CONNECTIONS;
    srv->per_ip = cfg->per_ip_connections       ? cfg->per_ip_connections
                  : g_limits.per_ip_connections ? g_limits.per_ip_connections
                                                : DEFAULT_PER_IP;
    srv->request_timeout_s = cfg->request_timeout_s       ? cfg->request_timeout_s
                             : g_limits.request_timeout_s ? g_limits.request_timeout_s
                                                          : DEFAULT_REQUEST_TIMEOUT;
    /* never more connections than descriptors: past that, accept() fails
     * and nobody at all is answered */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        rlim_t room = rl.rlim_cur > 2 * FD_RESERVE ? rl.rlim_cur - FD_RESERVE : rl.rlim_cur / 2;
        if (room < 1)
            room = 1;
        if ((rlim_t)srv->max_conns > room)
            srv->max_conns = (unsigned)room;
    }
    if (srv->per_ip > srv->max_conns)
        srv->per_ip = srv->max_conns;
    pthread_mutex_init(&srv->lock, NULL);
    pthread_cond_init(&srv->wake, NULL);
    if (cfg->hooks)
        srv->hooks = *cfg->hooks;
    srv->log = cfg->log;
    srv->log_ctx = cfg->log_ctx;
    *out = srv;
    return PICL_OK;
}

/* "HOST:PORT" / "[V6]:PORT" (protocol/hostport.h, the port required) into
 * a socket address; a name is resolved, a numeric port only. */
static picl_status parse_listen(const char *listen, struct sockaddr_storage *ss, int *v6)
{
    picl_hostport hp;
    char port[8];
    if (!listen || picl__hostport_parse(listen, strlen(listen), 0, 1, &hp) != PICL_OK)
        return PICL_ERROR_INVALID_ARGUMENT;
    snprintf(port, sizeof port, "%u", hp.port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    if (getaddrinfo(hp.name, port, &hints, &res) != 0 || !res)
        return PICL_ERROR_INVALID_ARGUMENT;
    memset(ss, 0, sizeof *ss);
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return PICL_OK;
}

void srv_http_server_set_error_buffer(srv_http_server *srv, char *buf, size_t cap)
{
    if (srv) {
        srv->errbuf = buf;
        srv->errcap = buf ? cap : 0;
    }
}

/* Why MHD could not listen: binds a socket of our own to find the cause. */
static void describe_listen_failure(srv_http_server *srv, const struct sockaddr_storage *ss, int v6)
{
    if (!srv->errbuf || !srv->errcap)
        return;
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    int one = 1, err = 0;
    if (fd < 0) {
        err = errno;
    } else {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (const struct sockaddr *)ss,
                 v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) != 0)
            err = errno;
        close(fd);
    }
    if (err)
        snprintf(srv->errbuf, srv->errcap, "cannot listen on %s: %s", srv->listen, strerror(err));
    else
        snprintf(srv->errbuf, srv->errcap,
                 "cannot listen on %s: the HTTP server did not start "
                 "(threads or descriptors exhausted?)",
                 srv->listen);
}

picl_status srv_http_server_start(srv_http_server *srv)
{
    if (!srv || srv->mhd)
        return PICL_ERROR_INVALID_ARGUMENT;
    struct sockaddr_storage ss;
    int v6 = 0;
    picl_status st = parse_listen(srv->listen, &ss, &v6);
    if (st != PICL_OK)
        return st;
    /* ITC: a worker at its connection limit stops polling the listening
     * socket, so only an inter-thread channel can wake it to stop */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC;
    if (v6)
        flags |= MHD_USE_IPv6;
    srv->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)srv->threads, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)srv->timeout_s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, (void *)srv,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)srv, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(64 * 1024), MHD_OPTION_CONNECTION_LIMIT, (unsigned int)srv->max_conns,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)srv->per_ip, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, (void *)srv, MHD_OPTION_END);
    if (!srv->mhd) {
        describe_listen_failure(srv, &ss, v6);
        return PICL_ERROR_NETWORK;
    }
    srv->stopping = 0;
    if (pthread_create(&srv->watchdog, NULL, watchdog_main, srv) != 0) {
        MHD_stop_daemon(srv->mhd);
        srv->mhd = NULL;
        return PICL_ERROR_NO_MEMORY;
    }
    srv->watchdog_running = 1;
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : 0;
    return PICL_OK;
}

unsigned srv_http_server_port(const srv_http_server *srv) { return srv ? srv->port : 0; }

void srv_http_server_stop(srv_http_server *srv)
{
    if (srv && srv->watchdog_running) {
        pthread_mutex_lock(&srv->lock);
        srv->stopping = 1;
        pthread_cond_signal(&srv->wake);
        pthread_mutex_unlock(&srv->lock);
        pthread_join(srv->watchdog, NULL);
        srv->watchdog_running = 0;
    }
    if (srv && srv->mhd) {
        MHD_stop_daemon(srv->mhd);
        srv->mhd = NULL;
        srv->port = 0;
    }
}

void srv_http_server_free(srv_http_server *srv)
{
    if (!srv)
        return;
    srv_http_server_stop(srv);
    for (size_t i = 0; i < srv->nroutes; i++) {
        free(srv->routes[i].method);
        free_segs(srv->routes[i].segs, srv->routes[i].nsegs);
    }
    free(srv->routes);
    free(srv->listen);
    pthread_cond_destroy(&srv->wake);
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}
