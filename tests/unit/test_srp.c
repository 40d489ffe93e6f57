/* SPDX-License-Identifier: MPL-2.0 */
/* test_srp.c -- SRP-6a: RFC 5054, srptools and PiCL vectors on both sides, and the attacks. */
#include "testutil.h"
#include "crypto/srp.h"
#include "crypto/util.h"

#include <ctype.h>
#include <gmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLEN 256 /* PiCL PAD length */

/* ---- helpers ---------------------------------------------------------------- */

/* A byte string owned by the test. */
typedef struct buf {
    uint8_t *p;
    size_t n;
} buf;

static buf unhex(const char *hex)
{
    ck_assert_msg(hex != NULL, "missing vector value");
    buf b;
    b.p = tu_unhex(hex, &b.n);
    return b;
}

/* Decimal text to big-endian bytes (no padding). */
static buf undec(const char *dec)
{
    mpz_t z;
    ck_assert_int_eq(mpz_init_set_str(z, dec, 10), 0);
    buf b;
    b.p = calloc(1, mpz_sizeinbase(z, 256) + 1);
    mpz_export(b.p, &b.n, 1, 1, 1, 0, z);
    mpz_clear(z);
    return b;
}

/* A vector value: "(decimal) 123", "utf8 'text'" or hex. */
static buf value(const char *v)
{
    ck_assert_msg(v != NULL, "missing vector value");
    if (!strncmp(v, "(decimal)", 9))
        return undec(v + 9 + strspn(v + 9, " "));
    if (!strncmp(v, "utf8 '", 6)) {
        const char *s = v + 6, *e = strrchr(s, '\'');
        ck_assert_ptr_nonnull(e);
        buf b = {malloc((size_t)(e - s) + 1), (size_t)(e - s)};
        memcpy(b.p, s, b.n);
        b.p[b.n] = 0;
        return b;
    }
    return unhex(v);
}

/* ck_assert that got == want as unsigned integers (leading zeros ignored):
 * for files that print integers without padding. */
#define assert_int(got, n, want, what) assert_int_((got), (n), (want), (what), __LINE__)
static void assert_int_(const uint8_t *got, size_t n, buf want, const char *what, int line)
{
    const uint8_t *w = want.p;
    size_t wn = want.n;
    while (n && !*got)
        got++, n--;
    while (wn && !*w)
        w++, wn--;
    ck_assert_msg(n == wn && memcmp(got, w, n) == 0, "line %d: %s: got %s", line, what, tu_hex(got, n));
}

/* ck_assert that got[0..n) == want byte for byte (padding included). */
#define assert_bytes(got_, len_, want_, what_)                                                               \
    ck_assert_msg((len_) == (want_).n && memcmp((got_), (want_).p, (len_)) == 0, "%s: got %s", (what_),      \
                  tu_hex((got_), (len_)))

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static void group_from(picl_srp_group *g, buf N, buf gen, picl_srp_hash h)
{
    g->name = "test";
    g->N = N.p;
    g->len = N.n;
    g->g = gen.p;
    g->glen = gen.n;
    g->hash = h;
}

/*
 * Runs one complete login with fixed a and b and checks every value the
 * case provides; hex values are compared as integers (int_only) or byte for
 * byte with padding.  Keys: I P s k x v a b A B u S [K M1].
 */
struct vec {
    buf I, P, s, a, b, k, x, v, A, B, u, S, K, M1;
    int has_K;
};

