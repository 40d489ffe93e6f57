/* SPDX-License-Identifier: MPL-2.0 */
/* test_cli.c -- the picl command as a person uses it: picl server, account
 * life cycle from the Maildir, two state directories with the same key
 * fingerprints, a reset that changes kB_fp only, sync of JSON files, classes,
 * --help, usage errors and exit codes, passwords never from argv. */
#include "testutil.h"
#include "testutil_cli.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static tucli T;
#define dir (T.dir)
#define url (T.url)
#define picl (T.picl)

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "", __VA_ARGS__)

static void setup(void) { tucli_start(&T); }

static void teardown(void) { tucli_stop(&T); }

/* The newest code of a header mailed to `to`. */
static void mail_code(const char *to, const char *header, char *out, size_t cap)
{
    char buf[4096];
    run(buf, sizeof buf,
        "grep -l '^To: %s' data/mail/new/* | xargs ls -t | head -1 | xargs grep -h '^%s:' | tr -d '\\r'", to,
        header);
    char *v = strchr(buf, ':');
    ck_assert_ptr_nonnull(v);
    snprintf(out, cap, "%s", v + 2);
    out[strcspn(out, "\n")] = 0;
}

static json_t *status_json(const char *state)
{
    char out[4096];
    ck_assert_int_eq(run(out, sizeof out, "PICL_PASSWORD=x %s --state %s status --json", picl, state), 0);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_msg(j != NULL, "status --json printed %s", out);
    return j;
}

START_TEST(test_story)
{
    char out[8192], code[128];
    ck_assert_int_eq(
        run(out, sizeof out,
            "PICL_PASSWORD='password 1' %s --state s1 account create --server %s --email u@x.org", picl, url),
        0);
    ck_assert_ptr_nonnull(strstr(out, "account created"));
    /* a second create of the same email: an authentication-class failure */
    ck_assert_int_eq(
        run(NULL, 0,
            "PICL_PASSWORD=password1 %s --state s0 account create --server %s --email u@x.org 2>/dev/null",
            picl, url),
        3);
    mail_code("u@x.org", "X-Verify-Code", code, sizeof code);
    ck_assert_uint_eq(strlen(code), 64);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 account verify --code %s", picl, code), 0);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=wrong %s --state s1 login --email u@x.org 2>/dev/null", picl), 3);
    ck_assert_int_eq(
        run(NULL, 0,
            "echo 'password 1' > pwfile && %s --state s1 login --email u@x.org --password-file pwfile", picl),
        0);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD='password 1' %s --state s2 login --server %s --email u@x.org", picl, url),
        0);
    json_t *a = status_json("s1"), *b = status_json("s2");
    ck_assert(json_is_true(json_object_get(a, "verified")));
    ck_assert_str_eq(json_string_value(json_object_get(a, "uid")),
                     json_string_value(json_object_get(b, "uid")));
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(a, "kA_fp"))), 32);
    ck_assert_str_eq(json_string_value(json_object_get(a, "kA_fp")),
                     json_string_value(json_object_get(b, "kA_fp")));
    ck_assert_str_eq(json_string_value(json_object_get(a, "kB_fp")),
                     json_string_value(json_object_get(b, "kB_fp")));

    /* sync JSON files between the two state directories */
    ck_assert_int_eq(run(NULL, 0,
                         "mkdir f1 f2 && echo '[{\"id\":\"abcdefghijkl\",\"hostname\":\"https://a.org\","
                         "\"password\":\"pw\",\"timePasswordChanged\":1}]' > f1/passwords.json"),
                     0);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 sync --store-dir f1 --json", picl), 0);
    json_t *sum = json_loads(out, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(sum, "collections"), "passwords"), "uploaded")),
                     1);
    json_decref(sum);
    ck_assert_int_eq(
        run(NULL, 0, "%s --state s2 sync --store-dir f2 --collections passwords,bookmarks -q", picl), 0);
    ck_assert_int_eq(run(NULL, 0,
                         "python3 -c 'import json,sys; sys.exit(json.load(open(\"f1/passwords.json\")) != "
                         "json.load(open(\"f2/passwords.json\")))'"),
                     0);
    /* classes */
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 class get passwords", picl), 0);
    ck_assert_str_eq(out, "B\n");
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 class set passwords A", picl), 0);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s2 class get passwords", picl), 0);
    ck_assert_str_eq(out, "A\n");
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 class set passwords C 2>/dev/null", picl), 2);

    /* forgotten password: kB_fp changes, kA_fp does not */
    ck_assert_int_eq(run(NULL, 0, "%s --state s2 password forgot --server %s --email u@x.org", picl, url), 0);
    mail_code("u@x.org", "X-Recovery-Code", code, sizeof code);
    ck_assert_uint_eq(strlen(code), 8);
    ck_assert_int_eq(
        run(NULL, 0,
            "PICL_NEW_PASSWORD='password 2' %s --state s2 password reset --code 00000000 2>/dev/null", picl),
        3);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_NEW_PASSWORD='password 2' %s --state s2 password reset --code %s", picl, code), 0);
    json_t *c = status_json("s2");
    ck_assert_str_eq(json_string_value(json_object_get(a, "kA_fp")),
                     json_string_value(json_object_get(c, "kA_fp")));
    ck_assert_str_ne(json_string_value(json_object_get(a, "kB_fp")),
                     json_string_value(json_object_get(c, "kB_fp")));
    /* s2 repairs the class map under the new kB; the other device's session
     * ended with the reset, so it cannot follow and must sign in again */
    ck_assert_int_eq(run(out, sizeof out, "%s --state s2 sync --store-dir f2", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "lost by design"));
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 sync --store-dir f1 2>&1", picl), 3);
    ck_assert_ptr_nonnull(strstr(out, "sign in again"));
    /* change password keeps kB */
    ck_assert_int_eq(
        run(NULL, 0,
            "PICL_PASSWORD='password 2' PICL_NEW_PASSWORD='password 3' %s --state s2 password change", picl),
        0);
    json_t *d = status_json("s2");
    ck_assert_str_eq(json_string_value(json_object_get(c, "kB_fp")),
                     json_string_value(json_object_get(d, "kB_fp")));
    ck_assert_int_eq(run(NULL, 0, "%s --state s2 logout", picl), 0);
    json_t *e = status_json("s2");
    ck_assert(json_is_false(json_object_get(e, "signedIn")));
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD='password 3' %s --state s2 login --email u@x.org", picl), 0);
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD='password 3' %s --state s2 account destroy", picl), 0);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD='password 3' %s --state s2 login --email u@x.org 2>/dev/null", picl), 3);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    json_decref(e);
}
END_TEST

