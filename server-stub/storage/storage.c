/* SPDX-License-Identifier: MPL-2.0 */
/* storage.c -- the storage server: lifecycle, routes, auth preamble, reads,
 * deletes and /info (writes are in storage_write.c, the answer helpers in
 * storage_resp.c). */
#include "storage/storage_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crypto/nss.h"
#include "protocol/hostport.h"

/* The node before the port is bound: no token names it. */
static char unbound[] = "";

/* Parses the uid segment of the path: 1..15 decimal digits. */
static int parse_uid(const char *s, int64_t *uid)
{
    size_t n = strlen(s);
    if (!n || n > 15)
        return 0;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    *uid = v;
    return 1;
}

/*
 * The preamble of every /1.5/<uid> request: availability, authentication,
 * conditional headers.  Returns 1 to go on; 0 when the answer is set.
 */
static int begin_req(sreq *r, storage_server *s, srv_http_request *req, srv_http_response *resp,
                     int64_t grace)
{
    memset(r, 0, sizeof *r);
    r->s = s;
    r->req = req;
    r->resp = resp;
    r->now = sdb_now();
    int down = atomic_load(&s->unavailable);
    if (down > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", down);
        storage__error(resp, 503, 0);
        srv_http_set_header(resp, "Retry-After", v);
        return 0;
    }
    int64_t uid = -1;
    int ok = req->nparams >= 1 && parse_uid(req->params[0], &uid);
    picl_status st = ok ? storage_auth_check(s->auth, req, atomic_load(&s->node), uid, grace, r->now / 100)
                        : PICL_ERROR_TOKEN;
    if (st == PICL_ERROR_BACKOFF) {
        storage__error(resp, 503, 0);
        srv_http_set_header(resp, "Retry-After", "10");
        return 0;
    }
    if (st != PICL_OK) {
        char www[200];
        storage_auth_challenge(s->auth, req, r->now / 100, www, sizeof www);
        storage__error(resp, 401, 0);
        srv_http_set_header(resp, "WWW-Authenticate", www);
        return 0;
    }
    r->uid = uid;
    const char *ims = srv_http_header(req, "X-If-Modified-Since");
    const char *ius = srv_http_header(req, "X-If-Unmodified-Since");
    if ((ims && ius) || (ims && picl__synctime_parse(ims, strlen(ims), &r->ims) != PICL_OK) ||
        (ius && picl__synctime_parse(ius, strlen(ius), &r->ius) != PICL_OK)) {
        storage__error(resp, 400, 1);
        return 0;
    }
    r->has_ims = ims != NULL;
    r->has_ius = ius != NULL;
    return 1;
}

/* ---- hooks ------------------------------------------------------------ */

static void on_glue_error(srv_http_request *req, srv_http_response *resp, int status, srv_http_error why,
                          void *ctx)
{
    storage__error(resp, status, status == 413 ? 17 : status == 400 ? 1 : 0);
}

/* A body is only read for a request whose headers authenticate: an
 * unknown client costs no buffer (at most the headers). */
static void on_before_body(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    storage_server *s = ctx;
    int64_t uid = -1;
    int ok = req->nparams >= 1 && parse_uid(req->params[0], &uid);
    picl_status st =
        ok ? storage_auth_check_headers(s->auth, req, atomic_load(&s->node), uid, 0, sdb_now() / 100)
           : PICL_ERROR_TOKEN;
    if (st == PICL_ERROR_BACKOFF || st == PICL_ERROR_NO_MEMORY) {
        storage__error(resp, 503, 0);
        srv_http_set_header(resp, "Retry-After", "10");
    } else if (st != PICL_OK) {
        char www[200];
        storage_auth_challenge(s->auth, req, sdb_now() / 100, www, sizeof www);
        storage__error(resp, 401, 0);
        srv_http_set_header(resp, "WWW-Authenticate", www);
    }
}

static void on_finish(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    storage_server *s = ctx;
    if (!srv_http_response_header(resp, "X-Weave-Timestamp"))
        storage__set_ts(resp, "X-Weave-Timestamp", sdb_now());
    int b = atomic_load(&s->backoff);
    if (b > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", b);
        srv_http_set_header(resp, "X-Weave-Backoff", v);
    }
}

