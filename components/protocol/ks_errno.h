/* SPDX-License-Identifier: MPL-2.0 */
/* ks_errno.h -- THE list of keyserver errnos, the "errno" of every keyserver
 * error answer {"code", "errno", "error", "message"} (keyserver.md section 7):
 * the keyserver sends them, the client maps them to a picl_status. */
#ifndef PICL_PROTOCOL_KS_ERRNO_H
#define PICL_PROTOCOL_KS_ERRNO_H

enum ks_errno {
    KS_ERR_EXISTS = 101,         /* 400 account already exists */
    KS_ERR_UNKNOWN = 102,        /* 400 unknown account */
    KS_ERR_PASSWORD = 103,       /* 400 incorrect password (SRP proof) */
    KS_ERR_UNVERIFIED = 104,     /* 400 account not verified */
    KS_ERR_CODE = 105,           /* 400 invalid verification code */
    KS_ERR_JSON = 106,           /* 400 body is not valid JSON */
    KS_ERR_PARAM = 107,          /* 400 invalid parameter in the body */
    KS_ERR_MISSING = 108,        /* 400 missing parameter */
    KS_ERR_SIGNATURE = 109,      /* 401 invalid request signature (Hawk) */
    KS_ERR_TOKEN = 110,          /* 401 invalid or expired token */
    KS_ERR_SKEW = 111,           /* 401 timestamp outside the skew; serverTime given */
    KS_ERR_LENGTH = 112,         /* 411 content length missing */
    KS_ERR_TOO_LARGE = 113,      /* 413 request body too large */
    KS_ERR_THROTTLED = 114,      /* 429 too many requests; retryAfter given */
    KS_ERR_NONCE = 115,          /* 401 nonce already used */
    KS_ERR_STALE_CLASSMAP = 123, /* 409 class map anchor is stale */
    KS_ERR_RECOVERY_KEY = 124,   /* 400/404 unknown or wrong recovery key */
    KS_ERR_RECENT_LOGIN = 125,   /* 403 the operation needs a fresh sign-in */
    KS_ERR_UNKNOWN_DEVICE = 126, /* 400 unknown device */
    KS_ERR_OVERLOADED = 201,     /* 503 service unavailable; retryAfter given */
    KS_ERR_UNEXPECTED = 999      /* 500 unexpected error */
};

#endif