static void run_vector(const picl_srp_group *grp, const struct vec *t, int int_only, const char *name)
{
    size_t len = grp->len, hl = picl__srp_hash_bytes(grp);
    uint8_t k[32], x[32], K[32], Ks[32], M1[32], u[32];
    uint8_t *v = malloc(len), *A = malloc(len), *B = malloc(len), *S = malloc(len);
    char what[128];
#define CMP(G_, L_, W_, LABEL_)                                                                              \
    do {                                                                                                     \
        snprintf(what, sizeof what, "%s %s", name, LABEL_);                                                  \
        if (int_only)                                                                                        \
            assert_int((G_), (L_), (W_), what);                                                              \
        else                                                                                                 \
            assert_bytes((G_), (L_), (W_), what);                                                            \
    } while (0)

    ck_assert_int_eq(picl__srp_k(grp, k, hl), PICL_OK);
    if (t->k.p)
        assert_int(k, hl, t->k, "k"); /* k is printed in decimal or unpadded everywhere */
    ck_assert_int_eq(picl__srp_x(grp, t->I.p, t->I.n, t->P.p, t->P.n, t->s.p, t->s.n, x, hl), PICL_OK);
    CMP(x, hl, t->x, "x");
    ck_assert_int_eq(picl__srp_verifier(grp, t->I.p, t->I.n, t->P.p, t->P.n, t->s.p, t->s.n, v, len),
                     PICL_OK);
    CMP(v, len, t->v, "v");

    /* server: B from v and b */
    picl_srp_server *srv;
    ck_assert_int_eq(picl__srp_server_new_with_b(grp, v, len, t->b.p, t->b.n, &srv), PICL_OK);
    ck_assert_int_eq(picl__srp_server_B(srv, B, len), PICL_OK);
    CMP(B, len, t->B, "B");

    /* client: A from a, then B -> u, S, K, M1 */
    picl_srp_client *cl;
    ck_assert_int_eq(picl__srp_client_new_with_a(grp, t->a.p, t->a.n, &cl), PICL_OK);
    ck_assert_int_eq(picl__srp_client_A(cl, A, len), PICL_OK);
    CMP(A, len, t->A, "A");
    ck_assert_int_eq(
        picl__srp_client_process(cl, t->I.p, t->I.n, t->P.p, t->P.n, t->s.p, t->s.n, B, len, M1, hl),
        PICL_OK);
    ck_assert_int_eq(picl__srp_client_export(cl, PICL_SRP_U, u, hl), PICL_OK);
    if (t->u.p)
        CMP(u, hl, t->u, "client u");
    ck_assert_int_eq(picl__srp_client_export(cl, PICL_SRP_S, S, len), PICL_OK);
    CMP(S, len, t->S, "client S");
    ck_assert_int_eq(picl__srp_client_key(cl, K, hl), PICL_OK);
    if (t->has_K) {
        CMP(K, hl, t->K, "client K");
        CMP(M1, hl, t->M1, "client M1");
    }

    /* server: A and M1 -> S, K */
    ck_assert_int_eq(picl__srp_server_verify(srv, A, len, M1, hl, Ks, hl), PICL_OK);
    ck_assert_mem_eq(Ks, K, hl);
    memset(u, 0, sizeof u);
    ck_assert_int_eq(picl__srp_server_export(srv, PICL_SRP_U, u, hl), PICL_OK);
    if (t->u.p)
        CMP(u, hl, t->u, "server u");
    memset(S, 0, len);
    ck_assert_int_eq(picl__srp_server_export(srv, PICL_SRP_S, S, len), PICL_OK);
    CMP(S, len, t->S, "server S");
    if (t->has_K) {
        CMP(Ks, hl, t->K, "server K");
        uint8_t m[32];
        ck_assert_int_eq(picl__srp_server_export(srv, PICL_SRP_M1, m, hl), PICL_OK);
        CMP(m, hl, t->M1, "server M1");
    }

    /* the keyserver's /auth/finish path: the server restored from b and the
     * B it sent (no g^b again) gives the same u, S, K and M1 */
    picl_srp_server *rs = NULL;
    ck_assert_int_eq(picl__srp_server_restore(grp, v, len, t->b.p, t->b.n, B, len, &rs), PICL_OK);
    uint8_t B2[PICL_SRP_MAX_BYTES], Kr[32], x2[PICL_SRP_MAX_BYTES], x1[PICL_SRP_MAX_BYTES];
    ck_assert_int_eq(picl__srp_server_B(rs, B2, len), PICL_OK);
    ck_assert_mem_eq(B2, B, len);
    ck_assert_int_eq(picl__srp_server_verify(rs, A, len, M1, hl, Kr, hl), PICL_OK);
    ck_assert_mem_eq(Kr, Ks, hl);
    static const picl_srp_value same[] = {PICL_SRP_A, PICL_SRP_U, PICL_SRP_S, PICL_SRP_K, PICL_SRP_M1};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        size_t n = same[i] == PICL_SRP_A || same[i] == PICL_SRP_S ? len : hl;
        ck_assert_int_eq(picl__srp_server_export(srv, same[i], x1, n), PICL_OK);
        ck_assert_int_eq(picl__srp_server_export(rs, same[i], x2, n), PICL_OK);
        ck_assert_msg(memcmp(x1, x2, n) == 0, "%s: restored value %d differs", name, (int)same[i]);
    }
    /* spent like the original */
    ck_assert_int_eq(picl__srp_server_verify(rs, A, len, M1, hl, Kr, hl), PICL_ERROR_STATE);
    ck_assert(all_zero(Kr, hl));
    picl__srp_server_free(rs);
#undef CMP
    picl__srp_client_free(cl);
    picl__srp_server_free(srv);
    free(v);
    free(A);
    free(B);
    free(S);
}

static void vec_free(struct vec *t)
{
    buf *all[] = {&t->I, &t->P, &t->s, &t->a, &t->b, &t->k, &t->x,
                  &t->v, &t->A, &t->B, &t->u, &t->S, &t->K, &t->M1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]->p);
    memset(t, 0, sizeof *t);
}

static buf ascii(const char *s)
{
    ck_assert_ptr_nonnull(s);
    buf b = {(uint8_t *)strdup(s), strlen(s)};
    return b;
}

/* Loads the RFC/srptools line shape: I and P ASCII, everything else hex. */
static void vec_from_case(struct vec *t, const tu_case *c, int has_K)
{
    memset(t, 0, sizeof *t);
    t->I = ascii(tu_get(c, "I"));
    t->P = ascii(tu_get(c, "P"));
    t->s = unhex(tu_get(c, "s"));
    t->a = unhex(tu_get(c, "a"));
    t->b = unhex(tu_get(c, "b"));
    t->k = unhex(tu_get(c, "k"));
    t->x = unhex(tu_get(c, "x"));
    t->v = unhex(tu_get(c, "v"));
    t->A = unhex(tu_get(c, "A"));
    t->B = unhex(tu_get(c, "B"));
    t->u = unhex(tu_get(c, "u"));
    t->S = unhex(tu_get(c, "S"));
    t->has_K = has_K;
}

/* ---- vectors ------------------------------------------------------------------ */

START_TEST(test_builtin_groups_match_rfc5054)
{
    tu_vecfile *f = tu_vec_load("srp_rfc5054.txt");
    int seen = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tu_case *c = &f->cases[i];
        const picl_srp_group *g = NULL;
        if (strstr(c->name, "2048-bit"))
            g = picl__srp_group_picl();
        else if (strstr(c->name, "1024-bit") && tu_get(c, "N"))
            g = picl__srp_group_rfc5054_1024_sha1();
        if (!g)
            continue;
        ck_assert_int_eq(picl__srp_group_check(g), PICL_OK);
        buf N = unhex(tu_get(c, "N")), gen = unhex(tu_get(c, "g"));
        assert_bytes(g->N, g->len, N, "N");
        assert_int(g->g, g->glen, gen, "g");
        free(N.p);
        free(gen.p);
        seen++;
    }
    ck_assert_int_eq(seen, 2);
    ck_assert_uint_eq(picl__srp_group_picl()->len, PLEN);
    ck_assert_int_eq(picl__srp_group_picl()->hash, PICL_SRP_SHA256);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_rfc5054_appendix_b)
{
    tu_vecfile *f = tu_vec_load("srp_rfc5054.txt");
    int n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tu_case *c = &f->cases[i];
        if (!tu_get(c, "S"))
            continue;
        ck_assert_str_eq(tu_get(c, "H"), "sha1");
        struct vec t;
        vec_from_case(&t, c, 0);
        run_vector(picl__srp_group_rfc5054_1024_sha1(), &t, 1, c->name);
        vec_free(&t);
        n++;
    }
    ck_assert_int_eq(n, 1);
    tu_vec_free(f);
}
END_TEST

