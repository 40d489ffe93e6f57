/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_hawk_header.c -- libFuzzer target: the Hawk Authorization header
 * parser (picl__hawk_parse), then verification of whatever it accepts. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "crypto/nss.h"
#include "protocol/hawk.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (picl__nss_acquire() != PICL_OK)
        __builtin_trap();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static picl_hawk_nonce_cache *nonces;
    picl_hawk_auth a;
    picl_status st = picl__hawk_parse(&a, (const char *)data, size);

    if (st != PICL_OK) {
        /* a rejected header leaves nothing behind */
        static const picl_hawk_auth zero;
        if (memcmp(&a, &zero, sizeof a) != 0)
            __builtin_trap();
        return 0;
    }
    /* what the parser accepts is well-formed */
    if (!a.id[0] || !a.nonce[0] || strlen(a.mac) != PICL_HAWK_B64_BYTES ||
        (a.has_hash && strlen(a.hash) != PICL_HAWK_B64_BYTES) ||
        strspn(a.ts_text, "0123456789") != strlen(a.ts_text) || !a.ts_text[0])
        __builtin_trap();
    if (!nonces && picl__hawk_nonce_cache_new(&nonces, 1024) != PICL_OK)
        __builtin_trap();
    picl_hawk_request req = {"POST", "/v1/account/keys?x=1", "example.com", 443, "application/json", "{}", 2};
    picl_hawk_verify_opts o = {.now = a.ts, .skew = 60, .require_hash = 1, .nonces = nonces};
    st = picl__hawk_verify(&a, "key", 3, &req, &o);
    /* random input cannot carry a valid MAC */
    if (st == PICL_OK)
        __builtin_trap();
    return 0;
}
