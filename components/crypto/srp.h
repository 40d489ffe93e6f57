/* SPDX-License-Identifier: MPL-2.0 */
/* srp.h -- SRP-6a (keyserver.md section 3): verifier, client and server on GMP, constant time. */
#ifndef PICL_CRYPTO_SRP_H
#define PICL_CRYPTO_SRP_H

#include <stddef.h>
#include <stdint.h>
#include "picl_status.h"

/*
 * One generic SRP-6a core, parameterised by a group (N, g) and a hash, used
 * by both the client component and the keyserver.  PiCL's own suite is
 * "SRP-6a/SHA256/2048/v1" (picl__srp_group_picl()); the RFC 5054 Appendix B
 * group (1024-bit, SHA-1) runs through the same code for its vector.
 *
 * With H the group's hash, PAD(z) = big-endian, left-zero-padded to
 * grp->len bytes, I = identity (email bytes), P = password (srpPW bytes):
 *
 *   x  = H(salt || H(I || ":" || P))      v = PAD(g^x mod N)
 *   k  = H(PAD(N) || PAD(g))              A = PAD(g^a mod N)
 *   B  = PAD((k*v + g^b) mod N)           u = H(PAD(A) || PAD(B))
 *   S  = PAD((B - k*g^x)^(a + u*x) mod N) = PAD((A * v^u)^b mod N)
 *   K  = H(PAD(S))                        M1 = H(PAD(A) || PAD(B) || PAD(S))
 *
 * Constant time: every computation that involves a, b, x or v (and S, K,
 * M1 derived from them) runs on fixed-size limb arrays with GMP's
 * side-channel-silent mpn_sec_* functions (mpn_sec_powm is the core of
 * mpz_powm_sec; the mpz wrapper itself normalises sizes, i.e. branches on
 * the secret result, and leaves its scratch unwiped on the stack, so it is
 * not used).  Running time depends only on the group and on the lengths of
 * the secrets, never on their values.  Branches happen only on public
 * values: A, B, u, lengths, and the one bit "M1 matched".
 *
 * Memory: every context owns one heap arena holding all its numbers and the
 * GMP scratch space; it is wiped before it is freed, on every path.  Nothing
 * secret lives in mpz_t or in GMP-allocated memory, so GMP's process-global
 * allocator is left alone.
 *
 * NSS: every function that hashes requires NSS to be usable
 * (picl__nss_acquire()) -- the caller acquires it, as for hash.h.
 *
 * Errors: PICL_ERROR_INVALID_ARGUMENT for a caller mistake (NULL, output of
 * the wrong size, bad group); PICL_ERROR_TOO_LARGE for I, P or salt over
 * PICL_SRP_MAX_INPUT; PICL_ERROR_SRP_BAD_A / _BAD_B for a peer value that is
 * not exactly grp->len bytes, is >= N or is 0 mod N; PICL_ERROR_SRP_BAD_U for
 * u == 0; PICL_ERROR_SRP_PROOF for a wrong M1 (wrong password);
 * PICL_ERROR_STATE for a call out of order; PICL_ERROR_NO_MEMORY;
 * PICL_ERROR_CRYPTO when NSS fails.  On any error every output buffer is
 * zeroed and no key is released.
 */

typedef enum picl_srp_hash {
    PICL_SRP_SHA1 = 1, /* only for the RFC 5054 Appendix B vector */
    PICL_SRP_SHA256 = 2
} picl_srp_hash;

#define PICL_SRP_MIN_BYTES 64    /* smallest accepted N: 512 bits (tests only) */
#define PICL_SRP_MAX_BYTES 1024  /* largest accepted N: 8192 bits */
#define PICL_SRP_MAX_HASH 32     /* largest hash output */
#define PICL_SRP_MAX_INPUT 4096  /* cap on I, P and salt lengths */
#define PICL_SRP_SECRET_BYTES 32 /* random a and b: 256 bits */
#define PICL_SRP_PICL_BYTES 256  /* PAD length of the PiCL group */

/* A group: the caller's storage; it is copied by every function, so it need
 * not outlive the call or the context it created. */
