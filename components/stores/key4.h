/* SPDX-License-Identifier: MPL-2.0 */
/* key4.h -- the SDR keys of a key4.db whose primary password uses Firefox 146+'s SHA-384 scheme. */
#ifndef PICL_STORES_KEY4_H
#define PICL_STORES_KEY4_H

#include <pk11pub.h>
#include "picl.h"

/*
 * Since Firefox 146 (its bundled NSS), a primary password is turned into the
 * key4.db master key as PBKDF2-HMAC-SHA256(SHA-384(global salt || password),
 * entry salt, iterations) with a 48-byte global salt; older NSS (Debian 12's
 * 3.87) only knows SHA-1(global salt || password), so PK11_CheckUserPassword
 * rejects the right password.  picl__key4_unlock() reads such a key4.db
 * (read-only, SQLite) itself, with NSS doing every cryptographic step:
 *   - checks the password against the 'password' metaData entry
 *     ("password-check", compared in constant time);
 *   - decrypts the SDR keys (CKA_ID f8000000000000000000000000000001) and
 *     imports them into NSS's internal slot as session keys: *aes (CKK_AES,
 *     32 bytes) and *des3 (CKK_DES3), each NULL when absent.
 * Results: PICL_OK; PICL_ERROR_UNSUPPORTED when the database does not use
 * this scheme (global salt not 48 bytes, other algorithms) -- NSS's own check
 * then decides; PICL_ERROR_WRONG_PASSWORD; PICL_ERROR_DATABASE when key4.db is
 * unreadable.  NSS must be initialised (picl__nss_acquire).  The caller frees
 * the keys with PK11_FreeSymKey.  Every intermediate secret is wiped.
 */
picl_status picl__key4_unlock(const char *key4_path, const char *password, PK11SymKey **aes,
                              PK11SymKey **des3);

#endif
