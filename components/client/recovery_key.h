/* SPDX-License-Identifier: MPL-2.0 */
/* recovery_key.h -- the account recovery key of keyserver.md section 9: its text form, its id, and the sealing of kB under it. */
#ifndef PICL_CLIENT_RECOVERY_KEY_H
#define PICL_CLIENT_RECOVERY_KEY_H

#include <stdint.h>

#include "picl.h"

/*
 * A recovery key is 32 random bytes shown once as 52 base32 characters
 * (RFC 4648 alphabet, no padding, the last 4 bits zero) in 13 groups of 4
 * joined by '-'.  The keyserver stores only its id and recoveryData (kB
 * sealed with keys derived from it); it never sees the key or kB.
 * Every output holding a secret is the caller's to wipe.
 */
#define PICL_RK_TEXT_LEN 64 /* 52 characters + 12 dashes; buffers hold one more */

/* Formats key into out (PICL_RK_TEXT_LEN + 1 bytes). */
void picl__rk_format(char out[PICL_RK_TEXT_LEN + 1], const uint8_t key[32]);
/* Parses what a user typed: case-insensitive, spaces, tabs, dashes and
 * line ends ignored; exactly 52 characters of the alphabet with the last
 * 4 bits zero, else PICL_ERROR_INVALID_ARGUMENT (key zeroed). */
picl_status picl__rk_parse(uint8_t key[32], const char *text);
/* recoveryKeyId = hex(HKDF(key, no salt, KW("recoveryKeyId"), 16)). */
picl_status picl__rk_id(char id[33], const uint8_t key[32]);
/* recoveryData: the record cipher (records.md 3) of {"kB": hex(kB)} under
 * HKDF(key, no salt, KW("recoveryKey"), 64), macInput label
 * "picl-recovery-v1" with the field recoveryKeyId; as the JSON text
 * {"ciphertext","IV","hmac"} (*data malloc()ed, caller frees). */
picl_status picl__rk_seal(char **data, const uint8_t key[32], const uint8_t kb[32]);
/* Opens recoveryData into kb.  Anything that does not check out (JSON,
 * MAC, cleartext shape) is PICL_ERROR_DECRYPT. */
picl_status picl__rk_open(uint8_t kb[32], const uint8_t key[32], const char *data);

#endif
