/* SPDX-License-Identifier: MPL-2.0 */
/* test_storage_auth.c -- the storage server's authentication over HTTP:
 * tokenlib tokens (uid, node, expiry, grace, tampering) and Hawk (MAC over
 * the raw target, payload hash, skew, replay); refusals change nothing;
 * the token cache (key context, nonce digests, eviction) decides alike. */
#include "storage_fixture.h"
#include "testutil.h"

#include <sys/wait.h>

static void put_ok(const char *path, const char *body)
{
    tu_resp r = sf_req("PUT", path, body);
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
}

/* Sends method target with credentials c (NULL = none); returns the status. */
static long status_with(const tu_cred *c, const char *method, const char *target, tu_req *o)
{
    tu_req d = {0};
    if (!o)
        o = &d;
    o->cred = c;
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, method, SF.base, target, o), 0);
    long st = r.status;
    if (st == 401) {
        char *w = tu_resp_header(&r, "WWW-Authenticate");
        ck_assert_ptr_nonnull(w);
        free(w);
        ck_assert_str_eq(r.body, "0");
    }
    tu_resp_free(&r);
    return st;
}

START_TEST(test_auth_rejections)
{
    ck_assert_int_eq(status_with(&SF.cred, "GET", "/1.5/42/info/collections", NULL), 200);
    ck_assert_int_eq(status_with(NULL, "GET", "/1.5/42/info/collections", NULL), 401);
    /* a token for another uid */
    ck_assert_int_eq(status_with(&SF.cred, "GET", "/1.5/43/info/collections", NULL), 401);
    ck_assert_int_eq(status_with(&SF.cred, "GET", "/1.5/abc/info/collections", NULL), 401);
    tu_cred other;
    /* another node */
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, "http://127.0.0.1:1", SF_UID, 3600);
    ck_assert_int_eq(status_with(&other, "GET", "/1.5/42/info/collections", NULL), 401);
    tu_cred_free(&other);
    /* another secret */
    static const uint8_t bad[] = "another-secret-0123456789abcdef-0123456789";
    tu_mint(&other, bad, sizeof bad - 1, SF.node, SF_UID, 3600);
    ck_assert_int_eq(status_with(&other, "GET", "/1.5/42/info/collections", NULL), 401);
    tu_cred_free(&other);
    /* expired long ago: refused everywhere; recently: only /info/collections */
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, SF.node, SF_UID, -3600);
    ck_assert_int_eq(status_with(&other, "GET", "/1.5/42/info/collections", NULL), 401);
    tu_cred_free(&other);
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, SF.node, SF_UID, -10);
    ck_assert_int_eq(status_with(&other, "GET", "/1.5/42/info/collections", NULL), 200);
    ck_assert_int_eq(status_with(&other, "GET", "/1.5/42/storage/tabs", NULL), 401);
    ck_assert_int_eq(status_with(&other, "GET", "/1.5/42/info/quota", NULL), 401);
    tu_cred_free(&other);
    /* tampered token: one character changed (the key stays the original's) */
    tu_cred t = {strdup(SF.cred.token), strdup(SF.cred.key)};
    t.token[10] = t.token[10] == 'A' ? 'B' : 'A';
    ck_assert_int_eq(status_with(&t, "GET", "/1.5/42/info/collections", NULL), 401);
    tu_cred_free(&t);
    /* a wrong key: bad MAC */
    t.token = strdup(SF.cred.token);
    t.key = strdup("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    ck_assert_int_eq(status_with(&t, "GET", "/1.5/42/info/collections", NULL), 401);
    tu_cred_free(&t);
    /* MAC over another resource */
    tu_req o = {.sign_target = "/1.5/42/info/quota"};
    ck_assert_int_eq(status_with(&SF.cred, "GET", "/1.5/42/info/collections", &o), 401);
    /* stale timestamp */
    tu_req s = {.hawk_ts_offset = -600};
    ck_assert_int_eq(status_with(&SF.cred, "GET", "/1.5/42/info/collections", &s), 401);
    /* a replayed nonce */
    tu_req n1 = {.hawk_nonce = "fixed-nonce-1"};
    ck_assert_int_eq(status_with(&SF.cred, "GET", "/1.5/42/info/collections", &n1), 200);
    tu_req n2 = {.hawk_nonce = "fixed-nonce-1"};
    ck_assert_int_eq(status_with(&SF.cred, "GET", "/1.5/42/info/collections", &n2), 401);
    /* malformed Authorization */
    static const char *const h[] = {"Authorization: Hawk id=\"x\"", NULL};
    tu_req m = {.headers = h};
    ck_assert_int_eq(status_with(NULL, "GET", "/1.5/42/info/collections", &m), 401);
}
END_TEST

