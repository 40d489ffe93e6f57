/* SPDX-License-Identifier: MPL-2.0 */
/* ks_admin.c -- `picl-keyserver node ...` and `picl-keyserver purge`: the
 * storage-node admin commands (storage.md section 6) on the keyserver's
 * database, without starting the server. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "crypto/util.h"
#include "picl.h" /* picl_strerror */
#include "keyserver/keyserver.h"
#include "keyserver/ks_db.h"
#include "keyserver/ks_internal.h"

static void admin_usage(FILE *f)
{
    fprintf(f, "usage: picl-keyserver node add URL --capacity N   (--data DIR | --database URL)\n"
               "       picl-keyserver node list                   (--data DIR | --database URL)\n"
               "       picl-keyserver node drain URL              (--data DIR | --database URL)\n"
               "       picl-keyserver node secret URL [--secret-file FILE] (--data DIR | --database URL)\n"
               "       picl-keyserver node migrate URL [--secret-file FILE] (--data DIR | --database URL)\n"
               "       picl-keyserver purge [--grace SECONDS] [--secret-file FILE]\n"
               "                                                  (--data DIR | --database URL)\n"
               "  node secret prints the node's secret for picl-storage --secret-file; after a\n"
               "  drain it is rotated (the drained node then answers 401 to older tokens).\n"
               "  node migrate copies a drained node's users' records to their next nodes\n"
               "  (after the drained node was restarted with its new secret).\n"
               "  purge deletes, on their nodes, the data of users moved away more than\n"
               "  --grace seconds ago (default 604800) and of destroyed accounts.\n"
               "exit: 0 ok, 1 failure, 2 usage, 5 the node exists already\n");
}

static void admin_log(void *ctx, const char *line)
{
    srvlog_stderr(ctx, line); /* whole lines of http/log.h */
}

static void print_node(void *ctx, const ks_node *n)
{
    printf("%s\tcapacity %" PRId64 "\tload %" PRId64 "\t%s\n", n->url, n->capacity, n->load,
           n->downed      ? "drained"
           : n->available ? "available"
                          : "unavailable");
}

/* The command line of an admin command. */
typedef struct admin_args {
    const char *data, *database, *secret_file;
    int64_t capacity, grace;
    const char *words[4]; /* node add URL, purge ... */
    int nw;
} admin_args;

