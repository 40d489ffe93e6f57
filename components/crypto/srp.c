/* SPDX-License-Identifier: MPL-2.0 */
/* srp.c -- SRP-6a on GMP's side-channel-silent mpn_sec_* functions (see srp.h). */
#include "crypto/srp.h"
#include "crypto/hash.h"
#include "crypto/util.h"

#include <gmp.h>
#include <pk11pub.h>
#include <secoid.h>
#include <stdlib.h>
#include <string.h>

/*
 * PICL_CTCHECK is defined only by tests/ctcheck.sh, which builds this file
 * for valgrind with the secrets marked undefined.  CT_PUBLIC marks a value
 * that is derived from secrets but public by design (A, B, the one bit
 * "proof matched"), so that memcheck reports only real secret-dependent
 * branches and indexes.  In the normal build it compiles to nothing.
 */
#ifdef PICL_CTCHECK
#include <valgrind/memcheck.h>
#define CT_PUBLIC(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#else
#define CT_PUBLIC(p, n) ((void)(p), (void)(n))
#endif

#define LIMB_BYTES ((size_t)sizeof(mp_limb_t))
#define LIMBS(bytes) ((mp_size_t)(((bytes) + LIMB_BYTES - 1) / LIMB_BYTES))

/* ---- groups -------------------------------------------------------------- */

/* RFC 5054 Appendix A, 2048-bit group. */
static const uint8_t n2048[256] = {
    0xac, 0x6b, 0xdb, 0x41, 0x32, 0x4a, 0x9a, 0x9b, 0xf1, 0x66, 0xde, 0x5e, 0x13, 0x89, 0x58, 0x2f,
    0xaf, 0x72, 0xb6, 0x65, 0x19, 0x87, 0xee, 0x07, 0xfc, 0x31, 0x92, 0x94, 0x3d, 0xb5, 0x60, 0x50,
    0xa3, 0x73, 0x29, 0xcb, 0xb4, 0xa0, 0x99, 0xed, 0x81, 0x93, 0xe0, 0x75, 0x77, 0x67, 0xa1, 0x3d,
    0xd5, 0x23, 0x12, 0xab, 0x4b, 0x03, 0x31, 0x0d, 0xcd, 0x7f, 0x48, 0xa9, 0xda, 0x04, 0xfd, 0x50,
    0xe8, 0x08, 0x39, 0x69, 0xed, 0xb7, 0x67, 0xb0, 0xcf, 0x60, 0x95, 0x17, 0x9a, 0x16, 0x3a, 0xb3,
    0x66, 0x1a, 0x05, 0xfb, 0xd5, 0xfa, 0xaa, 0xe8, 0x29, 0x18, 0xa9, 0x96, 0x2f, 0x0b, 0x93, 0xb8,
    0x55, 0xf9, 0x79, 0x93, 0xec, 0x97, 0x5e, 0xea, 0xa8, 0x0d, 0x74, 0x0a, 0xdb, 0xf4, 0xff, 0x74,
    0x73, 0x59, 0xd0, 0x41, 0xd5, 0xc3, 0x3e, 0xa7, 0x1d, 0x28, 0x1e, 0x44, 0x6b, 0x14, 0x77, 0x3b,
    0xca, 0x97, 0xb4, 0x3a, 0x23, 0xfb, 0x80, 0x16, 0x76, 0xbd, 0x20, 0x7a, 0x43, 0x6c, 0x64, 0x81,
    0xf1, 0xd2, 0xb9, 0x07, 0x87, 0x17, 0x46, 0x1a, 0x5b, 0x9d, 0x32, 0xe6, 0x88, 0xf8, 0x77, 0x48,
    0x54, 0x45, 0x23, 0xb5, 0x24, 0xb0, 0xd5, 0x7d, 0x5e, 0xa7, 0x7a, 0x27, 0x75, 0xd2, 0xec, 0xfa,
    0x03, 0x2c, 0xfb, 0xdb, 0xf5, 0x2f, 0xb3, 0x78, 0x61, 0x60, 0x27, 0x90, 0x04, 0xe5, 0x7a, 0xe6,
    0xaf, 0x87, 0x4e, 0x73, 0x03, 0xce, 0x53, 0x29, 0x9c, 0xcc, 0x04, 0x1c, 0x7b, 0xc3, 0x08, 0xd8,
    0x2a, 0x56, 0x98, 0xf3, 0xa8, 0xd0, 0xc3, 0x82, 0x71, 0xae, 0x35, 0xf8, 0xe9, 0xdb, 0xfb, 0xb6,
    0x94, 0xb5, 0xc8, 0x03, 0xd8, 0x9f, 0x7a, 0xe4, 0x35, 0xde, 0x23, 0x6d, 0x52, 0x5f, 0x54, 0x75,
    0x9b, 0x65, 0xe3, 0x72, 0xfc, 0xd6, 0x8e, 0xf2, 0x0f, 0xa7, 0x11, 0x1f, 0x9e, 0x4a, 0xff, 0x73,
};

