/* SPDX-License-Identifier: MPL-2.0 */
/* ks_nodes.c -- storage nodes (storage.md section 6): the credentials a
 * token request gets, node secrets, drain, and the purge job. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/http_exchange.h"
#include "crypto/codec.h"
#include "crypto/kdf.h"
#include "crypto/util.h"
#include "keyserver/ks_internal.h"
#include "protocol/hawk.h"
#include "protocol/tokenlib.h"

/* hex(HKDF(secret, no salt, info, 32)) into out (65 bytes). */
static picl_status node_secret_hex(const ks_server *s, const char *url, int64_t generation, char out[65])
{
    char info[KS_NODE_URL_MAX + 64];
    uint8_t k[32];
    memset(out, 0, 65);
    if (!s->secret)
        return PICL_ERROR_INVALID_ARGUMENT;
    int n = generation > 0 ? snprintf(info, sizeof info, "picl/node-secret/%s#%" PRId64, url, generation)
                           : snprintf(info, sizeof info, "picl/node-secret/%s", url);
    if (n < 0 || (size_t)n >= sizeof info)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_status rc = picl__hkdf_sha256(k, sizeof k, s->secret, s->secret_len, NULL, 0, info, (size_t)n);
    if (rc == PICL_OK)
        picl__hex_encode(out, k, sizeof k);
    picl__wipe(k, sizeof k);
    return rc;
}

picl_status ks_nodes_credentials(ks_server *s, int64_t account, char *node, size_t node_cap, int64_t *uid,
                                 uint8_t **secret, size_t *secret_len)
{
    *uid = 0;
    *secret = NULL;
    *secret_len = 0;
    if (s->storage_node) { /* one node: as before nodes existed */
        if ((size_t)snprintf(node, node_cap, "%s", s->storage_node) >= node_cap)
            return PICL_ERROR_INVALID_ARGUMENT;
        *secret = malloc(s->secret_len);
        if (!*secret)
            return PICL_ERROR_NO_MEMORY;
        memcpy(*secret, s->secret, s->secret_len);
        *secret_len = s->secret_len;
        *uid = account;
        return PICL_OK;
    }
    ks_assignment a;
    int created = 0;
    picl_status rc = ks_db_assign(s->db, account, ks_now(s), &a, &created);
    if (rc != PICL_OK)
        return rc;
    if ((size_t)snprintf(node, node_cap, "%s", a.node) >= node_cap)
        return PICL_ERROR_INVALID_ARGUMENT;
    char hex[65];
    rc = node_secret_hex(s, a.node, a.generation, hex);
    if (rc == PICL_OK && !(*secret = malloc(64)))
        rc = PICL_ERROR_NO_MEMORY;
    if (rc == PICL_OK) {
        memcpy(*secret, hex, 64);
        *secret_len = 64;
        *uid = a.uid;
    }
    picl__wipe(hex, sizeof hex);
    if (rc == PICL_OK && created && s->log) {
        char line[KS_NODE_URL_MAX + 96];
        snprintf(line, sizeof line, "assigned uid %" PRId64 " on %s", a.uid, a.node);
        srvlog(s->log, s->hook_ctx, SRVLOG_INFO, "%s", line);
    }
    return rc;
}

/* ---- admin ----------------------------------------------------------------- */

/* A node URL: http(s)://, printable ASCII, no trailing slash. */
static int url_ok(const char *url)
{
    size_t n = url ? strlen(url) : 0;
    if (n < 8 || n > KS_NODE_URL_MAX || url[n - 1] == '/')
        return 0;
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (url[i] <= 0x20 || url[i] >= 0x7f)
            return 0;
    return 1;
}

picl_status ks_server_node_add(ks_server *s, const char *url, int64_t capacity)
{
    if (!s || !url_ok(url) || capacity < 1)
        return PICL_ERROR_INVALID_ARGUMENT;
    return ks_db_node_add(s->db, url, capacity);
}

picl_status ks_server_node_secret(ks_server *s, const char *url, char out[65])
{
    memset(out, 0, 65);
    if (!s || !url)
        return PICL_ERROR_INVALID_ARGUMENT;
    ks_node n;
    picl_status rc = ks_db_node_get(s->db, url, &n);
    if (rc == PICL_OK)
        rc = node_secret_hex(s, n.url, n.generation, out);
    return rc;
}

picl_status ks_server_node_drain(ks_server *s, const char *url, int64_t *moved)
{
    if (!s || !url)
        return PICL_ERROR_INVALID_ARGUMENT;
    return ks_db_node_drain(s->db, url, ks_now(s), moved);
}

/* ---- purge ----------------------------------------------------------------- */

/* DELETE <node>/1.5/<uid>, Hawk-signed with a fresh token for that uid
 * under the node's current secret, through the clients' one HTTP exchange
 * (client/http_exchange.h): the HTTP status, 0 when unreachable. */
