/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_record_v2.c -- libFuzzer target: what a storage server hands the
 * client (records.md 3-4).  The first byte picks what the rest is:
 *   0  a BSO payload, refused or opened by picl__record_decrypt;
 *   1  a cleartext, sealed with the v2 MAC and opened again (so the checks
 *      after a valid MAC -- JSON, id -- see arbitrary input);
 *   2  a class map payload, refused or verified by picl__classmap_verify;
 *   3  a class map object, signed with our kB and verified (the parser
 *      after a valid HMAC sees arbitrary input).
 * Every failure must be the one error with no output; whatever is accepted
 * must be what the checks promise. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client/records.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/kdf.h"
#include "crypto/nss.h"
#include "protocol/stretch.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t kb[32];
static picl_keypair keys;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (int i = 0; i < 32; i++)
        kb[i] = (uint8_t)(0x40 + i);
    if (picl__nss_acquire() != PICL_OK || picl__collection_keys(&keys, kb, "passwords", 1) != PICL_OK)
        __builtin_trap();
    return 0;
}

static void open_payload(const char *payload)
{
    picl_class_entry b1 = {'B', 1};
    picl_record_fault why = PICL_RECORD_FAULT_NONE;
    json_t *clear = (json_t *)1;
    picl_status st = picl__record_decrypt(&clear, "passwords", "{fuzz-id}", payload, &keys, &b1, 1, &why);
    if (st == PICL_OK) {
        /* a record is only ever accepted under its own id */
        if (!json_is_object(clear) ||
            strcmp(json_string_value(json_object_get(clear, "id")), "{fuzz-id}") != 0 ||
            why != PICL_RECORD_FAULT_NONE)
            __builtin_trap();
        json_decref(clear);
    } else if (st != PICL_ERROR_DECRYPT || clear != NULL || why == PICL_RECORD_FAULT_NONE) {
        __builtin_trap();
    }
}

static void seal_and_open(const uint8_t *data, size_t size)
{
    picl_mac_context ctx;
    picl__record_v2_context(&ctx, "passwords", "{fuzz-id}", "B:1");
    picl_sealed s;
    if (picl__record_seal(&s, &keys, &ctx, NULL, data, size) != PICL_OK)
        return;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "ciphertext", s.ciphertext, "IV", s.iv, "hmac", s.hmac,
                          "kid", "B:1");
    char *payload = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    picl__sealed_free(&s);
    if (!payload)
        return;
    picl_class_entry b1 = {'B', 1};
    picl_record_fault why = PICL_RECORD_FAULT_NONE;
    json_t *clear = NULL;
    picl_status st = picl__record_decrypt(&clear, "passwords", "{fuzz-id}", payload, &keys, &b1, 0, &why);
    /* the MAC is right: only the cleartext can be refused */
    if (st != PICL_OK && why != PICL_RECORD_FAULT_NOT_JSON && why != PICL_RECORD_FAULT_ID)
        __builtin_trap();
    json_decref(clear);
    free(payload);
}

static void verify_map(const char *payload)
{
    picl_classmap m;
    picl_status st = picl__classmap_verify(&m, payload, kb);
    if (st == PICL_OK) {
        if (m.version < 1 || m.epoch < 1 || strlen(m.hmac) != 64)
            __builtin_trap();
        for (size_t i = 0; i < m.n; i++)
            if ((m.items[i].e.cls != 'A' && m.items[i].e.cls != 'B') || m.items[i].e.generation < 1 ||
                !picl__collection_name_ok(m.items[i].name))
                __builtin_trap();
    } else if (st != PICL_ERROR_CLASSMAP || m.n != 0) {
        __builtin_trap();
    }
}

/* Signs an arbitrary JSON object as a map is signed (HMAC under HKDF(kB,
 * KW("classmap")) of the canonical text without "hmac"), then verifies it:
 * the parser behind a valid HMAC sees arbitrary input, and what it accepts
 * must be a well-formed map. */
static void sign_and_verify(const char *text)
{
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return;
    }
    json_object_del(o, "hmac");
    char *canon = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    uint8_t key[32], mac[32];
    char hex[65];
    const char *info = PICL_KW_PREFIX "classmap";
    if (canon && picl__hkdf_sha256(key, 32, kb, 32, NULL, 0, info, strlen(info)) == PICL_OK &&
        picl__hmac_sha256(mac, key, 32, canon, strlen(canon)) == PICL_OK) {
        picl__hex_encode(hex, mac, 32);
        json_object_set_new(o, "hmac", json_string(hex));
        char *payload = json_dumps(o, JSON_COMPACT);
        if (payload)
            verify_map(payload);
        free(payload);
    }
    free(canon);
    json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    uint8_t mode = data[0] % 4;
    data++;
    size--;
    if (mode == 1) {
        seal_and_open(data, size);
        return 0;
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    if (mode == 0)
        open_payload(text);
    else if (mode == 2)
        verify_map(text);
    else
        sign_and_verify(text);
    free(text);
    return 0;
}
