/* SPDX-License-Identifier: MPL-2.0 */
/* bundle.h -- keyserver bundles: XOR-encrypted, HMAC-authenticated payloads
 * (keyserver.md section 5). */
#ifndef PICL_PROTOCOL_BUNDLE_H
#define PICL_PROTOCOL_BUNDLE_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

/*
 *     hmacKey(32) || xorKey(len) = HKDF(key, no salt, KW(context), 32 + len)
 *     bundle = (payload xor xorKey) || HMAC-SHA256(hmacKey, payload xor xorKey)
 *
 * The bundle travels as lowercase hex in JSON.  Every bundle of the protocol
 * has a fixed payload length, known to the receiver, so the opening side
 * states the length it expects and anything else is a failed opening.
 *
 * Contexts (the string after KW's prefix) and keys of the protocol:
 */
#define PICL_BUNDLE_AUTH_FINISH "auth/finish" /* key srpK; authToken (32) */
#define PICL_BUNDLE_SESSION_CREATE                                                                           \
    "session/create" /* requestKey(authToken);
                                                         keyFetchToken || sessionToken (64) */
#define PICL_BUNDLE_PASSWORD_CHANGE                                                                          \
    "password/change" /* requestKey(authToken);
                                                         keyFetchToken || accountResetToken (64) */
#define PICL_BUNDLE_ACCOUNT_KEYS                                                                             \
    "account/keys" /* requestKey(keyFetchToken);
                                                         kA || wrapKb (64) */
#define PICL_BUNDLE_ACCOUNT_RESET                                                                            \
    "account/reset" /* requestKey(accountResetToken);
                                                         wrapKb || verifier (288) */

#define PICL_BUNDLE_KEY_BYTES 32
#define PICL_BUNDLE_MAC_BYTES 32
/* Hard cap on a payload (the largest of the protocol is 288 bytes). */
#define PICL_BUNDLE_MAX_PAYLOAD 1024u
size_t picl__bundle_max_payload(void);

/* The sealed size of a payload of len bytes: len + PICL_BUNDLE_MAC_BYTES. */
size_t picl__bundle_len(size_t len);

/*
 * The two derived keys, exposed for the published intermediate vectors:
 * hmac_key receives 32 bytes, xor_key len bytes.  Both are secrets: the
 * caller wipes them.  PICL_ERROR_TOO_LARGE when len > PICL_BUNDLE_MAX_PAYLOAD,
 * PICL_ERROR_INVALID_ARGUMENT for NULL pointers or an empty context.
 */
picl_status picl__bundle_keys(uint8_t hmac_key[32], uint8_t *xor_key, size_t len,
                              const uint8_t key[PICL_BUNDLE_KEY_BYTES], const char *context);

/*
 * Seals payload[0..len) into out, which holds picl__bundle_len(len) bytes.
 * 1 <= len <= PICL_BUNDLE_MAX_PAYLOAD (else PICL_ERROR_INVALID_ARGUMENT /
 * PICL_ERROR_TOO_LARGE).  On any failure out is zeroed.
 */
picl_status picl__bundle_seal(uint8_t *out, const uint8_t key[PICL_BUNDLE_KEY_BYTES], const char *context,
                              const uint8_t *payload, size_t len);

/*
 * Opens a bundle of bundlelen bytes that must hold exactly outlen bytes of
 * payload.  The MAC is checked in constant time before anything is XORed.
 * Every failure that depends on the data (wrong length, bad MAC, wrong key or
 * context) is PICL_ERROR_DECRYPT; a NULL pointer, an empty context or outlen 0
 * is PICL_ERROR_INVALID_ARGUMENT, an internal NSS failure PICL_ERROR_CRYPTO.
 * On any failure out[0..outlen) is zeroed.
 */
picl_status picl__bundle_open(uint8_t *out, size_t outlen, const uint8_t key[PICL_BUNDLE_KEY_BYTES],
                              const char *context, const uint8_t *bundle, size_t bundlelen);

/* Seal into lowercase hex: *hex is malloc()ed and NUL-terminated; the caller
 * frees it (free(); the text is not secret once sealed). */
picl_status picl__bundle_seal_hex(char **hex, const uint8_t key[PICL_BUNDLE_KEY_BYTES], const char *context,
                                  const uint8_t *payload, size_t len);

/* Opens a hex bundle as received in JSON (hex is hexlen characters, need
 * not be NUL-terminated).  Malformed hex or a wrong length is
 * PICL_ERROR_DECRYPT, like a bad MAC; out is zeroed on any failure. */
picl_status picl__bundle_open_hex(uint8_t *out, size_t outlen, const uint8_t key[PICL_BUNDLE_KEY_BYTES],
                                  const char *context, const char *hex, size_t hexlen);

#endif
