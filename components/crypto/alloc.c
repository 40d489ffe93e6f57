/* SPDX-License-Identifier: MPL-2.0 */
/* alloc.c -- picl__json_dumps, and allocation-failure injection for tests
 * (PICL_TEST_HOOKS only); see alloc.h. */
#include "crypto/alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/util.h"

typedef struct dump_buf {
    char *p;
    size_t len, cap;
    int failed;
} dump_buf;

static int dump_append(const char *buf, size_t size, void *data)
{
    dump_buf *b = data;
    if (b->failed)
        return -1;
    if (size > b->cap - b->len - 1 || !b->p) {
        size_t cap = b->cap ? b->cap : 256;
        while (size > cap - b->len - 1) {
            if (cap > ((size_t)-1) / 2) {
                b->failed = 1;
                return -1;
            }
            cap *= 2;
        }
        /* grow by copy, so the old text is wiped rather than left in the heap */
        char *np = malloc(cap);
        if (!np) {
            b->failed = 1;
            return -1;
        }
        if (b->p) {
            memcpy(np, b->p, b->len);
            picl__zfree(b->p, b->cap);
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, buf, size);
    b->len += size;
    b->p[b->len] = 0;
    return 0;
}

/* ---- loading: jansson's allocations watched ------------------------------ */

static json_malloc_t watch_next_malloc;
static json_free_t watch_next_free;
static __thread int watch_failed;

static void *watch_malloc(size_t n)
{
    void *p = watch_next_malloc(n);
    if (!p)
        watch_failed = 1;
    return p;
}

static void watch_free(void *p) { watch_next_free(p); }

static void watch_install(void)
{
    json_get_alloc_funcs(&watch_next_malloc, &watch_next_free);
    if (!watch_next_malloc)
        watch_next_malloc = malloc;
    if (!watch_next_free)
        watch_next_free = free;
    json_set_alloc_funcs(watch_malloc, watch_free);
}

json_t *picl__json_loadb(const char *buf, size_t len, size_t flags, json_error_t *err, int *oom)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    json_malloc_t now = NULL;
    json_free_t now_free = NULL;
    pthread_once(&once, watch_install);
    /* someone (a server) replaced jansson's allocator after us: watch again,
     * chained to theirs */
    json_get_alloc_funcs(&now, &now_free);
    if (now != watch_malloc) {
        watch_next_malloc = now ? now : malloc;
        watch_next_free = now_free ? now_free : free;
        json_set_alloc_funcs(watch_malloc, watch_free);
    }
    *oom = 0;
    watch_failed = 0;
    json_t *j = json_loadb(buf, len, flags, err);
    if (watch_failed) {
        json_decref(j);
        j = NULL;
        *oom = 1;
    }
    watch_failed = 0;
    return j;
}

char *picl__json_dumps(const json_t *json, size_t flags)
{
    dump_buf b = {NULL, 0, 0, 0};
    if (!json)
        return NULL;
    /* the empty text json_dumps gives for nothing to dump still needs a buffer */
    if (json_dump_callback(json, dump_append, &b, flags) != 0 || b.failed || dump_append("", 0, &b) != 0) {
        if (b.p)
            picl__zfree(b.p, b.cap);
        return NULL;
    }
    return b.p;
}

#ifdef PICL_TEST_HOOKS
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <jansson.h>

static atomic_long target; /* 0 = disarmed */
static atomic_long counted;
static atomic_long injected;
static atomic_int sticky_mode;

void picl__test_alloc_fail_at(long n, int sticky)
{
    atomic_store(&target, 0);
    atomic_store(&counted, 0);
    atomic_store(&injected, 0);
    atomic_store(&sticky_mode, sticky ? 1 : 0);
    atomic_store(&target, n > 0 ? n : 0);
}

static __thread int paused;

void picl__test_alloc_pause(int on) { paused = on; }

int picl__test_alloc_fail_now(void)
{
    long t = atomic_load(&target);
    if (!t || paused)
        return 0;
    long c = atomic_fetch_add(&counted, 1) + 1;
    if (c == t || (c > t && atomic_load(&sticky_mode))) {
        atomic_fetch_add(&injected, 1);
        return 1;
    }
    return 0;
}

long picl__test_alloc_count(void) { return atomic_load(&counted); }

long picl__test_alloc_injected(void) { return atomic_load(&injected); }

/* ---- jansson ------------------------------------------------------------ */

static json_malloc_t json_next_malloc;

static void *json_hook_malloc(size_t n) { return picl__test_alloc_fail_now() ? NULL : json_next_malloc(n); }

/* ---- SQLite ------------------------------------------------------------- */

static sqlite3_mem_methods sqlite_next;

static void *sqlite_hook_malloc(int n) { return picl__test_alloc_fail_now() ? NULL : sqlite_next.xMalloc(n); }

static void *sqlite_hook_realloc(void *p, int n)
{
    return picl__test_alloc_fail_now() ? NULL : sqlite_next.xRealloc(p, n);
}

static picl_status install_status = PICL_OK;

static void install(void)
{
    json_free_t next_free = NULL;
    json_get_alloc_funcs(&json_next_malloc, &next_free);
    if (!json_next_malloc)
        json_next_malloc = malloc;
    json_set_alloc_funcs(json_hook_malloc, next_free ? next_free : free);

    sqlite3_mem_methods m;
    if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sqlite_next) != SQLITE_OK) {
        install_status = PICL_ERROR_STATE;
        return;
    }
    m = sqlite_next;
    m.xMalloc = sqlite_hook_malloc;
    m.xRealloc = sqlite_hook_realloc;
    if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK)
        install_status = PICL_ERROR_STATE;
}

picl_status picl__test_alloc_hooks_install(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
    return install_status;
}

#endif /* PICL_TEST_HOOKS */
