/* SPDX-License-Identifier: MPL-2.0 */
/* bench_profile.c -- picl-bench profile (issue 7): a browser-made Firefox
 * profile filled with 5 000 bookmarks, 1 000 logins and 100 000 visits through
 * our own stores, synced up to an empty loopback server, then down into a
 * second empty browser-made profile: wall time and peak memory of each. */
#include <inttypes.h>
#include <libgen.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench.h"
#include "bench_util.h"
#include "crypto/nss.h"
#include "crypto/util.h"
#include "stores/logins.h"
#include "stores/places.h"

#define UID 9

static const uint8_t KA[32] = "bench-kA-profile-0123456789abcd";
static const uint8_t KB[32] = "bench-kB-profile-0123456789abcd";

/* What a profile holds, counted from its files after the stores closed. */
typedef struct counts {
    long bookmarks, folders, pages, visits, logins;
} counts;

/* ---- the browser -------------------------------------------------------- */

/* tests/make-profile.sh of the source tree: --make-profile PATH, else
 * $PICL_SRCDIR/tests/make-profile.sh, else <dir of picl-bench>/../tests/. */
static int find_script(char *out, size_t cap, int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--make-profile")) {
            snprintf(out, cap, "%s", argv[i + 1]);
            return access(out, X_OK) == 0 ? 0 : -1;
        }
    const char *src = getenv("PICL_SRCDIR");
    if (src && *src) {
        snprintf(out, cap, "%s/tests/make-profile.sh", src);
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    snprintf(out, cap, "%s/../tests/make-profile.sh", dirname(exe));
    return access(out, X_OK) == 0 ? 0 : -1;
}

/* Runs make-profile.sh --dump DIR OUT: Firefox creates DIR as a fresh profile
 * (and writes what it reads from it to OUT).  Returns the script's status
 * (127: no browser). */
static int firefox_dump(const char *script, const char *dir, const char *out, const char *log)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' --dump '%s' '%s' >'%s' 2>&1", script, dir, out, log);
    int ws = system(cmd);
    if (ws == -1 || !WIFEXITED(ws))
        return -1;
    return WEXITSTATUS(ws);
}

/* ---- generated logins --------------------------------------------------- */

