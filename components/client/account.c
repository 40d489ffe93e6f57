/* SPDX-License-Identifier: MPL-2.0 */
/* account.c -- the client's account flows (see account.h). */
#include "client/account.h"
#include "client/recovery_key.h"

#include <stdlib.h>
#include <string.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/srp.h"
#include "crypto/util.h"

void picl__account_wipe(picl_account *a)
{
    if (a)
        picl__wipe(a, sizeof *a);
}

picl_status picl__account_fingerprint(char out[33], const uint8_t key[32])
{
    uint8_t h[32];
    out[0] = 0;
    picl_status rc = picl__sha256(h, key, 32);
    if (rc == PICL_OK)
        picl__hex_encode(out, h, 16);
    return rc;
}

/* The password's two keys for one salt: srpPW and unwrapBKey. */
typedef struct pwkeys {
    uint8_t srp_pw[32];
    uint8_t unwrap[32];
} pwkeys;

static picl_status derive(pwkeys *k, const char *email, size_t emaillen, const char *pw, size_t pwlen,
                          const picl_stretch_params *params, const picl_stretch_params *floor,
                          const uint8_t main_salt[32])
{
    uint8_t stretched[32];
    picl_status rc = picl__stretch(stretched, params, floor, email, emaillen, pw, pwlen, NULL);
    if (rc == PICL_OK)
        rc = picl__main_kdf(k->srp_pw, k->unwrap, stretched, main_salt, 32);
    picl__wipe(stretched, sizeof stretched);
    if (rc != PICL_OK)
        picl__wipe(k, sizeof *k);
    return rc;
}

/* New salts, keys and verifier for a password (create, change, reset). */
typedef struct newpw {
    uint8_t main_salt[32];
    uint8_t srp_salt[32];
    uint8_t verifier[256];
    pwkeys k;
} newpw;

static picl_status make_newpw(newpw *n, const char *email, size_t emaillen, const char *pw, size_t pwlen,
                              const picl_stretch_params *params)
{
    picl_status rc = picl__random_bytes(n->main_salt, 32);
    if (rc == PICL_OK)
        rc = picl__random_bytes(n->srp_salt, 32);
    if (rc == PICL_OK)
        rc = derive(&n->k, email, emaillen, pw, pwlen, params, params, n->main_salt);
    if (rc == PICL_OK)
        rc = picl__srp_verifier(picl__srp_group_picl(), (const uint8_t *)email, emaillen, n->k.srp_pw, 32,
                                n->srp_salt, 32, n->verifier, 256);
    if (rc != PICL_OK)
        picl__wipe(n, sizeof *n);
    return rc;
}

static const picl_stretch_params *params_or_default(const picl_stretch_params *p, picl_stretch_params *def)
{
    if (p)
        return p;
    picl__stretch_default_params(def);
    return def;
}

picl_status picl__account_create(picl_ks_client *c, const char *email, size_t emaillen, const char *password,
                                 size_t pwlen, const picl_stretch_params *params, char uid[33])
{
    picl_stretch_params def;
    newpw n;
    uid[0] = 0;
    if (!c || !email || !emaillen || !password)
        return PICL_ERROR_INVALID_ARGUMENT;
    params = params_or_default(params, &def);
    picl_status rc = make_newpw(&n, email, emaillen, password, pwlen, params);
    if (rc == PICL_OK)
        rc = picl__ksc_account_create(c, email, emaillen, n.verifier, n.srp_salt, params, n.main_salt, uid);
    picl__wipe(&n, sizeof n);
    return rc;
}

picl_status picl__account_verify(picl_ks_client *c, const char *uid, const char *code)
{
    if (!c || !uid || !code)
        return PICL_ERROR_INVALID_ARGUMENT;
    return picl__ksc_email_verify(c, uid, code);
}

/* auth/start .. auth/finish: authToken and the password's unwrapBKey. */
static picl_status srp_auth_ex(picl_ks_client *c, const char *email, size_t emaillen, const char *pw,
                               size_t pwlen, const picl_stretch_params *floor, uint8_t auth_token[32],
                               uint8_t unwrap[32], picl_stretch_params *used);