/* ---- /info ------------------------------------------------------------ */

typedef enum info_kind { INFO_COLLECTIONS, INFO_QUOTA, INFO_USAGE, INFO_COUNTS, INFO_CONFIG } info_kind;

static void info(srv_http_request *req, srv_http_response *resp, storage_server *s, info_kind kind)
{
    sreq r;
    if (!begin_req(&r, s, req, resp, kind == INFO_COLLECTIONS ? s->expired_grace_s : 0))
        return;
    sdb_conn *c = NULL;
    int64_t umod = 0;
    srv_buf out;
    srv_buf_init(&out, 0);
    picl_status st = sdb_acquire(s->db, &c);
    if (st == PICL_OK)
        st = sdb_begin_read(c, r.uid, &umod);
    if (st != PICL_OK)
        goto done;
    int64_t wts = storage__max64(r.now, umod);
    if (!storage__read_preconditions(&r, umod, wts))
        goto done;
    switch (kind) {
    case INFO_CONFIG:
        srv_buf_printf(&out,
                       "{\"max_request_bytes\":%" PRId64 ",\"max_post_records\":%" PRId64
                       ",\"max_post_bytes\":%" PRId64 ",\"max_total_records\":%" PRId64
                       ",\"max_total_bytes\":%" PRId64 ",\"max_record_payload_bytes\":%" PRId64
                       ",\"picl_restore_days\":%" PRId64 "}",
                       s->lim.max_request_bytes, s->lim.max_post_records, s->lim.max_post_bytes,
                       s->lim.max_total_records, s->lim.max_total_bytes, s->lim.max_record_payload_bytes,
                       s->restore_days);
        break;
    case INFO_COLLECTIONS:
        st = sdb_info_collections(c, r.uid, &out);
        break;
    case INFO_COUNTS:
        st = sdb_info_counts(c, r.uid, r.now, &out);
        break;
    case INFO_USAGE:
        st = sdb_info_usage(c, r.uid, r.now, &out);
        break;
    default: {
        int64_t bytes = 0;
        char kb[32];
        st = sdb_usage(c, r.uid, r.now, &bytes);
        sdb_fmt_kib(kb, bytes);
        if (s->quota_kb)
            srv_buf_printf(&out, "[%s,%" PRId64 "]", kb, s->quota_kb);
        else
            srv_buf_printf(&out, "[%s,null]", kb);
    }
    }
    if (st != PICL_OK)
        goto done;
    size_t len;
    char *body = srv_buf_take(&out, &len);
    if (!body) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    srv_http_respond_owned(resp, 200, "application/json", body, len);
    storage__set_modified(&r, umod, wts);
done:
    if (st != PICL_OK)
        storage__db_error(&r, st);
    srv_buf_free(&out);
    sdb_release(s->db, c);
}

static void h_info_collections(srv_http_request *q, srv_http_response *p, void *s)
{
    info(q, p, s, INFO_COLLECTIONS);
}
static void h_info_quota(srv_http_request *q, srv_http_response *p, void *s) { info(q, p, s, INFO_QUOTA); }
static void h_info_usage(srv_http_request *q, srv_http_response *p, void *s) { info(q, p, s, INFO_USAGE); }
static void h_info_counts(srv_http_request *q, srv_http_response *p, void *s) { info(q, p, s, INFO_COUNTS); }
static void h_info_config(srv_http_request *q, srv_http_response *p, void *s) { info(q, p, s, INFO_CONFIG); }

static void h_heartbeat(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    storage_server *s = ctx;
    sdb_conn *c = NULL;
    picl_status st = sdb_acquire(s->db, &c);
    if (st == PICL_OK)
        st = sdb_ping(c);
    sdb_release(s->db, c);
    if (st == PICL_OK)
        srv_http_respond(resp, 200, "application/json", "{}", 2);
    else
        storage__error(resp, 503, 0);
}

/* ---- DELETE ----------------------------------------------------------- */

typedef enum del_kind { DEL_ALL, DEL_COLL, DEL_ITEM } del_kind;

