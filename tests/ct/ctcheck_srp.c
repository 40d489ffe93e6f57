/* SPDX-License-Identifier: MPL-2.0 */
/* ctcheck_srp.c -- runs SRP under valgrind memcheck with every secret marked undefined. */
/*
 * Built and run by tests/ctcheck.sh (never by the unit-test build).  The
 * secret inputs -- the password P, the client's a, the server's b and the
 * verifier v -- are marked undefined with VALGRIND_MAKE_MEM_UNDEFINED, so
 * memcheck reports every conditional jump and every memory address that
 * depends on them.  srp.c is compiled with -DPICL_CTCHECK, which turns its
 * CT_PUBLIC() marks (A, B, M1 and the one "proof matched" bit, public by
 * design) into VALGRIND_MAKE_MEM_DEFINED.  A clean run means: no branch and
 * no index depends on a secret, in srp.c, GMP's mpn_sec_* or NSS's hashing.
 *
 * Modes: verifier | client | server | all -- must be clean;
 *        control -- the same exponentiation through mpz_import +
 *        mpz_powm_sec + mpz_export, which memcheck MUST flag (proves the
 *        check can see a leak, and documents why srp.c avoids the mpz layer).
 */
#include <gmp.h>
#include <stdio.h>
#include <string.h>
#include <valgrind/memcheck.h>

#include "picl.h"
#include "crypto/nss.h"
#include "crypto/srp.h"

#define SECRET(p, n) VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#define PUBLIC(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))

static const uint8_t I[] = "andr\xc3\xa9@example.org";
static uint8_t P[32], salt[32], a[32], b[32], v[PICL_SRP_PICL_BYTES];

/* Fixed, arbitrary inputs: the check is about data flow, not values. */
static void inputs(void)
{
    for (int i = 0; i < 32; i++) {
        P[i] = (uint8_t)(0x5a ^ (i * 7));
        salt[i] = (uint8_t)i;
        a[i] = (uint8_t)(0xa0 + i);
        b[i] = (uint8_t)(0xb0 + 3 * i);
    }
}

static int fail(const char *what, picl_status st)
{
    fprintf(stderr, "ctcheck_srp: %s: %s\n", what, picl_strerror(st));
    return 1;
}

static int run_verifier(const picl_srp_group *g)
{
    SECRET(P, sizeof P);
    picl_status st = picl__srp_verifier(g, I, sizeof I - 1, P, sizeof P, salt, sizeof salt, v, sizeof v);
    return st == PICL_OK ? 0 : fail("verifier", st);
}

/* One full login with secrets undefined; the keys are compared after an
 * explicit declassification (the harness's own check is not under test). */
static int run_login(const picl_srp_group *g, int do_client, int do_server)
{
    uint8_t A[PICL_SRP_PICL_BYTES], B[PICL_SRP_PICL_BYTES], M1[32], bad[32], Kc[32], Ks[32];
    picl_srp_client *c = NULL;
    picl_srp_server *s = NULL, *s2 = NULL;
    picl_status st;
    int rc = 1;

    /* the verifier is computed with defined inputs when only the client is
     * under test, so that each mode reports only its own side */
    st = picl__srp_verifier(g, I, sizeof I - 1, P, sizeof P, salt, sizeof salt, v, sizeof v);
    if (st != PICL_OK)
        return fail("verifier", st);
    PUBLIC(v, sizeof v);
    if (do_server) {
        SECRET(v, sizeof v);
        SECRET(b, sizeof b);
    }
    if (do_client) {
        SECRET(P, sizeof P);
        SECRET(a, sizeof a);
    }
    if ((st = picl__srp_server_new_with_b(g, v, sizeof v, b, sizeof b, &s)) != PICL_OK) {
        fail("server_new", st);
        goto done;
    }
    if ((st = picl__srp_server_B(s, B, sizeof B)) != PICL_OK ||
        (st = picl__srp_client_new_with_a(g, a, sizeof a, &c)) != PICL_OK ||
        (st = picl__srp_client_A(c, A, sizeof A)) != PICL_OK) {
        fail("setup", st);
        goto done;
    }
    st = picl__srp_client_process(c, I, sizeof I - 1, P, sizeof P, salt, sizeof salt, B, sizeof B, M1,
                                  sizeof M1);
    if (st != PICL_OK || (st = picl__srp_client_key(c, Kc, sizeof Kc)) != PICL_OK) {
        fail("client", st);
        goto done;
    }
    st = picl__srp_server_verify(s, A, sizeof A, M1, sizeof M1, Ks, sizeof Ks);
    if (st != PICL_OK) {
        fail("server verify", st);
        goto done;
    }
    PUBLIC(Kc, sizeof Kc);
    PUBLIC(Ks, sizeof Ks);
    if (memcmp(Kc, Ks, sizeof Kc) != 0) {
        fprintf(stderr, "ctcheck_srp: client and server keys differ\n");
        goto done;
    }
    /* the failure path: a wrong proof on a second server with the same b */
    if ((st = picl__srp_server_new_with_b(g, v, sizeof v, b, sizeof b, &s2)) != PICL_OK) {
        fail("server_new 2", st);
        goto done;
    }
    memcpy(bad, M1, sizeof bad);
    bad[31] ^= 1;
    st = picl__srp_server_verify(s2, A, sizeof A, bad, sizeof bad, Ks, sizeof Ks);
    if (st != PICL_ERROR_SRP_PROOF) {
        fail("wrong proof accepted?", st);
        goto done;
    }
    rc = 0;
done:
    picl__srp_client_free(c);
    picl__srp_server_free(s);
    picl__srp_server_free(s2);
    return rc;
}

/* The control: g^a mod N through the mpz layer, which normalises sizes. */
static int run_control(const picl_srp_group *g)
{
    mpz_t N, base, e, r;
    uint8_t out[PICL_SRP_PICL_BYTES];
    size_t n = 0;
    mpz_inits(N, base, e, r, NULL);
    mpz_import(N, g->len, 1, 1, 1, 0, g->N);
    mpz_set_ui(base, 2);
    SECRET(a, sizeof a);
    mpz_import(e, sizeof a, 1, 1, 1, 0, a);
    mpz_powm_sec(r, base, e, N);
    mpz_export(out, &n, 1, 1, 1, 0, r);
    mpz_clears(N, base, e, r, NULL);
    PUBLIC(&n, sizeof n);
    return n == 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    const picl_srp_group *g = picl__srp_group_picl();
    inputs();
    if (picl__nss_acquire() != PICL_OK) {
        fprintf(stderr, "ctcheck_srp: NSS\n");
        return 2;
    }
    int rc;
    if (!strcmp(mode, "verifier"))
        rc = run_verifier(g);
    else if (!strcmp(mode, "client"))
        rc = run_login(g, 1, 0);
    else if (!strcmp(mode, "server"))
        rc = run_login(g, 0, 1);
    else if (!strcmp(mode, "all"))
        rc = run_verifier(g) || run_login(g, 1, 1);
    else if (!strcmp(mode, "control"))
        rc = run_control(g);
    else {
        fprintf(stderr, "usage: ctcheck_srp verifier|client|server|all|control\n");
        rc = 2;
    }
    picl__nss_release();
    return rc;
}