static picl_status srp_auth(picl_ks_client *c, const char *email, size_t emaillen, const char *pw,
                            size_t pwlen, const picl_stretch_params *floor, uint8_t auth_token[32],
                            uint8_t unwrap[32])
{
    return srp_auth_ex(c, email, emaillen, pw, pwlen, floor, auth_token, unwrap, NULL);
}

/* srp_auth, also telling the account's stretching parameters (used may be NULL). */
static picl_status srp_auth_ex(picl_ks_client *c, const char *email, size_t emaillen, const char *pw,
                               size_t pwlen, const picl_stretch_params *floor, uint8_t auth_token[32],
                               uint8_t unwrap[32], picl_stretch_params *used)
{
    picl_ksc_auth_start st;
    pwkeys k;
    picl_srp_client *srp = NULL;
    uint8_t A[256], M[32], K[32];
    picl_stretch_params def;
    memset(&k, 0, sizeof k);
    memset(K, 0, sizeof K);
    picl_status rc = picl__ksc_auth_start(c, email, emaillen, &st);
    if (rc == PICL_OK)
        rc = derive(&k, email, emaillen, pw, pwlen, &st.params, params_or_default(floor, &def), st.main_salt);
    if (rc == PICL_OK)
        rc = picl__srp_client_new(picl__srp_group_picl(), &srp);
    if (rc == PICL_OK)
        rc = picl__srp_client_A(srp, A, sizeof A);
    if (rc == PICL_OK)
        rc = picl__srp_client_process(srp, (const uint8_t *)email, emaillen, k.srp_pw, 32, st.srp_salt, 32,
                                      st.B, 256, M, sizeof M);
    if (rc == PICL_ERROR_SRP_BAD_B || rc == PICL_ERROR_SRP_BAD_U)
        rc = PICL_ERROR_PROTOCOL; /* a hostile or broken server */
    if (rc == PICL_OK)
        rc = picl__srp_client_key(srp, K, sizeof K);
    if (rc == PICL_OK)
        rc = picl__ksc_auth_finish(c, st.srp_token, A, M, K, auth_token);
    if (rc == PICL_OK) {
        memcpy(unwrap, k.unwrap, 32);
        if (used)
            *used = st.params;
    } else {
        memset(auth_token, 0, 32);
        memset(unwrap, 0, 32);
    }
    picl__srp_client_free(srp);
    picl__wipe(&st, sizeof st);
    picl__wipe(&k, sizeof k);
    picl__wipe(K, sizeof K);
    return rc;
}

picl_status picl__account_login(picl_ks_client *c, const char *email, size_t emaillen, const char *password,
                                size_t pwlen, const picl_stretch_params *floor, picl_account *out)
{
    uint8_t auth[32], unwrap[32], kft[32], wrap[32];
    memset(out, 0, sizeof *out);
    if (!c || !email || !emaillen || emaillen > 255 || !password)
        return PICL_ERROR_INVALID_ARGUMENT;
    memset(kft, 0, sizeof kft);
    memset(wrap, 0, sizeof wrap);
    picl_status rc = srp_auth_ex(c, email, emaillen, password, pwlen, floor, auth, unwrap, &out->params);
    if (rc == PICL_OK)
        rc = picl__ksc_session_create(c, auth, kft, out->session_token, out->uid, &out->verified);
    if (rc == PICL_OK) {
        out->have_session = 1;
        memcpy(out->email, email, emaillen);
        out->email_len = emaillen;
        if (out->verified) {
            rc = picl__ksc_account_keys(c, kft, out->ka, wrap);
            if (rc == PICL_OK) {
                picl__xor(out->kb, wrap, unwrap, 32);
                out->have_keys = 1;
            }
        } else {
            /* unverified: the keys come later, from this token */
            memcpy(out->kft, kft, 32);
            memcpy(out->unwrap, unwrap, 32);
            out->have_kft = 1;
        }
    }
    if (rc != PICL_OK)
        picl__wipe(out, sizeof *out);
    picl__wipe(auth, sizeof auth);
    picl__wipe(unwrap, sizeof unwrap);
    picl__wipe(kft, sizeof kft);
    picl__wipe(wrap, sizeof wrap);
    return rc;
}

