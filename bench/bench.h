/* SPDX-License-Identifier: MPL-2.0 */
/* bench.h -- shared helpers of picl-bench: timing and medians. */
#ifndef PICL_BENCH_H
#define PICL_BENCH_H

#include <stddef.h>

/* Monotonic time in seconds. */
double bench_now(void);
/* Median of n samples (sorts the array in place). */
double bench_median(double *v, size_t n);

/* One figure of issue 15's target list, in one format for every benchmark:
 *   "  target NAME: VALUE UNIT OP TARGET UNIT (REFERENCE): MET|NOT MET"
 * op is "<=", ">=" or "<"; reference says what the figure is measured
 * against in the same run (may be NULL).  Returns 1 when met. */
int bench_target(const char *name, double value, const char *unit, const char *op, double target,
                 const char *reference);

/* Each benchmark: argc/argv after the subcommand name; returns 0 on success. */
int bench_stretch(int argc, char **argv);
int bench_srp(int argc, char **argv);
int bench_keyserver(int argc, char **argv);
int bench_storage(int argc, char **argv);
int bench_sync(int argc, char **argv);
int bench_profile(int argc, char **argv);
/* bench_loadtest.c: several devices over two storage nodes, one drained */
int bench_loadtest(int argc, char **argv);

#endif
