/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_hardening.c -- the keyserver attacks of keyserver.md
 * section 9 against a real keyserver over HTTP: account pre-hijacking,
 * token lifetimes, check-then-act limits, mail bombing, /auth/start
 * throttling, the nonce cache share, stretching bounds, request smuggling,
 * the body cap of a shared server, log injection and file permissions. */
#include "testutil.h"
#include "testutil_ks.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/account.h"
#include "client/keyserver_client.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/srp.h"
#include "crypto/util.h"
#include "keyserver/ks_internal.h"
#include "protocol/bundle.h"
#include "protocol/tokens.h"

#define VICTIM "victim@example.org"
#define VICTIM_HEX "76696374696d406578616d706c652e6f7267"
#define PW_ATTACKER "attacker's password"
#define PW_VICTIM "victim's new password"

static tuks_srv srv;

/* ---- a server clock the tests move, and a record of the kA drawn ------- */

static int64_t clock_offset;
static uint8_t drawn_ka[8][32];
static int n_ka;
static pthread_mutex_t draw_mu = PTHREAD_MUTEX_INITIALIZER;

static int64_t fake_now(void *ctx)
{
    return (int64_t)time(NULL) + __atomic_load_n(&clock_offset, __ATOMIC_SEQ_CST);
}

static void advance(int64_t s) { __atomic_add_fetch(&clock_offset, s, __ATOMIC_SEQ_CST); }

static picl_status record_ka(void *ctx, const char *what, uint8_t *out, size_t len)
{
    if (strcmp(what, "kA") || len != 32)
        return PICL_ERROR_UNSUPPORTED; /* NSS draws it */
    picl_status rc = picl__random_bytes(out, len);
    pthread_mutex_lock(&draw_mu);
    if (rc == PICL_OK && n_ka < 8)
        memcpy(drawn_ka[n_ka++], out, 32);
    pthread_mutex_unlock(&draw_mu);
    return rc;
}

static void start(ks_config *cfg)
{
    clock_offset = 0;
    n_ka = 0;
    cfg->now = fake_now;
    cfg->random = record_ka;
    tuks_start(&srv, cfg);
}

static void setup(void)
{
    tu_nss_setup();
    ks_config cfg = {.threads = 16};
    start(&cfg);
}

static void teardown(void)
{
    tuks_stop(&srv);
    tu_nss_teardown();
}

/* restarts the server with another configuration */
static void restart(ks_config *cfg)
{
    tuks_stop(&srv);
    start(cfg);
}

static void assert_err(tuks_resp *r, long code, int errnum)
{
    ck_assert_msg(r->status == code, "status %ld, want %ld (body %s)", r->status, code,
                  r->body ? r->body : "");
    ck_assert_int_eq(json_integer_value(json_object_get(r->json, "errno")), errnum);
    tuks_resp_free(r);
}

static long post(const char *path, const char *body, tuks_resp *r)
{
    const char *h[] = {"Content-Type: application/json", NULL};
    return tuks_request(srv.port, "POST", path, h, body, strlen(body), r);
}

/* A Hawk request signed at the server's (moved) clock. */
static long hawk(const char *method, const char *target, const uint8_t token[32], int type, const char *body,
                 tuks_resp *r)
{
    return tuks_hawk(srv.port, method, target, token, type, body, fake_now(NULL), NULL, NULL, r);
}

static int64_t db_count(const char *sql) { return tuks_db_int(&srv, sql); /* SQLite or PostgreSQL */ }

/* The text of every mail waiting in the Maildir, concatenated. */
static char *all_mail(void)
{
    char dir[300], path[600];
    snprintf(dir, sizeof dir, "%s/mail/new", srv.dir);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        len += fread(out + len, 1, cap - len - 1, f);
        fclose(f);
    }
    closedir(d);
    out[len] = 0;
    return out;
}

/* ---- 4. account pre-hijacking ------------------------------------------- */

/* Step 2 of a forgotten password done by hand (a real verifier for pw), so
 * that the attacker can act between the code and the reset. */
static void finish_reset(const uint8_t art[32], const char *email, const char *pw)
{
    uint8_t stretched[32], srp_pw[32], unwrap[32], v[256], srp_salt[32], main_salt[32], zero[32];
    memset(zero, 0, sizeof zero);
    memset(srp_salt, 0x31, sizeof srp_salt);
    memset(main_salt, 0x32, sizeof main_salt);
    ck_assert_int_eq(
        picl__stretch(stretched, tuks_params(), tuks_params(), email, strlen(email), pw, strlen(pw), NULL),
        PICL_OK);
    ck_assert_int_eq(picl__main_kdf(srp_pw, unwrap, stretched, main_salt, 32), PICL_OK);
    ck_assert_int_eq(picl__srp_verifier(picl__srp_group_picl(), (const uint8_t *)email, strlen(email), srp_pw,
                                        32, srp_salt, 32, v, 256),
                     PICL_OK);
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    ck_assert_int_eq(picl__ksc_account_reset(c, art, zero, v, srp_salt, tuks_params(), main_salt), PICL_OK);
    picl__ksc_free(c);
}