picl_status picl__account_keys_from_token(picl_ks_client *c, const uint8_t kft[32], const uint8_t unwrap[32],
                                          uint8_t ka[32], uint8_t kb[32])
{
    uint8_t wrap[32];
    memset(ka, 0, 32);
    memset(kb, 0, 32);
    if (!c || !kft || !unwrap)
        return PICL_ERROR_INVALID_ARGUMENT;
    memset(wrap, 0, sizeof wrap);
    picl_status rc = picl__ksc_account_keys(c, kft, ka, wrap);
    if (rc == PICL_OK)
        picl__xor(kb, wrap, unwrap, 32);
    else
        picl__wipe(ka, 32);
    picl__wipe(wrap, sizeof wrap);
    return rc;
}

picl_status picl__account_logout(picl_ks_client *c, picl_account *a)
{
    if (!c || !a || !a->have_session)
        return PICL_ERROR_STATE;
    picl_status rc = picl__ksc_session_destroy(c, a->session_token);
    /* A session the server no longer knows is signed out all the same. */
    if (rc == PICL_ERROR_TOKEN)
        rc = PICL_OK;
    if (rc == PICL_OK) {
        picl__wipe(a->session_token, sizeof a->session_token);
        a->have_session = 0;
    }
    return rc;
}

picl_status picl__account_change_password(picl_ks_client *c, const char *email, size_t emaillen,
                                          const char *old_pw, size_t oldlen, const char *new_pw,
                                          size_t newlen, const picl_stretch_params *params,
                                          const picl_stretch_params *floor, picl_account *out)
{
    uint8_t auth[32], unwrap[32], kft[32], reset[32], ka[32], wrap[32], kb[32];
    picl_stretch_params def;
    newpw n;
    memset(&n, 0, sizeof n);
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !email || !emaillen || !old_pw || !new_pw)
        return PICL_ERROR_INVALID_ARGUMENT;
    params = params_or_default(params, &def);
    memset(kft, 0, sizeof kft);
    memset(reset, 0, sizeof reset);
    memset(kb, 0, sizeof kb);
    picl_status rc = srp_auth(c, email, emaillen, old_pw, oldlen, floor, auth, unwrap);
    if (rc == PICL_OK)
        rc = picl__ksc_password_change_start(c, auth, kft, reset);
    if (rc == PICL_OK)
        rc = picl__ksc_account_keys(c, kft, ka, wrap);
    if (rc == PICL_OK) {
        picl__xor(kb, wrap, unwrap, 32);
        rc = make_newpw(&n, email, emaillen, new_pw, newlen, params);
    }
    if (rc == PICL_OK) {
        /* newWrapKb = kB xor newUnwrapBKey: kB survives the change. */
        picl__xor(wrap, kb, n.k.unwrap, 32);
        rc = picl__ksc_account_reset(c, reset, wrap, n.verifier, n.srp_salt, params, n.main_salt);
    }
    if (rc == PICL_OK && out)
        rc = picl__account_login(c, email, emaillen, new_pw, newlen, floor ? floor : params, out);
    picl__wipe(auth, sizeof auth);
    picl__wipe(unwrap, sizeof unwrap);
    picl__wipe(kft, sizeof kft);
    picl__wipe(reset, sizeof reset);
    picl__wipe(ka, sizeof ka);
    picl__wipe(wrap, sizeof wrap);
    picl__wipe(kb, sizeof kb);
    picl__wipe(&n, sizeof n);
    return rc;
}

picl_status picl__account_forgot_start(picl_ks_client *c, const char *email, size_t emaillen,
                                       uint8_t forgot_token[32])
{
    if (!c || !email || !emaillen)
        return PICL_ERROR_INVALID_ARGUMENT;
    return picl__ksc_forgot_send(c, email, emaillen, forgot_token);
}

