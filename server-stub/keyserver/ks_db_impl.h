/* SPDX-License-Identifier: MPL-2.0 */
/* ks_db_impl.h -- the table of functions a keyserver database backend fills
 * (ks_db_sqlite.c, ks_db_pg.c); ks_db.c dispatches the ks_db.h calls. */
#ifndef PICL_KS_DB_IMPL_H
#define PICL_KS_DB_IMPL_H

#include "keyserver/ks_db.h"

/* Each backend defines struct ks_db_impl (its own connection state) in its
 * own file; ks_db.c only passes the pointer around.  Every entry keeps the
 * contract of the ks_db.h function of the same name. */
typedef struct ks_db_impl ks_db_impl;

typedef struct ks_db_ops {
    const char *name;
    /* target: a path or URL; pool: connections (a backend may ignore it);
     * *why: a static reason on failure (may stay NULL). */
    picl_status (*open)(ks_db_impl **out, const char *target, unsigned pool, const char **why);
    void (*close)(ks_db_impl *db);
    picl_status (*ping)(ks_db_impl *db);
    picl_status (*account_create)(ks_db_impl *db, ks_account *a);
    picl_status (*account_by_email)(ks_db_impl *db, const char *email, size_t len, ks_account *a);
    picl_status (*account_by_id)(ks_db_impl *db, int64_t id, ks_account *a);
    picl_status (*account_by_uid)(ks_db_impl *db, const uint8_t uid[KS_UID_BYTES], ks_account *a);
    picl_status (*account_set_verified)(ks_db_impl *db, int64_t id);
    picl_status (*account_reset)(ks_db_impl *db, int64_t id, const ks_reset *r);
    picl_status (*classmap_get)(ks_db_impl *db, int64_t account, ks_classmap *out);
    picl_status (*classmap_put)(ks_db_impl *db, int64_t account, int64_t version, const uint8_t hmac[32]);
    picl_status (*account_delete)(ks_db_impl *db, int64_t id);
    picl_status (*token_put)(ks_db_impl *db, const ks_token *t);
    picl_status (*token_get)(ks_db_impl *db, const uint8_t id[32], int type, int64_t now, ks_token *t);
    picl_status (*token_consume)(ks_db_impl *db, const uint8_t id[32]);
    picl_status (*token_delete_account)(ks_db_impl *db, int64_t account, int type);
    picl_status (*sessions)(ks_db_impl *db, int64_t account, int64_t now,
                            void (*fn)(void *ctx, const ks_token *t), void *ctx);
    picl_status (*forgot_guess)(ks_db_impl *db, const uint8_t id[32], const char code[8], int64_t now,
                                int *ok, int *tries_left);
    picl_status (*srp_put)(ks_db_impl *db, const uint8_t key[32], int64_t account, const uint8_t *b,
                           size_t blen, const uint8_t B[KS_VERIFIER_BYTES], int64_t now, int64_t expires);
    picl_status (*srp_take)(ks_db_impl *db, const uint8_t key[32], int64_t now, ks_srp_login *l);
    picl_status (*rate_take)(ks_db_impl *db, ks_rate *limits, size_t n, int64_t now, int *ok,
                             int64_t *retry_after);
    picl_status (*rate_refund)(ks_db_impl *db, const ks_rate *limits, size_t n);
    /* may be NULL: ks_db.c then runs account_by_email and rate_take */
    picl_status (*account_rate_take)(ks_db_impl *db, const char *email, size_t len, ks_account *a,
                                     void (*limits)(void *ctx, int64_t account, ks_rate *lim), void *ctx,
                                     ks_rate *lim, size_t n, int64_t now, int *ok, int64_t *retry_after);
    picl_status (*sweep)(ks_db_impl *db, int64_t now, int64_t unverified_before, int64_t rate_before);
    picl_status (*nonce_take)(ks_db_impl *db, const char *id, int64_t ts, const char *nonce, int64_t expires);
    picl_status (*node_add)(ks_db_impl *db, const char *url, int64_t capacity);
    picl_status (*nodes)(ks_db_impl *db, void (*fn)(void *ctx, const ks_node *n), void *ctx, int64_t *count);
    picl_status (*node_get)(ks_db_impl *db, const char *url, ks_node *out);
    picl_status (*node_drain)(ks_db_impl *db, const char *url, int64_t now, int64_t *moved);
    picl_status (*assign)(ks_db_impl *db, int64_t account, int64_t now, ks_assignment *out, int *created);
    picl_status (*assignment)(ks_db_impl *db, int64_t uid, ks_assignment *out);
    picl_status (*purgeable)(ks_db_impl *db, int64_t replaced_before,
                             int (*fn)(void *ctx, const ks_assignment *a), void *ctx);
    picl_status (*purged)(ks_db_impl *db, int64_t uid);
    picl_status (*session_touch)(ks_db_impl *db, const uint8_t id[32], int64_t now);
    picl_status (*session_rename)(ks_db_impl *db, const uint8_t id[32], const char *name, const char *type);
    picl_status (*session_destroy)(ks_db_impl *db, int64_t account, const char *device_id);
    picl_status (*event_add)(ks_db_impl *db, int64_t account, const ks_event *e);
    picl_status (*events)(ks_db_impl *db, int64_t account, void (*fn)(void *ctx, const ks_event *e),
                          void *ctx);
    picl_status (*recovery_put)(ks_db_impl *db, int64_t account, const char *id, const char *data);
    picl_status (*recovery_get)(ks_db_impl *db, int64_t account, char id[33], char *data, size_t cap);
    picl_status (*recovery_delete)(ks_db_impl *db, int64_t account);
    picl_status (*outbox_claim)(ks_db_impl *db, int64_t due, int64_t until, int64_t *accounts, size_t cap,
                                size_t *n);
    picl_status (*outbox_done)(ks_db_impl *db, int64_t account);
} ks_db_ops;

extern const ks_db_ops ks_db_sqlite_ops;
#ifdef PICL_TEST_HOOKS
int ks_db_sqlite_sync_level(ks_db_impl *db);                         /* ks_db_test_sync_level */
long long ks_db_sqlite_srp_count(ks_db_impl *db, const char *where); /* ks_db_test_srp_count */
#endif
extern const ks_db_ops ks_db_pg_ops;

#endif
