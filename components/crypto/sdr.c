/* SPDX-License-Identifier: MPL-2.0 */
/* sdr.c -- secrets at rest with NSS SDR in the internal key slot (see sdr.h). */
#include "crypto/sdr.h"
#include "crypto/codec.h"
#include "crypto/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <pk11pub.h>
#include <pk11sdr.h>
#include <secitem.h>

/* Gets the internal key slot ready for SDR, or says why it cannot be. */
static picl_status ready_slot(void)
{
    PK11SlotInfo *slot = PK11_GetInternalKeySlot();
    if (!slot)
        return PICL_ERROR_NSS_INIT;
    picl_status st = PICL_OK;
    if (PK11_IsReadOnly(slot) || !PK11_IsPresent(slot)) {
        st = PICL_ERROR_UNSUPPORTED;
    } else if (PK11_NeedUserInit(slot)) {
        if (PK11_InitPin(slot, "", "") != SECSuccess)
            st = PICL_ERROR_UNSUPPORTED;
    } else if (PK11_NeedLogin(slot) && !PK11_IsLoggedIn(slot, NULL)) {
        /* an empty primary password logs in silently; any other is asked for */
        if (PK11_CheckUserPassword(slot, "") != SECSuccess)
            st = PICL_ERROR_STATE;
    }
    PK11_FreeSlot(slot);
    return st;
}

picl_status picl__sdr_login(const char *password)
{
    PK11SlotInfo *slot = PK11_GetInternalKeySlot();
    if (!slot)
        return PICL_ERROR_NSS_INIT;
    SECStatus rv = PK11_CheckUserPassword(slot, password ? password : "");
    PK11_FreeSlot(slot);
    return rv == SECSuccess ? PICL_OK : PICL_ERROR_WRONG_PASSWORD;
}

picl_status picl__sdr_encrypt(char **b64, const uint8_t *in, size_t len)
{
    *b64 = NULL;
    if (len == 0 || len > INT_MAX / 2)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_status st = ready_slot();
    if (st != PICL_OK)
        return st;
    SECItem keyid = {siBuffer, NULL, 0}, data = {siBuffer, (unsigned char *)in, (unsigned)len};
    SECItem out = {siBuffer, NULL, 0};
    if (PK11SDR_Encrypt(&keyid, &data, &out, NULL) != SECSuccess)
        return PICL_ERROR_CRYPTO;
    *b64 = picl__base64_encode_alloc(out.data, out.len);
    SECITEM_ZfreeItem(&out, PR_FALSE);
    return *b64 ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

picl_status picl__sdr_decrypt(uint8_t **out, size_t *outlen, const char *b64)
{
    *out = NULL;
    *outlen = 0;
    uint8_t *blob = NULL;
    size_t bloblen = 0;
    if (!b64 || picl__base64_decode_alloc(&blob, &bloblen, b64, strlen(b64)) != PICL_OK || bloblen == 0) {
        free(blob);
        return PICL_ERROR_DECRYPT;
    }
    picl_status st = ready_slot();
    if (st != PICL_OK) {
        free(blob);
        return st;
    }
    SECItem in = {siBuffer, blob, (unsigned)bloblen}, res = {siBuffer, NULL, 0};
    SECStatus rv = PK11SDR_Decrypt(&in, &res, NULL);
    free(blob);
    if (rv != SECSuccess)
        return PICL_ERROR_DECRYPT;
    uint8_t *buf = malloc(res.len + 1);
    if (!buf) {
        SECITEM_ZfreeItem(&res, PR_FALSE);
        return PICL_ERROR_NO_MEMORY;
    }
    memcpy(buf, res.data, res.len);
    *outlen = res.len;
    SECITEM_ZfreeItem(&res, PR_FALSE);
    *out = buf;
    return PICL_OK;
}
