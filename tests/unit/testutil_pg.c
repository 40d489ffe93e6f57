/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_pg.c -- the tests' throw-away PostgreSQL cluster (see testutil_pg.h). */
#include "testutil_pg.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char cluster_dir[256]; /* set only in the process that owns the cluster */
static pid_t owner;
static char admin_url[128];
static char start_opts[512]; /* pg_ctl -o of the cluster (for a restart) */
static unsigned db_seq;

int tupg_enabled(void)
{
    const char *b = getenv("PICL_TEST_BACKEND");
    return b && !strcmp(b, "postgresql");
}

const char *tupg_admin_url(void)
{
    if (!tupg_enabled())
        return NULL;
    if (!admin_url[0]) {
        const char *u = getenv("PICL_TEST_PG_URL");
        if (u)
            snprintf(admin_url, sizeof admin_url, "%s", u);
    }
    return admin_url[0] ? admin_url : NULL;
}

/* Runs argv (as the user nobody when we are root), output to log (append);
 * returns the exit status, -1 when it could not run. */
static int run(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (geteuid() == 0) {
            struct passwd *pw = getpwnam("nobody");
            if (!pw || setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
                _exit(126);
        }
        /* opened as that user: pg_ctl -l appends to the same file */
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

static void cluster_stop(void)
{
    if (!cluster_dir[0] || getpid() != owner)
        return;
    const char *bin = getenv("PICL_PG_BIN") ? getenv("PICL_PG_BIN") : "/usr/lib/postgresql/15/bin";
    char pg_ctl[512], data[320], log[320];
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", bin);
    snprintf(data, sizeof data, "%s/data", cluster_dir);
    snprintf(log, sizeof log, "%s/stop.log", cluster_dir);
    char *const argv[] = {pg_ctl, "-D", data, "-m", "immediate", "-w", "stop", NULL};
    run(argv, log);
    nftw(cluster_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    cluster_dir[0] = 0;
}

static void on_signal(int sig)
{
    cluster_stop();
    signal(sig, SIG_DFL);
    raise(sig);
}

static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    unsigned port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static void show_log(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[512];
    fprintf(stderr, "testutil_pg: --- %s ---\n", log);
    while (f && fgets(line, sizeof line, f))
        fputs(line, stderr);
    if (f)
        fclose(f);
}

/* Starts the cluster (before main, in the process Check forks from). */
__attribute__((constructor)) static void cluster_start(void)
{
    if (!tupg_enabled() || getenv("PICL_TEST_PG_URL"))
        return;
    const char *bin = getenv("PICL_PG_BIN") ? getenv("PICL_PG_BIN") : "/usr/lib/postgresql/15/bin";
    const char *tmp = getenv("TMPDIR");
    snprintf(cluster_dir, sizeof cluster_dir, "%s/picl-pg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(cluster_dir)) {
        fprintf(stderr, "testutil_pg: cannot make a temporary directory: %s\n", strerror(errno));
        exit(1);
    }
    owner = getpid();
    atexit(cluster_stop);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("nobody");
        if (!pw || chown(cluster_dir, pw->pw_uid, pw->pw_gid) != 0) {
            fprintf(stderr, "testutil_pg: cannot give %s to the user nobody\n", cluster_dir);
            exit(1);
        }
    }
    char initdb[512], pg_ctl[512], data[320], log[320], opts[512];
    snprintf(initdb, sizeof initdb, "%s/initdb", bin);
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", bin);
    snprintf(data, sizeof data, "%s/data", cluster_dir);
    snprintf(log, sizeof log, "%s/setup.log", cluster_dir);
    if (access(initdb, X_OK) != 0) {
        fprintf(stderr,
                "testutil_pg: %s not found: install postgresql (./bootstrap) or set "
                "PICL_PG_BIN\n",
                initdb);
        exit(1);
    }
    char *const init_argv[] = {initdb,  "-D", data,   "-U",         "picl",      "-A",
                               "trust", "-E", "UTF8", "--locale=C", "--no-sync", NULL};
    if (run(init_argv, log) != 0) {
        fprintf(stderr, "testutil_pg: initdb failed\n");
        show_log(log);
        exit(1);
    }
    unsigned port = 0;
    int started = 0;
    for (int attempt = 0; attempt < 3 && !started; attempt++) {
        port = free_port();
        snprintf(opts, sizeof opts,
                 "-F -p %u -h 127.0.0.1 -k %s -c max_connections=300 -c shared_buffers=32MB"
                 " -c synchronous_commit=off -c full_page_writes=off",
                 port, cluster_dir);
        snprintf(start_opts, sizeof start_opts, "%s", opts);
        char *const start_argv[] = {pg_ctl, "-D", data, "-l", log,     "-o",
                                    opts,   "-t", "30", "-w", "start", NULL};
        started = run(start_argv, log) == 0;
    }
    if (!started) {
        fprintf(stderr, "testutil_pg: pg_ctl start failed\n");
        show_log(log);
        exit(1);
    }
    snprintf(admin_url, sizeof admin_url, "postgresql://picl@127.0.0.1:%u/postgres", port);
    setenv("PICL_TEST_PG_URL", admin_url, 1);
    if (tupg_exec(admin_url, "CREATE DATABASE picl") != 0) {
        fprintf(stderr, "testutil_pg: cannot create the test database\n");
        exit(1);
    }
}

static void quiet(void *arg, const char *message) {}

int tupg_exec(const char *url, const char *sql)
{
    PGconn *c = PQconnectdb(url);
    int rc = -1;
    PQsetNoticeProcessor(c, quiet, NULL);
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, sql);
        rc = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -1;
        if (rc != 0)
            fprintf(stderr, "testutil_pg: %s: %s", sql, PQerrorMessage(c));
        PQclear(r);
    }
    PQfinish(c);
    return rc;
}

