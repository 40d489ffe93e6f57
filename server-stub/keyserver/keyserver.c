/* SPDX-License-Identifier: MPL-2.0 */
/* keyserver.c -- the keyserver's lifecycle: the server object from its
 * configuration, mounting the routes, starting, stopping, the shared secret
 * file.  What the routes share is in ks_internal.c (requests) and ks_reply.c
 * (answers), both declared in ks_internal.h. */
#include "keyserver/ks_internal.h"
#include "picl.h" /* picl_strerror */

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

/* The configuration into s (strings copied, defaults for what is 0); rc
 * becomes NO_MEMORY when a copy fails. */
static picl_status take_config(ks_server *s, const ks_config *cfg)
{
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
    s->hooks.error = ks_hook_error;
    s->hooks.finish = ks_hook_finish;
    s->hooks.ctx = s;
    /* the 16 KiB cap travels with the routes: refused from the headers (413)
     * also on a shared server with a bigger default (picl server) */
    s->hooks.max_body = KS_MAX_BODY;
    if (rc != PICL_OK || !cfg->secret)
        return rc;
    s->secret = malloc(cfg->secret_len);
    if (!s->secret)
        return PICL_ERROR_NO_MEMORY;
    memcpy(s->secret, cfg->secret, cfg->secret_len);
    s->secret_len = cfg->secret_len;
    return PICL_OK;
}

/* NSS, the key that hashes uids for storage tokens (with a shared secret)
 * and the Hawk nonce cache. */
static picl_status crypto_setup(ks_server *s, const ks_config *cfg)
{
    picl_status rc = picl__nss_acquire();
    if (rc != PICL_OK)
        return rc;
    s->nss = 1;
    if (s->secret) {
        static const char info[] = "picl/keyserver/hashed-uid";
        rc = picl__hkdf_sha256(s->hashed_uid_key, 32, s->secret, s->secret_len, NULL, 0, info,
                               sizeof info - 1);
        if (rc != PICL_OK)
            return rc;
    }
    /* live nonces expire after 2 x skew: room for ~2000 Hawk requests/s, of
     * which one account may hold 1/64 (it cannot fill it for everyone) */
    size_t entries = cfg->nonce_cache_entries ? cfg->nonce_cache_entries : 1u << 18;
    rc = picl__hawk_nonce_cache_new(&s->nonces, entries);
    if (rc == PICL_OK)
        rc = picl__hawk_nonce_cache_set_share(s->nonces, entries / 64 ? entries / 64 : 1);
    return rc;
}

/* <data>/mail, the Maildir codes are delivered to (none without a data
 * directory: PostgreSQL then mails by SMTP only). */
static picl_status open_maildir(ks_server *s)
{
    char path[4096];
    if (!s->data_dir)
        return PICL_OK;
    if ((size_t)snprintf(path, sizeof path, "%s/mail", s->data_dir) >= sizeof path)
        return PICL_ERROR_INVALID_ARGUMENT;
    s->maildir = strdup(path);
    if (!s->maildir)
        return PICL_ERROR_NO_MEMORY;
    return ks_mail_init(s->maildir);
}

/* The database: the PostgreSQL URL (its failure logged with the reason), else
 * <data>/keyserver.db. */
static picl_status open_database(ks_server *s)
{
    picl_status rc;
    if (s->database) {
        const char *why = NULL;
        rc = ks_db_open(&s->db, s->database, s->db_pool, &why);
        if (rc != PICL_OK && s->log) {
            char line[256];
            snprintf(line, sizeof line, "database: %s", why ? why : picl_strerror(rc));
            srvlog(s->log, s->hook_ctx, SRVLOG_ERROR, "%s", line);
        }
        return rc;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/keyserver.db", s->data_dir);
    /* kA, wrapKb and verifiers: owner only, whatever the umask or the
     * directory's mode (SQLite gives -wal and -shm the database's mode) */
    rc = ks_private_file(path);
    if (rc == PICL_OK)
        rc = ks_db_open(&s->db, path, 0, NULL);
    return rc;
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
    picl_status rc = take_config(s, cfg);
    if (rc == PICL_OK) {
        ks_json_wipe_on_free();
        rc = crypto_setup(s, cfg);
    }
    if (rc == PICL_OK)
        rc = open_maildir(s);
    if (rc == PICL_OK)
        rc = open_database(s);
    if (rc != PICL_OK) {
        ks_server_free(s);
        return rc;
    }
    *out = s;
    return PICL_OK;
}

picl_status ks_server_mount(ks_server *s, srv_http_server *http, int skip_heartbeat)
{
    /* verification mails a crash left in the outbox, before any answer */
    ks_outbox_deliver(s, 1, 1000, NULL);
    return ks_routes_mount(s, http, skip_heartbeat);
}

picl_status ks_server_start(ks_server *s)
{
    if (!s || !s->listen || s->http)
        return PICL_ERROR_INVALID_ARGUMENT;
    srv_http_config hc = {
        .listen = s->listen,
        .max_body = KS_MAX_BODY,
        .require_content_length = 1,
        .threads = s->threads,
        .timeout_s = s->timeout_s,
        .hooks = &s->hooks,
        .log = s->log,
        .log_ctx = s->hook_ctx,
    };
    picl_status rc = srv_http_server_new(&s->http, &hc);
    if (rc == PICL_OK) /* verification mails a crash left in the outbox, before any answer */
        ks_outbox_deliver(s, 1, 1000, NULL);
    if (rc == PICL_OK)
        rc = ks_routes_mount(s, s->http, 0);
    if (rc == PICL_OK)
        rc = srv_http_server_start(s->http);
    if (rc == PICL_OK)
        rc = ks_nodes_start_purger(s);
    if (rc != PICL_OK) {
        srv_http_server_free(s->http);
        s->http = NULL;
    }
    return rc;
}

unsigned ks_server_port(const ks_server *s) { return s && s->http ? srv_http_server_port(s->http) : 0; }

void ks_server_free(ks_server *s)
{
    if (!s)
        return;
    ks_nodes_stop_purger(s);
    srv_http_server_free(s->http);
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
