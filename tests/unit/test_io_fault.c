/* SPDX-License-Identifier: MPL-2.0 */
/* test_io_fault.c -- I/O failure: picl-storage, picl-keyserver and `picl sync`
 * with write/fsync failing (EIO, ENOSPC) through the LD_PRELOAD shim
 * (eio_shim.so, switched on and off while the process runs) and picl-storage
 * on a full 2 MiB tmpfs: the servers answer 503 with Retry-After while reads
 * go on, and recover when the fault goes away with every acknowledged write
 * kept and PRAGMA integrity_check "ok"; the client exits 6 with its store
 * directory or Firefox profile untouched, and the next sync converges. */
#include "storage_fixture.h"
#include "testutil.h"
#include "testutil_cli.h"
#include "testutil_ks.h"
#include "testutil_profile.h"

#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char bindir[4096];
static char shim[4200];
static char work[64];

static void setup(void)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(n, 0);
    self[n] = 0;
    snprintf(bindir, sizeof bindir, "%s/..", dirname(self));
    snprintf(shim, sizeof shim, "%s/tests/eio_shim.so", bindir);
    ck_assert_msg(access(shim, R_OK) == 0, "%s not built (make builds it with the tests)", shim);
    snprintf(work, sizeof work, "/tmp/picl-iofault-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(work));
    ck_assert_int_eq(picl__nss_acquire(), PICL_OK);
    signal(SIGPIPE, SIG_IGN);
}

static void teardown(void)
{
    picl__nss_release();
    /* a disk-full test stopped half-way leaves its tmpfs mounted */
    char mnt[128];
    snprintf(mnt, sizeof mnt, "%s/mnt", work);
    umount2(mnt, MNT_DETACH);
    ck_assert_int_eq(tu_rmtree(work), 0);
}

typedef struct srv {
    pid_t pid;
    unsigned port;
    char base[64];
    char log[128];
} srv;

/* Runs bin argv with the shim preloaded and env ("K=V", NULL-terminated),
 * stderr to s->log; waits for the line with `marker` followed by the port. */
static void spawn(srv *s, const char *name, const char *const *argv, const char *const *env,
                  const char *marker)
{
    char bin[4300];
    snprintf(bin, sizeof bin, "%s/%s", bindir, name);
    snprintf(s->log, sizeof s->log, "%s/%s.log", work, name);
    unlink(s->log);
    s->pid = fork();
    ck_assert_int_ge(s->pid, 0);
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed test */
        if (!freopen("/dev/null", "w", stdout) || !freopen(s->log, "a", stderr))
            _exit(126);
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        setenv("LD_PRELOAD", shim, 1);
        /* the ASan build: the shim is loaded before the sanitizer runtime */
        char asan[512];
        const char *a = getenv("ASAN_OPTIONS");
        snprintf(asan, sizeof asan, "%s%sverify_asan_link_order=0", a ? a : "", a && *a ? ":" : "");
        setenv("ASAN_OPTIONS", asan, 1);
        setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 1);
        char *args[16];
        size_t k = 0;
        args[k++] = bin;
        for (size_t i = 0; argv[i] && k < 15; i++)
            args[k++] = (char *)argv[i];
        args[k] = NULL;
        execv(bin, args);
        _exit(127);
    }
    s->port = 0;
    for (int i = 0; i < 250 && !s->port; i++) {
        usleep(20000);
        FILE *f = fopen(s->log, "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, marker);
            if (p)
                sscanf(p + strlen(marker), "%u", &s->port);
        }
        if (f)
            fclose(f);
    }
    ck_assert_msg(s->port, "%s did not start (log %s)", name, s->log);
    snprintf(s->base, sizeof s->base, "http://127.0.0.1:%u", s->port);
}

static void stop(srv *s)
{
    int st;
    kill(s->pid, SIGTERM);
    waitpid(s->pid, &st, 0);
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
}