static long purge_one(ks_server *s, const ks_assignment *a)
{
    long status = 0;
    char hex[65], target[KS_NODE_URL_MAX + 64], *token = NULL, *key = NULL, *authz = NULL;
    char *host = NULL, *port = NULL, *path = NULL;
    CURL *c = NULL;
    CURLU *u = NULL;
    picl_hx_response rs;
    memset(&rs, 0, sizeof rs);
    picl_tokenlib_payload *p = calloc(1, sizeof *p);
    if (!p || node_secret_hex(s, a->node, a->generation, hex) != PICL_OK)
        goto done;
    snprintf(target, sizeof target, "%s/1.5/%" PRId64, a->node, a->uid);
    p->uid = a->uid;
    snprintf(p->node, sizeof p->node, "%s", a->node);
    /* the node's clock, not a test clock of the keyserver's */
    int64_t wall = (int64_t)time(NULL);
    p->expires = wall + 300;
    snprintf(p->fxa_uid, sizeof p->fxa_uid, "purge");
    if (picl__tokenlib_mint(&token, &key, (const uint8_t *)hex, 64, p) != PICL_OK)
        goto done;
    if (!(u = curl_url()) || curl_url_set(u, CURLUPART_URL, target, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        goto done;
    picl_hawk_request hr = {
        .method = "DELETE", .resource = path, .host = host, .port = (unsigned)strtoul(port, NULL, 10)};
    if (picl__hx_hawk_line(&authz, token, key, strlen(key), &hr, wall) != PICL_OK || !(c = curl_easy_init()))
        goto done;
    const char *headers[] = {authz, NULL};
    picl_hx_request rq = {
        .method = "DELETE", .url = target, .headers = headers, .max_answer = 64 * 1024, .timeout_s = 30L};
    if (picl__hx_perform(c, &rq, &rs) == PICL_OK)
        status = rs.status;
done:
    if (c)
        curl_easy_cleanup(c);
    picl__hx_response_free(&rs);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    if (authz)
        picl__zfree(authz, strlen(authz));
    free(token);
    if (key)
        picl__zfree(key, strlen(key));
    picl__wipe(hex, sizeof hex);
    free(p);
    return status;
}

typedef struct purge_ctx {
    ks_server *s;
    int64_t purged, failed;
} purge_ctx;

static int purge_cb(void *ctx, const ks_assignment *a)
{
    purge_ctx *pc = ctx;
    long status = purge_one(pc->s, a);
    /* 404: nothing there (never written, or purged before we forgot it) */
    int ok = (status == 200 || status == 404) && ks_db_purged(pc->s->db, a->uid) == PICL_OK;
    if (ok)
        pc->purged++;
    else
        pc->failed++;
    if (pc->s->log) {
        char line[KS_NODE_URL_MAX + 128];
        snprintf(line, sizeof line, "purge uid %" PRId64 " on %s: %s (%ld)", a->uid, a->node,
                 ok ? "deleted" : "failed, kept for the next run", status);
        srvlog(pc->s->log, pc->s->hook_ctx, ok ? SRVLOG_INFO : SRVLOG_WARN, "%s", line);
    }
    return 0;
}

picl_status ks_server_purge(ks_server *s, int64_t *purged, int64_t *failed)
{
    purge_ctx pc = {.s = s};
    picl_status rc = s && s->secret ? PICL_OK : PICL_ERROR_INVALID_ARGUMENT;
    if (rc == PICL_OK)
        rc = ks_db_purgeable(s->db, ks_now(s) - s->purge_grace, purge_cb, &pc);
    if (purged)
        *purged = pc.purged;
    if (failed)
        *failed = pc.failed;
    return rc;
}

static void *purger(void *arg)
{
    ks_server *s = arg;
    pthread_mutex_lock(&s->purge_mu);
    while (!s->purge_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += s->purge_every;
        while (!s->purge_stop && pthread_cond_timedwait(&s->purge_cv, &s->purge_mu, &until) != ETIMEDOUT)
            ;
        if (s->purge_stop)
            break;
        pthread_mutex_unlock(&s->purge_mu);
        int64_t count = 0;
        if (ks_db_nodes(s->db, NULL, NULL, &count) == PICL_OK && count > 0)
            ks_server_purge(s, NULL, NULL);
        pthread_mutex_lock(&s->purge_mu);
    }
    pthread_mutex_unlock(&s->purge_mu);
    return NULL;
}

picl_status ks_nodes_start_purger(ks_server *s)
{
    /* only a server that can sign for nodes, and not with one fixed node */
    if (s->purger_running || s->purge_every < 0 || !s->secret || s->storage_node)
        return PICL_OK;
    s->purge_stop = 0;
    if (pthread_create(&s->purger, NULL, purger, s) != 0)
        return PICL_ERROR_NO_MEMORY;
    s->purger_running = 1;
    return PICL_OK;
}

void ks_nodes_stop_purger(ks_server *s)
{
    if (!s->purger_running)
        return;
    pthread_mutex_lock(&s->purge_mu);
    s->purge_stop = 1;
    pthread_cond_signal(&s->purge_cv);
    pthread_mutex_unlock(&s->purge_mu);
    pthread_join(s->purger, NULL);
    s->purger_running = 0;
}
