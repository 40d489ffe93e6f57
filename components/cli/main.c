/* SPDX-License-Identifier: MPL-2.0 */
/* main.c -- the picl command (client.md section 6): accounts, classes, sync
 * of a Firefox profile or JSON files, and the servers, over the service object. */
#include "cli.h"
#include "client/keyserver_client.h"
#include "stores/fileutil.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

static const char *USAGE =
    "usage: picl [--state DIR] [--json] [--quiet] COMMAND [ARGS]\n"
    "\n"
    "Profile in the Cloud: sync a browser profile (bookmarks, passwords, history)\n"
    "with end-to-end encryption in two security classes (A: recoverable after a\n"
    "forgotten password; B: never leaves your devices, lost on a password reset).\n"
    "\n"
    "commands:\n"
    "  server [--data DIR] [--listen 127.0.0.1:PORT]  keyserver + storage server, one process\n"
    "          [--restore-days N]                     keep earlier versions N days for picl restore\n"
    "                                                 (default 30, 0 = off)\n"
    "          [--nonce-cache N]                      Hawk nonces the storage server holds (1024 to\n"
    "                                                 16777216, default 524288: N / 60 requests/s\n"
    "                                                 sustained, then 503; 192 bytes each)\n"
    "  account create --server URL --email E          create an account and sign in (a code is mailed)\n"
    "  account verify --code C                        verify the email address (fetches the keys)\n"
    "  account verify --resend                        mail the verification code again\n"
    "  account status                                 same as status\n"
    "  account destroy                                erase the account on the server\n"
    "  login [--server URL] --email E                 sign in on this device, fetch kA and kB\n"
    "  logout                                         sign out, forget the keys here\n"
    "  status                                         who is signed in, key fingerprints\n"
    "  password change                                new password, same kB (class B kept)\n"
    "  password forgot [--server URL] --email E       mail a reset code\n"
    "  password reset --code C                        set a new password (class B is lost)\n"
    "          [--recovery-key-file F]                with the recovery key in F: class B is kept\n"
    "  recovery-key create|status|remove              a key that keeps class B through a\n"
    "                                                 forgotten password (shown once)\n"
    "  device list|rename NAME|remove ID              the devices signed in to the account;\n"
    "                                                 remove signs one out\n"
    "  account events                                 sign-ins, password and device changes\n"
    "  class get COLLECTION                           A or B\n"
    "  class set COLLECTION A|B                       move a collection to another class\n"
    "  sync --profile DIR | --store-dir DIR [--collections a,b,c]\n"
    "                                                 sync a Firefox profile (Firefox closed)\n"
    "                                                 or JSON files DIR/<collection>.json\n"
    "          [--allow-mass-delete]                  let a sync delete more than half of a\n"
    "                                                 collection (else it stops, exit 5)\n"
    "  restore COLLECTION --as-of TIME [--yes] --profile DIR | --store-dir DIR\n"
    "                                                 bring a collection back to how it was at\n"
    "                                                 TIME (ISO 8601 UTC or Unix seconds)\n"
    "  tabs [--received]                              other devices' open tabs (or the tabs\n"
    "                                                 sent to this device)\n"
    "  send-tab DEVICE URL [--title T]                open URL on another device (its id or name;\n"
    "                                                 an id that starts with \"-\" goes after --)\n"
    "  demo                                           the whole story on a scratch server\n"
    "  help [COMMAND]                                 this text; also picl COMMAND --help\n"
    "\n"
    "options:\n"
    "  --state DIR           this device's state: account, keys, sync cursors (default\n"
    "                        $XDG_DATA_HOME/picl, else ~/.local/share/picl); --profile\n"
    "                        only names what is synced\n"
    "  --server URL          the server as picl server prints it (http://HOST:PORT)\n"
    "  --json                machine-readable output\n"
    "  --quiet, -q           no progress output\n"
    "  --password-file F     read the password from F (first line); also PICL_PASSWORD.\n"
    "  --new-password-file F the new password; also PICL_NEW_PASSWORD.  Otherwise\n"
    "                        passwords are asked for without echo, never taken from argv;\n"
    "                        a new password has at least 8 characters.\n"
    "  --primary-password-file F  the Firefox profile's primary password (also\n"
    "                        PICL_PRIMARY_PASSWORD), when it has one\n"
    "  --strict              keep kB in memory only (class B syncs after a password entry)\n"
    "  --version, --help\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage, 3 authentication (wrong password, unverified,\n"
    "session ended, password reset on another device), 4 network or server, 5 conflict,\n"
    "forged class map or records failing their integrity check, 6 local data\n"
    "(profile locked or missing, malformed store file, state directory unusable).\n";

/* ---- commands ------------------------------------------------------------------ */

static int print_json_text(const char *text)
{
    printf("%s\n", text);
    return CLI_OK;
}

static int need(const cli_opts *o, const char *v, const char *name)
{
    if (v)
        return 1;
    fprintf(stderr, "picl: %s is required (see picl help)\n", name);
    (void)o;
    return 0;
}

