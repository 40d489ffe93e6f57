/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_client_responses.c -- libFuzzer target: what a storage server or a
 * keyserver answers, as the clients read it.  A loopback server in this
 * process gives every request the input's bytes (after byte 0) as the raw
 * HTTP answer -- status line, headers (X-Last-Modified, X-Weave-Records,
 * X-Weave-Next-Offset, X-Weave-Backoff, Retry-After, X-Weave-Timestamp, ...)
 * and body -- and byte 0 picks the client call that reads it (storage
 * client: info, limits, one page, every page, the sync download, one item,
 * put, post, delete; keyserver client: auth/start, session/create,
 * account/keys, storage/token, classmap, email status, devices, forgot).
 * Every call ends with a documented status, its outputs empty on failure. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client/keyserver_client.h"
#include "client/storage_client.h"
#include "crypto/nss.h"
#include "fuzz_net.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fz_canned canned;
static char base[64], endpoint[96];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (picl__nss_acquire() != PICL_OK || fz_canned_start(&canned) != 0)
        __builtin_trap();
    snprintf(base, sizeof base, "http://127.0.0.1:%u", canned.port);
    snprintf(endpoint, sizeof endpoint, "%s/1.5/42", base);
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

/* The statuses a storage call may end with (storage_client.h). */
static void stc_status(picl_status st)
{
    switch (st) {
    case PICL_OK:
    case PICL_ERROR_TOKEN:
    case PICL_ERROR_NOT_FOUND:
    case PICL_ERROR_CONFLICT:
    case PICL_ERROR_BACKOFF:
    case PICL_ERROR_QUOTA:
    case PICL_ERROR_TOO_LARGE:
    case PICL_ERROR_INVALID_ARGUMENT:
    case PICL_ERROR_SERVER:
    case PICL_ERROR_NETWORK:
    case PICL_ERROR_PROTOCOL:
        return;
    default:
        __builtin_trap();
    }
}

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

static void storage_call(unsigned which)
{
    picl_stc *c = NULL;
    if (picl__stc_new(&c, endpoint, "fuzz-id", "fuzz-key") != PICL_OK)
        __builtin_trap();
    picl_status st;
    json_t *out = (json_t *)1;
    switch (which) {
    case 0:
        st = picl__stc_info(c, "collections", -1, &out);
        if (st != PICL_OK && out)
            __builtin_trap();
        json_decref(out);
        break;
    case 1: {
        picl_stc_limits lim;
        st = picl__stc_limits(c, &lim);
        if (st == PICL_OK && (lim.max_post_records < 1 || lim.max_post_bytes < 1))
            __builtin_trap();
        break;
    }
    case 2: {
        picl_stc_query q = {.newer = -1,
                            .older = -1,
                            .full = 1,
                            .limit = 10,
                            .if_modified_since = -1,
                            .if_unmodified_since = -1};
        char *next = (char *)1;
        st = picl__stc_get(c, "bookmarks", &q, &out, &next);
        if (st != PICL_OK && (out || next))
            __builtin_trap();
        if (st == PICL_OK && out && !json_is_array(out))
            __builtin_trap();
        json_decref(out);
        free(next);
        break;
    }
    case 3: {
        picl_stc_query q = {.newer = -1,
                            .older = -1,
                            .full = 1,
                            .limit = 5,
                            .if_modified_since = -1,
                            .if_unmodified_since = -1};
        st = picl__stc_get_all(c, "bookmarks", &q, 100, &out);
        if (st != PICL_OK && out)
            __builtin_trap();
        json_decref(out);
        break;
    }
    case 4: {
        int64_t listed = -7;
        st = picl__stc_download(c, "bookmarks", 0, 100, &out, &listed);
        if (st != PICL_OK && out)
            __builtin_trap();
        /* a cursor only ever moves to a listing's X-Last-Modified */
        if (st == PICL_OK && (listed < 0 || !json_is_array(out)))
            __builtin_trap();
        picl__json_zdecref(out);
        break;
    }
    case 5:
        st = picl__stc_get_item(c, "bookmarks", "abc", &out);
        if (st != PICL_OK && out)
            __builtin_trap();
        json_decref(out);
        break;
    case 6: {
        json_t *bso = json_pack("{s:s, s:s}", "id", "abc", "payload", "x");
        int64_t mod = -1;
        st = picl__stc_put(c, "bookmarks", "abc", bso, -1, &mod);
        json_decref(bso);
        break;
    }
    case 7: {
        json_t *bsos =
            json_pack("[{s:s, s:s}, {s:s, s:s}]", "id", "a", "payload", "x", "id", "b", "payload", "y");
        picl_stc_post_result r;
        memset(&r, 0, sizeof r);
        st = picl__stc_post(c, "bookmarks", bsos, -1, &r);
        if (st == PICL_OK && (!json_is_array(r.success) || !json_is_object(r.failed)))
            __builtin_trap();
        picl__stc_post_result_clear(&r);
        json_decref(bsos);
        break;
    }
    default: {
        const char *ids[] = {"a", "b"};
        int64_t mod = -1;
        st = picl__stc_delete(c, "bookmarks", ids, 2, -1, &mod);
        break;
    }
    }
    stc_status(st);
    picl__stc_free(c);
}