picl_status picl__account_forgot_finish(picl_ks_client *c, const uint8_t forgot_token[32], const char *code,
                                        const char *email, size_t emaillen, const char *new_pw, size_t newlen,
                                        const picl_stretch_params *params)
{
    uint8_t reset[32], zero[32];
    picl_stretch_params def;
    newpw n;
    memset(&n, 0, sizeof n);
    memset(zero, 0, sizeof zero);
    if (!c || !forgot_token || !code || !email || !emaillen || !new_pw)
        return PICL_ERROR_INVALID_ARGUMENT;
    params = params_or_default(params, &def);
    picl_status rc = picl__ksc_forgot_verify(c, forgot_token, code, reset);
    if (rc == PICL_OK)
        rc = make_newpw(&n, email, emaillen, new_pw, newlen, params);
    /* An all-zero wrapKb: the server draws a fresh one, so kB changes. */
    if (rc == PICL_OK)
        rc = picl__ksc_account_reset(c, reset, zero, n.verifier, n.srp_salt, params, n.main_salt);
    picl__wipe(reset, sizeof reset);
    picl__wipe(&n, sizeof n);
    return rc;
}

picl_status picl__account_forgot_finish_rk(picl_ks_client *c, const uint8_t forgot_token[32],
                                           const char *code, const char *email, size_t emaillen,
                                           const char *new_pw, size_t newlen,
                                           const picl_stretch_params *params, const uint8_t recovery_key[32])
{
    uint8_t reset[32], kb[32], wrap[32];
    char id[33];
    char *data = NULL;
    picl_stretch_params def;
    newpw n;
    memset(&n, 0, sizeof n);
    memset(reset, 0, sizeof reset);
    memset(kb, 0, sizeof kb);
    memset(wrap, 0, sizeof wrap);
    if (!c || !forgot_token || !code || !email || !emaillen || !new_pw || !recovery_key)
        return PICL_ERROR_INVALID_ARGUMENT;
    params = params_or_default(params, &def);
    picl_status rc = picl__rk_id(id, recovery_key);
    if (rc == PICL_OK)
        rc = picl__ksc_forgot_verify(c, forgot_token, code, reset);
    if (rc == PICL_OK)
        rc = picl__ksc_recovery_key_get(c, reset, id, &data);
    if (rc == PICL_OK)
        rc = picl__rk_open(kb, recovery_key, data);
    if (rc == PICL_OK)
        rc = make_newpw(&n, email, emaillen, new_pw, newlen, params);
    /* newWrapKb = kB xor newUnwrapBKey: the recovered kB survives the reset */
    if (rc == PICL_OK) {
        picl__xor(wrap, kb, n.k.unwrap, 32);
        rc = picl__ksc_account_reset_rk(c, reset, wrap, n.verifier, n.srp_salt, params, n.main_salt, id);
    }
    free(data);
    picl__wipe(reset, sizeof reset);
    picl__wipe(kb, sizeof kb);
    picl__wipe(wrap, sizeof wrap);
    picl__wipe(&n, sizeof n);
    return rc;
}

picl_status picl__account_destroy(picl_ks_client *c, const char *email, size_t emaillen, const char *password,
                                  size_t pwlen, const picl_stretch_params *floor)
{
    return picl__account_destroy_with(c, email, emaillen, password, pwlen, floor, NULL, NULL);
}

picl_status picl__account_destroy_with(picl_ks_client *c, const char *email, size_t emaillen,
                                       const char *password, size_t pwlen, const picl_stretch_params *floor,
                                       picl_status (*before)(void *ctx), void *ctx)
{
    uint8_t auth[32], unwrap[32];
    if (!c || !email || !emaillen || !password)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_status rc = srp_auth(c, email, emaillen, password, pwlen, floor, auth, unwrap);
    if (rc == PICL_OK && before)
        rc = before(ctx);
    if (rc == PICL_OK)
        rc = picl__ksc_account_destroy(c, auth);
    picl__wipe(auth, sizeof auth);
    picl__wipe(unwrap, sizeof unwrap);
    return rc;
}