static int cmd_status(const cli_opts *o, picl_service *svc)
{
    char *text;
    picl_status st = picl_service_get_status_json(svc, &text);
    if (st != PICL_OK)
        return cli_fail(o, svc, st);
    if (o->json) {
        print_json_text(text);
    } else {
        json_t *j = json_loads(text, 0, NULL);
        if (!json_is_true(json_object_get(j, "signedIn"))) {
            printf("not signed in (keyserver: %s)\n", json_string_value(json_object_get(j, "keyserver")));
        } else {
            printf("signed in as %s (uid %s), %s\n", json_string_value(json_object_get(j, "email")),
                   json_string_value(json_object_get(j, "uid")),
                   json_is_true(json_object_get(j, "verified")) ? "verified" : "NOT verified yet");
            printf("keyserver %s\n", json_string_value(json_object_get(j, "keyserver")));
            printf("kA fingerprint %s\nkB fingerprint %s\n", json_string_value(json_object_get(j, "kA_fp")),
                   json_string_value(json_object_get(j, "kB_fp")));
        }
        json_decref(j);
    }
    picl_free(text);
    return CLI_OK;
}

static int ok_line(const cli_opts *o, const char *text)
{
    if (o->json)
        printf("{\"status\":\"ok\",\"message\":\"%s\"}\n", text);
    else
        printf("%s\n", text);
    return CLI_OK;
}

static int with_password(const cli_opts *o, const char *prompt, char *pw, size_t cap)
{
    if (cli_read_secret(o->password_file, "PICL_PASSWORD", prompt, pw, cap) != 0)
        return 0;
    return 1;
}

#define MIN_PASSWORD 8 /* as Firefox Accounts */

/* A new password: from the file or variable given, else asked twice on the
 * terminal; at least MIN_PASSWORD characters.  0 (message printed) if not. */
static int new_password(const char *file, const char *env, char *pw, size_t cap)
{
    char again[1024];
    int asked = !file && !getenv(env);
    if (cli_read_secret(file, env, "New password: ", pw, cap) != 0)
        return 0;
    if (strlen(pw) < MIN_PASSWORD) {
        fprintf(stderr, "picl: the new password is too short: at least %d characters\n", MIN_PASSWORD);
        explicit_bzero(pw, cap);
        return 0;
    }
    if (asked) {
        int ok = cli_read_secret(NULL, NULL, "Repeat the new password: ", again, sizeof again) == 0 &&
                 !strcmp(pw, again);
        explicit_bzero(again, sizeof again);
        if (!ok) {
            fprintf(stderr, "picl: the two passwords differ: nothing was changed\n");
            explicit_bzero(pw, cap);
            return 0;
        }
    }
    return 1;
}

/* Basic email syntax: local@domain.tld, no spaces or control characters. */
static int email_ok(const char *o_email)
{
    const char *at = strchr(o_email, '@');
    size_t n = strlen(o_email);
    if (!at || at == o_email || strchr(at + 1, '@') || n > 255)
        return 0;
    const char *dot = strrchr(at, '.');
    if (!dot || dot == at + 1 || !dot[1])
        return 0;
    for (const char *p = o_email; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return 0;
    return 1;
}

static int need_email(const cli_opts *o)
{
    if (!need(o, o->email, "--email E"))
        return 0;
    if (!email_ok(o->email)) {
        fprintf(stderr, "picl: '%s' is not an email address (name@example.org)\n", o->email);
        return 0;
    }
    return 1;
}

/* The keyserver URL as the user may type it: what picl server prints, with
 * or without a trailing / or /v1. */
static const char *server_url(const char *in, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", in);
    size_t n = strlen(buf);
    while (n && buf[n - 1] == '/')
        buf[--n] = 0;
    if (n >= 3 && !strcmp(buf + n - 3, "/v1"))
        buf[n -= 3] = 0;
    while (n && buf[n - 1] == '/')
        buf[--n] = 0;
    return buf;
}

/* The state file as it was before --server switched servers: put back when
 * the command fails, so a typo in the URL signs nobody out. */
static struct {
    int armed;
    char path[4200];
    char *text; /* NULL: there was no file */
    size_t len;
} saved_state;

/* Sets the keyserver from --server after checking that a PiCL keyserver
 * answers there; when it differs from the current one, the state is saved
 * first (see saved_state).  Returns an exit code. */
static int use_server(const cli_opts *o, picl_service *svc, const char *state_dir)
{
    char url[1024], *cur = NULL;
    server_url(o->server, url, sizeof url);
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
        fprintf(stderr,
                "picl: --server wants the URL picl server prints, e.g. http://127.0.0.1:8000 (got %s)\n",
                o->server);
        return CLI_USAGE;
    }
    picl_ks_client *c = NULL;
    picl_status st = picl__ksc_new(&c, url);
    if (st == PICL_OK) {
        json_t *body = json_object(), *ans = NULL;
        st = picl__ksc_call(c, "POST", "/v1/get_random_bytes", NULL, 0, body, &ans);
        json_decref(body);
        json_decref(ans);
        picl__ksc_free(c);
    }
    if (st != PICL_OK) {
        fprintf(stderr, "picl: no PiCL keyserver answers at %s (%s): nothing was changed\n", url,
                st == PICL_ERROR_NETWORK ? "cannot connect" : picl_strerror(st));
        return st == PICL_ERROR_INVALID_ARGUMENT ? CLI_USAGE : CLI_NETWORK;
    }
    if (picl_service_get_keyserver_url(svc, &cur) == PICL_OK && strcmp(cur, url)) {
        snprintf(saved_state.path, sizeof saved_state.path, "%s/state.json", state_dir);
        saved_state.text = NULL;
        picl_status rs =
            picl__read_file(saved_state.path, 16u * 1024u * 1024u, &saved_state.text, &saved_state.len);
        saved_state.armed = rs == PICL_OK || rs == PICL_ERROR_NOT_FOUND;
    }
    picl_free(cur);
    if ((st = picl_service_set_keyserver_url(svc, url)) != PICL_OK)
        return cli_fail(o, svc, st);
    return CLI_OK;
}