static json_t *gen_logins(size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; out && i < n; i++) {
        char id[64], host[64], user[48], pw[48];
        snprintf(id, sizeof id, "{%08zx-bd00-4000-8000-%012zx}", i, i * 7919);
        snprintf(host, sizeof host, "https://login%zu.example.net", i);
        snprintf(user, sizeof user, "user%zu@example.com", i);
        snprintf(pw, sizeof pw, "pw-%zu-%08zx", i, i * 2654435761u % 0xffffffffu);
        json_int_t t = 1700000000000LL + (json_int_t)i * 3600000;
        json_t *r = json_pack("{s:s, s:s, s:s, s:n, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:i}", "id", id,
                              "hostname", host, "formSubmitURL", host, "httpRealm", "username", user,
                              "password", pw, "usernameField", "email", "passwordField", "password",
                              "timeCreated", t, "timePasswordChanged", t + 1000, "timeLastUsed", t + 2000,
                              "timesUsed", (int)(1 + i % 13));
        if (!r || json_array_append_new(out, r) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* ---- stores on a profile ------------------------------------------------ */

/* stores[0..2] = bookmarks, passwords, history on profile dir. */
static picl_status open_stores(picl_store *stores[3], const char *dir, const char *state_dir)
{
    char err[256] = "";
    stores[0] = stores[1] = stores[2] = NULL;
    picl_status st = picl__places_open(&stores[0], dir, "bookmarks", err, sizeof err);
    if (st == PICL_OK)
        st = picl__logins_open(&stores[1], dir, state_dir, NULL, NULL, err, sizeof err);
    if (st == PICL_OK)
        st = picl__places_open(&stores[2], dir, "history", err, sizeof err);
    if (st != PICL_OK)
        fprintf(stderr, "profile: opening the stores of %s: %s (%s)\n", dir, picl_strerror(st), err);
    return st;
}

static void close_stores(picl_store *stores[3])
{
    for (int i = 0; i < 3; i++) {
        picl__store_close(stores[i]);
        stores[i] = NULL;
    }
}

static long sql_count(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *q = NULL;
    long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = (long)sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* Counts from places.sqlite (read-only) and logins.json. */
static void count_profile(const char *dir, counts *c)
{
    memset(c, 0xff, sizeof *c); /* -1 = could not count */
    char path[256];
    snprintf(path, sizeof path, "file:%s/places.sqlite?mode=ro", dir);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) == SQLITE_OK) {
        /* bookmarks and folders, not the roots, the tags folder or tag entries */
        c->bookmarks =
            sql_count(db, "SELECT count(*) FROM moz_bookmarks b JOIN moz_bookmarks p ON b.parent = p.id "
                          "WHERE b.type = 1 AND p.parent <> "
                          "(SELECT id FROM moz_bookmarks WHERE guid = 'tags________')");
        c->folders =
            sql_count(db, "SELECT count(*) FROM moz_bookmarks WHERE type = 2 AND parent > 1 AND guid NOT IN "
                          "('menu________', 'toolbar_____', 'unfiled_____', 'mobile______', "
                          "'tags________') AND parent <> "
                          "(SELECT id FROM moz_bookmarks WHERE guid = 'tags________')");
        c->visits = sql_count(db, "SELECT count(*) FROM moz_historyvisits");
        c->pages = sql_count(db, "SELECT count(DISTINCT place_id) FROM moz_historyvisits");
    }
    sqlite3_close(db);
    snprintf(path, sizeof path, "%s/logins.json", dir);
    json_t *lj = json_load_file(path, 0, NULL);
    if (lj)
        c->logins = (long)json_array_size(json_object_get(lj, "logins"));
    else if (access(path, F_OK) != 0)
        c->logins = 0;
    json_decref(lj);
}

/* The visits written by our history store carry source 1 ("from sync"),
 * which the store never reports as local changes: make them browsing
 * (source 0, what Firefox writes for a visited page), as in a profile that
 * was never synced.  0 or -1. */
static int visits_as_browsing(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/places.sqlite", dir);
    sqlite3 *db = NULL;
    int ok = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
             sqlite3_exec(db, "UPDATE moz_historyvisits SET source = 0 WHERE source = 1", NULL, NULL, NULL) ==
                 SQLITE_OK;
    if (!ok)
        fprintf(stderr, "profile: %s: %s\n", path, db ? sqlite3_errmsg(db) : "cannot open");
    sqlite3_close(db);
    return ok ? 0 : -1;
}

static void print_counts(const char *what, const counts *c)
{
    printf("  %-34s bookmarks %ld, folders %ld, pages %ld, visits %ld, logins %ld\n", what, c->bookmarks,
           c->folders, c->pages, c->visits, c->logins);
}

/* Firefox's own reading of dir (make-profile.sh --dump): counts, and how many
 * generated logins it decrypts to the generated password. */
static int firefox_check(const char *script, const char *dir, const char *tmp, const json_t *logins,
                         counts *c, size_t *pw_ok)
{
    char out[128], log[128];
    snprintf(out, sizeof out, "%s/check.json", tmp);
    snprintf(log, sizeof log, "%s/check.log", tmp);
    memset(c, 0, sizeof *c);
    *pw_ok = 0;
    if (firefox_dump(script, dir, out, log) != 0)
        return -1;
    json_t *j = json_load_file(out, 0, NULL);
    if (!j)
        return -1;
    size_t i, k;
    json_t *v;
    json_array_foreach (json_object_get(j, "bookmarks"), i, v) {
        const char *t = json_string_value(json_object_get(v, "type"));
        const char *g = json_string_value(json_object_get(v, "guid"));
        if (t && !strcmp(t, "bookmark"))
            c->bookmarks++;
        else if (t && g && !strcmp(t, "folder") && strlen(g) == 12 && strstr(g, "____") == NULL)
            c->folders++;
    }
    json_array_foreach (json_object_get(j, "history"), i, v) {
        size_t nv = json_array_size(json_object_get(v, "visits"));
        c->pages += nv > 0;
        c->visits += (long)nv;
    }
    json_t *lg = json_object_get(j, "logins");
    c->logins = (long)json_array_size(lg);
    json_array_foreach (lg, i, v) {
        json_t *want;
        json_array_foreach (logins, k, want) {
            if (json_equal(json_object_get(want, "id"), json_object_get(v, "guid"))) {
                *pw_ok += json_equal(json_object_get(want, "password"), json_object_get(v, "password"));
                break;
            }
        }
    }
    json_decref(j);
    return 0;
}

/* One measured engine run over a profile's three stores. */
static int measured_sync(const char *name, const char *dir, const bu_server *srv, bu_phase *p,
                         char state_dir[64], double store_s[3])
{
    picl_state *st = NULL;
    picl_stc *stc = NULL;
    picl_store *stores[3] = {NULL, NULL, NULL};
    int rc = -1;
    char err[256] = "";
    size_t moved = 0, failed = 0;
    picl_status s = bu_state(state_dir, &st, KA, KB);
    if (s == PICL_OK)
        s = bu_client(srv, UID, &stc);
    if (s != PICL_OK) {
        fprintf(stderr, "profile: %s: setup: %s\n", name, picl_strerror(s));
        goto done;
    }
    /* the phase includes opening the profile (lock, key4.db, logins.json) */
    bu_phase_begin(p, name, srv, stc);
    if (open_stores(stores, dir, state_dir) != PICL_OK)
        goto done;
    for (int i = 0; i < 3; i++) {
        picl_store *w = NULL;
        if (bu_timed_store(stores[i], &w) != PICL_OK)
            goto done;
        stores[i] = w;
    }
    s = bu_sync(stc, st, stores, 3, &moved, &failed, err, sizeof err);
    for (int i = 0; i < 3; i++)
        store_s[i] = bu_timed_secs(stores[i]);
    close_stores(stores);
    bu_phase_end(p, srv, stc);
    p->records = moved;
    if (s != PICL_OK || failed) {
        fprintf(stderr, "profile: %s failed: %s (%s), %zu records failed\n", name, picl_strerror(s), err,
                failed);
        goto done;
    }
    rc = 0;
done:
    close_stores(stores);
    picl__stc_free(stc);
    picl__state_free(st);
    return rc;
}

/* apply() of records to s, its wall time added to *secs. */
static int apply_to(picl_store *s, const json_t *records, const char *what, double *secs)
{
    double t = bench_now();
    picl_status st = picl__store_apply(s, records);
    *secs = bench_now() - t;
    if (st != PICL_OK)
        fprintf(stderr, "profile: filling %s: %s (%s)\n", what, picl_strerror(st), picl__store_error(s));
    return st == PICL_OK ? 0 : -1;
}

static int same_counts(const counts *a, const counts *b)
{
    return a->bookmarks == b->bookmarks && a->folders == b->folders && a->pages == b->pages &&
           a->visits == b->visits && a->logins == b->logins;
}

int bench_profile(int argc, char **argv)
{
    if (bu_nss_is_up())
        return bu_rerun_fresh("profile", argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0); /* figures and errors in order when piped */
    int quick = bu_has_flag(argc, argv, "--quick");
    int ffcheck = bu_has_flag(argc, argv, "--firefox-check");
    size_t nbm = quick ? 500 : 5000, nlg = quick ? 100 : 1000, nvis = quick ? 10000 : 100000;
    char script[4096];
    if (find_script(script, sizeof script, argc, argv) != 0) {
        fprintf(stderr,
                "profile: tests/make-profile.sh not found (give --make-profile PATH or PICL_SRCDIR)\n");
        return 1;
    }
    printf("profile: Firefox profiles (made by firefox-esr) through the places/logins stores, storage\n"
           "  server in a child process on loopback%s\n",
           quick ? " (--quick: sizes / 10)" : "");
    int rc = 1, nss = 0;
    char tmp[64] = "", nssdir[64] = "", sd1[64] = "", sd2[64] = "", p1[128], p2[128], out[160], log[160];
    bu_server srv;
    memset(&srv, 0, sizeof srv);
    srv.pid = -1;
    srv.to_child = -1;
    json_t *bm = NULL, *hi = NULL, *lg = NULL;
    picl_store *fill[3] = {NULL, NULL, NULL};

    if (bu_tmpdir(tmp, "prof") != 0)
        goto done;
    snprintf(p1, sizeof p1, "%s/profile1", tmp);
    snprintf(p2, sizeof p2, "%s/profile2", tmp);
    snprintf(log, sizeof log, "%s/firefox.log", tmp);
    double t0 = bench_now();
    for (int i = 0; i < 2; i++) {
        snprintf(out, sizeof out, "%s/empty%d.json", tmp, i + 1);
        int r = firefox_dump(script, i ? p2 : p1, out, log);
        if (r == 127) {
            fprintf(stderr, "profile: firefox-esr is not installed: this benchmark needs the browser to make "
                            "its profiles (set FIREFOX / PICL_GRE for another one)\n");
            goto done;
        }
        struct stat sb;
        if (r != 0 || stat(i ? p2 : p1, &sb) != 0) {
            fprintf(stderr, "profile: firefox-esr could not make a profile (exit %d; see %s)\n", r, log);
            goto done;
        }
    }
    printf("  2 empty profiles made by firefox-esr in %.2f s\n", bench_now() - t0);

    if (bu_tmpdir(nssdir, "nss") != 0 || picl__nss_acquire_dir(nssdir) != PICL_OK) {
        fprintf(stderr, "profile: cannot open NSS on a key database\n");
        goto done;
    }
    nss = 1;
    size_t nvisits = 0;
    bm = bu_gen_bookmarks(nbm, 0);
    hi = bu_gen_history((size_t)-1, nvis, &nvisits);
    lg = gen_logins(nlg);
    if (!bm || !hi || !lg)
        goto done;
    /* default limits unless asked: the engine splits uploads over max_total_records */
    int64_t max_total = bu_has_flag(argc, argv, "--raised-limits") ? (int64_t)json_array_size(hi) * 2 : 0;
    if (max_total < 10000)
        max_total = 0;
    if (bu_server_start(&srv, max_total) != 0)
        goto done;
    if (max_total)
        printf("  server limit max_total_records raised 10000 -> %" PRId64 " (--raised-limits; %zu\n"
               "  history records in one batch instead of several)\n",
               max_total, json_array_size(hi));

    /* fill profile 1 through our stores (one transaction each) */
    double tf[3] = {0, 0, 0};
    t0 = bench_now();
    if (bu_tmpdir(sd1, "state") != 0 || open_stores(fill, p1, sd1) != PICL_OK ||
        apply_to(fill[0], bm, "bookmarks", &tf[0]) || apply_to(fill[1], lg, "logins", &tf[1]) ||
        apply_to(fill[2], hi, "history", &tf[2]))
        goto done;
    /* what apply() wrote counts as already synced: make it the profile's own
     * unsynced content (bookmarks: the store's reset, all changed; logins: the
     * sync state dir is thrown away; visits: see visits_as_browsing) */
    if (picl__store_reset(fill[0]) != PICL_OK) {
        fprintf(stderr, "profile: bookmarks reset: %s\n", picl__store_error(fill[0]));
        goto done;
    }
    close_stores(fill);
    if (visits_as_browsing(p1) != 0)
        goto done;
    bu_rmtree(sd1);
    sd1[0] = 0;
    printf(
        "  profile 1 filled through our stores in %.2f s: %zu bookmark records (%zu folders), %zu logins,\n"
        "  %zu pages with %zu visits (apply: bookmarks %.2f s, logins %.2f s, history %.2f s);\n"
        "  then marked unsynced (bookmarks store reset, visits source 0, no login sync state)\n",
        bench_now() - t0, json_array_size(bm), nbm / 100, json_array_size(lg), json_array_size(hi), nvisits,
        tf[0], tf[1], tf[2]);
    counts c1, c2,
        want = {(long)(nbm - nbm / 100), (long)(nbm / 100), (long)json_array_size(hi), (long)nvisits,
                (long)nlg};
    /* the generated records are in profile 1 now: freed, so that the
     * phases' peak memory is the client's (stores, engine, HTTP); the
     * logins are made again (the same) for --firefox-check */
    json_decref(bm);
    json_decref(hi);
    json_decref(lg);
    bm = hi = lg = NULL;
    malloc_trim(0);
    count_profile(p1, &c1);
    if (!same_counts(&c1, &want)) {
        print_counts("profile 1 holds", &c1);
        print_counts("expected", &want);
        fprintf(stderr, "profile: profile 1 does not hold what was generated\n");
        goto done;
    }

    bu_phase up, down;
    double sup[3] = {0, 0, 0}, sdown[3] = {0, 0, 0};
    if (measured_sync("sync profile 1 up", p1, &srv, &up, sd1, sup) != 0)
        goto done;
    bu_phase_print(&up, 1);
    if (measured_sync("sync into empty profile 2", p2, &srv, &down, sd2, sdown) != 0)
        goto done;
    bu_phase_print(&down, 0);
    printf("  (records = uploaded + applied; CPU = user + system seconds of the client / the server\n"
           "   process; memory = peak RSS in the phase from /proc VmHWM reset per phase, delta = over\n"
           "   RSS at its start; each phase opens and closes the stores)\n");
    for (int w = 0; w < 2; w++) {
        double *v = w ? sdown : sup;
        printf("  wall time inside the stores, %s: bookmarks %.2f s, passwords %.2f s, history %.2f s\n",
               w ? "down" : "up  ", v[0], v[1], v[2]);
    }
    /* issue 15's targets (one run each) */
    long peak = up.peak_kb > down.peak_kb ? up.peak_kb : down.peak_kb;
    if (!quick) {
        bench_target("profile.up wall", up.secs, "s", "<=", 3.0, "one run");
        bench_target("profile.into_empty wall", down.secs, "s", "<=", 5.0, "one run");
        if (peak >= 0)
            bench_target("profile.client peak RSS", (double)peak / 1024.0, "MiB", "<=", 100.0,
                         "VmHWM of the client process over both phases");
    } else {
        printf("  (--quick: the profile targets are for the full sizes; not judged)\n");
    }
    count_profile(p2, &c2);
    print_counts("profile 1 (files)", &c1);
    print_counts("profile 2 after sync (files)", &c2);
    if (!same_counts(&c1, &c2)) {
        fprintf(stderr, "profile: profile 2 differs from profile 1\n");
        goto done;
    }
    if (ffcheck) {
        counts cf;
        size_t pw_ok = 0;
        t0 = bench_now();
        if (!(lg = gen_logins(nlg)))
            goto done;
        if (firefox_check(script, p2, tmp, lg, &cf, &pw_ok) != 0) {
            fprintf(stderr, "profile: firefox-esr could not read profile 2 (see %s/check.log)\n", tmp);
            goto done;
        }
        print_counts("profile 2 as firefox-esr reads it", &cf);
        printf("  firefox-esr decrypts %zu of %zu logins to the generated password (%.1f s)\n", pw_ok, nlg,
               bench_now() - t0);
        if (!same_counts(&cf, &c2) || pw_ok != nlg) {
            fprintf(stderr, "profile: firefox-esr does not see what was synced\n");
            goto done;
        }
    }
    rc = 0;
done:
    close_stores(fill);
    json_decref(bm);
    json_decref(hi);
    json_decref(lg);
    bu_server_stop(&srv);
    if (nss)
        picl__nss_release();
    if (sd1[0])
        bu_rmtree(sd1);
    if (sd2[0])
        bu_rmtree(sd2);
    if (nssdir[0])
        bu_rmtree(nssdir);
    if (tmp[0] && !bu_has_flag(argc, argv, "--keep"))
        bu_rmtree(tmp);
    else if (tmp[0])
        printf("  profiles kept in %s\n", tmp);
    return rc;
}
