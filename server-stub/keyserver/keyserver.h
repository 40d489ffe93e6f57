/* SPDX-License-Identifier: MPL-2.0 */
/* keyserver.h -- the PiCL keyserver (keyserver.md): lifecycle, configuration
 * and the hooks used by tests, `picl-keyserver` and `picl server`. */
#ifndef PICL_KEYSERVER_H
#define PICL_KEYSERVER_H

#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "picl_status.h"

/*
 * Contract.  A ks_server owns an SQLite database <data_dir>/keyserver.db
 * (WAL, synchronous=FULL, schema version in table `meta`, migrated on open),
 * or with cfg->database a PostgreSQL database (ks_db.h: same schema rules,
 * a connection pool; several keyservers may share it), and a Maildir outbox
 * <data_dir>/mail/{tmp,new,cur}.  It answers every
 * endpoint of keyserver.md section 6 under /v1 (and /__heartbeat__), with the
 * JSON errors of section 7 and Hawk of section 8.  All state lives in the
 * ks_server object (no globals), so several may run in one process.
 *
 * Choices the spec leaves open (clients may rely on them):
 *  - a body that is valid JSON but not an object is 400/106, like invalid
 *    JSON; unknown keys in a body are ignored; emails travel as hex of
 *    1..255 bytes without control characters.
 *  - a Hawk request without an Authorization header, or with one that does
 *    not parse, is 401/109; an id that names no live token of the route's
 *    type (or a token of another type) is 401/110.
 *  - an unknown, expired or already used srpToken is 401/110.
 *  - a bad /account/reset bundle (MAC, length, hex) is 400/107, and the
 *    accountResetToken is consumed (like every single-use token, once its
 *    Hawk request verified).
 *  - /account/devices lists one {id, type, name} per live session; the id
 *    is a random 16-byte hex device id (never the token id); session/create
 *    accepts optional string fields "name" and "type" (<= 64 printable
 *    ASCII characters) for it.
 *  - /storage/token with --storage-node: the tokenlib uid is the account's
 *    integer row id; without it, the account's assignment on the
 *    least-loaded node (uid = assignment id, >= 2^32), or 503/201 when no
 *    node has room; fxa_uid = hex uid; fxa_kid = the request's
 *    X-KeyID header (printable ASCII, <= 128) or ""; hashed_fxa_uid =
 *    hex(HMAC-SHA256(HKDF(secret, "picl/keyserver/hashed-uid"), hex uid)[0:16]).
 *  - /password/forgot/resend_code answers {ttl, codeLength, tries} (the
 *    remaining ones) without forgotPasswordToken: the server never keeps a
 *    raw token, and the caller holds it already.  A wrong reset code is
 *    400/105 with the tries left in "tries"; a right one does NOT mark the
 *    email verified: the /account/reset its accountResetToken allows does
 *    (section 9, pre-hijacking), and for an account never verified before
 *    that reset also draws a fresh kA and wrapKb (epoch + 1).
 *  - section 9 class map anchor: GET/POST /v1/account/classmap; hmac is 32
 *    bytes of hex (answered lowercase), version an integer 1..2^53-1 (400/107
 *    otherwise); the epoch goes up by one when a reset draws a fresh wrapKb
 *    (zero wrapKb asked, or never-verified account), never otherwise.
 *  - glue errors: 404 and 405 are errno 999 with the same code, 411/112,
 *    413/113, 400/107 (bad path), 500/999.
 *  - rate limits: failed /auth/finish proofs per account (login_max per
 *    login_window_s) and per client address (addr_login_max; loopback
 *    addresses are exempt unless limit_loopback, since behind a local proxy
 *    one address is every user), checked at /auth/start and /auth/finish;
 *    /auth/start calls per account (start_max) and per address
 *    (addr_start_max) in the same window; /password/forgot/send_code and
 *    resend_code together, and /recovery_email/resend_code, per account
 *    (reset_max per reset_window_s); reset code guesses: 3 per
 *    forgotPasswordToken, after which it is deleted.  Every limit is checked
 *    and counted in one database transaction: a guess is counted before it
 *    is evaluated (and refunded when the proof is right), so n concurrent
 *    requests never pass a limit below n.  A throttled request is 429/114
 *    with Retry-After.
 *  - lifetimes: authToken 5 min, keyFetchToken 24 h, accountResetToken 15
 *    min, forgotPasswordToken 15 min, srpToken srp_token_ttl_s, sessionToken
 *    until destroyed or revoked.  An expired token answers 401/110 and its
 *    row is deleted; a sweep at most every minute deletes expired rows and
 *    accounts not verified within 48 hours.
 *  - stretching parameters outside [the spec's values, 4 x them] are 400/107
 *    at create and reset (test builds: PICL_TEST_STRETCH_FLOOR=cheap lowers
 *    the floor to 1000/1024/8/1/1000).
 *  - one Hawk nonce cache; an account holds at most 1/64 of it (beyond that
 *    its own requests are 503/201, nobody else's).
 *  - keyserver.db (and its -wal/-shm) is made 0600 when opened, whatever the
 *    umask; the log line escapes the request target (srv_http_log_escape).
 */

