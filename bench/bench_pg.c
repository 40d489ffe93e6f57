/* SPDX-License-Identifier: MPL-2.0 */
/* bench_pg.c -- picl-bench's throw-away PostgreSQL cluster (see bench_pg.h). */
#include "bench_pg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char cluster[128];
static unsigned cluster_port;

static const char *pg_bin(void)
{
    const char *b = getenv("PICL_PG_BIN");
    return b && *b ? b : "/usr/lib/postgresql/15/bin";
}

/* Runs argv (as nobody when root), output appended to log; its exit status. */
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

static int exec_sql(const char *url, const char *sql)
{
    PGconn *c = PQconnectdb(url);
    int rc = -1;
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, sql);
        rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
        if (rc)
            fprintf(stderr, "bench: %s: %s", sql, PQerrorMessage(c));
        PQclear(r);
    } else {
        fprintf(stderr, "bench: %s", PQerrorMessage(c));
    }
    PQfinish(c);
    return rc;
}

int bench_pg_database(const char *name, char *url, size_t cap)
{
    char admin[128], sql[128];
    snprintf(admin, sizeof admin, "postgresql://picl@127.0.0.1:%u/postgres", cluster_port);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    if (!cluster_port || exec_sql(admin, sql) != 0)
        return -1;
    snprintf(url, cap, "postgresql://picl@127.0.0.1:%u/%s", cluster_port, name);
    return 0;
}

int bench_pg_start(char *url, size_t cap)
{
    char initdb[256], pg_ctl[256], data[192], log[192], opts[384];
    snprintf(cluster, sizeof cluster, "/tmp/picl-bench-pg-XXXXXX");
    if (!mkdtemp(cluster)) {
        cluster[0] = 0;
        return -1;
    }
    chmod(cluster, 0755);
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("nobody");
        if (!pw || chown(cluster, pw->pw_uid, pw->pw_gid) != 0) {
            fprintf(stderr, "bench: cannot give %s to the user nobody\n", cluster);
            return -1;
        }
    }
    snprintf(initdb, sizeof initdb, "%s/initdb", pg_bin());
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", pg_bin());
    snprintf(data, sizeof data, "%s/data", cluster);
    snprintf(log, sizeof log, "%s/pg.log", cluster);
    if (access(initdb, X_OK) != 0) {
        fprintf(stderr, "bench: %s not found: install postgresql or set PICL_PG_BIN\n", initdb);
        return -1;
    }
    char *const init_argv[] = {initdb,  "-D", data,   "-U",         "picl", "-A",
                               "trust", "-E", "UTF8", "--locale=C", NULL};
    if (run(init_argv, log) != 0) {
        fprintf(stderr, "bench: initdb failed (see %s)\n", log);
        return -1;
    }
    cluster_port = free_port();
    snprintf(opts, sizeof opts,
             "-p %u -h 127.0.0.1 -k %s -c max_connections=300"
             " -c shared_buffers=128MB",
             cluster_port, cluster);
    char *const start_argv[] = {pg_ctl, "-D", data, "-l", log, "-o", opts, "-t", "30", "-w", "start", NULL};
    if (run(start_argv, log) != 0) {
        fprintf(stderr, "bench: pg_ctl start failed (see %s)\n", log);
        cluster_port = 0;
        return -1;
    }
    return bench_pg_database("picl", url, cap);
}

void bench_pg_stop(void)
{
    if (!cluster[0])
        return;
    char pg_ctl[256], data[192], log[192], cmd[192];
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", pg_bin());
    snprintf(data, sizeof data, "%s/data", cluster);
    snprintf(log, sizeof log, "%s/pg.log", cluster);
    if (cluster_port) {
        char *const argv[] = {pg_ctl, "-D", data, "-m", "fast", "-w", "stop", NULL};
        run(argv, log);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cluster);
    if (system(cmd) != 0)
        fprintf(stderr, "bench: could not remove %s\n", cluster);
    cluster[0] = 0;
    cluster_port = 0;
}