START_TEST(test_srptools_sha256)
{
    tu_vecfile *f = tu_vec_load("srp_sha256_srptools.txt");
    int n = 0, saw2048 = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tu_case *c = &f->cases[i];
        if (!tu_get(c, "S"))
            continue;
        ck_assert_str_eq(tu_get(c, "H"), "sha256");
        buf N = unhex(tu_get(c, "N")), gen = unhex(tu_get(c, "g"));
        picl_srp_group g;
        group_from(&g, N, gen, PICL_SRP_SHA256);
        /* K, M1, M2 use the Stanford convention there: not ours, not checked */
        struct vec t;
        vec_from_case(&t, c, 0);
        run_vector(&g, &t, 1, c->name);
        if (!strcmp(tu_get(c, "size"), "2048")) {
            /* the same vector through the built-in PiCL group */
            run_vector(picl__srp_group_picl(), &t, 1, c->name);
            saw2048 = 1;
        }
        vec_free(&t);
        free(N.p);
        free(gen.p);
        n++;
    }
    ck_assert_int_eq(n, 3);
    ck_assert(saw2048);
    tu_vec_free(f);
}
END_TEST

/* picl_srp_era.txt section A: one set, keys as printed by picl-crypto.py. */
static void era_vec(struct vec *t)
{
    tu_vecfile *f = tu_vec_load("picl_srp_era.txt");
    memset(t, 0, sizeof *t);
    t->I = unhex(tu_find(f, "email"));
    t->P = unhex(tu_find(f, "srpPW"));
    t->s = unhex(tu_find(f, "srpSalt (normally random)"));
    t->a = unhex(tu_find(f, "private a (hex)"));
    t->b = unhex(tu_find(f, "private b (hex)"));
    t->k = undec(tu_find(f, "k (base 10)"));
    t->x = unhex(tu_find(f, "internal x (hex)"));
    t->v = unhex(tu_find(f, "srpVerifier"));
    t->A = unhex(tu_find(f, "transmitted srpA"));
    t->B = unhex(tu_find(f, "transmitted srpB"));
    t->u = unhex(tu_find(f, "u"));
    t->S = unhex(tu_find(f, "S"));
    t->K = unhex(tu_find(f, "srpK"));
    t->M1 = unhex(tu_find(f, "M1"));
    t->has_K = 1;
    /* the decimal forms must agree with the hex ones */
    buf xd = undec(tu_find(f, "internal x (base 10)"));
    buf vd = undec(tu_find(f, "v (verifier as number) (base 10)"));
    buf ad = undec(tu_find(f, "private a (normally random) (base 10)"));
    buf bd = undec(tu_find(f, "private b (normally random) (base 10)"));
    assert_int(t->x.p, t->x.n, xd, "x decimal");
    assert_int(t->v.p, t->v.n, vd, "v decimal");
    assert_int(t->a.p, t->a.n, ad, "a decimal");
    assert_int(t->b.p, t->b.n, bd, "b decimal");
    free(xd.p);
    free(vd.p);
    free(ad.p);
    free(bd.p);
    tu_vec_free(f);
}

START_TEST(test_picl_era_section_a)
{
    struct vec t;
    era_vec(&t);
    /* the inputs really have the leading zero bytes the vector is about */
    ck_assert_uint_eq(t.P.n, 32);
    ck_assert_uint_eq(t.P.p[0], 0);
    ck_assert_uint_eq(t.v.n, PLEN);
    ck_assert_uint_eq(t.v.p[0], 0);
    ck_assert_uint_eq(t.A.p[0], 0);
    ck_assert_uint_eq(t.B.p[0], 0);
    ck_assert_uint_eq(t.S.p[0], 0);
    run_vector(picl__srp_group_picl(), &t, 0, "era section A");
    vec_free(&t);
}
END_TEST

/* picl_srp_edge_cases.txt: "--- set N" blocks of "inputs|expected NAME = VALUE". */
static int edge_sets(struct vec *sets, int max)
{
    FILE *fp = fopen(tu_vector_path("picl_srp_edge_cases.txt"), "r");
    ck_assert_ptr_nonnull(fp);
    char *line = NULL;
    size_t cap = 0;
    int n = -1;
    while (getline(&line, &cap, fp) >= 0) {
        if (!strncmp(line, "--- set ", 8)) {
            n++;
            ck_assert_int_lt(n, max);
            memset(&sets[n], 0, sizeof sets[n]);
            sets[n].has_K = 1;
            continue;
        }
        if (!strncmp(line, "3. ", 3)) /* section 3: obsolete drafts */
            break;
        if (n < 0 || (strncmp(line, "inputs ", 7) && strncmp(line, "expected ", 9)))
            continue;
        char *p = line + strcspn(line, " ");
        p += strspn(p, " ");
        char name[16];
        size_t nl = strcspn(p, " =");
        ck_assert_uint_lt(nl, sizeof name);
        memcpy(name, p, nl);
        name[nl] = 0;
        char *eq = strchr(p, '=');
        ck_assert_ptr_nonnull(eq);
        char *val = eq + 1 + strspn(eq + 1, " ");
        val[strcspn(val, "\r\n")] = 0;
        struct {
            const char *key;
            buf *dst;
        } map[] = {{"I", &sets[n].I}, {"P", &sets[n].P},  {"salt", &sets[n].s}, {"a", &sets[n].a},
                   {"b", &sets[n].b}, {"k", &sets[n].k},  {"x", &sets[n].x},    {"v", &sets[n].v},
                   {"B", &sets[n].B}, {"A", &sets[n].A},  {"u", &sets[n].u},    {"S", &sets[n].S},
                   {"K", &sets[n].K}, {"M1", &sets[n].M1}};
        int found = 0;
        for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
            if (!strcmp(name, map[i].key)) {
                ck_assert_msg(map[i].dst->p == NULL, "set %d: %s twice", n + 1, name);
                *map[i].dst = value(val);
                found = 1;
            }
        ck_assert_msg(found, "unknown key %s", name);
    }
    free(line);
    fclose(fp);
    for (int i = 0; i <= n; i++) {
        buf *req[] = {&sets[i].I, &sets[i].P, &sets[i].s, &sets[i].a, &sets[i].b, &sets[i].k, &sets[i].x,
                      &sets[i].v, &sets[i].B, &sets[i].A, &sets[i].u, &sets[i].S, &sets[i].K, &sets[i].M1};
        for (size_t j = 0; j < sizeof req / sizeof req[0]; j++)
            ck_assert_msg(req[j]->p != NULL, "set %d incomplete (%zu)", i + 1, j);
    }
    return n + 1;
}