static int email_verified(const uint8_t sess[32])
{
    tuks_resp r;
    ck_assert_int_eq(hawk("GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL, &r), 200);
    int v = json_is_true(json_object_get(r.json, "verified"));
    tuks_resp_free(&r);
    return v;
}

/* The attacker registers the victim's email first and keeps its tokens;
 * the victim later proves the mailbox with a reset code and resets. */
START_TEST(prehijack_account_gets_fresh_keys)
{
    tuks_account(&srv, VICTIM, PW_ATTACKER, 0, NULL); /* never verified */
    ck_assert_int_eq(n_ka, 1);
    uint8_t kft1[32], kft2[32], sess[32];
    tuks_session(&srv, VICTIM, PW_ATTACKER, kft1, sess);
    tuks_session(&srv, VICTIM, PW_ATTACKER, kft2, sess);

    /* the victim asks for a reset code and enters it */
    picl_ks_client *c;
    uint8_t ft[32], art[32];
    char code[32];
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    ck_assert_int_eq(picl__ksc_forgot_send(c, VICTIM, strlen(VICTIM), ft), PICL_OK);
    ck_assert(tuks_take_mail(&srv, VICTIM, "X-Recovery-Code", code, sizeof code));
    ck_assert_int_eq(picl__ksc_forgot_verify(c, ft, code, art), PICL_OK);
    picl__ksc_free(c);

    /* the code did not verify the email: the attacker's keyFetchToken gets
     * nothing (it used to get kA and wrapKb here) */
    tuks_resp r;
    ck_assert(!email_verified(sess));
    hawk("GET", "/v1/account/keys", kft1, PICL_TOKEN_KEY_FETCH, NULL, &r);
    assert_err(&r, 400, 104);

    /* the reset completes: verified now, every token revoked, and kA is
     * not the one drawn when the attacker created the account */
    finish_reset(art, VICTIM, PW_VICTIM);
    ck_assert_int_eq(n_ka, 2);
    ck_assert(memcmp(drawn_ka[0], drawn_ka[1], 32) != 0);
    hawk("GET", "/v1/account/keys", kft2, PICL_TOKEN_KEY_FETCH, NULL, &r);
    assert_err(&r, 401, 110);
    hawk("GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL, &r);
    assert_err(&r, 401, 110);
    ck_assert_int_eq(db_count("SELECT count(*) FROM tokens"), 0);

    picl_account a;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    ck_assert_int_eq(
        picl__account_login(c, VICTIM, strlen(VICTIM), PW_VICTIM, strlen(PW_VICTIM), tuks_params(), &a),
        PICL_OK);
    ck_assert(a.verified);
    ck_assert(a.have_keys);
    ck_assert(memcmp(a.ka, drawn_ka[1], 32) == 0); /* the fresh kA */
    ck_assert(memcmp(a.ka, drawn_ka[0], 32) != 0); /* not the attacker's account's */
    ck_assert(email_verified(a.session_token));
    /* a new key epoch: devices holding anything older know it */
    ck_assert_int_eq(hawk("GET", "/v1/account/classmap", a.session_token, PICL_TOKEN_SESSION, NULL, &r), 200);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "currentEpoch")), 2);
    tuks_resp_free(&r);
    picl__account_wipe(&a);
    /* the attacker's password is gone */
    ck_assert_int_eq(
        picl__account_login(c, VICTIM, strlen(VICTIM), PW_ATTACKER, strlen(PW_ATTACKER), tuks_params(), &a),
        PICL_ERROR_WRONG_PASSWORD);
    picl__ksc_free(c);
}
END_TEST

/* A verified account's reset keeps kA (class A survives a forgotten
 * password), and its reset code alone changes nothing. */
START_TEST(verified_account_reset_keeps_ka)
{
    tuks_account(&srv, VICTIM, PW_ATTACKER, 1, NULL);
    picl_ks_client *c;
    uint8_t ft[32];
    char code[32];
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    ck_assert_int_eq(picl__account_forgot_start(c, VICTIM, strlen(VICTIM), ft), PICL_OK);
    ck_assert(tuks_take_mail(&srv, VICTIM, "X-Recovery-Code", code, sizeof code));
    ck_assert_int_eq(picl__account_forgot_finish(c, ft, code, VICTIM, strlen(VICTIM), PW_VICTIM,
                                                 strlen(PW_VICTIM), tuks_params()),
                     PICL_OK);
    picl_account a;
    ck_assert_int_eq(
        picl__account_login(c, VICTIM, strlen(VICTIM), PW_VICTIM, strlen(PW_VICTIM), tuks_params(), &a),
        PICL_OK);
    ck_assert(a.have_keys);
    ck_assert(memcmp(a.ka, drawn_ka[0], 32) == 0);
    picl__account_wipe(&a);
    picl__ksc_free(c);
}
END_TEST

