/* SPDX-License-Identifier: MPL-2.0 */
/* records.h -- collection keys, encrypted records with kid, and the signed
 * class map of records.md sections 2-4 (no network, no store). */
#ifndef PICL_CLIENT_RECORDS_H
#define PICL_CLIENT_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "picl.h"
#include "crypto/envelope.h"

#define PICL_COLLECTION_NAME_MAX 32

/* A collection's security class and key generation. */
typedef struct picl_class_entry {
    char cls;            /* 'A' or 'B' */
    uint32_t generation; /* >= 1 */
} picl_class_entry;

/* encKey || hmacKey = HKDF(kX, no salt, KW("collection") ":" c ":" gen, 64).
 * collection: 1-32 chars of [A-Za-z0-9._-]; generation >= 1. */
picl_status picl__collection_keys(picl_keypair *out, const uint8_t kx[32], const char *collection,
                                  uint32_t generation);

/* "A:3" style kid text; parse is strict (class A|B, decimal generation
 * 1..2^31-1 without leading zeros). */
picl_status picl__kid_parse(const char *kid, picl_class_entry *out);
void picl__kid_format(char out[16], const picl_class_entry *e);

/* Encrypts cleartext (a JSON object with a string "id", the BSO id) of
 * `collection` into the BSO payload text {"ciphertext","IV","hmac","kid"}
 * with the v2 MAC (records.md 3: binds collection, BSO id, kid, IV and
 * ciphertext); *payload is malloc()ed, caller frees. */
picl_status picl__record_encrypt(char **payload, const char *collection, const json_t *cleartext,
                                 const picl_keypair *keys, const picl_class_entry *kid);

/* Why a record was refused, for the user (client.md 7).  The reasons say
 * nothing about the cleartext: everything up to and including the MAC is
 * "wrong kid" or "hmac mismatch"; only a record whose MAC verified can be
 * "not JSON" or "id mismatch". */
typedef enum picl_record_fault {
    PICL_RECORD_FAULT_NONE = 0,
    PICL_RECORD_FAULT_KID,      /* "wrong kid": missing, malformed, or not allowed by the class map */
    PICL_RECORD_FAULT_HMAC,     /* "hmac mismatch": payload fields missing or MAC wrong */
    PICL_RECORD_FAULT_NOT_JSON, /* "not JSON": the payload or the cleartext does not parse */
    PICL_RECORD_FAULT_ID,       /* "id mismatch": the cleartext names another record */
} picl_record_fault;
const char *picl__record_fault_text(picl_record_fault f);

/* Decrypts the BSO (collection, bso_id, payload).  `expect` is what the
 * class map says for this collection.  A record under a weaker class (kid A
 * while the map says B) is always refused: a server cannot make us accept
 * data readable with kA in a class-B collection.  With allow_other == 0 the
 * kid must equal `expect` exactly; with 1 another generation, or class B in
 * a class-A collection, is accepted (a move in progress: the kid names the
 * key, which the caller derived from the kid with picl__record_kid()).
 * Order: kid, then the v2 MAC in constant time, then decryption; the
 * cleartext must be a JSON object whose "id" equals bso_id.  Every failure
 * is PICL_ERROR_DECRYPT (PICL_ERROR_NO_MEMORY aside) and, when fault is not
 * NULL, *fault says which check refused it.  *clear is a new reference on
 * success. */
picl_status picl__record_kid(const char *payload, picl_class_entry *kid);
picl_status picl__record_decrypt(json_t **clear, const char *collection, const char *bso_id,
                                 const char *payload, const picl_keypair *keys,
                                 const picl_class_entry *expect, int allow_other, picl_record_fault *fault);

/* The same for a run of records, each payload parsed once and the keys
 * imported once (picl_sealer, crypto/envelope.h), with the same checks in
 * the same order:
 *  picl__record_payload_load: the payload text as a JSON object (size cap,
 *    duplicate keys refused); PICL_ERROR_DECRYPT when it is not one
 *    (fault "not JSON"), PICL_ERROR_NO_MEMORY; *obj is the caller's.
 *  picl__record_kid_obj: its kid (PICL_ERROR_DECRYPT when missing/bad).
 *  picl__record_decrypt_obj: keys NULL = no key for this record: refused
 *    at the MAC ("hmac mismatch"), never read.
 *  picl__record_encrypt_with: as picl__record_encrypt. */
picl_status picl__record_payload_load(const char *payload, json_t **obj);
picl_status picl__record_kid_obj(const json_t *payload, picl_class_entry *kid);
picl_status picl__record_decrypt_obj(json_t **clear, const char *collection, const char *bso_id,
                                     const json_t *payload, picl_sealer *keys, const picl_class_entry *expect,
                                     int allow_other, picl_record_fault *fault);