static void delete_(sreq *r, del_kind kind, const char *coll, const char *id)
{
    char **ids = NULL;
    size_t nids = 0;
    sdb_conn *c = NULL;
    picl_status st = PICL_OK;
    if (kind == DEL_COLL && !storage__parse_ids(r, &ids, &nids))
        return;
    int64_t umod = 0, m = 0, t = 0;
    if ((st = sdb_acquire(r->s->db, &c)) != PICL_OK || (st = sdb_begin_write(c, r->uid, &umod)) != PICL_OK)
        goto done;
    t = storage__max64(r->now, umod + 1);
    sdb_set_write_time(c, t); /* what the undo extension records for what is deleted */
    /* The resource's current last-modified, for X-If-Unmodified-Since. */
    if (kind == DEL_ALL) {
        m = umod;
    } else if (kind == DEL_COLL) {
        st = sdb_coll_modified(c, r->uid, coll, &m);
    } else {
        st = sdb_item_modified(c, r->uid, coll, id, r->now, &m);
    }
    if (st == PICL_ERROR_NOT_FOUND && kind == DEL_COLL) {
        /* Like Mozilla's servers: deleting a collection (or ids of one) that
         * does not exist succeeds and writes nothing; it answers the user's
         * current last-modified. */
        st = PICL_OK;
        sdb_rollback(c);
        char ts[32], body[64];
        picl__synctime_format(ts, umod);
        int n = snprintf(body, sizeof body, "{\"modified\":%s}", ts);
        srv_http_respond(r->resp, 200, "application/json", body, (size_t)n);
        storage__set_modified(r, umod, storage__max64(r->now, umod));
        goto done;
    }
    if (st == PICL_ERROR_NOT_FOUND) {
        st = PICL_OK;
        sdb_rollback(c);
        storage__error(r->resp, 404, 0);
        storage__set_ts(r->resp, "X-Weave-Timestamp", storage__max64(r->now, umod));
        goto done;
    }
    if (st != PICL_OK)
        goto done;
    if (r->has_ius && m > r->ius) {
        sdb_rollback(c);
        storage__error(r->resp, 412, 0);
        storage__set_modified(r, m, storage__max64(r->now, umod));
        goto done;
    }
    if (kind == DEL_ALL) {
        st = sdb_delete_all(c, r->uid);
        if (st == PICL_OK)
            st = sdb_touch(c, r->uid, NULL, t);
    } else if (kind == DEL_COLL && !nids) {
        st = sdb_delete_coll(c, r->uid, coll);
        if (st == PICL_OK)
            st = sdb_touch(c, r->uid, NULL, t);
    } else {
        for (size_t i = 0; i < nids && st == PICL_OK; i++)
            st = sdb_delete_item(c, r->uid, coll, ids[i], r->now, NULL);
        if (kind == DEL_ITEM)
            st = sdb_delete_item(c, r->uid, coll, id, r->now, NULL);
        if (st == PICL_OK)
            st = sdb_touch(c, r->uid, coll, t);
    }
    int64_t usage = -1;
    if (st == PICL_OK && r->s->quota_kb)
        st = sdb_usage(c, r->uid, r->now, &usage);
    if (st == PICL_OK)
        st = sdb_commit(c);
    if (st != PICL_OK)
        goto done;
    if (usage >= 0)
        storage__set_quota_header(r, usage);
    char ts[32], body[64];
    picl__synctime_format(ts, t);
    int n = snprintf(body, sizeof body, "{\"modified\":%s}", ts);
    srv_http_respond(r->resp, 200, "application/json", body, (size_t)n);
    storage__set_modified(r, t, t);
done:
    if (st != PICL_OK)
        storage__db_error(r, st);
    storage__free_ids(ids, nids);
    sdb_release(r->s->db, c);
}

/* ---- route handlers --------------------------------------------------- */

static int coll_ok(sreq *r, const char *coll)
{
    if (storage__valid_coll(coll))
        return 1;
    storage__error(r->resp, 400, 13);
    return 0;
}

static int id_ok(sreq *r, const char *id)
{
    if (storage__valid_id(id, strlen(id)))
        return 1;
    storage__error(r->resp, 400, 8);
    return 0;
}

