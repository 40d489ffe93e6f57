/* SPDX-License-Identifier: MPL-2.0 */
/* bench_stretch.c -- picl-bench stretch: one full PiCL password stretch
 * (PBKDF2 20000 + scrypt 64 MiB + PBKDF2 20000) against Python's hashlib
 * (OpenSSL) doing the same work in the same run; prints medians and ratio. */
#include "bench.h"
#include "crypto/nss.h"
#include "protocol/stretch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reference: the same three steps in hashlib, timed inside Python so the
 * interpreter's start-up is not counted; prints one time (s) per line. */
static const char *py_ref =
    "import hashlib,sys,time\n"
    "n=int(sys.argv[1]); e=b'andr\\xc3\\xa9@example.org'; pw=b'p\\xc3\\xa4ssw\\xc3\\xb6rd'\n"
    "kw=lambda s: b'identity.mozilla.com/picl/v1/'+s\n"
    "for i in range(n):\n"
    "  t=time.perf_counter()\n"
    "  k1=hashlib.pbkdf2_hmac('sha256',pw,kw(b'first-PBKDF:')+e,20000,32)\n"
    "  k2=hashlib.scrypt(k1,salt=kw(b'scrypt'),n=65536,r=8,p=1,maxmem=128*1024*1024,dklen=32)\n"
    "  s=hashlib.pbkdf2_hmac('sha256',k2+pw,kw(b'second-PBKDF:')+e,20000,32)\n"
    "  print(time.perf_counter()-t, s.hex(), flush=True)\n";

static int run_reference(int n, double *out, char *hex_out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "python3 -c \"$PICL_BENCH_PY\" %d", n);
    setenv("PICL_BENCH_PY", py_ref, 1);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int got = 0;
    char hex[65];
    while (got < n && fscanf(p, "%lf %64s", &out[got], hex) == 2)
        got++;
    pclose(p);
    if (hex_out && got)
        memcpy(hex_out, hex, 65);
    return got == n ? 0 : -1;
}

int bench_stretch(int argc, char **argv)
{
    int rounds = 3, per = 3;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = (int)strtol(argv[++i], NULL, 10);
    if (rounds < 1)
        rounds = 1;
    if (picl__nss_acquire() != PICL_OK) {
        fprintf(stderr, "stretch: NSS init failed\n");
        return 1;
    }
    const char email[] = "andr\xc3\xa9@example.org", pw[] = "p\xc3\xa4ssw\xc3\xb6rd";
    picl_stretch_params params;
    picl__stretch_default_params(&params);
    int n = rounds * per;
    double *ours = calloc((size_t)n, sizeof *ours), *ref = calloc((size_t)n, sizeof *ref);
    char refhex[65] = "", ourhex[65] = "";
    uint8_t out[32];
    int rc = 0;
    /* alternate blocks so that drift in machine load hits both sides */
    for (int r = 0; r < rounds && rc == 0; r++) {
        for (int i = 0; i < per; i++) {
            double t = bench_now();
            if (picl__stretch(out, &params, NULL, email, strlen(email), pw, strlen(pw), NULL) != PICL_OK) {
                rc = 1;
                break;
            }
            ours[r * per + i] = bench_now() - t;
        }
        if (rc == 0 && run_reference(per, ref + r * per, refhex) != 0) {
            fprintf(stderr, "stretch: python3 hashlib reference failed\n");
            rc = 1;
        }
    }
    if (rc == 0) {
        for (int i = 0; i < 32; i++)
            snprintf(ourhex + 2 * i, 3, "%02x", out[i]);
        if (strcmp(ourhex, refhex) != 0) {
            fprintf(stderr, "stretch: results differ: ours %s, reference %s\n", ourhex, refhex);
            rc = 1;
        }
    }
    if (rc == 0) {
        double mo = bench_median(ours, (size_t)n), mr = bench_median(ref, (size_t)n);
        printf("stretch: %d runs each, same output (%.16s...)\n", n, ourhex);
        printf("stretch: picl (NSS + libscrypt)      median %8.1f ms\n", mo * 1e3);
        printf("stretch: python hashlib (OpenSSL)    median %8.1f ms\n", mr * 1e3);
        printf("stretch: ratio picl/reference        %.3f\n", mo / mr);
        bench_target("stretch picl / OpenSSL", mo / mr, "x", "<=", 1.15,
                     "python3 hashlib (OpenSSL), same parameters, medians of the same run");
    }
    free(ours);
    free(ref);
    picl__nss_release();
    return rc;
}
