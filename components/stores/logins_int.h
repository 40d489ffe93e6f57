/* SPDX-License-Identifier: MPL-2.0 */
/* logins_int.h -- what logins.c (logins.json, the store) and logins_sdr.c (key4.db, SDR blobs) share. */
#ifndef PICL_STORES_LOGINS_INT_H
#define PICL_STORES_LOGINS_INT_H

#include <limits.h>
#include <pk11pub.h>
#include "stores/logins.h"
#include "stores/profile.h"

/* The passwords store (logins.h). */
typedef struct logins {
    picl_store base;
    picl_profile *profile;
    int nss;
    char json_path[PATH_MAX];
    char key_path[PATH_MAX];
    char state_path[PATH_MAX];
    char *password;     /* primary password, wiped on close; NULL = none needed */
    json_t *doc;        /* logins.json as read (or as we last wrote it) */
    json_t *synced;     /* guid -> digest of what was last synced */
    json_t *reported;   /* guid -> digest reported by changes() (null = tombstone) */
    PK11SlotInfo *slot; /* key4.db while an operation runs */
    /* keys of slot by CKA_ID and type, as session copies, until the slot
     * closes (logins_sdr.c slot_key: per blob, listing the token's keys and
     * softoken's reading the key from key4.db cost more than the AES) */
    struct {
        PK11SymKey *key;
        CK_KEY_TYPE type;
        unsigned char id[32];
        unsigned idlen;
    } found[2];
    int direct;                 /* keys read by key4.c (Firefox 146+ primary password) */
    PK11SymKey *k_aes, *k_des3; /* those keys, as NSS session keys */
    size_t unreadable;          /* live entries the last changes()/all()/apply() could not decrypt */
} logins;

/* Sets the store error (printf-style) and returns st. */
picl_status picl__logins_fail(logins *l, picl_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Opens the profile's key4.db as an extra NSS slot into l->slot (read-only
 * unless rw; created with an empty password when rw and absent) and logs in
 * with l->password when it has a primary password (PICL_ERROR_STATE when
 * none is known, PICL_ERROR_WRONG_PASSWORD when NSS rejects it). */
picl_status picl__logins_slot_open(logins *l, int rw);
void picl__logins_slot_close(logins *l);

/* Decrypts a base64 SDR blob (key by CKA_ID and type) into a malloc()ed
 * NUL-terminated buffer the caller picl__zfree()s; PICL_ERROR_DECRYPT for
 * any failure. */
picl_status picl__logins_decrypt(logins *l, const char *b64, char **out, size_t *outlen);

/* The key new blobs use (a new reference): AES-256, 3DES on an old profile
 * without AES key, created as Firefox does when there is none. */
picl_status picl__logins_write_key(logins *l, PK11SymKey **key, int *aes);

/* Encrypts s[0..n) into a malloc()ed base64 SDR blob. */
picl_status picl__logins_encrypt(logins *l, PK11SymKey *key, int aes, const char *s, size_t n, char **b64);

#endif
