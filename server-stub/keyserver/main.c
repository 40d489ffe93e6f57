/* SPDX-License-Identifier: MPL-2.0 */
/* main.c -- the picl-keyserver program: keyserver.md on SQLite, one process. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crypto/util.h"
#include "picl.h" /* picl_strerror */
#include "http/http.h"
#include "keyserver/keyserver.h"
#include "protocol/hostport.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: picl-keyserver --listen 127.0.0.1:PORT --data DIR [--storage-node URL]\n"
               "                      [--secret-file FILE] [--smtp URL]\n"
               "                      [--database postgresql://... [--db-pool N]]\n"
               "         (with --database, --data is optional: it holds the Maildir outbox;\n"
               "          without it mail goes by --smtp, and --secret-file is needed)\n"
               "       picl-keyserver node add|list|drain|secret ... | purge ...  (node --help)\n"
               "                      [--max-connections N] [--per-ip-connections N]\n"
               "                      [--request-timeout S]\n"
               "       picl-keyserver --help | --version\n");
}

/* mkdir -p with mode 0700 for the parts it creates. */
static int mkdirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (!n || n >= sizeof buf)
        return -1;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0700) != 0 && errno != EEXIST)
                return -1;
            buf[i] = c;
        }
    }
    return 0;
}

/* Why the server did not start, with the address or the path: "file
 * input/output error" or "network error" alone sends nobody anywhere. */
static void describe_failure(picl_status rc, const char *listen, const char *data, char *out, size_t cap)
{
    snprintf(out, cap, "%s", picl_strerror(rc));
    if (rc == PICL_ERROR_NETWORK) {
        /* bind a socket of our own to the address to learn the cause */
        picl_hostport hp;
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        if (picl__hostport_parse(listen, strlen(listen), 0, 1, &hp) != PICL_OK)
            return;
        a.sin_port = htons((uint16_t)hp.port);
        int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        if (fd < 0 || inet_pton(AF_INET, hp.name, &a.sin_addr) != 1) {
            if (fd >= 0)
                close(fd);
            return;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
            snprintf(out, cap, "cannot listen on %s: %s", listen, strerror(errno));
        close(fd);
        return;
    }
    if (!data)
        return;
    char db[300];
    if ((size_t)snprintf(db, sizeof db, "%.280s/keyserver.db", data) >= sizeof db)
        return;
    if (access(data, R_OK | W_OK | X_OK) != 0)
        snprintf(out, cap, "data directory %.280s: %s", data, strerror(errno));
    else if (access(db, F_OK) == 0 && access(db, R_OK | W_OK) != 0)
        snprintf(out, cap, "database %s: %s", db, strerror(errno));
    else if (rc == PICL_ERROR_DATABASE || rc == PICL_ERROR_IO)
        snprintf(out, cap, "database %s: %s (not a keyserver database, damaged, or read-only)", db,
                 picl_strerror(rc));
}

/* The command line. */
typedef struct ks_args {
    const char *listen, *data, *node, *secret_file, *smtp;
    const char *database; /* postgresql://...: the database instead of <data>/keyserver.db */
    unsigned db_pool;
    unsigned lim[3]; /* connections, per address, request seconds (0 = default) */
} ks_args;

/* A number from min to max for option --name into *v; 0, else said and -1. */
static int number_arg(const char *name, const char *arg, unsigned long min, unsigned long max, unsigned *v)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-' || n < min || n > max) {
        fprintf(stderr, "picl-keyserver: --%s takes a number from %lu to %lu, not %s\n", name, min, max, arg);
        return -1;
    }
    *v = (unsigned)n;
    return 0;
}

/* Reads the options into a: -1 to go on, else the exit code (0 after
 * --help or --version, 2 for a usage error, said). */