/* RFC 5054 Appendix A, 1024-bit group. */
static const uint8_t n1024[128] = {
    0xee, 0xaf, 0x0a, 0xb9, 0xad, 0xb3, 0x8d, 0xd6, 0x9c, 0x33, 0xf8, 0x0a, 0xfa, 0x8f, 0xc5, 0xe8,
    0x60, 0x72, 0x61, 0x87, 0x75, 0xff, 0x3c, 0x0b, 0x9e, 0xa2, 0x31, 0x4c, 0x9c, 0x25, 0x65, 0x76,
    0xd6, 0x74, 0xdf, 0x74, 0x96, 0xea, 0x81, 0xd3, 0x38, 0x3b, 0x48, 0x13, 0xd6, 0x92, 0xc6, 0xe0,
    0xe0, 0xd5, 0xd8, 0xe2, 0x50, 0xb9, 0x8b, 0xe4, 0x8e, 0x49, 0x5c, 0x1d, 0x60, 0x89, 0xda, 0xd1,
    0x5d, 0xc7, 0xd7, 0xb4, 0x61, 0x54, 0xd6, 0xb6, 0xce, 0x8e, 0xf4, 0xad, 0x69, 0xb1, 0x5d, 0x49,
    0x82, 0x55, 0x9b, 0x29, 0x7b, 0xcf, 0x18, 0x85, 0xc5, 0x29, 0xf5, 0x66, 0x66, 0x0e, 0x57, 0xec,
    0x68, 0xed, 0xbc, 0x3c, 0x05, 0x72, 0x6c, 0xc0, 0x2f, 0xd4, 0xcb, 0xf4, 0x97, 0x6e, 0xaa, 0x9a,
    0xfd, 0x51, 0x38, 0xfe, 0x83, 0x76, 0x43, 0x5b, 0x9f, 0xc6, 0x1d, 0x2f, 0xc0, 0xeb, 0x06, 0xe3,
};

static const uint8_t g2[1] = {2};

static const picl_srp_group group_picl = {
    "SRP-6a/SHA256/2048/v1", n2048, sizeof n2048, g2, 1, PICL_SRP_SHA256,
};

static const picl_srp_group group_rfc5054_1024 = {
    "RFC 5054 1024-bit/SHA-1", n1024, sizeof n1024, g2, 1, PICL_SRP_SHA1,
};

const picl_srp_group *picl__srp_group_picl(void) { return &group_picl; }
const picl_srp_group *picl__srp_group_rfc5054_1024_sha1(void) { return &group_rfc5054_1024; }

size_t picl__srp_hash_bytes(const picl_srp_group *grp)
{
    if (!grp)
        return 0;
    switch (grp->hash) {
    case PICL_SRP_SHA1:
        return 20;
    case PICL_SRP_SHA256:
        return 32;
    }
    return 0;
}

/* 1 when the big-endian numbers a[0..alen) < b[0..blen).  Public data only. */
static int lt_pub(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    while (alen > 0 && *a == 0)
        a++, alen--;
    while (blen > 0 && *b == 0)
        b++, blen--;
    if (alen != blen)
        return alen < blen;
    return alen > 0 && memcmp(a, b, alen) < 0;
}

