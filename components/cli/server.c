/* SPDX-License-Identifier: MPL-2.0 */
/* server.c -- `picl server`: the keyserver and the storage server in one
 * process on one port (/v1/... and /1.5/...), SQLite in one data directory;
 * --restore-days N sets the storage server's undo window (picl_restore_days). */
#include "cli.h"
#include "http/http.h"
#include "keyserver/keyserver.h"
#include "protocol/hostport.h"
#include "storage/storage.h"
#include "crypto/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Both services need the node URL before the port is bound, so PORT 0 is
 * resolved here to a free port first. */
static int resolve_port(const char *listen, char *host, size_t hcap, unsigned *port)
{
    picl_hostport hp;
    if (picl__hostport_parse(listen, strlen(listen), 0, 1, &hp) != PICL_OK || strlen(hp.host) >= hcap)
        return -1;
    memcpy(host, hp.host, strlen(hp.host) + 1); /* an IPv6 literal keeps its brackets */
    if (hp.port > 0) {
        *port = hp.port;
        return 0;
    }
    struct sockaddr_in a;
    struct sockaddr_in6 a6;
    memset(&a, 0, sizeof a);
    memset(&a6, 0, sizeof a6);
    a.sin_family = AF_INET;
    a6.sin6_family = AF_INET6;
    struct sockaddr *sa = hp.ipv6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a;
    socklen_t len = hp.ipv6 ? sizeof a6 : sizeof a;
    int fd = socket(hp.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    int ok = hp.ipv6 ? inet_pton(AF_INET6, hp.name, &a6.sin6_addr) : inet_pton(AF_INET, hp.name, &a.sin_addr);
    if (fd < 0 || ok != 1 || bind(fd, sa, len) != 0 || getsockname(fd, sa, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    *port = ntohs(hp.ipv6 ? a6.sin6_port : a.sin_port);
    return 0;
}

/* --restore-days N: whole days, 0 (off) to 3650.  -1 when it is not that. */
static long parse_days(const char *v)
{
    if (!v)
        return 30; /* the storage server's default (picl_restore_days) */
    size_t n = strlen(v);
    if (!n || n > 4 || strspn(v, "0123456789") != n)
        return -1;
    long d = 0;
    for (size_t i = 0; i < n; i++)
        d = d * 10 + (v[i] - '0');
    return d <= 3650 ? d : -1;
}

/* --nonce-cache N: 1024 to 2^24 nonces; 0 when not given (the storage
 * server's default), -1 when not such a number. */
static long parse_nonce_cache(const char *v)
{
    if (!v)
        return 0;
    size_t n = strlen(v);
    long nonces = n && n <= 8 && strspn(v, "0123456789") == n ? strtol(v, NULL, 10) : -1;
    return nonces < 1024 || nonces > (1L << 24) ? -1 : nonces;
}

/* SIGINT and SIGTERM are waited for (sigwait) by the main thread, blocked
 * in every thread the servers start; SIGPIPE is ignored. */
static void block_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int cli_server(const cli_opts *o)
{
    const char *data = o->data ? o->data : "picl-data";
    const char *listen = o->listen ? o->listen : "127.0.0.1:8000";
    char host[128], addr[160], node[200], secret_path[4096];
    unsigned port;
    if (resolve_port(listen, host, sizeof host, &port) != 0) {
        fprintf(stderr,
                "picl server: --listen wants HOST:PORT with an IP address (IPv6 in brackets), got %s\n",
                listen);
        return CLI_USAGE;
    }
    long nonces = parse_nonce_cache(o->nonce_cache);
    if (nonces < 0) {
        fprintf(stderr, "picl server: --nonce-cache takes a number of nonces from 1024 to 16777216, not %s\n",
                o->nonce_cache);
        return CLI_USAGE;
    }
    long days = parse_days(o->restore_days);
    if (days < 0) {
        fprintf(stderr, "picl server: --restore-days takes a number of days from 0 (off) to 3650, not %s\n",
                o->restore_days);
        return CLI_USAGE;
    }
    if (mkdir(data, 0700) != 0 && errno != EEXIST) {
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl server: cannot create %s: %s", data, strerror(errno));
        return CLI_LOCAL;
    }
    snprintf(addr, sizeof addr, "%s:%u", host, port);
    snprintf(node, sizeof node, "http://%s:%u", host, port);
    snprintf(secret_path, sizeof secret_path, "%s/secret", data);
    uint8_t *secret = NULL;
    size_t slen = 0;
    picl_status st = ks_secret_load_or_create(secret_path, &secret, &slen);
    if (st != PICL_OK) {
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl server: cannot read or create %s: %s", secret_path,
               picl_strerror(st));
        return CLI_LOCAL;
    }
    sigset_t set;
    block_stop_signals(&set);
    ks_config kc;
    memset(&kc, 0, sizeof kc);
    kc.data_dir = data;
    kc.secret = secret;
    kc.secret_len = slen;
    kc.storage_node = node;
    kc.log = srvlog_stderr; /* http/log.h, the log of both servers */
    storage_config sc;
    memset(&sc, 0, sizeof sc);
    sc.data_dir = data;
    sc.secret = secret;
    sc.secret_len = slen;
    sc.node = node;
    sc.log = srvlog_stderr;
    sc.restore_days = days > 0 ? days : -1; /* storage_config: < 0 = off */
    sc.nonce_cache_entries = (size_t)nonces;
    srv_http_config hc;
    memset(&hc, 0, sizeof hc);
    hc.listen = addr;
    hc.max_body = 2u * 1024u * 1024u + 4096u;
    hc.require_content_length = 1; /* keyserver.md 7: 411 without it */
    hc.log = srvlog_stderr;        /* one line per request, both services */
    ks_server *ks = NULL;
    storage_server *ss = NULL;
    srv_http_server *http = NULL;
    if ((st = ks_server_new(&ks, &kc)) == PICL_OK && (st = storage_server_new(&ss, &sc)) == PICL_OK &&
        (st = srv_http_server_new(&http, &hc)) == PICL_OK && (st = ks_server_mount(ks, http, 0)) == PICL_OK &&
        (st = storage_server_mount(ss, http, 1)) == PICL_OK)
        st = srv_http_server_start(http);
    picl__zfree(secret, slen);
    int rc = CLI_OK;
    if (st != PICL_OK) {
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl server: cannot start on %s: %s", addr,
               picl_strerror(st));
        rc = st == PICL_ERROR_NETWORK ? CLI_NETWORK : CLI_FAILURE;
    } else {
        /* one line a script can wait for */
        printf("picl server: listening on %s (clients: --server %s; keyserver API under /v1, storage under "
               "/1.5; data in %s)\n",
               node, node, data);
        if (days > 0)
            srvlog(srvlog_stderr, NULL, SRVLOG_INFO,
                   "picl server: earlier versions of synced records are kept %ld days (picl restore)", days);
        else
            srvlog(srvlog_stderr, NULL, SRVLOG_INFO,
                   "picl server: earlier versions of synced records are not kept (--restore-days 0): "
                   "picl restore is off");
        fflush(stdout);
        int sig = 0;
        sigwait(&set, &sig);
        srvlog(srvlog_stderr, NULL, SRVLOG_INFO, "picl server: stopping");
    }
    srv_http_server_free(http);
    storage_server_free(ss);
    ks_server_free(ks);
    return rc;
}
