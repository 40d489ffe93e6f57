/* SPDX-License-Identifier: MPL-2.0 */
/* recovery_key.c -- the account recovery key: base32 text, id, and kB sealed under it (recovery_key.h). */
#include "client/recovery_key.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/kdf.h"
#include "crypto/envelope.h"
#include "crypto/util.h"
#include "protocol/stretch.h"

#define RK_CHARS 52
#define RK_LABEL "picl-recovery-v1"

static const char B32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

void picl__rk_format(char out[PICL_RK_TEXT_LEN + 1], const uint8_t key[32])
{
    size_t o = 0;
    for (int i = 0; i < RK_CHARS; i++) {
        /* 5 bits starting at bit 5*i, big-endian; bits past 256 are zero */
        unsigned v = 0;
        for (int b = 0; b < 5; b++) {
            int bit = 5 * i + b;
            v <<= 1;
            if (bit < 256)
                v |= (key[bit / 8] >> (7 - bit % 8)) & 1u;
        }
        if (i && i % 4 == 0)
            out[o++] = '-';
        out[o++] = B32[v];
    }
    out[o] = 0;
}

picl_status picl__rk_parse(uint8_t key[32], const char *text)
{
    uint8_t bits[33];
    memset(bits, 0, sizeof bits);
    memset(key, 0, 32);
    int n = 0;
    picl_status rc = text ? PICL_OK : PICL_ERROR_INVALID_ARGUMENT;
    for (const char *p = text; rc == PICL_OK && *p; p++) {
        char ch = *p;
        if (ch == ' ' || ch == '\t' || ch == '-' || ch == '\n' || ch == '\r')
            continue;
        if (ch >= 'a' && ch <= 'z')
            ch = (char)(ch - 'a' + 'A');
        const char *at = ch ? strchr(B32, ch) : NULL;
        if (!at || n >= RK_CHARS) {
            rc = PICL_ERROR_INVALID_ARGUMENT;
            break;
        }
        unsigned v = (unsigned)(at - B32);
        for (int b = 0; b < 5; b++) {
            int bit = 5 * n + b;
            if ((v >> (4 - b)) & 1u)
                bits[bit / 8] |= (uint8_t)(0x80u >> (bit % 8));
        }
        n++;
    }
    if (rc == PICL_OK && (n != RK_CHARS || bits[32]))
        rc = PICL_ERROR_INVALID_ARGUMENT;
    if (rc == PICL_OK)
        memcpy(key, bits, 32);
    picl__wipe(bits, sizeof bits);
    return rc;
}

static picl_status derive(uint8_t *out, size_t len, const uint8_t key[32], const char *name)
{
    char *info = NULL;
    size_t ilen = 0;
    picl_status rc = picl__kw(&info, &ilen, name, NULL, 0);
    if (rc == PICL_OK)
        rc = picl__hkdf_sha256(out, len, key, 32, NULL, 0, info, ilen);
    free(info);
    return rc;
}

picl_status picl__rk_id(char id[33], const uint8_t key[32])
{
    uint8_t raw[16];
    id[0] = 0;
    picl_status rc = derive(raw, sizeof raw, key, "recoveryKeyId");
    if (rc == PICL_OK)
        picl__hex_encode(id, raw, sizeof raw);
    picl__wipe(raw, sizeof raw);
    return rc;
}

static picl_status keys_and_ctx(picl_keypair *k, char id[33], const uint8_t key[32])
{
    uint8_t both[64];
    picl_status rc = picl__rk_id(id, key);
    if (rc == PICL_OK)
        rc = derive(both, sizeof both, key, "recoveryKey");
    if (rc == PICL_OK) {
        memcpy(k->enc, both, 32);
        memcpy(k->hmac, both + 32, 32);
    }
    picl__wipe(both, sizeof both);
    return rc;
}

picl_status picl__rk_seal(char **data, const uint8_t key[32], const uint8_t kb[32])
{
    picl_keypair k;
    picl_sealed sealed = {0};
    char id[33], clear[80];
    json_t *j = NULL;
    *data = NULL;
    picl_status rc = keys_and_ctx(&k, id, key);
    if (rc == PICL_OK) {
        memcpy(clear, "{\"kB\":\"", 7);
        picl__hex_encode(clear + 7, kb, 32);
        memcpy(clear + 71, "\"}", 3);
        picl_mac_context ctx = {.label = RK_LABEL, .fields = {id}, .nfields = 1};
        rc = picl__record_seal(&sealed, &k, &ctx, NULL, (const uint8_t *)clear, 73);
    }
    if (rc == PICL_OK) {
        j = json_pack("{s:s, s:s, s:s}", "ciphertext", sealed.ciphertext, "IV", sealed.iv, "hmac",
                      sealed.hmac);
        *data = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (!*data)
            rc = PICL_ERROR_NO_MEMORY;
    }
    json_decref(j);
    picl__sealed_free(&sealed);
    picl__wipe(clear, sizeof clear);
    picl__wipe(&k, sizeof k);
    return rc;
}

picl_status picl__rk_open(uint8_t kb[32], const uint8_t key[32], const char *data)
{
    picl_keypair k;
    char id[33];
    uint8_t *clear = NULL;
    size_t clen = 0;
    json_t *j = NULL;
    memset(kb, 0, 32);
    picl_status rc = keys_and_ctx(&k, id, key);
    if (rc == PICL_OK) {
        j = data ? json_loads(data, JSON_REJECT_DUPLICATES, NULL) : NULL;
        const char *ct = json_string_value(json_object_get(j, "ciphertext"));
        const char *iv = json_string_value(json_object_get(j, "IV"));
        const char *mac = json_string_value(json_object_get(j, "hmac"));
        picl_mac_context ctx = {.label = RK_LABEL, .fields = {id}, .nfields = 1};
        rc = ct && iv && mac ? picl__record_open(&clear, &clen, &k, &ctx, ct, iv, mac) : PICL_ERROR_DECRYPT;
    }
    /* exactly what picl__rk_seal writes, so kB never sits in a jansson string */
    if (rc == PICL_OK && (clen != 73 || memcmp(clear, "{\"kB\":\"", 7) || memcmp(clear + 71, "\"}", 2)))
        rc = PICL_ERROR_DECRYPT;
    if (rc == PICL_OK) {
        char hex[65];
        memcpy(hex, clear + 7, 64);
        hex[64] = 0;
        if (picl__hex_decode_exact(kb, 32, hex) != PICL_OK)
            rc = PICL_ERROR_DECRYPT;
        picl__wipe(hex, sizeof hex);
    }
    if (rc != PICL_OK && rc != PICL_ERROR_NO_MEMORY)
        rc = PICL_ERROR_DECRYPT;
    if (rc != PICL_OK)
        memset(kb, 0, 32);
    if (clear)
        picl__zfree(clear, clen);
    json_decref(j);
    picl__wipe(&k, sizeof k);
    return rc;
}
