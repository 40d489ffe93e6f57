/* SPDX-License-Identifier: MPL-2.0 */
/* bench_srp.c -- picl-bench srp: one SRP login, constant time vs GMP's plain mpz_powm. */
/*
 * Each sample is one complete 2048-bit login: the server creates b and B,
 * the client creates a and A, takes B and computes u, x, S, K and M1, the
 * server takes A and M1 and checks them.  Client time = client_new +
 * client_process; server time = server_new + server_verify.
 *
 * The reference does the same computation (same hashes through NSS, same
 * 256-bit a and b) with mpz and a swappable powm: plain mpz_powm is the speed
 * limit (variable time, not acceptable for secrets), mpz_powm_sec is shown
 * for information.  Ratio = picl / plain mpz_powm; the target is
 * under 1.5.  Before timing, the reference is checked against the library
 * with fixed a and b (same K).
 */
#include <gmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "crypto/hash.h"
#include "crypto/nss.h"
#include "crypto/srp.h"

#define LEN PICL_SRP_PICL_BYTES

typedef void (*powm_fn)(mpz_ptr, mpz_srcptr, mpz_srcptr, mpz_srcptr);

static const uint8_t I[] = "andr\xc3\xa9@example.org";
static uint8_t P[32], salt[32], v[LEN];

/* ---- the mpz reference ------------------------------------------------------ */

struct ref {
    powm_fn powm;
    mpz_t N, g, k, v, a, b, A, B, u, x, S, t, e;
    uint8_t Ab[LEN], Bb[LEN], Sb[LEN], ub[32], M1[32], Kc[32], Ks[32];
};

static void pad(uint8_t *out, mpz_srcptr z)
{
    size_t n = 0;
    uint8_t tmp[LEN];
    mpz_export(tmp, &n, 1, 1, 1, 0, z);
    memset(out, 0, LEN - n);
    memcpy(out + LEN - n, tmp, n);
}

static void h3(uint8_t *out, const uint8_t *p1, size_t n1, const uint8_t *p2, size_t n2, const uint8_t *p3,
               size_t n3)
{
    picl_sha256_ctx *h;
    if (picl__sha256_init(&h) != PICL_OK)
        abort();
    picl__sha256_update(h, p1, n1);
    if (n2)
        picl__sha256_update(h, p2, n2);
    if (n3)
        picl__sha256_update(h, p3, n3);
    picl__sha256_final(h, out);
}

static void ref_init(struct ref *r, powm_fn powm)
{
    const picl_srp_group *g = picl__srp_group_picl();
    uint8_t k[32];
    r->powm = powm;
    mpz_inits(r->N, r->g, r->k, r->v, r->a, r->b, r->A, r->B, r->u, r->x, r->S, r->t, r->e, NULL);
    mpz_import(r->N, g->len, 1, 1, 1, 0, g->N);
    mpz_set_ui(r->g, 2);
    picl__srp_k(g, k, 32);
    mpz_import(r->k, 32, 1, 1, 1, 0, k);
    mpz_import(r->v, LEN, 1, 1, 1, 0, v);
}

static void ref_clear(struct ref *r)
{
    mpz_clears(r->N, r->g, r->k, r->v, r->a, r->b, r->A, r->B, r->u, r->x, r->S, r->t, r->e, NULL);
}

/* secret: 32 bytes, or NULL for random */
static void ref_server_start(struct ref *r, const uint8_t *secret)
{
    uint8_t b[32];
    if (secret)
        memcpy(b, secret, 32);
    else
        picl__random_bytes(b, 32);
    mpz_import(r->b, 32, 1, 1, 1, 0, b);
    r->powm(r->t, r->g, r->b, r->N);
    mpz_mul(r->B, r->k, r->v);
    mpz_add(r->B, r->B, r->t);
    mpz_mod(r->B, r->B, r->N);
    pad(r->Bb, r->B);
}