/* After a failed command: the state as it was before use_server(). */
static void restore_state(void)
{
    if (!saved_state.armed)
        return;
    if (saved_state.text)
        picl__write_file_atomic(saved_state.path, saved_state.text, saved_state.len, 0600);
    else
        unlink(saved_state.path);
    fprintf(stderr, "picl: the previous keyserver and sign-in are kept\n");
}

static int too_many(const cli_opts *o, int max, const char *what)
{
    if (o->nargs <= max)
        return 0;
    fprintf(stderr, "picl: unexpected argument '%s' (usage: picl %s)\n", o->args[max], what);
    return 1;
}

static int cmd_account(const cli_opts *o, picl_service *svc, const char *sub, const char *state_dir)
{
    char pw[1024];
    picl_status st;
    int rc;
    if (!strcmp(sub, "create")) {
        if (too_many(o, 0, "account create --server URL --email E"))
            return CLI_USAGE;
        if (!need(o, o->server, "--server URL") || !need_email(o))
            return CLI_USAGE;
        if ((rc = use_server(o, svc, state_dir)) != CLI_OK)
            return rc;
        if (!new_password(o->password_file, "PICL_PASSWORD", pw, sizeof pw))
            return CLI_USAGE;
        st = picl_service_create_account(svc, o->email, pw);
        explicit_bzero(pw, sizeof pw);
        if (st != PICL_OK)
            return cli_fail(o, svc, st);
        return ok_line(o, "account created; this device is signed in to it.  A verification code was mailed: "
                          "run picl account verify --code CODE");
    }
    if (!strcmp(sub, "verify") && o->resend) {
        /* the keyserver may have stopped before mailing the code */
        if (too_many(o, 0, "account verify --resend"))
            return CLI_USAGE;
        if (o->code) {
            fprintf(stderr, "picl: account verify takes --code C or --resend, not both\n");
            return CLI_USAGE;
        }
        st = picl_service_resend_verification(svc);
        return st == PICL_OK
                   ? ok_line(o, "the verification code was mailed again: run picl account verify --code CODE")
                   : cli_fail(o, svc, st);
    }
    if (!strcmp(sub, "verify")) {
        if (too_many(o, 0, "account verify --code C"))
            return CLI_USAGE;
        if (!need(o, o->code, "--code C"))
            return CLI_USAGE;
        st = picl_service_verify_email(svc, o->code);
        if (st != PICL_OK)
            return cli_fail(o, svc, st);
        char *text = NULL;
        int keys = 0;
        if (picl_service_get_status_json(svc, &text) == PICL_OK) {
            json_t *j = json_loads(text, 0, NULL);
            keys = json_is_true(json_object_get(j, "hasKeys"));
            json_decref(j);
            picl_free(text);
        }
        return ok_line(o, keys ? "email verified; kA and kB are on this device: picl sync --profile DIR"
                               : "email verified: run picl login to fetch the keys");
    }
    if (!strcmp(sub, "status"))
        return too_many(o, 0, "account status") ? CLI_USAGE : cmd_status(o, svc);
    if (!strcmp(sub, "events"))
        return cli_account_events(o, svc);
    if (!strcmp(sub, "destroy")) {
        if (too_many(o, 0, "account destroy"))
            return CLI_USAGE;
        if (!with_password(o, "Password: ", pw, sizeof pw))
            return CLI_USAGE;
        st = picl_service_destroy_account(svc, pw);
        explicit_bzero(pw, sizeof pw);
        return st == PICL_OK ? ok_line(o, "account destroyed") : cli_fail(o, svc, st);
    }
    fprintf(stderr, "picl: unknown account command '%s' (create, verify, status, events, destroy)\n", sub);
    return CLI_USAGE;
}