picl_status picl__record_encrypt_with(char **payload, const char *collection, const json_t *cleartext,
                                      picl_sealer *keys, const picl_class_entry *kid);

/* A BSO {"id": id, "payload": payload[, "ttl": ttl]} (ttl < 0: none) as
 * compact JSON text, byte for byte what jansson's json_dumps(JSON_COMPACT)
 * writes for that object, without building it (malloc()ed; NULL for want
 * of memory).  id and payload are valid UTF-8 (as jansson strings are). */
char *picl__record_bso_text(const char *id, const char *payload, size_t plen, int64_t ttl);

/* The payload's four texts without a JSON tree: what picl__record_decrypt_obj
 * reads of the payload object.  picl__record_envelope_load: the same
 * results as picl__record_payload_load followed by reading the fields (a
 * field missing or not a string is NULL), the same statuses; the common
 * shape (an object of at most those four members, each once, plain ASCII
 * strings) is read in one pass, anything else through the tree.
 * picl__record_envelope_load_tree: always through the tree (tests compare
 * the two).  picl__record_kid_env, picl__record_decrypt_env: as the _obj
 * functions (env NULL = a payload that is not a JSON object).  env is the
 * caller's: picl__record_envelope_free. */
typedef struct picl_envelope {
    char *buf; /* the texts, each NUL-terminated */
    const char *ciphertext, *iv, *hmac, *kid;
} picl_envelope;
picl_status picl__record_envelope_load(const char *payload, picl_envelope *env);
picl_status picl__record_envelope_load_tree(const char *payload, picl_envelope *env);
void picl__record_envelope_free(picl_envelope *env);
picl_status picl__record_kid_env(const picl_envelope *env, picl_class_entry *kid);
picl_status picl__record_decrypt_env(json_t **clear, const char *collection, const char *bso_id,
                                     const picl_envelope *env, picl_sealer *keys,
                                     const picl_class_entry *expect, int allow_other,
                                     picl_record_fault *fault);

/* ---- the class map (records.md section 4) ------------------------------ */

typedef struct picl_classmap_item {
    char name[PICL_COLLECTION_NAME_MAX + 1];
    picl_class_entry e;
} picl_classmap_item;

typedef struct picl_classmap {
    uint64_t version;
    uint64_t epoch; /* the account's key epoch the map was made in (>= 1) */
    char kb_fp[33]; /* hex(H(kB))[0:32]: a hint for messages, never decided on */
    char hmac[65];  /* the map's hmac as signed or received ("" = unsigned) */
    size_t n;
    picl_classmap_item items[64];
} picl_classmap;

/* The defaults the first device writes: bookmarks A, history A, passwords B,
 * all at generation 1, version 1, epoch 1. */
picl_status picl__classmap_defaults(picl_classmap *m, const uint8_t kb[32]);

/* The class a collection joins the map with when a device first syncs it:
 * 'A' for bookmarks, history, tabs, forms, prefs and clients, 'B' for
 * passwords and any collection not named here (the stronger default). */
char picl__classmap_default_class(const char *collection);

/* Lookup and update; set adds the collection when absent. */
const picl_class_entry *picl__classmap_get(const picl_classmap *m, const char *collection);
picl_status picl__classmap_set(picl_classmap *m, const char *collection, const picl_class_entry *e);

/* Serialises and authenticates: payload text {"version","epoch","kB",
 * "collections","hmac"} with "hmac" = HMAC-SHA256(HKDF(kB, no salt,
 * KW("classmap"), 32), canonical JSON without hmac); the kB field is set
 * from kb.  *payload is malloc()ed; m->hmac and m->kb_fp are updated. */
picl_status picl__classmap_sign(char **payload, picl_classmap *m, const uint8_t kb[32]);

/* Parses and checks a map from the server: the HMAC is verified first,
 * under kb, whatever the map's kB field says.  PICL_ERROR_CLASSMAP for a
 * malformed map or a wrong HMAC (PICL_ERROR_NO_MEMORY aside).  Versions
 * (replays) are the caller's business (the anchor rules of records.md 4).
 * On success *m holds the map, m->hmac its hmac. */
picl_status picl__classmap_verify(picl_classmap *m, const char *payload, const uint8_t kb[32]);

/* Parses a map without the HMAC: a map this device accepted earlier (its
 * own copy, from the local state; for strict mode, when kB is not in
 * memory), or the server's unverifiable map as one source of the rebuild
 * after a password reset (which only ever strengthens classes). */
picl_status picl__classmap_parse_trusted(picl_classmap *m, const char *payload);

/* hex(SHA-256(k)[0:16]) into out (33 bytes): kA_fp / kB_fp / X-Client-State. */
picl_status picl__key_fingerprint(char out[33], const uint8_t key[32]);

/* 1 when name is a valid collection name (1-32 of [A-Za-z0-9._-]). */
int picl__collection_name_ok(const char *name);

#endif