START_TEST(verification_mail_warns)
{
    tuks_account(&srv, VICTIM, PW_ATTACKER, 0, NULL);
    char *m = all_mail();
    ck_assert_msg(strstr(m, "if you did not create this PiCL account yourself, do NOT"), "%s", m);
    ck_assert(strstr(m, "enter this code"));
    ck_assert(strstr(m, "deleted within"));
    ck_assert(strstr(m, "48 hours"));
    free(m);
}
END_TEST

START_TEST(unverified_account_deleted_after_48h)
{
    tuks_account(&srv, VICTIM, PW_ATTACKER, 0, NULL);
    tuks_account(&srv, "kept@example.org", "pw", 1, NULL);
    tuks_resp r;
    advance(47 * 3600);
    tuks_account(&srv, "later@example.org", "pw", 0, NULL); /* sweeps: too early */
    ck_assert_int_eq(post("/v1/auth/start", "{\"email\":\"" VICTIM_HEX "\"}", &r), 200);
    tuks_resp_free(&r);
    advance(3600 + 61);
    tuks_account(&srv, "another@example.org", "pw", 0, NULL); /* sweeps */
    post("/v1/auth/start", "{\"email\":\"" VICTIM_HEX "\"}", &r);
    assert_err(&r, 400, 102);
    ck_assert_int_eq(db_count("SELECT count(*) FROM accounts"), 3);
    /* the verified one stays, and the owner of the address can register it */
    uint8_t auth[32];
    tuks_auth_token(&srv, "kept@example.org", "pw", auth);
    tuks_account(&srv, VICTIM, PW_VICTIM, 1, NULL);
}
END_TEST

/* ---- 7. token lifetimes ------------------------------------------------- */

START_TEST(tokens_expire_and_are_deleted)
{
    tuks_account(&srv, VICTIM, PW_VICTIM, 1, NULL);
    uint8_t auth[32], auth2[32], kft[32], sess[32], pair[64];
    tuks_session(&srv, VICTIM, PW_VICTIM, kft, sess);
    tuks_auth_token(&srv, VICTIM, PW_VICTIM, auth);
    tuks_auth_token(&srv, VICTIM, PW_VICTIM, auth2);
    tuks_resp r;
    /* password/change/start: an accountResetToken valid 15 minutes */
    ck_assert_int_eq(hawk("POST", "/v1/password/change/start", auth2, PICL_TOKEN_AUTH, "{}", &r), 200);
    picl_token_keys k;
    ck_assert_int_eq(picl__token_derive(&k, PICL_TOKEN_AUTH, auth2), PICL_OK);
    const char *bh = json_string_value(json_object_get(r.json, "bundle"));
    ck_assert_int_eq(
        picl__bundle_open_hex(pair, 64, k.request_key, PICL_BUNDLE_PASSWORD_CHANGE, bh, strlen(bh)), PICL_OK);
    tuks_resp_free(&r);

    /* authToken: 5 minutes */
    advance(301);
    hawk("POST", "/v1/session/create", auth, PICL_TOKEN_AUTH, "{}", &r);
    assert_err(&r, 401, 110);
    ck_assert_int_eq(db_count("SELECT count(*) FROM tokens WHERE type = 0"), 0);
    /* accountResetToken of change/start: 15 minutes */
    advance(900 - 301 + 1);
    hawk("POST", "/v1/account/reset", pair + 32, PICL_TOKEN_ACCOUNT_RESET, "{}", &r);
    assert_err(&r, 401, 110);
    /* keyFetchToken: 24 hours (at 23 h it still works) */
    advance(23 * 3600);
    ck_assert_int_eq(hawk("GET", "/v1/account/keys", pair, PICL_TOKEN_KEY_FETCH, NULL, &r), 200);
    tuks_resp_free(&r);
    advance(3600);
    hawk("GET", "/v1/account/keys", kft, PICL_TOKEN_KEY_FETCH, NULL, &r);
    assert_err(&r, 401, 110);
    /* the sessionToken lives on; expired rows are gone, not kept */
    advance(30 * 86400);
    ck_assert_int_eq(hawk("GET", "/v1/recovery_email/status", sess, PICL_TOKEN_SESSION, NULL, &r), 200);
    tuks_resp_free(&r);
    ck_assert_int_eq(db_count("SELECT count(*) FROM tokens"), 1);
    ck_assert_int_eq(db_count("SELECT count(*) FROM tokens WHERE expires = 0"), 1);
}
END_TEST

/* ---- 7. limits: checked and counted in one transaction ------------------- */

typedef struct guess {
    char body[1200];
    long status;
    int errnum;
    pthread_barrier_t *go;
} guess;

static void *send_guess(void *p)
{
    guess *g = p;
    tuks_resp r;
    pthread_barrier_wait(g->go);
    g->status = post("/v1/auth/finish", g->body, &r);
    g->errnum = (int)json_integer_value(json_object_get(r.json, "errno"));
    tuks_resp_free(&r);
    return NULL;
}