typedef struct ks_config {
    const char *listen;    /* "HOST:PORT" for ks_server_start (port 0 = any) */
    const char *data_dir;  /* existing directory (the Maildir outbox, and
                                  keyserver.db without database); may be NULL
                                  with database (then mail needs smtp_url) */
    const char *database;  /* NULL = SQLite <data_dir>/keyserver.db; else a
                                  postgresql:// URL (ks_db.h) */
    unsigned db_pool;      /* PostgreSQL connections, 0 = 8 */
    int64_t purge_grace_s; /* a replaced assignment's data is purged this
                                  long after it was replaced; 0 = 7 days */
    int64_t purge_every_s; /* the server's purge runs this often while it
                                  has nodes; 0 = 3600, < 0 = never */
    const uint8_t *secret; /* tokenlib secret shared with storage, >= 32 bytes
                                  (copied); may be NULL without storage_node */
    size_t secret_len;
    const char *storage_node;   /* e.g. "http://127.0.0.1:8001"; NULL = none */
    const char *smtp_url;       /* e.g. "smtp://localhost:25"; NULL = Maildir */
    const char *mail_from;      /* NULL = "picl@localhost" */
    int64_t hawk_skew_s;        /* 0 = 60 */
    int64_t srp_token_ttl_s;    /* 0 = 60 */
    int64_t login_max;          /* failed logins per account per window; 0 = 10 */
    int64_t login_window_s;     /* 0 = 900 */
    int64_t addr_login_max;     /* failed logins per client address; 0 = 4 x login_max */
    int limit_loopback;         /* 1: limit 127.0.0.0/8 and ::1 too (tests) */
    int64_t reset_max;          /* reset mails per account per window; 0 = 3 */
    int64_t reset_window_s;     /* 0 = 3600 */
    int64_t start_max;          /* /auth/start calls per account per login window;
                                  0 = 3 x login_max */
    int64_t addr_start_max;     /* /auth/start calls per client address; 0 = 4 x start_max */
    size_t nonce_cache_entries; /* live Hawk nonces held; 0 = 2^18 (one account: 1/64) */
    unsigned threads;           /* HTTP thread pool, 0 = 4 */
    unsigned timeout_s;         /* idle connection timeout, 0 = 60 */

    /* Optional hooks (NULL = none).  log receives one line per request,
     * without a newline (the library never prints).  now and random replace
     * the clock and NSS random for tests only: `what` names the value drawn
     * ("kA", "wrapKb", "b", "uid", "srpToken", "authToken", "sessionToken",
     * "keyFetchToken", "accountResetToken", "forgotPasswordToken",
     * "verifyCode", "recoveryCode", "deviceId", "random"); a hook returning
     * non-PICL_OK makes the server fall back to NSS.  "b" (the SRP server
     * secret) is asked as 256 bytes so a test can force any b < N (leading
     * zero bytes are dropped); NSS
     * draws 32. */
    /* Whole lines of http/log.h (one per request, errors, mail and node
     * events); NULL = quiet. */
    void (*log)(void *ctx, const char *line);
    int64_t (*now)(void *ctx);
    picl_status (*random)(void *ctx, const char *what, uint8_t *out, size_t len);
    void *hook_ctx;
} ks_config;

typedef struct ks_server ks_server;

/* Validates the config (secret >= 32 bytes when given, else
 * PICL_ERROR_INVALID_ARGUMENT), acquires NSS, opens or creates the database
 * and the Maildir.  Not listening yet.  The caller frees with ks_server_free(). */
picl_status ks_server_new(ks_server **out, const ks_config *cfg);

