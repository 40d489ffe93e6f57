/* SPDX-License-Identifier: MPL-2.0 */
/* ks_db.c -- picks the keyserver's database backend (SQLite for a path,
 * PostgreSQL for a postgresql:// URL) and dispatches the ks_db.h calls to
 * its table of functions (ks_db_impl.h). */
#include "keyserver/ks_db_impl.h"

#include <stdlib.h>
#include <string.h>

#include "crypto/util.h"

struct ks_db {
    const ks_db_ops *ops;
    ks_db_impl *impl;
};

/* A PostgreSQL connection URI (libpq accepts both schemes). */
static int is_pg_url(const char *target)
{
    return !strncmp(target, "postgresql://", 13) || !strncmp(target, "postgres://", 11);
}

picl_status ks_db_open(ks_db **out, const char *target, unsigned pool, const char **why)
{
    *out = NULL;
    if (why)
        *why = NULL;
    if (!target || !*target)
        return PICL_ERROR_INVALID_ARGUMENT;
    ks_db *db = calloc(1, sizeof *db);
    if (!db)
        return PICL_ERROR_NO_MEMORY;
    db->ops = is_pg_url(target) ? &ks_db_pg_ops : &ks_db_sqlite_ops;
    const char *reason = NULL;
    picl_status rc = db->ops->open(&db->impl, target, pool, &reason);
    if (why)
        *why = reason;
    if (rc != PICL_OK) {
        free(db);
        return rc;
    }
    *out = db;
    return PICL_OK;
}

void ks_db_close(ks_db *db)
{
    if (!db)
        return;
    db->ops->close(db->impl);
    free(db);
}

const char *ks_db_backend(const ks_db *db) { return db->ops->name; }

#ifdef PICL_TEST_HOOKS
int ks_db_test_sync_level(ks_db *db)
{
    return db->ops == &ks_db_sqlite_ops ? ks_db_sqlite_sync_level(db->impl) : -1;
}

long long ks_db_test_srp_count(ks_db *db, const char *where)
{
    return db->ops == &ks_db_sqlite_ops ? ks_db_sqlite_srp_count(db->impl, where) : -1;
}
#endif

picl_status ks_db_ping(ks_db *db) { return db->ops->ping(db->impl); }

picl_status ks_db_account_create(ks_db *db, ks_account *a) { return db->ops->account_create(db->impl, a); }

picl_status ks_db_account_by_email(ks_db *db, const char *email, size_t len, ks_account *a)
{
    return db->ops->account_by_email(db->impl, email, len, a);
}

picl_status ks_db_account_by_id(ks_db *db, int64_t id, ks_account *a)
{
    return db->ops->account_by_id(db->impl, id, a);
}

picl_status ks_db_account_by_uid(ks_db *db, const uint8_t uid[KS_UID_BYTES], ks_account *a)
{
    return db->ops->account_by_uid(db->impl, uid, a);
}

picl_status ks_db_account_set_verified(ks_db *db, int64_t id)
{
    return db->ops->account_set_verified(db->impl, id);
}

picl_status ks_db_account_reset(ks_db *db, int64_t id, const ks_reset *r)
{
    return db->ops->account_reset(db->impl, id, r);
}

picl_status ks_db_classmap_get(ks_db *db, int64_t account, ks_classmap *out)
{
    return db->ops->classmap_get(db->impl, account, out);
}

picl_status ks_db_classmap_put(ks_db *db, int64_t account, int64_t version, const uint8_t hmac[32])
{
    return db->ops->classmap_put(db->impl, account, version, hmac);
}

picl_status ks_db_account_delete(ks_db *db, int64_t id) { return db->ops->account_delete(db->impl, id); }

picl_status ks_db_token_put(ks_db *db, const ks_token *t) { return db->ops->token_put(db->impl, t); }

picl_status ks_db_token_get(ks_db *db, const uint8_t id[32], int type, int64_t now, ks_token *t)
{
    return db->ops->token_get(db->impl, id, type, now, t);
}

picl_status ks_db_token_consume(ks_db *db, const uint8_t id[32])
{
    return db->ops->token_consume(db->impl, id);
}

picl_status ks_db_token_delete_account(ks_db *db, int64_t account, int type)
{
    return db->ops->token_delete_account(db->impl, account, type);
}

picl_status ks_db_sessions(ks_db *db, int64_t account, int64_t now, void (*fn)(void *ctx, const ks_token *t),
                           void *ctx)
{
    return db->ops->sessions(db->impl, account, now, fn, ctx);
}

picl_status ks_db_forgot_guess(ks_db *db, const uint8_t id[32], const char code[8], int64_t now, int *ok,
                               int *tries_left)
{
    return db->ops->forgot_guess(db->impl, id, code, now, ok, tries_left);
}

picl_status ks_db_srp_put(ks_db *db, const uint8_t key[32], int64_t account, const uint8_t *b, size_t blen,
                          const uint8_t B[KS_VERIFIER_BYTES], int64_t now, int64_t expires)
{
    return db->ops->srp_put(db->impl, key, account, b, blen, B, now, expires);
}

