/* SPDX-License-Identifier: MPL-2.0 */
/* test_flaky.c -- `picl sync` through a flaky proxy (testutil_proxy) in front
 * of picl server: a connection dropped mid-response or closed without an
 * answer, 500 and 503 with Retry-After, truncated JSON and a huge (16 MiB) body on
 * the download, the upload and /info/collections are exit 4 with the store
 * directory and the sync cursor untouched; a slow answer is no error; and the
 * next clean sync converges: every record on both devices exactly once. */
#include "testutil.h"
#include "testutil_cli.h"
#include "testutil_profile.h"
#include "testutil_proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static tucli T;
static tupx *P;
static json_t *want; /* ids both devices must end up with */
static int nadd;

#define SYNC1 "$P --state s1 sync --store-dir f1 --collections passwords 2>&1"
#define SYNC0 "$P --state s0 -q sync --store-dir f0 --collections passwords"
#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)

/* Device 0 talks to picl server directly, device 1 through the proxy. */
static void setup(void)
{
    tucli_start(&T);
    P = tupx_start(T.url);
    want = json_array();
    nadd = 0;
    char code[256];
    ck_assert_int_eq(run(NULL, 0, "$P --state s0 -q account create --server %s --email fl@x.org", T.url), 0);
    ck_assert_int_eq(
        run(code, sizeof code, "grep -h '^X-Verify-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2"), 0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "$P --state s0 -q account verify --code %s", code), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s0 -q login --email fl@x.org"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q login --server %s --email fl@x.org", tupx_url(P)), 0);
    ck_assert_int_eq(
        run(NULL, 0, "mkdir f0 f1 && echo '[]' > f0/passwords.json && echo '[]' > f1/passwords.json"), 0);
    /* both devices have synced once (the store's bookkeeping file exists) */
    ck_assert_int_eq(run(NULL, 0, SYNC0), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --store-dir f1 --collections passwords"), 0);
}

static void teardown(void)
{
    tupx_stop(P);
    json_decref(want);
    tucli_stop(&T);
}

/* n new logins in DIR/passwords.json */
static void add(const char *store, int n)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s/passwords.json", T.dir, store);
    json_t *a = json_load_file(path, 0, NULL);
    ck_assert(json_is_array(a));
    for (int i = 0; i < n; i++, nadd++) {
        char id[32], host[64];
        snprintf(id, sizeof id, "%.2s%010d", store, nadd);
        snprintf(host, sizeof host, "https://%s.example", id);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "id", id, "hostname", host,
                                           "formSubmitURL", host, "username", "u", "password", "p",
                                           "timePasswordChanged", 1));
        json_array_append_new(want, json_string(id));
    }
    ck_assert_int_eq(json_dump_file(a, path, 0), 0);
    json_decref(a);
}

/* DIR/passwords.json holds exactly the ids of `want`, each once. */
static void converged(const char *store, const char *what)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s/passwords.json", T.dir, store);
    json_t *a = json_load_file(path, 0, NULL);
    ck_assert(json_is_array(a));
    ck_assert_msg(json_array_size(a) == json_array_size(want), "%s: %s holds %zu records, want %zu", what,
                  store, json_array_size(a), json_array_size(want));
    size_t i, j;
    json_t *w, *r;
    json_array_foreach (want, i, w) {
        int seen = 0;
        json_array_foreach (a, j, r)
            seen += !strcmp(json_string_value(json_object_get(r, "id")), json_string_value(w));
        ck_assert_msg(seen == 1, "%s: %s holds %s %d times", what, store, json_string_value(w), seen);
    }
    json_decref(a);
}

/* device 1's lastSync of passwords ("" when none) */
static void last_sync(char *out, size_t cap)
{
    char path[700];
    snprintf(path, sizeof path, "%s/s1/state.json", T.dir);
    json_t *st = json_load_file(path, 0, NULL);
    ck_assert_msg(st != NULL, "%s unreadable", path);
    json_t *v = json_object_get(json_object_get(json_object_get(st, "collections"), "passwords"), "lastSync");
    snprintf(out, cap, "%s", json_is_string(v) ? json_string_value(v) : "");
    json_decref(st);
}

/* One flaky sync of device 1: the fault hits (want_hits > 0: at least that
 * many requests), the exit status is want_rc, and -- when it failed -- its
 * store and cursor are as they were.  Then clean syncs converge. */
