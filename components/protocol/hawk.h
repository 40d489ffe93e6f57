/* SPDX-License-Identifier: MPL-2.0 */
/* hawk.h -- Hawk 1.1 (SHA-256) request authentication for the client and
 * both servers (keyserver.md section 8, storage.md section 2). */
#ifndef PICL_PROTOCOL_HAWK_H
#define PICL_PROTOCOL_HAWK_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"
#include "crypto/hash.h"

/*
 * normalised = "hawk.1.header\n" ts "\n" nonce "\n" METHOD "\n" path?query "\n"
 *              host(lowercase) "\n" port "\n" hash "\n" ext "\n"
 * mac        = base64(HMAC-SHA256(key, normalised))
 * hash       = base64(SHA-256("hawk.1.payload\n" content-type "\n" body "\n"))
 *              (content-type lowercase, without parameters)
 *
 * The path?query is the request target exactly as sent on the wire (still
 * percent-encoded).  Hawk's app/dlg (Oz) attributes are not supported.
 *
 * Statuses.  picl_status has no Hawk-specific codes, so Hawk outcomes use
 * these existing ones; a server maps them as follows (keyserver / storage):
 */
#define PICL_HAWK_ERROR_MALFORMED                                                                            \
    PICL_ERROR_ENCODING /* header syntax, unknown or duplicate
                                                         attribute, bad quoting, non-numeric
                                                         ts, bad base64 mac/hash: 401/109 / 401 */
#define PICL_HAWK_ERROR_TOO_LARGE                                                                            \
    PICL_ERROR_TOO_LARGE /* header or one attribute over its
                                                          cap: 401/109 / 401 */
#define PICL_HAWK_ERROR_BAD_MAC                                                                              \
    PICL_ERROR_DECRYPT /* wrong MAC, wrong payload hash, or
                                                         hash missing when required: 401/109 / 401 */
#define PICL_HAWK_ERROR_STALE                                                                                \
    PICL_ERROR_STATE /* ts more than skew from now:
                                                         401/111 + serverTime / 401 */
#define PICL_HAWK_ERROR_REPLAY                                                                               \
    PICL_ERROR_CONFLICT /* nonce seen within the window:
                                                         401/115 / 401 */
#define PICL_HAWK_ERROR_BUSY                                                                                 \
    PICL_ERROR_BACKOFF /* nonce cache full of live entries
                                                         (fails closed): 503/201 / 503 */
/* An unknown id is not Hawk's business: the server's token lookup answers
 * 401/110 (PICL_ERROR_TOKEN) before calling picl__hawk_verify(). */

/* Hard caps (characters, without the NUL). */
#define PICL_HAWK_MAX_HEADER 4096u /* whole Authorization value */
#define PICL_HAWK_MAX_ID 2048u     /* tokenlib ids are ~700 characters */
#define PICL_HAWK_MAX_NONCE 128u
#define PICL_HAWK_MAX_EXT 1024u
#define PICL_HAWK_MAX_TS_DIGITS 15u  /* plain decimal, no sign */
#define PICL_HAWK_B64_BYTES 44u      /* base64 of 32 bytes: every mac and hash */
#define PICL_HAWK_MAX_RESOURCE 8192u /* path?query */
#define PICL_HAWK_MAX_METHOD 32u
#define PICL_HAWK_MAX_HOST 255u
#define PICL_HAWK_MAX_CONTENT_TYPE 256u
#define PICL_HAWK_DEFAULT_SKEW 60 /* seconds */

/* One request as the MAC sees it.  content_type NULL means "no payload";
 * body may be NULL when bodylen is 0. */
typedef struct picl_hawk_request {
    const char *method;       /* "GET", ... (upper-cased for the MAC) */
    const char *resource;     /* path?query exactly as sent */
    const char *host;         /* Host without port (lower-cased for the MAC) */
    unsigned port;            /* 0..65535 */
    const char *content_type; /* full Content-Type header value, or NULL */
    const void *body;
    size_t bodylen;
} picl_hawk_request;

/* A parsed Authorization header.  Every string is NUL-terminated; has_hash /
 * has_ext say whether the attribute was present (an empty ext="" counts as
 * present and MACs like an absent one). */
typedef struct picl_hawk_auth {
    char id[PICL_HAWK_MAX_ID + 1];
    char ts_text[PICL_HAWK_MAX_TS_DIGITS + 1];
    int64_t ts;
    char nonce[PICL_HAWK_MAX_NONCE + 1];
    char hash[PICL_HAWK_B64_BYTES + 1];
    int has_hash;
    char ext[PICL_HAWK_MAX_EXT + 1];
    int has_ext;
    char mac[PICL_HAWK_B64_BYTES + 1];
} picl_hawk_auth;

