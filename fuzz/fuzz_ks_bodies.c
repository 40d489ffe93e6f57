/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_ks_bodies.c -- libFuzzer target: the keyserver's request body parsers
 * (ks_parse.h): the body as JSON, then every field parser the endpoints use
 * on it (hex fields of each endpoint's length, email, passwordStretching,
 * srp with and without verifier, 8-digit codes, labels).  A refusal must be
 * one of the three documented errors with the outputs zeroed; what is
 * accepted must meet the documented ranges. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "crypto/nss.h"
#include "keyserver/ks_parse.h"

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

static int zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

static void field_status(picl_status st)
{
    if (st != PICL_OK && st != PICL_ERROR_NOT_FOUND && st != PICL_ERROR_INVALID_ARGUMENT)
        __builtin_trap();
}

/* The hex fields the endpoints read, with their lengths. */
static const struct {
    const char *key;
    size_t n;
} HEX[] = {{"A", 256},     {"M", 32},   {"srpToken", 32}, {"wrapKb", 32},    {"kA", 32},   {"wrapKB", 32},
           {"authPW", 32}, {"uid", 16}, {"code", 16},     {"publicKey", 65}, {"hmac", 32}, {"bundle", 64}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *o = (json_t *)1;
    picl_status st = ks_parse_body(&o, data, size);
    if (st != PICL_OK) {
        if (st != PICL_ERROR_ENCODING || o != NULL)
            __builtin_trap();
        return 0;
    }
    if (!json_is_object(o))
        __builtin_trap();

    for (size_t i = 0; i < sizeof HEX / sizeof HEX[0]; i++) {
        uint8_t buf[256];
        memset(buf, 0xAA, sizeof buf);
        st = ks_parse_hex(o, HEX[i].key, buf, HEX[i].n);
        field_status(st);
        if (st != PICL_OK && !zero(buf, HEX[i].n))
            __builtin_trap();
    }
    char email[256];
    size_t elen = 99;
    st = ks_parse_email(o, "email", email, &elen);
    field_status(st);
    if (st == PICL_OK) {
        if (elen < 1 || elen > 255 || strlen(email) != elen)
            __builtin_trap();
        for (size_t i = 0; i < elen; i++)
            if ((unsigned char)email[i] < 0x20 || email[i] == 0x7f)
                __builtin_trap();
    }
    picl_stretch_params sp;
    uint8_t salt[32], vsalt[32];
    uint8_t *verifier = malloc(256);
    if (!verifier)
        __builtin_trap();
    st = ks_parse_stretch(o, &sp, salt);
    field_status(st);
    st = ks_parse_srp(o, vsalt, NULL);
    field_status(st);
    st = ks_parse_srp(o, vsalt, verifier);
    field_status(st);
    if (st == PICL_OK && !ks_srp_value_ok(verifier))
        __builtin_trap();
    free(verifier);
    char code[9];
    st = ks_parse_digits8(o, "code", code);
    field_status(st);
    if (st == PICL_OK && (strlen(code) != 8 || strspn(code, "0123456789") != 8))
        __builtin_trap();
    char label[65];
    st = ks_parse_label(o, "name", label);
    field_status(st);
    if (st == PICL_OK)
        for (size_t i = 0; label[i]; i++)
            if ((unsigned char)label[i] < 0x20 || (unsigned char)label[i] > 0x7e)
                __builtin_trap();
    json_decref(o);
    return 0;
}
