/* SPDX-License-Identifier: MPL-2.0 */
/* logins_sdr.c -- SDR blobs of logins.json and the keys of key4.db, by CKA_ID and key type (see logins.h). */
#include "stores/logins_int.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nss.h>
#include <secasn1.h>
#include <secerr.h>
#include <secoid.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/util.h"

/* The SDR key id every Firefox profile uses. */
static const uint8_t sdr_keyid[16] = {0xf8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

/* The SDR blob, as NSS's pk11sdr.c lays it out. */
typedef struct sdr_blob {
    SECItem keyid;
    SECAlgorithmID alg;
    SECItem data;
} sdr_blob;

SEC_ASN1_MKSUB(SECOID_AlgorithmIDTemplate)

static const SEC_ASN1Template blob_template[] = {
    {SEC_ASN1_SEQUENCE, 0, NULL, sizeof(sdr_blob)},
    {SEC_ASN1_OCTET_STRING, offsetof(sdr_blob, keyid), NULL, 0},
    {SEC_ASN1_INLINE | SEC_ASN1_XTRN, offsetof(sdr_blob, alg), SEC_ASN1_SUB(SECOID_AlgorithmIDTemplate), 0},
    {SEC_ASN1_OCTET_STRING, offsetof(sdr_blob, data), NULL, 0},
    {0, 0, NULL, 0},
};

picl_status picl__logins_fail(logins *l, picl_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->base.error, sizeof l->base.error, fmt, ap);
    va_end(ap);
    return st;
}

/* Opens key4.db of the profile as an extra NSS slot (SECMOD_OpenUserDB: NSS
 * may be up already with other databases), read-only unless rw; creates it
 * with an empty password when rw and absent; logs in with the primary
 * password when one is set. */
picl_status picl__logins_slot_open(logins *l, int rw)
{
    char spec[PATH_MAX + 200];
    const char *dir = picl__profile_dir(l->profile);
    if (strchr(dir, '\'') || strchr(dir, '"'))
        return picl__logins_fail(l, PICL_ERROR_UNSUPPORTED, "profile path with quotes");
    int n = snprintf(spec, sizeof spec,
                     "configdir='sql:%s' certPrefix='' keyPrefix='' "
                     "tokenDescription='PiCL profile keys' flags=%s",
                     dir, rw ? "optimizeSpace" : "readOnly,optimizeSpace");
    if (n < 0 || (size_t)n >= sizeof spec)
        return picl__logins_fail(l, PICL_ERROR_TOO_LARGE, "profile path too long");
    l->slot = SECMOD_OpenUserDB(spec);
    if (!l->slot)
        return picl__logins_fail(l, PICL_ERROR_NSS_INIT, "cannot open key4.db (NSS error %d)",
                                 PORT_GetError());
    if (rw && PK11_NeedUserInit(l->slot) && PK11_InitPin(l->slot, NULL, "") != SECSuccess)
        return picl__logins_fail(l, PICL_ERROR_CRYPTO, "cannot initialise key4.db");
    if (PK11_NeedLogin(l->slot) && !PK11_IsLoggedIn(l->slot, NULL)) {
        if (!l->password)
            return picl__logins_fail(l, PICL_ERROR_STATE, "key4.db has a primary password");
        if (PK11_CheckUserPassword(l->slot, l->password) != SECSuccess)
            return picl__logins_fail(l, PICL_ERROR_WRONG_PASSWORD, "wrong primary password");
    }
    return PICL_OK;
}

void picl__logins_slot_close(logins *l)
{
    for (size_t i = 0; i < sizeof l->found / sizeof l->found[0]; i++) {
        if (l->found[i].key)
            PK11_FreeSymKey(l->found[i].key);
        memset(&l->found[i], 0, sizeof l->found[i]);
    }
    if (!l->slot)
        return;
    PK11_Logout(l->slot);
    SECMOD_CloseUserDB(l->slot);
    PK11_FreeSlot(l->slot);
    l->slot = NULL;
}

/* The key in the slot with CKA_ID = id and key type `type`, or NULL. */
static PK11SymKey *find_key(PK11SlotInfo *slot, const SECItem *id, CK_KEY_TYPE type)
{
    PK11SymKey *found = NULL, *k = PK11_ListFixedKeysInSlot(slot, NULL, NULL);
    while (k) {
        PK11SymKey *next = PK11_GetNextSymKey(k);
        SECItem kid = {siBuffer, NULL, 0};
        if (!found && PK11_GetSymKeyType(k) == type &&
            PK11_ReadRawAttribute(PK11_TypeSymKey, k, CKA_ID, &kid) == SECSuccess) {
            if (kid.len == id->len && memcmp(kid.data, id->data, id->len) == 0)
                found = PK11_ReferenceSymKey(k);
            SECITEM_FreeItem(&kid, PR_FALSE);
        }
        PK11_FreeSymKey(k);
        k = next;
    }
    return found;
}