static void flaky(const char *what, tupx_fault f, const char *match, int count, long arg, int want_rc)
{
    char out[8192], before_ls[64], after_ls[64], f1[128];
    snprintf(f1, sizeof f1, "%s/f1", T.dir);
    last_sync(before_ls, sizeof before_ls);
    uint64_t before = tup_dir_digest(f1);
    tupx_set(P, f, match, count, arg);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = run(out, sizeof out, SYNC1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "flaky: %s: exit %d after %.1f s, %d requests faulted\n", what, rc,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, tupx_faulted(P));
    int hits = tupx_faulted(P);
    tupx_set(P, TUPX_PASS, NULL, 0, 0);
    ck_assert_msg(hits > 0, "%s: the proxy never saw a request matching %s", what, match);
    ck_assert_msg(rc == want_rc, "%s: picl sync exited %d, want %d: %s", what, rc, want_rc, out);
    if (want_rc != 0) {
        last_sync(after_ls, sizeof after_ls);
        ck_assert_msg(!strcmp(before_ls, after_ls), "%s: lastSync moved from %s to %s", what, before_ls,
                      after_ls);
        ck_assert_msg(tup_dir_digest(f1) == before, "%s: the store directory changed", what);
    }
    if (f == TUPX_STATUS && arg == 503)
        usleep(1100000); /* the Retry-After: 1 the client keeps */
    ck_assert_msg(run(out, sizeof out, SYNC1) == 0, "%s: the clean sync after it failed: %s", what, out);
    converged("f1", what);
}

/* device 0 ends with everything too (what device 1 uploaded, once) */
static void device0_converged(void)
{
    ck_assert_int_eq(run(NULL, 0, SYNC0), 0);
    converged("f0", "device 0 at the end");
}

/* Faults on the download: device 0 wrote, device 1 must not lose it. */
START_TEST(test_download_faults)
{
    add("f0", 10);
    ck_assert_int_eq(run(NULL, 0, SYNC0), 0);
    static const struct {
        const char *what;
        tupx_fault f;
        long arg;
        int rc;
    } cases[] = {
        {"dropped mid-response", TUPX_DROP, 0, 4},
        {"closed without an answer", TUPX_RESET, 0, 4},
        {"500", TUPX_STATUS, 500, 4},
        {"503 + Retry-After", TUPX_STATUS, 503, 4},
        {"truncated JSON", TUPX_TRUNCATE, 0, 4},
        {"a 1.5 s delay", TUPX_DELAY, 1500, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add("f0", 3);
        ck_assert_int_eq(run(NULL, 0, SYNC0), 0);
        flaky(cases[i].what, cases[i].f, "GET *storage/passwords?*full=1", -1, cases[i].arg, cases[i].rc);
    }
    device0_converged();
}
END_TEST

/* /info/collections (the first thing a sync reads) broken in each way. */
START_TEST(test_info_faults)
{
    add("f0", 5);
    ck_assert_int_eq(run(NULL, 0, SYNC0), 0);
    add("f0", 2);
    ck_assert_int_eq(run(NULL, 0, SYNC0), 0);
    flaky("info/collections truncated", TUPX_TRUNCATE, "GET *info/collections", -1, 0, 4);
    add("f0", 2);
    ck_assert_int_eq(run(NULL, 0, SYNC0), 0);
    flaky("info/collections dropped", TUPX_DROP, "GET *info/collections", -1, 0, 4);
    add("f0", 2);
    ck_assert_int_eq(run(NULL, 0, SYNC0), 0);
    flaky("info/collections 500", TUPX_STATUS, "GET *info/collections", -1, 500, 4);
    device0_converged();
}
END_TEST

/* A 16 MiB record in the listing (2 MiB under ASan): refused, nothing
 * applied, the cursor kept.  (It found the client copying its receive buffer
 * at every 16 KiB piece: a 64 MiB answer took minutes under ASan.) */
START_TEST(test_huge_body)
{
    add("f0", 4);
    ck_assert_int_eq(run(NULL, 0, SYNC0), 0);
    flaky(tu_slow() ? "a 16 MiB body" : "a 2 MiB body", TUPX_HUGE, "GET *storage/passwords?*full=1", -1,
          tu_slow() ? 16 : 2, 4);
    device0_converged();
}
END_TEST

/* Faults on the upload: the server may have stored the batch without the
 * client hearing it; the next sync sends again and nothing is doubled. */
START_TEST(test_upload_faults)
{
    static const struct {
        const char *what;
        tupx_fault f;
        long arg;
    } cases[] = {
        {"upload answer dropped", TUPX_DROP, 0},
        {"upload closed without an answer", TUPX_RESET, 0},
        {"upload 503", TUPX_STATUS, 503},
        {"upload 500", TUPX_STATUS, 500},
        {"upload answer truncated", TUPX_TRUNCATE, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add("f1", 4);
        flaky(cases[i].what, cases[i].f, "POST *storage/passwords", -1, cases[i].arg, 4);
    }
    device0_converged();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("flaky");
    TCase *tc = tcase_create("proxy");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_download_faults);
    tcase_add_test(tc, test_info_faults);
    tcase_add_test(tc, test_huge_body);
    tcase_add_test(tc, test_upload_faults);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