START_TEST(test_auth_rejection_changes_nothing)
{
    put_ok("/storage/tabs/a", "{\"payload\":\"x\"}");
    char *before = sf_snapshot();
    tu_cred other;
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, SF.node, 43, 3600);
    tu_req o = {.ctype = "application/json", .body = "{\"payload\":\"evil\"}", .len = 18};
    ck_assert_int_eq(status_with(&other, "PUT", "/1.5/42/storage/tabs/a", &o), 401);
    ck_assert_int_eq(status_with(&other, "DELETE", "/1.5/42/storage", NULL), 401);
    tu_cred_free(&other);
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, SF.node, SF_UID, -10);
    ck_assert_int_eq(status_with(&other, "DELETE", "/1.5/42/storage/tabs", NULL), 401);
    tu_cred_free(&other);
    /* another node */
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, "http://127.0.0.1:1", SF_UID, 3600);
    ck_assert_int_eq(status_with(&other, "PUT", "/1.5/42/storage/tabs/a", &o), 401);
    tu_cred_free(&other);
    /* a tampered token */
    tu_cred t = {strdup(SF.cred.token), strdup(SF.cred.key)};
    t.token[20] = t.token[20] == 'x' ? 'y' : 'x';
    ck_assert_int_eq(status_with(&t, "PUT", "/1.5/42/storage/tabs/a", &o), 401);
    ck_assert_int_eq(status_with(&t, "DELETE", "/1.5/42", NULL), 401);
    tu_cred_free(&t);
    /* 101 ids in a DELETE */
    char many[1200] = "/storage/tabs?ids=";
    for (int i = 0; i < 101; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%sa%d", i ? "," : "", i);
    tu_resp r = sf_req("DELETE", many, NULL);
    sf_expect(&r, 400, 17);
    tu_resp_free(&r);
    char *after = sf_snapshot();
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
}
END_TEST

START_TEST(test_hawk_payload_hash)
{
    const char *body = "{\"payload\":\"hashed\"}";
    tu_req o = {.ctype = "application/json", .body = body, .len = strlen(body), .hawk_hash = 1};
    ck_assert_int_eq(status_with(&SF.cred, "PUT", "/1.5/42/storage/tabs/h", &o), 200);
    /* text/plain bodies are JSON too, and hashed with their own type */
    tu_req q = {.ctype = "text/plain", .body = body, .len = strlen(body), .hawk_hash = 1};
    ck_assert_int_eq(status_with(&SF.cred, "PUT", "/1.5/42/storage/tabs/h", &q), 200);
    static const char *const h[] = {"Content-Type: application/json", NULL};
    tu_req w = {.ctype = NULL, .body = body, .len = strlen(body), .hawk_hash = 1, .headers = h};
    /* signed as "" content type but sent as application/json */
    ck_assert_int_eq(status_with(&SF.cred, "PUT", "/1.5/42/storage/tabs/h", &w), 401);
}
END_TEST

START_TEST(test_raw_target_is_signed)
{
    /* The id "a b/c" travels percent-encoded; the MAC covers the encoded form. */
    tu_resp r = sf_req("PUT", "/storage/tabs/a%20b%2Fc?unused=%41", "{\"payload\":\"p\"}");
    sf_expect(&r, 200, -1);
    tu_resp_free(&r);
    r = sf_req("GET", "/storage/tabs", NULL);
    ck_assert_str_eq(r.body, "[\"a b/c\"]");
    tu_resp_free(&r);
}
END_TEST