/* Adds the keyserver routes (/v1/..., and /__heartbeat__ unless
 * skip_heartbeat) to an HTTP server the caller owns and starts (for
 * `picl server`); the server must have max_body >= 16 KiB (the keyserver
 * enforces 16 KiB itself). */
picl_status ks_server_mount(ks_server *s, srv_http_server *http, int skip_heartbeat);

/* Creates its own HTTP server on cfg->listen (16 KiB body cap, Content-Length
 * required), mounts and serves.  PICL_ERROR_NETWORK when it cannot bind. */
picl_status ks_server_start(ks_server *s);

/* The port bound by ks_server_start, else 0. */
unsigned ks_server_port(const ks_server *s);

/* Stops its own HTTP server (if started), waits for requests in flight,
 * closes the database, wipes and frees.  NULL is allowed. */
void ks_server_free(ks_server *s);

/* ---- storage nodes (storage.md section 6) ---------------------------------
 *
 * Without storage_node the keyserver spreads users over the nodes of its
 * database: /storage/token gives the account's live assignment (made on the
 * least-loaded node when it has none): uid = the assignment id, api_endpoint
 * = node "/1.5/" uid, signed with that node's secret
 *   hex(HKDF(secret, no salt, info = "picl/node-secret/" node_url, 32))
 * (after the node's g-th drain, info ends in "#g": draining rotates it, so
 * the drained node, restarted with `node secret`, answers 401 to every token
 * made before).  With storage_node (one node) nothing of this is used: the
 * uid is the account id and the token is signed with the secret itself. */

/* The node admin calls (picl-keyserver node ...); the server need not be
 * started.  CONFLICT for a url already there, NOT_FOUND for an unknown one. */
picl_status ks_server_node_add(ks_server *s, const char *url, int64_t capacity);
/* The node's current secret (64 hex characters and a NUL) into out, a
 * secret the caller wipes.  INVALID_ARGUMENT without a keyserver secret. */
picl_status ks_server_node_secret(ks_server *s, const char *url, char out[65]);
/* Drains the node: *moved (may be NULL) = users who get a new node at
 * their next token request. */
picl_status ks_server_node_drain(ks_server *s, const char *url, int64_t *moved);
/* The purge job: for each assignment replaced more than purge_grace_s ago
 * or of a destroyed account, a Hawk-signed DELETE <node>/1.5/<uid> (a token
 * for that uid under the node's secret); answered 200 or 404, the
 * assignment is forgotten.  *purged / *failed (may be NULL) count them;
 * PICL_OK even when some failed (they are tried again next time). */
picl_status ks_server_purge(ks_server *s, int64_t *purged, int64_t *failed);
/* ks_migrate.c: copies, server-side, the records of the users of a drained
 * node to the nodes they get next (made now: a new assignment each, on the
 * least-loaded node), reading the old node with its current secret (run it
 * once the drained node was restarted with `node secret`, so that no device
 * writes there any more).  Every collection is copied (sortindex and
 * payload; TTLs and timestamps are the new node's), meta last, so that a
 * copy that fails half way leaves the new node without meta/global and the
 * user's devices start a fresh first sync there.  A user who has a new
 * assignment already (asked for a token since the drain) is left to the
 * devices.  *users / *records / *failed count; STATE for a node that is
 * not drained, NOT_FOUND for an unknown one. */
picl_status ks_server_node_migrate(ks_server *s, const char *url, int64_t *users, int64_t *records,
                                   int64_t *failed);

/* `picl-keyserver node ...` / `picl-keyserver purge` (main's argv: argv[1] is "node" or
 * "purge"): the exit status (0, 1, 2 usage, 5 node exists). */
int ks_admin_main(int argc, char **argv);

/* Reads a shared secret file into *secret (malloc()ed, caller frees with
 * picl__zfree), creating it first with 64 random hex characters and a
 * newline, mode 0600, when it does not exist.  The secret is the file's
 * TEXT without its trailing newlines, used as bytes (as Python tokenlib
 * uses its secret string, and as picl-storage reads the same file): 32..1024
 * printable ASCII characters, never hex-decoded.  PICL_ERROR_IO, or
 * PICL_ERROR_ENCODING for a file that is shorter, longer or not printable. */
picl_status ks_secret_load_or_create(const char *path, uint8_t **secret, size_t *len);

#endif