/* A session copy of token key k inside the same softoken (the key
 * concatenated with nothing: the same value, never out of the token), or k
 * itself when the token refuses.  Each operation with a key4.db key makes
 * softoken read and unwrap the key's attributes from the database again
 * (two thirds of a login's decryption); a session key is read once. */
static PK11SymKey *session_copy(PK11SymKey *k, CK_KEY_TYPE type)
{
    CK_KEY_DERIVATION_STRING_DATA none = {NULL, 0};
    SECItem param = {siBuffer, (unsigned char *)&none, sizeof none};
    PK11SymKey *s = PK11_DeriveWithFlags(k, CKM_CONCATENATE_BASE_AND_DATA, &param,
                                         type == CKK_AES ? CKM_AES_CBC_PAD : CKM_DES3_CBC_PAD, CKA_DECRYPT, 0,
                                         CKF_ENCRYPT);
    if (!s || PK11_GetKeyLength(s) != PK11_GetKeyLength(k)) {
        if (s)
            PK11_FreeSymKey(s);
        return k;
    }
    PK11_FreeSymKey(k);
    return s;
}

/* find_key() in the open slot as a session copy, remembered until the slot
 * closes (a key is found or made in it, never removed from it while it is
 * open). */
static PK11SymKey *slot_key(logins *l, const SECItem *id, CK_KEY_TYPE type)
{
    size_t n = sizeof l->found / sizeof l->found[0], i;
    for (i = 0; i < n && l->found[i].key; i++)
        if (l->found[i].type == type && l->found[i].idlen == id->len &&
            memcmp(l->found[i].id, id->data, id->len) == 0)
            return PK11_ReferenceSymKey(l->found[i].key);
    PK11SymKey *k = find_key(l->slot, id, type);
    if (k)
        k = session_copy(k, type);
    if (k && i < n && id->len <= sizeof l->found[i].id) {
        l->found[i].key = PK11_ReferenceSymKey(k);
        l->found[i].type = type;
        memcpy(l->found[i].id, id->data, id->len);
        l->found[i].idlen = id->len;
    }
    return k;
}

/* The SDR key for blob key id `id` and key type `type` (a new reference). */
static PK11SymKey *key_for(logins *l, const SECItem *id, CK_KEY_TYPE type)
{
    if (!l->direct)
        return l->slot ? slot_key(l, id, type) : NULL;
    if (id->len != sizeof sdr_keyid || memcmp(id->data, sdr_keyid, sizeof sdr_keyid) != 0)
        return NULL;
    PK11SymKey *k = type == CKK_AES ? l->k_aes : type == CKK_DES3 ? l->k_des3 : NULL;
    return k ? PK11_ReferenceSymKey(k) : NULL;
}

/* Decrypts one base64 SDR blob into a malloc()ed NUL-terminated string. */
picl_status picl__logins_decrypt(logins *l, const char *b64, char **out, size_t *outlen)
{
    uint8_t *der = NULL;
    size_t derlen = 0;
    picl_status rc = PICL_ERROR_DECRYPT;
    PLArenaPool *arena = NULL;
    PK11SymKey *key = NULL;
    uint8_t *plain = NULL;
    unsigned int plen = 0;
    *out = NULL;
    if (!b64 || picl__base64_decode_alloc(&der, &derlen, b64, strlen(b64)) != PICL_OK)
        goto done;
    arena = PORT_NewArena(1024);
    sdr_blob blob;
    memset(&blob, 0, sizeof blob);
    SECItem in = {siBuffer, der, (unsigned)derlen}, iv = {siBuffer, NULL, 0};
    if (!arena || SEC_QuickDERDecodeItem(arena, &blob, blob_template, &in) != SECSuccess ||
        SEC_QuickDERDecodeItem(arena, &iv, SEC_OctetStringTemplate, &blob.alg.parameters) != SECSuccess)
        goto done;
    SECOidTag alg = SECOID_GetAlgorithmTag(&blob.alg);
    CK_MECHANISM_TYPE mech;
    unsigned block;
    if (alg == SEC_OID_AES_256_CBC) {
        key = key_for(l, &blob.keyid, CKK_AES);
        mech = CKM_AES_CBC_PAD;
        block = 16;
    } else if (alg == SEC_OID_DES_EDE3_CBC) {
        key = key_for(l, &blob.keyid, CKK_DES3);
        mech = CKM_DES3_CBC_PAD;
        block = 8;
    } else {
        goto done;
    }
    if (!key || iv.len != block || blob.data.len == 0 || blob.data.len % block)
        goto done;
    if (!(plain = malloc(blob.data.len + 1)))
        goto done;
    if (PK11_Decrypt(key, mech, &iv, plain, &plen, blob.data.len, blob.data.data, blob.data.len) !=
        SECSuccess)
        goto done;
    plain[plen] = '\0';
    *out = (char *)plain;
    *outlen = plen;
    plain = NULL;
    rc = PICL_OK;
done:
    if (plain)
        picl__zfree(plain, blob.data.len + 1);
    if (key)
        PK11_FreeSymKey(key);
    if (arena)
        PORT_FreeArena(arena, PR_TRUE);
    free(der);
    return rc;
}

