/* SPDX-License-Identifier: MPL-2.0 */
/* service_resend.c -- picl_service_resend_verification: mail the account's
 * verification code again (a keyserver that stopped between creating the
 * account and mailing it, a lost or deleted mail). */
#include "service_int.h"

#include "client/keyserver_client.h"

picl_status picl_service_resend_verification(picl_service *self)
{
    if (!self)
        return PICL_ERROR_INVALID_ARGUMENT;
    service *s = SVC(self);
    if (!*s->st->uid || !s->st->has_session)
        return picl__svc_done(s, PICL_ERROR_STATE,
                              "not signed in: run picl login (an unverified account "
                              "can sign in) and resend then");
    if (s->st->verified)
        return picl__svc_done(s, PICL_ERROR_STATE, "the email is already verified");
    picl_ks_client *c;
    picl_status st = picl__svc_ks_open(s, &c);
    if (st != PICL_OK)
        return st;
    st = picl__ksc_email_resend(c, s->st->session);
    picl__ksc_free(c);
    if (st != PICL_OK)
        return picl__svc_flow_fail(s, st, "mailing the verification code again failed");
    return picl__svc_done(s, PICL_OK, NULL);
}
