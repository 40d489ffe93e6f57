/* SPDX-License-Identifier: MPL-2.0 */
/* storage_internal.h -- what storage.c and storage_write.c share: the server
 * object, the per-request context and the BSO input parser. */
#ifndef PICL_STORAGE_INTERNAL_H
#define PICL_STORAGE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "storage/storage.h"
#include "storage/storage_auth.h"
#include "storage/storage_db.h"

struct storage_server {
    char *listen, *data_dir;
    char *database;       /* a postgresql:// URL instead of data_dir, or NULL */
    _Atomic(char *) node; /* published once the port is bound; read by handlers */
    storage_limits lim;
    int64_t quota_kb, batch_ttl_s, prune_interval_s, expired_grace_s, max_open_batches;
    int64_t restore_days; /* picl_restore_days: 0 = off */
    unsigned threads;
    sdb *db;
    storage_auth *auth;
    srv_http_server *http; /* our own, from storage_server_start */
    srv_http_hooks hooks;
    int nss;
    atomic_int backoff, unavailable;
    pthread_t pruner;
    int pruner_running, stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *error; /* the config's error buffer, or NULL */
    size_t error_cap;
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
};

/* One authenticated request being served. */
typedef struct sreq {
    storage_server *s;
    srv_http_request *req;
    srv_http_response *resp;
    int64_t uid, now;
    int has_ims, has_ius;
    int64_t ims, ius; /* centis, floored */
} sreq;

/* Answers an error: status with the JSON integer body `code`. */
void storage__error(srv_http_response *resp, int status, int code);
/* Sets header `name` to a timestamp with 2 decimals. */
void storage__set_ts(srv_http_response *resp, const char *name, int64_t centis);
/* Sets X-Last-Modified and X-Weave-Timestamp. */
void storage__set_modified(sreq *r, int64_t last_modified, int64_t weave_ts);
/* Maps a database status to an answer (409 + Retry-After for CONFLICT, 503 else). */
void storage__db_error(sreq *r, picl_status st);

/* 1 when name is a valid collection name / BSO id. */
int storage__valid_coll(const char *name);
int storage__valid_id(const char *id, size_t len);

/* Timestamps are parsed and formatted by protocol/synctime.h only. */
#include "protocol/synctime.h"

/*
 * THE parser of BSO input (PUT and POST bodies).
 * storage__parse_bso: one JSON object into *out (strings copied; free with
 * storage__bso_clear).  On PICL_ERROR_ENCODING *reason says why (static).
 * storage__parse_bsos: a body of `ctype_newlines` (one JSON object per line)
 * or JSON (a list of objects) into items (caller frees with
 * storage__bsos_free) and `failed` (an object id -> reason, filled for the
 * invalid ones).  A body that is not JSON: PICL_ERROR_ENCODING (the caller
 * answers 400/6); JSON but not a list: PICL_ERROR_INVALID_ARGUMENT (400/8).
 * A JSON list whose records are all plain (ASCII strings with one-character
 * escapes, integers, null, no refusal) is parsed in one pass without
 * jansson; any other body goes whole through jansson and
 * storage__parse_bso, as storage__parse_bsos_json does (tests compare the
 * two: same items, same failed, same status).
 * storage__scan_json: counts, without building anything, the records (list
 * elements, or non-blank lines when newlines) and the JSON values of a body,
 * so that limits are checked before the parser allocates; returns 1 when
 * the body is a JSON list, 0 another value, -1 empty.  Not a validator.
 */
#define STORAGE_MAX_BSO_VALUES 16 /* an object + its at most 7 known fields, with room */
int storage__scan_json(const uint8_t *body, size_t len, int newlines, int64_t *records, int64_t *values);
picl_status storage__parse_bso(json_t *obj, const storage_limits *lim, sdb_bso *out, const char **reason);
picl_status storage__parse_bsos(const uint8_t *body, size_t len, int newlines, const storage_limits *lim,
                                sdb_bso **items, size_t *n, json_t *failed);
picl_status storage__parse_bsos_json(const uint8_t *body, size_t len, int newlines, const storage_limits *lim,
                                     sdb_bso **items, size_t *n, json_t *failed);
void storage__bso_clear(sdb_bso *b);
void storage__bsos_free(sdb_bso *items, size_t n);

static inline int64_t storage__max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* X-If-Modified-Since / X-If-Unmodified-Since for a read of a resource last
 * modified at m: 1 to go on, 0 when the 304/412 answer is set. */
int storage__read_preconditions(sreq *r, int64_t m, int64_t wts);
/* X-Weave-Quota-Remaining for a user at usage bytes (nothing without a quota). */
void storage__set_quota_header(sreq *r, int64_t usage);

/* The `ids` parameter: 1..100 valid ids into a malloc()ed array (free with
 * storage__free_ids); absent = none.  Returns 0 when it answered 400. */
int storage__parse_ids(sreq *r, char ***ids, size_t *n);
void storage__free_ids(char **ids, size_t n);

/* The read handlers (storage_read.c). */
void storage__get_coll(sreq *r, const char *coll);
void storage__get_item(sreq *r, const char *coll, const char *id);

/* The write handlers (storage_write.c). */
void storage__put_item(sreq *r, const char *coll, const char *id);
void storage__post_coll(sreq *r, const char *coll);

#endif