START_TEST(test_picl_edge_cases)
{
    struct vec sets[4];
    ck_assert_int_eq(edge_sets(sets, 4), 4);
    /* each set's advertised leading zero really is there */
    ck_assert_uint_eq(sets[0].v.p[0], 0);
    ck_assert_uint_eq(sets[1].x.p[0], 0);
    ck_assert_uint_eq(sets[1].u.p[0], 0);
    ck_assert_uint_eq(sets[2].K.p[0], 0);
    ck_assert_uint_eq(sets[3].M1.p[0], 0);
    ck_assert_str_eq((char *)sets[0].I.p, "andr\xc3\xa9@example.org");
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "set %d", i + 1);
        run_vector(picl__srp_group_picl(), &sets[i], 0, name);
        vec_free(&sets[i]);
    }
}
END_TEST

/* The value of the first "key = value" line after the line that starts with
 * marker (leading spaces ignored); the value stops at the first space. */
static char *section_get(const char *file, const char *marker, const char *key)
{
    FILE *fp = fopen(tu_vector_path(file), "r");
    ck_assert_ptr_nonnull(fp);
    char *line = NULL, *res = NULL;
    size_t cap = 0;
    int in = 0;
    while (!res && getline(&line, &cap, fp) >= 0) {
        char *p = line + strspn(line, " ");
        if (!in) {
            in = !strncmp(p, marker, strlen(marker));
            continue;
        }
        char *eq = strchr(p, '=');
        if (!eq)
            continue;
        size_t kl = (size_t)(eq - p);
        while (kl && p[kl - 1] == ' ')
            kl--;
        if (kl != strlen(key) || strncmp(p, key, kl))
            continue;
        char *v = eq + 1 + strspn(eq + 1, " ");
        v[strcspn(v, " \r\n")] = 0;
        res = strdup(v);
    }
    free(line);
    fclose(fp);
    ck_assert_msg(res != NULL, "%s: no %s after %s", file, key, marker);
    return res;
}

/* "name=00f3..0020" in line: the shorthand for 00f3 00 .. 00 0020, `len` bytes. */
static buf shorthand(const char *line, const char *name, size_t len)
{
    const char *p = strstr(line, name);
    ck_assert_ptr_nonnull(p);
    p += strlen(name);
    const char *dots = strstr(p, "..");
    ck_assert_ptr_nonnull(dots);
    char pre[16] = {0}, suf[16] = {0};
    size_t pl = (size_t)(dots - p), sl = strspn(dots + 2, "0123456789abcdef");
    ck_assert(pl < sizeof pre && sl < sizeof suf);
    memcpy(pre, p, pl);
    memcpy(suf, dots + 2, sl);
    buf hp = unhex(pre), hs = unhex(suf);
    buf b = {calloc(1, len), len};
    memcpy(b.p, hp.p, hp.n);
    memcpy(b.p + len - hs.n, hs.p, hs.n);
    free(hp.p);
    free(hs.p);
    return b;
}

START_TEST(test_picl_obsolete_draft)
{
    /* The 2013-07-02 "fakeStretch" draft vector (edge cases section 3, era
     * file C1): obsolete password chain, same SRP -- one more independent set. */
    const char *E = "picl_srp_edge_cases.txt", *R = "picl_srp_era.txt";
    struct vec t;
    memset(&t, 0, sizeof t);
    char *v;
    FILE *fp = fopen(tu_vector_path(R), "r");
    ck_assert_ptr_nonnull(fp);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, fp) >= 0 && !strstr(line, "SRP with srpSalt="))
        ;
    ck_assert_ptr_nonnull(strstr(line, "SRP with srpSalt="));
    t.a = shorthand(line, " a=", PLEN);
    t.b = shorthand(line, " b=", PLEN);
    free(line);
    fclose(fp);
#define GET(field, file, marker, key) (v = section_get(file, marker, key), t.field = unhex(v), free(v))
    GET(I, R, "INPUTS:", "email");
    GET(P, R, "C1.", "srpPW");
    GET(x, R, "C1.", "x");
    GET(s, E, "3. EARLIER", "srpSalt");
    GET(v, E, "3. EARLIER", "srpVerifier");
    GET(B, E, "3. EARLIER", "B");
    GET(A, E, "3. EARLIER", "A");
    GET(S, E, "3. EARLIER", "S");
    GET(M1, E, "3. EARLIER", "M1");
    GET(K, E, "3. EARLIER", "srpK");
#undef GET
    t.has_K = 1;
    /* the two files agree on the draft's M1 and K */
    char *m1 = section_get(R, "C1.", "M1"), *k = section_get(R, "C1.", "K");
    buf bm1 = unhex(m1), bk = unhex(k);
    assert_bytes(t.M1.p, t.M1.n, bm1, "era C1 M1");
    assert_bytes(t.K.p, t.K.n, bk, "era C1 K");
    free(m1);
    free(k);
    free(bm1.p);
    free(bk.p);
    ck_assert_uint_eq(t.P.p[0], 0x5b);
    run_vector(picl__srp_group_picl(), &t, 0, "2013-07-02 draft");
    vec_free(&t);
}
END_TEST

/* ---- attacks and misuse (PiCL group, era vector) --------------------------------- */

struct fixture {
    struct vec t;
    picl_srp_server *srv;
    picl_srp_client *cl;
    uint8_t A[PLEN], B[PLEN], M1[32];
};

