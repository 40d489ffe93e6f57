/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_ks.h -- keyserver test helpers: an in-process server on a free
 * loopback port with a temporary data directory, raw and Hawk-signed HTTP
 * requests, and the Maildir outbox reader. */
#ifndef PICL_TESTUTIL_KS_H
#define PICL_TESTUTIL_KS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "keyserver/keyserver.h"
#include "protocol/stretch.h"

typedef struct tuks_srv {
    ks_server *ks;
    char dir[256]; /* temporary data directory (removed by tuks_stop) */
    unsigned port;
    char base[64];   /* "http://127.0.0.1:PORT" */
    char pgdb[64];   /* PICL_TEST_BACKEND=postgresql: its fresh database
                          (dropped by tuks_stop), else "" */
    char dburl[192]; /* that database's URL, else "" */
} tuks_srv;

/* Starts a keyserver on 127.0.0.1:0 in a fresh temporary directory.  cfg
 * (may be NULL) supplies limits and hooks; listen and data_dir are set
 * here, and with PICL_TEST_BACKEND=postgresql (testutil_pg.h) database is a
 * fresh PostgreSQL database unless cfg names one.  Aborts the test on
 * failure. */
void tuks_start(tuks_srv *t, const ks_config *cfg);
void tuks_stop(tuks_srv *t);

/* The cheap stretching parameters every test account uses (also the floor
 * the test clients accept). */
const picl_stretch_params *tuks_params(void);

typedef struct tuks_resp {
    long status;  /* 0 when the exchange failed */
    json_t *json; /* parsed body or NULL */
    char *body;
    size_t len;
    char retry_after[32]; /* header value or "" */
    char timestamp[32];   /* Timestamp header or "" */
} tuks_resp;

/* A raw request: headers is a NULL-terminated list of "Name: value" (may be
 * NULL); body NULL = none.  Returns out->status. */
long tuks_request(unsigned port, const char *method, const char *target, const char *const *headers,
                  const char *body, size_t bodylen, tuks_resp *out);

/* A Hawk-signed request with the token's credentials (type: picl_token_type).
 * body NULL = none (no hash); ts 0 = now; nonce NULL = random.  signed_body,
 * when not NULL, is what the MAC covers instead of body (to test tampering). */
long tuks_hawk(unsigned port, const char *method, const char *target, const uint8_t token[32], int type,
               const char *body, int64_t ts, const char *nonce, const char *signed_body, tuks_resp *out);

void tuks_resp_free(tuks_resp *r);

/* Takes (reads and deletes) the newest mail to `to` in the server's Maildir
 * that carries `header`; copies the header's value into out.  Returns 1 when
 * found, else 0. */
int tuks_take_mail(const tuks_srv *t, const char *to, const char *header, char *out, size_t cap);

/* Number of mails waiting in <dir>/mail/new. */
int tuks_mail_count(const tuks_srv *t);

/* Creates an account with tuks_params() (and verifies it from the Maildir
 * when verify); uid (may be NULL) receives the hex uid. */
void tuks_account(const tuks_srv *t, const char *email, const char *pw, int verify, char *uid);

/* Runs auth/start..auth/finish with the password: the authToken. */
void tuks_auth_token(const tuks_srv *t, const char *email, const char *pw, uint8_t auth[32]);

/* session/create with a fresh authToken: keyFetchToken and sessionToken. */
void tuks_session(const tuks_srv *t, const char *email, const char *pw, uint8_t kft[32], uint8_t session[32]);

/* The integer in the first column of the first row of sql (a count) in the
 * server's database, SQLite file or PostgreSQL alike (sql must suit both).
 * Aborts the test when the query fails. */
long long tuks_db_int(const tuks_srv *t, const char *sql);

/* The number of SRP sessions the server holds that match where (a SQL
 * condition on key, account, b, b_public, expires, or ""): with SQLite
 * those in the server's memory (test builds' ks_db_test_srp_count), with
 * PostgreSQL the rows of its table. */
long long tuks_srp_count(const tuks_srv *t, const char *where);

/* hex of len bytes into a malloc()ed string. */
char *tuks_hex(const void *p, size_t len);

#endif
