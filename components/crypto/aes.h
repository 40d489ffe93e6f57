/* SPDX-License-Identifier: MPL-2.0 */
/* aes.h -- AES-256 in CBC (raw and PKCS#7) and GCM, through NSS PK11. */
#ifndef PICL_CRYPTO_AES_H
#define PICL_CRYPTO_AES_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

#define PICL_AES256_KEY_BYTES 32
#define PICL_AES_BLOCK_BYTES 16
#define PICL_AES_GCM_TAG_BYTES 16

/* Single-block AES-256 (ECB), for the FIPS-197 / SP 800-38A checks only.
 * len must be a multiple of 16. */
picl_status picl__aes256_ecb_encrypt(uint8_t *out, const uint8_t key[32], const uint8_t *in, size_t len);

/* Raw CBC, no padding: len a multiple of 16, out holds len bytes. */
picl_status picl__aes256_cbc_raw(int encrypt, uint8_t *out, const uint8_t key[32], const uint8_t iv[16],
                                 const uint8_t *in, size_t len);

/* CBC with PKCS#7.  Encrypt: out holds len + 16 - len % 16 bytes.
 * Decrypt: out holds len bytes; len must be a non-zero multiple of 16.
 * Any decryption failure (length, padding) is PICL_ERROR_DECRYPT and the
 * output is zeroed. */
size_t picl__aes256_cbc_pad_len(size_t len);
picl_status picl__aes256_cbc_encrypt(uint8_t *out, size_t *outlen, const uint8_t key[32],
                                     const uint8_t iv[16], const uint8_t *in, size_t len);
picl_status picl__aes256_cbc_decrypt(uint8_t *out, size_t *outlen, const uint8_t key[32],
                                     const uint8_t iv[16], const uint8_t *in, size_t len);

/* An AES-256 key imported into PK11 once for many CBC-PKCS#7 operations
 * (a run of records under one key; an import per record cost more than the
 * cipher).  The key bytes are not kept in our memory: only in the PK11
 * token, released by picl__aes_key_free.  Not for concurrent use.  The
 * operations behave as picl__aes256_cbc_encrypt / _decrypt. */
typedef struct picl_aes_key picl_aes_key;
picl_status picl__aes_key_new(picl_aes_key **out, const uint8_t key[32]);
void picl__aes_key_free(picl_aes_key *k);
picl_status picl__aes_key_cbc_encrypt(picl_aes_key *k, uint8_t *out, size_t *outlen, const uint8_t iv[16],
                                      const uint8_t *in, size_t len);
picl_status picl__aes_key_cbc_decrypt(picl_aes_key *k, uint8_t *out, size_t *outlen, const uint8_t iv[16],
                                      const uint8_t *in, size_t len);

/* GCM: ivlen >= 1 (0 is PICL_ERROR_INVALID_ARGUMENT), taglen 12..16.
 * Encrypt writes len bytes of ciphertext then taglen bytes of tag to out.
 * Decrypt takes ciphertext||tag (len >= taglen), writes len - taglen bytes;
 * a bad tag is PICL_ERROR_DECRYPT and the output is zeroed. */
picl_status picl__aes256_gcm_encrypt(uint8_t *out, const uint8_t key[32], const uint8_t *iv, size_t ivlen,
                                     const uint8_t *aad, size_t aadlen, const uint8_t *in, size_t len,
                                     size_t taglen);
picl_status picl__aes256_gcm_decrypt(uint8_t *out, const uint8_t key[32], const uint8_t *iv, size_t ivlen,
                                     const uint8_t *aad, size_t aadlen, const uint8_t *in, size_t len,
                                     size_t taglen);

/* The same with a 16-, 24- or 32-byte key (other lengths are
 * PICL_ERROR_INVALID_ARGUMENT); the AES-256 functions above call these. */
picl_status picl__aes_cbc_encrypt_k(uint8_t *out, size_t *outlen, const uint8_t *key, size_t keylen,
                                    const uint8_t iv[16], const uint8_t *in, size_t len);
picl_status picl__aes_cbc_decrypt_k(uint8_t *out, size_t *outlen, const uint8_t *key, size_t keylen,
                                    const uint8_t iv[16], const uint8_t *in, size_t len);
picl_status picl__aes_gcm_encrypt_k(uint8_t *out, const uint8_t *key, size_t keylen, const uint8_t *iv,
                                    size_t ivlen, const uint8_t *aad, size_t aadlen, const uint8_t *in,
                                    size_t len, size_t taglen);
picl_status picl__aes_gcm_decrypt_k(uint8_t *out, const uint8_t *key, size_t keylen, const uint8_t *iv,
                                    size_t ivlen, const uint8_t *aad, size_t aadlen, const uint8_t *in,
                                    size_t len, size_t taglen);

#endif
