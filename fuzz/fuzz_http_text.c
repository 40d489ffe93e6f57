/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_http_text.c -- libFuzzer target: the servers' HTTP text helpers
 * called directly: percent-decoding (srv_http_unescape, with and without
 * '+' as space), query parameter lookup and decoding (srv_http_query,
 * srv_http_query_has) on an arbitrary query string, the log escaper, and
 * the JSON string writer of srv_buf.  Decoded text never holds a NUL; an
 * escaped log line holds only printable ASCII and fits its buffer. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "http/http.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static const char *const NAMES[] = {"newer", "older", "sort",   "limit", "offset", "ids",
                                    "full",  "batch", "commit", "keys",  "x",      ""};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;

    for (int plus = 0; plus < 2; plus++) {
        char *out = NULL;
        picl_status st = srv_http_unescape(s, size, plus, &out);
        if (st == PICL_OK) {
            /* never longer than the input, never a NUL inside */
            if (!out || strlen(out) > size || (plus && strchr(out, '+') && !strstr(s, "%2")))
                __builtin_trap();
            free(out);
        } else if (st != PICL_ERROR_ENCODING || out != NULL) {
            __builtin_trap();
        }
    }

    /* the input as a query string (up to its first NUL) */
    srv_http_request req;
    memset(&req, 0, sizeof req);
    req.method = "GET";
    req.query = s;
    req.target = s;
    req.path = "/";
    req.body = (const uint8_t *)"";
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        char *v = NULL;
        picl_status st = srv_http_query(&req, NAMES[i], &v);
        if (st == PICL_OK) {
            if (!v || !srv_http_query_has(&req, NAMES[i]))
                __builtin_trap();
            free(v);
        } else if ((st != PICL_ERROR_NOT_FOUND && st != PICL_ERROR_ENCODING) || v != NULL) {
            __builtin_trap();
        }
    }

    char log[128];
    size_t n = srv_http_log_escape(log, sizeof log, s, size);
    if (n >= sizeof log || strlen(log) != n)
        __builtin_trap();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)log[i] < 0x20 || (unsigned char)log[i] > 0x7e)
            __builtin_trap();

    /* srv_buf_json_string of valid UTF-8 makes a JSON string that decodes back */
    json_t *probe = json_stringn(s, size);
    if (probe) {
        srv_buf b;
        srv_buf_init(&b, 1 << 20);
        srv_buf_json_string(&b, s, size);
        size_t blen = 0;
        char *text = srv_buf_take(&b, &blen);
        if (!text)
            __builtin_trap();
        json_error_t err;
        json_t *back = json_loadb(text, blen, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
        if (!back || !json_equal(back, probe))
            __builtin_trap();
        json_decref(back);
        free(text);
        srv_buf_free(&b);
        json_decref(probe);
    }
    free(s);
    return 0;
}
