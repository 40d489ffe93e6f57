/* SPDX-License-Identifier: MPL-2.0 */
/* test_quickstart.c -- the README's "Quick start from the shell", run as
 * written: its build/picl lines are read out of README (so a README that
 * drifts from the program fails here) and run in a scratch HOME without
 * ~/.local, against a profile made by Firefox at the path the README names;
 * the man page's EXAMPLES must be the same sequence of commands. */
#include "testutil.h"
#include "testutil_cli.h"
#include "testutil_profile.h"

#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXL 32

typedef struct lines {
    char v[MAXL][512];
    int n;
} lines;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    static char buf[1 << 17];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

/* The "    build/picl ..." lines of the README's quick start, without their
 * comments and a trailing "&". */
static void readme_commands(const char *src, lines *out)
{
    char path[600];
    snprintf(path, sizeof path, "%s/README", src);
    char *text = slurp(path);
    char *sec = strstr(text, "Quick start from the shell\n");
    ck_assert_msg(sec != NULL, "README has no 'Quick start from the shell' section");
    char *end = strstr(sec, "\n\n\n");
    char *p = strstr(sec, "\n    ");
    out->n = 0;
    /* the indented block right under the title */
    for (char *line = p + 1; line && (!end || line < end) && !strncmp(line, "    ", 4);) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char one[512];
        snprintf(one, sizeof one, "%.*s", (int)(len - 4), line + 4);
        char *hash = strstr(one, "  #");
        if (hash)
            *hash = 0;
        size_t l = strlen(one);
        while (l && one[l - 1] == ' ')
            one[--l] = 0;
        if (!strncmp(one, "build/picl ", 11)) {
            ck_assert_int_lt(out->n, MAXL);
            snprintf(out->v[out->n++], sizeof out->v[0], "%s", one + 6); /* from "picl " */
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
}

/* The first two words after "picl" of each command (e.g. "account create"). */
static void verbs(const lines *l, char *out, size_t cap)
{
    out[0] = 0;
    for (int i = 0; i < l->n; i++) {
        char w1[64] = "", w2[64] = "";
        sscanf(l->v[i], "picl %63s %63s", w1, w2);
        if (!strcmp(w1, "help"))
            continue;
        size_t n = strlen(out);
        int sub = w2[0] && w2[0] != '-';
        snprintf(out + n, cap - n, "%s%s%s;", w1, sub ? " " : "", sub ? w2 : "");
    }
}

START_TEST(test_readme_quick_start)
{
    const char *s = getenv("PICL_SRCDIR"), *b = getenv("PICL_BUILD");
    char src[512], picl[600];
    snprintf(src, sizeof src, "%s", s && *s ? s : ".");
    snprintf(picl, sizeof picl, "%s/picl", b && *b ? b : "build");
    lines cmds;
    readme_commands(src, &cmds);
    ck_assert_msg(cmds.n >= 6, "README quick start has %d build/picl lines", cmds.n);
    ck_assert_msg(!strncmp(cmds.v[0], "picl server ", 12), "the quick start starts with picl server: %s",
                  cmds.v[0]);

    /* a HOME with nothing in it: no ~/.local, no XDG_DATA_HOME */
    char home[] = "/tmp/picl-qs-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(home));
    char env[2048];
    snprintf(env, sizeof env,
             "cd %s && unset XDG_DATA_HOME && export HOME=%s PICL_TEST_STRETCH_FLOOR=cheap "
             "PICL_PASSWORD='correct horse battery' && ",
             home, home);
    /* the binary is called as build/picl, as in the README */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/build && ln -s %s %s/build/picl", home, picl, home);
    ck_assert_int_eq(tup_sh("%s", cmd), 0);
    /* a free port instead of 8000 */
    unsigned port = 0;
    {
        tucli probe;
        tucli_start(&probe);
        sscanf(probe.url, "http://127.0.0.1:%u", &port);
        tucli_stop(&probe); /* its port is free again */
    }
    ck_assert_uint_gt(port, 0);
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%u", port);
    /* the profile the README names, made by Firefox */
    const char *pword = NULL;
    for (int i = 0; i < cmds.n; i++)
        if ((pword = strstr(cmds.v[i], "--profile ")))
            break;
    ck_assert_ptr_nonnull(pword);
    char profile[512];
    sscanf(pword + 10, "%511s", profile);
    ck_assert_msg(!strncmp(profile, "~/", 2), "the README's profile is under ~: %s", profile);
    ck_assert_int_eq(tup_sh("%s mkdir -p \"$(dirname %s)\" && %s/tests/make-profile.sh %s >/dev/null 2>&1",
                            env, profile, src, profile),
                     0);

    pid_t server = 0;
    char out[16384];
    int verified_keys = 0;
    for (int i = 0; i < cmds.n; i++) {
        /* the line as written; only the port and the mailed CODE change */
        char line[1024] = "";
        size_t q = 0;
        for (const char *c = cmds.v[i]; *c && q < sizeof line - 1;) {
            int w;
            if (!strncmp(c, "8000", 4)) {
                w = snprintf(line + q, sizeof line - q, "%s", portstr);
                c += 4;
            } else if (!strncmp(c, "CODE", 4)) {
                w = snprintf(line + q, sizeof line - q,
                             "$(grep -h '^X-Verify-Code:' ~/picl-data/mail/new/* | tail -1 | cut -d' ' -f2 | "
                             "tr -d '\\r')");
                c += 4;
            } else {
                line[q] = *c++;
                w = 1;
            }
            ck_assert_msg(w > 0 && (size_t)w < sizeof line - q, "README line too long: %s", cmds.v[i]);
            q += (size_t)w;
        }
        line[q] = 0;
        size_t l = strlen(line);
        if (l && line[l - 1] == '&') {
            line[l - 1] = 0;
            snprintf(cmd, sizeof cmd, "%s { build/%s > server.out 2>&1 < /dev/null & echo $!; }", env, line);
            FILE *p = popen(cmd, "r");
            ck_assert_ptr_nonnull(p);
            ck_assert(fscanf(p, "%d", &server) == 1);
            pclose(p);
            for (int k = 0; k < 100; k++) {
                if (tup_sh("grep -q 'listening on' %s/server.out", home) == 0)
                    break;
                usleep(100000);
            }
            snprintf(cmd, sizeof cmd, "%s/server.out", home);
            char *banner = slurp(cmd);
            char want[128];
            /* the banner names the URL to pass to --server */
            snprintf(want, sizeof want, "--server http://127.0.0.1:%u;", port);
            ck_assert_msg(strstr(banner, want) != NULL, "server banner: %s", banner);
            free(banner);
            continue;
        }
        snprintf(cmd, sizeof cmd, "%s build/%s 2>&1", env, line);
        FILE *p = popen(cmd, "r");
        ck_assert_ptr_nonnull(p);
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = 0;
        int st = pclose(p);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "README step '%s' failed (exit %d):\n%s",
                      cmds.v[i], WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
        if (strstr(line, "account verify"))
            verified_keys = strstr(out, "kA and kB are on this device") != NULL;
        if (strstr(line, "sync --profile"))
            ck_assert_msg(strstr(out, "bookmarks") && strstr(out, "uploaded"), "sync printed: %s", out);
        if (!strcmp(line, "picl status")) {
            ck_assert_msg(strstr(out, "signed in as me@example.org") != NULL, "%s", out);
            ck_assert_ptr_nonnull(strstr(out, "verified"));
            ck_assert_ptr_null(strstr(out, "NOT verified"));
        }
    }
    ck_assert_msg(verified_keys, "account verify did not fetch the keys without a second password");
    /* the state went where the README says, created 0700 */
    struct stat sb;
    snprintf(cmd, sizeof cmd, "%s/.local/share/picl/state.json", home);
    ck_assert_int_eq(stat(cmd, &sb), 0);
    snprintf(cmd, sizeof cmd, "%s/.local/share/picl", home);
    ck_assert_int_eq(stat(cmd, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0700);
    /* final state: signed in, verified, both keys, bookmarks in class B */
    snprintf(cmd, sizeof cmd, "%s build/picl status --json", env);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    pclose(p);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_msg(j != NULL, "status --json: %s", out);
    ck_assert(json_is_true(json_object_get(j, "signedIn")));
    ck_assert(json_is_true(json_object_get(j, "verified")));
    ck_assert(json_is_true(json_object_get(j, "hasKeys")));
    ck_assert_str_eq(json_string_value(json_object_get(j, "email")), "me@example.org");
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(j, "kB_fp"))), 32);
    json_decref(j);
    snprintf(cmd, sizeof cmd, "%s build/picl class get bookmarks", env);
    p = popen(cmd, "r");
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    pclose(p);
    ck_assert_str_eq(out, "B\n");
    if (server > 0) {
        kill(server, SIGTERM);
        waitpid(server, NULL, 0);
    }
    ck_assert_int_eq(tup_sh("rm -rf %s", home), 0);
}
END_TEST