/* 13 wrong proofs at once against a limit of 10: exactly 10 are evaluated. */
START_TEST(concurrent_guesses_respect_login_limit)
{
    ks_config cfg = {.threads = 16, .login_max = 10};
    restart(&cfg);
    tuks_account(&srv, VICTIM, PW_VICTIM, 1, NULL);
    enum { N = 13 };
    guess g[N];
    pthread_t th[N];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    picl_srp_client *sc = NULL;
    uint8_t A[256];
    ck_assert_int_eq(picl__srp_client_new(picl__srp_group_picl(), &sc), PICL_OK);
    ck_assert_int_eq(picl__srp_client_A(sc, A, sizeof A), PICL_OK);
    char *ahex = tuks_hex(A, sizeof A);
    for (int i = 0; i < N; i++) {
        tuks_resp r;
        ck_assert_int_eq(post("/v1/auth/start", "{\"email\":\"" VICTIM_HEX "\"}", &r), 200);
        snprintf(g[i].body, sizeof g[i].body, "{\"srpToken\":\"%s\",\"A\":\"%s\",\"M\":\"%064d\"}",
                 json_string_value(json_object_get(r.json, "srpToken")), ahex, i + 1);
        tuks_resp_free(&r);
        g[i].go = &go;
    }
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, send_guess, &g[i]), 0);
    int wrong = 0, throttled = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        if (g[i].status == 400 && g[i].errnum == 103)
            wrong++;
        else if (g[i].status == 429 && g[i].errnum == 114)
            throttled++;
    }
    ck_assert_int_eq(wrong, 10);
    ck_assert_int_eq(throttled, 3);
    /* and now even the right password waits */
    tuks_resp r;
    post("/v1/auth/start", "{\"email\":\"" VICTIM_HEX "\"}", &r);
    assert_err(&r, 429, 114);
    free(ahex);
    picl__srp_client_free(sc);
    pthread_barrier_destroy(&go);
}
END_TEST

/* A right proof is not counted as a failure: after five good logins three
 * wrong ones are still evaluated under a limit of 3, then it bites. */
START_TEST(good_logins_are_not_counted)
{
    ks_config cfg = {.threads = 4, .login_max = 3};
    restart(&cfg);
    tuks_account(&srv, VICTIM, PW_VICTIM, 1, NULL);
    uint8_t auth[32];
    for (int i = 0; i < 5; i++)
        tuks_auth_token(&srv, VICTIM, PW_VICTIM, auth);
    picl_ks_client *c;
    picl_account a;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(picl__account_login(c, VICTIM, strlen(VICTIM), "wrong", 5, tuks_params(), &a),
                         PICL_ERROR_WRONG_PASSWORD);
    ck_assert_int_eq(
        picl__account_login(c, VICTIM, strlen(VICTIM), PW_VICTIM, strlen(PW_VICTIM), tuks_params(), &a),
        PICL_ERROR_BACKOFF);
    picl__ksc_free(c);
}
END_TEST

START_TEST(auth_start_throttled_per_account_and_address)
{
    ks_config cfg = {.threads = 4, .start_max = 5, .addr_start_max = 7, .limit_loopback = 1};
    restart(&cfg);
    tuks_account(&srv, VICTIM, PW_VICTIM, 1, NULL);
    tuks_account(&srv, "b@example.org", "pw", 1, NULL);
    tuks_resp r;
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(post("/v1/auth/start", "{\"email\":\"" VICTIM_HEX "\"}", &r), 200);
        tuks_resp_free(&r);
    }
    post("/v1/auth/start", "{\"email\":\"" VICTIM_HEX "\"}", &r);
    ck_assert_int_gt(strtol(r.retry_after, NULL, 10), 0);
    assert_err(&r, 429, 114);
    /* another account from the same address: two more, then the address is out */
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(post("/v1/auth/start", "{\"email\":\"62406578616d706c652e6f7267\"}", &r), 200);
        tuks_resp_free(&r);
    }
    post("/v1/auth/start", "{\"email\":\"62406578616d706c652e6f7267\"}", &r);
    assert_err(&r, 429, 114);
    /* the SRP sessions of abandoned logins go once they expire, not a day later */
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 7);
    advance(900);
    ck_assert_int_eq(post("/v1/auth/start", "{\"email\":\"" VICTIM_HEX "\"}", &r), 200);
    tuks_resp_free(&r);
    ck_assert_int_eq(tuks_srp_count(&srv, ""), 1);
}
END_TEST

