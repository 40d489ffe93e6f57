/* SPDX-License-Identifier: MPL-2.0 */
/* common.c -- what the picl command's files share: exit codes (the EXIT
 * column of status.def), failure messages, reading a secret without echo,
 * and the progress bar the service's notifications draw.  It calls none of
 * the command files (scripts/filecycles.py), which all call it. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

/* The exit code of each status: the EXIT column of status.def. */
static const unsigned char exit_codes[PICL_STATUS_COUNT_] = {
#define PICL_STATUS_ROW(name, number, exit_code, message, comment) [PICL_##name] = CLI_##exit_code,
#include "status.def"
#undef PICL_STATUS_ROW
};

int cli_exit_code(picl_status st) { return (unsigned)st < PICL_STATUS_COUNT_ ? exit_codes[st] : CLI_FAILURE; }

/* The last "status" line the observer printed: a failure the service also
 * announced that way is not printed twice. */
static char last_status[512];

int cli_fail(const cli_opts *o, picl_service *svc, picl_status st)
{
    const char *msg = svc && *picl_service_last_error(svc) ? picl_service_last_error(svc) : picl_strerror(st);
    if (o->json) {
        json_t *j = json_pack("{s:s, s:i, s:s}", "status", "error", "code", (int)st, "message", msg);
        char *t = json_dumps(j, JSON_COMPACT);
        printf("%s\n", t ? t : "{}");
        free(t);
        json_decref(j);
    } else if (strcmp(msg, last_status)) {
        fprintf(stderr, "picl: %s\n", msg);
    }
    return cli_exit_code(st);
}

/* The terminal's settings while a password is typed without echo: put back
 * by a SIGINT/SIGTERM/SIGHUP/SIGQUIT handler, then the signal is re-raised. */
static volatile sig_atomic_t tty_saved_fd = -1;
static struct termios tty_saved;

static void restore_tty(int sig)
{
    if (tty_saved_fd >= 0)
        tcsetattr(tty_saved_fd, TCSAFLUSH, &tty_saved);
    if (write(tty_saved_fd >= 0 ? tty_saved_fd : STDERR_FILENO, "\n", 1) < 0) {
        /* nothing to do */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

int cli_read_secret(const char *file, const char *env, const char *prompt, char *buf, size_t cap)
{
    if (file) {
        FILE *fp = fopen(file, "r");
        if (!fp) {
            fprintf(stderr, "picl: cannot read %s: %s\n", file, strerror(errno));
            return -1;
        }
        int ok = fgets(buf, (int)cap, fp) != NULL;
        fclose(fp);
        if (!ok)
            buf[0] = 0;
        buf[strcspn(buf, "\r\n")] = 0;
        return 0;
    }
    const char *v = env ? getenv(env) : NULL;
    if (v) {
        snprintf(buf, cap, "%s", v);
        return 0;
    }
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "picl: no terminal to ask for the password: set %s or use --password-file\n",
                env ? env : "PICL_PASSWORD");
        return -1;
    }
    struct termios old, quiet;
    int have = tcgetattr(fd, &old) == 0;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    struct sigaction sa, prev[4];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = restore_tty;
    sigemptyset(&sa.sa_mask);
    if (have) {
        tty_saved = old;
        tty_saved_fd = fd;
        for (int i = 0; i < 4; i++)
            sigaction(sigs[i], &sa, &prev[i]);
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(fd, TCSAFLUSH, &quiet);
    }
    if (write(fd, prompt, strlen(prompt)) < 0) {
        /* nothing to do: the read below still works */
    }
    ssize_t n = read(fd, buf, cap - 1);
    if (have) {
        tcsetattr(fd, TCSAFLUSH, &old);
        tty_saved_fd = -1;
        for (int i = 0; i < 4; i++)
            sigaction(sigs[i], &prev[i], NULL);
    }
    if (write(fd, "\n", 1) < 0) {
    }
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    buf[strcspn(buf, "\r\n")] = 0;
    return 0;
}

/* ---- progress --------------------------------------------------------------- */

/* On a terminal: one bar, redrawn in place by the engine's notifications and,
 * while a step runs without any (a store applying thousands of records in one
 * transaction, a large batch upload), once a second by a ticker thread with
 * the seconds spent, so the bar never looks stuck. */
static pthread_mutex_t bar_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int shown; /* a bar is on the current line */
    char coll[40], phase[16];
    long long done, total;
    time_t since; /* when done last changed */
    int stop;
} bar;

static void draw_bar(time_t now)
{
    int width = 24;
    int fill = bar.total > 0 ? (int)(bar.done * width / bar.total) : (bar.done ? width : 0);
    char cells[32];
    for (int i = 0; i < width; i++)
        cells[i] = i < fill ? '#' : '.';
    cells[width] = 0;
    fprintf(stderr, "\r\033[K%-10s %-8s [%s] %lld", bar.coll, bar.phase, cells, bar.done);
    if (bar.total > 0)
        fprintf(stderr, "/%lld", bar.total);
    if (now - bar.since >= 2)
        fprintf(stderr, "  %lds", (long)(now - bar.since));
    fflush(stderr);
    bar.shown = 1;
}

static pthread_cond_t bar_wake = PTHREAD_COND_INITIALIZER;

static void *ticker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&bar_lock);
    while (!bar.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&bar_wake, &bar_lock, &ts);
        if (!bar.stop && bar.shown)
            draw_bar(time(NULL));
    }
    pthread_mutex_unlock(&bar_lock);
    return NULL;
}

static pthread_t ticker_thread;
static int ticker_running;

void cli_progress_start(const cli_opts *o)
{
    if (o->json || o->quiet || !isatty(STDERR_FILENO))
        return;
    ticker_running = pthread_create(&ticker_thread, NULL, ticker, NULL) == 0;
}

/* Stops the ticker and clears the bar's line. */
void cli_progress_stop(void)
{
    pthread_mutex_lock(&bar_lock);
    bar.stop = 1;
    pthread_cond_signal(&bar_wake);
    if (bar.shown)
        fprintf(stderr, "\r\033[K");
    bar.shown = 0;
    pthread_mutex_unlock(&bar_lock);
    if (ticker_running)
        pthread_join(ticker_thread, NULL);
    ticker_running = 0;
}

void cli_on_progress(void *ctx, const char *phase, const char *coll, int64_t done, int64_t total,
                     const char *msg)
{
    const cli_opts *o = ctx;
    if (o->json || o->quiet)
        return;
    int tty = isatty(STDERR_FILENO);
    pthread_mutex_lock(&bar_lock);
    if (!strcmp(phase, "status") || !strcmp(phase, "account")) {
        if (*msg) {
            fprintf(stderr, "%s%s%s%s\n", tty ? "\r\033[K" : "", *coll ? coll : "", *coll ? ": " : "", msg);
            bar.shown = 0;
            if (!*coll)
                snprintf(last_status, sizeof last_status, "%s", msg);
        }
    } else if (tty) {
        time_t now = time(NULL);
        if (strcmp(bar.coll, coll) || strcmp(bar.phase, phase) || bar.done != done)
            bar.since = now;
        snprintf(bar.coll, sizeof bar.coll, "%s", coll);
        snprintf(bar.phase, sizeof bar.phase, "%s", phase);
        bar.done = done;
        bar.total = total;
        draw_bar(now);
    } else if (done == total || total < 0) {
        fprintf(stderr, "picl: %s: %s %lld\n", coll, phase, (long long)done);
    }
    pthread_mutex_unlock(&bar_lock);
}