int tupg_query1(const char *url, const char *sql, char *out, size_t cap)
{
    PGconn *c = PQconnectdb(url);
    int rc = -1;
    out[0] = 0;
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, sql);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) >= 1) {
            snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
            rc = 0;
        }
        PQclear(r);
    }
    PQfinish(c);
    return rc;
}

void tupg_create_db(char *url, size_t url_cap, char *name, size_t name_cap)
{
    const char *admin = tupg_admin_url();
    ck_assert_msg(admin != NULL, "PICL_TEST_BACKEND=postgresql without a cluster");
    /* a schema of its own in the database "picl" (a CREATE DATABASE costs
     * half a second, a schema nothing); the URL puts it first in the
     * search_path, so the server's tables go there */
    snprintf(name, name_cap, "t_%ld_%u", (long)getpid(), ++db_seq);
    const char *slash = strrchr(admin, '/');
    ck_assert_ptr_nonnull(slash);
    snprintf(url, url_cap, "%.*s/picl?options=-csearch_path%%3D%s", (int)(slash - admin), admin, name);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE SCHEMA %s", name);
    ck_assert_int_eq(tupg_exec(url, sql), 0);
}

void tupg_drop_db(const char *name)
{
    const char *admin = tupg_admin_url();
    if (!admin || !name || !*name)
        return;
    char url[256], sql[160];
    const char *slash = strrchr(admin, '/');
    snprintf(url, sizeof url, "%.*s/picl", (int)(slash - admin), admin);
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", name);
    tupg_exec(url, sql);
}

void *tupg_hold(const char *url, const char *sql)
{
    PGconn *c = PQconnectdb(url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "testutil_pg: %s", PQerrorMessage(c));
    PQsetNoticeProcessor(c, quiet, NULL);
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    ck_assert_msg(ok, "testutil_pg: %s: %s", sql, PQerrorMessage(c));
    return c;
}

void tupg_release(void *held)
{
    if (!held)
        return;
    PQclear(PQexec(held, "ROLLBACK"));
    PQfinish(held);
}

/* pg_ctl stop|start on the cluster this process tree started. */
static int cluster_ctl(const char *what)
{
    if (!cluster_dir[0])
        return -1;
    const char *bin = getenv("PICL_PG_BIN") ? getenv("PICL_PG_BIN") : "/usr/lib/postgresql/15/bin";
    char pg_ctl[512], data[320], log[320];
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", bin);
    snprintf(data, sizeof data, "%s/data", cluster_dir);
    snprintf(log, sizeof log, "%s/setup.log", cluster_dir);
    if (!strcmp(what, "stop")) {
        char *const argv[] = {pg_ctl, "-D", data, "-m", "fast", "-w", "stop", NULL};
        return run(argv, log);
    }
    char *const argv[] = {pg_ctl, "-D", data, "-l", log, "-o", start_opts, "-t", "30", "-w", "start", NULL};
    return run(argv, log);
}

int tupg_stop_cluster(void) { return cluster_ctl("stop"); }

int tupg_start_cluster(void) { return cluster_ctl("start"); }
