/* SPDX-License-Identifier: MPL-2.0 */
/* sdr.h -- secrets at rest with NSS SDR (PK11SDR_*) in the internal key slot,
 * as Firefox keeps saved passwords (client.md section 4). */
#ifndef PICL_CRYPTO_SDR_H
#define PICL_CRYPTO_SDR_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

/*
 * The internal key slot is the key database NSS was first opened on: the
 * Firefox profile inside the browser, the state directory for the picl
 * command (picl__nss_acquire_dir).  A fresh database is initialised with an
 * empty password, as Firefox does.  A database protected by a primary
 * password that is not logged in is PICL_ERROR_STATE: never bypassed.
 * A slot that cannot hold keys (a no-DB NSS) is PICL_ERROR_UNSUPPORTED.
 */

/* Encrypts in[0..len) into *b64 (base64 of the SDR blob; malloc()ed). */
picl_status picl__sdr_encrypt(char **b64, const uint8_t *in, size_t len);

/* Decrypts; *out is malloc()ed (*outlen bytes), the caller picl__zfree()s it.
 * A blob that is malformed or under another key is PICL_ERROR_DECRYPT. */
picl_status picl__sdr_decrypt(uint8_t **out, size_t *outlen, const char *b64);

/* Logs in to the internal key slot with a primary password (checked with
 * PK11_CheckUserPassword). Wrong password: PICL_ERROR_WRONG_PASSWORD. */
picl_status picl__sdr_login(const char *password);

#endif