picl_status ks_db_srp_take(ks_db *db, const uint8_t key[32], int64_t now, ks_srp_login *l)
{
    if (l->n > 4 || !l->limits)
        return PICL_ERROR_INVALID_ARGUMENT;
    l->ok = 0;
    l->retry_after = 0;
    l->blen = l->Blen = 0;
    memset(l->b, 0, sizeof l->b);
    memset(l->B, 0, sizeof l->B);
    memset(&l->account, 0, sizeof l->account);
    memset(l->lim, 0, sizeof l->lim);
    l->issued = 0;
    picl_status rc = db->ops->srp_take(db->impl, key, now, l);
    if (rc != PICL_OK) { /* nothing of a refused or failed take is left */
        l->ok = 0;
        l->issued = 0;
        l->blen = l->Blen = 0;
        picl__wipe(l->b, sizeof l->b);
        picl__wipe(&l->account, sizeof l->account);
        for (size_t i = 0; i < 4; i++)
            l->lim[i].event = 0;
    }
    return rc;
}

picl_status ks_db_rate_take(ks_db *db, ks_rate *limits, size_t n, int64_t now, int *ok, int64_t *retry_after)
{
    return db->ops->rate_take(db->impl, limits, n, now, ok, retry_after);
}

picl_status ks_db_account_rate_take(ks_db *db, const char *email, size_t len, ks_account *a,
                                    void (*limits)(void *ctx, int64_t account, ks_rate *lim), void *ctx,
                                    ks_rate *lim, size_t n, int64_t now, int *ok, int64_t *retry_after)
{
    *ok = 0;
    *retry_after = 0;
    if (db->ops->account_rate_take)
        return db->ops->account_rate_take(db->impl, email, len, a, limits, ctx, lim, n, now, ok, retry_after);
    picl_status rc = db->ops->account_by_email(db->impl, email, len, a);
    if (rc != PICL_OK)
        return rc;
    limits(ctx, a->id, lim);
    return db->ops->rate_take(db->impl, lim, n, now, ok, retry_after);
}

picl_status ks_db_rate_refund(ks_db *db, const ks_rate *limits, size_t n)
{
    return db->ops->rate_refund(db->impl, limits, n);
}

picl_status ks_db_sweep(ks_db *db, int64_t now, int64_t unverified_before, int64_t rate_before)
{
    return db->ops->sweep(db->impl, now, unverified_before, rate_before);
}

picl_status ks_db_nonce_take(ks_db *db, const char *id, int64_t ts, const char *nonce, int64_t expires)
{
    return db->ops->nonce_take(db->impl, id, ts, nonce, expires);
}

picl_status ks_db_node_add(ks_db *db, const char *url, int64_t capacity)
{
    return db->ops->node_add(db->impl, url, capacity);
}

picl_status ks_db_nodes(ks_db *db, void (*fn)(void *ctx, const ks_node *n), void *ctx, int64_t *count)
{
    return db->ops->nodes(db->impl, fn, ctx, count);
}

picl_status ks_db_node_get(ks_db *db, const char *url, ks_node *out)
{
    return db->ops->node_get(db->impl, url, out);
}

picl_status ks_db_node_drain(ks_db *db, const char *url, int64_t now, int64_t *moved)
{
    return db->ops->node_drain(db->impl, url, now, moved);
}

picl_status ks_db_assign(ks_db *db, int64_t account, int64_t now, ks_assignment *out, int *created)
{
    return db->ops->assign(db->impl, account, now, out, created);
}

picl_status ks_db_assignment(ks_db *db, int64_t uid, ks_assignment *out)
{
    return db->ops->assignment(db->impl, uid, out);
}

picl_status ks_db_purgeable(ks_db *db, int64_t replaced_before, int (*fn)(void *ctx, const ks_assignment *a),
                            void *ctx)
{
    return db->ops->purgeable(db->impl, replaced_before, fn, ctx);
}

picl_status ks_db_purged(ks_db *db, int64_t uid) { return db->ops->purged(db->impl, uid); }

picl_status ks_db_session_touch(ks_db *db, const uint8_t id[32], int64_t now)
{
    return db->ops->session_touch(db->impl, id, now);
}

picl_status ks_db_session_rename(ks_db *db, const uint8_t id[32], const char *name, const char *type)
{
    return db->ops->session_rename(db->impl, id, name, type);
}

picl_status ks_db_session_destroy(ks_db *db, int64_t account, const char *device_id)
{
    return db->ops->session_destroy(db->impl, account, device_id);
}

picl_status ks_db_event_add(ks_db *db, int64_t account, const ks_event *e)
{
    return db->ops->event_add(db->impl, account, e);
}

picl_status ks_db_events(ks_db *db, int64_t account, void (*fn)(void *ctx, const ks_event *e), void *ctx)
{
    return db->ops->events(db->impl, account, fn, ctx);
}

picl_status ks_db_recovery_put(ks_db *db, int64_t account, const char *id, const char *data)
{
    return db->ops->recovery_put(db->impl, account, id, data);
}

picl_status ks_db_recovery_get(ks_db *db, int64_t account, char id[33], char *data, size_t cap)
{
    return db->ops->recovery_get(db->impl, account, id, data, cap);
}

picl_status ks_db_recovery_delete(ks_db *db, int64_t account)
{
    return db->ops->recovery_delete(db->impl, account);
}

picl_status ks_db_outbox_claim(ks_db *db, int64_t due, int64_t until, int64_t *accounts, size_t cap,
                               size_t *n)
{
    *n = 0;
    if (until <= due || !cap)
        return PICL_ERROR_INVALID_ARGUMENT;
    return db->ops->outbox_claim(db->impl, due, until, accounts, cap, n);
}

picl_status ks_db_outbox_done(ks_db *db, int64_t account) { return db->ops->outbox_done(db->impl, account); }