/* The key new blobs use: AES-256 (3DES on an old profile that has no AES
 * key), generated as Firefox does when the profile has none. */
picl_status picl__logins_write_key(logins *l, PK11SymKey **key, int *aes)
{
    SECItem id = {siBuffer, (unsigned char *)sdr_keyid, sizeof sdr_keyid};
    *aes = 1;
    if (l->direct) { /* key4.db is not written under a password NSS cannot check */
        if (l->k_aes || l->k_des3) {
            *aes = l->k_aes != NULL;
            *key = PK11_ReferenceSymKey(l->k_aes ? l->k_aes : l->k_des3);
            return PICL_OK;
        }
        return picl__logins_fail(l, PICL_ERROR_UNSUPPORTED, "key4.db has no SDR key to encrypt with");
    }
    if ((*key = slot_key(l, &id, CKK_AES)))
        return PICL_OK;
    if ((*key = slot_key(l, &id, CKK_DES3))) {
        *aes = 0;
        return PICL_OK;
    }
    *key = PK11_TokenKeyGen(l->slot, CKM_AES_KEY_GEN, NULL, 32, &id, PR_TRUE, NULL);
    if (!*key)
        return picl__logins_fail(l, PICL_ERROR_CRYPTO, "cannot create the key in key4.db (NSS %d)",
                                 PORT_GetError());
    *key = session_copy(*key, CKK_AES); /* the new key is in key4.db: its copy encrypts */
    return PICL_OK;
}

/* Encrypts s into a malloc()ed base64 SDR blob. */
picl_status picl__logins_encrypt(logins *l, PK11SymKey *key, int aes, const char *s, size_t n, char **b64)
{
    unsigned block = aes ? 16 : 8;
    uint8_t ivb[16];
    uint8_t *ct = malloc(n + block);
    PLArenaPool *arena = PORT_NewArena(1024);
    picl_status rc = PICL_ERROR_CRYPTO;
    unsigned int ctlen = 0;
    *b64 = NULL;
    if (!ct || !arena) {
        rc = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    if ((rc = picl__random_bytes(ivb, block)) != PICL_OK)
        goto done;
    rc = PICL_ERROR_CRYPTO;
    SECItem iv = {siBuffer, ivb, block};
    if (PK11_Encrypt(key, aes ? CKM_AES_CBC_PAD : CKM_DES3_CBC_PAD, &iv, ct, &ctlen, (unsigned)(n + block),
                     (const unsigned char *)s, (unsigned)n) != SECSuccess)
        goto done;
    sdr_blob blob;
    memset(&blob, 0, sizeof blob);
    blob.keyid.data = (unsigned char *)sdr_keyid;
    blob.keyid.len = sizeof sdr_keyid;
    blob.data.data = ct;
    blob.data.len = ctlen;
    SECItem *ivder = SEC_ASN1EncodeItem(arena, NULL, &iv, SEC_OctetStringTemplate);
    if (!ivder || SECOID_SetAlgorithmID(arena, &blob.alg, aes ? SEC_OID_AES_256_CBC : SEC_OID_DES_EDE3_CBC,
                                        ivder) != SECSuccess)
        goto done;
    SECItem *der = SEC_ASN1EncodeItem(arena, NULL, &blob, blob_template);
    if (!der)
        goto done;
    if (!(*b64 = picl__base64_encode_alloc(der->data, der->len))) {
        rc = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    rc = PICL_OK;
done:
    free(ct);
    if (arena)
        PORT_FreeArena(arena, PR_TRUE);
    return rc == PICL_OK ? rc : picl__logins_fail(l, rc, "encryption with key4.db failed");
}
