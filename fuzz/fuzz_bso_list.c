/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_bso_list.c -- libFuzzer target: the download's one-pass readers of
 * what a storage server sends, against the jansson trees they stand in for.
 * The first byte picks what the rest is:
 *   0  a listing page (picl__bso_list_parse vs picl__bso_list_parse_tree);
 *   1  a BSO payload (picl__record_envelope_load vs _load_tree).
 * Both readers must give the same status and the same fields for every
 * input; anything else traps. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/records.h"
#include "client/storage_client_list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static void list(const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, text, len);
    copy[len] = 0;
    picl_bso_list a, b;
    picl_status sa = picl__bso_list_parse(copy, len, &a);
    picl_status sb = picl__bso_list_parse_tree(text, len, &b);
    if (sa == PICL_ERROR_NO_MEMORY || sb == PICL_ERROR_NO_MEMORY)
        goto done;
    if (sa != sb || a.n != b.n)
        __builtin_trap();
    for (size_t i = 0; i < a.n; i++)
        if (a.items[i].modified != b.items[i].modified || !same_str(a.items[i].id, b.items[i].id) ||
            !same_str(a.items[i].payload, b.items[i].payload))
            __builtin_trap();
done:
    picl__bso_list_free(&a);
    picl__bso_list_free(&b);
    free(copy);
}

static void envelope(const char *text)
{
    picl_envelope a, b;
    picl_status sa = picl__record_envelope_load(text, &a);
    picl_status sb = picl__record_envelope_load_tree(text, &b);
    if (sa != PICL_ERROR_NO_MEMORY && sb != PICL_ERROR_NO_MEMORY &&
        (sa != sb || !same_str(a.ciphertext, b.ciphertext) || !same_str(a.iv, b.iv) ||
         !same_str(a.hmac, b.hmac) || !same_str(a.kid, b.kid)))
        __builtin_trap();
    picl__record_envelope_free(&a);
    picl__record_envelope_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    size_t n = size - 1;
    char *text = malloc(n + 1);
    if (!text)
        return 0;
    memcpy(text, data + 1, n);
    text[n] = 0;
    if (data[0] % 2 == 0)
        list(text, n);
    else
        envelope(text); /* a payload is a C string: up to its first NUL */
    free(text);
    return 0;
}
