/* SPDX-License-Identifier: MPL-2.0 */
/* testutil_profile.c -- real Firefox profiles and lock holders for the store tests. */
#include "testutil_profile.h"
#include "testutil.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* system() for exit hooks, where Check's asserts may no longer be used. */
static void quiet_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void quiet_sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof cmd && system(cmd) == -1)
        return;
}

static char tmp_slots[8][64];
static unsigned tmp_next;

/* Profiles are ~10 MB each: removed when the (forked) test process exits,
 * unless PICL_KEEP_TMP is set (to look at them after a failure). */
static void tmp_cleanup(void)
{
    const char *keep = getenv("PICL_KEEP_TMP");
    if (keep && *keep && strcmp(keep, "0") != 0)
        return;
    for (unsigned i = 0; i < tmp_next && i < 8; i++)
        if (strncmp(tmp_slots[i], "/tmp/picl-prof-", 15) == 0 && !strchr(tmp_slots[i], '\''))
            quiet_sh("rm -rf '%s' '%s'.*", tmp_slots[i], tmp_slots[i]);
}

const char *tup_tmpdir(void)
{
    ck_assert_msg(tmp_next < 8, "at most 8 temporary directories per test");
    if (tmp_next == 0)
        atexit(tmp_cleanup);
    char *d = tmp_slots[tmp_next++];
    snprintf(d, sizeof tmp_slots[0], "/tmp/picl-prof-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d));
    return d;
}

/* The source tree: $PICL_SRCDIR, else two levels above this file. */
static const char *srcdir(void)
{
    static char buf[PATH_MAX];
    const char *e = getenv("PICL_SRCDIR");
    if (e && *e)
        return e;
    char file[PATH_MAX];
    if (!realpath(__FILE__, file))
        return ".";
    char *s = strstr(file, "/tests/unit/");
    if (!s)
        return ".";
    *s = '\0';
    snprintf(buf, sizeof buf, "%s", file);
    return buf;
}

int tup_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert(n > 0 && (size_t)n < sizeof cmd);
    int r = system(cmd);
    if (r == -1 || !WIFEXITED(r))
        return -1;
    return WEXITSTATUS(r);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* One real profile per primary password is made per test binary and copied:
 * the browser runs once, not once per test.  The copies are removed by the
 * main process at exit (forked test processes inherit, but skip, the hook). */
static pid_t main_pid;

static void templates_cleanup(void)
{
    const char *keep = getenv("PICL_KEEP_TMP");
    if (getpid() != main_pid || (keep && *keep && strcmp(keep, "0") != 0))
        return;
    quiet_sh("rm -rf /tmp/picl-tpl-%ld-*", (long)main_pid);
}

__attribute__((constructor)) static void templates_init(void)
{
    main_pid = getpid();
    atexit(templates_cleanup);
}

static int dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int empty = 1;
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            empty = 0;
    if (d)
        closedir(d);
    return empty;
}

static void make_profile_now(const char *dir, const char *primary);

void tup_make_profile(const char *dir, const char *primary)
{
    if (!dir_is_empty(dir) || (primary && strchr(primary, '\''))) {
        make_profile_now(dir, primary); /* Firefox on an existing profile */
        return;
    }
    char tpl[PATH_MAX], done[PATH_MAX + 8];
    uint64_t tag = fnv(0xcbf29ce484222325ULL, primary ? primary : "", primary ? strlen(primary) + 1 : 0);
    snprintf(tpl, sizeof tpl, "/tmp/picl-tpl-%ld-%016llx", (long)main_pid, (unsigned long long)tag);
    snprintf(done, sizeof done, "%s.done", tpl);
    if (access(done, F_OK) != 0) {
        tup_sh("rm -rf '%s' && mkdir -p '%s'", tpl, tpl);
        make_profile_now(tpl, primary);
        ck_assert_int_eq(tup_sh("touch '%s'", done), 0);
    }
    ck_assert_int_eq(tup_sh("cp -a '%s/.' '%s/'", tpl, dir), 0);
}

