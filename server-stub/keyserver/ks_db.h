/* SPDX-License-Identifier: MPL-2.0 */
/* ks_db.h -- the keyserver's persistence: accounts, derived tokens, SRP
 * sessions, rate-limit events, storage nodes and assignments; SQLite (the
 * embedded default) or PostgreSQL behind one table of functions. */
#ifndef PICL_KS_DB_H
#define PICL_KS_DB_H

#include <stddef.h>
#include <stdint.h>

#include "picl_status.h"
#include "protocol/stretch.h"

/*
 * Backends (ks_db_impl.h): ks_db_open picks SQLite for a file path and
 * PostgreSQL for a postgresql:// (or postgres://) URL; both keep the
 * contract below and pass the same test suites.
 *
 * SQLite: one connection (WAL, synchronous=FULL, foreign keys on) behind one mutex:
 * every function is thread-safe and every multi-statement change runs in
 * one BEGIN IMMEDIATE transaction, so "consume a single-use token" is
 * decided by the database exactly once even under concurrent requests.
 * Two login writes commit without waiting for the disk (SQLite
 * synchronous=NORMAL, PostgreSQL synchronous_commit off): ks_db_srp_put
 * and ks_db_srp_take (with the login's authToken), each saying why.
 * Schema version lives in meta('schema_version'); ks_db_open creates or
 * migrates it.  Structs below are the caller's storage; secrets in them
 * (kA, wrapKb, verifier, keys, b) are the caller's to wipe.
 *
 * Errors: PICL_ERROR_DATABASE for SQLite failures, PICL_ERROR_NOT_FOUND when
 * a row is absent, PICL_ERROR_TOKEN for an expired/used token,
 * PICL_ERROR_ACCOUNT_EXISTS on a duplicate email, PICL_ERROR_NO_MEMORY.
 */

#define KS_EMAIL_MAX 255
#define KS_UID_BYTES 16
#define KS_VERIFIER_BYTES 256
#define KS_SCHEMA_VERSION 6
#define KS_NODE_URL_MAX 255

typedef struct ks_db ks_db;

typedef struct ks_account {
    int64_t id; /* integer row id: the storage uid */
    uint8_t uid[KS_UID_BYTES];
    char email[KS_EMAIL_MAX + 1]; /* raw bytes, NUL-terminated */
    size_t email_len;
    int verified;
    uint8_t verify_code[32];
    uint8_t ka[32];
    uint8_t wrap_kb[32];
    uint8_t verifier[KS_VERIFIER_BYTES];
    uint8_t srp_salt[32];
    uint8_t main_salt[32];
    picl_stretch_params params;
    int64_t epoch;   /* key epoch: 1 at creation, +1 per change of kB */
    int64_t created; /* unix seconds, set by the caller at creation */
} ks_account;

typedef struct ks_token {
    uint8_t id[32];
    int type; /* picl_token_type */
    int64_t account;
    uint8_t hmac_key[32];
    uint8_t request_key[32];
    int64_t created;
    int64_t expires;    /* 0 = never */
    char device_id[33]; /* sessions only, else "" */
    char device_name[65];
    char device_type[65];
    char code[9]; /* forgotPasswordToken: 8 digits, else "" */
    int tries;
    int mailbox;         /* accountResetToken from a reset code: it proved
                                     the mailbox (its reset verifies the email) */
    int64_t last_access; /* sessions: last authenticated request (0 = none) */
} ks_token;

/* The class map anchor of an account (keyserver.md section 9). */
typedef struct ks_classmap {
    int64_t version; /* 0 = none registered */
    uint8_t hmac[32];
    int has_hmac;
    int64_t epoch;         /* the epoch it was registered in (0 = none) */
    int64_t current_epoch; /* the account's epoch now */
} ks_classmap;

/* What a completed /account/reset writes (every pointer the caller's). */
typedef struct ks_reset {
    const uint8_t *verifier;             /* KS_VERIFIER_BYTES */
    const uint8_t *srp_salt, *main_salt; /* 32 each */
    const picl_stretch_params *params;
    const uint8_t *wrap_kb;    /* 32: the new wrapKb */
    int kb_changed;            /* wrap_kb is fresh (kB changes): epoch + 1 */
    const uint8_t *fresh_keys; /* 64 random bytes kA || wrapKb, used instead of
                                     (kA, wrap_kb) when the account was never verified */
    int mailbox;               /* the token proved the mailbox: mark verified */
} ks_reset;