static void keyserver_call(unsigned which)
{
    static const uint8_t tok[32] = {1, 2, 3};
    picl_ks_client *c = NULL;
    if (picl__ksc_new(&c, base) != PICL_OK)
        __builtin_trap();
    picl_status st;
    switch (which) {
    case 0: {
        picl_ksc_auth_start a;
        memset(&a, 0x55, sizeof a);
        st = picl__ksc_auth_start(c, "a@example.com", 13, &a);
        if (st != PICL_OK && !zero(&a, sizeof a))
            __builtin_trap();
        break;
    }
    case 1: {
        uint8_t kft[32], sess[32];
        char uid[33];
        int verified = -1;
        st = picl__ksc_session_create(c, tok, kft, sess, uid, &verified);
        if (st != PICL_OK && (!zero(kft, 32) || !zero(sess, 32)))
            __builtin_trap();
        break;
    }
    case 2: {
        uint8_t ka[32], wkb[32];
        st = picl__ksc_account_keys(c, tok, ka, wkb);
        /* random bytes never pass the bundle's MAC */
        if (st == PICL_OK || !zero(ka, 32) || !zero(wkb, 32))
            __builtin_trap();
        break;
    }
    case 3: {
        json_t *creds = (json_t *)1;
        st = picl__ksc_storage_token(c, tok, &creds);
        if (st != PICL_OK && creds)
            __builtin_trap();
        picl__json_zdecref(creds);
        break;
    }
    case 4: {
        picl_ksc_classmap m;
        st = picl__ksc_classmap_get(c, tok, &m);
        if (st == PICL_OK && (m.current_epoch < 1 || (m.version && strlen(m.hmac) != 64)))
            __builtin_trap();
        break;
    }
    case 5: {
        char email[256];
        int verified = -1;
        st = picl__ksc_email_status(c, tok, email, &verified);
        if (st == PICL_OK && strlen(email) > 255)
            __builtin_trap();
        break;
    }
    case 6: {
        json_t *devices = (json_t *)1;
        st = picl__ksc_account_devices(c, tok, &devices);
        if (st != PICL_OK && devices)
            __builtin_trap();
        if (st == PICL_OK && !json_is_array(devices))
            __builtin_trap();
        json_decref(devices);
        break;
    }
    default: {
        uint8_t ft[32];
        st = picl__ksc_forgot_send(c, "a@example.com", 13, ft);
        if (st != PICL_OK && !zero(ft, 32))
            __builtin_trap();
        break;
    }
    }
    ksc_status(st);
    picl__ksc_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fz_canned_set(&canned, data + 1, size - 1);
    unsigned pick = data[0] % 17;
    if (pick < 9)
        storage_call(pick);
    else
        keyserver_call(pick - 9);
    return 0;
}