typedef struct picl_srp_group {
    const char *name;
    const uint8_t *N; /* big-endian odd prime, N[0] != 0 */
    size_t len;       /* bytes of N = the PAD length */
    const uint8_t *g; /* big-endian generator, 1 < g < N */
    size_t glen;
    picl_srp_hash hash;
} picl_srp_group;

/* "SRP-6a/SHA256/2048/v1": RFC 5054 Appendix A 2048-bit N, g = 2, SHA-256. */
const picl_srp_group *picl__srp_group_picl(void);
/* RFC 5054 Appendix A 1024-bit N, g = 2, SHA-1 (Appendix B vector only). */
const picl_srp_group *picl__srp_group_rfc5054_1024_sha1(void);

/* PICL_OK when grp is usable (see the struct), else INVALID_ARGUMENT. */
picl_status picl__srp_group_check(const picl_srp_group *grp);
/* Output bytes of grp's hash (20 or 32); 0 for an unknown hash. */
size_t picl__srp_hash_bytes(const picl_srp_group *grp);

/* k = H(PAD(N) || PAD(g)); klen must be the hash size. */
picl_status picl__srp_k(const picl_srp_group *grp, uint8_t *k, size_t klen);

/* x = H(salt || H(I || ":" || P)); xlen must be the hash size.  x is
 * password-equivalent: the caller wipes it. */
picl_status picl__srp_x(const picl_srp_group *grp, const uint8_t *I, size_t Ilen, const uint8_t *P,
                        size_t Plen, const uint8_t *salt, size_t saltlen, uint8_t *x, size_t xlen);

/* v = PAD(g^x mod N) into v[0..vlen), vlen == grp->len (256 for PiCL).  The
 * verifier is what the client sends at account creation and reset. */
picl_status picl__srp_verifier(const picl_srp_group *grp, const uint8_t *I, size_t Ilen, const uint8_t *P,
                               size_t Plen, const uint8_t *salt, size_t saltlen, uint8_t *v, size_t vlen);

/* Intermediate values, for picl__srp_*_export() (vectors and tests). */
typedef enum picl_srp_value {
    PICL_SRP_A, /* grp->len bytes, public */
    PICL_SRP_B, /* grp->len bytes, public */
    PICL_SRP_U, /* hash bytes, public */
    PICL_SRP_S, /* grp->len bytes, SECRET */
    PICL_SRP_K, /* hash bytes, SECRET: srpK */
    PICL_SRP_M1 /* hash bytes: the client's proof */
} picl_srp_value;

/* ---- client ------------------------------------------------------------ */

typedef struct picl_srp_client picl_srp_client;

/* Creates a client with a fresh random a (PICL_SRP_SECRET_BYTES from NSS) and
 * computes A.  *out is owned by the caller: free with picl__srp_client_free. */
picl_status picl__srp_client_new(const picl_srp_group *grp, picl_srp_client **out);

/* Same with a fixed a (big-endian, 1..grp->len bytes): for vectors and tests
 * only; a real login uses picl__srp_client_new. */
picl_status picl__srp_client_new_with_a(const picl_srp_group *grp, const uint8_t *a, size_t alen,
                                        picl_srp_client **out);

/* Copies A (Alen == grp->len) to send to the server. */
picl_status picl__srp_client_A(const picl_srp_client *c, uint8_t *A, size_t Alen);

/*
 * Takes the server's B and salt with the user's I and P; checks B (exactly
 * grp->len bytes, 0 < B < N: BAD_B) and u (!= 0: BAD_U), computes S, K and
 * M1 and writes M1 (M1len == hash size) to send as "M".  One successful call
 * per context (then PICL_ERROR_STATE).  A rejected B or u leaves the context
 * as it was: it can still process a valid B.
 */
picl_status picl__srp_client_process(picl_srp_client *c, const uint8_t *I, size_t Ilen, const uint8_t *P,
                                     size_t Plen, const uint8_t *salt, size_t saltlen, const uint8_t *B,
                                     size_t Blen, uint8_t *M1, size_t M1len);

/* Test hook: picl__srp_client_process with u replaced by forced_u (hash
 * size), to prove the u == 0 check, which SHA-256 cannot be made to hit. */