START_TEST(resend_code_is_not_a_mail_bomb)
{
    tuks_account(&srv, VICTIM, PW_ATTACKER, 0, NULL);
    uint8_t kft[32], sess[32];
    tuks_session(&srv, VICTIM, PW_ATTACKER, kft, sess);
    tuks_resp r;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(hawk("POST", "/v1/recovery_email/resend_code", sess, PICL_TOKEN_SESSION, "{}", &r),
                         200);
        tuks_resp_free(&r);
    }
    for (int i = 0; i < 5; i++) {
        hawk("POST", "/v1/recovery_email/resend_code", sess, PICL_TOKEN_SESSION, "{}", &r);
        ck_assert_int_gt(json_integer_value(json_object_get(r.json, "retryAfter")), 3000);
        assert_err(&r, 429, 114);
    }
    ck_assert_int_eq(tuks_mail_count(&srv), 1 + 3);
    advance(3600);
    ck_assert_int_eq(hawk("POST", "/v1/recovery_email/resend_code", sess, PICL_TOKEN_SESSION, "{}", &r), 200);
    tuks_resp_free(&r);
    ck_assert_int_eq(tuks_mail_count(&srv), 1 + 4);
}
END_TEST

typedef struct sender {
    long status;
    pthread_barrier_t *go;
} sender;

static void *send_forgot(void *p)
{
    sender *x = p;
    tuks_resp r;
    pthread_barrier_wait(x->go);
    x->status = post("/v1/password/forgot/send_code", "{\"email\":\"" VICTIM_HEX "\"}", &r);
    tuks_resp_free(&r);
    return NULL;
}

START_TEST(concurrent_reset_mails_respect_limit)
{
    tuks_account(&srv, VICTIM, PW_VICTIM, 1, NULL);
    enum { N = 10 };
    sender x[N];
    pthread_t th[N];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    for (int i = 0; i < N; i++) {
        x[i].go = &go;
        ck_assert_int_eq(pthread_create(&th[i], NULL, send_forgot, &x[i]), 0);
    }
    int ok = 0, throttled = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ok += x[i].status == 200;
        throttled += x[i].status == 429;
    }
    ck_assert_int_eq(ok, 3);
    ck_assert_int_eq(throttled, N - 3);
    ck_assert_int_eq(tuks_mail_count(&srv), 3);
    pthread_barrier_destroy(&go);
}
END_TEST

/* ---- 7. the nonce cache: one account cannot fill it for everyone -------- */

START_TEST(nonce_cache_share_per_account)
{
    ks_config cfg = {.threads = 4, .nonce_cache_entries = 256}; /* 4 per account */
    restart(&cfg);
    tuks_account(&srv, VICTIM, PW_VICTIM, 1, NULL);
    tuks_account(&srv, "b@example.org", "pw", 1, NULL);
    uint8_t kft[32], s1[32], s2[32], other[32];
    tuks_session(&srv, VICTIM, PW_VICTIM, kft, s1);
    tuks_session(&srv, VICTIM, PW_VICTIM, kft, s2);
    tuks_session(&srv, "b@example.org", "pw", kft, other);
    advance(121); /* the nonces of those logins are no longer live */
    tuks_resp r;
    /* the share is the account's, whichever of its sessions signs */
    int ok = 0, busy = 0;
    for (int i = 0; i < 12; i++) {
        long st = hawk("GET", "/v1/account/devices", i % 2 ? s1 : s2, PICL_TOKEN_SESSION, NULL, &r);
        if (st == 200)
            ok++;
        else if (st == 503 && json_integer_value(json_object_get(r.json, "errno")) == 201)
            busy++;
        tuks_resp_free(&r);
    }
    ck_assert_int_eq(ok, 4);
    ck_assert_int_eq(busy, 8);
    /* everybody else still gets in */
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(hawk("GET", "/v1/account/devices", other, PICL_TOKEN_SESSION, NULL, &r), 200);
        tuks_resp_free(&r);
    }
}
END_TEST

/* ---- 7. stretching parameters: the spec's floor up to 4x it ------------- */

static char *create_body(const char *email_hex, long r1, long n, long r, long p, long r2)
{
    uint8_t vb[256];
    memset(vb, 0x11, sizeof vb);
    char *v = tuks_hex(vb, sizeof vb);
    char *b = malloc(4096);
    snprintf(b, 4096,
             "{\"email\":\"%s\",\"srp\":{\"type\":\"SRP-6a/SHA256/2048/v1\",\"verifier\":\"%s\","
             "\"salt\":\"%064x\"},\"passwordStretching\":{\"type\":\"PBKDF2/scrypt/PBKDF2/v1\","
             "\"PBKDF2_rounds_1\":%ld,\"scrypt_N\":%ld,\"scrypt_r\":%ld,\"scrypt_p\":%ld,"
             "\"PBKDF2_rounds_2\":%ld,\"salt\":\"%064x\"}}",
             email_hex, v, 7, r1, n, r, p, r2, 9);
    free(v);
    return b;
}

