/* SPDX-License-Identifier: MPL-2.0 */
/* ks_parse.c -- keyserver request parsers (see ks_parse.h). */
#include "keyserver/ks_parse.h"

#include <string.h>

#include "crypto/codec.h"
#include "crypto/srp.h"
#include "crypto/util.h"

picl_status ks_parse_body(json_t **out, const uint8_t *body, size_t len)
{
    *out = NULL;
    if (!body || !len || len > KS_MAX_BODY)
        return PICL_ERROR_ENCODING;
    json_error_t err;
    json_t *j = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &err);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return PICL_ERROR_ENCODING;
    }
    *out = j;
    return PICL_OK;
}

/* The string at obj[key]: NOT_FOUND when absent (or JSON null), INVALID when
 * not a string. */
static picl_status get_string(const json_t *obj, const char *key, const char **s, size_t *len)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return PICL_ERROR_NOT_FOUND;
    if (!json_is_string(v))
        return PICL_ERROR_INVALID_ARGUMENT;
    *s = json_string_value(v);
    *len = json_string_length(v);
    return PICL_OK;
}

picl_status ks_parse_hex(const json_t *obj, const char *key, uint8_t *out, size_t n)
{
    const char *s;
    size_t len, got = 0;
    picl_status rc = get_string(obj, key, &s, &len);
    if (rc == PICL_OK && (len != 2 * n || strlen(s) != len))
        rc = PICL_ERROR_INVALID_ARGUMENT;
    if (rc == PICL_OK && (picl__hex_decode(out, n, &got, s, len) != PICL_OK || got != n))
        rc = PICL_ERROR_INVALID_ARGUMENT;
    if (rc != PICL_OK)
        memset(out, 0, n);
    return rc;
}

picl_status ks_parse_email(const json_t *obj, const char *key, char out[256], size_t *len)
{
    const char *s;
    size_t slen, got = 0;
    *len = 0;
    memset(out, 0, 256);
    picl_status rc = get_string(obj, key, &s, &slen);
    if (rc != PICL_OK)
        return rc;
    if (slen < 2 || slen > 510 || slen % 2 || strlen(s) != slen ||
        picl__hex_decode((uint8_t *)out, 255, &got, s, slen) != PICL_OK || got != slen / 2)
        goto bad;
    for (size_t i = 0; i < got; i++) {
        unsigned char c = (unsigned char)out[i];
        if (c < 0x20 || c == 0x7f)
            goto bad;
    }
    out[got] = 0;
    *len = got;
    return PICL_OK;
bad:
    memset(out, 0, 256);
    return PICL_ERROR_INVALID_ARGUMENT;
}

/* obj[key] as an integer in [lo, hi]. */
static picl_status get_int(const json_t *obj, const char *key, json_int_t lo, json_int_t hi, json_int_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return PICL_ERROR_NOT_FOUND;
    if (!json_is_integer(v))
        return PICL_ERROR_INVALID_ARGUMENT;
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return PICL_ERROR_INVALID_ARGUMENT;
    *out = x;
    return PICL_OK;
}

/* obj[key] must be exactly the string want. */
static picl_status get_type(const json_t *obj, const char *key, const char *want)
{
    const char *s;
    size_t len;
    picl_status rc = get_string(obj, key, &s, &len);
    if (rc == PICL_OK && (len != strlen(want) || memcmp(s, want, len)))
        rc = PICL_ERROR_INVALID_ARGUMENT;
    return rc;
}

picl_status ks_parse_stretch(const json_t *obj, picl_stretch_params *p, uint8_t salt[32])
{
    memset(p, 0, sizeof *p);
    memset(salt, 0, 32);
    json_t *ps = json_object_get(obj, "passwordStretching");
    if (!ps || json_is_null(ps))
        return PICL_ERROR_NOT_FOUND;
    if (!json_is_object(ps))
        return PICL_ERROR_INVALID_ARGUMENT;
    json_int_t r1 = 0, n = 0, r = 0, pp = 0, r2 = 0;
    picl_status rc = get_type(ps, "type", PICL_STRETCH_TYPE);
    if (rc == PICL_OK)
        rc = get_int(ps, "PBKDF2_rounds_1", 1, 100000000, &r1);
    if (rc == PICL_OK)
        rc = get_int(ps, "scrypt_N", 2, 1 << 24, &n);
    if (rc == PICL_OK && (n & (n - 1)))
        rc = PICL_ERROR_INVALID_ARGUMENT;
    if (rc == PICL_OK)
        rc = get_int(ps, "scrypt_r", 1, 32, &r);
    if (rc == PICL_OK)
        rc = get_int(ps, "scrypt_p", 1, 16, &pp);
    if (rc == PICL_OK)
        rc = get_int(ps, "PBKDF2_rounds_2", 1, 100000000, &r2);
    if (rc == PICL_OK)
        rc = ks_parse_hex(ps, "salt", salt, 32);
    if (rc != PICL_OK) {
        memset(salt, 0, 32);
        return rc;
    }
    p->pbkdf2_rounds_1 = (uint32_t)r1;
    p->scrypt_n = (uint64_t)n;
    p->scrypt_r = (uint32_t)r;
    p->scrypt_p = (uint32_t)pp;
    p->pbkdf2_rounds_2 = (uint32_t)r2;
    return PICL_OK;
}

int ks_srp_value_ok(const uint8_t v[256])
{
    const picl_srp_group *g = picl__srp_group_picl();
    if (g->len != 256 || picl__iszero_ct(v, 256))
        return 0;
    return memcmp(v, g->N, 256) < 0;
}

picl_status ks_parse_srp(const json_t *obj, uint8_t salt[32], uint8_t *verifier)
{
    memset(salt, 0, 32);
    if (verifier)
        memset(verifier, 0, 256);
    json_t *srp = json_object_get(obj, "srp");
    if (!srp || json_is_null(srp))
        return PICL_ERROR_NOT_FOUND;
    if (!json_is_object(srp))
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_status rc = get_type(srp, "type", KS_SRP_TYPE);
    if (rc == PICL_OK)
        rc = ks_parse_hex(srp, "salt", salt, 32);
    if (rc == PICL_OK && verifier) {
        rc = ks_parse_hex(srp, "verifier", verifier, 256);
        if (rc == PICL_OK && !ks_srp_value_ok(verifier))
            rc = PICL_ERROR_INVALID_ARGUMENT;
    }
    if (rc != PICL_OK) {
        memset(salt, 0, 32);
        if (verifier)
            memset(verifier, 0, 256);
    }
    return rc;
}

picl_status ks_parse_digits8(const json_t *obj, const char *key, char out[9])
{
    const char *s;
    size_t len;
    memset(out, 0, 9);
    picl_status rc = get_string(obj, key, &s, &len);
    if (rc != PICL_OK)
        return rc;
    if (len != 8 || strspn(s, "0123456789") != 8)
        return PICL_ERROR_INVALID_ARGUMENT;
    memcpy(out, s, 8);
    return PICL_OK;
}

picl_status ks_parse_label(const json_t *obj, const char *key, char out[65])
{
    const char *s;
    size_t len;
    out[0] = 0;
    picl_status rc = get_string(obj, key, &s, &len);
    if (rc == PICL_ERROR_NOT_FOUND)
        return PICL_OK;
    if (rc != PICL_OK)
        return rc;
    if (len < 1 || len > 64)
        return PICL_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return PICL_ERROR_INVALID_ARGUMENT;
    memcpy(out, s, len);
    out[len] = 0;
    return PICL_OK;
}
