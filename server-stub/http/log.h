/* SPDX-License-Identifier: MPL-2.0 */
/* log.h -- THE log of both servers and `picl server`: one formatter for every
 * line (requests, start-up, errors), written through a sink callback. */
#ifndef SRV_HTTP_LOG_H
#define SRV_HTTP_LOG_H

#include <stddef.h>
#include <stdint.h>

/*
 * Every line is
 *
 *     <time> <LEVEL> <message>
 *
 * time: RFC 3339 UTC with milliseconds ("2026-12-03T21:40:12.345Z"); LEVEL:
 * INFO, WARN or ERROR.  A request line (one per answered request, written by
 * the HTTP glue for every route of both servers) has the message
 *
 *     <client address> <METHOD> <path> <status> <latency>ms
 *
 * e.g. "2026-12-03T21:40:12.345Z INFO 127.0.0.1 GET /1.5/7/info/collections
 * 200 3ms" (level ERROR for a 5xx, WARN when no answer was sent: status "-").
 * The path is logged without secrets: the value of a query parameter not in
 * the list of harmless SyncStorage parameters (newer, older, limit, sort,
 * full, offset, batch, commit, as_of, ids), or one that does not look like
 * theirs (up to 256 of [A-Za-z0-9._~,-]), becomes "*", and so does the path
 * below /v1/recoveryKey/ and any path segment of 32 or more hex digits
 * (token ids, key ids).  Headers and bodies (tokens, codes, keys) are never
 * logged.
 *
 * Escaping: in every field of a request line, control characters, DEL,
 * bytes >= 0x80, the backslash and the space become \xHH, so a client can
 * neither break a line, fake one, nor drive a terminal that shows the log.
 */

typedef enum srvlog_level { SRVLOG_INFO = 0, SRVLOG_WARN, SRVLOG_ERROR } srvlog_level;

/* Where lines go: ctx as given with it, line without the newline.  The
 * config structs of both servers (ks_config.log, storage_config.log,
 * srv_http_config.log) carry one; NULL = quiet. */
typedef void (*srvlog_sink)(void *ctx, const char *line);

#define SRVLOG_LINE_MAX 2048u /* a longer line is cut (escaped text is never split) */

/* The sink of the three programs: line + "\n" on stderr, in one write. */
void srvlog_stderr(void *ctx, const char *line);

/* Formats "<time> <LEVEL> <message>" and hands it to sink (nothing when
 * sink is NULL).  In the message only control characters, DEL and bytes >=
 * 0x80 are escaped: spaces and backslashes stay, so a field escaped or
 * redacted before (srvlog_redact_target) reads the same. */
void srvlog(srvlog_sink sink, void *ctx, srvlog_level level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The request line: addr and method may be NULL ("-"), target is the raw
 * request target (path?query, redacted and escaped here), status 0 = no
 * answer was sent, latency_ms rounded down. */
void srvlog_request(srvlog_sink sink, void *ctx, const char *addr, const char *method, const char *target,
                    int status, int64_t latency_ms);

/* Copies at most max_in bytes of the NUL-terminated in (may be NULL) into
 * out[0..cap) for a log message: control characters, DEL, bytes >= 0x80 and
 * the backslash become \xHH (the space stays), so a request can neither
 * break a log line nor fake one.  Always NUL-terminates (cap >= 1); returns
 * the length written; never cuts an escape. */
size_t srvlog_escape(char *out, size_t cap, const char *in, size_t max_in);

/* The redacted, escaped path?query of a request line into out (cap bytes,
 * always NUL-terminated when cap >= 1); returns the length written.
 * Exposed for tests. */
size_t srvlog_redact_target(char *out, size_t cap, const char *target);

#endif
