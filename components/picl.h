/* picl.h -- the one public header of libpicl (PiCL: Profile in the Cloud). */
#ifndef PICL_H
#define PICL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PICL_BUILDING)
#define PICL_EXPORT __attribute__((visibility("default")))
#else
#define PICL_EXPORT
#endif

/*
 * One status type for everything, nsresult-style: PICL_OK is 0 and every
 * failure is a distinct negative-free code below.  NSS, libcurl, SQLite and
 * HTTP errors are translated into these at the boundary and never leak
 * upward.  The numeric values are part of the ABI (js-ctypes and the XPIDL
 * binding map them to Error.result): append only, never renumber.
 */
typedef enum picl_status {
    PICL_OK = 0,
    PICL_ERROR_INVALID_ARGUMENT = 1,  /* a caller passed a value out of range */
    PICL_ERROR_NO_MEMORY = 2,         /* allocation failed (incl. scrypt's 64 MiB) */
    PICL_ERROR_TOO_LARGE = 3,         /* input or output over a hard cap */
    PICL_ERROR_ENCODING = 4,          /* malformed hex / base64 / JSON text */
    PICL_ERROR_CRYPTO = 5,            /* NSS refused an operation (internal) */
    PICL_ERROR_DECRYPT = 6,           /* THE one error for any failed authentication
                                         or decryption: bad MAC, padding, tag, key */
    PICL_ERROR_UNSUPPORTED = 7,       /* a well-formed value we do not implement */
    PICL_ERROR_WEAK_PARAMS = 8,       /* stretching parameters below the floor */
    PICL_ERROR_NSS_INIT = 9,          /* NSS could not be initialised */
    PICL_ERROR_SRP_BAD_A = 10,        /* server: A mod N == 0, wrong length, >= N */
    PICL_ERROR_SRP_BAD_B = 11,        /* client: B mod N == 0, wrong length, >= N */
    PICL_ERROR_SRP_BAD_U = 12,        /* client: u == 0 */
    PICL_ERROR_SRP_PROOF = 13,        /* server: M1 does not match */
    PICL_ERROR_IO = 14,               /* file system */
    PICL_ERROR_DATABASE = 15,         /* SQLite / PostgreSQL */
    PICL_ERROR_NETWORK = 16,          /* could not reach a server */
    PICL_ERROR_PROTOCOL = 17,         /* a server answered something malformed */
    PICL_ERROR_WRONG_PASSWORD = 18,   /* keyserver errno 103 */
    PICL_ERROR_UNVERIFIED = 19,       /* keyserver errno 104 */
    PICL_ERROR_ACCOUNT_EXISTS = 20,   /* keyserver errno 101 */
    PICL_ERROR_UNKNOWN_ACCOUNT = 21,  /* keyserver errno 102 */
    PICL_ERROR_INVALID_CODE = 22,     /* keyserver errno 105 */
    PICL_ERROR_TOKEN = 23,            /* invalid or expired token (401) */
    PICL_ERROR_BACKOFF = 24,          /* 429 / 503 / X-Weave-Backoff: retry later */
    PICL_ERROR_CONFLICT = 25,         /* 409 / 412: someone else wrote first */
    PICL_ERROR_QUOTA = 26,            /* storage quota exceeded */
    PICL_ERROR_NOT_FOUND = 27,
    PICL_ERROR_PROFILE_LOCKED = 28,   /* Firefox is running on the profile */
    PICL_ERROR_STATE = 29,            /* not allowed now (signed out, no keys ...) */
    PICL_ERROR_CLASSMAP = 30,         /* class map forged, replayed or weakened */
    PICL_ERROR_KEYS_CHANGED = 31,     /* kB changed: password reset elsewhere */
    PICL_ERROR_SERVER = 32,           /* a server failed (5xx, errno 999) */
    PICL_ERROR_CANCELLED = 33,
    PICL_ERROR_INTERNAL = 34,         /* a bug: should never be seen */
    PICL_STATUS_COUNT_ = 35
} picl_status;

/* A short English description of a status; never NULL, static storage. */
PICL_EXPORT const char *picl_strerror(picl_status status);

#ifdef __cplusplus
}
#endif
#endif /* PICL_H */
