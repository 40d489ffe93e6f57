/* SPDX-License-Identifier: MPL-2.0 */
/* main.c -- picl-storage: the SyncStorage 1.5 storage server program. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/nss.h"
#include "http/http.h"
#include "crypto/util.h"
#include "protocol/hawk.h"
#include "protocol/tokenlib.h"
#include "storage/storage.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: picl-storage --listen HOST:PORT --data DIR --secret-file FILE [--node URL]\n"
               "                    [--quota-kb N] [--max-connections N] [--per-ip-connections N]\n"
               "                    [--request-timeout S] [--restore-days N] [--nonce-cache N]\n"
               "       picl-storage --listen HOST:PORT --database postgresql://... [--db-pool N]\n"
               "                    --secret-file FILE [--node URL] [options as above]\n"
               "       picl-storage --listen HOST:PORT --secret-file FILE [--node URL]\n"
               "                    --mint-token UID [--hawk METHOD URL]\n"
               "       picl-storage --help | --version\n"
               "\n"
               "  --node URL        the node tokens must name (default http://HOST:PORT)\n"
               "  --database URL    a PostgreSQL database instead of DIR/storage.db; several\n"
               "                    picl-storage processes may serve one database\n"
               "  --db-pool N       PostgreSQL connections at most (1 to 256, default 8)\n"
               "  --quota-kb N      per-user quota in KiB (default: none)\n"
               "  --restore-days N  keep the previous version of every overwritten or deleted\n"
               "                    record N days, for picl restore (default 30, 0 = off)\n"
               "  --max-connections N      open connections at most (default 1000, and never\n"
               "                           more than the descriptor limit allows)\n"
               "  --per-ip-connections N   open connections per client address (default 64)\n"
               "  --request-timeout S      seconds a request's headers and body may take to\n"
               "                           arrive, however slowly they trickle (default 60)\n"
               "  --nonce-cache N   Hawk nonces held (1024 to 16777216, default 524288; one\n"
               "                    user may hold 1/32): each is kept 60 s (the clock skew\n"
               "                    allowed), so N sustains N / 60 authenticated requests a\n"
               "                    second (default: 8 738/s), beyond which requests get 503\n"
               "                    + Retry-After; memory: 192 bytes per nonce for N a\n"
               "                    power of two (the default takes 96 MiB), N rounded up\n"
               "                    to the next one otherwise\n"
               "  --mint-token UID  DEVELOPMENT HELPER: print a 1-hour token for UID signed\n"
               "                    with the secret file, as the keyserver would, and exit;\n"
               "                    with --hawk, print instead an Authorization header for\n"
               "                    one request (e.g. curl -H \"$(picl-storage ... --hawk GET URL)\")\n");
}

/* Reads the secret file; trailing newlines/spaces are not part of it. */
static int read_secret(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uint8_t *buf = malloc(PICL_TOKENLIB_MAX_SECRET + 2);
    size_t n = buf ? fread(buf, 1, PICL_TOKENLIB_MAX_SECRET + 1, f) : 0;
    fclose(f);
    if (!buf)
        return -1;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        n--;
    if (n > PICL_TOKENLIB_MAX_SECRET) {
        picl__zfree(buf, PICL_TOKENLIB_MAX_SECRET + 2);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

static int parse_int(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < 0)
        return -1;
    *v = x;
    return 0;
}

/* Splits an http(s) URL with libcurl's URL parser (IPv6 literals included)
 * into host (an IPv6 literal keeps its brackets, as Hawk signs it), port and
 * path?query (*res, malloc()ed).  0, or -1 when it is no such URL. */
static int split_url(const char *url, char *host, size_t hcap, unsigned *port, char **res)
{
    int rc = -1;
    char *scheme = NULL, *h = NULL, *p = NULL, *path = NULL, *q = NULL;
    CURLU *u = curl_url();
    *res = NULL;
    if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") && strcmp(scheme, "https")) ||
        curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK || strlen(h) >= hcap ||
        curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        goto done;
    if (curl_url_get(u, CURLUPART_QUERY, &q, 0) != CURLUE_OK)
        q = NULL;
    size_t n = strlen(path) + (q ? strlen(q) + 1 : 0) + 1;
    if (!(*res = malloc(n)))
        goto done;
    if (q)
        snprintf(*res, n, "%s?%s", path, q);
    else
        snprintf(*res, n, "%s", path);
    memcpy(host, h, strlen(h) + 1);
    *port = (unsigned)strtoul(p, NULL, 10);
    rc = 0;
done:
    curl_free(scheme);
    curl_free(h);
    curl_free(p);
    curl_free(path);
    curl_free(q);
    curl_url_cleanup(u);
    return rc;
}

static int mint(const uint8_t *secret, size_t slen, const char *node, int64_t uid, const char *hawk_method,
                const char *hawk_url)
{
    picl_tokenlib_payload p;
    memset(&p, 0, sizeof p);
    p.uid = uid;
    if (strlen(node) > PICL_TOKENLIB_MAX_NODE) {
        fprintf(stderr, "picl-storage: node URL too long\n");
        return 1;
    }
    memcpy(p.node, node, strlen(node) + 1);
    p.expires = (int64_t)time(NULL) + 3600;
    snprintf(p.fxa_uid, sizeof p.fxa_uid, "dev-%" PRId64, uid);
    snprintf(p.fxa_kid, sizeof p.fxa_kid, "0000000000000-dev");
    snprintf(p.hashed_fxa_uid, sizeof p.hashed_fxa_uid, "dev-%" PRId64, uid);
    snprintf(p.hashed_device_id, sizeof p.hashed_device_id, "dev");
    char *token = NULL, *key = NULL;
    if (picl__tokenlib_mint(&token, &key, secret, slen, &p) != PICL_OK) {
        fprintf(stderr, "picl-storage: cannot mint a token (bad uid or node?)\n");
        return 1;
    }
    int rc = 0;
    if (hawk_method) {
        char host[256];
        unsigned port;
        char *res = NULL, *hdr = NULL;
        if (split_url(hawk_url, host, sizeof host, &port, &res) != 0) {
            fprintf(stderr, "picl-storage: --hawk needs an http:// or https:// URL\n");
            rc = 1;
        } else {
            picl_hawk_request hr = {.method = hawk_method, .resource = res, .host = host, .port = port};
            if (picl__hawk_client_header(&hdr, token, key, strlen(key), &hr, (int64_t)time(NULL), NULL,
                                         NULL) != PICL_OK) {
                fprintf(stderr, "picl-storage: cannot sign the request\n");
                rc = 1;
            } else {
                printf("Authorization: %s\n", hdr);
            }
            free(hdr);
        }
        free(res);
    } else {
        printf("{\"id\": \"%s\", \"key\": \"%s\", \"uid\": %" PRId64 ", \"api_endpoint\": \"%s/1.5/%" PRId64
               "\", \"duration\": 3600}\n",
               token, key, uid, node, uid);
    }
    free(token);
    picl__zfree(key, strlen(key));
    return rc;
}

/* The command line. */
typedef struct args {
    const char *listen, *data, *database, *secret_file, *node;
    const char *hawk_method, *hawk_url;
    int64_t quota, mint_uid, lim[3], restore_days, db_pool, nonce_cache;
} args;

/* The value of a numeric option into a; -1 (said why) when it is not one. */
static int parse_number(int ch, const char *v, args *a)
{
    switch (ch) {
    case 'p':
        if (parse_int(v, &a->db_pool) != 0 || a->db_pool < 1 || a->db_pool > 256) {
            fprintf(stderr, "picl-storage: --db-pool takes a number from 1 to 256, not %s\n", v);
            return -1;
        }
        return 0;
    case 'q':
        if (parse_int(v, &a->quota) != 0) {
            fprintf(stderr, "picl-storage: --quota-kb takes a number of KiB, not %s\n", v);
            return -1;
        }
        return 0;
    case 'N':
        if (parse_int(v, &a->nonce_cache) != 0 || a->nonce_cache < 1024 || a->nonce_cache > (1 << 24)) {
            fprintf(stderr,
                    "picl-storage: --nonce-cache takes a number of nonces from 1024 to 16777216, not %s\n",
                    v);
            return -1;
        }
        return 0;
    case 'R':
        if (parse_int(v, &a->restore_days) != 0) {
            fprintf(stderr, "picl-storage: --restore-days takes a number of days, not %s\n", v);
            return -1;
        }
        return 0;
    case 'm':
        if (parse_int(v, &a->mint_uid) != 0) {
            fprintf(stderr, "picl-storage: --mint-token takes a numeric uid, not %s\n", v);
            return -1;
        }
        return 0;
    default: {
        int64_t *n = &a->lim[ch == 'C' ? 0 : ch == 'P' ? 1 : 2];
        if (parse_int(v, n) != 0 || *n < 1 || *n > 1000000) {
            fprintf(stderr, "picl-storage: --%s takes a number from 1 to 1000000, not %s\n",
                    ch == 'C'   ? "max-connections"
                    : ch == 'P' ? "per-ip-connections"
                                : "request-timeout",
                    v);
            return -1;
        }
        return 0;
    }
    }
}

/* Parses the options into a: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, args *a)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"data", required_argument, NULL, 'd'},
        {"database", required_argument, NULL, 'D'},
        {"db-pool", required_argument, NULL, 'p'},
        {"secret-file", required_argument, NULL, 's'},
        {"node", required_argument, NULL, 'n'},
        {"quota-kb", required_argument, NULL, 'q'},
        {"restore-days", required_argument, NULL, 'R'},
        {"nonce-cache", required_argument, NULL, 'N'},
        {"mint-token", required_argument, NULL, 'm'},
        {"hawk", required_argument, NULL, 'w'}, /* METHOD, then URL as the next word */
        {"max-connections", required_argument, NULL, 'C'},
        {"per-ip-connections", required_argument, NULL, 'P'},
        {"request-timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int ch;
    /* "+": no reordering, so --hawk can take the word after its value */
    while ((ch = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        /* "--data --listen X": an option is never the value of another */
        if (optarg && optarg == argv[optind - 1] && !strncmp(optarg, "--", 2)) {
            fprintf(stderr, "picl-storage: %s needs a value, not the option %s\n", argv[optind - 2], optarg);
            return 2;
        }
        switch (ch) {
        case 'l':
            a->listen = optarg;
            break;
        case 'd':
            a->data = optarg;
            break;
        case 'D':
            a->database = optarg;
            break;
        case 's':
            a->secret_file = optarg;
            break;
        case 'n':
            a->node = optarg;
            break;
        case 'p':
        case 'q':
        case 'R':
        case 'N':
        case 'm':
        case 'C':
        case 'P':
        case 'T':
            if (parse_number(ch, optarg, a) != 0)
                return 2;
            break;
        case 'w':
            if (optind >= argc) {
                fprintf(stderr, "picl-storage: --hawk needs METHOD URL\n");
                return 2;
            }
            a->hawk_method = optarg;
            a->hawk_url = argv[optind++];
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("picl-storage 0.1.0\n");
            return 0;
        case ':':
            fprintf(stderr, "picl-storage: %s needs a value\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        default:
            fprintf(stderr, "picl-storage: unknown option %s\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "picl-storage: unexpected argument %s\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (a->database && strncmp(a->database, "postgresql://", 13) && strncmp(a->database, "postgres://", 11)) {
        fprintf(stderr, "picl-storage: --database takes a postgresql:// URL\n");
        return 2;
    }
    if (!a->listen || !a->secret_file || (a->mint_uid < 0 && !a->data && !a->database) ||
        (a->hawk_method && a->mint_uid < 0)) {
        usage(stderr);
        return 2;
    }
    return -1;
}

/* Serves until SIGINT/SIGTERM; the secret is wiped here. */
static int serve(const args *a, uint8_t *secret, size_t slen)
{
    /* Block the stop signals in every thread; the main thread waits for them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    srv_http_limits hl = {(unsigned)a->lim[0], (unsigned)a->lim[1], (unsigned)a->lim[2]};
    srv_http_set_default_limits(&hl);
    char why[600] = "";
    storage_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.error = why;
    cfg.error_cap = sizeof why;
    cfg.log = srvlog_stderr; /* http/log.h: requests, start-up and errors alike */
    cfg.listen = a->listen;
    cfg.data_dir = a->database ? NULL : a->data;
    cfg.database = a->database;
    cfg.db_pool = (unsigned)a->db_pool;
    cfg.secret = secret;
    cfg.secret_len = slen;
    cfg.node = a->node; /* NULL: http://HOST:PORT of the port bound (PORT 0 = any) */
    cfg.quota_kb = a->quota;
    cfg.restore_days = a->restore_days > 0 ? a->restore_days : -1;
    cfg.nonce_cache_entries = (size_t)a->nonce_cache; /* 0: the default, 2^19 */
    storage_server *s = NULL;
    picl_status st = storage_server_new(&s, &cfg);
    picl__zfree(secret, PICL_TOKENLIB_MAX_SECRET + 2);
    if (st == PICL_OK)
        st = storage_server_start(s);
    if (st != PICL_OK) {
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl-storage: cannot start: %s",
               *why ? why : picl_strerror(st));
        storage_server_free(s);
        return 1;
    }
    srvlog(srvlog_stderr, NULL, SRVLOG_INFO, "picl-storage: serving %s on port %u (data %s)",
           storage_server_node(s), storage_server_port(s), a->database ? "PostgreSQL" : a->data);
    int sig = 0;
    sigwait(&set, &sig);
    storage_server_free(s);
    return 0;
}

int main(int argc, char **argv)
{
    args a;
    memset(&a, 0, sizeof a);
    a.mint_uid = -1;
    a.restore_days = 30;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    uint8_t *secret = NULL;
    size_t slen = 0;
    if (read_secret(a.secret_file, &secret, &slen) != 0) {
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl-storage: cannot read the secret file %s",
               a.secret_file);
        return 1;
    }
    if (slen < 32) {
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl-storage: the secret must be at least 32 bytes");
        picl__zfree(secret, PICL_TOKENLIB_MAX_SECRET + 2);
        return 1;
    }
    if (a.mint_uid < 0)
        return serve(&a, secret, slen);
    char defnode[300];
    const char *node = a.node;
    if (!node) {
        snprintf(defnode, sizeof defnode, "http://%s", a.listen);
        node = defnode;
    }
    if (picl__nss_acquire() != PICL_OK) {
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl-storage: NSS failed");
        rc = 1;
    } else {
        rc = mint(secret, slen, node, a.mint_uid, a.hawk_method, a.hawk_url);
        picl__nss_release();
    }
    picl__zfree(secret, PICL_TOKENLIB_MAX_SECRET + 2);
    return rc;
}