static int parse_args(int argc, char **argv, ks_args *a)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"data", required_argument, NULL, 'd'},
        {"storage-node", required_argument, NULL, 'n'},
        {"secret-file", required_argument, NULL, 's'},
        {"smtp", required_argument, NULL, 'm'},
        {"database", required_argument, NULL, 'D'},
        {"db-pool", required_argument, NULL, 'p'},
        {"max-connections", required_argument, NULL, 'C'},
        {"per-ip-connections", required_argument, NULL, 'P'},
        {"request-timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        /* "--data --listen X": an option is never the value of another */
        if (optarg && optarg == argv[optind - 1] && !strncmp(optarg, "--", 2)) {
            fprintf(stderr, "picl-keyserver: %s needs a value, not the option %s\n", argv[optind - 2],
                    optarg);
            return 2;
        }
        switch (ch) {
        case 'l':
            a->listen = optarg;
            break;
        case 'd':
            a->data = optarg;
            break;
        case 'n':
            a->node = optarg;
            break;
        case 's':
            a->secret_file = optarg;
            break;
        case 'm':
            a->smtp = optarg;
            break;
        case 'D':
            a->database = optarg;
            break;
        case 'p':
            if (number_arg("db-pool", optarg, 1, 256, &a->db_pool) != 0)
                return 2;
            break;
        case 'C':
        case 'P':
        case 'T':
            if (number_arg(ch == 'C'   ? "max-connections"
                           : ch == 'P' ? "per-ip-connections"
                                       : "request-timeout",
                           optarg, 1, 1000000,
                           &a->lim[ch == 'C'   ? 0
                                   : ch == 'P' ? 1
                                               : 2]) != 0)
                return 2;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("picl-keyserver 0.1.0\n");
            return 0;
        case ':':
            fprintf(stderr, "picl-keyserver: %s needs a value\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        default:
            fprintf(stderr, "picl-keyserver: unknown option %s\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "picl-keyserver: unexpected argument %s\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return -1;
}

/* What the options must hold together: -1 to go on, else the exit code. */
static int check_args(const ks_args *a)
{
    if (!a->listen || (!a->data && !a->database)) {
        usage(stderr);
        return 2;
    }
    if (a->database && strncmp(a->database, "postgresql://", 13) && strncmp(a->database, "postgres://", 11)) {
        fprintf(stderr, "picl-keyserver: --database takes a postgresql:// URL\n");
        return 2;
    }
    if (!a->data && (!a->smtp || !a->secret_file)) {
        fprintf(stderr, "picl-keyserver: without --data, give --smtp (no Maildir) and "
                        "--secret-file\n");
        return 2;
    }
    if (a->data && mkdirs(a->data) != 0) {
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl-keyserver: cannot create %s: %s", a->data,
               strerror(errno));
        return 1;
    }
    return -1;
}

/* Starts the keyserver and serves until SIGTERM or SIGINT; the exit code.
 * Wipes and frees secret. */
static int serve(const ks_args *a, uint8_t *secret, size_t secret_len)
{
    /* Signals are taken synchronously by this thread; the server's threads
     * inherit the blocked mask. */
    umask(077); /* the database holds kA, wrapKb and verifiers */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    srv_http_limits hl = {a->lim[0], a->lim[1], a->lim[2]};
    srv_http_set_default_limits(&hl);
    ks_config cfg = {
        .listen = a->listen,
        .data_dir = a->data,
        .database = a->database,
        .db_pool = a->db_pool,
        .secret = secret,
        .secret_len = secret_len,
        .storage_node = a->node,
        .smtp_url = a->smtp,
        .log = srvlog_stderr, /* http/log.h: requests, start-up and errors alike */
    };
    ks_server *ks = NULL;
    picl_status rc = ks_server_new(&ks, &cfg);
    picl__zfree(secret, secret_len);
    if (rc == PICL_OK)
        rc = ks_server_start(ks);
    if (rc != PICL_OK) {
        char why[600];
        describe_failure(rc, a->listen, a->database ? NULL : a->data, why, sizeof why);
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl-keyserver: cannot start: %s%s", why,
               rc == PICL_ERROR_DATABASE && a->database ? " (PostgreSQL: see the line above)" : "");
        ks_server_free(ks);
        return 1;
    }
    /* never the URL: it may hold a password */
    srvlog(srvlog_stderr, NULL, SRVLOG_INFO, "picl-keyserver: listening on port %u, data in %s",
           ks_server_port(ks), a->database ? "PostgreSQL" : a->data);
    int sig = 0;
    sigwait(&set, &sig);
    srvlog(srvlog_stderr, NULL, SRVLOG_INFO, "picl-keyserver: signal %d, stopping", sig);
    ks_server_free(ks);
    return 0;
}

int main(int argc, char **argv)
{
    /* the storage-node admin commands (storage.md 6) */
    if (argc > 1 && (!strcmp(argv[1], "node") || !strcmp(argv[1], "purge")))
        return ks_admin_main(argc, argv);
    ks_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc < 0)
        rc = check_args(&a);
    if (rc >= 0)
        return rc;
    /* the shared secret: --secret-file, else <data>/secret (made once) */
    char defsecret[4096];
    if (!a.secret_file) {
        if ((size_t)snprintf(defsecret, sizeof defsecret, "%s/secret", a.data) >= sizeof defsecret) {
            srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl-keyserver: data path too long");
            return 2;
        }
        a.secret_file = defsecret;
    }
    uint8_t *secret = NULL;
    size_t secret_len = 0;
    picl_status st = ks_secret_load_or_create(a.secret_file, &secret, &secret_len);
    if (st != PICL_OK) {
        srvlog(srvlog_stderr, NULL, SRVLOG_ERROR, "picl-keyserver: secret file %s: %s", a.secret_file,
               picl_strerror(st));
        return 1;
    }
    return serve(&a, secret, secret_len);
}