static int cmd_login(const cli_opts *o, picl_service *svc, const char *state_dir)
{
    if (too_many(o, 0, "login [--server URL] --email E") || !need_email(o))
        return CLI_USAGE;
    picl_status st;
    int rc;
    if (o->server && (rc = use_server(o, svc, state_dir)) != CLI_OK)
        return rc;
    char pw[1024];
    if (!with_password(o, "Password: ", pw, sizeof pw))
        return CLI_USAGE;
    st = picl_service_sign_in(svc, o->email, pw);
    explicit_bzero(pw, sizeof pw);
    if (st != PICL_OK)
        return cli_fail(o, svc, st);
    if (o->json)
        return cmd_status(o, svc);
    int verified = 0;
    picl_service_get_verified(svc, &verified);
    return ok_line(o, verified
                          ? "signed in; kA and kB are on this device"
                          : "signed in, but the email is not verified: keys come after picl account verify");
}

static int cmd_password(const cli_opts *o, picl_service *svc, const char *sub, const char *state_dir)
{
    char pw[1024], npw[1024];
    picl_status st;
    int rc;
    if (!strcmp(sub, "change")) {
        if (too_many(o, 0, "password change"))
            return CLI_USAGE;
        if (!with_password(o, "Current password: ", pw, sizeof pw))
            return CLI_USAGE;
        if (!new_password(o->new_password_file, "PICL_NEW_PASSWORD", npw, sizeof npw)) {
            explicit_bzero(pw, sizeof pw);
            return CLI_USAGE;
        }
        st = picl_service_change_password(svc, pw, npw);
        explicit_bzero(pw, sizeof pw);
        explicit_bzero(npw, sizeof npw);
        return st == PICL_OK ? ok_line(o, "password changed; kB and class-B data are unchanged")
                             : cli_fail(o, svc, st);
    }
    if (!strcmp(sub, "forgot")) {
        if (too_many(o, 0, "password forgot [--server URL] --email E") || !need_email(o))
            return CLI_USAGE;
        if (o->server && (rc = use_server(o, svc, state_dir)) != CLI_OK)
            return rc;
        st = picl_service_forgot_password(svc, o->email);
        return st == PICL_OK ? ok_line(o, "a reset code was mailed; run picl password reset --code CODE")
                             : cli_fail(o, svc, st);
    }
    if (!strcmp(sub, "reset")) {
        if (too_many(o, 0, "password reset --code C"))
            return CLI_USAGE;
        if (!need(o, o->code, "--code C"))
            return CLI_USAGE;
        if (!new_password(o->new_password_file ? o->new_password_file : o->password_file, "PICL_NEW_PASSWORD",
                          npw, sizeof npw))
            return CLI_USAGE;
        if (o->recovery_key_file) {
            char rk[256];
            if (cli_read_secret(o->recovery_key_file, "PICL_RECOVERY_KEY", "Recovery key: ", rk, sizeof rk) !=
                0) {
                explicit_bzero(npw, sizeof npw);
                return CLI_USAGE;
            }
            st = picl_service_complete_password_reset_with_recovery_key(svc, o->code, npw, rk);
            explicit_bzero(rk, sizeof rk);
            explicit_bzero(npw, sizeof npw);
            return st == PICL_OK
                       ? ok_line(o, "password reset with the recovery key: class-A and class-B data are "
                                    "kept.  The key is used up: make a new one with picl recovery-key create")
                       : cli_fail(o, svc, st);
        }
        st = picl_service_complete_password_reset(svc, o->code, npw);
        explicit_bzero(npw, sizeof npw);
        return st == PICL_OK
                   ? ok_line(o, "password reset: class-A data is kept, class-B data is lost by design")
                   : cli_fail(o, svc, st);
    }
    fprintf(stderr, "picl: unknown password command '%s' (change, forgot, reset)\n", sub);
    return CLI_USAGE;
}

static int cmd_class(const cli_opts *o, picl_service *svc)
{
    if (o->nargs < 2) {
        fprintf(stderr, "picl: usage: picl class get COLLECTION | picl class set COLLECTION A|B\n");
        return CLI_USAGE;
    }
    picl_status st;
    if (!strcmp(o->args[0], "get") && o->nargs == 2) {
        char *cls;
        if ((st = picl_service_get_collection_class(svc, o->args[1], &cls)) != PICL_OK)
            return cli_fail(o, svc, st);
        if (o->json)
            printf("{\"collection\":\"%s\",\"class\":\"%s\"}\n", o->args[1], cls);
        else
            printf("%s\n", cls);
        picl_free(cls);
        return CLI_OK;
    }
    if (!strcmp(o->args[0], "set") && o->nargs == 3) {
        if (strcmp(o->args[2], "A") && strcmp(o->args[2], "B")) {
            fprintf(stderr, "picl: the class is A or B\n");
            return CLI_USAGE;
        }
        cli_progress_start(o);
        st = picl_service_set_collection_class(svc, o->args[1], o->args[2]);
        cli_progress_stop();
        if (st != PICL_OK)
            return cli_fail(o, svc, st);
        char line[128];
        snprintf(line, sizeof line, "%s is now class %s", o->args[1], o->args[2]);
        return ok_line(o, line);
    }
    fprintf(stderr, "picl: usage: picl class get COLLECTION | picl class set COLLECTION A|B\n");
    return CLI_USAGE;
}

