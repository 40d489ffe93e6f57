/* SPDX-License-Identifier: MPL-2.0 */
/* test_store_profile.c -- profile directories: missing, not a profile,
 * locked by a running Firefox (the fcntl lock, not the stale symlink). */
#include "testutil.h"
#include "testutil_profile.h"
#include "stores/profile.h"
#include "stores/places.h"
#include "stores/logins.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(test_missing_dir)
{
    picl_profile *p = (picl_profile *)1;
    char err[256];
    ck_assert_int_eq(picl__profile_open("/nonexistent/picl/profile", &p, err, sizeof err),
                     PICL_ERROR_NOT_FOUND);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(err, "does not exist"));
    ck_assert_int_eq(picl__profile_open("", &p, err, sizeof err), PICL_ERROR_INVALID_ARGUMENT);
    /* a regular file is not a directory */
    ck_assert_int_eq(picl__profile_open("/etc/hostname", &p, NULL, 0), PICL_ERROR_NOT_FOUND);
}
END_TEST

START_TEST(test_not_a_profile)
{
    const char *d = tup_tmpdir();
    tup_sh("echo hello > '%s/notes.txt'", d);
    uint64_t before = tup_dir_digest(d);
    picl_profile *p = NULL;
    char err[256];
    ck_assert_int_eq(picl__profile_open(d, &p, err, sizeof err), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(err, "not a Firefox profile"));
    ck_assert(tup_dir_digest(d) == before); /* no .parentlock created */
}
END_TEST

/* 1 when another program (a fresh process, as Firefox would be) cannot take
 * the fcntl lock of d/.parentlock; Python's lockf() is fcntl(F_SETLK). */
static int locked_elsewhere(const char *d)
{
    int r = tup_sh("python3 -c 'import fcntl,os,sys; os.path.exists(sys.argv[1]) or sys.exit(0); "
                   "f=open(sys.argv[1],\"r+\"); "
                   "fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)' '%s/.parentlock' 2>/dev/null",
                   d);
    ck_assert(r == 0 || r == 1);
    return r == 1;
}

START_TEST(test_real_profile_opens_and_locks)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    ck_assert_int_eq(picl__profile_check_unlocked(d), PICL_OK);
    picl_profile *p = NULL;
    char err[256];
    ck_assert_int_eq(picl__profile_open(d, &p, err, sizeof err), PICL_OK);
    ck_assert_str_eq(picl__profile_dir(p), d);
    char path[PATH_MAX];
    ck_assert_int_eq(picl__profile_path(p, "places.sqlite", path, sizeof path), PICL_OK);
    ck_assert_int_eq(access(path, R_OK), 0);
    char small[8];
    ck_assert_int_eq(picl__profile_path(p, "places.sqlite", small, sizeof small), PICL_ERROR_TOO_LARGE);
    /* while we hold it, another process sees the profile in use */
    ck_assert_int_eq(locked_elsewhere(d), 1);
    /* a second handle shares the lock; closing one keeps it */
    picl_profile *q = NULL;
    ck_assert_int_eq(picl__profile_open(d, &q, NULL, 0), PICL_OK);
    ck_assert_int_eq(picl__profile_check_unlocked(d), PICL_OK); /* ours does not count */
    picl__profile_close(q);
    ck_assert_msg(locked_elsewhere(d) == 1, "closing one handle dropped the lock");
    picl__profile_close(p);
    ck_assert_msg(locked_elsewhere(d) == 0, "the last close kept the lock");
    char lockpath[PATH_MAX];
    snprintf(lockpath, sizeof lockpath, "%s/.parentlock", d);
    ck_assert_int_eq(access(lockpath, F_OK), -1); /* we made it, we removed it */
    picl__profile_close(NULL);
}
END_TEST