static void fixture_open(struct fixture *fx)
{
    const picl_srp_group *g = picl__srp_group_picl();
    era_vec(&fx->t);
    ck_assert_int_eq(picl__srp_server_new_with_b(g, fx->t.v.p, PLEN, fx->t.b.p, fx->t.b.n, &fx->srv),
                     PICL_OK);
    ck_assert_int_eq(picl__srp_server_B(fx->srv, fx->B, PLEN), PICL_OK);
    ck_assert_int_eq(picl__srp_client_new_with_a(g, fx->t.a.p, fx->t.a.n, &fx->cl), PICL_OK);
    ck_assert_int_eq(picl__srp_client_A(fx->cl, fx->A, PLEN), PICL_OK);
}

static void fixture_close(struct fixture *fx)
{
    picl__srp_client_free(fx->cl);
    picl__srp_server_free(fx->srv);
    vec_free(&fx->t);
}

static picl_status client_with_B(struct fixture *fx, const uint8_t *B, size_t Blen)
{
    memset(fx->M1, 0xaa, sizeof fx->M1);
    picl_status st = picl__srp_client_process(fx->cl, fx->t.I.p, fx->t.I.n, fx->t.P.p, fx->t.P.n, fx->t.s.p,
                                              fx->t.s.n, B, Blen, fx->M1, 32);
    if (st != PICL_OK) {
        uint8_t K[32];
        ck_assert(all_zero(fx->M1, 32)); /* nothing half-computed leaks out */
        memset(K, 0xaa, sizeof K);
        ck_assert_int_eq(picl__srp_client_key(fx->cl, K, 32), PICL_ERROR_STATE);
        ck_assert(all_zero(K, 32));
    }
    return st;
}

static picl_status server_with_A(struct fixture *fx, const uint8_t *A, size_t Alen, const uint8_t *M1)
{
    uint8_t K[32], S[PLEN];
    memset(K, 0xaa, sizeof K);
    picl_status st = picl__srp_server_verify(fx->srv, A, Alen, M1, 32, K, 32);
    if (st != PICL_OK) {
        ck_assert(all_zero(K, 32)); /* no K released */
        ck_assert_int_eq(picl__srp_server_export(fx->srv, PICL_SRP_K, K, 32), PICL_ERROR_STATE);
        ck_assert(all_zero(K, 32));
        ck_assert_int_eq(picl__srp_server_export(fx->srv, PICL_SRP_S, S, PLEN), PICL_ERROR_STATE);
    } else {
        ck_assert_mem_eq(K, fx->t.K.p, 32);
    }
    return st;
}

/* N, k*N and their paddings, built from the group. */
static buf multiple_of_N(unsigned mult, size_t pad_to)
{
    const picl_srp_group *g = picl__srp_group_picl();
    mpz_t z;
    mpz_init(z);
    mpz_import(z, g->len, 1, 1, 1, 0, g->N);
    mpz_mul_ui(z, z, mult);
    size_t n = (mpz_sizeinbase(z, 2) + 7) / 8;
    if (mult == 0)
        n = 0;
    if (pad_to < n)
        pad_to = n;
    buf b = {calloc(1, pad_to + 1), pad_to};
    size_t w = 0;
    if (mult)
        mpz_export(b.p + (pad_to - n), &w, 1, 1, 1, 0, z);
    mpz_clear(z);
    return b;
}