/* Once a token is cached (with its key in an HMAC context and its nonce
 * digests), every decision is the one of a first request: exact statuses
 * for a wrong MAC (first, before any good request), a good request after a
 * failed one, a MAC over another resource, stale timestamps, a replayed
 * nonce, the same nonce under a second token of the user (accepted: nonces
 * are per token) and another user's token. */
START_TEST(test_cached_token_decisions)
{
    const char *t = "/1.5/42/info/collections";
    tu_cred wrong = {strdup(SF.cred.token), strdup("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")};
    tu_cred t2, other;
    tu_mint(&t2, SF_SECRET, SF_SECRET_LEN, SF.node, SF_UID, 3600);
    tu_mint(&other, SF_SECRET, SF_SECRET_LEN, SF.node, 43, 3600);
    for (int round = 0; round < 3; round++) {
        char nonce[32];
        snprintf(nonce, sizeof nonce, "cached-nonce-%d", round);
        ck_assert_int_eq(status_with(&wrong, "GET", t, NULL), 401);
        ck_assert_int_eq(status_with(&SF.cred, "GET", t, NULL), 200);
        ck_assert_int_eq(status_with(&wrong, "GET", t, NULL), 401);
        ck_assert_int_eq(status_with(&SF.cred, "GET", t, NULL), 200);
        tu_req o = {.sign_target = "/1.5/42/info/quota"};
        ck_assert_int_eq(status_with(&SF.cred, "GET", t, &o), 401);
        tu_req s1 = {.hawk_ts_offset = -600}, s2 = {.hawk_ts_offset = 600};
        ck_assert_int_eq(status_with(&SF.cred, "GET", t, &s1), 401);
        ck_assert_int_eq(status_with(&SF.cred, "GET", t, &s2), 401);
        tu_req n = {.hawk_nonce = nonce};
        ck_assert_int_eq(status_with(&SF.cred, "GET", t, &n), 200);
        ck_assert_int_eq(status_with(&SF.cred, "GET", t, &n), 401);
        ck_assert_int_eq(status_with(&t2, "GET", t, &n), 200);
        ck_assert_int_eq(status_with(&t2, "GET", t, &n), 401);
        ck_assert_int_eq(status_with(&other, "GET", t, NULL), 401);
        ck_assert_int_eq(status_with(&other, "GET", t, &n), 401);
        ck_assert_int_eq(status_with(&other, "GET", "/1.5/43/info/collections", &n), 200);
        ck_assert_int_eq(status_with(&other, "GET", "/1.5/43/info/collections", &n), 401);
        /* a body: its hash is checked through the cached context too */
        const char *body = "{\"payload\":\"cached\"}";
        tu_req h = {.ctype = "application/json", .body = body, .len = strlen(body), .hawk_hash = 1};
        ck_assert_int_eq(status_with(&SF.cred, "PUT", "/1.5/42/storage/tabs/c", &h), 200);
        static const char *const ct[] = {"Content-Type: application/json", NULL};
        tu_req w = {.ctype = NULL, .body = body, .len = strlen(body), .hawk_hash = 1, .headers = ct};
        ck_assert_int_eq(status_with(&SF.cred, "PUT", "/1.5/42/storage/tabs/c", &w), 401);
    }
    tu_cred_free(&wrong);
    tu_cred_free(&t2);
    tu_cred_free(&other);
}
END_TEST

/* More tokens than the token cache holds (2 048): the ones evicted are
 * verified again and served, a wrong key is still refused, and a nonce
 * seen before the eviction is still a replay. */
