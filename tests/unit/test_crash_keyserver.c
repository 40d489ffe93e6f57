/* SPDX-License-Identifier: MPL-2.0 */
/* test_crash_keyserver.c -- kill -9 of picl-keyserver at a random moment of
 * an account creation, a password change and a password reset driven by the
 * picl command: after each restart no account is half-made (it is either
 * free or complete: its verification mail is there -- without asking for it
 * again -- and its password works), and exactly one of the old and the new
 * password works -- the new one when the change or reset was acknowledged.
 * And a kill at the two points of a creation where the mail used to be lost
 * (PICL_TEST_CRASH_AT=ks-create-committed / ks-create-mailed): the account
 * and its mail's outbox row are committed together, and the restarted
 * keyserver delivers the mail before it answers.  20 rounds (3 under ASan);
 * PICL_CRASH_ROUNDS sets them (make soak raises it).  With
 * PICL_TEST_BACKEND=postgresql the keyserver runs on PostgreSQL
 * (testutil_pg.h), the Maildir in its --data directory. */
#include "testutil.h"
#include "testutil_cli.h"
#include "testutil_pg.h"

#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static tucli T;
static char ksbin[4096];
static pid_t ks = -1;
static char pgurl[256], pgname[64]; /* PostgreSQL: the keyserver's database */
static const char *crash_at;        /* PICL_TEST_CRASH_AT for the next ks_start */

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "", __VA_ARGS__)

static int rounds(void)
{
    const char *r = getenv("PICL_CRASH_ROUNDS");
    int n = r && *r ? (int)strtol(r, NULL, 10) : 0;
    return n >= 3 ? n : tu_slow() ? 20 : 3;
}

/* Starts picl-keyserver on T.dir/data (log in T.dir/ks.log); sets T.url. */
static void ks_start(void)
{
    char logf[600], data[600];
    snprintf(logf, sizeof logf, "%s/ks.log", T.dir);
    snprintf(data, sizeof data, "%s/data", T.dir);
    unlink(logf);
    ks = fork();
    ck_assert_int_ge(ks, 0);
    if (ks == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed test */
        if (!freopen("/dev/null", "w", stdout) || !freopen(logf, "w", stderr))
            _exit(126);
        setenv("PICL_TEST_STRETCH_FLOOR", "cheap", 1);
        if (crash_at)
            setenv("PICL_TEST_CRASH_AT", crash_at, 1);
        if (pgurl[0])
            execl(ksbin, ksbin, "--listen", "127.0.0.1:0", "--data", data, "--database", pgurl, (char *)NULL);
        else
            execl(ksbin, ksbin, "--listen", "127.0.0.1:0", "--data", data, (char *)NULL);
        _exit(127);
    }
    *T.url = 0;
    for (int i = 0; i < 200 && !*T.url; i++) {
        usleep(20000);
        FILE *f = fopen(logf, "r");
        char line[512];
        unsigned port;
        while (f && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "listening on port ");
            if (p && sscanf(p, "listening on port %u", &port) == 1)
                snprintf(T.url, sizeof T.url, "http://127.0.0.1:%u", port);
        }
        if (f)
            fclose(f);
    }
    ck_assert_msg(*T.url, "picl-keyserver did not start");
    /* A restart forgets the rate-limit events of SQLite (kept in memory);
     * PostgreSQL's are shared by every keyserver and survive it: forgotten
     * here alike, or the sweep's failed sign-ins and reset codes reach the
     * limits (not what it tests) after a few rounds. */
    if (pgurl[0])
        ck_assert_int_eq(tupg_exec(pgurl, "DELETE FROM rate_events"), 0);
}

static void ks_kill(void)
{
    if (ks > 0) {
        int st;
        kill(ks, SIGKILL);
        waitpid(ks, &st, 0);
        ks = -1;
    }
}

