/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_storage_http.c -- libFuzzer target: the storage server as a client
 * reaches it, over loopback to an in-process server with a valid Hawk
 * signature on every framed request, so the input gets past the
 * authentication into the routes: the path segments, the query parameters
 * (newer, older, sort, limit, offset, ids, full, batch, commit, ...), the
 * X-If-* headers and the BSO and batch bodies (JSON and newlines).
 *   byte 0 picks the operation (below); the rest is split at the first two
 *   NUL bytes into: a path segment (collection or id), the query string,
 *   and the body.  Operation 0 sends the rest raw, unsigned, half-closed.
 * A framed request must get an answer, never a 500. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/nss.h"
#include "fuzz_net.h"
#include "protocol/hawk.h"
#include "protocol/tokenlib.h"
#include "storage/storage.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static storage_server *srv;
static unsigned port;
static char *token, *key;
static const uint8_t SECRET[] = "picl fuzz storage token secret, 32+ bytes";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* tmpfs when there is one: the target commits a transaction per write */
    static char dir[64];
    snprintf(dir, sizeof dir, "%s/picl-fuzz-st-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (picl__nss_acquire() != PICL_OK || !mkdtemp(dir))
        __builtin_trap();
    fz_remove_at_exit(dir);
    storage_config c;
    memset(&c, 0, sizeof c);
    c.listen = "127.0.0.1:0";
    c.data_dir = dir;
    c.secret = SECRET;
    c.secret_len = sizeof SECRET - 1;
    c.prune_interval_s = -1;
    c.threads = 2;
    c.quota_kb = 4096;
    if (storage_server_new(&srv, &c) != PICL_OK || storage_server_start(srv) != PICL_OK)
        __builtin_trap();
    port = storage_server_port(srv);
    picl_tokenlib_payload p;
    memset(&p, 0, sizeof p);
    p.uid = 42;
    snprintf(p.node, sizeof p.node, "%s", storage_server_node(srv));
    p.expires = (int64_t)time(NULL) + 30 * 86400;
    snprintf(p.fxa_uid, sizeof p.fxa_uid, "fxa42");
    snprintf(p.fxa_kid, sizeof p.fxa_kid, "kid42");
    snprintf(p.hashed_fxa_uid, sizeof p.hashed_fxa_uid, "h42");
    snprintf(p.hashed_device_id, sizeof p.hashed_device_id, "dev");
    if (picl__tokenlib_mint(&token, &key, SECRET, sizeof SECRET - 1, &p) != PICL_OK)
        __builtin_trap();
    return 0;
}

/* Appends s[0..n) percent-encoding what may not stand in a path segment
 * (keep_pct: '%' passes as is, so the server's decoder sees escapes). */
static size_t enc(char *out, const uint8_t *s, size_t n, const char *keep)
{
    static const char hx[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            (ch && strchr(keep, ch))) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '%';
            out[o++] = hx[ch >> 4];
            out[o++] = hx[ch & 15];
        }
    }
    out[o] = 0;
    return o;
}

/* the path is prefix + the input's segment (when seg) */
static const struct {
    const char *method, *prefix, *ctype;
    int seg;
} OPS[] = {
    {NULL, NULL, NULL, 0},
    {"GET", "/1.5/42/storage/", NULL, 1},
    {"POST", "/1.5/42/storage/", "application/json", 1},
    {"POST", "/1.5/42/storage/", "application/newlines", 1},
    {"PUT", "/1.5/42/storage/bookmarks/", "application/json", 1},
    {"GET", "/1.5/42/storage/bookmarks/", NULL, 1},
    {"DELETE", "/1.5/42/storage/", NULL, 1},
    {"DELETE", "/1.5/42/storage/bookmarks/", NULL, 1},
    {"GET", "/1.5/42/info/", NULL, 1},
    {"POST", "/1.5/42/storage/bookmarks", "application/json", 0},
    {"GET", "/1.5/42/storage/bookmarks", NULL, 0},
};
#define NOPS (sizeof OPS / sizeof OPS[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned op = data[0] % NOPS;
    if (op == 0) {
        (void)fz_exchange(port, data + 1, size - 1, 1, 1000);
        return 0;
    }
    /* segment \0 query \0 body */
    const uint8_t *seg = data + 1, *end = data + size;
    const uint8_t *z1 = memchr(seg, 0, (size_t)(end - seg));
    const uint8_t *q = z1 ? z1 + 1 : end;
    const uint8_t *z2 = z1 ? memchr(q, 0, (size_t)(end - q)) : NULL;
    const uint8_t *body = z2 ? z2 + 1 : end;
    size_t seglen = (size_t)((z1 ? z1 : end) - seg), qlen = (size_t)((z2 ? z2 : (z1 ? end : end)) - q);
    if (!z1)
        qlen = 0;
    size_t blen = (size_t)(end - body);
    if (seglen > 200 || qlen > 2000)
        return 0;

    char segenc[601], qenc[6001], path[700], target[7000];
    enc(segenc, seg, seglen, "-_.~%");
    enc(qenc, q, qlen, "-_.~%=&,+");
    snprintf(path, sizeof path, "%s%s", OPS[op].prefix, OPS[op].seg ? segenc : "");
    snprintf(target, sizeof target, "%s%s%s", path, qlen ? "?" : "", qenc);

    picl_hawk_request hr = {OPS[op].method, target, "127.0.0.1", port, OPS[op].ctype, body, blen};
    char *auth = NULL;
    if (picl__hawk_client_header(&auth, token, key, strlen(key), &hr, (int64_t)time(NULL), NULL, NULL) !=
        PICL_OK)
        __builtin_trap();
    size_t cap = strlen(target) + strlen(auth) + 512 + blen;
    char *req = malloc(cap);
    if (!req)
        __builtin_trap();
    int n = snprintf(req, cap,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\nAuthorization: %s\r\n",
                     OPS[op].method, target, port, auth);
    if (OPS[op].ctype)
        n += snprintf(req + n, cap - (size_t)n, "Content-Type: %s\r\nContent-Length: %zu\r\n", OPS[op].ctype,
                      blen);
    n += snprintf(req + n, cap - (size_t)n, "\r\n");
    if (OPS[op].ctype) {
        memcpy(req + n, body, blen);
        n += (int)blen;
    }
    int status = fz_exchange(port, req, (size_t)n, 0, 5000);
    /* no answer within 5 s: once more before calling it a bug, since a
     * machine busy with other work can starve this process that long (the
     * same Hawk nonce again is answered 401, an answer; a request the
     * server never answers stays unanswered) */
    if (status <= 0)
        status = fz_exchange(port, req, (size_t)n, 0, 5000);
    free(req);
    free(auth);
    if (status < 200 || status == 500) {
        fprintf(stderr, "fuzz_storage_http: %s %s answered %d\n", OPS[op].method, target, status);
        __builtin_trap();
    }
    return 0;
}