picl_status picl__srp_client_process_forced_u(picl_srp_client *c, const uint8_t *I, size_t Ilen,
                                              const uint8_t *P, size_t Plen, const uint8_t *salt,
                                              size_t saltlen, const uint8_t *B, size_t Blen,
                                              const uint8_t *forced_u, uint8_t *M1, size_t M1len);

/* Copies K = srpK (Klen == hash size) after a successful process, else
 * PICL_ERROR_STATE with K zeroed.  The caller wipes its copy. */
picl_status picl__srp_client_key(const picl_srp_client *c, uint8_t *K, size_t Klen);

/* Copies one value (out of exactly its size): A any time; B, u, S, K, M1
 * after a successful process (else PICL_ERROR_STATE).  For vectors and tests:
 * protocol code uses _A, _process and _key. */
picl_status picl__srp_client_export(const picl_srp_client *c, picl_srp_value which, uint8_t *out,
                                    size_t outlen);

/* Wipes and frees; NULL is allowed. */
void picl__srp_client_free(picl_srp_client *c);

/* ---- server ------------------------------------------------------------ */

typedef struct picl_srp_server picl_srp_server;

/* Creates a server for the stored verifier v (vlen == grp->len, 0 < v < N,
 * else INVALID_ARGUMENT) with a fresh random b, and computes B.  *out is
 * owned by the caller: free with picl__srp_server_free. */
picl_status picl__srp_server_new(const picl_srp_group *grp, const uint8_t *v, size_t vlen,
                                 picl_srp_server **out);

/* Same with a fixed b (big-endian, 1..grp->len bytes): for vectors, tests,
 * or a keyserver that keeps b (secret!) between /auth/start and /auth/finish
 * in its own storage instead of keeping the context. */
picl_status picl__srp_server_new_with_b(const picl_srp_group *grp, const uint8_t *v, size_t vlen,
                                        const uint8_t *b, size_t blen, picl_srp_server **out);

/* Restores the server of an earlier picl__srp_server_new_with_b (the
 * keyserver's /auth/start) from its b and the B it computed then, without
 * the exponentiation g^b again: the same context, so verify gives the same
 * S, K and M1.  B is public and must be exactly grp->len bytes with
 * 0 < B < N (else PICL_ERROR_SRP_BAD_B); that it belongs to b is the
 * caller's to keep (it stores both together).  v and b as for
 * picl__srp_server_new_with_b (INVALID_ARGUMENT). */
picl_status picl__srp_server_restore(const picl_srp_group *grp, const uint8_t *v, size_t vlen,
                                     const uint8_t *b, size_t blen, const uint8_t *B, size_t Blen,
                                     picl_srp_server **out);

/* Copies B (Blen == grp->len) to send to the client. */
picl_status picl__srp_server_B(const picl_srp_server *s, uint8_t *B, size_t Blen);

/*
 * Takes the client's A and M1.  A must be exactly grp->len bytes, below N
 * and not 0 (so A mod N != 0), else PICL_ERROR_SRP_BAD_A and the context is
 * unchanged.  Otherwise computes S and compares M1 in constant time: on a
 * match writes K (Klen == hash size) and returns PICL_OK; on a mismatch
 * zeroes K and returns PICL_ERROR_SRP_PROOF (keyserver errno 103).  Either
 * way the context is then spent: a second call returns PICL_ERROR_STATE.
 * M1len must be the hash size (else INVALID_ARGUMENT).
 */
picl_status picl__srp_server_verify(picl_srp_server *s, const uint8_t *A, size_t Alen, const uint8_t *M1,
                                    size_t M1len, uint8_t *K, size_t Klen);

/* Copies one value: B any time; A, u, S, K, M1 (the expected one) only after
 * a successful verify (else PICL_ERROR_STATE).  For vectors and tests. */
picl_status picl__srp_server_export(const picl_srp_server *s, picl_srp_value which, uint8_t *out,
                                    size_t outlen);

/* Wipes and frees; NULL is allowed. */
void picl__srp_server_free(picl_srp_server *s);

#endif
