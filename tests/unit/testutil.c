/* SPDX-License-Identifier: MPL-2.0 */
/* testutil.c -- shared helpers for the Check unit tests. */
#include "testutil.h"
#include "crypto/nss.h"

#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PICL_VECTORS
#define PICL_VECTORS "tests/vectors"
#endif

const char *tu_vector_path(const char *name)
{
    static char path[4096];
    const char *dir = getenv("PICL_VECTORS");
    if (!dir || !*dir)
        dir = PICL_VECTORS;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static char *trim(char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

static tu_case *new_case(tu_vecfile *f, const char *name)
{
    f->cases = realloc(f->cases, (f->n + 1) * sizeof *f->cases);
    ck_assert_ptr_nonnull(f->cases);
    tu_case *c = &f->cases[f->n++];
    c->name = strdup(name);
    c->kv = NULL;
    c->n = 0;
    return c;
}

tu_vecfile *tu_vec_load(const char *name)
{
    const char *path = tu_vector_path(name);
    FILE *fp = fopen(path, "r");
    if (!fp)
        ck_abort_msg("cannot open vector file %s", path);
    tu_vecfile *f = calloc(1, sizeof *f);
    tu_case *cur = new_case(f, "");
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, fp) >= 0) {
        char *s = trim(line);
        if (*s == '#' || *s == 0)
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            continue;
        *eq = 0;
        char *key = trim(s), *value = trim(eq + 1);
        if (!strcmp(key, "case") || !strcmp(key, "group")) {
            cur = new_case(f, value);
            if (!strcmp(key, "group")) {
                /* keep the group value reachable as a key too */
            }
            continue;
        }
        cur->kv = realloc(cur->kv, (cur->n + 1) * sizeof *cur->kv);
        ck_assert_ptr_nonnull(cur->kv);
        cur->kv[cur->n].key = strdup(key);
        cur->kv[cur->n].value = strdup(value);
        cur->n++;
    }
    free(line);
    fclose(fp);
    return f;
}

void tu_vec_free(tu_vecfile *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        for (size_t j = 0; j < f->cases[i].n; j++) {
            free(f->cases[i].kv[j].key);
            free(f->cases[i].kv[j].value);
        }
        free(f->cases[i].kv);
        free(f->cases[i].name);
    }
    free(f->cases);
    free(f);
}

const char *tu_get(const tu_case *c, const char *key)
{
    for (size_t j = 0; j < c->n; j++)
        if (!strcmp(c->kv[j].key, key))
            return c->kv[j].value;
    return NULL;
}

const char *tu_find(const tu_vecfile *f, const char *key)
{
    for (size_t i = 0; i < f->n; i++) {
        const char *v = tu_get(&f->cases[i], key);
        if (v)
            return v;
    }
    return NULL;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

uint8_t *tu_unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    uint8_t *out = malloc(n / 2 + 1);
    ck_assert_ptr_nonnull(out);
    size_t o = 0;
    int hi = -1;
    for (size_t i = 0; i < n; i++) {
        if (isspace((unsigned char)hex[i]))
            continue;
        int v = hexval(hex[i]);
        if (v < 0)
            ck_abort_msg("bad hex in vector: %.40s", hex);
        if (hi < 0)
            hi = v;
        else {
            out[o++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    if (hi >= 0)
        ck_abort_msg("odd hex in vector: %.40s", hex);
    *len = o;
    return out;
}

const char *tu_hex(const uint8_t *b, size_t n)
{
    static char buf[1024];
    size_t max = (sizeof buf - 1) / 2;
    if (n > max)
        n = max;
    for (size_t i = 0; i < n; i++)
        sprintf(buf + 2 * i, "%02x", b[i]); /* banned-ok: test helper, bounded */
    buf[2 * n] = 0;
    return buf;
}

json_t *tu_json_load(const char *name)
{
    json_error_t err;
    json_t *j = json_load_file(tu_vector_path(name), 0, &err);
    if (!j)
        ck_abort_msg("cannot load %s: %s (line %d)", name, err.text, err.line);
    return j;
}

void tu_assert_hex_(const uint8_t *got, size_t n, const char *want, const char *file, int line)
{
    size_t wl;
    uint8_t *w = tu_unhex(want, &wl);
    int ok = (wl == n) && memcmp(w, got, n) == 0;
    free(w);
    if (!ok)
        ck_abort_msg("%s:%d: got %s (%zu bytes), want %.80s", file, line, tu_hex(got, n), n, want);
}

int tu_slow(void)
{
    const char *s = getenv("PICL_SLOW");
    return !(s && !strcmp(s, "0"));
}

int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

void tu_nss_setup(void) { ck_assert_int_eq(picl__nss_acquire(), 0); }

void tu_nss_teardown(void) { picl__nss_release(); }

static int rmtree_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = flag == FTW_DP || flag == FTW_DNR ? rmdir(path) : unlink(path);
    return rc == 0 || errno == ENOENT ? 0 : -1;
}

int tu_rmtree(const char *path)
{
    if (!path || !*path || strcmp(path, "/") == 0) {
        errno = EINVAL;
        return -1;
    }
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(path, rmtree_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

void tu_append(char *buf, size_t cap, const char *s)
{
    size_t used = strnlen(buf, cap);
    if (cap == 0 || used >= cap - 1 || !s)
        return;
    snprintf(buf + used, cap - used, "%s", s);
}