/* Kinds of the bookmarks on the server: "A:n"/"B:n" kid prefixes, e.g. "A" when all are class A. */
static void server_kids(char *out, size_t cap)
{
    run(out, cap,
        "sqlite3 data/storage.db \"SELECT payload FROM bsos WHERE coll='bookmarks'\" | "
        "python3 -c 'import json,sys; print(\"\".join(sorted(set(json.loads(l)[\"kid\"][0] for l in "
        "sys.stdin))))'");
    out[strcspn(out, "\n")] = 0;
}

/* A move killed (SIGKILL) at each of its steps, both directions: the next
 * sync finishes it and every record is readable under the right class. */
START_TEST(test_move_killed_at_each_step)
{
    char out[8192], code[128];
    ck_assert_int_eq(
        run(NULL, 0,
            "PICL_PASSWORD=password1 %s --state s1 --quiet account create --server %s --email k@x.org", picl,
            url),
        0);
    mail_code("k@x.org", "X-Verify-Code", code, sizeof code);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 account verify --code %s", picl, code), 0);
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD=password1 %s --state s1 -q login --email k@x.org", picl), 0);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s2 -q login --server %s --email k@x.org", picl, url),
        0);
    ck_assert_int_eq(
        run(NULL, 0,
            "mkdir f1 f2 && python3 -c 'import json; print(json.dumps([{\"id\": \"bm%%09d\" %% i, "
            "\"type\": \"bookmark\", \"parentid\": \"menu\", \"title\": str(i)} "
            "for i in range(30)]))' > f1/bookmarks.json"),
        0);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 -q sync --store-dir f1 --collections bookmarks", picl), 0);
    ck_assert_int_eq(run(NULL, 0, "%s --state s2 -q sync --store-dir f2 --collections bookmarks", picl), 0);
    server_kids(out, sizeof out);
    ck_assert_str_eq(out, "A");
    const char *points[] = {"move-intent", "move-uploaded", "move-map"};
    const char *to = "B";
    for (int round = 0; round < 6; round++, to = strcmp(to, "A") ? "A" : "B") {
        const char *pt = points[round % 3];
        int rc = run(NULL, 0, "PICL_TEST_CRASH_AT=%s %s --state s1 -q class set bookmarks %s", pt, picl, to);
        ck_assert_msg(rc == 128 + SIGKILL, "%s: the process was not killed (exit %d)", pt, rc);
        /* the next sync of the killed device finishes the move */
        ck_assert_int_eq(run(NULL, 0, "%s --state s1 -q sync --store-dir f1 --collections bookmarks", picl),
                         0);
        server_kids(out, sizeof out);
        ck_assert_msg(!strcmp(out, to), "after %s to %s the server holds classes %s", pt, to, out);
        ck_assert_int_eq(run(out, sizeof out, "%s --state s2 class get bookmarks", picl), 0);
        ck_assert_msg(!strncmp(out, to, 1), "device 2 sees class %s, want %s", out, to);
        /* the other device reads every record */
        ck_assert_int_eq(run(NULL, 0, "echo '[]' > f2/bookmarks.json && rm -f f2/.picl-bookmarks.synced"), 0);
        ck_assert_int_eq(run(NULL, 0, "%s --state s2 -q sync --store-dir f2 --collections bookmarks", picl),
                         0);
        ck_assert_int_eq(run(out, sizeof out,
                             "python3 -c 'import json; print(len(json.load(open(\"f2/bookmarks.json\"))))'"),
                         0);
        ck_assert_msg(strtol(out, NULL, 10) == 30, "round %d: device 2 has %s records", round, out);
    }
}
END_TEST

