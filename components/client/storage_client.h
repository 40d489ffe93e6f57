/* SPDX-License-Identifier: MPL-2.0 */
/* storage_client.h -- libcurl client of a SyncStorage 1.5 storage server
 * (storage.md): Hawk signing, paging, batching within the advertised limits,
 * conditional headers, backoff and token refresh. */
#ifndef PICL_CLIENT_STORAGE_CLIENT_H
#define PICL_CLIENT_STORAGE_CLIENT_H

#include "client/storage_client_list.h"
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "picl.h"

/*
 * A picl_stc talks to one user's api_endpoint ("http://host:port/1.5/<uid>")
 * with the Hawk credentials (id = token, key = ASCII key) the keyserver's
 * /storage/token handed out.  Not thread-safe: one per thread.  The caller
 * holds NSS (picl__nss_acquire) while it uses the client.
 *
 * Timestamps are int64 hundredths of a second ("centis"), exactly as the
 * server prints them; -1 means "no condition".
 *
 * Status mapping (every call):
 *   2xx                 PICL_OK
 *   304                 PICL_OK with picl__stc_last()->not_modified = 1
 *   401                 the clock is corrected from X-Weave-Timestamp and the
 *                       request retried once when the skew is over 30 s; then
 *                       the refresh hook (if any) is called once for new
 *                       credentials and the request retried; then PICL_ERROR_TOKEN.
 *                       When the new credentials name another api_endpoint
 *                       (node reassignment) the request is NOT retried: the
 *                       client switches to the new endpoint, picl__stc_node_changed()
 *                       becomes 1, and this and every later call fail with
 *                       PICL_ERROR_TOKEN without touching the network: the
 *                       caller drops this client and starts its work again.
 *   404                 PICL_ERROR_NOT_FOUND
 *   409, 412            PICL_ERROR_CONFLICT (409's Retry-After in last()->backoff_s)
 *   429, 503            PICL_ERROR_BACKOFF, delay in last()->backoff_s; further
 *                       calls before it has passed fail with PICL_ERROR_BACKOFF
 *                       without touching the network
 *   400/14              PICL_ERROR_QUOTA
 *   400/17, 413         PICL_ERROR_TOO_LARGE
 *   other 400, 415      PICL_ERROR_INVALID_ARGUMENT
 *   other 5xx           PICL_ERROR_SERVER
 *   unreachable         PICL_ERROR_NETWORK
 *   malformed answer    PICL_ERROR_PROTOCOL
 * X-Weave-Backoff on any answer (success included) is kept in
 * last()->backoff_s and also blocks calls until it has passed; the call that
 * carried it still returns its own status.  Outputs are NULL on failure.
 */

typedef struct picl_stc picl_stc;

typedef struct picl_stc_result {
    int http_status;            /* 0 when no answer */
    int error_code;             /* the integer body of a 400, else 0 */
    int not_modified;           /* 304 */
    int64_t last_modified;      /* X-Last-Modified, -1 if absent */
    int64_t timestamp;          /* X-Weave-Timestamp, -1 if absent */
    int64_t backoff_s;          /* X-Weave-Backoff / Retry-After, 0 if none */
    int64_t records;            /* X-Weave-Records, -1 if absent */
    int64_t quota_remaining_kb; /* X-Weave-Quota-Remaining (floored), -1 if absent */
    int backoff_capped;         /* the server asked for more than PICL_STC_MAX_BACKOFF_S */
} picl_stc_result;

/* Bounds against a hostile or broken server: a requested delay is capped at
 * a day (and reported in backoff_capped); a listing is at most
 * PICL_STC_MAX_PAGES pages, each of which must make progress (a non-empty
 * page, a new offset), else PICL_ERROR_PROTOCOL; an X-Weave-Next-Offset of
 * PICL_STC_MAX_OFFSET characters or more is PICL_ERROR_PROTOCOL.  Header
 * numbers of more than 15 integer digits are ignored (never overflow). */
#define PICL_STC_MAX_BACKOFF_S 86400
#define PICL_STC_MAX_PAGES 10000
#define PICL_STC_MAX_OFFSET 1024

/* Called on a 401 to get fresh credentials (e.g. a new /storage/token).  It
 * sets the three malloc()ed strings (the client takes them; key is a secret)
 * and returns PICL_OK, or fails (the call then fails with its status). */
typedef picl_status (*picl_stc_refresh_fn)(void *ctx, char **api_endpoint, char **id, char **key);

/* Creates a client (strings copied).  Caller frees with picl__stc_free. */
picl_status picl__stc_new(picl_stc **out, const char *api_endpoint, const char *id, const char *key);
void picl__stc_free(picl_stc *c);
void picl__stc_set_refresh(picl_stc *c, picl_stc_refresh_fn fn, void *ctx);
const picl_stc_result *picl__stc_last(const picl_stc *c);
/* Seconds added to the local clock for Hawk timestamps (learned from a 401's
 * X-Weave-Timestamp; settable for tests or from another server's clock). */