/* The sync cursors in the state belong to what was synced last: syncing
 * another profile or directory with the same state starts with a full merge
 * (as a new device does), so nothing on the server is skipped.  The realpath
 * of the last target is kept in STATE/sync-target. */
static picl_status same_target(const cli_opts *o, picl_service *svc, const char *state_dir)
{
    char real[PATH_MAX], path[4200], *old = NULL;
    size_t len = 0;
    const char *dir = o->profile ? o->profile : o->store_dir;
    if (!realpath(dir, real))
        snprintf(real, sizeof real, "%s", dir);
    snprintf(path, sizeof path, "%s/sync-target", state_dir);
    picl_status st = picl__read_file(path, PATH_MAX + 16, &old, &len);
    int same = st == PICL_OK && len == strlen(real) && !memcmp(old, real, len);
    free(old);
    if (same)
        return PICL_OK;
    if (st == PICL_OK)
        fprintf(stderr, "picl: %s was not synced with this state before: a full merge with the server\n",
                dir);
    if ((st = picl_service_reset_local_state(svc)) != PICL_OK)
        return st;
    return picl__write_file_atomic(path, real, strlen(real), 0600);
}

static int cmd_sync(const cli_opts *o, picl_service *svc, const char *state_dir)
{
    picl_status st;
    if (too_many(o, 0, "sync --profile DIR | --store-dir DIR [--collections a,b,c]"))
        return CLI_USAGE;
    if (o->profile && o->store_dir) {
        fprintf(stderr, "picl: --profile and --store-dir exclude each other\n");
        return CLI_USAGE;
    }
    if (o->profile) {
        struct stat sb;
        if (stat(o->profile, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "picl: %s is not a directory\n", o->profile);
            return CLI_LOCAL;
        }
        st = picl_service_use_profile(svc, o->profile);
        /* a primary password on the profile: from PICL_PRIMARY_PASSWORD or
         * --primary-password-file only (never asked when there is none) */
        if (st == PICL_OK && (o->primary_password_file || getenv("PICL_PRIMARY_PASSWORD"))) {
            char pp[1024];
            if (cli_read_secret(o->primary_password_file, "PICL_PRIMARY_PASSWORD", "", pp, sizeof pp) != 0)
                return CLI_USAGE;
            st = picl_service_set_primary_password(svc, pp);
            explicit_bzero(pp, sizeof pp);
        }
    } else if (o->store_dir) {
        st = picl_service_use_store_dir(svc, o->store_dir);
    } else {
        fprintf(stderr, "picl: say what to sync: --profile FIREFOX_PROFILE_DIR or --store-dir DIR\n");
        return CLI_USAGE;
    }
    if (st == PICL_OK)
        st = same_target(o, svc, state_dir);
    if (st != PICL_OK)
        return cli_fail(o, svc, st);
    char *summary = NULL;
    cli_progress_start(o);
    st = picl_service_sync(svc, o->collections ? o->collections : "", &summary);
    cli_progress_stop();
    if (o->json && summary) {
        printf("%s\n", summary);
    } else if (summary) {
        json_t *j = json_loads(summary, 0, NULL);
        const char *c;
        json_t *v;
        json_object_foreach (json_object_get(j, "collections"), c, v) {
            if (!json_is_object(v))
                continue;
            printf("%-10s %-9s downloaded %lld, applied %lld, uploaded %lld%s\n", c,
                   json_string_value(json_object_get(v, "status")),
                   (long long)json_integer_value(json_object_get(v, "downloaded")),
                   (long long)json_integer_value(json_object_get(v, "applied")),
                   (long long)json_integer_value(json_object_get(v, "uploaded")),
                   json_integer_value(json_object_get(v, "failed")) ? " (some records failed)" : "");
            if (json_integer_value(json_object_get(v, "unreadable")) > 0)
                printf(
                    "%-10s %lld saved login(s) cannot be decrypted with this profile's key4.db: kept as they "
                    "are, not synced\n",
                    c, (long long)json_integer_value(json_object_get(v, "unreadable")));
        }
        size_t fi;
        json_t *fr;
        json_array_foreach (json_object_get(j, "failed"), fi, fr) /* client.md 7: each one named */
            printf("integrity: %s/%s: %s (not applied)\n",
                   json_string_value(json_object_get(fr, "collection")),
                   json_string_value(json_object_get(fr, "id")),
                   json_string_value(json_object_get(fr, "reason")));
        cli_print_received(j); /* tabs sent to this device, commands refused */
        if (json_is_true(json_object_get(json_object_get(j, "collections"), "keys_changed"))) {
            char *b = json_dumps(json_object_get(json_object_get(j, "collections"), "class_b"), JSON_COMPACT);
            printf(
                "The password was reset: class-A data is kept; class-B data made under the old password is "
                "lost by design, this device's copy was uploaded again. Class B: %s\n",
                b ? b : "[]");
            free(b);
        }
        json_decref(j);
    }
    picl_free(summary);
    if (st != PICL_OK)
        return o->json ? cli_exit_code(st) : cli_fail(o, svc, st);
    return CLI_OK;
}

/* ---- options -------------------------------------------------------------------- */

