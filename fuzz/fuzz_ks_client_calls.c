/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_ks_client_calls.c -- libFuzzer target: the keyserver client's calls
 * that fuzz_client_responses leaves out, reading whatever a keyserver
 * answers.  A loopback server in this process gives every request the
 * input's bytes (after byte 0) as the raw HTTP answer, and byte 0 picks the
 * call: account/create (uid), auth/finish (the authToken bundle),
 * password/change/start (two tokens), forgot verify_code (the
 * accountResetToken), GET recoveryKey/<id> (recoveryData), account/reset
 * (plain and with a recovery key), classmap POST (409/123), email verify and
 * resend, forgot resend, session/destroy, account/destroy, and the generic
 * picl__ksc_call.  Every call ends with a documented status; a token that
 * did not come is zeroed, an answer that came is what the call promises. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client/keyserver_client.h"
#include "crypto/nss.h"
#include "fuzz_net.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fz_canned canned;
static char base[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (picl__nss_acquire() != PICL_OK || fz_canned_start(&canned) != 0)
        __builtin_trap();
    snprintf(base, sizeof base, "http://127.0.0.1:%u", canned.port);
    return 0;
}

static int zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= b[i];
    return acc == 0;
}

/* The statuses a keyserver call may end with (keyserver_client.h). */
static void ksc_status(picl_status st)
{
    switch (st) {
    case PICL_OK:
    case PICL_ERROR_ACCOUNT_EXISTS:
    case PICL_ERROR_UNKNOWN_ACCOUNT:
    case PICL_ERROR_WRONG_PASSWORD:
    case PICL_ERROR_UNVERIFIED:
    case PICL_ERROR_INVALID_CODE:
    case PICL_ERROR_TOKEN:
    case PICL_ERROR_BACKOFF:
    case PICL_ERROR_PROTOCOL:
    case PICL_ERROR_SERVER:
    case PICL_ERROR_NETWORK:
    case PICL_ERROR_UNSUPPORTED:
    case PICL_ERROR_CONFLICT:
    case PICL_ERROR_NOT_FOUND: /* 126 unknown device, on any call */
        return;
    default:
        __builtin_trap();
    }
}

static const picl_stretch_params PARAMS = {
    .pbkdf2_rounds_1 = 1000, .scrypt_n = 1024, .scrypt_r = 8, .scrypt_p = 1, .pbkdf2_rounds_2 = 1000};

static void call(picl_ks_client *c, unsigned which)
{
    static const uint8_t tok[32] = {1, 2, 3}, A[256] = {4}, M[32] = {5}, k[32] = {6}, salt[32] = {7},
                         verifier[256] = {8}, wkb[32] = {9};
    picl_status st;
    switch (which) {
    case 0: {
        char uid[33];
        memset(uid, 'x', sizeof uid);
        st = picl__ksc_account_create(c, "a@example.com", 13, verifier, salt, &PARAMS, salt, uid);
        if (st == PICL_OK && strlen(uid) != 32)
            __builtin_trap();
        break;
    }
    case 1: {
        uint8_t auth[32];
        st = picl__ksc_auth_finish(c, tok, A, M, k, auth);
        /* random bytes never pass the bundle's MAC */
        if (st == PICL_OK || !zero(auth, 32))
            __builtin_trap();
        break;
    }
    case 2: {
        uint8_t kft[32], reset[32];
        st = picl__ksc_password_change_start(c, tok, kft, reset);
        if (st != PICL_OK && (!zero(kft, 32) || !zero(reset, 32)))
            __builtin_trap();
        break;
    }
    case 3: {
        uint8_t reset[32];
        st = picl__ksc_forgot_verify(c, tok, "12345678", reset);
        if (st != PICL_OK && !zero(reset, 32))
            __builtin_trap();
        break;
    }
    case 4: {
        char *data = NULL;
        st = picl__ksc_recovery_key_get(c, tok, "0123456789abcdef0123456789abcdef", &data);
        if (st == PICL_OK && !data)
            __builtin_trap();
        free(data);
        break;
    }
    case 5:
        st = picl__ksc_account_reset(c, tok, wkb, verifier, salt, &PARAMS, salt);
        break;
    case 6:
        st = picl__ksc_account_reset_rk(c, tok, wkb, verifier, salt, &PARAMS, salt,
                                        "0123456789abcdef0123456789abcdef");
        break;
    case 7:
        st = picl__ksc_classmap_post(c, tok, 3,
                                     "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
        break;
    case 8:
        st = picl__ksc_email_verify(c, "00112233445566778899aabbccddeeff",
                                    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
        break;
    case 9:
        st = picl__ksc_email_resend(c, tok);
        break;
    case 10:
        st = picl__ksc_forgot_resend(c, tok, "a@example.com", 13);
        break;
    case 11:
        st = picl__ksc_session_destroy(c, tok);
        break;
    case 12:
        st = picl__ksc_account_destroy(c, tok);
        break;
    default: {
        json_t *out = NULL;
        st = picl__ksc_call(c, "GET", "/v1/account/events", tok, 1 /* sessionToken */, NULL, &out);
        if (st == PICL_OK && !json_is_object(out))
            __builtin_trap();
        json_decref(out);
        break;
    }
    }
    ksc_status(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fz_canned_set(&canned, data + 1, size - 1);
    picl_ks_client *c = NULL;
    if (picl__ksc_new(&c, base) != PICL_OK)
        __builtin_trap();
    call(c, data[0] % 14);
    picl__ksc_free(c);
    return 0;
}