START_TEST(test_usage)
{
    char out[8192];
    ck_assert_int_eq(run(out, sizeof out, "%s --help", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: picl"));
    ck_assert_ptr_nonnull(strstr(out, "exit codes"));
    ck_assert_int_eq(run(out, sizeof out, "%s help sync", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "--store-dir"));
    ck_assert_ptr_null(strstr(out, "account create"));
    ck_assert_int_eq(run(NULL, 0, "%s help nosuch 2>/dev/null", picl), 2);
    ck_assert_int_eq(run(NULL, 0, "%s 2>/dev/null", picl), 2);
    ck_assert_int_eq(run(NULL, 0, "%s frobnicate 2>/dev/null", picl), 2);
    ck_assert_int_eq(run(NULL, 0, "%s --bogus status 2>/dev/null", picl), 2);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s login --email a@b --password hunter2 2>&1", picl), 2);
    ck_assert_ptr_nonnull(strstr(out, "never taken from the command line"));
    ck_assert_int_eq(run(NULL, 0, "%s --state s account 2>/dev/null", picl), 2);
    ck_assert_int_eq(run(NULL, 0, "%s --state s sync 2>/dev/null", picl), 2);
    ck_assert_int_eq(run(NULL, 0, "%s --state s sync --profile /nonexistent 2>/dev/null", picl), 6);
    /* no password and no terminal: a clear usage failure, nothing asked */
    ck_assert_int_eq(run(out, sizeof out,
                         "setsid %s --state s login --server %s --email a@b.org </dev/null 2>&1", picl, url),
                     2);
    ck_assert_ptr_nonnull(strstr(out, "PICL_PASSWORD"));
    /* the server cannot be reached: exit code 4 */
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD=x %s --state s login --server http://127.0.0.1:1 --email a@b.org "
                         "2>/dev/null",
                         picl),
                     4);
}
END_TEST

/* A new user's rough edges: each one a usage error with a clear message, and
 * nothing lost or changed on the way. */