START_TEST(test_token_cache_eviction)
{
    enum { N = 2300 };
    tu_cred *c = calloc(N, sizeof *c);
    ck_assert_ptr_nonnull(c);
    const char *t = "/1.5/42/info/collections";
    for (int i = 0; i < N; i++)
        tu_mint(&c[i], SF_SECRET, SF_SECRET_LEN, SF.node, SF_UID, 3600);
    tu_req n = {.hawk_nonce = "before-eviction"};
    ck_assert_int_eq(status_with(&c[0], "GET", t, &n), 200);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(status_with(&c[i], "GET", t, NULL), 200);
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(status_with(&c[i], "GET", t, NULL), 200);
        tu_cred wrong = {strdup(c[i].token), strdup("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")};
        ck_assert_int_eq(status_with(&wrong, "GET", t, NULL), 401);
        tu_cred_free(&wrong);
    }
    ck_assert_int_eq(status_with(&c[0], "GET", t, &n), 401);
    for (int i = 0; i < N; i++)
        tu_cred_free(&c[i]);
    free(c);
}
END_TEST

/* A full nonce cache refuses (503 + Retry-After), never accepts: here 64
 * nonces, 2 per user; 32 users fill their shares (the third request of each
 * is 503), then a new user is refused too, and a replay is still a replay
 * (401).  picl-storage --nonce-cache takes 1024 to 2^24. */
START_TEST(test_nonce_cache_full_refuses)
{
    storage_config c;
    memset(&c, 0, sizeof c);
    c.nonce_cache_entries = 64;
    sf_setup_with(&c);
    enum { USERS = 33 };
    tu_cred u[USERS];
    char target[64];
    for (int i = 0; i < USERS; i++)
        tu_mint(&u[i], SF_SECRET, SF_SECRET_LEN, SF.node, 100 + i, 3600);
    for (int i = 0; i < USERS; i++) {
        snprintf(target, sizeof target, "/1.5/%d/info/collections", 100 + i);
        tu_req first = {.hawk_nonce = "first"};
        int admitted = i < USERS - 1 ? 2 : 0;
        for (int k = 0; k < 3; k++) {
            tu_resp r;
            tu_req o = {.cred = &u[i], .hawk_nonce = k == 0 ? first.hawk_nonce : NULL};
            ck_assert_int_eq(tu_http(&r, "GET", SF.base, target, &o), 0);
            ck_assert_int_eq(r.status, k < admitted ? 200 : 503);
            if (r.status == 503) {
                char *ra = tu_resp_header(&r, "Retry-After");
                ck_assert_ptr_nonnull(ra);
                free(ra);
            }
            tu_resp_free(&r);
        }
    }
    /* user 100's first nonce again: a replay, not a capacity question */
    tu_req again = {.hawk_nonce = "first"};
    ck_assert_int_eq(status_with(&u[0], "GET", "/1.5/100/info/collections", &again), 401);
    for (int i = 0; i < USERS; i++)
        tu_cred_free(&u[i]);

    const char *b = getenv("PICL_BUILD");
    ck_assert_ptr_nonnull(b);
    char cmd[512];
    static const char *const bad[] = {"1023", "16777217", "x", "-5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s/picl-storage --listen 127.0.0.1:0 --data %s --secret-file /dev/null --nonce-cache %s "
                 ">/dev/null 2>&1",
                 b, SF.dir, bad[i]);
        int rc = system(cmd);
        ck_assert(WIFEXITED(rc));
        ck_assert_int_eq(WEXITSTATUS(rc), 2);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("storage_auth");
    TCase *tc = tcase_create("auth");
    tcase_add_checked_fixture(tc, sf_setup, sf_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_auth_rejections);
    tcase_add_test(tc, test_auth_rejection_changes_nothing);
    tcase_add_test(tc, test_hawk_payload_hash);
    tcase_add_test(tc, test_raw_target_is_signed);
    tcase_add_test(tc, test_cached_token_decisions);
    tcase_add_test(tc, test_token_cache_eviction);
    suite_add_tcase(s, tc);
    tc = tcase_create("capacity");
    tcase_add_checked_fixture(tc, NULL, sf_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_nonce_cache_full_refuses);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