static void make_profile_now(const char *dir, const char *primary)
{
    int r = tup_sh("'%s/tests/make-profile.sh' '%s' %s%s%s >'%s.log' 2>&1", srcdir(), dir, primary ? "'" : "",
                   primary ? primary : "", primary ? "'" : "", dir);
    if (r != 0)
        tup_sh("cat '%s.log' >&2", dir);
    ck_assert_msg(r == 0, "make-profile.sh %s failed (exit %d): is firefox-esr installed?", dir, r);
}

void tup_remove_login(const char *dir, const char *user)
{
    ck_assert_msg(!strchr(user, '\''), "no quotes in a user name");
    int r = tup_sh("'%s/tests/make-profile.sh' --edit '%s' remove-login '%s' >'%s.editlog' 2>&1", srcdir(),
                   dir, user, dir);
    if (r != 0)
        tup_sh("cat '%s.editlog' >&2", dir);
    ck_assert_msg(r == 0, "make-profile.sh --edit %s remove-login %s failed (exit %d)", dir, user, r);
}

json_t *tup_dump_profile(const char *dir) { return tup_dump_profile_pw(dir, NULL); }

json_t *tup_dump_profile_pw(const char *dir, const char *pw)
{
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s.dump.json", dir);
    int r = tup_sh("'%s/tests/make-profile.sh' --dump '%s' '%s' %s%s%s >'%s.dumplog' 2>&1", srcdir(), dir,
                   out, pw ? "'" : "", pw ? pw : "", pw ? "'" : "", dir);
    if (r != 0)
        tup_sh("cat '%s.dumplog' >&2", dir);
    ck_assert_msg(r == 0, "make-profile.sh --dump %s failed (exit %d)", dir, r);
    json_error_t e;
    json_t *j = json_load_file(out, 0, &e);
    ck_assert_msg(j != NULL, "dump %s: %s", out, e.text);
    return j;
}

static int cmpstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

uint64_t tup_dir_digest(const char *dir)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    DIR *d = opendir(dir);
    if (!d)
        return fnv(h, "missing", 7);
    char *names[512];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 512)
        names[n++] = strdup(de->d_name);
    closedir(d);
    qsort(names, n, sizeof names[0], cmpstr);
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        h = fnv(h, names[i], strlen(names[i]) + 1);
        if (lstat(path, &st) == 0) {
            uint64_t meta[2] = {(uint64_t)st.st_size, (uint64_t)st.st_mode};
            h = fnv(h, meta, sizeof meta);
            if (S_ISREG(st.st_mode)) {
                FILE *f = fopen(path, "rb");
                char buf[65536];
                size_t got;
                while (f && (got = fread(buf, 1, sizeof buf, f)) > 0)
                    h = fnv(h, buf, got);
                if (f)
                    fclose(f);
            }
        }
        free(names[i]);
    }
    return h;
}

pid_t tup_hold_lock(const char *dir)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/.parentlock", dir);
        int fd = open(path, O_RDWR | O_CREAT, 0644);
        struct flock fl;
        memset(&fl, 0, sizeof fl);
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        char ok = (fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0) ? 'y' : 'n';
        if (write(p[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(p[1]);
    char ok = 0;
    ck_assert_int_eq(read(p[0], &ok, 1), 1);
    close(p[0]);
    ck_assert_int_eq(ok, 'y');
    return pid;
}

void tup_release_lock(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

json_t *tup_find(const json_t *a, const char *k, const char *v)
{
    size_t i;
    json_t *e;
    json_array_foreach (a, i, e) {
        const char *s = json_string_value(json_object_get(e, k));
        if (s && strcmp(s, v) == 0)
            return e;
    }
    return NULL;
}

json_t *tup_all(picl_store *s)
{
    json_t *a = NULL;
    ck_assert_msg(picl__store_all(s, &a) == PICL_OK, "%s", picl__store_error(s));
    return a;
}

json_t *tup_changes(picl_store *s)
{
    json_t *a = NULL;
    ck_assert_msg(picl__store_changes(s, &a) == PICL_OK, "%s", picl__store_error(s));
    return a;
}

void tup_apply_ok(picl_store *s, const char *json)
{
    json_error_t e;
    json_t *r = json_loads(json, 0, &e);
    ck_assert_msg(r != NULL, "test JSON: %s", e.text);
    picl_status st = picl__store_apply(s, r);
    ck_assert_msg(st == PICL_OK, "apply: %d %s", st, picl__store_error(s));
    json_decref(r);
}