/* Opens (creating/migrating) the database: target is a file path (SQLite)
 * or a postgresql:// URL (PostgreSQL: a pool of `pool` connections, 0 = 8;
 * the schema is created or migrated in one transaction under an advisory
 * lock, so it is never half-migrated and several processes may start at
 * once).  PICL_ERROR_DATABASE when the database cannot be reached (libpq's
 * connect_timeout: 10 s unless the URL says otherwise) or was written by a
 * newer keyserver; *why (may be NULL) receives a static one-line reason.
 * Caller closes. */
picl_status ks_db_open(ks_db **out, const char *target, unsigned pool, const char **why);
/* "sqlite" or "postgresql". */
const char *ks_db_backend(const ks_db *db);
void ks_db_close(ks_db *db);
/* PICL_OK when the database answers a query. */
picl_status ks_db_ping(ks_db *db);

/* Inserts a; sets a->id.  Duplicate email (or uid): ACCOUNT_EXISTS.  An
 * account that is not verified gets its verification mail's outbox row
 * (due at a->created + KS_OUTBOX_LEASE) in the SAME transaction: a crash
 * after the commit can lose the mail's delivery, never the mail. */
picl_status ks_db_account_create(ks_db *db, ks_account *a);
picl_status ks_db_account_by_email(ks_db *db, const char *email, size_t len, ks_account *a);
picl_status ks_db_account_by_id(ks_db *db, int64_t id, ks_account *a);
picl_status ks_db_account_by_uid(ks_db *db, const uint8_t uid[KS_UID_BYTES], ks_account *a);
picl_status ks_db_account_set_verified(ks_db *db, int64_t id);
/* A completed reset, in one transaction: replaces verifier, salts,
 * parameters and wrapKb (epoch + 1 when r->kb_changed); an account that was
 * never verified instead gets r->fresh_keys as kA and wrapKb and epoch + 1,
 * so no earlier holder of its tokens or keys learns the new ones; with
 * r->mailbox the account becomes verified.  Deletes every token and SRP
 * session of the account.  Keeps the class map anchor. */
picl_status ks_db_account_reset(ks_db *db, int64_t id, const ks_reset *r);
/* The anchor; NOT_FOUND without the account. */
picl_status ks_db_classmap_get(ks_db *db, int64_t account, ks_classmap *out);
/* Registers (version, hmac) in one transaction: PICL_OK when version is
 * above the stored one (stored with the current epoch) or equal with the
 * same hmac (compared in constant time; nothing changes); CONFLICT
 * otherwise; INVALID_ARGUMENT for version < 1; NOT_FOUND. */
picl_status ks_db_classmap_put(ks_db *db, int64_t account, int64_t version, const uint8_t hmac[32]);
/* Deletes the account and everything it owns.  NOT_FOUND when absent. */
picl_status ks_db_account_delete(ks_db *db, int64_t id);

picl_status ks_db_token_put(ks_db *db, const ks_token *t);
/* Fetches the live token with this id AND type; NOT_FOUND for none (or of
 * another type), TOKEN when expired at now. */
picl_status ks_db_token_get(ks_db *db, const uint8_t id[32], int type, int64_t now, ks_token *t);
/* Deletes the token: PICL_OK when this call deleted it, TOKEN when it was
 * already gone (someone else consumed it). */
picl_status ks_db_token_consume(ks_db *db, const uint8_t id[32]);
/* Deletes every token of `type` of the account (type < 0: all). */
picl_status ks_db_token_delete_account(ks_db *db, int64_t account, int type);
/* Calls fn for every live session of the account, in creation order. */
picl_status ks_db_sessions(ks_db *db, int64_t account, int64_t now, void (*fn)(void *ctx, const ks_token *t),
                           void *ctx);

