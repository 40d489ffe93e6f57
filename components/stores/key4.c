/* SPDX-License-Identifier: MPL-2.0 */
/* key4.c -- reading key4.db's SDR keys under a Firefox 146+ primary password (see key4.h). */
#include "stores/key4.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <secasn1.h>
#include <secoid.h>

#include "crypto/aes.h"
#include "crypto/kdf.h"
#include "crypto/util.h"

#define KEY4_GLOBAL_SALT 48     /* SHA-384 scheme; SHA-1 profiles have 20 */
#define KEY4_MAX_ITER 10000000u /* a bound against a hostile file */

static const uint8_t sdr_keyid[16] = {0xf8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

/* EncryptedPrivateKeyInfo-like item: { AlgorithmIdentifier pbes2, OCTET STRING } */
typedef struct enc_item {
    SECAlgorithmID alg;
    SECItem data;
} enc_item;

typedef struct pbes2_params {
    SECAlgorithmID kdf;
    SECAlgorithmID enc;
} pbes2_params;

typedef struct pbkdf2_params {
    SECItem salt;
    SECItem iter;
    SECItem keylen;
    SECAlgorithmID *prf;
} pbkdf2_params;

SEC_ASN1_MKSUB(SECOID_AlgorithmIDTemplate)

static const SEC_ASN1Template enc_item_template[] = {
    {SEC_ASN1_SEQUENCE, 0, NULL, sizeof(enc_item)},
    {SEC_ASN1_INLINE | SEC_ASN1_XTRN, offsetof(enc_item, alg), SEC_ASN1_SUB(SECOID_AlgorithmIDTemplate), 0},
    {SEC_ASN1_OCTET_STRING, offsetof(enc_item, data), NULL, 0},
    {0, 0, NULL, 0},
};

static const SEC_ASN1Template pbes2_template[] = {
    {SEC_ASN1_SEQUENCE, 0, NULL, sizeof(pbes2_params)},
    {SEC_ASN1_INLINE | SEC_ASN1_XTRN, offsetof(pbes2_params, kdf), SEC_ASN1_SUB(SECOID_AlgorithmIDTemplate),
     0},
    {SEC_ASN1_INLINE | SEC_ASN1_XTRN, offsetof(pbes2_params, enc), SEC_ASN1_SUB(SECOID_AlgorithmIDTemplate),
     0},
    {0, 0, NULL, 0},
};

static const SEC_ASN1Template pbkdf2_template[] = {
    {SEC_ASN1_SEQUENCE, 0, NULL, sizeof(pbkdf2_params)},
    {SEC_ASN1_OCTET_STRING, offsetof(pbkdf2_params, salt), NULL, 0},
    {SEC_ASN1_INTEGER, offsetof(pbkdf2_params, iter), NULL, 0},
    {SEC_ASN1_INTEGER | SEC_ASN1_OPTIONAL, offsetof(pbkdf2_params, keylen), NULL, 0},
    {SEC_ASN1_POINTER | SEC_ASN1_XTRN | SEC_ASN1_OPTIONAL, offsetof(pbkdf2_params, prf),
     SEC_ASN1_SUB(SECOID_AlgorithmIDTemplate), 0},
    {0, 0, NULL, 0},
};

static unsigned long der_uint(const SECItem *i)
{
    unsigned long v = 0;
    if (i->len > 4 || i->len == 0)
        return 0;
    for (unsigned k = 0; k < i->len; k++)
        v = (v << 8) | i->data[k];
    return v;
}

/* Decrypts one PBES2 (PBKDF2-HMAC-SHA256, AES-256-CBC) item with the
 * password hash pw[0..pwlen).  *out is malloc()ed, caller picl__zfree()s. */
static picl_status pbes2_decrypt(const uint8_t *pw, size_t pwlen, const void *der, size_t derlen,
                                 uint8_t **out, size_t *outlen)
{
    picl_status rc = PICL_ERROR_UNSUPPORTED;
    PLArenaPool *arena = PORT_NewArena(2048);
    uint8_t key[32];
    *out = NULL;
    if (!arena)
        return PICL_ERROR_NO_MEMORY;
    enc_item item;
    pbes2_params p2;
    pbkdf2_params kdf;
    memset(&item, 0, sizeof item);
    memset(&p2, 0, sizeof p2);
    memset(&kdf, 0, sizeof kdf);
    SECItem in = {siBuffer, (unsigned char *)der, (unsigned)derlen};
    if (SEC_ASN1DecodeItem(arena, &item, enc_item_template, &in) != SECSuccess ||
        SECOID_GetAlgorithmTag(&item.alg) != SEC_OID_PKCS5_PBES2 ||
        SEC_ASN1DecodeItem(arena, &p2, pbes2_template, &item.alg.parameters) != SECSuccess ||
        SECOID_GetAlgorithmTag(&p2.kdf) != SEC_OID_PKCS5_PBKDF2 ||
        SEC_ASN1DecodeItem(arena, &kdf, pbkdf2_template, &p2.kdf.parameters) != SECSuccess || !kdf.prf ||
        SECOID_GetAlgorithmTag(kdf.prf) != SEC_OID_HMAC_SHA256 ||
        SECOID_GetAlgorithmTag(&p2.enc) != SEC_OID_AES_256_CBC)
        goto done;
    unsigned long iter = der_uint(&kdf.iter);
    /* NSS stores a 14-byte IV and uses its DER encoding (04 0e ...) as the 16-byte IV */
    if (iter == 0 || iter > KEY4_MAX_ITER || (kdf.keylen.len && der_uint(&kdf.keylen) != 32) ||
        p2.enc.parameters.len != 16 || item.data.len == 0 || item.data.len % 16)
        goto done;
    if ((rc = picl__pbkdf2_sha256(key, sizeof key, pw, pwlen, kdf.salt.data, kdf.salt.len, (uint32_t)iter)) !=
        PICL_OK)
        goto done;
    uint8_t *plain = malloc(item.data.len);
    if (!plain) {
        rc = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    size_t n = 0;
    rc = picl__aes256_cbc_decrypt(plain, &n, key, p2.enc.parameters.data, item.data.data, item.data.len);
    if (rc != PICL_OK) {
        picl__zfree(plain, item.data.len);
        rc = PICL_ERROR_DECRYPT;
        goto done;
    }
    *out = plain;
    *outlen = n;
done:
    picl__wipe(key, sizeof key);
    PORT_FreeArena(arena, PR_TRUE);
    return rc;
}

static PK11SymKey *import_key(CK_MECHANISM_TYPE mech, uint8_t *raw, size_t len)
{
    PK11SlotInfo *slot = PK11_GetInternalSlot();
    if (!slot)
        return NULL;
    SECItem item = {siBuffer, raw, (unsigned)len};
    PK11SymKey *k = PK11_ImportSymKeyWithFlags(slot, mech, PK11_OriginUnwrap, CKA_FLAGS_ONLY, &item,
                                               CKF_ENCRYPT | CKF_DECRYPT, PR_FALSE, NULL);
    PK11_FreeSlot(slot);
    return k;
}

picl_status picl__key4_unlock(const char *key4_path, const char *password, PK11SymKey **aes,
                              PK11SymKey **des3)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    uint8_t pwhash[48];
    uint8_t *buf = NULL, *plain = NULL;
    size_t buflen = 0, plen = 0;
    picl_status rc = PICL_ERROR_DATABASE;
    *aes = *des3 = NULL;
    if (sqlite3_open_v2(key4_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        goto done;
    if (sqlite3_prepare_v2(db, "SELECT item1, item2 FROM metaData WHERE id = 'password'", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW)
        goto done;
    const void *salt = sqlite3_column_blob(st, 0);
    int saltlen = sqlite3_column_bytes(st, 0);
    if (saltlen != KEY4_GLOBAL_SALT) {
        rc = PICL_ERROR_UNSUPPORTED;
        goto done;
    }
    /* SHA-384(global salt || password), through NSS */
    size_t pwlen = strlen(password);
    buflen = (size_t)saltlen + pwlen;
    if (!(buf = malloc(buflen ? buflen : 1))) {
        rc = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    memcpy(buf, salt, (size_t)saltlen);
    memcpy(buf + saltlen, password, pwlen);
    if (PK11_HashBuf(SEC_OID_SHA384, pwhash, buf, (PRInt32)buflen) != SECSuccess) {
        rc = PICL_ERROR_CRYPTO;
        goto done;
    }
    rc = pbes2_decrypt(pwhash, sizeof pwhash, sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1),
                       &plain, &plen);
    if (rc == PICL_ERROR_DECRYPT) {
        rc = PICL_ERROR_WRONG_PASSWORD;
        goto done;
    }
    if (rc != PICL_OK)
        goto done;
    int ok = plen == 14 && picl__memeq_ct(plain, "password-check", 14);
    picl__zfree(plain, plen);
    plain = NULL;
    if (!ok) {
        rc = PICL_ERROR_WRONG_PASSWORD;
        goto done;
    }
    sqlite3_finalize(st);
    st = NULL;
    /* the secret keys with the SDR id: CKA_CLASS (a0) = CKO_SECRET_KEY (4) */
    if (sqlite3_prepare_v2(db, "SELECT a100, a11 FROM nssPrivate WHERE a0 = X'00000004' AND a102 = ?", -1,
                           &st, NULL) != SQLITE_OK) {
        rc = PICL_ERROR_DATABASE;
        goto done;
    }
    sqlite3_bind_blob(st, 1, sdr_keyid, sizeof sdr_keyid, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const uint8_t *t = sqlite3_column_blob(st, 0);
        if (sqlite3_column_bytes(st, 0) != 4 || !t)
            continue;
        unsigned long type =
            ((unsigned long)t[0] << 24) | ((unsigned long)t[1] << 16) | ((unsigned long)t[2] << 8) | t[3];
        if ((type != CKK_AES || *aes) && (type != CKK_DES3 || *des3))
            continue;
        if (pbes2_decrypt(pwhash, sizeof pwhash, sqlite3_column_blob(st, 1),
                          (size_t)sqlite3_column_bytes(st, 1), &plain, &plen) != PICL_OK)
            continue;
        if (type == CKK_AES && plen == 32)
            *aes = import_key(CKM_AES_CBC_PAD, plain, plen);
        else if (type == CKK_DES3 && plen == 24)
            *des3 = import_key(CKM_DES3_CBC_PAD, plain, plen);
        picl__zfree(plain, plen);
        plain = NULL;
    }
    rc = PICL_OK;
done:
    picl__wipe(pwhash, sizeof pwhash);
    if (buf)
        picl__zfree(buf, buflen ? buflen : 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}
