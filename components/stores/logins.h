/* SPDX-License-Identifier: MPL-2.0 */
/* logins.h -- the passwords store over a Firefox profile's logins.json and key4.db. */
#ifndef PICL_STORES_LOGINS_H
#define PICL_STORES_LOGINS_H

#include <stddef.h>
#include <stdint.h>
#include "stores/store.h"

/*
 * picl__logins_open(&s, PROFILE, STATE_DIR, ask, arg, err, errlen) opens the
 * saved logins of a Firefox profile for the sync engine (store.h) while
 * Firefox is NOT running (the profile lock of profile.h is held until close).
 *
 * Records are records.md §3 passwords records, id = the login's GUID; fields
 * a login has beyond those (encryptedUnknownFields, Firefox's own) are kept.
 * Unknown fields of an incoming record are stored encrypted in
 * encryptedUnknownFields, as Firefox does, and given back on read.
 *
 * Encryption: encryptedUsername/encryptedPassword are base64 SDR blobs
 * (DER {keyid, {alg, iv}, ciphertext}).  The key is found in the profile's
 * key4.db by CKA_ID AND key type -- AES-256-CBC for current Firefox, 3DES-CBC
 * for old profiles; both may exist under one id -- and used with
 * PK11_Encrypt/PK11_Decrypt, because the SDR API of older NSS cannot use
 * Firefox's AES key.  New blobs use the AES-256 key (the 3DES one only on a
 * profile that has no AES key).  A profile without key4.db gets one at the
 * first apply, made as Firefox makes it (empty password, AES-256 key with
 * id f8000000000000000000000000000001).  key4.db is opened read-only except
 * while apply()/wipe() write.  An entry that cannot be decrypted is skipped
 * and kept as it is -- never uploaded, never deleted, not even by an incoming
 * tombstone -- and counted (picl__logins_unreadable).
 *
 * Primary password: when key4.db has one, `ask(arg, buf, cap)` is called to
 * get it (a NUL-terminated string in buf); it is checked with
 * PK11_CheckUserPassword and never bypassed.  No callback: PICL_ERROR_STATE;
 * wrong password: PICL_ERROR_WRONG_PASSWORD; the callback's own error is
 * returned as is.  The password is kept (wiped on close) to reopen key4.db
 * for writing.
 *
 * logins.json is read at open: a file that is not the JSON Firefox writes
 * ({"logins": [...], "nextId": n, ...}) is PICL_ERROR_ENCODING, and nothing
 * is written.  It is rewritten atomically (temp file, fsync, rename); unknown
 * top-level members and unknown entry members are kept; nextId is bumped.
 *
 * Change tracking: STATE_DIR/passwords-<hash of the profile path>.json keeps,
 * per GUID, a digest of what was last synced (the non-secret fields, the
 * ciphertexts and timePasswordChanged: never a cleartext).  A login whose
 * digest differs or that is new is a change; a synced GUID that disappeared
 * is a tombstone.  apply() records what it writes as synced.
 *
 * Deletions, as Firefox (storage-json) keeps them: Firefox removes a login
 * that was never synced (everSynced false) from the file, and turns one that
 * was into a tombstone entry {id, guid, timePasswordChanged,
 * timeLastBreachAlertDismissed, syncCounter, everSynced, deleted: true}
 * (no encrypted fields; syncCounter > 0 = not uploaded yet).  Such an entry
 * is a tombstone change when its GUID was synced by us or its syncCounter is
 * above 0; it is never a record of all()/get().  mark_synced() does what
 * Firefox's sync does after an upload (resetSyncCounter): syncCounter minus
 * the count seen by changes(), everSynced true -- the tombstone stays in the
 * file, as Firefox leaves it.  An incoming tombstone turns the login into
 * such an entry (syncCounter 0, everSynced true: nothing left to upload), so
 * Firefox sees it gone and does not upload it again; an incoming record for
 * a tombstone's GUID replaces the tombstone with a new entry.
 *
 * Every failure sets the store error / err.  The records returned hold
 * cleartext passwords: the caller should not keep them longer than needed.
 */
typedef picl_status (*picl_password_cb)(void *arg, char *buf, size_t cap);

picl_status picl__logins_open(picl_store **out, const char *profile_dir, const char *state_dir,
                              picl_password_cb ask, void *ask_arg, char *err, size_t errlen);

/* How many logins (tombstones aside) the store's last changes(), all() or
 * apply() found and could not decrypt: they are kept as they are.  0 for a
 * store that is not a logins store. */
size_t picl__logins_unreadable(const picl_store *s);

#endif