static void setup(void)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(n, 0);
    self[n] = 0;
    memset(&T, 0, sizeof T);
    const char *d = dirname(self);
    snprintf(ksbin, sizeof ksbin, "%s/../picl-keyserver", d);
    snprintf(T.picl, sizeof T.picl, "%s/../picl", d);
    ck_assert_msg(access(ksbin, X_OK) == 0 && access(T.picl, X_OK) == 0, "%s or %s not built", ksbin, T.picl);
    const char *s = getenv("PICL_SRCDIR");
    snprintf(T.src, sizeof T.src, "%s", s && *s ? s : ".");
    snprintf(T.dir, sizeof T.dir, "/tmp/picl-crashks-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(T.dir));
    pgurl[0] = pgname[0] = 0;
    crash_at = NULL;
    if (tupg_enabled())
        tupg_create_db(pgurl, sizeof pgurl, pgname, sizeof pgname);
}

static void teardown(void)
{
    ks_kill();
    tupg_drop_db(pgname);
    ck_assert_int_eq(tu_rmtree(T.dir), 0);
}

/* The integer in the first column of the first row of sql, from the
 * keyserver's database (SQLite file or PostgreSQL; sql must suit both). */
static long long db_int(const char *sql)
{
    if (pgurl[0]) {
        char out[64];
        ck_assert_msg(tupg_query1(pgurl, sql, out, sizeof out) == 0, "%s failed", sql);
        return strtoll(out, NULL, 10);
    }
    char db[128];
    snprintf(db, sizeof db, "%s/data/keyserver.db", T.dir);
    sqlite3 *c = NULL;
    sqlite3_stmt *q = NULL;
    ck_assert_int_eq(sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_busy_timeout(c, 5000);
    ck_assert_int_eq(sqlite3_prepare_v2(c, sql, -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    long long n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(c);
    return n;
}

typedef struct killer {
    long delay_us;
} killer;

static void *kill_later(void *arg)
{
    killer *k = arg;
    struct timespec ts = {k->delay_us / 1000000, (k->delay_us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    kill(ks, SIGKILL);
    return NULL;
}

/* Runs the command while the keyserver is killed after delay_us; returns
 * the command's exit status and leaves the keyserver restarted. */
static int run_killed(long delay_us, const char *cmd)
{
    killer k = {delay_us};
    pthread_t t;
    pthread_create(&t, NULL, kill_later, &k);
    int rc = run(NULL, 0, "%s >/dev/null 2>&1", cmd);
    pthread_join(t, NULL);
    int st;
    waitpid(ks, &st, 0);
    ks = -1;
    ks_start();
    return rc;
}

/* The newest value of header h in a mail to `to`, or "" (returns 0). */
static int mail(const char *to, const char *h, char *out, size_t cap)
{
    char buf[512];
    run(buf, sizeof buf,
        "f=$(grep -l '^To: %s' data/mail/new/* 2>/dev/null | xargs -r ls -t | head -1); "
        "[ -n \"$f\" ] && grep -h '^%s:' \"$f\" | tr -d '\\r' | cut -d' ' -f2",
        to, h);
    buf[strcspn(buf, "\n")] = 0;
    size_t n = strlen(buf);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, buf, n);
    out[n] = 0;
    return n != 0;
}

/* 1 when `pw` signs in as email (a scratch state directory), 0 when it is
 * refused as a wrong password; anything else fails the test. */
static int signs_in(const char *email, const char *pw)
{
    int rc = run(NULL, 0,
                 "rm -rf chk && PICL_PASSWORD='%s' $P --state chk -q login --server %s --email %s "
                 ">/dev/null 2>&1",
                 pw, T.url, email);
    ck_assert_msg(rc == 0 || rc == 3, "login as %s: exit %d", email, rc);
    return rc == 0;
}

static long delay(void) { return rand() % 500000; /* a create, change or reset takes ~150-300 ms here */ }

START_TEST(test_kill_during_account_changes)
{
    int n = rounds();
    srand(4242);
    ks_start();
    /* one verified account for the changes and resets */
    char code[128], cur[32] = "password-0", next[32];
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD=%s $P --state sa -q account create --server %s --email a@x.org", cur,
                         T.url),
                     0);
    ck_assert(mail("a@x.org", "X-Verify-Code", code, sizeof code));
    ck_assert_int_eq(run(NULL, 0, "$P --state sa -q account verify --code %s", code), 0);
    int creates = 0, create_acked = 0, changes = 0, change_acked = 0, resets = 0, reset_acked = 0;
    int half = 0, neither = 0, both = 0, lost = 0, no_mail = 0;
    for (int round = 0; round < n; round++) {
        char cmd[1024];
        int kind = round % 3;
        if (kind == 0) { /* create */
            char email[64];
            snprintf(email, sizeof email, "c%d@x.org", round);
            snprintf(cmd, sizeof cmd,
                     "PICL_PASSWORD=crashpw-%d $P --state c%d -q account create --server %s --email %s",
                     round, round, T.url, email);
            int rc = run_killed(delay(), cmd);
            creates++;
            create_acked += rc == 0;
            /* the same create again: done now, or refused because it exists */
            int again =
                run(NULL, 0,
                    "PICL_PASSWORD=crashpw-%d $P --state c%dx -q account create --server %s --email %s "
                    ">/dev/null 2>&1",
                    round, round, T.url, email);
            ck_assert_msg(again == 0 || again == 3, "round %d: create again: exit %d", round, again);
            if (rc == 0 && again == 0) {
                fprintf(stderr, "round %d: acknowledged account %s was lost\n", round, email);
                lost++;
            }
            /* it exists now, complete: its password works and it can be
             * verified -- from the mail, or from one asked for again */
            char pw[32];
            snprintf(pw, sizeof pw, "crashpw-%d", round);
            if (!signs_in(email, pw)) {
                fprintf(stderr, "round %d: account %s refuses its password\n", round, email);
                half++;
                continue;
            }
            if (!mail(email, "X-Verify-Code", code, sizeof code)) {
                /* killed between the account's commit and its mail: the
                 * outbox row committed with it must have been delivered by
                 * the restart, without anyone asking again */
                fprintf(stderr, "round %d: account %s has no verification mail\n", round, email);
                no_mail++;
                half++;
                continue;
            }
            /* signed in (state chk): the mailed code verifies it */
            ck_assert_int_eq(run(NULL, 0, "$P --state chk -q account verify --code %s >/dev/null 2>&1", code),
                             0);
            continue;
        }
        snprintf(next, sizeof next, "password-%d", round);
        int rc;
        if (kind == 1) { /* change */
            ck_assert_int_eq(run(NULL, 0,
                                 "rm -rf sa && PICL_PASSWORD=%s $P --state sa -q login --server %s "
                                 "--email a@x.org",
                                 cur, T.url),
                             0);
            snprintf(cmd, sizeof cmd,
                     "PICL_PASSWORD=%s PICL_NEW_PASSWORD=%s $P --state sa -q password change", cur, next);
            rc = run_killed(delay(), cmd);
            changes++;
            change_acked += rc == 0;
        } else { /* reset */
            ck_assert_int_eq(run(NULL, 0,
                                 "rm -rf sr && $P --state sr -q password forgot --server %s --email a@x.org",
                                 T.url),
                             0);
            ck_assert(mail("a@x.org", "X-Recovery-Code", code, sizeof code));
            snprintf(cmd, sizeof cmd, "PICL_NEW_PASSWORD=%s $P --state sr -q password reset --code %s", next,
                     code);
            rc = run_killed(delay(), cmd);
            resets++;
            reset_acked += rc == 0;
        }
        int old_ok = signs_in("a@x.org", cur), new_ok = signs_in("a@x.org", next);
        neither += !old_ok && !new_ok;
        both += old_ok && new_ok;
        ck_assert_msg(old_ok != new_ok, "round %d (%s): old password %s, new password %s", round,
                      kind == 1 ? "change" : "reset", old_ok ? "works" : "refused",
                      new_ok ? "works" : "refused");
        if (rc == 0 && !new_ok) {
            fprintf(stderr, "round %d: acknowledged %s lost\n", round, kind == 1 ? "change" : "reset");
            lost++;
        }
        if (new_ok)
            snprintf(cur, sizeof cur, "%s", next);
    }
    fprintf(
        stderr,
        "crash sweep keyserver (%s): %d rounds; %d creates (%d acknowledged), %d changes (%d acknowledged), "
        "%d resets (%d acknowledged); %d lost, %d half-made accounts (%d without their mail), "
        "%d with neither password, %d with both\n",
        pgurl[0] ? "postgresql" : "sqlite", n, creates, create_acked, changes, change_acked, resets,
        reset_acked, lost, half, no_mail, neither, both);
    ck_assert_int_eq(lost, 0);
    ck_assert_int_eq(half, 0);
    ck_assert_int_eq(neither + both, 0);
    /* every mail of the outbox delivered */
    ck_assert_int_eq(db_int("SELECT count(*) FROM outbox"), 0);
    ks_kill();
    if (pgurl[0])
        return;
    /* the database is sound after all those kills */
    char db[128];
    snprintf(db, sizeof db, "%s/data/keyserver.db", T.dir);
    sqlite3 *c = NULL;
    sqlite3_stmt *q = NULL;
    ck_assert_int_eq(sqlite3_open_v2(db, &c, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(c, "PRAGMA integrity_check", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 0), "ok");
    sqlite3_finalize(q);
    sqlite3_close(c);
}
END_TEST

/* Mails to `to` in the Maildir. */
static int mail_count(const char *to)
{
    char buf[64];
    run(buf, sizeof buf, "grep -l '^To: %s' data/mail/new/* 2>/dev/null | wc -l", to);
    return (int)strtol(buf, NULL, 10);
}

START_TEST(test_kill_between_commit_and_mail)
{
    static const char *const points[] = {"ks-create-committed", "ks-create-mailed"};
    for (int i = 0; i < 2; i++) {
        char email[64], code[128], pw[32];
        snprintf(email, sizeof email, "m%d@x.org", i);
        snprintf(pw, sizeof pw, "mailpw-%d", i);
        crash_at = points[i];
        ks_start();
        crash_at = NULL;
        long long accounts = db_int("SELECT count(*) FROM accounts");
        int rc = run(NULL, 0,
                     "PICL_PASSWORD=%s $P --state m%d -q account create --server %s --email %s "
                     ">/dev/null 2>&1",
                     pw, i, T.url, email);
        /* the keyserver died at that point (SIGKILL), the answer with it */
        int st = 0;
        pid_t w = 0;
        for (int t = 0; t < 500 && (w = waitpid(ks, &st, WNOHANG)) == 0; t++)
            usleep(20000);
        ck_assert_msg(w == ks, "%s: the keyserver is still running (no such crash point)", points[i]);
        ks = -1;
        ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: the keyserver did not die there",
                      points[i]);
        ck_assert_int_eq(rc, 4);
        /* dead: the account and its mail's row were committed together */
        ck_assert_int_eq(db_int("SELECT count(*) FROM accounts"), accounts + 1);
        ck_assert_int_eq(db_int("SELECT count(*) FROM outbox"), 1);
        ck_assert_int_eq(mail_count(email), i); /* sent only at the second point */
        /* restarted: the mail is delivered before it answers (once more
         * after the second point: delivery is at least once) */
        ks_start();
        ck_assert_int_eq(db_int("SELECT count(*) FROM outbox"), 0);
        ck_assert_int_eq(mail_count(email), i + 1);
        ck_assert(mail(email, "X-Verify-Code", code, sizeof code));
        /* the account is complete: the password works, the code verifies it */
        ck_assert(signs_in(email, pw));
        ck_assert_int_eq(run(NULL, 0, "$P --state chk -q account verify --code %s >/dev/null 2>&1", code), 0);
        ck_assert_int_eq(db_int("SELECT count(*) FROM accounts WHERE verified = 1"), i + 1);
        ks_kill();
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("crash_keyserver");
    TCase *tc = tcase_create("kill9");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_kill_between_commit_and_mail);
    tcase_add_test(tc, test_kill_during_account_changes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
