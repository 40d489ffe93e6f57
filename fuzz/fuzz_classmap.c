/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_classmap.c -- libFuzzer target: a class map payload read without its
 * HMAC (picl__classmap_parse_trusted: the device's own copy from its state
 * file, or the server's map during the rebuild after a password reset),
 * and the kid of a BSO payload (picl__record_kid).  What the parser accepts
 * must meet the map's rules; signed again with a fixed kB and verified, it
 * must give the same map back (the round trip the state file relies on). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/records.h"
#include "crypto/nss.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t kb[32];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (int i = 0; i < 32; i++)
        kb[i] = (uint8_t)(0x21 + i);
    if (picl__nss_acquire() != PICL_OK)
        __builtin_trap();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;

    picl_class_entry kid;
    picl_status st = picl__record_kid(s, &kid);
    if (st == PICL_OK) {
        if ((kid.cls != 'A' && kid.cls != 'B') || kid.generation < 1)
            __builtin_trap();
    } else if (st != PICL_ERROR_DECRYPT) {
        __builtin_trap();
    }

    picl_classmap *m = calloc(2, sizeof *m);
    if (!m)
        __builtin_trap();
    st = picl__classmap_parse_trusted(&m[0], s);
    if (st == PICL_OK) {
        if (m[0].version < 1 || m[0].epoch < 1 || m[0].n > 64)
            __builtin_trap();
        for (size_t i = 0; i < m[0].n; i++) {
            if ((m[0].items[i].e.cls != 'A' && m[0].items[i].e.cls != 'B') ||
                m[0].items[i].e.generation < 1 || !picl__collection_name_ok(m[0].items[i].name))
                __builtin_trap();
            for (size_t j = 0; j < i; j++)
                if (!strcmp(m[0].items[i].name, m[0].items[j].name))
                    __builtin_trap();
        }
        char *payload = NULL;
        if (picl__classmap_sign(&payload, &m[0], kb) != PICL_OK)
            __builtin_trap();
        if (picl__classmap_verify(&m[1], payload, kb) != PICL_OK || m[1].version != m[0].version ||
            m[1].epoch != m[0].epoch || m[1].n != m[0].n)
            __builtin_trap();
        for (size_t i = 0; i < m[0].n; i++) {
            const picl_class_entry *e = picl__classmap_get(&m[1], m[0].items[i].name);
            if (!e || e->cls != m[0].items[i].e.cls || e->generation != m[0].items[i].e.generation)
                __builtin_trap();
        }
        free(payload);
    } else if (st != PICL_ERROR_CLASSMAP) {
        __builtin_trap();
    }
    free(m);
    free(s);
    return 0;
}