enum {
    OPT_JSON = 256,
    OPT_YES,
    OPT_ALLOW_MASS_DELETE,
    OPT_STRICT,
    OPT_QUIET,
    OPT_HELP,
    OPT_VERSION,
    OPT_PASSWORD,
    OPT_RECEIVED,
    OPT_RESEND,
    OPT_VALUED
};

/* Options that take a value, in the order of the table below. */
static const size_t valued_off[] = {
    offsetof(cli_opts, state),
    offsetof(cli_opts, server),
    offsetof(cli_opts, email),
    offsetof(cli_opts, code),
    offsetof(cli_opts, password_file),
    offsetof(cli_opts, new_password_file),
    offsetof(cli_opts, primary_password_file),
    offsetof(cli_opts, profile),
    offsetof(cli_opts, store_dir),
    offsetof(cli_opts, collections),
    offsetof(cli_opts, data),
    offsetof(cli_opts, listen),
    offsetof(cli_opts, title),
    offsetof(cli_opts, as_of),
    offsetof(cli_opts, recovery_key_file),
    offsetof(cli_opts, restore_days),
    offsetof(cli_opts, nonce_cache),
};

static const struct option long_opts[] = {
    {"state", required_argument, NULL, OPT_VALUED + 0},
    {"server", required_argument, NULL, OPT_VALUED + 1},
    {"email", required_argument, NULL, OPT_VALUED + 2},
    {"code", required_argument, NULL, OPT_VALUED + 3},
    {"password-file", required_argument, NULL, OPT_VALUED + 4},
    {"new-password-file", required_argument, NULL, OPT_VALUED + 5},
    {"primary-password-file", required_argument, NULL, OPT_VALUED + 6},
    {"profile", required_argument, NULL, OPT_VALUED + 7},
    {"store-dir", required_argument, NULL, OPT_VALUED + 8},
    {"collections", required_argument, NULL, OPT_VALUED + 9},
    {"data", required_argument, NULL, OPT_VALUED + 10},
    {"listen", required_argument, NULL, OPT_VALUED + 11},
    {"title", required_argument, NULL, OPT_VALUED + 12},
    {"as-of", required_argument, NULL, OPT_VALUED + 13},
    {"recovery-key-file", required_argument, NULL, OPT_VALUED + 14},
    {"restore-days", required_argument, NULL, OPT_VALUED + 15},
    {"nonce-cache", required_argument, NULL, OPT_VALUED + 16},
    {"yes", no_argument, NULL, OPT_YES},
    {"allow-mass-delete", no_argument, NULL, OPT_ALLOW_MASS_DELETE},
    {"received", no_argument, NULL, OPT_RECEIVED},
    {"resend", no_argument, NULL, OPT_RESEND},
    {"json", no_argument, NULL, OPT_JSON},
    {"strict", no_argument, NULL, OPT_STRICT},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"password", optional_argument, NULL, OPT_PASSWORD},
    {NULL, 0, NULL, 0},
};

/* getopt_long over the whole line (options may come before or after the
 * command words); the words land in words[].  -1 on a usage error. */
static int parse(int argc, char **argv, cli_opts *o, const char **words, int *nwords, int *help, int *version)
{
    *nwords = 0;
    opterr = 0;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, ":qh", long_opts, NULL)) != -1) {
        /* "--email --server URL": an option is never taken as another's value */
        if (optarg && optarg == argv[optind - 1] && !strncmp(optarg, "--", 2) && optarg[2]) {
            fprintf(stderr, "picl: %s needs a value, not the option %s\n", argv[optind - 2], optarg);
            return -1;
        }
        if (ch >= OPT_VALUED && ch < OPT_VALUED + (int)(sizeof valued_off / sizeof valued_off[0])) {
            if (!*optarg) {
                fprintf(stderr, "picl: %s needs a value\n", argv[optind - 1]);
                return -1;
            }
            *(const char **)((char *)o + valued_off[ch - OPT_VALUED]) = optarg;
            continue;
        }
        switch (ch) {
        case OPT_JSON:
            o->json = 1;
            break;
        case OPT_YES:
            o->yes = 1;
            break;
        case OPT_ALLOW_MASS_DELETE:
            o->allow_mass_delete = 1;
            break;
        case OPT_STRICT:
            o->strict = 1;
            break;
        case OPT_RECEIVED:
            o->received = 1;
            break;
        case OPT_RESEND:
            o->resend = 1;
            break;
        case 'q':
        case OPT_QUIET:
            o->quiet = 1;
            break;
        case 'h':
        case OPT_HELP:
            *help = 1;
            break;
        case OPT_VERSION:
            *version = 1;
            break;
        case OPT_PASSWORD:
            fprintf(stderr, "picl: passwords are never taken from the command line: use PICL_PASSWORD, "
                            "--password-file or the prompt\n");
            return -1;
        case ':':
            fprintf(stderr, "picl: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            /* an unknown letter of "-xyz" (getopt may still be inside that
             * word, so name the letter); a device id can start with "-" */
            if (optopt)
                fprintf(stderr,
                        "picl: unknown option -%c (see picl --help; an argument that starts with "
                        "\"-\", such as a device id, goes after \"--\")\n",
                        optopt);
            else
                fprintf(stderr, "picl: unknown option %s (see picl --help)\n", argv[optind - 1]);
            return -1;
        }
    }
    for (int i = optind; i < argc; i++) {
        if (*nwords == 10) {
            fprintf(stderr, "picl: too many arguments\n");
            return -1;
        }
        words[(*nwords)++] = argv[i];
    }
    return 0;
}