START_TEST(test_friction)
{
    char out[8192], nohooks[600];
    /* each command has its own --help */
    ck_assert_int_eq(run(out, sizeof out, "%s sync --help", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "--store-dir"));
    ck_assert_ptr_null(strstr(out, "account create"));
    /* extra words are refused */
    ck_assert_int_eq(run(out, sizeof out, "%s --state s0 status foo bar 2>&1", picl), 2);
    ck_assert_ptr_nonnull(strstr(out, "unexpected argument 'foo'"));
    ck_assert_int_eq(run(out, sizeof out, "%s --state s0 class get bookmarks extra 2>&1", picl), 2);
    /* an option is never the value of another */
    ck_assert_int_eq(run(out, sizeof out,
                         "PICL_PASSWORD=password1 %s --state s0 login --email --server %s 2>&1", picl, url),
                     2);
    ck_assert_ptr_nonnull(strstr(out, "--email needs a value, not the option --server"));
    ck_assert_int_eq(run(NULL, 0, "test ! -e s0/state.json"), 0);
    /* an argument that starts with "-" (a device id can): the unknown
     * letter is named, and "--" makes it an argument */
    ck_assert_int_eq(
        run(out, sizeof out, "%s --state s0 send-tab -Ab3xY_9kLm0 https://x.example/ 2>&1", picl), 2);
    ck_assert_msg(strstr(out, "unknown option -A (see picl --help; an argument that starts with \"-\", such "
                              "as a device id, goes after \"--\")") != NULL,
                  "said: %s", out);
    ck_assert_int_eq(
        run(out, sizeof out, "%s --state s0 send-tab -- -Ab3xY_9kLm0 https://x.example/ 2>&1", picl), 3);
    ck_assert_ptr_nonnull(strstr(out, "not signed in"));
    ck_assert_int_eq(run(out, sizeof out, "%s --state s0 sync --no-such-option 2>&1", picl), 2);
    ck_assert_ptr_nonnull(strstr(out, "unknown option --no-such-option (see picl --help)"));
    /* weak passwords and non-emails are refused before anything is sent */
    ck_assert_int_eq(run(out, sizeof out,
                         "PICL_PASSWORD=x %s --state s1 account create --server %s --email p@x.org 2>&1",
                         picl, url),
                     2);
    ck_assert_ptr_nonnull(strstr(out, "at least 8 characters"));
    ck_assert_int_eq(run(out, sizeof out,
                         "PICL_PASSWORD=password1 %s --state s1 account create --server %s "
                         "--email not-an-email 2>&1",
                         picl, url),
                     2);
    ck_assert_ptr_nonnull(strstr(out, "not an email address"));
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD=x %s --state s9 login --server %s --email p@x.org 2>/dev/null", picl,
                         url),
                     3); /* no such account was made */
    /* the URL with /v1 (what an older banner showed) works */
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD=password1 %s --state s1 -q account create --server %s/v1/ "
                         "--email p@x.org",
                         picl, url),
                     0);
    json_t *a = status_json("s1");
    ck_assert_str_eq(json_string_value(json_object_get(a, "keyserver")), url);
    ck_assert(json_is_true(json_object_get(a, "signedIn")));
    json_decref(a);
    /* a typo in login --server keeps the sign-in and the URL */
    ck_assert_int_eq(run(out, sizeof out,
                         "PICL_PASSWORD=password1 %s --state s1 login --server http://127.0.0.1:1 "
                         "--email p@x.org 2>&1",
                         picl),
                     4);
    ck_assert_ptr_nonnull(strstr(out, "nothing was changed"));
    /* another server that answers, but the sign-in fails: the old state is back */
    char other[160];
    snprintf(other, sizeof other, "http://localhost:%s", strrchr(url, ':') + 1);
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD=wrong-password %s --state s1 login --server %s --email p@x.org "
                         "2>/dev/null",
                         picl, other),
                     3);
    a = status_json("s1");
    ck_assert_str_eq(json_string_value(json_object_get(a, "keyserver")), url);
    ck_assert_str_eq(json_string_value(json_object_get(a, "email")), "p@x.org");
    ck_assert(json_is_true(json_object_get(a, "signedIn")));
    json_decref(a);
    /* a too short new password changes nothing */
    ck_assert_int_eq(run(out, sizeof out,
                         "PICL_PASSWORD=password1 PICL_NEW_PASSWORD=short %s --state s1 password change "
                         "2>&1",
                         picl),
                     2);
    ck_assert_ptr_nonnull(strstr(out, "at least 8 characters"));
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s8 -q login --server %s --email p@x.org", picl, url),
        0);
    /* a sync failure is said once */
    ck_assert_int_eq(run(NULL, 0, "mkdir -p f && echo '[]' > f/bookmarks.json"), 0);
    ck_assert_int_eq(
        run(out, sizeof out, "%s --state s1 sync --store-dir f 2>&1 | grep -c 'verify the email'", picl), 0);
    ck_assert_str_eq(out, "1\n");
    /* a missing profile is named; missing state parents are made 0700 */
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 sync --profile /nonexistent 2>&1", picl), 6);
    ck_assert_ptr_nonnull(strstr(out, "profile directory /nonexistent does not exist"));
    ck_assert_int_eq(run(NULL, 0,
                         "%s --state deep/er/st status >/dev/null && test \"$(stat -c %%a deep/er)\" = 700",
                         picl),
                     0);
    /* the production command (compiled without PICL_TEST_HOOKS) ignores the
     * test-only cheap stretching: the account gets the real parameters */
    snprintf(nohooks, sizeof nohooks, "%s-nohooks", picl);
    ck_assert_int_eq(run(NULL, 0, "test -x %s", nohooks), 0);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s7 -q account create --server %s --email n@x.org",
            nohooks, url),
        0);
    ck_assert_int_eq(run(out, sizeof out,
                         "sqlite3 data/keyserver.db \"SELECT CAST(email AS TEXT), scrypt_n FROM accounts "
                         "WHERE CAST(email AS TEXT) IN ('n@x.org', 'p@x.org') ORDER BY 1\""),
                     0);
    ck_assert_str_eq(out, "n@x.org|65536\np@x.org|1024\n");
}
END_TEST

