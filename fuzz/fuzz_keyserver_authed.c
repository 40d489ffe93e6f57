/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_keyserver_authed.c -- libFuzzer target: the keyserver endpoints that
 * sit behind Hawk, with a valid signature by a fresh token of the type each
 * one takes, so the input reaches the handler's own reading of its JSON body
 * (fuzz_keyserver_http's unsigned requests stop at the Hawk check):
 *   byte 0 picks the endpoint (session/create, password/change/start,
 *          account/destroy with an authToken; session/destroy, resend_code,
 *          classmap, device, device/destroy, recoveryKey POST and DELETE
 *          with a sessionToken; account/reset and GET recoveryKey/<id> with
 *          an accountResetToken; forgot resend_code and verify_code with a
 *          forgotPasswordToken);
 *   byte 1 bit 0 signs for the verified account or the unverified one;
 *   the rest is the body (for GET recoveryKey/<id>, the id, percent-encoded).
 * An account a request destroyed is made again.  Every signed request must
 * get an answer, and never a 500: a malformed body is the client's error. */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crypto/nss.h"
#include "crypto/util.h"
#include "keyserver/ks_internal.h"
#include "protocol/hawk.h"
#include "protocol/tokens.h"
#include "fuzz_net.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ks_server *ks;
static unsigned port;
static char maildir[128];
static int64_t account[2]; /* [0] unverified, [1] verified */
static unsigned made;      /* accounts made so far (their emails differ) */

static const struct {
    const char *method, *path;
    int type; /* picl_token_type */
    int tail; /* the input is the path's last segment, not a body */
} EP[] = {
    {"POST", "/v1/session/create", PICL_TOKEN_AUTH, 0},
    {"POST", "/v1/password/change/start", PICL_TOKEN_AUTH, 0},
    {"POST", "/v1/account/destroy", PICL_TOKEN_AUTH, 0},
    {"POST", "/v1/session/destroy", PICL_TOKEN_SESSION, 0},
    {"POST", "/v1/recovery_email/resend_code", PICL_TOKEN_SESSION, 0},
    {"POST", "/v1/account/classmap", PICL_TOKEN_SESSION, 0},
    {"POST", "/v1/account/device", PICL_TOKEN_SESSION, 0},
    {"POST", "/v1/account/device/destroy", PICL_TOKEN_SESSION, 0},
    {"POST", "/v1/recoveryKey", PICL_TOKEN_SESSION, 0},
    {"DELETE", "/v1/recoveryKey", PICL_TOKEN_SESSION, 0},
    {"POST", "/v1/account/reset", PICL_TOKEN_ACCOUNT_RESET, 0},
    {"GET", "/v1/recoveryKey/", PICL_TOKEN_ACCOUNT_RESET, 1},
    {"POST", "/v1/password/forgot/resend_code", PICL_TOKEN_FORGOT_PASSWORD, 0},
    {"POST", "/v1/password/forgot/verify_code", PICL_TOKEN_FORGOT_PASSWORD, 0},
};
#define NEP (sizeof EP / sizeof EP[0])

/* A complete account (made as a creation commits it), verified or not. */
static int64_t make_account(int verified)
{
    ks_account a;
    memset(&a, 0, sizeof a);
    made++;
    a.email_len = (size_t)snprintf(a.email, sizeof a.email, "fuzz%u@example.org", made);
    for (size_t i = 0; i < sizeof a.uid; i++)
        a.uid[i] = (uint8_t)(made * 31 + i);
    memset(a.verify_code, 0x42, sizeof a.verify_code);
    memset(a.ka, 1, sizeof a.ka);
    memset(a.wrap_kb, 2, sizeof a.wrap_kb);
    memset(a.verifier, 3, sizeof a.verifier);
    memset(a.srp_salt, 4, sizeof a.srp_salt);
    memset(a.main_salt, 5, sizeof a.main_salt);
    a.params.pbkdf2_rounds_1 = 1000;
    a.params.scrypt_n = 1024;
    a.params.scrypt_r = 8;
    a.params.scrypt_p = 1;
    a.params.pbkdf2_rounds_2 = 1000;
    a.created = (int64_t)time(NULL);
    if (ks_db_account_create(ks->db, &a) != PICL_OK || ks_db_outbox_done(ks->db, a.id) != PICL_OK ||
        (verified && ks_db_account_set_verified(ks->db, a.id) != PICL_OK))
        __builtin_trap();
    return a.id;
}

/* Empties the Maildir now and then: resend_code mails every time. */
static void drain_mail(void)
{
    static unsigned n;
    if (++n % 256)
        return;
    DIR *d = opendir(maildir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", maildir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static char dir[64];
    static const uint8_t secret[] = "picl fuzz keyserver token secret, 32+ bytes";
    snprintf(dir, sizeof dir, "%s/picl-fuzz-ksa-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (picl__nss_acquire() != PICL_OK || !mkdtemp(dir))
        __builtin_trap();
    fz_remove_at_exit(dir);
    snprintf(maildir, sizeof maildir, "%s/mail/new", dir);
    ks_config c;
    memset(&c, 0, sizeof c);
    c.listen = "127.0.0.1:0";
    c.data_dir = dir;
    c.secret = secret;
    c.secret_len = sizeof secret - 1;
    c.storage_node = "http://127.0.0.1:9";
    c.threads = 2;
    c.purge_every_s = -1;
    /* the limits are not under test here: every request reaches its body */
    c.login_max = c.start_max = c.reset_max = 1LL << 40;
    if (ks_server_new(&ks, &c) != PICL_OK || ks_server_start(ks) != PICL_OK)
        __builtin_trap();
    port = ks_server_port(ks);
    account[0] = make_account(0);
    account[1] = make_account(1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 20000)
        return 0;
    unsigned e = data[0] % NEP, v = data[1] & 1;
    const uint8_t *body = data + 2;
    size_t blen = size - 2;
    ks_account a;
    picl_status st = ks_db_account_by_id(ks->db, account[v], &a);
    picl__wipe(&a, sizeof a);
    if (st == PICL_ERROR_NOT_FOUND) /* destroyed by an earlier input */
        account[v] = make_account((int)v);
    else if (st != PICL_OK)
        __builtin_trap();
    drain_mail();

    /* a fresh token of the endpoint's type for that account */
    uint8_t raw[32];
    int forgot = EP[e].type == PICL_TOKEN_FORGOT_PASSWORD;
    int64_t now = (int64_t)time(NULL);
    if (ks_token_issue(ks, EP[e].type, account[v], raw, NULL, NULL, forgot ? "12345678" : NULL,
                       forgot ? 3 : 0, 0, EP[e].type == PICL_TOKEN_SESSION ? 0 : now + 600, NULL) != PICL_OK)
        __builtin_trap();
    picl_token_keys k;
    char id[PICL_TOKEN_ID_HEX_BYTES + 1];
    if (picl__token_derive(&k, (picl_token_type)EP[e].type, raw) != PICL_OK)
        __builtin_trap();
    picl__token_id_hex(id, &k);

    /* the target: the path, or the path and the input as its last segment */
    static const char hx[] = "0123456789ABCDEF";
    size_t tcap = strlen(EP[e].path) + 3 * blen + 1;
    char *target = malloc(tcap);
    if (!target)
        __builtin_trap();
    size_t t = (size_t)snprintf(target, tcap, "%s", EP[e].path);
    if (EP[e].tail) {
        for (size_t i = 0; i < blen; i++) {
            uint8_t ch = body[i];
            if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                ch == '-' || ch == '_') {
                target[t++] = (char)ch;
            } else {
                target[t++] = '%';
                target[t++] = hx[ch >> 4];
                target[t++] = hx[ch & 15];
            }
        }
        blen = 0;
    }
    target[t] = 0;
    int has_body = !EP[e].tail && strcmp(EP[e].method, "DELETE");
    picl_hawk_request hr = {EP[e].method,
                            target,
                            "127.0.0.1",
                            port,
                            has_body ? "application/json" : NULL,
                            has_body ? (const char *)body : NULL,
                            has_body ? blen : 0};
    char *auth = NULL;
    if (picl__hawk_client_header(&auth, id, k.hmac_key, 32, &hr, now, NULL, NULL) != PICL_OK)
        __builtin_trap();
    picl__token_keys_wipe(&k);
    size_t cap = t + strlen(auth) + 512 + blen;
    char *req = malloc(cap);
    if (!req)
        __builtin_trap();
    int n = snprintf(req, cap,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\nAuthorization: %s\r\n",
                     EP[e].method, target, port, auth);
    if (has_body)
        n += snprintf(req + n, cap - (size_t)n,
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", blen);
    else
        n += snprintf(req + n, cap - (size_t)n, "Content-Length: 0\r\n\r\n");
    if (has_body) {
        memcpy(req + n, body, blen);
        n += (int)blen;
    }
    int status = fz_exchange(port, req, (size_t)n, 0, 5000);
    /* no answer within 5 s: once more (a busy machine can starve this
     * process that long; the same nonce again is answered 401, an answer) */
    if (status <= 0 && blen <= 16384)
        status = fz_exchange(port, req, (size_t)n, 0, 5000);
    free(req);
    free(auth);
    free(target);
    picl__wipe(raw, sizeof raw);
    /* a body over the 16 KiB cap may be cut off by a reset before the 413 */
    if ((status < 200 && blen <= 16384) || status == 500) {
        fprintf(stderr, "fuzz_keyserver_authed: %s %s answered %d\n", EP[e].method, EP[e].path, status);
        __builtin_trap();
    }
    return 0;
}
