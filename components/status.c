/* status.c -- picl_strerror(): the text of every picl_status. */
#include "picl.h"

static const char *const messages[PICL_STATUS_COUNT_] = {
    [PICL_OK] = "success",
    [PICL_ERROR_INVALID_ARGUMENT] = "invalid argument",
    [PICL_ERROR_NO_MEMORY] = "out of memory",
    [PICL_ERROR_TOO_LARGE] = "input or output too large",
    [PICL_ERROR_ENCODING] = "malformed encoding",
    [PICL_ERROR_CRYPTO] = "cryptographic operation failed",
    [PICL_ERROR_DECRYPT] = "decryption failed: data is corrupt, forged or under another key",
    [PICL_ERROR_UNSUPPORTED] = "unsupported parameter",
    [PICL_ERROR_WEAK_PARAMS] = "password stretching parameters are below the allowed floor",
    [PICL_ERROR_NSS_INIT] = "NSS could not be initialised",
    [PICL_ERROR_SRP_BAD_A] = "SRP: invalid client value A",
    [PICL_ERROR_SRP_BAD_B] = "SRP: invalid server value B",
    [PICL_ERROR_SRP_BAD_U] = "SRP: invalid scrambling parameter u",
    [PICL_ERROR_SRP_PROOF] = "SRP: proof of password does not match",
    [PICL_ERROR_IO] = "file input/output error",
    [PICL_ERROR_DATABASE] = "database error",
    [PICL_ERROR_NETWORK] = "network error: server unreachable",
    [PICL_ERROR_PROTOCOL] = "server sent a malformed response",
    [PICL_ERROR_WRONG_PASSWORD] = "incorrect password",
    [PICL_ERROR_UNVERIFIED] = "account email is not verified",
    [PICL_ERROR_ACCOUNT_EXISTS] = "an account with this email already exists",
    [PICL_ERROR_UNKNOWN_ACCOUNT] = "no account with this email",
    [PICL_ERROR_INVALID_CODE] = "invalid or expired code",
    [PICL_ERROR_TOKEN] = "invalid or expired token: sign in again",
    [PICL_ERROR_BACKOFF] = "server asked to retry later",
    [PICL_ERROR_CONFLICT] = "conflict: data changed on the server meanwhile",
    [PICL_ERROR_QUOTA] = "storage quota exceeded",
    [PICL_ERROR_NOT_FOUND] = "not found",
    [PICL_ERROR_PROFILE_LOCKED] = "profile is in use by a running Firefox",
    [PICL_ERROR_STATE] = "operation not possible in the current state",
    [PICL_ERROR_CLASSMAP] = "class map rejected: forged, replayed or weakened",
    [PICL_ERROR_KEYS_CHANGED] = "class-B key changed: the password was reset on another device",
    [PICL_ERROR_SERVER] = "server error",
    [PICL_ERROR_CANCELLED] = "cancelled",
    [PICL_ERROR_INTERNAL] = "internal error",
    [PICL_ERROR_INTEGRITY] = "records failed their integrity check and were not applied",
};

const char *picl_strerror(picl_status status)
{
    if ((unsigned)status >= PICL_STATUS_COUNT_ || !messages[status])
        return "unknown error";
    return messages[status];
}