/* docs/picl.1's EXAMPLES: the same commands in the same order as README. */
START_TEST(test_man_page_example_matches)
{
    const char *s = getenv("PICL_SRCDIR");
    char src[512], path[600];
    snprintf(src, sizeof src, "%s", s && *s ? s : ".");
    lines readme, man;
    readme_commands(src, &readme);
    snprintf(path, sizeof path, "%s/docs/picl.1", src);
    char *text = slurp(path);
    char *ex = strstr(text, ".SH EXAMPLES\n.nf\n");
    ck_assert_ptr_nonnull(ex);
    man.n = 0;
    for (char *line = ex + 17; line && strncmp(line, ".fi", 3);) {
        char *nl = strchr(line, '\n');
        char one[512], *o = one;
        for (char *c = line; c < (nl ? nl : line + strlen(line)) && o < one + sizeof one - 1; c++)
            if (*c != '\\') /* groff escapes: \- is - */
                *o++ = *c;
        *o = 0;
        if (!strncmp(one, "picl ", 5) && man.n < MAXL)
            snprintf(man.v[man.n++], sizeof man.v[0], "%s", one);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    char a[1024], m[1024];
    verbs(&readme, a, sizeof a);
    verbs(&man, m, sizeof m);
    ck_assert_str_eq(m, a);
    ck_assert_str_eq(a, "server;account create;account verify;sync;class set;status;");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("quickstart");
    TCase *tc = tcase_create("quickstart");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_readme_quick_start);
    tcase_add_test(tc, test_man_page_example_matches);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