/* Reads the options and words into a: -1 to go on, else the exit code. */
static int admin_parse(int argc, char **argv, admin_args *a)
{
    static const struct option opts[] = {
        {"data", required_argument, NULL, 'd'},
        {"database", required_argument, NULL, 'D'},
        {"secret-file", required_argument, NULL, 's'},
        {"capacity", required_argument, NULL, 'c'},
        {"grace", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int ch;
    /* "-": the words (node add URL) come back in order as ch 1 */
    while ((ch = getopt_long(argc, argv, "-:h", opts, NULL)) != -1) {
        if (optarg && ch != 1 && optarg == argv[optind - 1] && !strncmp(optarg, "--", 2)) {
            fprintf(stderr, "picl-keyserver: %s needs a value, not the option %s\n", argv[optind - 2],
                    optarg);
            return 2;
        }
        switch (ch) {
        case 1:
            if (a->nw == 4) {
                fprintf(stderr, "picl-keyserver: unexpected argument %s\n", optarg);
                return 2;
            }
            a->words[a->nw++] = optarg;
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
        case 'c':
        case 'g': {
            char *end;
            errno = 0;
            long long v = strtoll(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 1 || v > 1000000000LL) {
                fprintf(stderr, "picl-keyserver: --%s takes a number from 1 to 1000000000, not %s\n",
                        ch == 'c' ? "capacity" : "grace", optarg);
                return 2;
            }
            if (ch == 'c')
                a->capacity = v;
            else
                a->grace = v;
            break;
        }
        case 'h':
            admin_usage(stdout);
            return 0;
        case ':':
            fprintf(stderr, "picl-keyserver: %s needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "picl-keyserver: unknown option %s\n", argv[optind - 1]);
            admin_usage(stderr);
            return 2;
        }
    }
    return -1;
}

/* The command (add, list, drain, secret, purge) and its node URL from the
 * words, checked with the options: -1 to go on, else the exit code. */
static int admin_check(const admin_args *a, const char **cmd, const char **url)
{
    int purge = a->nw >= 1 && !strcmp(a->words[0], "purge");
    const char *sub = a->nw >= 2 ? a->words[1] : "";
    *url = purge ? NULL : a->nw >= 3 ? a->words[2] : NULL;
    int want_url = !purge && (!strcmp(sub, "add") || !strcmp(sub, "drain") || !strcmp(sub, "secret") ||
                              !strcmp(sub, "migrate"));
    int known = purge || want_url || !strcmp(sub, "list");
    *cmd = purge ? "purge" : sub;
    if (!known || (want_url && !*url) || (!want_url && a->nw > (purge ? 1 : 2)) || (want_url && a->nw > 3)) {
        admin_usage(stderr);
        return 2;
    }
    if (!strcmp(*cmd, "add") && !a->capacity) {
        fprintf(stderr, "picl-keyserver: node add needs --capacity N (users it may hold)\n");
        return 2;
    }
    if (!a->data && !a->database) {
        fprintf(stderr, "picl-keyserver: say where the keyserver's database is: --data DIR or "
                        "--database postgresql://...\n");
        return 2;
    }
    if (a->data && !a->database) {
        struct stat st;
        if (stat(a->data, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "picl-keyserver: %s is not the keyserver's data directory\n", a->data);
            return 1;
        }
    }
    return -1;
}

/* The commands over an open keyserver: each returns the exit code and
 * leaves its status in *rc (the errors they do not explain themselves are
 * said by the caller). */
static int admin_add(ks_server *ks, const char *url, int64_t capacity, picl_status *rc)
{
    *rc = ks_server_node_add(ks, url, capacity);
    if (*rc == PICL_OK)
        printf("added %s (capacity %" PRId64 ")\n", url, capacity);
    else if (*rc == PICL_ERROR_CONFLICT)
        fprintf(stderr, "picl-keyserver: node %s exists already\n", url);
    else if (*rc == PICL_ERROR_INVALID_ARGUMENT)
        fprintf(stderr,
                "picl-keyserver: %s is not a node URL (http:// or https://, no "
                "trailing slash, at most %d characters)\n",
                url, KS_NODE_URL_MAX);
    return *rc == PICL_OK ? 0 : *rc == PICL_ERROR_CONFLICT ? 5 : *rc == PICL_ERROR_INVALID_ARGUMENT ? 2 : 1;
}

static int admin_list(ks_server *ks, picl_status *rc)
{
    int64_t n = 0;
    *rc = ks_db_nodes(ks->db, print_node, NULL, &n);
    if (*rc == PICL_OK && n == 0)
        printf("no nodes (users go to --storage-node when the server has one)\n");
    return *rc == PICL_OK ? 0 : 1;
}

static int admin_drain(ks_server *ks, const char *url, picl_status *rc)
{
    int64_t moved = 0;
    *rc = ks_server_node_drain(ks, url, &moved);
    if (*rc == PICL_OK)
        printf("drained %s: %" PRId64 " users get another node at their next token request;\n"
               "its secret is rotated: give that node the output of `picl-keyserver node "
               "secret %s` (it then answers 401 to tokens made before), and keep it running "
               "until `picl-keyserver purge` has deleted their data there\n",
               url, moved, url);
    else if (*rc == PICL_ERROR_NOT_FOUND)
        fprintf(stderr, "picl-keyserver: no node %s\n", url);
    return *rc == PICL_OK ? 0 : 1;
}

static int admin_secret(ks_server *ks, const char *url, picl_status *rc)
{
    char hex[65];
    *rc = ks_server_node_secret(ks, url, hex);
    if (*rc == PICL_OK)
        printf("%s\n", hex);
    else if (*rc == PICL_ERROR_NOT_FOUND)
        fprintf(stderr, "picl-keyserver: no node %s\n", url);
    picl__wipe(hex, sizeof hex);
    return *rc == PICL_OK ? 0 : 1;
}

static int admin_migrate(ks_server *ks, const char *url, picl_status *rc)
{
    int64_t users = 0, records = 0, failed = 0;
    *rc = ks_server_node_migrate(ks, url, &users, &records, &failed);
    if (*rc == PICL_OK)
        printf("migrated %" PRId64 " users (%" PRId64 " records) from %s, %" PRId64
               " failed (they keep their new node; their devices upload again)\n",
               users, records, url, failed);
    else if (*rc == PICL_ERROR_NOT_FOUND)
        fprintf(stderr, "picl-keyserver: no node %s\n", url);
    else if (*rc == PICL_ERROR_STATE)
        fprintf(stderr, "picl-keyserver: %s is not drained: `node drain` it first\n", url);
    return *rc == PICL_OK && failed == 0 ? 0 : 1;
}

static int admin_purge(ks_server *ks, picl_status *rc)
{
    int64_t purged = 0, failed = 0;
    *rc = ks_server_purge(ks, &purged, &failed);
    if (*rc == PICL_OK)
        printf("purged %" PRId64 " users' data, %" PRId64 " failed (tried again next time)\n", purged,
               failed);
    return *rc == PICL_OK && failed == 0 ? 0 : 1;
}

int ks_admin_main(int argc, char **argv)
{
    admin_args a;
    memset(&a, 0, sizeof a);
    const char *cmd = NULL, *url = NULL;
    int ret = admin_parse(argc, argv, &a);
    if (ret < 0)
        ret = admin_check(&a, &cmd, &url);
    if (ret >= 0)
        return ret;
    /* purge and node secret sign with the keyserver's secret */
    int needs_secret = !strcmp(cmd, "purge") || !strcmp(cmd, "secret") || !strcmp(cmd, "migrate");
    const char *secret_file = a.secret_file;
    char defsecret[4096];
    if (needs_secret && !secret_file) {
        if (!a.data) {
            fprintf(stderr, "picl-keyserver: %s needs --secret-file (the keyserver's)\n", cmd);
            return 2;
        }
        if ((size_t)snprintf(defsecret, sizeof defsecret, "%s/secret", a.data) >= sizeof defsecret)
            return 2;
        secret_file = defsecret;
    }
    uint8_t *secret = NULL;
    size_t secret_len = 0;
    ks_server *ks = NULL;
    picl_status rc = PICL_OK;
    ret = 1;
    if (needs_secret) {
        rc = ks_secret_load_or_create(secret_file, &secret, &secret_len);
        if (rc != PICL_OK) {
            fprintf(stderr, "picl-keyserver: secret file %s: %s\n", secret_file, picl_strerror(rc));
            goto done;
        }
    }
    umask(077);
    ks_config cfg = {
        .data_dir = a.data,
        .database = a.database,
        .db_pool = 1,
        .secret = secret,
        .secret_len = secret_len,
        .purge_grace_s = a.grace,
        .purge_every_s = -1,
        .log = admin_log,
    };
    rc = ks_server_new(&ks, &cfg);
    if (rc != PICL_OK) {
        fprintf(stderr, "picl-keyserver: cannot open the database: %s\n", picl_strerror(rc));
        goto done;
    }
    if (!strcmp(cmd, "add"))
        ret = admin_add(ks, url, a.capacity, &rc);
    else if (!strcmp(cmd, "list"))
        ret = admin_list(ks, &rc);
    else if (!strcmp(cmd, "drain"))
        ret = admin_drain(ks, url, &rc);
    else if (!strcmp(cmd, "secret"))
        ret = admin_secret(ks, url, &rc);
    else if (!strcmp(cmd, "migrate"))
        ret = admin_migrate(ks, url, &rc);
    else
        ret = admin_purge(ks, &rc);
    if (rc != PICL_OK && rc != PICL_ERROR_CONFLICT && rc != PICL_ERROR_NOT_FOUND &&
        rc != PICL_ERROR_INVALID_ARGUMENT && rc != PICL_ERROR_STATE)
        fprintf(stderr, "picl-keyserver: %s: %s\n", cmd, picl_strerror(rc));
done:
    ks_server_free(ks);
    if (secret)
        picl__zfree(secret, secret_len);
    return ret;
}
