/* SPDX-License-Identifier: MPL-2.0 */
/* tokenlib.c -- Mozilla tokenlib token mint, parse and key derivation: see
 * tokenlib.h. */
#include "protocol/tokenlib.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/kdf.h"
#include "crypto/util.h"
#include "crypto/alloc.h"

#define MAX_UID ((int64_t)1 << 53)
#define MAX_DECODED (PICL_TOKENLIB_MAX_TOKEN / 4 * 3 + 3)

static picl_status signing_key(uint8_t out[32], const uint8_t *secret, size_t secretlen)
{
    return picl__hkdf_sha256(out, 32, secret, secretlen, NULL, 0, PICL_TOKENLIB_SIGNING_INFO,
                             strlen(PICL_TOKENLIB_SIGNING_INFO));
}

static int printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return 0;
    return 1;
}

static int valid_salt(const char *s, size_t n)
{
    if (n != PICL_TOKENLIB_SALT_CHARS)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

picl_status picl__tokenlib_derive_key(char out[PICL_TOKENLIB_KEY_CHARS + 1], const uint8_t *secret,
                                      size_t secretlen, const char *token, size_t tokenlen, const char *salt)
{
    size_t plen = strlen(PICL_TOKENLIB_DERIVE_INFO);
    char info[sizeof PICL_TOKENLIB_DERIVE_INFO + PICL_TOKENLIB_MAX_TOKEN];
    uint8_t key[32];
    picl_status st;

    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    out[0] = 0;
    if (!secret || secretlen == 0 || secretlen > PICL_TOKENLIB_MAX_SECRET || !token || !salt || tokenlen == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (tokenlen > PICL_TOKENLIB_MAX_TOKEN)
        return PICL_ERROR_TOO_LARGE;
    memcpy(info, PICL_TOKENLIB_DERIVE_INFO, plen);
    memcpy(info + plen, token, tokenlen);
    st = picl__hkdf_sha256(key, sizeof key, secret, secretlen, salt, strlen(salt), info, plen + tokenlen);
    if (st == PICL_OK)
        picl__base64url_encode(out, key, sizeof key, 1);
    picl__wipe(key, sizeof key);
    return st;
}

/* ---- mint ---------------------------------------------------------------- */

static int field_ok(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    return n <= max && printable(s, n);
}

static picl_status payload_json(char **out, const picl_tokenlib_payload *p, const char *salt)
{
    json_t *o = json_object();
    picl_status st = PICL_ERROR_NO_MEMORY;
    if (!o)
        return st;
    if (json_object_set_new(o, "uid", json_integer(p->uid)) ||
        json_object_set_new(o, "node", json_string(p->node)) ||
        json_object_set_new(o, "expires", json_integer(p->expires)) ||
        json_object_set_new(o, "fxa_uid", json_string(p->fxa_uid)) ||
        json_object_set_new(o, "fxa_kid", json_string(p->fxa_kid)) ||
        json_object_set_new(o, "hashed_fxa_uid", json_string(p->hashed_fxa_uid)) ||
        json_object_set_new(o, "hashed_device_id", json_string(p->hashed_device_id)) ||
        json_object_set_new(o, "salt", json_string(salt)))
        goto done;
    /* no JSON_COMPACT: ", " and ": " like Python's json.dumps */
    *out = picl__json_dumps(o, JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    if (*out)
        st = PICL_OK;
done:
    json_decref(o);
    return st;
}

picl_status picl__tokenlib_mint(char **token, char **key, const uint8_t *secret, size_t secretlen,
                                const picl_tokenlib_payload *p)
{
    char salt[PICL_TOKENLIB_SALT_CHARS + 1];
    uint8_t skey[32];
    uint8_t *raw = NULL;
    char *json = NULL, *tok = NULL, *k = NULL;
    size_t jlen = 0;
    picl_status st;

    if (!token || !key)
        return PICL_ERROR_INVALID_ARGUMENT;
    *token = NULL;
    *key = NULL;
    if (!secret || secretlen == 0 || secretlen > PICL_TOKENLIB_MAX_SECRET || !p || p->uid < 0 ||
        p->uid > MAX_UID || p->expires < 0 || p->expires > PICL_TOKENLIB_MAX_EXPIRES ||
        !field_ok(p->node, PICL_TOKENLIB_MAX_NODE) || !field_ok(p->fxa_uid, PICL_TOKENLIB_MAX_ID) ||
        !field_ok(p->fxa_kid, PICL_TOKENLIB_MAX_ID) || !field_ok(p->hashed_fxa_uid, PICL_TOKENLIB_MAX_ID) ||
        !field_ok(p->hashed_device_id, PICL_TOKENLIB_MAX_ID) ||
        strnlen(p->salt, sizeof p->salt) >= sizeof p->salt ||
        (p->salt[0] && !valid_salt(p->salt, strlen(p->salt))))
        return PICL_ERROR_INVALID_ARGUMENT;

    if (p->salt[0]) {
        memcpy(salt, p->salt, sizeof salt);
    } else {
        uint8_t r[PICL_TOKENLIB_SALT_CHARS / 2];
        st = picl__random_bytes(r, sizeof r);
        if (st != PICL_OK)
            return st;
        picl__hex_encode(salt, r, sizeof r);
    }

    st = payload_json(&json, p, salt);
    if (st != PICL_OK)
        goto done;
    jlen = strlen(json);
    if (picl__base64url_encoded_len(jlen + 32, 1) > PICL_TOKENLIB_MAX_TOKEN) {
        st = PICL_ERROR_TOO_LARGE;
        goto done;
    }
    raw = malloc(jlen + 32);
    if (!raw) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    memcpy(raw, json, jlen);
    if ((st = signing_key(skey, secret, secretlen)) != PICL_OK ||
        (st = picl__hmac_sha256(raw + jlen, skey, sizeof skey, raw, jlen)) != PICL_OK)
        goto done;
    tok = picl__base64url_encode_alloc(raw, jlen + 32, 1);
    k = malloc(PICL_TOKENLIB_KEY_CHARS + 1);
    if (!tok || !k) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    st = picl__tokenlib_derive_key(k, secret, secretlen, tok, strlen(tok), salt);
done:
    if (st == PICL_OK) {
        *token = tok;
        *key = k;
    } else {
        free(tok);
        picl__zfree(k, k ? PICL_TOKENLIB_KEY_CHARS + 1 : 0);
    }
    picl__wipe(skey, sizeof skey);
    free(raw);
    free(json);
    return st;
}

/* ---- parse --------------------------------------------------------------- */

/* Copies a JSON string field of at most max printable ASCII characters. */
static int get_string(char *dst, size_t max, json_t *v)
{
    const char *s;
    size_t n;
    if (!json_is_string(v))
        return 0;
    s = json_string_value(v);
    n = json_string_length(v);
    if (n > max || !printable(s, n))
        return 0;
    memcpy(dst, s, n);
    dst[n] = 0;
    return 1;
}

enum { F_UID, F_NODE, F_EXPIRES, F_FXA_UID, F_FXA_KID, F_HFXA, F_HDEV, F_SALT, F_COUNT };
static const char *const field_names[F_COUNT] = {
    "uid", "node", "expires", "fxa_uid", "fxa_kid", "hashed_fxa_uid", "hashed_device_id", "salt",
};

static picl_status parse_payload(picl_tokenlib_payload *out, const uint8_t *json, size_t len)
{
    int oom;
    json_t *o = picl__json_loadb((const char *)json, len, JSON_REJECT_DUPLICATES, NULL, &oom);
    const char *name;
    json_t *v;
    int seen[F_COUNT] = {0};
    picl_status st = PICL_ERROR_ENCODING;

    if (!o)
        return oom ? PICL_ERROR_NO_MEMORY : PICL_ERROR_ENCODING;
    if (!json_is_object(o))
        goto done;
    json_object_foreach (o, name, v) {
        int f = -1, ok = 0;
        for (int i = 0; i < F_COUNT; i++)
            if (!strcmp(name, field_names[i]))
                f = i;
        if (f < 0)
            continue; /* a field we do not use (Mozilla's tokenservers add some,
                         e.g. tokenserver_origin): covered by the MAC, never read */
        seen[f] = 1;
        switch (f) {
        case F_UID:
            ok = json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= MAX_UID;
            if (ok)
                out->uid = (int64_t)json_integer_value(v);
            break;
        case F_EXPIRES:
            if (json_is_integer(v)) {
                ok = json_integer_value(v) >= 0 && json_integer_value(v) <= PICL_TOKENLIB_MAX_EXPIRES;
                if (ok)
                    out->expires = (int64_t)json_integer_value(v);
            } else if (json_is_real(v)) {
                /* Python tokenlib writes time.time() + duration: a float */
                double d = json_real_value(v);
                ok = isfinite(d) && d >= 0 && d <= (double)PICL_TOKENLIB_MAX_EXPIRES;
                if (ok)
                    out->expires = (int64_t)d; /* d >= 0: truncation is floor */
            }
            break;
        case F_NODE:
            ok = get_string(out->node, PICL_TOKENLIB_MAX_NODE, v);
            break;
        case F_FXA_UID:
            ok = get_string(out->fxa_uid, PICL_TOKENLIB_MAX_ID, v);
            break;
        case F_FXA_KID:
            ok = get_string(out->fxa_kid, PICL_TOKENLIB_MAX_ID, v);
            break;
        case F_HFXA:
            ok = get_string(out->hashed_fxa_uid, PICL_TOKENLIB_MAX_ID, v);
            break;
        case F_HDEV:
            ok = get_string(out->hashed_device_id, PICL_TOKENLIB_MAX_ID, v);
            break;
        default:
            ok = get_string(out->salt, PICL_TOKENLIB_SALT_CHARS, v) &&
                 valid_salt(out->salt, strlen(out->salt));
            break;
        }
        if (!ok)
            goto done;
    }
    for (int i = 0; i < F_COUNT; i++)
        if (!seen[i])
            goto done;
    st = PICL_OK;
done:
    json_decref(o);
    return st;
}

picl_status picl__tokenlib_parse(picl_tokenlib_payload *out, const uint8_t *secret, size_t secretlen,
                                 const char *token, size_t tokenlen, int64_t now, int64_t grace)
{
    uint8_t raw[MAX_DECODED];
    uint8_t skey[32], mac[32];
    size_t n = 0;
    picl_status st;

    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    if (!secret || secretlen == 0 || secretlen > PICL_TOKENLIB_MAX_SECRET || !token || grace < 0 ||
        grace > PICL_TOKENLIB_MAX_EXPIRES)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (tokenlen > PICL_TOKENLIB_MAX_TOKEN)
        return PICL_ERROR_TOO_LARGE;
    if (picl__base64url_decode(raw, sizeof raw, &n, token, tokenlen) != PICL_OK || n <= 32) {
        st = PICL_ERROR_ENCODING;
        goto done;
    }
    if ((st = signing_key(skey, secret, secretlen)) != PICL_OK ||
        (st = picl__hmac_sha256(mac, skey, sizeof skey, raw, n - 32)) != PICL_OK)
        goto done;
    if (!picl__memeq_ct(mac, raw + n - 32, 32)) {
        st = PICL_ERROR_DECRYPT;
        goto done;
    }
    st = parse_payload(out, raw, n - 32);
    if (st == PICL_OK && now > out->expires + grace)
        st = PICL_ERROR_TOKEN;
done:
    if (st != PICL_OK)
        memset(out, 0, sizeof *out);
    picl__wipe(skey, sizeof skey);
    picl__wipe(mac, sizeof mac);
    picl__wipe(raw, sizeof raw);
    return st;
}