static void h_coll(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    sreq r;
    if (!begin_req(&r, ctx, req, resp, 0) || !coll_ok(&r, req->params[1]))
        return;
    if (!strcmp(req->method, "GET"))
        storage__get_coll(&r, req->params[1]);
    else if (!strcmp(req->method, "POST"))
        storage__post_coll(&r, req->params[1]);
    else
        delete_(&r, DEL_COLL, req->params[1], NULL);
}

static void h_item(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    sreq r;
    if (!begin_req(&r, ctx, req, resp, 0) || !coll_ok(&r, req->params[1]) || !id_ok(&r, req->params[2]))
        return;
    if (!strcmp(req->method, "GET"))
        storage__get_item(&r, req->params[1], req->params[2]);
    else if (!strcmp(req->method, "PUT"))
        storage__put_item(&r, req->params[1], req->params[2]);
    else
        delete_(&r, DEL_ITEM, req->params[1], req->params[2]);
}

static void h_delete_all(srv_http_request *req, srv_http_response *resp, void *ctx)
{
    sreq r;
    if (begin_req(&r, ctx, req, resp, 0))
        delete_(&r, DEL_ALL, NULL, NULL);
}

/* ---- lifecycle -------------------------------------------------------- */

static void *pruner_main(void *arg)
{
    storage_server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += s->prune_interval_s;
        while (!s->stopping && pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT)
            ;
        if (s->stopping)
            break;
        pthread_mutex_unlock(&s->mu);
        storage_server_prune(s, NULL);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

picl_status storage_server_mount(storage_server *s, srv_http_server *http, int skip_heartbeat)
{
    static const struct {
        const char *method, *pattern;
        srv_http_handler fn;
    } routes[] = {
        {"GET", "/1.5/*/info/collections", h_info_collections},
        {"GET", "/1.5/*/info/quota", h_info_quota},
        {"GET", "/1.5/*/info/collection_usage", h_info_usage},
        {"GET", "/1.5/*/info/collection_counts", h_info_counts},
        {"GET", "/1.5/*/info/configuration", h_info_config},
        {"GET", "/1.5/*/storage/*", h_coll},
        {"POST", "/1.5/*/storage/*", h_coll},
        {"DELETE", "/1.5/*/storage/*", h_coll},
        {"GET", "/1.5/*/storage/*/*", h_item},
        {"PUT", "/1.5/*/storage/*/*", h_item},
        {"DELETE", "/1.5/*/storage/*/*", h_item},
        {"DELETE", "/1.5/*/storage", h_delete_all},
        {"DELETE", "/1.5/*/storage/", h_delete_all},
        {"DELETE", "/1.5/*", h_delete_all},
        {"DELETE", "/1.5/*/", h_delete_all},
        {"GET", "/__heartbeat__", h_heartbeat},
    };
    if (!s || !http || !atomic_load(&s->node))
        return PICL_ERROR_INVALID_ARGUMENT; /* tokens are checked against the node */
    picl_status st = PICL_OK;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0] && st == PICL_OK; i++) {
        if (skip_heartbeat && routes[i].fn == h_heartbeat)
            continue;
        st = srv_http_route(http, routes[i].method, routes[i].pattern, routes[i].fn, s, &s->hooks);
    }
    /* TTL pruning runs for as long as the server object lives. */
    if (st == PICL_OK && s->prune_interval_s > 0 && !s->pruner_running) {
        if (pthread_create(&s->pruner, NULL, pruner_main, s) != 0)
            return PICL_ERROR_NO_MEMORY;
        s->pruner_running = 1;
    }
    return st;
}

static void describe_open_failure(storage_server *s, picl_status st, const char *why);

/* storage_auth's shared nonce store: the database. */
static picl_status take_nonce(void *ctx, const char *key, int64_t expires)
{
    storage_server *s = ctx;
    return sdb_nonce_take(s->db, key, expires);
}
static picl_status check_writable(storage_server *s);