START_TEST(stretching_bounds_enforced)
{
    /* without the test switch the floor is the spec's (tuks_start keeps a
     * value that is already set) */
    tuks_stop(&srv);
    setenv("PICL_TEST_STRETCH_FLOOR", "off", 1);
    ks_config cfg = {.threads = 4};
    start(&cfg);
    setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 1);
    static const long cases[][5] = {
        {1000, 1024, 8, 1, 1000},    /* the tests' cheap parameters */
        {19999, 65536, 8, 1, 20000}, /* each one just below the floor */
        {20000, 32768, 8, 1, 20000},  {20000, 65536, 7, 1, 20000},
        {20000, 65536, 8, 1, 19999},  {80001, 65536, 8, 1, 20000}, /* each one just above 4x */
        {20000, 524288, 8, 1, 20000}, {20000, 65536, 33, 1, 20000},
        {20000, 65536, 8, 5, 20000},  {20000, 65536, 8, 1, 80001},
    };
    tuks_resp r;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const long *c = cases[i];
        char *b = create_body("6240632e64", c[0], c[1], c[2], c[3], c[4]);
        post("/v1/account/create", b, &r);
        free(b);
        assert_err(&r, 400, 107);
    }
    ck_assert_int_eq(tuks_mail_count(&srv), 0);
    ck_assert_int_eq(db_count("SELECT count(*) FROM accounts"), 0);
    /* the floor and 4x it are fine */
    char *b = create_body("6240632e64", 20000, 65536, 8, 1, 20000);
    ck_assert_int_eq(post("/v1/account/create", b, &r), 200);
    tuks_resp_free(&r);
    free(b);
    b = create_body("6340632e64", 80000, 262144, 32, 4, 80000);
    ck_assert_int_eq(post("/v1/account/create", b, &r), 200);
    tuks_resp_free(&r);
    free(b);
}
END_TEST

/* ---- HTTP glue: smuggling, body cap, log injection ---------------------- */

/* Sends raw bytes on a fresh connection and reads the answer's status
 * (0 when none came within wait_ms). */
static int raw_status(unsigned port, const char *req, size_t len, int wait_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(write(fd, req, len), (ssize_t)len);
    char buf[512];
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (got < sizeof buf - 1 && poll(&p, 1, wait_ms) == 1) {
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(buf, '\n', got))
            break;
    }
    close(fd);
    buf[got] = 0;
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = 0;
    return status;
}

