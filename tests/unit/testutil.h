/* SPDX-License-Identifier: MPL-2.0 */
/* testutil.h -- shared helpers for the Check unit tests: vector files, hex. */
#ifndef PICL_TESTUTIL_H
#define PICL_TESTUTIL_H

#include <check.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* One "name = value" pair of a text vector file. */
typedef struct tu_kv {
    char *key;
    char *value;
} tu_kv;

/* A case: the pairs from one "case = ..." (or "group = ...") line to the next.
 * Pairs before the first case line form case 0 with name "". */
typedef struct tu_case {
    char *name;
    tu_kv *kv;
    size_t n;
} tu_case;

typedef struct tu_vecfile {
    tu_case *cases;
    size_t n;
} tu_vecfile;

/* Path of a file under tests/vectors (PICL_VECTORS env, else the
 * compile-time default).  Returns a static buffer. */
const char *tu_vector_path(const char *name);

/* Parses a text vector file; aborts the test (ck_abort) when unreadable. */
tu_vecfile *tu_vec_load(const char *name);
void tu_vec_free(tu_vecfile *f);

/* The value of `key` in case c (exact key match after trimming), or NULL. */
const char *tu_get(const tu_case *c, const char *key);
/* The first value of `key` anywhere in the file, or NULL. */
const char *tu_find(const tu_vecfile *f, const char *key);

/* Decodes hex (spaces ignored) into a malloc()ed buffer (>= 1 byte). */
uint8_t *tu_unhex(const char *hex, size_t *len);
/* Returns a static-buffer lowercase hex string (for messages), truncated. */
const char *tu_hex(const uint8_t *b, size_t n);

/* Loads a JSON file under the vectors directory; aborts when unreadable. */
json_t *tu_json_load(const char *name);

/* ck_assert that got[0..n) equals the hex string want (case-insensitive). */
#define tu_assert_hex(got, n, want) tu_assert_hex_((got), (n), (want), __FILE__, __LINE__)
void tu_assert_hex_(const uint8_t *got, size_t n, const char *want, const char *file, int line);

/* 1 when slow cases should run (PICL_SLOW unset or not "0"). */
int tu_slow(void);

/* Checked-fixture pair: acquire / release NSS (picl__nss_acquire) in the
 * forked test process. */
void tu_nss_setup(void);
void tu_nss_teardown(void);

/* Standard main body: runs suite s, prints Check's summary, returns exit code. */
int tu_run(Suite *s);

/* Removes path and, when it is a directory, everything under it (nftw,
 * depth first, symlinks removed, never followed; no shell).  Returns 0 when
 * path is gone (also when it never existed), -1 with errno set otherwise. */
int tu_rmtree(const char *path);
#define testutil_rmtree tu_rmtree

/* Appends s to the NUL-terminated string in buf[cap], truncating what does
 * not fit (buf stays terminated); the bounded replacement for strncat. */
void tu_append(char *buf, size_t cap, const char *s);

#endif