START_TEST(test_server_rejects_bad_A)
{
    struct fixture fx;
    fixture_open(&fx);
    ck_assert_int_eq(client_with_B(&fx, fx.B, PLEN), PICL_OK);
    struct {
        unsigned mult;
        size_t pad;
        const char *what;
    } bad[] = {
        {0, PLEN, "A = 0"},           {1, PLEN, "A = N"},
        {2, 0, "A = 2N (257 bytes)"}, {1, PLEN + 1, "A = N padded to 257 bytes"},
        {3, PLEN + 1, "A = 3N"},      {0, PLEN + 1, "A = 0 in 257 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        buf A = multiple_of_N(bad[i].mult, bad[i].pad);
        ck_assert_msg(server_with_A(&fx, A.p, A.n, fx.M1) == PICL_ERROR_SRP_BAD_A, "%s", bad[i].what);
        free(A.p);
    }
    /* the right number with the wrong length: A begins with 00 in this vector */
    ck_assert_uint_eq(fx.A[0], 0);
    ck_assert_int_eq(server_with_A(&fx, fx.A + 1, PLEN - 1, fx.M1), PICL_ERROR_SRP_BAD_A);
    uint8_t A257[PLEN + 1] = {0};
    memcpy(A257 + 1, fx.A, PLEN);
    ck_assert_int_eq(server_with_A(&fx, A257, PLEN + 1, fx.M1), PICL_ERROR_SRP_BAD_A);
    /* N + 1 (= 1 mod N but out of range), all-ones, NULL */
    buf N1 = multiple_of_N(1, PLEN);
    N1.p[PLEN - 1] += 1;
    ck_assert_int_eq(server_with_A(&fx, N1.p, PLEN, fx.M1), PICL_ERROR_SRP_BAD_A);
    memset(N1.p, 0xff, PLEN);
    ck_assert_int_eq(server_with_A(&fx, N1.p, PLEN, fx.M1), PICL_ERROR_SRP_BAD_A);
    free(N1.p);
    ck_assert_int_eq(server_with_A(&fx, NULL, PLEN, fx.M1), PICL_ERROR_SRP_BAD_A);
    /* nothing changed: the honest A still logs in with the vector's K */
    ck_assert_int_eq(server_with_A(&fx, fx.A, PLEN, fx.M1), PICL_OK);
    fixture_close(&fx);
}
END_TEST

START_TEST(test_client_rejects_bad_B)
{
    struct fixture fx;
    fixture_open(&fx);
    struct {
        unsigned mult;
        size_t pad;
        const char *what;
    } bad[] = {
        {0, PLEN, "B = 0"},
        {1, PLEN, "B = N"},
        {2, 0, "B = 2N (257 bytes)"},
        {1, PLEN + 1, "B = N padded to 257 bytes"},
        {0, PLEN - 1, "B = 0 in 255 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        buf B = multiple_of_N(bad[i].mult, bad[i].pad);
        ck_assert_msg(client_with_B(&fx, B.p, B.n) == PICL_ERROR_SRP_BAD_B, "%s", bad[i].what);
        free(B.p);
    }
    ck_assert_uint_eq(fx.B[0], 0);
    ck_assert_int_eq(client_with_B(&fx, fx.B + 1, PLEN - 1), PICL_ERROR_SRP_BAD_B);
    uint8_t B257[PLEN + 1] = {0};
    memcpy(B257 + 1, fx.B, PLEN);
    ck_assert_int_eq(client_with_B(&fx, B257, PLEN + 1), PICL_ERROR_SRP_BAD_B);
    ck_assert_int_eq(client_with_B(&fx, NULL, PLEN), PICL_ERROR_SRP_BAD_B);
    /* nothing changed: the real B still gives the vector's M1 */
    ck_assert_int_eq(client_with_B(&fx, fx.B, PLEN), PICL_OK);
    ck_assert_mem_eq(fx.M1, fx.t.M1.p, 32);
    fixture_close(&fx);
}
END_TEST

START_TEST(test_client_rejects_u_zero)
{
    struct fixture fx;
    fixture_open(&fx);
    uint8_t zero[32] = {0}, M1[32];
    memset(M1, 0xaa, sizeof M1);
    ck_assert_int_eq(picl__srp_client_process_forced_u(fx.cl, fx.t.I.p, fx.t.I.n, fx.t.P.p, fx.t.P.n,
                                                       fx.t.s.p, fx.t.s.n, fx.B, PLEN, zero, M1, 32),
                     PICL_ERROR_SRP_BAD_U);
    ck_assert(all_zero(M1, 32));
    ck_assert_int_eq(picl__srp_client_key(fx.cl, M1, 32), PICL_ERROR_STATE);
    /* the hook itself computes correctly when u is the real one */
    ck_assert_int_eq(picl__srp_client_process_forced_u(fx.cl, fx.t.I.p, fx.t.I.n, fx.t.P.p, fx.t.P.n,
                                                       fx.t.s.p, fx.t.s.n, fx.B, PLEN, fx.t.u.p, M1, 32),
                     PICL_OK);
    ck_assert_mem_eq(M1, fx.t.M1.p, 32);
    fixture_close(&fx);
}
END_TEST

START_TEST(test_server_rejects_wrong_proof)
{
    /* every single-bit flip of M1 at a few positions, each on a fresh server */
    const size_t bits[] = {0, 7, 8, 100, 255};
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) {
        struct fixture fx;
        fixture_open(&fx);
        ck_assert_int_eq(client_with_B(&fx, fx.B, PLEN), PICL_OK);
        uint8_t bad[32];
        memcpy(bad, fx.M1, 32);
        bad[bits[i] / 8] ^= (uint8_t)(1u << (bits[i] % 8));
        ck_assert_int_eq(server_with_A(&fx, fx.A, PLEN, bad), PICL_ERROR_SRP_PROOF);
        /* spent: even the right proof is refused now, and still no K */
        ck_assert_int_eq(server_with_A(&fx, fx.A, PLEN, fx.M1), PICL_ERROR_STATE);
        fixture_close(&fx);
    }
}
END_TEST

START_TEST(test_wrong_password)
{
    struct fixture fx;
    fixture_open(&fx);
    fx.t.P.p[31] ^= 1;
    ck_assert_int_eq(client_with_B(&fx, fx.B, PLEN), PICL_OK);
    ck_assert(memcmp(fx.M1, fx.t.M1.p, 32) != 0);
    ck_assert_int_eq(server_with_A(&fx, fx.A, PLEN, fx.M1), PICL_ERROR_SRP_PROOF);
    fixture_close(&fx);
    /* wrong email, same password: also refused */
    fixture_open(&fx);
    fx.t.I.p[0] ^= 0x20;
    ck_assert_int_eq(client_with_B(&fx, fx.B, PLEN), PICL_OK);
    ck_assert_int_eq(server_with_A(&fx, fx.A, PLEN, fx.M1), PICL_ERROR_SRP_PROOF);
    fixture_close(&fx);
}
END_TEST

START_TEST(test_random_round_trip)
{
    const picl_srp_group *g = picl__srp_group_picl();
    const uint8_t I[] = "user@example.com", P[32] = {1, 2, 3}, salt[32] = {9};
    uint8_t v[PLEN], A1[PLEN], A2[PLEN], B1[PLEN], B2[PLEN], M1[32], Kc[32], Ks[32];
    ck_assert_int_eq(picl__srp_verifier(g, I, sizeof I - 1, P, 32, salt, 32, v, PLEN), PICL_OK);
    for (int round = 0; round < 2; round++) {
        picl_srp_client *c1, *c2;
        picl_srp_server *s1, *s2;
        ck_assert_int_eq(picl__srp_client_new(g, &c1), PICL_OK);
        ck_assert_int_eq(picl__srp_client_new(g, &c2), PICL_OK);
        ck_assert_int_eq(picl__srp_server_new(g, v, PLEN, &s1), PICL_OK);
        ck_assert_int_eq(picl__srp_server_new(g, v, PLEN, &s2), PICL_OK);
        ck_assert_int_eq(picl__srp_client_A(c1, A1, PLEN), PICL_OK);
        ck_assert_int_eq(picl__srp_client_A(c2, A2, PLEN), PICL_OK);
        ck_assert_int_eq(picl__srp_server_B(s1, B1, PLEN), PICL_OK);
        ck_assert_int_eq(picl__srp_server_B(s2, B2, PLEN), PICL_OK);
        ck_assert(memcmp(A1, A2, PLEN) != 0); /* a is fresh each time */
        ck_assert(memcmp(B1, B2, PLEN) != 0); /* b too */
        ck_assert_int_eq(picl__srp_client_process(c1, I, sizeof I - 1, P, 32, salt, 32, B1, PLEN, M1, 32),
                         PICL_OK);
        ck_assert_int_eq(picl__srp_client_key(c1, Kc, 32), PICL_OK);
        ck_assert_int_eq(picl__srp_server_verify(s1, A1, PLEN, M1, 32, Ks, 32), PICL_OK);
        ck_assert_mem_eq(Kc, Ks, 32);
        /* a proof made for one server does not open another */
        ck_assert_int_eq(picl__srp_server_verify(s2, A1, PLEN, M1, 32, Ks, 32), PICL_ERROR_SRP_PROOF);
        ck_assert(all_zero(Ks, 32));
        picl__srp_client_free(c1);
        picl__srp_client_free(c2);
        picl__srp_server_free(s1);
        picl__srp_server_free(s2);
    }
}
END_TEST

START_TEST(test_misuse)
{
    const picl_srp_group *g = picl__srp_group_picl();
    struct fixture fx;
    fixture_open(&fx);
    uint8_t out[PLEN + 1], K[32];
    /* wrong output sizes */
    ck_assert_int_eq(picl__srp_client_A(fx.cl, out, PLEN - 1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_server_B(fx.srv, out, PLEN + 1), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_client_process(fx.cl, fx.t.I.p, fx.t.I.n, fx.t.P.p, fx.t.P.n, fx.t.s.p,
                                              fx.t.s.n, fx.B, PLEN, out, 31),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_server_verify(fx.srv, fx.A, PLEN, fx.t.M1.p, 31, K, 32),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_server_verify(fx.srv, fx.A, PLEN, fx.t.M1.p, 32, K, 33),
                     PICL_ERROR_INVALID_ARGUMENT);
    /* values before they exist */
    ck_assert_int_eq(picl__srp_client_export(fx.cl, PICL_SRP_S, out, PLEN), PICL_ERROR_STATE);
    ck_assert_int_eq(picl__srp_server_export(fx.srv, PICL_SRP_A, out, PLEN), PICL_ERROR_STATE);
    ck_assert_int_eq(picl__srp_client_export(fx.cl, (picl_srp_value)99, out, PLEN),
                     PICL_ERROR_INVALID_ARGUMENT);
    /* over-long inputs */
    static uint8_t big[PICL_SRP_MAX_INPUT + 1];
    ck_assert_int_eq(picl__srp_client_process(fx.cl, big, sizeof big, fx.t.P.p, fx.t.P.n, fx.t.s.p, fx.t.s.n,
                                              fx.B, PLEN, out, 32),
                     PICL_ERROR_TOO_LARGE);
    ck_assert_int_eq(picl__srp_verifier(g, big, 1, big, 1, big, sizeof big, out, PLEN), PICL_ERROR_TOO_LARGE);
    ck_assert_int_eq(picl__srp_verifier(g, NULL, 3, big, 1, big, 1, out, PLEN), PICL_ERROR_INVALID_ARGUMENT);
    /* one successful process per client */
    ck_assert_int_eq(client_with_B(&fx, fx.B, PLEN), PICL_OK);
    ck_assert_int_eq(picl__srp_client_process(fx.cl, fx.t.I.p, fx.t.I.n, fx.t.P.p, fx.t.P.n, fx.t.s.p,
                                              fx.t.s.n, fx.B, PLEN, out, 32),
                     PICL_ERROR_STATE);
    /* verifiers out of range: 0 and N */
    picl_srp_server *s = (picl_srp_server *)1;
    memset(out, 0, PLEN);
    ck_assert_int_eq(picl__srp_server_new(g, out, PLEN, &s), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(picl__srp_server_new(g, g->N, PLEN, &s), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_server_new(g, fx.t.v.p, PLEN - 1, &s), PICL_ERROR_INVALID_ARGUMENT);
    /* a and b lengths */
    picl_srp_client *c = (picl_srp_client *)1;
    ck_assert_int_eq(picl__srp_client_new_with_a(g, out, 0, &c), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(picl__srp_client_new_with_a(g, out, PLEN + 1, &c), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_server_new_with_b(g, fx.t.v.p, PLEN, NULL, 1, &s),
                     PICL_ERROR_INVALID_ARGUMENT);
    picl__srp_client_free(NULL);
    picl__srp_server_free(NULL);
    fixture_close(&fx);
}
END_TEST

/* picl__srp_server_restore: the old path's answers for a wrong proof and a
 * bad A, and its own checks of B and of the arguments. */
START_TEST(test_server_restore)
{
    struct fixture fx;
    fixture_open(&fx);
    const picl_srp_group *g = picl__srp_group_picl();
    uint8_t bad[PLEN], K[32], M1[32];
    const uint8_t *A = fx.A, *B = fx.B;
    picl_srp_server *s = NULL;

    /* a wrong proof: PROOF, K zeroed, then spent -- as the old path */
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN, fx.t.b.p, fx.t.b.n, B, PLEN, &s), PICL_OK);
    memcpy(M1, fx.t.M1.p, 32);
    M1[31] ^= 1;
    memset(K, 0xaa, sizeof K);
    ck_assert_int_eq(picl__srp_server_verify(s, A, PLEN, M1, 32, K, 32), PICL_ERROR_SRP_PROOF);
    ck_assert(all_zero(K, 32));
    ck_assert_int_eq(picl__srp_server_verify(s, A, PLEN, fx.t.M1.p, 32, K, 32), PICL_ERROR_STATE);
    picl__srp_server_free(s);

    /* a bad A: BAD_A and the context unchanged (the right proof then passes) */
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN, fx.t.b.p, fx.t.b.n, B, PLEN, &s), PICL_OK);
    memset(bad, 0, PLEN);
    ck_assert_int_eq(picl__srp_server_verify(s, bad, PLEN, fx.t.M1.p, 32, K, 32), PICL_ERROR_SRP_BAD_A);
    ck_assert_int_eq(picl__srp_server_verify(s, A, PLEN, fx.t.M1.p, 32, K, 32), PICL_OK);
    ck_assert_mem_eq(K, fx.t.K.p, 32);
    picl__srp_server_free(s);

    /* B: exactly PLEN bytes, 0 < B < N */
    s = (picl_srp_server *)1;
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN, fx.t.b.p, fx.t.b.n, B, PLEN - 1, &s),
                     PICL_ERROR_SRP_BAD_B);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN, fx.t.b.p, fx.t.b.n, bad, PLEN, &s),
                     PICL_ERROR_SRP_BAD_B);
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN, fx.t.b.p, fx.t.b.n, g->N, PLEN, &s),
                     PICL_ERROR_SRP_BAD_B);
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN, fx.t.b.p, fx.t.b.n, NULL, PLEN, &s),
                     PICL_ERROR_SRP_BAD_B);
    ck_assert_ptr_null(s);
    /* v and b as for new_with_b */
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN, NULL, 1, B, PLEN, &s),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN, fx.t.b.p, 0, B, PLEN, &s),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN - 1, fx.t.b.p, fx.t.b.n, B, PLEN, &s),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_server_restore(g, bad, PLEN, fx.t.b.p, fx.t.b.n, B, PLEN, &s),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_server_restore(NULL, fx.t.v.p, PLEN, fx.t.b.p, fx.t.b.n, B, PLEN, &s),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(picl__srp_server_restore(g, fx.t.v.p, PLEN, fx.t.b.p, fx.t.b.n, B, PLEN, NULL),
                     PICL_ERROR_INVALID_ARGUMENT);
    fixture_close(&fx);
}
END_TEST