/* One reset-code guess against the forgotPasswordToken `id`, atomically:
 * a right code (compared in constant time) deletes the token and sets
 * *ok = 1; a wrong one uses a try (deleting the token at 0) and sets *ok = 0
 * and *tries_left.  NOT_FOUND / TOKEN as for ks_db_token_get. */
picl_status ks_db_forgot_guess(ks_db *db, const uint8_t id[32], const char code[8], int64_t now, int *ok,
                               int *tries_left);

/* One limit: at most max events of key within window seconds. */
typedef struct ks_rate {
    char key[96]; /* "" = not applied */
    int64_t max, window;
    int count;     /* 1: this request is an event of key */
    int64_t event; /* out: the event added (for a refund), else 0 */
} ks_rate;

/* SRP sessions (srpToken hashed to key): b (1..256 bytes) is the server
 * secret and B (KS_VERIFIER_BYTES, public) the value auth/start sent with
 * it, kept until the session is taken or expires (expired sessions are
 * deleted by the next put).  A session is ephemeral login state (the
 * srpToken lives 60 s): with SQLite, whose file one process serves, it is
 * kept in that process's memory, so b never reaches the disk and a restart
 * of any kind forgets it; with PostgreSQL, whose database several servers
 * share, it is written without waiting for the disk (synchronous_commit
 * off), so a power failure may lose it.  A lost session is an unknown
 * srpToken: that login starts again. */
picl_status ks_db_srp_put(ks_db *db, const uint8_t key[32], int64_t account, const uint8_t *b, size_t blen,
                          const uint8_t B[KS_VERIFIER_BYTES], int64_t now, int64_t expires);

/* What ks_db_srp_take gives and takes (the caller's storage; b and account
 * are secret: the caller wipes them). */
typedef struct ks_srp_login {
    /* in: fills lim[0..n) for the session's account (called once, with the
     * account loaded, inside the transaction) */
    void (*limits)(void *ctx, int64_t account, ks_rate *lim);
    void *ctx;
    size_t n; /* <= 4 */
    /* out */
    ks_rate lim[4];
    int ok;              /* the limits passed (and were counted) */
    int64_t retry_after; /* when !ok */
    uint8_t b[256];
    size_t blen;
    uint8_t B[KS_VERIFIER_BYTES];
    size_t Blen; /* KS_VERIFIER_BYTES, or 0 for a session stored before schema v6 */
    ks_account account;
    /* in, optional: the login's authToken, stored in the take's transaction
     * for the session's account (issue->account set) when the session is
     * valid and the limits passed (out: issued = 1) */
    ks_token *issue;
    int issued;
} ks_srp_login;

/* Takes (deletes) the session and, in the same transaction, loads its
 * account and checks and counts the limits as ks_db_rate_take does: PICL_OK
 * with l->ok (0: a limit is reached, nothing counted, l->retry_after), b, B
 * and the account; TOKEN when the session is unknown, already taken or
 * expired; NOT_FOUND when its account is gone (no limit counted).  The
 * session is gone in every case but a database failure.
 *
 * With l->issue, the same transaction stores that token when the session
 * is valid and l->ok (l->issued = 1): the authToken of a login whose proof
 * the caller checks after the take.  Its raw value stays with the server
 * until the proof is right (it goes out sealed under the SRP key), so the
 * row is usable by nobody before then; when the proof is wrong the caller
 * deletes it (ks_db_token_consume), and one a crash leaves behind expires
 * unknown.  A right proof then refunds the counted guess
 * (ks_db_rate_refund).  A token that cannot be stored (its id taken) rolls
 * the whole take back: DATABASE, the session left as it was.
 *
 * Committed like the put, without waiting for the disk: a take a power
 * failure loses brings back a session whose srpToken only its client
 * holds, and whose key needs the password; the authToken lost with it
 * fails closed (the client's next call gets 401/110 and it logs in again).
 * An authToken lives 5 minutes and is spent once, on session/create or
 * password/change/start, whose own commit is durable and makes the
 * authToken's durable with it (the WAL is one sequence).  A kill -9 of the
 * process loses nothing. */
picl_status ks_db_srp_take(ks_db *db, const uint8_t key[32], int64_t now, ks_srp_login *l);