static void ref_client(struct ref *r, const uint8_t *secret)
{
    uint8_t a[32], x[32];
    if (secret)
        memcpy(a, secret, 32);
    else
        picl__random_bytes(a, 32);
    mpz_import(r->a, 32, 1, 1, 1, 0, a);
    r->powm(r->A, r->g, r->a, r->N);
    pad(r->Ab, r->A);
    h3(r->ub, r->Ab, LEN, r->Bb, LEN, NULL, 0);
    mpz_import(r->u, 32, 1, 1, 1, 0, r->ub);
    picl__srp_x(picl__srp_group_picl(), I, sizeof I - 1, P, sizeof P, salt, sizeof salt, x, 32);
    mpz_import(r->x, 32, 1, 1, 1, 0, x);
    r->powm(r->t, r->g, r->x, r->N);
    mpz_mul(r->t, r->t, r->k);
    mpz_sub(r->t, r->B, r->t);
    mpz_mod(r->t, r->t, r->N);
    mpz_mul(r->e, r->u, r->x);
    mpz_add(r->e, r->e, r->a);
    r->powm(r->S, r->t, r->e, r->N);
    pad(r->Sb, r->S);
    h3(r->Kc, r->Sb, LEN, NULL, 0, NULL, 0);
    h3(r->M1, r->Ab, LEN, r->Bb, LEN, r->Sb, LEN);
}

static int ref_server_finish(struct ref *r)
{
    uint8_t m1[32];
    h3(r->ub, r->Ab, LEN, r->Bb, LEN, NULL, 0);
    mpz_import(r->u, 32, 1, 1, 1, 0, r->ub);
    r->powm(r->t, r->v, r->u, r->N);
    mpz_mul(r->t, r->t, r->A);
    mpz_mod(r->t, r->t, r->N);
    r->powm(r->S, r->t, r->b, r->N);
    pad(r->Sb, r->S);
    h3(m1, r->Ab, LEN, r->Bb, LEN, r->Sb, LEN);
    h3(r->Ks, r->Sb, LEN, NULL, 0, NULL, 0);
    return memcmp(m1, r->M1, 32) == 0;
}

/* ---- one login each way ------------------------------------------------------- */

/* Library login; returns 0 on success and adds the two times. */
static int picl_login(const uint8_t *a, const uint8_t *b, double *tc, double *ts, uint8_t K[32])
{
    const picl_srp_group *g = picl__srp_group_picl();
    picl_srp_client *c = NULL;
    picl_srp_server *s = NULL;
    uint8_t A[LEN], B[LEN], M1[32], Ks[32];
    int rc = 1;
    double t0 = bench_now();
    if ((b ? picl__srp_server_new_with_b(g, v, LEN, b, 32, &s) : picl__srp_server_new(g, v, LEN, &s)) ||
        picl__srp_server_B(s, B, LEN))
        goto done;
    double t1 = bench_now();
    if ((a ? picl__srp_client_new_with_a(g, a, 32, &c) : picl__srp_client_new(g, &c)) ||
        picl__srp_client_A(c, A, LEN) ||
        picl__srp_client_process(c, I, sizeof I - 1, P, sizeof P, salt, sizeof salt, B, LEN, M1, 32) ||
        picl__srp_client_key(c, K, 32))
        goto done;
    double t2 = bench_now();
    if (picl__srp_server_verify(s, A, LEN, M1, 32, Ks, 32))
        goto done;
    double t3 = bench_now();
    *tc = t2 - t1;
    *ts = (t1 - t0) + (t3 - t2);
    rc = memcmp(K, Ks, 32) != 0;
done:
    picl__srp_client_free(c);
    picl__srp_server_free(s);
    return rc;
}

static int ref_login(struct ref *r, const uint8_t *a, const uint8_t *b, double *tc, double *ts)
{
    double t0 = bench_now();
    ref_server_start(r, b);
    double t1 = bench_now();
    ref_client(r, a);
    double t2 = bench_now();
    int ok = ref_server_finish(r);
    double t3 = bench_now();
    *tc = t2 - t1;
    *ts = (t1 - t0) + (t3 - t2);
    return !(ok && memcmp(r->Kc, r->Ks, 32) == 0);
}

