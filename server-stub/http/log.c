/* SPDX-License-Identifier: MPL-2.0 */
/* log.c -- the servers' log lines (see log.h). */
#include "http/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const LEVELS[] = {"INFO", "WARN", "ERROR"};

/* Harmless SyncStorage query parameters: their values are logged. */
static const char *const SAFE_PARAMS[] = {"newer",  "older", "limit",  "sort",  "full",
                                          "offset", "batch", "commit", "as_of", "ids"};

typedef struct out_buf {
    char *p;
    size_t cap, len;
} out_buf;

/* How put_escaped treats the two printable characters that matter. */
enum {
    ESC_FIELD = 0, /* a request-line field: space and backslash escaped */
    ESC_TEXT = 1,  /* a message: both kept (a field escaped before reads the same) */
    ESC_SPACED = 2 /* srvlog_escape: space kept, backslash escaped */
};

/* Appends in[0..n) escaped (mode: ESC_*); control characters, DEL and bytes
 * >= 0x80 always become \xHH.  Stops at a NUL, and before an escape that
 * would not fit whole. */
static void put_escaped(out_buf *o, const char *in, size_t n, int mode)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n && in[i]; i++) {
        unsigned char ch = (unsigned char)in[i];
        int plain = ch > 0x20 && ch < 0x7f && ch != '\\';
        if (ch == ' ' && mode != ESC_FIELD)
            plain = 1;
        if (ch == '\\' && mode == ESC_TEXT)
            plain = 1;
        size_t need = plain ? 1 : 4;
        if (o->len + need >= o->cap)
            break;
        if (plain) {
            o->p[o->len++] = (char)ch;
        } else {
            o->p[o->len++] = '\\';
            o->p[o->len++] = 'x';
            o->p[o->len++] = hex[ch >> 4];
            o->p[o->len++] = hex[ch & 15];
        }
    }
    o->p[o->len] = 0;
}

static void put_raw(out_buf *o, const char *s)
{
    size_t n = strlen(s);
    if (o->len + n >= o->cap)
        n = o->cap - o->len - 1;
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = 0;
}

/* "2026-12-03T21:40:12.345Z INFO " */
static void put_prefix(out_buf *o, srvlog_level level)
{
    struct timespec ts;
    struct tm tm;
    char t[40];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(t + n, sizeof t - n, ".%03ldZ ", ts.tv_nsec / 1000000);
    put_raw(o, t);
    put_raw(o, LEVELS[level <= SRVLOG_ERROR ? level : SRVLOG_ERROR]);
    put_raw(o, " ");
}

void srvlog_stderr(void *ctx, const char *line)
{
    char buf[SRVLOG_LINE_MAX + 1];
    size_t n = strlen(line);
    (void)ctx;
    if (n > SRVLOG_LINE_MAX)
        n = SRVLOG_LINE_MAX;
    memcpy(buf, line, n);
    buf[n++] = '\n';
    /* one write: lines of concurrent threads never interleave */
    if (write(STDERR_FILENO, buf, n) < 0)
        return;
}

void srvlog(srvlog_sink sink, void *ctx, srvlog_level level, const char *fmt, ...)
{
    if (!sink)
        return;
    char msg[SRVLOG_LINE_MAX], line[SRVLOG_LINE_MAX];
    out_buf o = {line, sizeof line, 0};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    line[0] = 0;
    put_prefix(&o, level);
    put_escaped(&o, msg, strlen(msg), ESC_TEXT);
    sink(ctx, line);
}

static int safe_param(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof SAFE_PARAMS / sizeof SAFE_PARAMS[0]; i++)
        if (strlen(SAFE_PARAMS[i]) == n && !memcmp(SAFE_PARAMS[i], name, n))
            return 1;
    return 0;
}

/* A harmless parameter's value is logged when it looks like one: at most
 * 256 characters of [A-Za-z0-9._~,-] (times, counts, sort words, id lists,
 * offsets); anything else is "*" too. */
static int plain_value(const char *s, size_t n)
{
    if (n > 256)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '~' || c == ',' || c == '-'))
            return 0;
    }
    return 1;
}

static int all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))
            return 0;
    return 1;
}

static void put_path(out_buf *o, const char *path, size_t plen)
{
    static const char rk[] = "/v1/recoveryKey/";
    if (plen > sizeof rk - 1 && !memcmp(path, rk, sizeof rk - 1)) {
        put_raw(o, rk);
        put_raw(o, "*");
        return;
    }
    size_t i = 0;
    while (i < plen) {
        size_t j = i;
        while (j < plen && path[j] != '/')
            j++;
        if (j - i >= 32 && all_hex(path + i, j - i))
            put_raw(o, "*");
        else
            put_escaped(o, path + i, j - i, ESC_FIELD);
        if (j < plen)
            put_raw(o, "/");
        i = j + 1;
    }
}

static void put_query(out_buf *o, const char *q)
{
    while (*q) {
        size_t n = strcspn(q, "&");
        const char *eq = memchr(q, '=', n);
        size_t nl = eq ? (size_t)(eq - q) : n;
        put_escaped(o, q, nl, ESC_FIELD);
        if (eq) {
            put_raw(o, "=");
            if (safe_param(q, nl) && plain_value(eq + 1, n - nl - 1))
                put_escaped(o, eq + 1, n - nl - 1, ESC_FIELD);
            else
                put_raw(o, "*");
        }
        q += n;
        if (*q == '&') {
            put_raw(o, "&");
            q++;
        }
    }
}

size_t srvlog_escape(char *out, size_t cap, const char *in, size_t max_in)
{
    if (!out || !cap)
        return 0;
    out_buf o = {out, cap, 0};
    out[0] = 0;
    if (in)
        put_escaped(&o, in, strnlen(in, max_in), ESC_SPACED);
    return o.len;
}

size_t srvlog_redact_target(char *out, size_t cap, const char *target)
{
    if (!out || !cap)
        return 0;
    out_buf o = {out, cap, 0};
    out[0] = 0;
    if (!target || !*target) {
        put_raw(&o, "-");
        return o.len;
    }
    const char *q = strchr(target, '?');
    put_path(&o, target, q ? (size_t)(q - target) : strlen(target));
    if (q) {
        put_raw(&o, "?");
        put_query(&o, q + 1);
    }
    return o.len;
}

void srvlog_request(srvlog_sink sink, void *ctx, const char *addr, const char *method, const char *target,
                    int status, int64_t latency_ms)
{
    if (!sink)
        return;
    char line[SRVLOG_LINE_MAX], path[1200], num[48];
    out_buf o = {line, sizeof line, 0};
    line[0] = 0;
    put_prefix(&o, status >= 500 ? SRVLOG_ERROR : status == 0 ? SRVLOG_WARN : SRVLOG_INFO);
    put_escaped(&o, addr && *addr ? addr : "-", addr && *addr ? strlen(addr) : 1, ESC_FIELD);
    put_raw(&o, " ");
    put_escaped(&o, method && *method ? method : "-", method && *method ? strlen(method) : 1, ESC_FIELD);
    put_raw(&o, " ");
    srvlog_redact_target(path, sizeof path, target);
    put_raw(&o, path);
    if (status > 0)
        snprintf(num, sizeof num, " %d %lldms", status, (long long)(latency_ms > 0 ? latency_ms : 0));
    else
        snprintf(num, sizeof num, " - %lldms", (long long)(latency_ms > 0 ? latency_ms : 0));
    put_raw(&o, num);
    sink(ctx, line);
}