START_TEST(request_smuggling_refused)
{
    static const char *const reqs[] = {
        "POST /v1/get_random_bytes HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
        "Content-Length: 40\r\n\r\n{}",
        "POST /v1/get_random_bytes HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 40\r\n\r\n{}",
        "POST /v1/get_random_bytes HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
        "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "POST /v1/get_random_bytes HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
        "Content-Length: 5\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++)
        ck_assert_int_eq(raw_status(srv.port, reqs[i], strlen(reqs[i]), 5000), 400);
    /* one length, or the same one twice, is fine */
    const char *ok = "POST /v1/get_random_bytes HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
                     "Connection: close\r\n\r\n{}";
    ck_assert_int_eq(raw_status(srv.port, ok, strlen(ok), 5000), 200);
    const char *twice = "POST /v1/get_random_bytes HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
                        "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
    ck_assert_int_eq(raw_status(srv.port, twice, strlen(twice), 5000), 200);
}
END_TEST

/* The keyserver mounted on a shared server with a 2 MiB default (as in
 * `picl server`) still refuses a 16 KiB+ body from the headers. */
START_TEST(body_cap_from_headers_when_mounted)
{
    srv_http_server *http = NULL;
    srv_http_config hc = {
        .listen = "127.0.0.1:0", .max_body = 2u * 1024u * 1024u + 4096u, .require_content_length = 1};
    ck_assert_int_eq(srv_http_server_new(&http, &hc), PICL_OK);
    ck_assert_int_eq(ks_server_mount(srv.ks, http, 1), PICL_OK);
    ck_assert_int_eq(srv_http_server_start(http), PICL_OK);
    unsigned port = srv_http_server_port(http);
    /* headers only: the body is never sent, so only a check made from the
     * headers can answer */
    const char *req = "POST /v1/account/create HTTP/1.1\r\nHost: a\r\n"
                      "Content-Type: application/json\r\nContent-Length: 16385\r\n\r\n";
    ck_assert_int_eq(raw_status(port, req, strlen(req), 5000), 413);
    tuks_resp r;
    char *big = malloc(20000);
    memset(big, ' ', 20000);
    big[0] = '{';
    big[19999] = '}';
    const char *h[] = {"Content-Type: application/json", NULL};
    tuks_request(port, "POST", "/v1/account/create", h, big, 20000, &r);
    free(big);
    assert_err(&r, 413, 113);
    srv_http_server_free(http);
}
END_TEST

static char logged[16][700];
static int n_logged;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void keep_log(void *ctx, const char *line)
{
    pthread_mutex_lock(&log_mu);
    if (n_logged < 16)
        snprintf(logged[n_logged++], sizeof logged[0], "%s", line);
    pthread_mutex_unlock(&log_mu);
}

START_TEST(log_lines_escape_the_request_target)
{
    ks_config cfg = {.threads = 2, .log = keep_log};
    n_logged = 0;
    restart(&cfg);
    /* raw escape, backspace and DEL bytes in the target (a terminal that
     * shows the log would run them), and a backslash */
    const char req[] = "GET /v1/x\x1b[2J\x08\x7f\\%0a HTTP/1.1\r\n"
                       "Host: a\r\nConnection: close\r\n\r\n";
    int st = raw_status(srv.port, req, sizeof req - 1, 5000);
    ck_assert_int_eq(st, 404);
    /* the glue logs a request once its answer is sent: give it 3 s */
    for (int i = 0; i < 300 && !__atomic_load_n(&n_logged, __ATOMIC_SEQ_CST); i++)
        usleep(10000);
    pthread_mutex_lock(&log_mu);
    ck_assert_int_eq(n_logged, 1);
    const char *l = logged[0];
    for (const char *p = l; *p; p++)
        ck_assert_msg((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f, "raw byte in %s", l);
    /* "<time> INFO 127.0.0.1 GET <target> 404 <n>ms" (http/log.h) */
    const char *rest = strstr(l, " INFO 127.0.0.1 GET /v1/x\\x1b[2J\\x08\\x7f\\x5c%0a 404 ");
    ck_assert_msg(rest == l + 24, "%s", l);
    ck_assert_str_eq(l + strlen(l) - 2, "ms");
    pthread_mutex_unlock(&log_mu);
}
END_TEST

/* ---- keyserver.db and the mail are the owner's only ---------------------- */

static unsigned mode_of(const char *dir, const char *name)
{
    char p[600];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    ck_assert_msg(stat(p, &sb) == 0, "%s", p);
    return sb.st_mode & 0777;
}

START_TEST(files_are_private)
{
    tuks_stop(&srv);
    mode_t old = umask(022);
    char dir[] = "/tmp/picl-ks-mode-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chmod(dir, 0755), 0);
    /* an existing world-readable database is fixed too */
    char path[300];
    snprintf(path, sizeof path, "%s/keyserver.db", dir);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_uint_eq(mode_of(dir, "keyserver.db"), 0644);
    ks_config cfg = {.listen = "127.0.0.1:0", .data_dir = dir, .threads = 2};
    ck_assert_int_eq(ks_server_new(&srv.ks, &cfg), PICL_OK);
    ck_assert_int_eq(ks_server_start(srv.ks), PICL_OK);
    srv.port = ks_server_port(srv.ks);
    snprintf(srv.base, sizeof srv.base, "http://127.0.0.1:%u", srv.port);
    snprintf(srv.dir, sizeof srv.dir, "%s", dir);
    tuks_account(&srv, VICTIM, PW_VICTIM, 0, NULL); /* a write: -wal and -shm exist */
    ck_assert_uint_eq(mode_of(dir, "keyserver.db"), 0600);
    ck_assert_uint_eq(mode_of(dir, "keyserver.db-wal"), 0600);
    ck_assert_uint_eq(mode_of(dir, "keyserver.db-shm"), 0600);
    ck_assert_uint_eq(mode_of(dir, "mail"), 0700);
    ck_assert_uint_eq(mode_of(dir, "mail/new"), 0700);
    char mdir[400];
    snprintf(mdir, sizeof mdir, "%s/mail/new", dir);
    DIR *d = opendir(mdir);
    struct dirent *e;
    int mails = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        ck_assert_uint_eq(mode_of(mdir, e->d_name), 0600);
        mails++;
    }
    closedir(d);
    ck_assert_int_eq(mails, 1);
    umask(old);
}
END_TEST

/* ---- the same through the real `picl server` process --------------------- */

/* `picl server` on an existing world-readable data directory, umask 022:
 * the keyserver's files are private, a 16 KiB+ body is refused from the
 * headers, and the log line of a hostile target is escaped. */
START_TEST(picl_server_process)
{
    const char *b = getenv("PICL_BUILD");
    char bin[600], dir[] = "/tmp/picl-ks-srv-XXXXXX", data[200], outf[200], logf[200];
    snprintf(bin, sizeof bin, "%s/picl", b && *b ? b : "build");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(outf, sizeof outf, "%s/out", dir);
    snprintf(logf, sizeof logf, "%s/log", dir);
    ck_assert_int_eq(mkdir(data, 0755), 0);
    ck_assert_int_eq(chmod(data, 0755), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        umask(022);
        if (!freopen(outf, "w", stdout) || !freopen(logf, "w", stderr))
            _exit(126);
        setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 1);
        execl(bin, "picl", "server", "--data", data, "--listen", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    tuks_srv ps;
    memset(&ps, 0, sizeof ps);
    for (int i = 0; i < 100 && !ps.port; i++) {
        usleep(100000);
        FILE *f = fopen(outf, "r");
        char line[512];
        const char *h;
        if (f && fgets(line, sizeof line, f) && (h = strstr(line, "http://127.0.0.1:")))
            ps.port = (unsigned)strtoul(h + 17, NULL, 10);
        if (f)
            fclose(f);
    }
    ck_assert_uint_gt(ps.port, 0);
    snprintf(ps.base, sizeof ps.base, "http://127.0.0.1:%u", ps.port);
    snprintf(ps.dir, sizeof ps.dir, "%s", data);

    tuks_account(&ps, VICTIM, PW_VICTIM, 1, NULL);
    ck_assert_uint_eq(mode_of(data, "keyserver.db"), 0600);
    ck_assert_uint_eq(mode_of(data, "keyserver.db-wal"), 0600);
    ck_assert_uint_eq(mode_of(data, "keyserver.db-shm"), 0600);
    const char *req = "POST /v1/account/create HTTP/1.1\r\nHost: a\r\n"
                      "Content-Type: application/json\r\nContent-Length: 16385\r\n\r\n";
    ck_assert_int_eq(raw_status(ps.port, req, strlen(req), 5000), 413);
    /* a keyserver route (its hooks log it), a terminal title escape in the query */
    const char evil[] = "GET /v1/account/keys?\x1b]0;owned\x07 HTTP/1.1\r\nHost: a\r\n"
                        "Connection: close\r\n\r\n";
    ck_assert_int_eq(raw_status(ps.port, evil, sizeof evil - 1, 5000), 401);

    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    FILE *f = fopen(logf, "r");
    ck_assert_ptr_nonnull(f);
    char log[8192];
    size_t n = fread(log, 1, sizeof log - 1, f);
    fclose(f);
    log[n] = 0;
    ck_assert_msg(strstr(log, " INFO 127.0.0.1 GET /v1/account/keys?\\x1b]0;owned\\x07 401 "), "%s", log);
    ck_assert_ptr_null(memchr(log, 0x1b, n));
    ck_assert_ptr_null(memchr(log, 0x07, n));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- secrets in jansson objects are wiped -------------------------------- */

START_TEST(json_secrets_wiped)
{
    /* a request or answer body released by the keyserver: its strings are
     * zeroed before jansson frees them (a reference kept here shows it) */
    json_t *body = json_pack("{s:s, s:{s:s}, s:[s]}", "code", "12345678", "srp", "verifier",
                             "0123456789abcdef", "list", "accountResetToken-hex");
    ck_assert_ptr_nonnull(body);
    json_t *code = json_incref(json_object_get(body, "code"));
    json_t *inner = json_incref(json_object_get(json_object_get(body, "srp"), "verifier"));
    json_t *item = json_incref(json_array_get(json_object_get(body, "list"), 0));
    ks_json_free(body);
    ck_assert_uint_eq(json_string_length(code), 8);
    ck_assert(picl__iszero_ct(json_string_value(code), 8));
    ck_assert(picl__iszero_ct(json_string_value(inner), 16));
    ck_assert(picl__iszero_ct(json_string_value(item), 21));
    json_decref(code);
    json_decref(inner);
    json_decref(item);
    /* a value still referenced elsewhere is left alone */
    json_t *shared = json_string("keep me");
    json_t *holder = json_pack("{s:O}", "v", shared);
    json_incref(holder);
    ks_json_free(holder); /* not the last reference: nothing wiped */
    ck_assert_str_eq(json_string_value(shared), "keep me");
    json_decref(holder);
    json_decref(shared);
    /* and jansson's own buffers go through a wiping free once a keyserver
     * exists (the server of the fixture) */
    json_malloc_t m = NULL;
    json_free_t f = NULL;
    json_get_alloc_funcs(&m, &f);
    ck_assert_ptr_nonnull(f);
    ck_assert(f != free);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_hardening");
    TCase *tc = tcase_create("hardening");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, prehijack_account_gets_fresh_keys);
    tcase_add_test(tc, verified_account_reset_keeps_ka);
    tcase_add_test(tc, verification_mail_warns);
    tcase_add_test(tc, unverified_account_deleted_after_48h);
    tcase_add_test(tc, tokens_expire_and_are_deleted);
    tcase_add_test(tc, concurrent_guesses_respect_login_limit);
    tcase_add_test(tc, good_logins_are_not_counted);
    tcase_add_test(tc, auth_start_throttled_per_account_and_address);
    tcase_add_test(tc, resend_code_is_not_a_mail_bomb);
    tcase_add_test(tc, concurrent_reset_mails_respect_limit);
    tcase_add_test(tc, nonce_cache_share_per_account);
    tcase_add_test(tc, stretching_bounds_enforced);
    tcase_add_test(tc, request_smuggling_refused);
    tcase_add_test(tc, body_cap_from_headers_when_mounted);
    tcase_add_test(tc, log_lines_escape_the_request_target);
    tcase_add_test(tc, files_are_private);
    tcase_add_test(tc, json_secrets_wiped);
    tcase_add_test(tc, picl_server_process);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
