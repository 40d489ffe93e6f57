/* SPDX-License-Identifier: MPL-2.0 */
/* codec.h -- strict hex, base64 and base64url codecs. */
#ifndef PICL_CRYPTO_CODEC_H
#define PICL_CRYPTO_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

/*
 * All decoders are strict: they never guess.  Hex accepts upper or lower
 * case but rejects odd lengths and any other character.  base64 (RFC 4648
 * section 4, '+/') requires canonical '=' padding and zero pad bits;
 * base64url ('-_') accepts the unpadded form (as JWT/tokenlib print it) or
 * full canonical padding, never partial padding.  Whitespace is an error.
 * On any error the output buffer content is unspecified and
 * PICL_ERROR_ENCODING is returned; PICL_ERROR_TOO_LARGE when out is too small.
 *
 * Encoders write a NUL-terminated string: out must hold *_encoded_len(n) + 1
 * bytes.  The *_alloc variants malloc() the result; the caller frees it
 * (picl__zfree for secrets).
 */
size_t picl__hex_encoded_len(size_t n);
void picl__hex_encode(char *out, const uint8_t *in, size_t n); /* lowercase */
char *picl__hex_encode_alloc(const uint8_t *in, size_t n);

/* Decodes exactly strlen-style len characters; *outlen receives len/2. */
picl_status picl__hex_decode(uint8_t *out, size_t outcap, size_t *outlen, const char *in, size_t len);
/* Decodes into exactly `want` bytes: any other length is PICL_ERROR_ENCODING. */
picl_status picl__hex_decode_exact(uint8_t *out, size_t want, const char *in);
/* Allocating decoder: *out is malloc()ed (at least 1 byte), caller frees. */
picl_status picl__hex_decode_alloc(uint8_t **out, size_t *outlen, const char *in, size_t len);

size_t picl__base64_encoded_len(size_t n); /* padded */
void picl__base64_encode(char *out, const uint8_t *in, size_t n);
char *picl__base64_encode_alloc(const uint8_t *in, size_t n);
picl_status picl__base64_decode(uint8_t *out, size_t outcap, size_t *outlen, const char *in, size_t len);
picl_status picl__base64_decode_alloc(uint8_t **out, size_t *outlen, const char *in, size_t len);

/* base64url: `pad` nonzero writes '=' padding (tokenlib tokens), zero omits it. */
size_t picl__base64url_encoded_len(size_t n, int pad);
void picl__base64url_encode(char *out, const uint8_t *in, size_t n, int pad);
char *picl__base64url_encode_alloc(const uint8_t *in, size_t n, int pad);
picl_status picl__base64url_decode(uint8_t *out, size_t outcap, size_t *outlen, const char *in, size_t len);
picl_status picl__base64url_decode_alloc(uint8_t **out, size_t *outlen, const char *in, size_t len);

/* Upper bound of the decoded size of `len` base64 characters. */
size_t picl__base64_decoded_max(size_t len);

#endif