/* ---- building blocks (both sides; need NSS) ---------------------------- */

/* base64 payload hash of (content_type, body) into out (45 bytes with NUL).
 * The content type is cut at ';', trimmed and lower-cased; NULL = "". */
picl_status picl__hawk_payload_hash(char out[PICL_HAWK_B64_BYTES + 1], const char *content_type,
                                    const void *body, size_t bodylen);

/* The normalised string, malloc()ed into *out (NUL-terminated, *outlen bytes
 * without the NUL; caller frees).  hash and ext may be NULL (= empty).  A
 * field with a newline or other control character, or a method that is not
 * an HTTP token, is PICL_ERROR_INVALID_ARGUMENT; over a cap, PICL_ERROR_TOO_LARGE. */
picl_status picl__hawk_normalized(char **out, size_t *outlen, const char *ts, const char *nonce,
                                  const char *method, const char *resource, const char *host, unsigned port,
                                  const char *hash, const char *ext);

/* mac = base64(HMAC-SHA256(key, normalised string of these fields)). */
picl_status picl__hawk_mac(char out[PICL_HAWK_B64_BYTES + 1], const void *key, size_t keylen, const char *ts,
                           const char *nonce, const picl_hawk_request *req, const char *hash,
                           const char *ext);
/* The same under ctx, an HMAC-SHA256 context already keyed
 * (picl__hmac_sha256_init): the key is imported into PK11 once for many
 * MACs.  ctx is left ready for the next MAC, also when a field is refused
 * (INVALID_ARGUMENT / TOO_LARGE, nothing fed); after a PICL_ERROR_CRYPTO
 * it can only be freed. */
picl_status picl__hawk_mac_ctx(char out[PICL_HAWK_B64_BYTES + 1], picl_hmac_ctx *ctx, const char *ts,
                               const char *nonce, const picl_hawk_request *req, const char *hash,
                               const char *ext);

/* ---- client ------------------------------------------------------------ */

/*
 * Builds the Authorization header value for req:
 *   Hawk id="..", ts="..", nonce="..", [hash="..", ][ext="..", ]mac=".."
 * hash is included when req->content_type is not NULL.  nonce NULL = 12
 * random base64 characters; ext NULL or "" = none.  id and nonce must be
 * non-empty; id, nonce and ext must be within the caps and made of Hawk's
 * value characters (printable ASCII without '"' and '\'); ts 0..10^15-1;
 * else PICL_ERROR_INVALID_ARGUMENT.  *out is malloc()ed; the caller frees it.
 */
picl_status picl__hawk_client_header(char **out, const char *id, const void *key, size_t keylen,
                                     const picl_hawk_request *req, int64_t ts, const char *nonce,
                                     const char *ext);

/* ---- server ------------------------------------------------------------ */

/*
 * THE parser of an incoming Authorization header value (len bytes, need not
 * be NUL-terminated):  Hawk id="..", ts="..", nonce="..", [hash="..",]
 * [ext="..",] mac=".."  in any order.  The scheme is case-insensitive and
 * followed by spaces; attributes are lower-case names, '=', a double-quoted
 * value of Hawk's value characters (no escapes), separated by ',' with
 * optional spaces/tabs; leading/trailing spaces are ignored.  id, ts, nonce
 * and mac are required and non-empty; ts is decimal digits only (more than
 * 15 is PICL_HAWK_ERROR_TOO_LARGE); mac and hash are canonical base64 of 32
 * bytes; only ext may be empty.  Anything else (unknown attribute,
 * duplicate, missing quote, trailing comma, control character ...) is
 * PICL_HAWK_ERROR_MALFORMED; a header or value over its cap is
 * PICL_HAWK_ERROR_TOO_LARGE.  On failure *auth is zeroed.  No NSS needed.
 */
picl_status picl__hawk_parse(picl_hawk_auth *auth, const char *header, size_t len);

typedef struct picl_hawk_nonce_cache picl_hawk_nonce_cache;