/* Ctrl-C at the password prompt gives the terminal its echo back. */
START_TEST(test_sigint_restores_echo)
{
    char out[512];
    ck_assert_int_eq(run(out, sizeof out,
                         "unset PICL_PASSWORD; python3 -c '\n"
                         "import os, pty, signal, sys, termios\n"
                         "pid, fd = pty.fork()\n"
                         "if pid == 0:\n"
                         "    os.execv(sys.argv[1], [sys.argv[1], \"--state\", \"sx\", \"login\", "
                         "\"--email\", \"q@x.org\"])\n"
                         "buf = b\"\"\n"
                         "while b\"Password\" not in buf:\n"
                         "    buf += os.read(fd, 100)\n"
                         "off = not termios.tcgetattr(fd)[3] & termios.ECHO\n"
                         "os.kill(pid, signal.SIGINT)\n"
                         "_, st = os.waitpid(pid, 0)\n"
                         "on = bool(termios.tcgetattr(fd)[3] & termios.ECHO)\n"
                         "print(off, on, os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGINT)\n"
                         "' %s",
                         picl),
                     0);
    ck_assert_str_eq(out, "True True True\n");
}
END_TEST

/* client.md 7 in the CLI: the device that signed up gets its keys without the
 * password once the email is verified, here or on another device; only an
 * expired keyFetchToken (24 h) asks for the password once more. */
START_TEST(test_signup_keys_later)
{
    char out[8192], code[128];
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s3 -q account create --server %s --email e@x.org",
            picl, url),
        0);
    json_t *a = status_json("s3");
    ck_assert(json_is_true(json_object_get(a, "signedIn")) && !json_is_true(json_object_get(a, "hasKeys")));
    json_decref(a);
    /* verified on another device */
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s4 -q login --server %s --email e@x.org", picl, url),
        0);
    mail_code("e@x.org", "X-Verify-Code", code, sizeof code);
    ck_assert_int_eq(run(NULL, 0, "%s --state s4 -q account verify --code %s", picl, code), 0);
    /* the sign-up device syncs without a password (none is given: PICL_PASSWORD unset, no terminal) */
    ck_assert_int_eq(run(NULL, 0, "mkdir -p g && echo '[]' > g/bookmarks.json"), 0);
    ck_assert_int_eq(run(out, sizeof out,
                         "unset PICL_PASSWORD; setsid %s --state s3 -q sync --store-dir g "
                         "--collections bookmarks </dev/null 2>&1",
                         picl),
                     0);
    json_t *b = status_json("s3"), *c = status_json("s4");
    ck_assert(json_is_true(json_object_get(b, "hasKeys")) && json_is_true(json_object_get(b, "verified")));
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(b, "kB_fp"))), 32);
    ck_assert_str_eq(json_string_value(json_object_get(b, "kB_fp")),
                     json_string_value(json_object_get(c, "kB_fp")));
    ck_assert_str_eq(json_string_value(json_object_get(b, "kA_fp")),
                     json_string_value(json_object_get(c, "kA_fp")));
    json_decref(b);
    json_decref(c);
    /* the keyFetchToken expired before the verification: the password once */
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s5 -q account create --server %s --email x@x.org",
            picl, url),
        0);
    ck_assert_int_eq(
        run(NULL, 0, "sqlite3 data/keyserver.db \"UPDATE tokens SET expires = 1 WHERE type = 2\""), 0);
    mail_code("x@x.org", "X-Verify-Code", code, sizeof code);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s5 account verify --code %s", picl, code), 0);
    ck_assert_ptr_nonnull(strstr(out, "run picl login"));
    ck_assert_int_eq(
        run(out, sizeof out, "%s --state s5 sync --store-dir g --collections bookmarks 2>&1", picl), 3);
    ck_assert_ptr_nonnull(strstr(out, "password"));
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD=password1 %s --state s5 -q login --email x@x.org", picl), 0);
    ck_assert_int_eq(run(NULL, 0, "%s --state s5 -q sync --store-dir g --collections bookmarks", picl), 0);
}
END_TEST

