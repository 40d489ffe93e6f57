/* SPDX-License-Identifier: MPL-2.0 */
/* storage_resp.c -- the storage server's answer helpers (errors,
 * timestamps, read preconditions) and id checks shared by storage.c,
 * storage_read.c and storage_write.c (see storage_internal.h); a file of
 * their own so that the routes and the handlers do not call each other. */
#include "storage/storage_internal.h"

#include <stdio.h>
#include <string.h>

void storage__error(srv_http_response *resp, int status, int code)
{
    char body[16];
    int n = snprintf(body, sizeof body, "%d", code);
    srv_http_respond(resp, status, "application/json", body, (size_t)n);
}

void storage__set_ts(srv_http_response *resp, const char *name, int64_t centis)
{
    char ts[PICL_SYNCTIME_BUF];
    picl__synctime_format(ts, centis);
    srv_http_set_header(resp, name, ts);
}

void storage__set_modified(sreq *r, int64_t last_modified, int64_t weave_ts)
{
    storage__set_ts(r->resp, "X-Last-Modified", last_modified);
    storage__set_ts(r->resp, "X-Weave-Timestamp", weave_ts);
}

void storage__db_error(sreq *r, picl_status st)
{
    if (st != PICL_ERROR_CONFLICT && st != PICL_ERROR_TOO_LARGE && r->s->log) {
        /* the operator learns why writes fail (a full disk, a read-only
         * file), not only the client */
        char line[512], target[200];
        srvlog_redact_target(target, sizeof target, r->req->target); /* no query secrets */
        snprintf(line, sizeof line, "storage: %s %s: database failure in %s: %s", r->req->method, target,
                 sdb_where(r->s->db), picl_strerror(st));
        srvlog(r->s->log, r->s->log_ctx, SRVLOG_ERROR, "%s", line);
    }
    if (st == PICL_ERROR_CONFLICT) {
        storage__error(r->resp, 409, 0);
        srv_http_set_header(r->resp, "Retry-After", "1");
    } else if (st == PICL_ERROR_TOO_LARGE) {
        storage__error(r->resp, 400, 17);
    } else {
        storage__error(r->resp, 503, 0);
        srv_http_set_header(r->resp, "Retry-After", "5");
    }
}

int storage__valid_coll(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n > 32)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int storage__valid_id(const char *id, size_t len)
{
    if (len < 1 || len > 64)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)id[i] < 0x20 || (unsigned char)id[i] > 0x7e)
            return 0;
    return 1;
}

/* Applies X-If-Modified-Since / X-If-Unmodified-Since to a read of a
 * resource last modified at m.  Returns 1 to go on; 0 when answered. */
int storage__read_preconditions(sreq *r, int64_t m, int64_t wts)
{
    if (r->has_ims && m <= r->ims) {
        srv_http_respond(r->resp, 304, NULL, "", 0);
        storage__set_modified(r, m, wts);
        return 0;
    }
    if (r->has_ius && m > r->ius) {
        storage__error(r->resp, 412, 0);
        storage__set_modified(r, m, wts);
        return 0;
    }
    return 1;
}

void storage__set_quota_header(sreq *r, int64_t usage)
{
    if (!r->s->quota_kb)
        return;
    char v[32];
    sdb_fmt_kib(v, r->s->quota_kb * 1024 - usage);
    srv_http_set_header(r->resp, "X-Weave-Quota-Remaining", v);
}
