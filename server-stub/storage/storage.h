/* SPDX-License-Identifier: MPL-2.0 */
/* storage.h -- the SyncStorage 1.5 storage server (storage.md): lifecycle,
 * configuration, and the hooks the tests and `picl server` use. */
#ifndef PICL_STORAGE_H
#define PICL_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "picl.h"

/*
 * Contract.  A storage_server owns an SQLite database in <data_dir>/storage.db
 * (WAL, synchronous=FULL), or uses a PostgreSQL database (`database`, which
 * several storage processes may share: timestamps stay strictly increasing
 * per user and the Hawk nonces are shared through it), and answers the
 * endpoints of storage.md section 3
 * under <node>/1.5/<uid>/..., authenticated with tokenlib tokens + Hawk.
 *
 * Choices the spec leaves open (documented here so clients can rely on them):
 *  - every 400 has a JSON integer body: 1 malformed header/parameter or bad
 *    batch id (unknown, foreign, expired), 6 body not JSON / not a list /
 *    not an object, 8 invalid BSO (PUT) or invalid id in `ids`, 13 invalid
 *    collection name, 14 over quota, 17 a size or count limit
 *    (X-Weave-* announcements, more than max_post_records/max_post_bytes in
 *    one POST, batch totals, more than 100 `ids`, PUT payload too large).
 *  - other errors have the body 0 (413: 17).
 *  - a POST item that is invalid goes to `failed` under its id; an item
 *    without a usable id (a broken line of application/newlines, a list
 *    element that is not an object or has no string id) under "#N", N its
 *    zero-based position in the request.  A POST in which nothing
 *    succeeds writes nothing and answers the collection's current
 *    last-modified.
 *  - GET of a collection that does not exist is 200 [] with
 *    X-Last-Modified 0.00; DELETE of one (or of ids in one) is 200
 *    {"modified": the user's last-modified} and writes nothing, as Mozilla's
 *    servers answer.
 *  - a BSO's `collection` field (sent by some clients) is ignored like
 *    `modified`; a PUT body that is JSON but not an object, or a POST body
 *    that is JSON but not a list, is 400/8 (not JSON at all: 400/6).
 *  - limits before parsing: a POST body is scanned (not parsed) first; more
 *    than max_post_records elements/lines, or more than
 *    (max_post_records + 1) * 16 JSON values, is 400/17; a PUT body of more
 *    than 16 values is 400/8.  A listing stops before its body would pass
 *    max_request_bytes (at least one item per page) and answers
 *    X-Weave-Next-Offset for the rest.
 *  - open (uncommitted, unexpired) batches count toward the quota, and a
 *    user has at most max_open_batches of them: opening one more is 400/17.
 *  - X-Weave-Next-Offset is a keyset cursor (sort mode, sort key, id), not
 *    a row count: items that are neither written nor deleted while a client
 *    pages are returned exactly once whatever others write meanwhile; an
 *    item rewritten meanwhile moves with its new timestamp (it may be seen
 *    twice under sort=oldest, or missed under sort=newest), which is why
 *    paging clients send X-If-Unmodified-Since from the first page on.
 */

typedef struct storage_limits {
    int64_t max_request_bytes;        /* default 2 MiB + 4 KiB */
    int64_t max_post_records;         /* 100 */
    int64_t max_post_bytes;           /* 2 MiB */
    int64_t max_total_records;        /* 10000 */
    int64_t max_total_bytes;          /* 100 MiB */
    int64_t max_record_payload_bytes; /* 2 MiB */
} storage_limits;

typedef struct storage_config {
    const char *listen;    /* "HOST:PORT" for storage_server_start (port 0 = any) */
    const char *data_dir;  /* existing directory (SQLite); may be NULL with database */
    const char *database;  /* NULL, or a postgresql:// URL: the database instead of
                                  <data_dir>/storage.db */
    unsigned db_pool;      /* PostgreSQL connections at most; 0 = 8 */
    const uint8_t *secret; /* token secret, >= 32 bytes (copied) */
    size_t secret_len;
    const char *node;           /* NULL = "http://HOST:PORT" of the bound listener */
    int64_t quota_kb;           /* 0 = no quota */
    int64_t restore_days;       /* PiCL undo: previous versions kept this many days
                                  (picl_restore_days); 0 = 30, < 0 = off */
    storage_limits limits;      /* a 0 field = its default */
    int64_t batch_ttl_s;        /* 0 = 7200 */
    int64_t prune_interval_s;   /* 0 = 3600, < 0 = no pruning thread */
    int64_t hawk_skew_s;        /* 0 = 60 */
    int64_t expired_grace_s;    /* GET /info/collections accepts tokens expired this
                                  long ago; 0 = 300 */
    unsigned threads;           /* HTTP thread pool, 0 = 4 */
    int busy_timeout_ms;        /* a write waits this long for another writer before
                                  409 + Retry-After; 0 = 10000 */
    int64_t max_open_batches;   /* per user; 0 = 10 */
    size_t nonce_cache_entries; /* live Hawk nonces held; 0 = 2^19 (one user: 1/32) */
    char *error;                /* NULL, or where storage_server_new/_start describe a
                                  failure (the path and the cause); kept by the
                                  caller for as long as the server lives */
    size_t error_cap;
    void (*log)(void *ctx, const char *line); /* NULL = quiet; whole lines of
                                  http/log.h: one per request, and the I/O and
                                  database errors of requests */
    void *log_ctx;
} storage_config;

typedef struct storage_server storage_server;

/* Validates the config (secret >= 32 bytes else PICL_ERROR_INVALID_ARGUMENT),
 * acquires NSS and opens the database, which must be writable: a database
 * opened read-only (permissions, a read-only mount) is PICL_ERROR_IO, never
 * a server that answers every write 503.  Not listening yet.  The caller frees
 * with storage_server_free(). */
picl_status storage_server_new(storage_server **out, const storage_config *cfg);

/* Adds the storage routes (/1.5/..., /__heartbeat__ unless skip_heartbeat)
 * to an HTTP server that the caller owns and starts (for `picl server`), and
 * starts the TTL pruning thread.  node must then be set in the config
 * (else PICL_ERROR_INVALID_ARGUMENT).  Free the HTTP server before this one. */
picl_status storage_server_mount(storage_server *s, srv_http_server *http, int skip_heartbeat);

/* Creates its own HTTP server on cfg->listen, mounts, starts serving.
 * PICL_ERROR_NETWORK when it cannot bind. */
picl_status storage_server_start(storage_server *s);

unsigned storage_server_port(const storage_server *s);
/* The node URL tokens must carry (valid until free). */
const char *storage_server_node(const storage_server *s);

/* Stops serving (waits for requests in flight), closes the database, frees. */
void storage_server_free(storage_server *s);

/* Operational switches (thread-safe): every response carries
 * X-Weave-Backoff: secs (0 = off); every request except the heartbeat gets
 * 503 with Retry-After: secs (0 = off). */
void storage_server_set_backoff(storage_server *s, int secs);
void storage_server_set_unavailable(storage_server *s, int secs);

/* Deletes expired BSOs and batches now; *removed (may be NULL) = BSOs removed. */
picl_status storage_server_prune(storage_server *s, int64_t *removed);

/* The effective limits (defaults filled in). */
const storage_limits *storage_server_limits(const storage_server *s);

#endif