/* mkdir -p: the parts it creates are 0700.  0, or -1 with errno. */
static int mkdirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (!n || n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0700) != 0 && errno != EEXIST)
                return -1;
            buf[i] = c;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0)
        return -1;
    if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* One rule: the state is --state DIR, else $XDG_DATA_HOME/picl, else
 * ~/.local/share/picl; --profile never moves it. */
static const char *default_state(const cli_opts *o, char *buf, size_t cap)
{
    if (o->state)
        return o->state;
    const char *x = getenv("XDG_DATA_HOME");
    if (x && *x) {
        snprintf(buf, cap, "%s/picl", x);
        return buf;
    }
    const char *h = getenv("HOME");
    snprintf(buf, cap, "%s/.local/share/picl", h && *h ? h : ".");
    return buf;
}

/* picl help COMMAND / picl COMMAND --help: that command's lines of the usage. */
static int command_help(const char *word)
{
    int found = 0, in = 0;
    const char *line = USAGE;
    size_t wl = strlen(word);
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        int starts = len > 2 + wl && !strncmp(line, "  ", 2) && !strncmp(line + 2, word, wl) &&
                     (line[2 + wl] == ' ' || line[2 + wl] == '\n');
        int cont = len > 10 && !strncmp(line, "          ", 10);
        in = starts || (in && cont);
        if (in) {
            printf("%.*s\n", (int)len, line);
            found = 1;
        }
        line += len + (end ? 1 : 0);
    }
    if (!found) {
        fprintf(stderr, "picl: no command '%s' (see picl --help)\n", word);
        return CLI_USAGE;
    }
    printf("\nOptions for every command: picl --help.  See picl(1) for details.\n");
    return CLI_OK;
}

/* ---- main ---------------------------------------------------------------------- */

static int run_logout(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    picl_status st = picl_service_sign_out(svc);
    return st == PICL_OK ? ok_line(o, "signed out") : cli_fail(o, svc, st);
}

static int run_account(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cmd_account(o, svc, sub, state);
}

static int run_login(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cmd_login(o, svc, state);
}

static int run_status(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cmd_status(o, svc);
}

static int run_password(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cmd_password(o, svc, sub, state);
}

static int run_class(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cmd_class(o, svc);
}

static int run_sync(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cmd_sync(o, svc, state);
}

static int run_tabs(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cli_tabs(o, svc);
}

static int run_send_tab(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cli_send_tab(o, svc);
}

static int run_restore(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cli_restore(o, svc);
}

static int run_device(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cli_device(o, svc, sub);
}

static int run_recovery_key(const cli_opts *o, picl_service *svc, const char *sub, const char *state)
{
    return cli_recovery_key(o, svc, sub);
}

/* The commands that work on the local state through a service object (server,
 * demo and help need none).  sub is the subcommand word (NULL without one). */
typedef struct cli_command {
    const char *name;
    int subcommand; /* "account verify", "password change" ...: the next word is needed */
    int no_args;    /* takes no further words */
    int (*run)(const cli_opts *o, picl_service *svc, const char *sub, const char *state);
} cli_command;

static const cli_command commands[] = {
    {.name = "account", .subcommand = 1, .run = run_account},
    {.name = "login", .run = run_login},
    {.name = "logout", .no_args = 1, .run = run_logout},
    {.name = "status", .no_args = 1, .run = run_status},
    {.name = "password", .subcommand = 1, .run = run_password},
    {.name = "class", .run = run_class},
    {.name = "sync", .run = run_sync},
    {.name = "tabs", .run = run_tabs},
    {.name = "send-tab", .run = run_send_tab},
    {.name = "restore", .run = run_restore},
    {.name = "device", .subcommand = 1, .run = run_device},
    {.name = "recovery-key", .subcommand = 1, .run = run_recovery_key},
};

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