int64_t picl__stc_clock_offset(const picl_stc *c);
void picl__stc_set_clock_offset(picl_stc *c, int64_t offset);
/* One line for a user about why the last call failed with st, naming the
 * server and what it did: unreachable (libcurl's words), unavailable (503,
 * with the wait), failed (5xx), a malformed answer (with the HTTP status),
 * never "cannot reach" for a server that answered. */
void picl__stc_describe(const picl_stc *c, picl_status st, char *out, size_t cap);
/* HTTP requests sent so far by this client (every retry counts). */
uint64_t picl__stc_request_count(const picl_stc *c);
/* Forgets a remembered backoff (tests, or a user's "sync now"). */
void picl__stc_clear_backoff(picl_stc *c);
/* 1 once a 401's token refresh moved the user to another api_endpoint. */
int picl__stc_node_changed(const picl_stc *c);
/* The current api_endpoint (valid until the next call or free). */
const char *picl__stc_endpoint(const picl_stc *c);

/* json_decref() for a value holding secrets (a storage token's key, a
 * decrypted record): when this is the last reference, every string in it
 * (values, not keys) is wiped before jansson frees it.  NULL is fine. */
void picl__json_zdecref(json_t *j);

/* ---- /info -------------------------------------------------------------- */

/* *out receives the parsed answer (caller json_decref's).  `which` is one of
 * "collections", "quota", "collection_usage", "collection_counts",
 * "configuration".  if_modified_since (-1 = none): a 304 gives PICL_OK and
 * *out NULL. */
picl_status picl__stc_info(picl_stc *c, const char *which, int64_t if_modified_since, json_t **out);

/* The server's limits (fetched once from /info/configuration, then cached). */
typedef struct picl_stc_limits {
    int64_t max_request_bytes, max_post_records, max_post_bytes;
    int64_t max_total_records, max_total_bytes, max_record_payload_bytes;
} picl_stc_limits;
picl_status picl__stc_limits(picl_stc *c, picl_stc_limits *out);

/* ---- reading ------------------------------------------------------------ */

typedef struct picl_stc_query {
    const char *const *ids; /* NULL or nids ids (at most 100) */
    size_t nids;
    int64_t newer, older; /* -1 = none */
    int full;             /* full BSOs instead of ids */
    int64_t limit;        /* 0 = none (one request); with picl__stc_get_all, the page size */
    const char *sort;     /* NULL, "newest", "oldest", "index" */
    const char *offset;   /* a next_offset from an earlier page, or NULL */
    int64_t if_modified_since, if_unmodified_since; /* -1 = none */
    int has_as_of;                                  /* PiCL undo extension: the collection as it was at */
    int64_t as_of;                                  /* as_of (centis; storage server's picl_restore_days) */
} picl_stc_query;

/* One page: *items is the JSON array (caller decrefs); *next_offset
 * (may be NULL) the malloc()ed X-Weave-Next-Offset or NULL at the end. */
picl_status picl__stc_get(picl_stc *c, const char *coll, const picl_stc_query *q, json_t **items,
                          char **next_offset);
/* Every page (limit = page size, default 1000), with X-If-Unmodified-Since
 * set to the first page's X-Last-Modified so that a concurrent write makes
 * it fail with PICL_ERROR_CONFLICT instead of mixing two states.  At most
 * max_items items (0 = 1000000) else PICL_ERROR_TOO_LARGE. */
picl_status picl__stc_get_all(picl_stc *c, const char *coll, const picl_stc_query *q, size_t max_items,
                              json_t **items);
/* The download a sync cursor may follow (client.md 7): every full BSO
 * modified after `newer` (centiseconds), oldest first, page by page.  Each
 * page must carry X-Last-Modified and an X-Weave-Records equal to its item
 * count, and a last small ids request at the newest timestamp received must
 * name no record we did not get (a listing that ended early: a lost
 * X-Weave-Next-Offset, a cut page); anything else is PICL_ERROR_PROTOCOL and
 * nothing is returned.  On PICL_OK *items holds the BSOs (caller
 * picl__json_zdecref's) and *listed the listing's X-Last-Modified, the only
 * value a cursor may advance to.  A change meanwhile is PICL_ERROR_CONFLICT;
 * max_items as for picl__stc_get_all. */
picl_status picl__stc_download(picl_stc *c, const char *coll, int64_t newer, size_t max_items, json_t **items,
                               int64_t *listed);