typedef struct picl_hawk_verify_opts {
    int64_t now;                    /* server time, unix seconds */
    int64_t skew;                   /* allowed |ts - now|, 0..86400*366 */
    int require_hash;               /* a missing hash is PICL_HAWK_ERROR_BAD_MAC */
    picl_hawk_nonce_cache *nonces;  /* NULL = no replay check */
    const char *identity;           /* whose share of the nonce cache the request
                                      uses (e.g. the account); NULL = the Hawk id */
    picl_hmac_ctx *mac_ctx;         /* NULL, or an HMAC-SHA256 context keyed with
                                      the key passed beside (picl__hawk_mac_ctx):
                                      the MAC without importing the key */
    const uint8_t *id_digest;       /* NULL, or picl__hawk_nonce_id_digest(auth->id)
                                       kept by the caller (e.g. per token) */
    const uint8_t *identity_digest; /* NULL, or picl__hawk_nonce_identity_digest of
                                       the identity (else of the Hawk id) */
} picl_hawk_verify_opts;

/*
 * Verifies a parsed header against the credentials' key and the request, in
 * this order (cheap forgeries never touch the nonce cache):
 *   1. MAC (constant-time compare)                -> PICL_HAWK_ERROR_BAD_MAC
 *   2. payload hash, when present or required: recomputed from
 *      req->content_type/body and compared in constant time
 *                                                 -> PICL_HAWK_ERROR_BAD_MAC
 *   3. |ts - now| <= skew                          -> PICL_HAWK_ERROR_STALE
 *   4. (id, nonce) not seen while live; recorded until ts + skew
 *                                                 -> PICL_HAWK_ERROR_REPLAY / _BUSY
 * A request field with control characters is PICL_HAWK_ERROR_MALFORMED, one
 * over its cap PICL_HAWK_ERROR_TOO_LARGE; bad options PICL_ERROR_INVALID_ARGUMENT.
 */
picl_status picl__hawk_verify(const picl_hawk_auth *auth, const void *key, size_t keylen,
                              const picl_hawk_request *req, const picl_hawk_verify_opts *opts);

/*
 * Nonce cache: bounded (at most max_entries live entries), thread-safe (one
 * mutex).  Entries are keyed by (id, nonce) (SHA-256 of the id's digest and the
 * nonce, see picl__hawk_nonce_id_digest) and expire at the time
 * given when recorded.  When it is full of live entries a new nonce is
 * refused with PICL_HAWK_ERROR_BUSY rather than evicting a live one (which
 * would reopen a replay window).  picl__hawk_nonce_cache_new() allocates;
 * the caller frees with picl__hawk_nonce_cache_free().  1 <= max_entries
 * <= 1 << 24, else PICL_ERROR_INVALID_ARGUMENT.
 */
picl_status picl__hawk_nonce_cache_new(picl_hawk_nonce_cache **cache, size_t max_entries);
void picl__hawk_nonce_cache_free(picl_hawk_nonce_cache *cache);

/* Each identity may hold at most a share of the live entries, so that one
 * account cannot fill the cache and make every request of everybody BUSY
 * (it only makes its own BUSY).  Default share: max_entries / 16 (at least
 * 1); set_share changes it (1..max_entries, else INVALID_ARGUMENT). */
#define PICL_HAWK_DEFAULT_SHARE_DIV 16
picl_status picl__hawk_nonce_cache_set_share(picl_hawk_nonce_cache *cache, size_t per_identity);

/* PICL_OK and records (id, nonce) until `expires` if it is not live at
 * `now`, counted in `identity`'s share; PICL_HAWK_ERROR_REPLAY if it is
 * live; PICL_HAWK_ERROR_BUSY if the cache or the identity's share is full
 * of live entries.  Needs NSS (SHA-256). */
picl_status picl__hawk_nonce_check_for(picl_hawk_nonce_cache *cache, const char *identity, const char *id,
                                       const char *nonce, int64_t expires, int64_t now);
/* The digests the cache keys its entries with, which a server may keep per
 * credential so that a request's check hashes its nonce alone: of the Hawk
 * id (an entry is SHA-256(id digest || nonce)) and of the identity whose
 * share it counts in.  Need NSS. */
picl_status picl__hawk_nonce_id_digest(uint8_t out[32], const char *id);
picl_status picl__hawk_nonce_identity_digest(uint8_t out[32], const char *identity);
/* picl__hawk_nonce_check_for with both digests given: the same decisions. */
picl_status picl__hawk_nonce_check_digests(picl_hawk_nonce_cache *cache, const uint8_t identity_digest[32],
                                           const uint8_t id_digest[32], const char *nonce, int64_t expires,
                                           int64_t now);
/* The same with identity = id. */
picl_status picl__hawk_nonce_check(picl_hawk_nonce_cache *cache, const char *id, const char *nonce,
                                   int64_t expires, int64_t now);

/* Number of entries held (live or expired but not yet dropped), for tests. */
size_t picl__hawk_nonce_cache_count(picl_hawk_nonce_cache *cache);

#endif