/* Rate-limit events are kept in memory (an attached database of the same
 * connection, so a take is still one transaction); a restart forgets them.
 * Checks every limit and, when none is reached, counts this request in
 * those with count = 1, all in ONE transaction (no check-then-act: n
 * concurrent requests never pass a limit of max < n).  *ok = 1 when it may
 * go on, else 0 and *retry_after the seconds until the first slot frees. */
picl_status ks_db_rate_take(ks_db *db, ks_rate *limits, size_t n, int64_t now, int *ok, int64_t *retry_after);
/* /auth/start's: the account by email and, in the same transaction, the
 * limits limits(ctx, its id, lim) fills in lim[0..n) checked and counted as
 * ks_db_rate_take does.  PICL_OK with *a, *ok and *retry_after; NOT_FOUND
 * without the account (nothing counted). */
picl_status ks_db_account_rate_take(ks_db *db, const char *email, size_t len, ks_account *a,
                                    void (*limits)(void *ctx, int64_t account, ks_rate *lim), void *ctx,
                                    ks_rate *lim, size_t n, int64_t now, int *ok, int64_t *retry_after);
/* Removes the events a take added (a login that succeeded is no failure). */
picl_status ks_db_rate_refund(ks_db *db, const ks_rate *limits, size_t n);
/* Housekeeping in one transaction: deletes expired tokens and SRP sessions,
 * rate events before rate_before, and every account never verified that
 * was created before unverified_before, with all it owns. */
picl_status ks_db_sweep(ks_db *db, int64_t now, int64_t unverified_before, int64_t rate_before);

/* The outbox of verification mails (schema v5): one row per account whose
 * mail is not known to be delivered; it goes with its account (ON DELETE
 * CASCADE).  Delivery is at least once: a crash between a delivery and
 * ks_db_outbox_done sends that mail again.  KS_OUTBOX_LEASE: the seconds a
 * claimed row (or a new one, which its request delivers) is left to its
 * deliverer before another may take it. */
#define KS_OUTBOX_LEASE 120
/* Claims, in one transaction, up to cap rows due at `due` (their next try
 * <= due), oldest first: each gets its next try at `until` (> due) and one
 * more attempt; their accounts' ids go to accounts[0 .. *n). */
picl_status ks_db_outbox_claim(ks_db *db, int64_t due, int64_t until, int64_t *accounts, size_t cap,
                               size_t *n);
/* The account's mail was delivered (or is not needed any more): its row
 * goes.  PICL_OK also when there was none. */
picl_status ks_db_outbox_done(ks_db *db, int64_t account);

/* Hawk nonces shared by every keyserver on one database: records (id, ts,
 * nonce) until expires; CONFLICT when a sibling process (or this one) saw
 * it already.  SQLite answers PICL_OK: one process serves a file, and its
 * in-memory nonce cache covers it.  Expired ones go with ks_db_sweep. */
picl_status ks_db_nonce_take(ks_db *db, const char *id, int64_t ts, const char *nonce, int64_t expires);

/* ---- storage nodes and assignments (storage.md section 6) ---------------- */

typedef struct ks_node {
    int64_t id;
    char url[KS_NODE_URL_MAX + 1];
    int64_t capacity, load; /* load: live assignments on it */
    int available, downed;
    int64_t generation; /* secret generation: +1 per drain */
} ks_node;

typedef struct ks_assignment {
    int64_t uid;     /* the storage uid: the assignment's id */
    int64_t account; /* 0 once the account is destroyed */
    char node[KS_NODE_URL_MAX + 1];
    int64_t generation;              /* of the node's secret */
    int64_t created_at, replaced_at; /* replaced_at 0 = live */
} ks_assignment;

/* Adds a node (available, not downed, load 0): CONFLICT when url is there
 * already, INVALID_ARGUMENT for an empty/too long url or capacity < 1. */
picl_status ks_db_node_add(ks_db *db, const char *url, int64_t capacity);
/* Calls fn for every node, in id order.  *count (may be NULL) = how many. */
picl_status ks_db_nodes(ks_db *db, void (*fn)(void *ctx, const ks_node *n), void *ctx, int64_t *count);
picl_status ks_db_node_get(ks_db *db, const char *url, ks_node *out);
/* Drains a node in one transaction: downed, not available, its secret
 * generation + 1, every live assignment on it replaced at now (its users
 * get a new node at their next token request), load 0.  *moved (may be
 * NULL) = the assignments replaced.  NOT_FOUND for an unknown url. */
