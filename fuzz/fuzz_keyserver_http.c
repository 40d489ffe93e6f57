/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_keyserver_http.c -- libFuzzer target: the keyserver as a client
 * reaches it, over loopback to an in-process server (HTTP glue + routes):
 *   byte 0 % 3 == 0  the rest is a raw request (request line, headers,
 *                    Content-Length, body -- anything), sent and half-closed;
 *   byte 0 % 3 == 1  byte 1 picks an endpoint, the rest is its JSON body;
 *   byte 0 % 3 == 2  byte 1 picks an endpoint, the rest is the value of its
 *                    Authorization header (Hawk parser, token lookup).
 * A well-framed request must get an answer, and never a 500: malformed
 * input is the client's error. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/nss.h"
#include "fuzz_net.h"
#include "keyserver/keyserver.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ks_server *ks;
static unsigned port;

static const struct {
    const char *method, *path;
} EP[] = {
    {"POST", "/v1/account/create"},
    {"POST", "/v1/auth/start"},
    {"POST", "/v1/auth/finish"},
    {"POST", "/v1/session/create"},
    {"POST", "/v1/session/destroy"},
    {"GET", "/v1/account/keys"},
    {"GET", "/v1/account/devices"},
    {"POST", "/v1/account/reset"},
    {"POST", "/v1/account/destroy"},
    {"GET", "/v1/recovery_email/status"},
    {"POST", "/v1/recovery_email/resend_code"},
    {"POST", "/v1/recovery_email/verify_code"},
    {"POST", "/v1/password/change/start"},
    {"POST", "/v1/password/forgot/send_code"},
    {"POST", "/v1/password/forgot/resend_code"},
    {"POST", "/v1/password/forgot/verify_code"},
    {"POST", "/v1/get_random_bytes"},
    {"GET", "/v1/storage/token"},
    {"GET", "/v1/account/classmap"},
    {"POST", "/v1/account/classmap"},
};
#define NEP (sizeof EP / sizeof EP[0])

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static char dir[] = "/tmp/picl-fuzz-ks-XXXXXX";
    static const uint8_t secret[] = "picl fuzz keyserver token secret, 32+ bytes";
    if (picl__nss_acquire() != PICL_OK || !mkdtemp(dir))
        __builtin_trap();
    fz_remove_at_exit(dir);
    ks_config c;
    memset(&c, 0, sizeof c);
    c.listen = "127.0.0.1:0";
    c.data_dir = dir;
    c.secret = secret;
    c.secret_len = sizeof secret - 1;
    c.storage_node = "http://127.0.0.1:9";
    c.threads = 2;
    c.purge_every_s = -1;
    if (ks_server_new(&ks, &c) != PICL_OK || ks_server_start(ks) != PICL_OK)
        __builtin_trap();
    port = ks_server_port(ks);
    return 0;
}

static void framed(const char *method, const char *path, const char *auth, const uint8_t *body, size_t blen)
{
    size_t cap = 512 + strlen(path) + (auth ? strlen(auth) : 0) + blen;
    char *req = malloc(cap);
    if (!req)
        __builtin_trap();
    int n = snprintf(req, cap,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n%s%s%s"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     method, path, port, auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "",
                     blen);
    memcpy(req + n, body, blen);
    int status = fz_exchange(port, req, (size_t)n + blen, 0, 5000);
    /* no answer within 5 s: once more before calling it a bug, since a
     * machine busy with other work can starve this process that long (a
     * request the server never answers stays unanswered) */
    if (status <= 0 && blen <= 16384)
        status = fz_exchange(port, req, (size_t)n + blen, 0, 5000);
    free(req);
    /* a framed request is always answered (a body over the cap may be cut
     * off by a reset before the 413 is read), and bad input is never a 500 */
    if ((status < 200 && blen <= 16384) || status == 500) {
        fprintf(stderr, "fuzz_keyserver_http: %s %s answered %d\n", method, path, status);
        __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    switch (data[0] % 3) {
    case 0:
        (void)fz_exchange(port, data + 1, size - 1, 1, 1000);
        /* the server still answers afterwards */
        framed("POST", "/v1/get_random_bytes", NULL, (const uint8_t *)"", 0);
        break;
    case 1:
        framed(EP[data[1] % NEP].method, EP[data[1] % NEP].path, NULL, data + 2, size - 2);
        break;
    default: {
        char *auth = malloc(size - 1);
        if (!auth)
            __builtin_trap();
        size_t n = 0;
        for (size_t i = 2; i < size; i++)
            if (data[i] != '\r' && data[i] != '\n' && data[i] != 0)
                auth[n++] = (char)data[i];
        auth[n] = 0;
        framed(EP[data[1] % NEP].method, EP[data[1] % NEP].path, auth, (const uint8_t *)"{}", 2);
        free(auth);
        break;
    }
    }
    return 0;
}