START_TEST(test_bad_groups)
{
    const picl_srp_group *p = picl__srp_group_picl();
    uint8_t N[PLEN], g1 = 1;
    memcpy(N, p->N, PLEN);
    picl_srp_group g = *p;
    ck_assert_int_eq(picl__srp_group_check(&g), PICL_OK);
    g.hash = (picl_srp_hash)7;
    ck_assert_int_eq(picl__srp_group_check(&g), PICL_ERROR_INVALID_ARGUMENT);
    g = *p;
    N[PLEN - 1] ^= 1; /* even N */
    g.N = N;
    ck_assert_int_eq(picl__srp_group_check(&g), PICL_ERROR_INVALID_ARGUMENT);
    N[PLEN - 1] ^= 1;
    N[0] = 0; /* leading zero: len is not N's length */
    ck_assert_int_eq(picl__srp_group_check(&g), PICL_ERROR_INVALID_ARGUMENT);
    g = *p;
    g.g = &g1; /* g = 1 */
    ck_assert_int_eq(picl__srp_group_check(&g), PICL_ERROR_INVALID_ARGUMENT);
    g = *p;
    g.g = p->N; /* g = N */
    g.glen = PLEN;
    ck_assert_int_eq(picl__srp_group_check(&g), PICL_ERROR_INVALID_ARGUMENT);
    g = *p;
    g.len = 32; /* too small */
    ck_assert_int_eq(picl__srp_group_check(&g), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__srp_group_check(NULL), PICL_ERROR_INVALID_ARGUMENT);
    picl_srp_client *c;
    ck_assert_int_eq(picl__srp_client_new(&g, &c), PICL_ERROR_INVALID_ARGUMENT);
    uint8_t k[32];
    ck_assert_int_eq(picl__srp_k(p, k, 20), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_uint_eq(picl__srp_hash_bytes(picl__srp_group_rfc5054_1024_sha1()), 20);
}
END_TEST

/* Counts GMP's allocations: srp.c must make none, so that no secret limb can
 * live in memory that GMP frees without wiping. */
static int gmp_allocs;
static void *(*gmp_alloc0)(size_t);
static void *(*gmp_realloc0)(void *, size_t, size_t);
static void (*gmp_free0)(void *, size_t);
static void *count_alloc(size_t n)
{
    gmp_allocs++;
    return gmp_alloc0(n);
}
static void *count_realloc(void *p, size_t o, size_t n)
{
    gmp_allocs++;
    return gmp_realloc0(p, o, n);
}

START_TEST(test_gmp_allocates_nothing)
{
    struct fixture fx;
    fixture_open(&fx); /* parses decimals with mpz: before counting */
    picl__srp_client_free(fx.cl);
    picl__srp_server_free(fx.srv);
    mp_get_memory_functions(&gmp_alloc0, &gmp_realloc0, &gmp_free0);
    mp_set_memory_functions(count_alloc, count_realloc, gmp_free0);
    gmp_allocs = 0;
    const picl_srp_group *g = picl__srp_group_picl();
    uint8_t v[PLEN], K[32];
    ck_assert_int_eq(
        picl__srp_verifier(g, fx.t.I.p, fx.t.I.n, fx.t.P.p, fx.t.P.n, fx.t.s.p, fx.t.s.n, v, PLEN), PICL_OK);
    ck_assert_int_eq(picl__srp_server_new_with_b(g, v, PLEN, fx.t.b.p, fx.t.b.n, &fx.srv), PICL_OK);
    ck_assert_int_eq(picl__srp_client_new(g, &fx.cl), PICL_OK);
    ck_assert_int_eq(picl__srp_client_A(fx.cl, fx.A, PLEN), PICL_OK);
    ck_assert_int_eq(client_with_B(&fx, fx.B, PLEN), PICL_OK);
    ck_assert_int_eq(picl__srp_server_verify(fx.srv, fx.A, PLEN, fx.M1, 32, K, 32), PICL_OK);
    int n = gmp_allocs;
    mp_set_memory_functions(gmp_alloc0, gmp_realloc0, gmp_free0);
    ck_assert_int_eq(n, 0);
    fixture_close(&fx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("srp");
    TCase *tc = tcase_create("srp");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(tc, test_builtin_groups_match_rfc5054);
    tcase_add_test(tc, test_rfc5054_appendix_b);
    tcase_add_test(tc, test_srptools_sha256);
    tcase_add_test(tc, test_picl_era_section_a);
    tcase_add_test(tc, test_picl_edge_cases);
    tcase_add_test(tc, test_picl_obsolete_draft);
    tcase_add_test(tc, test_server_rejects_bad_A);
    tcase_add_test(tc, test_client_rejects_bad_B);
    tcase_add_test(tc, test_client_rejects_u_zero);
    tcase_add_test(tc, test_server_rejects_wrong_proof);
    tcase_add_test(tc, test_wrong_password);
    tcase_add_test(tc, test_random_round_trip);
    tcase_add_test(tc, test_misuse);
    tcase_add_test(tc, test_server_restore);
    tcase_add_test(tc, test_bad_groups);
    tcase_add_test(tc, test_gmp_allocates_nothing);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