picl_status ks_db_node_drain(ks_db *db, const char *url, int64_t now, int64_t *moved);
/* The account's live assignment, made in one transaction when it has none
 * (the available, non-downed node with the most spare capacity; ties: the
 * lowest id; the node's load + 1).  BACKOFF when no node can take it,
 * NOT_FOUND without the account.  *created (may be NULL) = 1 when new. */
picl_status ks_db_assign(ks_db *db, int64_t account, int64_t now, ks_assignment *out, int *created);
/* The assignment with this uid (live or replaced); NOT_FOUND. */
picl_status ks_db_assignment(ks_db *db, int64_t uid, ks_assignment *out);
/* Calls fn for every assignment whose data may go: replaced before
 * `replaced_before`, or of a destroyed account (any time).  fn returns 0
 * to go on.  Rows are collected first, so fn may call ks_db_purged. */
picl_status ks_db_purgeable(ks_db *db, int64_t replaced_before, int (*fn)(void *ctx, const ks_assignment *a),
                            void *ctx);
/* Forgets a purged assignment (its data is gone from the node). */
picl_status ks_db_purged(ks_db *db, int64_t uid);

/* ---- devices, security events, recovery key (keyserver.md section 9) ---- */

#define KS_EVENTS_KEPT 100
#define KS_RECOVERY_DATA_MAX 1024

typedef struct ks_event {
    char type[32]; /* "login", "password.reset", ... */
    int64_t time;
    char device[65];  /* device name, "" when none */
    char address[64]; /* client address, "" when none */
} ks_event;

/* Records the session's last access at now (no write when it is already now). */
picl_status ks_db_session_touch(ks_db *db, const uint8_t id[32], int64_t now);
/* Names the session with token id: NOT_FOUND when it is gone. */
picl_status ks_db_session_rename(ks_db *db, const uint8_t id[32], const char *name, const char *type);
/* Deletes the account's session whose device id is device_id (and so every
 * request it signs from then on): NOT_FOUND when there is none. */
picl_status ks_db_session_destroy(ks_db *db, int64_t account, const char *device_id);
/* Appends an event and keeps only the newest KS_EVENTS_KEPT of the account. */
picl_status ks_db_event_add(ks_db *db, int64_t account, const ks_event *e);
/* Calls fn for the account's events, newest first. */
picl_status ks_db_events(ks_db *db, int64_t account, void (*fn)(void *ctx, const ks_event *e), void *ctx);
/* Stores the account's recovery key (id: 32 hex; data: at most
 * KS_RECOVERY_DATA_MAX characters), replacing an earlier one. */
picl_status ks_db_recovery_put(ks_db *db, int64_t account, const char *id, const char *data);
/* The account's recovery key: id (33 bytes) and data (cap bytes);
 * NOT_FOUND when it has none. */
picl_status ks_db_recovery_get(ks_db *db, int64_t account, char id[33], char *data, size_t cap);
/* Deletes it: NOT_FOUND when there was none. */
picl_status ks_db_recovery_delete(ks_db *db, int64_t account);

#ifdef PICL_TEST_HOOKS
/* Test builds only: the SQLite connection's PRAGMA synchronous (2 = FULL,
 * 1 = NORMAL), -1 for PostgreSQL -- what every write not named above must
 * find after a login. */
int ks_db_test_sync_level(ks_db *db);
/* Test builds only: `SELECT count(*) FROM mem.srp_sessions` + where (a
 * condition, or "") on the SQLite connection's in-memory sessions; -1 for
 * PostgreSQL (its table is read with SQL). */
long long ks_db_test_srp_count(ks_db *db, const char *where);
#endif

/* Called by a backend, on the request's thread, when the storage under the
 * database fails (full: 1 for a full disk, 0 for an I/O error; msg the
 * database's words): the request is then answered 503 + Retry-After and the
 * log line names the cause and the place (keyserver.c). */
void ks_db_note_fault(int full, const char *msg);

#endif