/* PRAGMA integrity_check of a database file: "ok" or the first complaint. */
static void integrity_ok(const char *db)
{
    sqlite3 *c = NULL;
    ck_assert_int_eq(sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(c, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    const char *v = (const char *)sqlite3_column_text(st, 0);
    ck_assert_msg(v && !strcmp(v, "ok"), "%s: integrity_check says %s", db, v ? v : "(null)");
    sqlite3_finalize(st);
    sqlite3_close(c);
}

/* A request to picl-storage as SF_UID with cred; returns the status. */
static long sreq(const srv *s, const tu_cred *cred, const char *method, const char *path, const char *body,
                 tu_resp *out)
{
    char target[256];
    snprintf(target, sizeof target, "/1.5/%d%s", SF_UID, path);
    tu_req o = {.ctype = body ? "application/json" : NULL,
                .body = body,
                .len = body ? strlen(body) : 0,
                .cred = cred};
    tu_resp r;
    ck_assert_int_eq(tu_http(&r, method, s->base, target, &o), 0);
    long st = r.status;
    if (out)
        *out = r;
    else
        tu_resp_free(&r);
    return st;
}

static void expect_503(tu_resp *r, const char *what)
{
    ck_assert_msg(r->status == 503, "%s under the fault: %ld %.200s", what, r->status, r->body);
    char *ra = tu_resp_header(r, "Retry-After");
    ck_assert_msg(ra && strtol(ra, NULL, 10) > 0, "%s: 503 without a Retry-After", what);
    free(ra);
}

static size_t count_records(const srv *s, const tu_cred *cred, const char *coll)
{
    char path[128];
    snprintf(path, sizeof path, "/storage/%s", coll);
    tu_resp r;
    long st = sreq(s, cred, "GET", path, NULL, &r);
    ck_assert_msg(st == 200, "GET %s: %ld", coll, st);
    json_t *j = sf_json(&r);
    size_t n = json_array_size(j);
    json_decref(j);
    tu_resp_free(&r);
    return n;
}

static int post_n(const srv *s, const tu_cred *cred, const char *coll, const char *prefix, int from, int n,
                  tu_resp *out)
{
    char body[8192], path[128];
    size_t o = (size_t)snprintf(body, sizeof body, "[");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(body + o, sizeof body - o, "%s{\"id\":\"%s%04d\",\"payload\":\"x\"}",
                              i ? "," : "", prefix, from + i);
    snprintf(body + o, sizeof body - o, "]");
    snprintf(path, sizeof path, "/storage/%s", coll);
    return (int)sreq(s, cred, "POST", path, body, out);
}

/* picl-storage with `calls` failing with `err` while the switch file exists. */
static void storage_fault(const char *calls, const char *err)
{
    char data[128], secret[160], sw[128], elog[128];
    snprintf(data, sizeof data, "%s/sdata-%s", work, calls);
    ck_assert_int_eq(mkdir(data, 0700), 0);
    snprintf(secret, sizeof secret, "%s/secret", work);
    FILE *f = fopen(secret, "w");
    fwrite(SF_SECRET, 1, SF_SECRET_LEN, f);
    fclose(f);
    snprintf(sw, sizeof sw, "%s/fault-on", work);
    snprintf(elog, sizeof elog, "%s/eio-%s.log", work, calls);
    char e1[200], e2[200], e3[200], e4[200], e5[200];
    snprintf(e1, sizeof e1, "PICL_EIO_PATH=%s/", data);
    snprintf(e2, sizeof e2, "PICL_EIO_SWITCH=%s", sw);
    snprintf(e3, sizeof e3, "PICL_EIO_CALLS=%s", calls);
    snprintf(e4, sizeof e4, "PICL_EIO_ERRNO=%s", err);
    snprintf(e5, sizeof e5, "PICL_EIO_LOG=%s", elog);
    const char *env[] = {e1, e2, e3, e4, e5, NULL};
    const char *argv[] = {"--listen", "127.0.0.1:0", "--data", data, "--secret-file", secret, NULL};
    srv s;
    spawn(&s, "picl-storage", argv, env, "serving http://127.0.0.1:");
    tu_cred cred;
    tu_mint(&cred, SF_SECRET, SF_SECRET_LEN, s.base, SF_UID, 3600);
    ck_assert_int_eq(post_n(&s, &cred, "coll", "a", 0, 10, NULL), 200);
    ck_assert_int_eq(access(elog, F_OK), -1); /* nothing failed yet */
    /* the fault: writes are 503 + Retry-After, reads go on */
    touch(sw);
    tu_resp r;
    post_n(&s, &cred, "coll", "b", 0, 10, &r);
    expect_503(&r, "POST");
    tu_resp_free(&r);
    sreq(&s, &cred, "PUT", "/storage/coll/single", "{\"payload\":\"p\"}", &r);
    expect_503(&r, "PUT");
    tu_resp_free(&r);
    ck_assert_int_eq(count_records(&s, &cred, "coll"), 10);
    ck_assert_msg(access(elog, F_OK) == 0, "the shim failed no %s call: the fault was not injected", calls);
    /* the fault goes away: writes work again, nothing half-written */
    unlink(sw);
    ck_assert_int_eq(post_n(&s, &cred, "coll", "c", 0, 10, NULL), 200);
    ck_assert_int_eq(sreq(&s, &cred, "PUT", "/storage/coll/single", "{\"payload\":\"p\"}", NULL), 200);
    ck_assert_int_eq(count_records(&s, &cred, "coll"), 21);
    stop(&s);
    char db[200];
    snprintf(db, sizeof db, "%s/storage.db", data);
    integrity_ok(db);
    /* and after a restart everything acknowledged is there */
    spawn(&s, "picl-storage", argv, env, "serving http://127.0.0.1:");
    tu_cred_free(&cred);
    tu_mint(&cred, SF_SECRET, SF_SECRET_LEN, s.base, SF_UID, 3600);
    ck_assert_int_eq(count_records(&s, &cred, "coll"), 21);
    stop(&s);
    tu_cred_free(&cred);
}

START_TEST(test_storage_write_enospc) { storage_fault("write,pwrite,writev", "ENOSPC"); }
END_TEST

START_TEST(test_storage_fsync_eio) { storage_fault("fsync", "EIO"); }
END_TEST

START_TEST(test_storage_write_eio) { storage_fault("write,pwrite,writev", "EIO"); }
END_TEST

/* A real full disk: picl-storage's data directory on a 2 MiB tmpfs that
 * fills up; freeing space ends the 503s.  Without mount rights (not root)
 * the test says so and uses the shim's ENOSPC instead. */
START_TEST(test_storage_disk_full)
{
    char mnt[128], data[160], secret[160], ballast[160];
    snprintf(mnt, sizeof mnt, "%s/mnt", work);
    ck_assert_int_eq(mkdir(mnt, 0700), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=2m,mode=0700") != 0) {
        fprintf(stderr, "test_storage_disk_full: cannot mount a tmpfs (%s): the shim's ENOSPC stands in\n",
                strerror(errno));
        rmdir(mnt);
        storage_fault("write,pwrite,writev,fsync", "ENOSPC");
        return;
    }
    snprintf(data, sizeof data, "%s/data", mnt);
    ck_assert_int_eq(mkdir(data, 0700), 0);
    snprintf(secret, sizeof secret, "%s/secret", work);
    FILE *f = fopen(secret, "w");
    fwrite(SF_SECRET, 1, SF_SECRET_LEN, f);
    fclose(f);
    /* 512 KiB the test frees later */
    snprintf(ballast, sizeof ballast, "%s/ballast", mnt);
    f = fopen(ballast, "w");
    ck_assert_ptr_nonnull(f);
    char chunk[4096];
    memset(chunk, 'z', sizeof chunk);
    for (int i = 0; i < 128; i++)
        ck_assert_uint_eq(fwrite(chunk, 1, sizeof chunk, f), sizeof chunk);
    ck_assert_int_eq(fclose(f), 0);
    const char *env[] = {NULL};
    const char *argv[] = {"--listen", "127.0.0.1:0", "--data", data, "--secret-file", secret, NULL};
    srv s;
    spawn(&s, "picl-storage", argv, env, "serving http://127.0.0.1:");
    tu_cred cred;
    tu_mint(&cred, SF_SECRET, SF_SECRET_LEN, s.base, SF_UID, 3600);
    /* 16 KiB records until the disk is full */
    char *body = malloc(20000);
    char *pay = malloc(16385);
    memset(pay, 'q', 16384);
    pay[16384] = 0;
    int acked = 0, full = 0;
    for (int i = 0; i < 400 && !full; i++) {
        snprintf(body, 20000, "{\"payload\":\"%s\"}", pay);
        char path[64];
        snprintf(path, sizeof path, "/storage/big/r%04d", i);
        tu_resp r;
        long st = sreq(&s, &cred, "PUT", path, body, &r);
        if (st == 200) {
            acked++;
        } else {
            expect_503(&r, "PUT on a full disk");
            full = 1;
        }
        tu_resp_free(&r);
    }
    ck_assert_msg(full, "the 2 MiB disk never filled (%d records of 16 KiB)", acked);
    ck_assert_int_gt(acked, 10);
    /* reads go on */
    ck_assert_int_eq(count_records(&s, &cred, "big"), acked);
    /* space comes back: writes work again */
    ck_assert_int_eq(unlink(ballast), 0);
    char path[64];
    snprintf(path, sizeof path, "/storage/big/after");
    snprintf(body, 20000, "{\"payload\":\"small\"}");
    ck_assert_int_eq(sreq(&s, &cred, "PUT", path, body, NULL), 200);
    ck_assert_int_eq(count_records(&s, &cred, "big"), acked + 1);
    stop(&s);
    char db[200];
    snprintf(db, sizeof db, "%s/storage.db", data);
    integrity_ok(db);
    fprintf(stderr,
            "disk full: %d records of 16 KiB acknowledged on a 2 MiB tmpfs, then 503 + Retry-After; "
            "recovered after 512 KiB were freed; integrity_check ok\n",
            acked);
    free(body);
    free(pay);
    tu_cred_free(&cred);
    ck_assert_int_eq(umount(mnt), 0);
}
END_TEST

/* picl-keyserver with its writes failing: 503 + Retry-After, and it
 * recovers. */
START_TEST(test_keyserver_write_enospc)
{
    char data[128], sw[128], elog[160];
    snprintf(data, sizeof data, "%s/kdata", work);
    ck_assert_int_eq(mkdir(data, 0700), 0);
    snprintf(sw, sizeof sw, "%s/fault-on", work);
    snprintf(elog, sizeof elog, "%s/eio-ks.log", work);
    char e1[200], e2[200], e3[200], e4[200];
    snprintf(e1, sizeof e1, "PICL_EIO_PATH=%s/", data);
    snprintf(e2, sizeof e2, "PICL_EIO_SWITCH=%s", sw);
    snprintf(e3, sizeof e3, "PICL_EIO_ERRNO=ENOSPC");
    snprintf(e4, sizeof e4, "PICL_EIO_LOG=%s", elog);
    const char *env[] = {e1, e2, e3, e4, NULL};
    const char *argv[] = {"--listen", "127.0.0.1:0", "--data", data, NULL};
    srv s;
    spawn(&s, "picl-keyserver", argv, env, "listening on port ");
    tucli t;
    memset(&t, 0, sizeof t);
    snprintf(t.dir, sizeof t.dir, "%s", work);
    snprintf(t.url, sizeof t.url, "%s", s.base);
    snprintf(t.picl, sizeof t.picl, "%.400s/picl", bindir);
    snprintf(t.src, sizeof t.src, ".");
    ck_assert_int_eq(tucli_run(&t, NULL, 0, "",
                               "PICL_PASSWORD=password1 $P --state k1 -q account create "
                               "--server %s --email f@x.org >/dev/null 2>&1",
                               s.base),
                     0);
    touch(sw);
    const char *hdr[] = {"Content-Type: application/json", NULL};
    char body[128], *hex = tuks_hex("f@x.org", 7);
    snprintf(body, sizeof body, "{\"email\":\"%s\"}", hex); /* emails travel in hex */
    free(hex);
    tuks_resp r;
    tuks_request(s.port, "POST", "/v1/password/forgot/send_code", hdr, body, strlen(body), &r);
    ck_assert_msg(r.status == 503 && *r.retry_after,
                  "keyserver write under ENOSPC: %ld, Retry-After '%s' (%.200s)", r.status, r.retry_after,
                  r.body);
    tuks_resp_free(&r);
    /* the command line says it is the server, not the password */
    ck_assert_int_eq(tucli_run(&t, NULL, 0, "",
                               "PICL_PASSWORD=password2 $P --state k2 -q account create "
                               "--server %s --email g@x.org >/dev/null 2>&1",
                               s.base),
                     4);
    ck_assert_msg(access(elog, F_OK) == 0, "the shim failed nothing: the fault was not injected");
    unlink(sw);
    tuks_request(s.port, "POST", "/v1/password/forgot/send_code", hdr, body, strlen(body), &r);
    ck_assert_msg(r.status == 200, "after the fault: %ld %.200s", r.status, r.body);
    tuks_resp_free(&r);
    ck_assert_int_eq(tucli_run(&t, NULL, 0, "",
                               "PICL_PASSWORD=password2 $P --state k2 -q account create "
                               "--server %s --email g@x.org >/dev/null 2>&1",
                               s.base),
                     0);
    stop(&s);
    char db[200];
    snprintf(db, sizeof db, "%s/keyserver.db", data);
    integrity_ok(db);
}
END_TEST

/* ---- the client ------------------------------------------------------------ */

static tucli T;
#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)

static void cli_setup(void)
{
    setup();
    tucli_start(&T);
    char code[256];
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account create --server %s --email io@x.org", T.url), 0);
    ck_assert_int_eq(
        run(code, sizeof code, "grep -h '^X-Verify-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2"), 0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account verify --code %s", code), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q login --email io@x.org"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q login --server %s --email io@x.org", T.url), 0);
}

static void cli_teardown(void)
{
    tucli_stop(&T);
    teardown();
}

/* device 2 uploads n logins named <tag>NNN */
static void device2_adds(const char *tag, int n)
{
    ck_assert_int_eq(run(NULL, 0,
                         "mkdir -p f2 && python3 -c 'import json,os; p=\"f2/passwords.json\"; "
                         "a=json.load(open(p)) if os.path.exists(p) else []; "
                         "a+=[{\"id\": \"%s%%09d\" %% i, \"hostname\": \"https://%s%%d.example\" %% i, "
                         "\"formSubmitURL\": \"https://%s%%d.example\" %% i, \"username\": \"u\", "
                         "\"password\": \"p\", \"timePasswordChanged\": 1} for i in range(%d)]; "
                         "json.dump(a, open(p, \"w\"))' && $P --state s2 -q sync --store-dir f2 "
                         "--collections passwords",
                         tag, tag, tag, n),
                     0);
}

static const char *fault_env(char *buf, size_t cap, const char *path, const char *calls, const char *err)
{
    snprintf(buf, cap,
             "LD_PRELOAD=%s ASAN_OPTIONS=$ASAN_OPTIONS:verify_asan_link_order=0 PICL_EIO_PATH=%s/%s "
             "PICL_EIO_CALLS=%s PICL_EIO_ERRNO=%s PICL_EIO_LOG=%s/eio-client.log",
             shim, T.dir, path, calls, err, T.dir);
    return buf;
}

/* picl sync --store-dir with the store's writes failing (ENOSPC): exit 6,
 * the directory and the cursor untouched; then a clean sync converges. */
START_TEST(test_client_store_dir_enospc)
{
    char env[8192], out[4096];
    device2_adds("aa", 5);
    ck_assert_int_eq(run(NULL, 0,
                         "mkdir f1 && echo '[]' > f1/passwords.json && "
                         "$P --state s1 -q sync --store-dir f1 --collections passwords"),
                     0);
    device2_adds("bb", 5);
    char f1[128], s1[128];
    snprintf(f1, sizeof f1, "%s/f1", T.dir);
    snprintf(s1, sizeof s1, "%s/s1", T.dir);
    uint64_t before = tup_dir_digest(f1);
    int rc = run(out, sizeof out, "%s $P --state s1 sync --store-dir f1 --collections passwords 2>&1",
                 fault_env(env, sizeof env, "f1/", "write,pwrite,writev", "ENOSPC"));
    ck_assert_msg(rc == 6, "sync with the store dir full: exit %d, %s", rc, out);
    ck_assert_msg(strstr(out, "f1") != NULL, "the error does not name the store: %s", out);
    ck_assert_int_eq(run(NULL, 0, "test -s eio-client.log"), 0);
    ck_assert_msg(tup_dir_digest(f1) == before, "the store directory changed under a failed write");
    /* the next clean sync gets everything, once */
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --store-dir f1 --collections passwords"), 0);
    ck_assert_int_eq(run(out, sizeof out,
                         "python3 -c 'import json; a=json.load(open(\"f1/passwords.json\")); "
                         "ids=[r[\"id\"] for r in a]; print(len(ids), len(set(ids)))'"),
                     0);
    ck_assert_str_eq(out, "10 10\n");
}
END_TEST

/* picl sync --profile with fsync failing (EIO) in the profile: exit 6, the
 * profile byte for byte as it was; then a clean sync converges and Firefox
 * reads every login once. */
START_TEST(test_client_profile_fsync_eio)
{
    char env[8192], out[4096];
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --profile p1 --collections passwords"), 0);
    device2_adds("cc", 5);
    char p1[128];
    snprintf(p1, sizeof p1, "%s/p1", T.dir);
    uint64_t before = tup_dir_digest(p1);
    int rc = run(out, sizeof out, "%s $P --state s1 sync --profile p1 --collections passwords 2>&1",
                 fault_env(env, sizeof env, "p1/", "fsync", "EIO"));
    ck_assert_msg(rc == 6, "sync with the profile's fsync failing: exit %d, %s", rc, out);
    ck_assert_int_eq(run(NULL, 0, "test -s eio-client.log"), 0);
    ck_assert_msg(tup_dir_digest(p1) == before, "the profile changed under a failed fsync");
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --profile p1 --collections passwords"), 0);
    json_t *d = tup_dump_profile(p1);
    json_t *logins = json_object_get(d, "logins");
    int seen = 0;
    size_t i;
    json_t *l;
    json_array_foreach (logins, i, l)
        seen += !strncmp(json_string_value(json_object_get(l, "hostname")) ?: "", "https://cc", 10);
    ck_assert_int_eq(seen, 5);
    json_decref(d);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("io_fault");
    TCase *tc = tcase_create("servers");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_storage_write_enospc);
    tcase_add_test(tc, test_storage_fsync_eio);
    tcase_add_test(tc, test_storage_write_eio);
    tcase_add_test(tc, test_storage_disk_full);
    /* finding 5 of the reliability issue (keyserver disk full was 500/999,
     * no Retry-After): fixed in a80eb44 */
    tcase_add_test(tc, test_keyserver_write_enospc);
    suite_add_tcase(s, tc);
    tc = tcase_create("client");
    tcase_add_checked_fixture(tc, cli_setup, cli_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_client_store_dir_enospc);
    tcase_add_test(tc, test_client_profile_fsync_eio);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