/* A code pasted from a mail may carry spaces or a CR: o->code without them. */
static void clean_code(cli_opts *o)
{
    static char code[256];
    if (!o->code)
        return;
    size_t n = 0;
    for (const char *p = o->code; *p && n + 1 < sizeof code; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            code[n++] = *p;
    code[n] = 0;
    o->code = code;
}

/* picl help [COMMAND] */
static int run_help(const char **w, int nw)
{
    if (nw > 2) {
        fprintf(stderr, "picl: usage: picl help [COMMAND]\n");
        return CLI_USAGE;
    }
    return nw < 2 ? (fputs(USAGE, stdout), CLI_OK) : command_help(w[1]);
}

/* picl server and picl demo: no local state of their own. */
static int run_serverless(const cli_opts *o, const char **w, int nw, const char *self)
{
    int server = !strcmp(w[0], "server");
    if (nw > 1) {
        fprintf(stderr, "picl: unexpected argument '%s' (usage: picl %s)\n", w[1],
                server ? "server [--data DIR] [--listen HOST:PORT] [--restore-days N]" : "demo");
        return CLI_USAGE;
    }
    return server ? cli_server(o) : cli_demo(o, self);
}

/* The words after the command (and its subcommand) into o->args. */
static int take_args(cli_opts *o, const cli_command *c, const char **w, int nw)
{
    if (c->subcommand && nw < 2) {
        fprintf(stderr, "picl: '%s' needs a subcommand (see picl %s --help)\n", c->name, c->name);
        return CLI_USAGE;
    }
    for (int i = c->subcommand ? 2 : 1; i < nw && o->nargs < 8; i++)
        o->args[o->nargs++] = (char *)w[i];
    return c->no_args && too_many(o, 0, c->name) ? CLI_USAGE : CLI_OK;
}

/* The local state directory, made when missing, in buf; NULL (said) when it
 * cannot be used or --profile is not a directory. */
static const char *prepare_state(const cli_opts *o, char *buf, size_t cap)
{
    struct stat sb;
    if (o->profile && (stat(o->profile, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
        fprintf(stderr, "picl: the profile directory %s %s\n", o->profile,
                stat(o->profile, &sb) != 0 ? "does not exist" : "is not a directory");
        return NULL;
    }
    const char *state = default_state(o, buf, cap);
    if (mkdirs(state) != 0) {
        fprintf(stderr, "picl: cannot use %s for the local state: %s\n", state, strerror(errno));
        return NULL;
    }
    if (o->profile && !o->state) {
        char old[4200];
        snprintf(old, sizeof old, "%s/picl/state.json", o->profile);
        if (stat(old, &sb) == 0)
            fprintf(stderr,
                    "picl: note: %s is the state of an older picl; the state is now in %s "
                    "(--state %s/picl keeps using the old one)\n",
                    old, state, o->profile);
    }
    return state;
}

/* The service object over state, set up from the options; an exit code. */
static int open_service(cli_opts *o, const char *state, picl_service **svc)
{
    picl_status st = picl_service_create(state, svc);
    if (st != PICL_OK) {
        fprintf(stderr, "picl: cannot open the local state in %s: %s\n", state, picl_strerror(st));
        return cli_exit_code(st) == CLI_USAGE || st == PICL_ERROR_NSS_INIT ? CLI_LOCAL : cli_exit_code(st);
    }
    if (o->strict)
        picl_service_set_persist_keys(*svc, 0);
    if (o->allow_mass_delete)
        picl_service_set_allow_mass_delete(*svc, 1);
    picl_service_add_observer(*svc, cli_on_progress, o);
#ifdef PICL_TEST_HOOKS /* test builds only (Makefile.in: TEST_HOOKS): cheap stretching */
    const char *floor = getenv("PICL_TEST_STRETCH_FLOOR");
    if (floor && !strcmp(floor, "cheap"))
        picl_service_set_stretching_floor(*svc, 1000, 1024, 8, 1, 1000);
#endif
    return CLI_OK;
}

int main(int argc, char **argv)
{
    cli_opts o;
    memset(&o, 0, sizeof o);
    const char *w[10];
    int nw = 0, help = 0, version = 0;
    /* 1. the command line */
    if (parse(argc, argv, &o, w, &nw, &help, &version) != 0)
        return CLI_USAGE;
    if (version) {
        printf("picl 0.1.0\n");
        return CLI_OK;
    }
    if (help)
        return nw && strcmp(w[0], "help") ? command_help(w[0]) : (fputs(USAGE, stdout), CLI_OK);
    clean_code(&o);
    if (nw == 0) {
        fputs(USAGE, stderr);
        return CLI_USAGE;
    }
    /* 2. the commands without a local state */
    if (!strcmp(w[0], "help"))
        return run_help(w, nw);
    if (!strcmp(w[0], "server") || !strcmp(w[0], "demo"))
        return run_serverless(&o, w, nw, argv[0]);
    /* 3. the command, its words, the state and the service */
    const cli_command *c = find_command(w[0]);
    if (!c) {
        fprintf(stderr, "picl: unknown command '%s' (see picl --help)\n", w[0]);
        return CLI_USAGE;
    }
    if (take_args(&o, c, w, nw) != CLI_OK)
        return CLI_USAGE;
    char sbuf[4096];
    const char *state = prepare_state(&o, sbuf, sizeof sbuf);
    if (!state)
        return CLI_LOCAL;
    picl_service *svc = NULL;
    int rc = open_service(&o, state, &svc);
    if (rc != CLI_OK)
        return rc;
    /* 4. run it; a failed command leaves the state as it found it */
    rc = c->run(&o, svc, c->subcommand ? w[1] : NULL, state);
    picl_service_release(svc);
    if (rc != CLI_OK)
        restore_state();
    free(saved_state.text);
    return rc;
}