static void wrap_powm(mpz_ptr r, mpz_srcptr b, mpz_srcptr e, mpz_srcptr m) { mpz_powm(r, b, e, m); }
static void wrap_powm_sec(mpz_ptr r, mpz_srcptr b, mpz_srcptr e, mpz_srcptr m) { mpz_powm_sec(r, b, e, m); }

int bench_srp(int argc, char **argv)
{
    int n = 200;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            n = (int)strtol(argv[++i], NULL, 10);
    if (n < 1)
        n = 1;
    if (picl__nss_acquire() != PICL_OK) {
        fprintf(stderr, "srp: NSS init failed\n");
        return 1;
    }
    for (int i = 0; i < 32; i++)
        P[i] = (uint8_t)(i * 13), salt[i] = (uint8_t)(255 - i);
    int rc = 1;
    double *s = calloc(6 * (size_t)n, sizeof *s);
    struct ref plain, sec;
    ref_init(&plain, wrap_powm);
    ref_init(&sec, wrap_powm_sec);
    if (!s || picl__srp_verifier(picl__srp_group_picl(), I, sizeof I - 1, P, sizeof P, salt, sizeof salt, v,
                                 LEN) != PICL_OK)
        goto done;
    mpz_import(plain.v, LEN, 1, 1, 1, 0, v);
    mpz_import(sec.v, LEN, 1, 1, 1, 0, v);

    /* the reference computes what the library computes */
    uint8_t fa[32], fb[32], K[32];
    double d1, d2;
    memset(fa, 0xa5, 32);
    memset(fb, 0x5b, 32);
    if (picl_login(fa, fb, &d1, &d2, K) || ref_login(&plain, fa, fb, &d1, &d2) ||
        memcmp(K, plain.Kc, 32) != 0) {
        fprintf(stderr, "srp: reference and library disagree\n");
        goto done;
    }

    double *pc = s, *ps = s + n, *rc_ = s + 2 * n, *rs = s + 3 * n, *qc = s + 4 * n, *qs = s + 5 * n;
    for (int i = 0; i < n; i++) {
        if (picl_login(NULL, NULL, &pc[i], &ps[i], K) || ref_login(&plain, NULL, NULL, &rc_[i], &rs[i]) ||
            ref_login(&sec, NULL, NULL, &qc[i], &qs[i])) {
            fprintf(stderr, "srp: a login failed\n");
            goto done;
        }
    }
    double mpc = bench_median(pc, n), mps = bench_median(ps, n);
    double mrc = bench_median(rc_, n), mrs = bench_median(rs, n);
    double mqc = bench_median(qc, n), mqs = bench_median(qs, n);
    printf("srp: SRP-6a/SHA256/2048, 256-bit a and b, %d logins each\n", n);
    printf("srp: client  picl (mpn_sec_powm)   median %7.3f ms\n", mpc * 1e3);
    printf("srp: client  plain mpz_powm        median %7.3f ms\n", mrc * 1e3);
    printf("srp: client  mpz_powm_sec          median %7.3f ms\n", mqc * 1e3);
    printf("srp: server  picl (mpn_sec_powm)   median %7.3f ms\n", mps * 1e3);
    printf("srp: server  plain mpz_powm        median %7.3f ms\n", mrs * 1e3);
    printf("srp: server  mpz_powm_sec          median %7.3f ms\n", mqs * 1e3);
    bench_target("srp.client picl / plain mpz_powm", mpc / mrc, "x", "<", 1.5, "medians of the same run");
    bench_target("srp.server picl / plain mpz_powm", mps / mrs, "x", "<", 1.5, "medians of the same run");
    rc = 0;
done:
    ref_clear(&plain);
    ref_clear(&sec);
    free(s);
    picl__nss_release();
    return rc;
}