/* picl__stc_download page by page: each page, once it passed the checks of
 * a page, is handed to fn as (id, modified, payload) views read without a
 * JSON tree per BSO (storage_client_list.h; borrowed until fn returns)
 * while the next one is already requested; fn's non-PICL_OK status ends the
 * download with that status.  The completeness rules and statuses are those
 * of picl__stc_download: a PICL_OK page is not yet a complete download --
 * only the PICL_OK return says the pages handed over are the listing. */
typedef picl_status (*picl_stc_page_fn)(void *ctx, const picl_bso_view *items, size_t n);
picl_status picl__stc_download_each(picl_stc *c, const char *coll, int64_t newer, size_t max_items,
                                    picl_stc_page_fn fn, void *ctx, int64_t *listed);
/* Moves the data of a requested next page without waiting (call it now and
 * then from a page function; nothing when no request is under way). */
void picl__stc_pump(picl_stc *c);
/* One BSO object (caller decrefs). */
picl_status picl__stc_get_item(picl_stc *c, const char *coll, const char *id, json_t **bso);

/* ---- writing ------------------------------------------------------------ */

/* PUT: bso is a JSON object (borrowed); *modified (may be NULL) the new
 * last-modified. */
picl_status picl__stc_put(picl_stc *c, const char *coll, const char *id, const json_t *bso,
                          int64_t if_unmodified_since, int64_t *modified);

typedef struct picl_stc_post_result {
    int64_t modified; /* the commit's timestamp */
    json_t *success;  /* array of ids (owned: picl__stc_post_result_clear) */
    json_t *failed;   /* object id -> reason */
} picl_stc_post_result;
void picl__stc_post_result_clear(picl_stc_post_result *r);

/*
 * Uploads an array of BSOs (borrowed).  When they fit one request within the
 * server's max_post_records / max_post_bytes, a plain POST; otherwise a batch
 * (batch=true, appends, commit=true) so that all of them appear at one
 * timestamp.  More than max_total_records / max_total_bytes, or one payload
 * over max_record_payload_bytes or max_post_bytes (a record that fits no
 * request), is PICL_ERROR_TOO_LARGE before anything is sent.  if_unmodified_since applies to the first request and the commit.
 */
picl_status picl__stc_post(picl_stc *c, const char *coll, const json_t *bsos, int64_t if_unmodified_since,
                           picl_stc_post_result *out);

/*
 * The same upload streamed: n BSOs, made one at a time by next(ctx, i, ...)
 * as their request needs them, so that a part is being made while the one
 * before is in flight (picl__stc_pump between records keeps it moving).
 * next gives BSO i's compact JSON text (*bso, malloc()ed, taken) and its
 * payload's length.  The BSOs go in batches: a new one starts at each
 * multiple of per (0 = never) and before a record that would take the
 * batch's payload bytes over byte_cap (a batch holds one record at least);
 * each batch is sent exactly as picl__stc_post sends its BSOs (one plain
 * POST when they fit one request, else batch=true, batch=ID..., commit=true,
 * X-If-Unmodified-Since on the first and the last), the first batch
 * conditional on ius, each later one on the batch before's timestamp.
 * done(ctx, end) (may be NULL) follows each committed batch but the last
 * (records [0, end) are in).  The results of all batches merge into *out
 * (modified = the last commit's).  Differences from picl__stc_post: a
 * record too large is found when it is made, so parts before it may have
 * been appended to a batch that is then never committed; no more than two
 * parts' bodies are held at once.  On any failure the part in flight
 * is still waited for (never left half-sent); its failure, which came
 * first, wins.  Every request goes out only after the answer to the one
 * before (a batch's ID comes in that answer). */
typedef struct picl_stc_stream {
    size_t n, per;
    int64_t byte_cap;
    picl_status (*next)(void *ctx, size_t i, char **bso, size_t *payload_len);
    void (*done)(void *ctx, size_t end);
    void *ctx;
} picl_stc_stream;
picl_status picl__stc_post_stream(picl_stc *c, const char *coll, const picl_stc_stream *s, int64_t ius,
                                  picl_stc_post_result *out);

/* DELETE of a collection (ids NULL) or of at most 100 ids of it; of one BSO;
 * of everything (storage).  *modified may be NULL. */
picl_status picl__stc_delete(picl_stc *c, const char *coll, const char *const *ids, size_t nids,
                             int64_t if_unmodified_since, int64_t *modified);
picl_status picl__stc_delete_item(picl_stc *c, const char *coll, const char *id, int64_t if_unmodified_since,
                                  int64_t *modified);
picl_status picl__stc_delete_all(picl_stc *c, int64_t if_unmodified_since, int64_t *modified);
/* DELETE <api_endpoint> itself: all of the user's data, as SyncStorage's
 * DELETE /1.5/<uid> (used when the account is destroyed). */
picl_status picl__stc_delete_user(picl_stc *c, int64_t *modified);

#endif