static int zero_pub(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

picl_status picl__srp_group_check(const picl_srp_group *grp)
{
    static const uint8_t one = 1;
    if (!grp || !grp->N || !grp->g || picl__srp_hash_bytes(grp) == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (grp->len < PICL_SRP_MIN_BYTES || grp->len > PICL_SRP_MAX_BYTES)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (grp->N[0] == 0 || (grp->N[grp->len - 1] & 1) == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (grp->glen == 0 || grp->glen > grp->len)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (!lt_pub(&one, 1, grp->g, grp->glen) || !lt_pub(grp->g, grp->glen, grp->N, grp->len))
        return PICL_ERROR_INVALID_ARGUMENT;
    return PICL_OK;
}

/* ---- hashing --------------------------------------------------------------- */

struct part {
    const void *p;
    size_t n;
};

/* out = H(parts[0] || ... || parts[np-1]).  SHA-256 through hash.h, SHA-1
 * (RFC 5054 vector only) through NSS PK11 directly.  Part lengths are
 * capped by the callers (<= PICL_SRP_MAX_INPUT or a group length). */
static picl_status hashv(picl_srp_hash alg, uint8_t *out, const struct part *parts, size_t np)
{
    picl_status st = PICL_OK;
    if (alg == PICL_SRP_SHA256) {
        picl_sha256_ctx *h;
        st = picl__sha256_init(&h);
        if (st != PICL_OK)
            return st;
        for (size_t i = 0; i < np && st == PICL_OK; i++)
            if (parts[i].n)
                st = picl__sha256_update(h, parts[i].p, parts[i].n);
        if (st != PICL_OK) {
            picl__sha256_abort(h);
            return st;
        }
        return picl__sha256_final(h, out);
    }
    if (alg != PICL_SRP_SHA1)
        return PICL_ERROR_INVALID_ARGUMENT;
    PK11Context *pk = PK11_CreateDigestContext(SEC_OID_SHA1);
    if (!pk)
        return PICL_ERROR_CRYPTO;
    if (PK11_DigestBegin(pk) != SECSuccess)
        st = PICL_ERROR_CRYPTO;
    for (size_t i = 0; i < np && st == PICL_OK; i++)
        if (parts[i].n && PK11_DigestOp(pk, parts[i].p, (unsigned int)parts[i].n) != SECSuccess)
            st = PICL_ERROR_CRYPTO;
    unsigned int olen = 0;
    if (st == PICL_OK && (PK11_DigestFinal(pk, out, &olen, 20) != SECSuccess || olen != 20))
        st = PICL_ERROR_CRYPTO;
    PK11_DestroyContext(pk, PR_TRUE);
    return st;
}

static picl_status check_inputs(const uint8_t *I, size_t Ilen, const uint8_t *P, size_t Plen,
                                const uint8_t *salt, size_t saltlen)
{
    if ((!I && Ilen) || (!P && Plen) || (!salt && saltlen))
        return PICL_ERROR_INVALID_ARGUMENT;
    if (Ilen > PICL_SRP_MAX_INPUT || Plen > PICL_SRP_MAX_INPUT || saltlen > PICL_SRP_MAX_INPUT)
        return PICL_ERROR_TOO_LARGE;
    return PICL_OK;
}

/* x = H(salt || H(I || ":" || P)); inputs already checked. */
static picl_status compute_x(picl_srp_hash alg, const uint8_t *I, size_t Ilen, const uint8_t *P, size_t Plen,
                             const uint8_t *salt, size_t saltlen, uint8_t *x, size_t hlen)
{
    uint8_t inner[PICL_SRP_MAX_HASH];
    struct part p1[3] = {{I, Ilen}, {":", 1}, {P, Plen}};
    picl_status st = hashv(alg, inner, p1, 3);
    if (st == PICL_OK) {
        struct part p2[2] = {{salt, saltlen}, {inner, hlen}};
        st = hashv(alg, x, p2, 2);
    }
    picl__wipe(inner, sizeof inner);
    return st;
}

/* ---- fixed-size numbers ---------------------------------------------------- */

/* r[0..rn) = the big-endian in[0..len), len <= rn limbs; no data-dependent
 * branch or index (the value may be secret). */
static void be_to_limbs(mp_limb_t *r, mp_size_t rn, const uint8_t *in, size_t len)
{
    memset(r, 0, (size_t)rn * LIMB_BYTES);
    for (size_t i = 0; i < len; i++)
        r[i / LIMB_BYTES] |= (mp_limb_t)in[len - 1 - i] << (8 * (i % LIMB_BYTES));
}

/* out[0..len) = PAD(r), r holding at least ceil(len / LIMB_BYTES) limbs whose
 * value is below 2^(8*len).  Constant time. */
static void limbs_to_be(uint8_t *out, size_t len, const mp_limb_t *r)
{
    for (size_t i = 0; i < len; i++)
        out[len - 1 - i] = (uint8_t)(r[i / LIMB_BYTES] >> (8 * (i % LIMB_BYTES)));
}

/*
 * What client, server and verifier share: the group in limbs and one heap
 * arena with every working number and GMP's scratch space, so that all
 * secret-derived limbs live in memory we wipe.
 */
typedef struct srp_core {
    picl_srp_hash alg;
    size_t hlen, len, seclen;
    mp_size_t n, hn, sn, el, tpn;
    mp_bitcnt_t hbits, sbits, ebits; /* exponent bits: x or u, a or b, a + u*x */
    mp_limb_t *mem;
    size_t memn;
    mp_limb_t *N, *g, *k, *sec, *V, *P0, *P1, *P2, *T, *T2, *X, *U, *E, *E2, *tp;
    uint8_t Nb[PICL_SRP_MAX_BYTES];
    uint8_t kb[PICL_SRP_MAX_HASH];
} srp_core;

static mp_size_t max_sz(mp_size_t a, mp_size_t b) { return a > b ? a : b; }

static void core_wipe(srp_core *c)
{
    if (c->mem)
        picl__zfree(c->mem, c->memn * LIMB_BYTES);
    picl__wipe(c, sizeof *c);
}

/* Sets up c for grp with a secret exponent of seclen bytes (a or b).  On
 * failure c is wiped and owns nothing. */
static picl_status core_init(srp_core *c, const picl_srp_group *grp, size_t seclen)
{
    memset(c, 0, sizeof *c);
    picl_status st = picl__srp_group_check(grp);
    if (st != PICL_OK)
        return st;
    c->alg = grp->hash;
    c->hlen = picl__srp_hash_bytes(grp);
    c->len = grp->len;
    c->seclen = seclen;
    c->n = LIMBS(grp->len);
    c->hn = LIMBS(c->hlen);
    c->sn = LIMBS(seclen);
    c->el = max_sz(c->sn, 2 * c->hn) + 1;
    /* Exponents are processed over a fixed bit count that depends on lengths
     * only: a + u*x < 2^max(8*|a|, 16*|H|) + 1. */
    c->hbits = (mp_bitcnt_t)(8 * c->hlen);
    c->sbits = (mp_bitcnt_t)(8 * seclen);
    c->ebits = (c->sbits > 2 * c->hbits ? c->sbits : 2 * c->hbits) + 1;
    mp_size_t n = c->n, hn = c->hn;

    mp_size_t tpn = mpn_sec_powm_itch(n, c->sbits, n);
    tpn = max_sz(tpn, mpn_sec_powm_itch(n, c->hbits, n));
    tpn = max_sz(tpn, mpn_sec_powm_itch(n, c->ebits, n));
    tpn = max_sz(tpn, mpn_sec_mul_itch(n, hn));
    tpn = max_sz(tpn, mpn_sec_mul_itch(n, n));
    tpn = max_sz(tpn, mpn_sec_mul_itch(hn, hn));
    tpn = max_sz(tpn, mpn_sec_div_r_itch(2 * n, n));
    tpn = max_sz(tpn, mpn_sec_div_r_itch(n + hn + 1, n));
    c->tpn = tpn;

    /* N g V P0 P1 P2: n each; T T2: 2n; k X U: hn; sec: sn; E E2: el; tp */
    c->memn = (size_t)(6 * n + 4 * n + 3 * hn + c->sn + 2 * c->el + tpn);
    c->mem = calloc(c->memn, LIMB_BYTES);
    if (!c->mem) {
        core_wipe(c);
        return PICL_ERROR_NO_MEMORY;
    }
    mp_limb_t *p = c->mem;
    c->N = p, p += n;
    c->g = p, p += n;
    c->V = p, p += n;
    c->P0 = p, p += n;
    c->P1 = p, p += n;
    c->P2 = p, p += n;
    c->T = p, p += 2 * n;
    c->T2 = p, p += 2 * n;
    c->k = p, p += hn;
    c->X = p, p += hn;
    c->U = p, p += hn;
    c->sec = p, p += c->sn;
    c->E = p, p += c->el;
    c->E2 = p, p += c->el;
    c->tp = p;

    memcpy(c->Nb, grp->N, grp->len);
    be_to_limbs(c->N, n, grp->N, grp->len);
    be_to_limbs(c->g, n, grp->g, grp->glen);

    /* k = H(PAD(N) || PAD(g)) */
    uint8_t gpad[PICL_SRP_MAX_BYTES];
    limbs_to_be(gpad, grp->len, c->g);
    struct part parts[2] = {{c->Nb, c->len}, {gpad, c->len}};
    st = hashv(c->alg, c->kb, parts, 2);
    if (st != PICL_OK) {
        core_wipe(c);
        return st;
    }
    be_to_limbs(c->k, hn, c->kb, c->hlen);
    return PICL_OK;
}

/* Wipes every working number (not the group, sec or V). */
static void core_scrub(srp_core *c)
{
    size_t from = (size_t)(c->P0 - c->mem), to = (size_t)(c->k - c->mem);
    picl__wipe(c->P0, (to - from) * LIMB_BYTES);
    picl__wipe(c->X, 2 * (size_t)c->hn * LIMB_BYTES);
    picl__wipe(c->E, ((size_t)(2 * c->el + c->tpn)) * LIMB_BYTES);
}

/* r[0..n) = base^e mod N, e < 2^ebits; time depends on ebits, not on e. */
static void core_powm(srp_core *c, mp_limb_t *r, const mp_limb_t *base, const mp_limb_t *e, mp_bitcnt_t ebits)
{
    mpn_sec_powm(r, base, c->n, e, ebits, c->N, c->n, c->tp);
}

/* ---- public helpers ---------------------------------------------------------- */

picl_status picl__srp_k(const picl_srp_group *grp, uint8_t *k, size_t klen)
{
    size_t hlen = picl__srp_hash_bytes(grp);
    if (!k || hlen == 0 || klen != hlen) {
        if (k)
            picl__wipe(k, klen);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    srp_core c;
    picl_status st = core_init(&c, grp, 1);
    if (st == PICL_OK)
        memcpy(k, c.kb, hlen);
    else
        picl__wipe(k, klen);
    core_wipe(&c);
    return st;
}

picl_status picl__srp_x(const picl_srp_group *grp, const uint8_t *I, size_t Ilen, const uint8_t *P,
                        size_t Plen, const uint8_t *salt, size_t saltlen, uint8_t *x, size_t xlen)
{
    size_t hlen = picl__srp_hash_bytes(grp);
    if (!x)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl__wipe(x, xlen);
    if (hlen == 0 || xlen != hlen)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_status st = check_inputs(I, Ilen, P, Plen, salt, saltlen);
    if (st == PICL_OK)
        st = compute_x(grp->hash, I, Ilen, P, Plen, salt, saltlen, x, hlen);
    if (st != PICL_OK)
        picl__wipe(x, xlen);
    return st;
}

picl_status picl__srp_verifier(const picl_srp_group *grp, const uint8_t *I, size_t Ilen, const uint8_t *P,
                               size_t Plen, const uint8_t *salt, size_t saltlen, uint8_t *v, size_t vlen)
{
    if (!v)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl__wipe(v, vlen);
    if (!grp || vlen != grp->len)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_status st = check_inputs(I, Ilen, P, Plen, salt, saltlen);
    if (st != PICL_OK)
        return st;
    srp_core c;
    st = core_init(&c, grp, 1);
    if (st != PICL_OK)
        return st;
    uint8_t xb[PICL_SRP_MAX_HASH];
    st = compute_x(c.alg, I, Ilen, P, Plen, salt, saltlen, xb, c.hlen);
    if (st == PICL_OK) {
        be_to_limbs(c.X, c.hn, xb, c.hlen);
        core_powm(&c, c.P1, c.g, c.X, c.hbits);
        limbs_to_be(v, vlen, c.P1);
    }
    picl__wipe(xb, sizeof xb);
    core_wipe(&c);
    return st;
}

/* Copies src[0..n) to out when outlen == n, else zeroes out. */
static picl_status copy_out(uint8_t *out, size_t outlen, const uint8_t *src, size_t n)
{
    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (outlen != n) {
        picl__wipe(out, outlen);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    memcpy(out, src, n);
    return PICL_OK;
}

/* ---- client ---------------------------------------------------------------- */

struct picl_srp_client {
    srp_core core;
    int done; /* a process call succeeded */
    uint8_t A[PICL_SRP_MAX_BYTES];
    uint8_t B[PICL_SRP_MAX_BYTES];
    uint8_t S[PICL_SRP_MAX_BYTES];
    uint8_t u[PICL_SRP_MAX_HASH], K[PICL_SRP_MAX_HASH], M1[PICL_SRP_MAX_HASH];
};

void picl__srp_client_free(picl_srp_client *c)
{
    if (!c)
        return;
    core_wipe(&c->core);
    picl__zfree(c, sizeof *c);
}

static picl_status client_create(const picl_srp_group *grp, const uint8_t *a, size_t alen,
                                 picl_srp_client **out)
{
    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!grp || (a && (alen == 0 || alen > grp->len)))
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_srp_client *c = calloc(1, sizeof *c);
    if (!c)
        return PICL_ERROR_NO_MEMORY;
    uint8_t rnd[PICL_SRP_SECRET_BYTES];
    picl_status st = core_init(&c->core, grp, a ? alen : sizeof rnd);
    if (st == PICL_OK && !a) {
        st = picl__random_bytes(rnd, sizeof rnd);
        a = rnd, alen = sizeof rnd;
    }
    if (st == PICL_OK) {
        srp_core *k = &c->core;
        be_to_limbs(k->sec, k->sn, a, alen);
        core_powm(k, k->P1, k->g, k->sec, k->sbits);
        limbs_to_be(c->A, k->len, k->P1);
        CT_PUBLIC(c->A, k->len); /* A is sent in the clear */
        core_scrub(k);
    }
    picl__wipe(rnd, sizeof rnd);
    if (st != PICL_OK) {
        picl__srp_client_free(c);
        return st;
    }
    *out = c;
    return PICL_OK;
}

picl_status picl__srp_client_new(const picl_srp_group *grp, picl_srp_client **out)
{
    return client_create(grp, NULL, 0, out);
}

picl_status picl__srp_client_new_with_a(const picl_srp_group *grp, const uint8_t *a, size_t alen,
                                        picl_srp_client **out)
{
    if (!a) {
        if (out)
            *out = NULL;
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    return client_create(grp, a, alen, out);
}

picl_status picl__srp_client_A(const picl_srp_client *c, uint8_t *A, size_t Alen)
{
    if (!c)
        return PICL_ERROR_INVALID_ARGUMENT;
    return copy_out(A, Alen, c->A, c->core.len);
}

static picl_status client_process(picl_srp_client *c, const uint8_t *I, size_t Ilen, const uint8_t *P,
                                  size_t Plen, const uint8_t *salt, size_t saltlen, const uint8_t *B,
                                  size_t Blen, const uint8_t *forced_u, uint8_t *M1, size_t M1len)
{
    if (!M1)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl__wipe(M1, M1len);
    if (!c || M1len != c->core.hlen)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (c->done)
        return PICL_ERROR_STATE;
    picl_status st = check_inputs(I, Ilen, P, Plen, salt, saltlen);
    if (st != PICL_OK)
        return st;
    srp_core *k = &c->core;
    size_t len = k->len, hlen = k->hlen;
    mp_size_t n = k->n, hn = k->hn;

    /* B is public: plain branches.  B mod N == 0 means B == 0 once B < N. */
    if (!B || Blen != len || !lt_pub(B, len, k->Nb, len) || zero_pub(B, len))
        return PICL_ERROR_SRP_BAD_B;
    uint8_t u[PICL_SRP_MAX_HASH];
    if (forced_u) {
        memcpy(u, forced_u, hlen);
    } else {
        struct part pu[2] = {{c->A, len}, {B, len}};
        st = hashv(k->alg, u, pu, 2);
        if (st != PICL_OK)
            return st;
    }
    if (zero_pub(u, hlen))
        return PICL_ERROR_SRP_BAD_U;

    uint8_t xb[PICL_SRP_MAX_HASH], S[PICL_SRP_MAX_BYTES], K[PICL_SRP_MAX_HASH], m1[PICL_SRP_MAX_HASH];
    st = compute_x(k->alg, I, Ilen, P, Plen, salt, saltlen, xb, hlen);
    if (st == PICL_OK) {
        be_to_limbs(k->X, hn, xb, hlen);
        be_to_limbs(k->U, hn, u, hlen);
        be_to_limbs(k->P0, n, B, len);
        /* P1 = g^x; T = k * g^x mod N (sec_mul needs the longer operand first) */
        core_powm(k, k->P1, k->g, k->X, k->hbits);
        mpn_sec_mul(k->T, k->P1, n, k->k, hn, k->tp);
        mpn_sec_div_r(k->T, n + hn, k->N, n, k->tp);
        /* P2 = (B - k*g^x) mod N, the conditional add is branch-free */
        mp_limb_t borrow = mpn_sub_n(k->P2, k->P0, k->T, n);
        mpn_cnd_add_n(borrow, k->P2, k->P2, k->N, n);
        /* E = a + u*x over el limbs (no overflow: el has a spare limb) */
        memset(k->E2, 0, (size_t)k->el * LIMB_BYTES);
        mpn_sec_mul(k->E2, k->U, hn, k->X, hn, k->tp);
        memset(k->E, 0, (size_t)k->el * LIMB_BYTES);
        memcpy(k->E, k->sec, (size_t)k->sn * LIMB_BYTES);
        mpn_add_n(k->E, k->E, k->E2, k->el);
        /* S = P2^E mod N */
        core_powm(k, k->P1, k->P2, k->E, k->ebits);
        limbs_to_be(S, len, k->P1);
        struct part ps[1] = {{S, len}};
        st = hashv(k->alg, K, ps, 1);
    }
    if (st == PICL_OK) {
        struct part pm[3] = {{c->A, len}, {B, len}, {S, len}};
        st = hashv(k->alg, m1, pm, 3);
    }
    if (st == PICL_OK) {
        memcpy(c->B, B, len);
        memcpy(c->u, u, hlen);
        memcpy(c->S, S, len);
        memcpy(c->K, K, hlen);
        memcpy(c->M1, m1, hlen);
        CT_PUBLIC(c->M1, hlen); /* M1 is sent in the clear */
        memcpy(M1, m1, hlen);
        c->done = 1;
    }
    core_scrub(k);
    picl__wipe(xb, sizeof xb);
    picl__wipe(S, sizeof S);
    picl__wipe(K, sizeof K);
    picl__wipe(m1, sizeof m1);
    return st;
}

picl_status picl__srp_client_process(picl_srp_client *c, const uint8_t *I, size_t Ilen, const uint8_t *P,
                                     size_t Plen, const uint8_t *salt, size_t saltlen, const uint8_t *B,
                                     size_t Blen, uint8_t *M1, size_t M1len)
{
    return client_process(c, I, Ilen, P, Plen, salt, saltlen, B, Blen, NULL, M1, M1len);
}

picl_status picl__srp_client_process_forced_u(picl_srp_client *c, const uint8_t *I, size_t Ilen,
                                              const uint8_t *P, size_t Plen, const uint8_t *salt,
                                              size_t saltlen, const uint8_t *B, size_t Blen,
                                              const uint8_t *forced_u, uint8_t *M1, size_t M1len)
{
    if (!forced_u) {
        if (M1)
            picl__wipe(M1, M1len);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    return client_process(c, I, Ilen, P, Plen, salt, saltlen, B, Blen, forced_u, M1, M1len);
}

picl_status picl__srp_client_key(const picl_srp_client *c, uint8_t *K, size_t Klen)
{
    return picl__srp_client_export(c, PICL_SRP_K, K, Klen);
}

/* The verifier v into k->V, checked 0 < v < N without branching on v; only
 * the verdict is released (a stored verifier out of range is a corrupt
 * record): PICL_ERROR_INVALID_ARGUMENT. */
static picl_status load_verifier(srp_core *k, const uint8_t *v, size_t vlen)
{
    be_to_limbs(k->V, k->n, v, vlen);
    mp_limb_t below = mpn_sub_n(k->T, k->V, k->N, k->n);
    int ok = (int)below & !picl__iszero_ct(v, vlen);
    CT_PUBLIC(&ok, sizeof ok);
    return ok ? PICL_OK : PICL_ERROR_INVALID_ARGUMENT;
}

picl_status picl__srp_client_export(const picl_srp_client *c, picl_srp_value which, uint8_t *out,
                                    size_t outlen)
{
    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (!c) {
        picl__wipe(out, outlen);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    const srp_core *k = &c->core;
    if (which == PICL_SRP_A)
        return copy_out(out, outlen, c->A, k->len);
    if (which != PICL_SRP_B && which != PICL_SRP_U && which != PICL_SRP_S && which != PICL_SRP_K &&
        which != PICL_SRP_M1) {
        picl__wipe(out, outlen);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    if (!c->done) {
        picl__wipe(out, outlen);
        return PICL_ERROR_STATE;
    }
    switch (which) {
    case PICL_SRP_B:
        return copy_out(out, outlen, c->B, k->len);
    case PICL_SRP_U:
        return copy_out(out, outlen, c->u, k->hlen);
    case PICL_SRP_S:
        return copy_out(out, outlen, c->S, k->len);
    case PICL_SRP_K:
        return copy_out(out, outlen, c->K, k->hlen);
    default:
        return copy_out(out, outlen, c->M1, k->hlen);
    }
}

/* ---- server ---------------------------------------------------------------- */

enum { SERVER_READY = 0, SERVER_OK = 1, SERVER_FAILED = 2 };

struct picl_srp_server {
    srp_core core;
    int state;
    uint8_t A[PICL_SRP_MAX_BYTES];
    uint8_t B[PICL_SRP_MAX_BYTES];
    uint8_t S[PICL_SRP_MAX_BYTES];
    uint8_t u[PICL_SRP_MAX_HASH], K[PICL_SRP_MAX_HASH], M1[PICL_SRP_MAX_HASH];
};

void picl__srp_server_free(picl_srp_server *s)
{
    if (!s)
        return;
    core_wipe(&s->core);
    picl__zfree(s, sizeof *s);
}

static picl_status server_create(const picl_srp_group *grp, const uint8_t *v, size_t vlen, const uint8_t *b,
                                 size_t blen, picl_srp_server **out)
{
    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!grp || !v || vlen != grp->len || (b && (blen == 0 || blen > grp->len)))
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_srp_server *s = calloc(1, sizeof *s);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    uint8_t rnd[PICL_SRP_SECRET_BYTES];
    picl_status st = core_init(&s->core, grp, b ? blen : sizeof rnd);
    srp_core *k = &s->core;
    if (st == PICL_OK)
        st = load_verifier(k, v, vlen);
    if (st == PICL_OK && !b) {
        st = picl__random_bytes(rnd, sizeof rnd);
        b = rnd, blen = sizeof rnd;
    }
    if (st == PICL_OK) {
        mp_size_t n = k->n, hn = k->hn;
        be_to_limbs(k->sec, k->sn, b, blen);
        /* P1 = g^b; T = k*v (n + hn limbs) + g^b, then mod N */
        core_powm(k, k->P1, k->g, k->sec, k->sbits);
        memset(k->T, 0, 2 * (size_t)n * LIMB_BYTES);
        mpn_sec_mul(k->T, k->V, n, k->k, hn, k->tp);
        memset(k->T2, 0, 2 * (size_t)n * LIMB_BYTES);
        memcpy(k->T2, k->P1, (size_t)n * LIMB_BYTES);
        mpn_add_n(k->T, k->T, k->T2, n + hn + 1);
        mpn_sec_div_r(k->T, n + hn + 1, k->N, n, k->tp);
        limbs_to_be(s->B, k->len, k->T);
        CT_PUBLIC(s->B, k->len); /* B is sent in the clear */
    }
    if (k->mem)
        core_scrub(k);
    picl__wipe(rnd, sizeof rnd);
    if (st != PICL_OK) {
        picl__srp_server_free(s);
        return st;
    }
    *out = s;
    return PICL_OK;
}

picl_status picl__srp_server_new(const picl_srp_group *grp, const uint8_t *v, size_t vlen,
                                 picl_srp_server **out)
{
    return server_create(grp, v, vlen, NULL, 0, out);
}

picl_status picl__srp_server_new_with_b(const picl_srp_group *grp, const uint8_t *v, size_t vlen,
                                        const uint8_t *b, size_t blen, picl_srp_server **out)
{
    if (!b) {
        if (out)
            *out = NULL;
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    return server_create(grp, v, vlen, b, blen, out);
}

picl_status picl__srp_server_restore(const picl_srp_group *grp, const uint8_t *v, size_t vlen,
                                     const uint8_t *b, size_t blen, const uint8_t *B, size_t Blen,
                                     picl_srp_server **out)
{
    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!grp || !v || vlen != grp->len || !b || blen == 0 || blen > grp->len)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_status st = picl__srp_group_check(grp);
    if (st != PICL_OK)
        return st;
    /* B is public: plain branches, the checks a client makes of it */
    if (!B || Blen != grp->len || !lt_pub(B, Blen, grp->N, grp->len) || zero_pub(B, Blen))
        return PICL_ERROR_SRP_BAD_B;
    picl_srp_server *s = calloc(1, sizeof *s);
    if (!s)
        return PICL_ERROR_NO_MEMORY;
    st = core_init(&s->core, grp, blen);
    srp_core *k = &s->core;
    if (st == PICL_OK)
        st = load_verifier(k, v, vlen);
    if (st == PICL_OK) {
        be_to_limbs(k->sec, k->sn, b, blen);
        memcpy(s->B, B, Blen);
    }
    if (k->mem)
        core_scrub(k);
    if (st != PICL_OK) {
        picl__srp_server_free(s);
        return st;
    }
    *out = s;
    return PICL_OK;
}

picl_status picl__srp_server_B(const picl_srp_server *s, uint8_t *B, size_t Blen)
{
    if (!s)
        return PICL_ERROR_INVALID_ARGUMENT;
    return copy_out(B, Blen, s->B, s->core.len);
}

picl_status picl__srp_server_verify(picl_srp_server *s, const uint8_t *A, size_t Alen, const uint8_t *M1,
                                    size_t M1len, uint8_t *K, size_t Klen)
{
    if (!K)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl__wipe(K, Klen);
    if (!s || Klen != s->core.hlen || !M1 || M1len != s->core.hlen)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (s->state != SERVER_READY)
        return PICL_ERROR_STATE;
    srp_core *k = &s->core;
    size_t len = k->len, hlen = k->hlen;
    mp_size_t n = k->n, hn = k->hn;

    /* A is public: plain branches.  A mod N == 0 means A == 0 once A < N. */
    if (!A || Alen != len || !lt_pub(A, len, k->Nb, len) || zero_pub(A, len))
        return PICL_ERROR_SRP_BAD_A;

    uint8_t u[PICL_SRP_MAX_HASH], S[PICL_SRP_MAX_BYTES], Kc[PICL_SRP_MAX_HASH], m1[PICL_SRP_MAX_HASH];
    struct part pu[2] = {{A, len}, {s->B, len}};
    picl_status st = hashv(k->alg, u, pu, 2);
    if (st == PICL_OK) {
        be_to_limbs(k->U, hn, u, hlen);
        be_to_limbs(k->P0, n, A, len);
        /* P1 = v^u; T = A * v^u mod N; S = T^b */
        core_powm(k, k->P1, k->V, k->U, k->hbits);
        mpn_sec_mul(k->T, k->P0, n, k->P1, n, k->tp);
        mpn_sec_div_r(k->T, 2 * n, k->N, n, k->tp);
        memcpy(k->P2, k->T, (size_t)n * LIMB_BYTES);
        core_powm(k, k->P1, k->P2, k->sec, k->sbits);
        limbs_to_be(S, len, k->P1);
        struct part ps[1] = {{S, len}};
        st = hashv(k->alg, Kc, ps, 1);
    }
    if (st == PICL_OK) {
        struct part pm[3] = {{A, len}, {s->B, len}, {S, len}};
        st = hashv(k->alg, m1, pm, 3);
    }
    if (st == PICL_OK) {
        int eq = picl__memeq_ct(m1, M1, hlen);
        CT_PUBLIC(&eq, sizeof eq); /* the verdict is the one thing released */
        if (eq) {
            memcpy(s->A, A, len);
            memcpy(s->u, u, hlen);
            memcpy(s->S, S, len);
            memcpy(s->K, Kc, hlen);
            memcpy(s->M1, m1, hlen);
            memcpy(K, Kc, hlen);
            s->state = SERVER_OK;
        } else {
            s->state = SERVER_FAILED;
            st = PICL_ERROR_SRP_PROOF;
        }
    }
    core_scrub(k);
    picl__wipe(S, sizeof S);
    picl__wipe(Kc, sizeof Kc);
    picl__wipe(m1, sizeof m1);
    return st;
}

picl_status picl__srp_server_export(const picl_srp_server *s, picl_srp_value which, uint8_t *out,
                                    size_t outlen)
{
    if (!out)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (!s) {
        picl__wipe(out, outlen);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    const srp_core *k = &s->core;
    if (which == PICL_SRP_B)
        return copy_out(out, outlen, s->B, k->len);
    if (which != PICL_SRP_A && which != PICL_SRP_U && which != PICL_SRP_S && which != PICL_SRP_K &&
        which != PICL_SRP_M1) {
        picl__wipe(out, outlen);
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    if (s->state != SERVER_OK) {
        picl__wipe(out, outlen);
        return PICL_ERROR_STATE;
    }
    switch (which) {
    case PICL_SRP_A:
        return copy_out(out, outlen, s->A, k->len);
    case PICL_SRP_U:
        return copy_out(out, outlen, s->u, k->hlen);
    case PICL_SRP_S:
        return copy_out(out, outlen, s->S, k->len);
    case PICL_SRP_K:
        return copy_out(out, outlen, s->K, k->hlen);
    default:
        return copy_out(out, outlen, s->M1, k->hlen);
    }
}