START_TEST(test_locked_by_running_firefox)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    pid_t holder = tup_hold_lock(d);
    /* what a running Firefox leaves: the symlink too */
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/lock", d);
    ck_assert_int_eq(symlink("127.0.0.1:+4242", link), 0);
    uint64_t before = tup_dir_digest(d);
    picl_profile *p = NULL;
    char err[256];
    ck_assert_int_eq(picl__profile_open(d, &p, err, sizeof err), PICL_ERROR_PROFILE_LOCKED);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(err, "running"));
    ck_assert_int_eq(picl__profile_check_unlocked(d), PICL_ERROR_PROFILE_LOCKED);
    ck_assert(tup_dir_digest(d) == before);
    /* the browser quits: the symlink stays behind, stale; the profile is free */
    tup_release_lock(holder);
    ck_assert_int_eq(picl__profile_check_unlocked(d), PICL_OK);
    ck_assert_int_eq(picl__profile_open(d, &p, err, sizeof err), PICL_OK);
    picl__profile_close(p);
}
END_TEST

START_TEST(test_stale_symlink_only)
{
    const char *d = tup_tmpdir();
    tup_sh("touch '%s/prefs.js' && ln -s 127.0.0.1:+99999 '%s/lock'", d, d);
    picl_profile *p = NULL;
    ck_assert_int_eq(picl__profile_open(d, &p, NULL, 0), PICL_OK);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.parentlock", d);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0); /* created, as Firefox does */
    picl__profile_close(p);
}
END_TEST

/* The real browser, headless, on the profile: every store refuses it; killed
 * hard, it leaves a stale `lock` symlink that must not count. */
START_TEST(test_locked_by_real_firefox)
{
    const char *d = tup_tmpdir();
    tup_make_profile(d, NULL);
    pid_t ff = fork();
    ck_assert(ff >= 0);
    if (ff == 0) {
        setsid(); /* its own process group, so the test can stop all of it */
        setenv("MOZ_CRASHREPORTER_DISABLE", "1", 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execlp("timeout", "timeout", "60", "firefox-esr", "--headless", "--no-remote", "--profile", d,
               "about:blank", (char *)NULL);
        _exit(127);
    }
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/lock", d);
    struct stat st;
    int up = 0;
    for (int i = 0; i < 200 && !up; i++) { /* at most 20 s */
        up = lstat(link, &st) == 0 && locked_elsewhere(d);
        if (!up)
            usleep(100000);
    }
    int ws;
    if (!up) {
        killpg(ff, SIGKILL);
        waitpid(ff, &ws, 0);
    }
    ck_assert_msg(up, "firefox-esr --headless did not lock the profile");
    picl_profile *p = NULL;
    char err[256];
    ck_assert_int_eq(picl__profile_open(d, &p, err, sizeof err), PICL_ERROR_PROFILE_LOCKED);
    picl_store *s = NULL;
    ck_assert_int_eq(picl__places_open(&s, d, "bookmarks", err, sizeof err), PICL_ERROR_PROFILE_LOCKED);
    ck_assert_int_eq(picl__places_open(&s, d, "history", err, sizeof err), PICL_ERROR_PROFILE_LOCKED);
    ck_assert_int_eq(picl__logins_open(&s, d, "/tmp", NULL, NULL, err, sizeof err),
                     PICL_ERROR_PROFILE_LOCKED);
    ck_assert_ptr_null(s);
    /* a crash: the kernel drops the fcntl lock, the symlink stays */
    killpg(ff, SIGKILL);
    waitpid(ff, &ws, 0);
    for (int i = 0; i < 100 && locked_elsewhere(d); i++) /* the browser itself is reaped by init */
        usleep(100000);
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_int_eq(picl__profile_open(d, &p, err, sizeof err), PICL_OK);
    picl__profile_close(p);
    ck_assert_int_eq(picl__places_open(&s, d, "bookmarks", err, sizeof err), PICL_OK);
    picl__store_close(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("store_profile");
    TCase *t = tcase_create("profile");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_missing_dir);
    tcase_add_test(t, test_not_a_profile);
    tcase_add_test(t, test_real_profile_opens_and_locks);
    tcase_add_test(t, test_locked_by_running_firefox);
    tcase_add_test(t, test_stale_symlink_only);
    tcase_add_test(t, test_locked_by_real_firefox);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(suite()); }