/* picl-keyserver and picl-storage parse with getopt_long too. */
START_TEST(test_server_programs_options)
{
    char out[4096];
    ck_assert_int_eq(run(out, sizeof out, "%s-keyserver --version && %s-storage --version && %s --version",
                         picl, picl, picl),
                     0);
    ck_assert_str_eq(out, "picl-keyserver 0.1.0\npicl-storage 0.1.0\npicl 0.1.0\n");
    ck_assert_int_eq(run(out, sizeof out, "%s-keyserver --help", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: picl-keyserver"));
    ck_assert_int_eq(run(out, sizeof out, "%s-keyserver --data --listen 127.0.0.1:0 2>&1", picl), 2);
    ck_assert_ptr_nonnull(strstr(out, "--data needs a value, not the option --listen"));
    ck_assert_int_eq(run(out, sizeof out, "%s-storage --listen 2>&1", picl), 2);
    ck_assert_ptr_nonnull(strstr(out, "--listen needs a value"));
    ck_assert_int_eq(run(out, sizeof out, "%s-storage --listen 127.0.0.1:1 --secret-file s extra 2>&1", picl),
                     2);
    ck_assert_ptr_nonnull(strstr(out, "unexpected argument extra"));
}
END_TEST

/* On a terminal the bar moves during a large upload (one step per batch of
 * the server's max_total_records = 10000), not only at its end. */
START_TEST(test_upload_progress)
{
    char out[65536], code[128];
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s1 -q account create --server %s --email g@x.org",
            picl, url),
        0);
    mail_code("g@x.org", "X-Verify-Code", code, sizeof code);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 -q account verify --code %s", picl, code), 0);
    ck_assert_int_eq(
        run(NULL, 0,
            "mkdir big && python3 -c 'import json; print(json.dumps([{\"id\": \"bm%%09d\" %% i, "
            "\"type\": \"bookmark\", \"parentid\": \"menu\", \"title\": str(i), "
            "\"bmkUri\": \"https://e.org/%%d\" %% i} for i in range(12000)]))' > big/bookmarks.json"),
        0);
    ck_assert_int_eq(run(out, sizeof out,
                         "python3 -c '\n"
                         "import os, pty, sys\n"
                         "pid, fd = pty.fork()\n"
                         "if pid == 0:\n"
                         "    os.execv(sys.argv[1], [sys.argv[1], \"--state\", \"s1\", \"sync\", "
                         "\"--store-dir\", \"big\",\n"
                         "                          \"--collections\", \"bookmarks\"])\n"
                         "buf = b\"\"\n"
                         "while True:\n"
                         "    try:\n"
                         "        d = os.read(fd, 4096)\n"
                         "    except OSError:\n"
                         "        break\n"
                         "    if not d:\n"
                         "        break\n"
                         "    buf += d\n"
                         "_, st = os.waitpid(pid, 0)\n"
                         "sys.stdout.write(buf.decode(errors=\"replace\"))\n"
                         "sys.exit(os.WEXITSTATUS(st))\n"
                         "' %s",
                         picl),
                     0);
    ck_assert_msg(strstr(out, "upload   [") != NULL, "no upload bar: %s", out);
    ck_assert_msg(strstr(out, "] 10000/12000") != NULL, "the bar did not move during the upload: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "uploaded 12000"));
}
END_TEST

/* On a terminal a new password is asked twice; two different ones change
 * nothing. */
START_TEST(test_new_password_asked_twice)
{
    char out[4096];
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s1 -q account create --server %s --email t@x.org",
            picl, url),
        0);
    ck_assert_int_eq(
        run(out, sizeof out,
            "unset PICL_NEW_PASSWORD; PICL_PASSWORD=password1 python3 -c '\n"
            "import os, pty, sys\n"
            "pid, fd = pty.fork()\n"
            "if pid == 0:\n"
            "    os.execv(sys.argv[1], [sys.argv[1], \"--state\", \"s1\", \"password\", \"change\"])\n"
            "buf = b\"\"\n"
            "for answer in (b\"new password 1\\n\", b\"new password 2\\n\"):\n"
            "    while b\"assword: \" not in buf:\n"
            "        buf += os.read(fd, 100)\n"
            "    buf = b\"\"\n"
            "    os.write(fd, answer)\n"
            "rest = b\"\"\n"
            "while True:\n"
            "    try:\n"
            "        d = os.read(fd, 4096)\n"
            "    except OSError:\n"
            "        break\n"
            "    if not d:\n"
            "        break\n"
            "    rest += d\n"
            "_, st = os.waitpid(pid, 0)\n"
            "print(os.WEXITSTATUS(st), b\"differ\" in rest)\n"
            "' %s",
            picl),
        0);
    ck_assert_str_eq(out, "2 True\n");
    /* the old password still signs in */
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s2 -q login --server %s --email t@x.org", picl, url),
        0);
}
END_TEST

