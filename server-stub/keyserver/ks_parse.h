/* SPDX-License-Identifier: MPL-2.0 */
/* ks_parse.h -- THE parsers of keyserver request bodies and their fields. */
#ifndef PICL_KS_PARSE_H
#define PICL_KS_PARSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "picl_status.h"
#include "protocol/stretch.h"

/*
 * Every JSON value a client sends goes through one of these.  Results map
 * to keyserver errnos: PICL_ERROR_ENCODING = 106 (body), PICL_ERROR_NOT_FOUND
 * = 108 (missing field), PICL_ERROR_INVALID_ARGUMENT = 107 (present but
 * wrong: type, hex, length, range, unknown type string, v not in 1..N-1).
 * Outputs are the caller's; on failure they are zeroed.
 */

#define KS_SRP_TYPE "SRP-6a/SHA256/2048/v1"
#define KS_MAX_BODY 16384

/* body[0..len) must be a JSON object (duplicate keys refused): *out is a
 * new reference the caller json_decref()s.  An empty body is ENCODING. */
picl_status ks_parse_body(json_t **out, const uint8_t *body, size_t len);

/* obj[key] as lowercase/uppercase hex of exactly n bytes. */
picl_status ks_parse_hex(const json_t *obj, const char *key, uint8_t *out, size_t n);

/* obj[key] as hex of an email: 1..255 bytes, no control characters (so it
 * is safe in a mail header).  out holds 256 bytes and is NUL-terminated. */
picl_status ks_parse_email(const json_t *obj, const char *key, char out[256], size_t *len);

/* obj["passwordStretching"]: type PICL_STRETCH_TYPE, integers
 * 1 <= rounds <= 10^8, scrypt_N a power of two 2..2^24, 1 <= r <= 32,
 * 1 <= p <= 16, salt 32 bytes of hex. */
picl_status ks_parse_stretch(const json_t *obj, picl_stretch_params *p, uint8_t salt[32]);

/* obj["srp"]: type KS_SRP_TYPE, salt 32 bytes hex, and when verifier is
 * not NULL a 256-byte hex verifier with 0 < v < N. */
picl_status ks_parse_srp(const json_t *obj, uint8_t salt[32], uint8_t *verifier);

/* 1 when v (256 bytes, big-endian) satisfies 0 < v < N of the PiCL group. */
int ks_srp_value_ok(const uint8_t v[256]);

/* obj[key]: exactly 8 ASCII digits into out (NUL-terminated). */
picl_status ks_parse_digits8(const json_t *obj, const char *key, char out[9]);

/* Optional obj[key]: absent -> "" and PICL_OK; else a string of 1..64
 * printable ASCII characters. */
picl_status ks_parse_label(const json_t *obj, const char *key, char out[65]);

#endif