picl_status storage_server_new(storage_server **out, const storage_config *cfg)
{
    *out = NULL;
    if (!cfg || (!cfg->data_dir && !cfg->database) || (cfg->database && !sdb_is_url(cfg->database)) ||
        !cfg->secret || cfg->secret_len < 32 || cfg->quota_kb < 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    storage_server *s = calloc(1, sizeof *s);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->lim = cfg->limits;
#define DEF(f, v)                                                                                            \
    if (s->lim.f <= 0)                                                                                       \
    s->lim.f = (v)
    DEF(max_request_bytes, 2 * 1024 * 1024 + 4096);
    DEF(max_post_records, 100);
    DEF(max_post_bytes, 2 * 1024 * 1024);
    DEF(max_total_records, 10000);
    DEF(max_total_bytes, 100 * 1024 * 1024);
    DEF(max_record_payload_bytes, 2 * 1024 * 1024);
#undef DEF
    s->quota_kb = cfg->quota_kb;
    s->restore_days = cfg->restore_days < 0 ? 0 : cfg->restore_days ? cfg->restore_days : 30;
    s->batch_ttl_s = cfg->batch_ttl_s > 0 ? cfg->batch_ttl_s : 7200;
    s->max_open_batches = cfg->max_open_batches > 0 ? cfg->max_open_batches : 10;
    s->prune_interval_s = cfg->prune_interval_s ? cfg->prune_interval_s : 3600;
    s->expired_grace_s = cfg->expired_grace_s > 0 ? cfg->expired_grace_s : 300;
    s->threads = cfg->threads;
    s->hooks.error = on_glue_error;
    s->hooks.finish = on_finish;
    s->hooks.before_body = on_before_body;
    s->hooks.ctx = s;
    s->hooks.max_body = (size_t)s->lim.max_request_bytes;
    picl_status st = PICL_ERROR_NO_MEMORY;
    s->data_dir = cfg->data_dir ? strdup(cfg->data_dir) : NULL;
    s->database = cfg->database ? strdup(cfg->database) : NULL;
    s->listen = strdup(cfg->listen ? cfg->listen : "127.0.0.1:0");
    if (cfg->node)
        atomic_store(&s->node, strdup(cfg->node));
    if ((cfg->data_dir && !s->data_dir) || (cfg->database && !s->database) || !s->listen ||
        (cfg->node && !atomic_load(&s->node)))
        goto fail;
    if ((st = picl__nss_acquire()) != PICL_OK)
        goto fail;
    s->nss = 1;
    if ((st = storage_auth_new_sized(&s->auth, cfg->secret, cfg->secret_len,
                                     cfg->hawk_skew_s > 0 ? cfg->hawk_skew_s : 60,
                                     cfg->nonce_cache_entries)) != PICL_OK)
        goto fail;
    s->error = cfg->error;
    s->error_cap = cfg->error_cap;
    s->log = cfg->log;
    s->log_ctx = cfg->log_ctx;
    const char *why = NULL;
    if ((st = sdb_open(&s->db, s->database ? s->database : s->data_dir, cfg->busy_timeout_ms, cfg->db_pool,
                       &why)) != PICL_OK) {
        describe_open_failure(s, st, why);
        goto fail;
    }
    if ((st = check_writable(s)) != PICL_OK)
        goto fail;
    /* several processes on one PostgreSQL database: a request captured at
     * one of them is refused (replay) at every other */
    if (sdb_shares_nonces(s->db))
        storage_auth_share_nonces(s->auth, take_nonce, s);
    if ((st = sdb_history_configure(s->db, s->restore_days)) != PICL_OK)
        goto fail;
    *out = s;
    return PICL_OK;
fail:
    storage_server_free(s);
    return st;
}

/* Why the database did not open, with its path (finding: "file
 * input/output error" alone sends nobody anywhere). */
static void describe_open_failure(storage_server *s, picl_status st, const char *why)
{
    if (!s->error || !s->error_cap)
        return;
    if (s->database) {
        /* never the URL: it may hold a password */
        snprintf(s->error, s->error_cap, "PostgreSQL database: %s", why ? why : picl_strerror(st));
        return;
    }
    struct stat sb;
    const char *d = s->data_dir;
    if (stat(d, &sb) != 0)
        snprintf(s->error, s->error_cap, "data directory %s: %s", d, strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        snprintf(s->error, s->error_cap, "data directory %s: not a directory", d);
    else if (access(d, R_OK | W_OK | X_OK) != 0)
        snprintf(s->error, s->error_cap, "data directory %s: %s", d, strerror(errno));
    else
        snprintf(s->error, s->error_cap, "database %s/storage.db: cannot open or upgrade it: %s", d,
                 picl_strerror(st));
}

/* A database opened read-only would answer every write 503 forever: refuse
 * to start instead, saying which file and why. */
static picl_status check_writable(storage_server *s)
{
    const char *why = NULL;
    picl_status st = sdb_check_writable(s->db, &why);
    if (st != PICL_OK && !why) {
        describe_open_failure(s, st, NULL);
    } else if (st != PICL_OK && s->error && s->error_cap) {
        if (s->database)
            snprintf(s->error, s->error_cap, "PostgreSQL database cannot be written: %s", why);
        else
            snprintf(s->error, s->error_cap, "database %s/storage.db cannot be written: %s", s->data_dir,
                     why);
    }
    return st;
}

picl_status storage_server_start(storage_server *s)
{
    if (!s || s->http)
        return PICL_ERROR_INVALID_ARGUMENT;
    srv_http_config hc = {
        .listen = s->listen,
        .max_body = (size_t)s->lim.max_request_bytes,
        .require_content_length = 1,
        .threads = s->threads,
        .hooks = &s->hooks,
        /* BSOs are ciphertext; nothing in a storage body is a secret, and a
         * 1 MB listing is not worth wiping twice its size on every answer */
        .plain_bodies = 1,
        .log = s->log,
        .log_ctx = s->log_ctx,
    };
    picl_status st = srv_http_server_new(&s->http, &hc);
    if (st == PICL_OK)
        srv_http_server_set_error_buffer(s->http, s->error, s->error_cap);
    /* The node may name the port only known once bound: until it is
     * published, requests are checked against "" (which no token matches). */
    int own_node = !atomic_load(&s->node);
    if (own_node)
        atomic_store(&s->node, unbound);
    if (st == PICL_OK)
        st = storage_server_mount(s, s->http, 0);
    if (st == PICL_OK)
        st = srv_http_server_start(s->http);
    if (st != PICL_OK)
        goto fail;
    if (own_node) {
        /* "http://HOST:PORT" of what we listen on. */
        picl_hostport hp; /* parsed before, by srv_http_server_start */
        size_t n = strlen(s->listen) + 32;
        char *node = malloc(n);
        if (!node || picl__hostport_parse(s->listen, strlen(s->listen), 0, 1, &hp) != PICL_OK) {
            st = node ? PICL_ERROR_INVALID_ARGUMENT : PICL_ERROR_NO_MEMORY;
            free(node);
            goto fail;
        }
        snprintf(node, n, "http://%s:%u", hp.host, srv_http_server_port(s->http));
        atomic_store(&s->node, node);
    }
    return PICL_OK;
fail:
    srv_http_server_free(s->http);
    s->http = NULL;
    if (atomic_load(&s->node) == unbound)
        atomic_store(&s->node, NULL);
    return st;
}

unsigned storage_server_port(const storage_server *s) { return s ? srv_http_server_port(s->http) : 0; }

const char *storage_server_node(const storage_server *s) { return atomic_load(&s->node); }

const storage_limits *storage_server_limits(const storage_server *s) { return &s->lim; }

void storage_server_set_backoff(storage_server *s, int secs) { atomic_store(&s->backoff, secs); }

void storage_server_set_unavailable(storage_server *s, int secs) { atomic_store(&s->unavailable, secs); }

picl_status storage_server_prune(storage_server *s, int64_t *removed)
{
    sdb_conn *c = NULL;
    picl_status st = sdb_acquire(s->db, &c);
    if (st == PICL_OK)
        st = sdb_begin_maint(c);
    if (st == PICL_OK)
        st = sdb_prune(c, sdb_now(), removed);
    if (st == PICL_OK)
        st = sdb_commit(c);
    sdb_release(s->db, c);
    return st;
}

void storage_server_free(storage_server *s)
{
    if (!s)
        return;
    if (s->pruner_running) {
        pthread_mutex_lock(&s->mu);
        s->stopping = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->pruner, NULL);
    }
    srv_http_server_free(s->http);
    sdb_close(s->db);
    storage_auth_free(s->auth);
    if (s->nss)
        picl__nss_release();
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->listen);
    free(s->data_dir);
    free(s->database);
    char *node = atomic_load(&s->node);
    if (node != unbound)
        free(node);
    free(s);
}
