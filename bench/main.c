/* SPDX-License-Identifier: MPL-2.0 */
/* main.c -- picl-bench: the figures of the README's performance table, each
 * measured as a ratio against a reference run in the same process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* Benchmarks live in their own files; a missing one is reported, not fatal. */
__attribute__((weak)) int bench_stretch(int argc, char **argv);
__attribute__((weak)) int bench_srp(int argc, char **argv);
__attribute__((weak)) int bench_keyserver(int argc, char **argv);
__attribute__((weak)) int bench_storage(int argc, char **argv);
__attribute__((weak)) int bench_sync(int argc, char **argv);
__attribute__((weak)) int bench_profile(int argc, char **argv);
__attribute__((weak)) int bench_loadtest(int argc, char **argv);

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What bench_target() printed, for the summary at the end of a run. */
static struct {
    char name[48];
    int met;
} targets[64];
static size_t n_targets;

int bench_target(const char *name, double value, const char *unit, const char *op, double target,
                 const char *reference)
{
    int met = !strcmp(op, "<=") ? value <= target : !strcmp(op, ">=") ? value >= target : value < target;
    printf("  target %-34s %9.3f %-4s %s %7.3f %-4s%s%s%s: %s\n", name, value, unit, op, target, unit,
           reference ? " (" : "", reference ? reference : "", reference ? ")" : "", met ? "MET" : "NOT MET");
    fflush(stdout);
    if (n_targets < sizeof targets / sizeof targets[0]) {
        snprintf(targets[n_targets].name, sizeof targets[n_targets].name, "%s", name);
        targets[n_targets++].met = met;
    }
    return met;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct bench {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
};

/* `all` runs each benchmark in a child process of its own, so that no
 * figure depends on what ran before it in the same process (peak RSS above
 * all: the profile benchmark's client figure is this process's VmHWM, which
 * would otherwise start from the heap the sync benchmark left).  The child
 * hands its targets back over a pipe, a line each: "1 name" or "0 name". */
static int run_in_child(const struct bench *b, int argc, char **argv)
{
    int fds[2];
    fflush(stdout);
    fflush(stderr);
    if (pipe(fds) != 0)
        return b->fn(argc, argv);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return b->fn(argc, argv);
    }
    if (pid == 0) {
        close(fds[0]);
        size_t first = n_targets; /* the parent's, copied by fork */
        int rc = b->fn(argc, argv) != 0;
        fflush(stdout);
        FILE *f = fdopen(fds[1], "w");
        for (size_t i = first; f && i < n_targets; i++)
            fprintf(f, "%d %s\n", targets[i].met, targets[i].name);
        if (f)
            fclose(f);
        _exit(rc);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[80];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (strlen(line) > 2 && n_targets < sizeof targets / sizeof targets[0]) {
            snprintf(targets[n_targets].name, sizeof targets[n_targets].name, "%.47s", line + 2);
            targets[n_targets++].met = line[0] == '1';
        }
    }
    if (f)
        fclose(f);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        printf("%s: the benchmark's process did not end normally\n", b->name);
        return 1;
    }
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    struct bench all[] = {
        {"stretch", bench_stretch, "one full password stretch vs Python hashlib (OpenSSL)"},
        {"srp", bench_srp, "one SRP login, constant-time vs plain mpz_powm"},
        {"keyserver", bench_keyserver, "SRP logins/s a keyserver sustains, 2 clients"},
        {"storage", bench_storage, "storage server under wrk vs nginx static files (ceiling)"},
        {"sync", bench_sync, "engine: first sync 10k bookmarks + 50k history, 2nd device, incremental"},
        {"profile", bench_profile, "Firefox profile (5k bookmarks, 1k logins, 100k visits) up and down"},
        {"loadtest", bench_loadtest,
         "devices of 10 users over 2 storage nodes, one drained (5 min; not in all)"},
    };
    size_t n = sizeof all / sizeof all[0];
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: picl-bench all|NAME [options]\n\nbenchmarks:\n");
        for (size_t i = 0; i < n; i++)
            printf("  %-10s %s\n", all[i].name, all[i].what);
        return argc < 2 ? 2 : 0;
    }
    int rc = 0, found = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(argv[1], "all") && strcmp(argv[1], all[i].name))
            continue;
        if (!strcmp(argv[1], "all") && !strcmp(all[i].name, "loadtest"))
            continue; /* minutes long: only by name */
        found = 1;
        if (!all[i].fn) {
            printf("%s: not built\n", all[i].name);
            continue;
        }
        int r = strcmp(argv[1], "all") ? all[i].fn(argc - 1, argv + 1)
                                       : run_in_child(&all[i], argc - 1, argv + 1);
        if (r != 0)
            rc = 1;
    }
    if (!found) {
        fprintf(stderr, "picl-bench: unknown benchmark '%s'\n", argv[1]);
        return 2;
    }
    size_t met = 0;
    for (size_t i = 0; i < n_targets; i++)
        met += targets[i].met != 0;
    if (n_targets) {
        printf("picl-bench: %zu of %zu targets met", met, n_targets);
        const char *sep = "; not met: ";
        for (size_t i = 0; i < n_targets; i++)
            if (!targets[i].met) {
                printf("%s%s", sep, targets[i].name);
                sep = ", ";
            }
        printf("\n");
    }
    return rc;
}