/* ... and during a long apply into a Firefox profile (the store reports every
 * 256 records from inside its one transaction). */
START_TEST(test_apply_progress)
{
    char out[65536], code[128];
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s1 -q account create --server %s --email h@x.org",
            picl, url),
        0);
    mail_code("h@x.org", "X-Verify-Code", code, sizeof code);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 -q account verify --code %s", picl, code), 0);
    ck_assert_int_eq(
        run(NULL, 0,
            "mkdir hist && python3 -c 'import json; print(json.dumps([{\"id\": \"hi%%010d\" %% i, "
            "\"histUri\": \"https://h.example/%%d\" %% i, \"title\": str(i), "
            "\"visits\": [{\"date\": 1700000000000000 + i, \"type\": 1}]} for i in range(600)]))' "
            "> hist/history.json"),
        0);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 -q sync --store-dir hist --collections history", picl), 0);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD=password1 %s --state s2 -q login --server %s --email h@x.org", picl, url),
        0);
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/prof >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(out, sizeof out,
                         "python3 -c '\n"
                         "import os, pty, sys\n"
                         "pid, fd = pty.fork()\n"
                         "if pid == 0:\n"
                         "    os.execv(sys.argv[1], [sys.argv[1], \"--state\", \"s2\", \"sync\", "
                         "\"--profile\", \"prof\",\n"
                         "                          \"--collections\", \"history\"])\n"
                         "buf = b\"\"\n"
                         "while True:\n"
                         "    try:\n"
                         "        d = os.read(fd, 4096)\n"
                         "    except OSError:\n"
                         "        break\n"
                         "    if not d:\n"
                         "        break\n"
                         "    buf += d\n"
                         "_, st = os.waitpid(pid, 0)\n"
                         "sys.stdout.write(buf.decode(errors=\"replace\"))\n"
                         "sys.exit(os.WEXITSTATUS(st))\n"
                         "' %s",
                         picl),
                     0);
    ck_assert_msg(strstr(out, "apply    [") != NULL, "no apply bar: %s", out);
    ck_assert_msg(strstr(out, "/600") && strstr(out, "] 256/") && strstr(out, "] 512/"),
                  "the bar did not move during the apply: %s", out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_story);
    tcase_add_test(tc, test_usage);
    tcase_add_test(tc, test_friction);
    tcase_add_test(tc, test_sigint_restores_echo);
    tcase_add_test(tc, test_signup_keys_later);
    tcase_add_test(tc, test_server_programs_options);
    tcase_add_test(tc, test_upload_progress);
    tcase_add_test(tc, test_new_password_asked_twice);
    tcase_add_test(tc, test_apply_progress);
    tcase_add_test(tc, test_move_killed_at_each_step);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
