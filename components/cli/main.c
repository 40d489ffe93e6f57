/* main.c -- the picl command (client.md section 6): accounts, classes, sync
 * of a Firefox profile or JSON files, and the servers, over the service object. */
#include "cli.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include <jansson.h>

static const char *USAGE =
    "usage: picl [--state DIR] [--json] COMMAND [ARGS]\n"
    "\n"
    "Profile in the Cloud: sync a browser profile (bookmarks, passwords, history)\n"
    "with end-to-end encryption in two security classes (A: recoverable after a\n"
    "forgotten password; B: never leaves your devices, lost on a password reset).\n"
    "\n"
    "commands:\n"
    "  server [--data DIR] [--listen 127.0.0.1:PORT]  keyserver + storage server, one process\n"
    "  account create --server URL --email E          create an account (a code is mailed)\n"
    "  account verify --code C                        verify the email address\n"
    "  account status                                 same as status\n"
    "  account destroy                                erase the account on the server\n"
    "  login --server URL --email E                   sign in on this device, fetch kA and kB\n"
    "  logout                                         sign out, forget the keys here\n"
    "  status                                         who is signed in, key fingerprints\n"
    "  password change                                new password, same kB (class B kept)\n"
    "  password forgot --server URL --email E         mail a reset code\n"
    "  password reset --code C                        set a new password (class B is lost)\n"
    "  class get COLLECTION                           A or B\n"
    "  class set COLLECTION A|B                       move a collection to another class\n"
    "  sync [--profile DIR | --store-dir DIR] [--collections a,b,c]\n"
    "                                                 sync a Firefox profile (Firefox closed)\n"
    "                                                 or JSON files DIR/<collection>.json\n"
    "  demo                                           the whole story on a scratch server\n"
    "  help [COMMAND]                                 this text\n"
    "\n"
    "options:\n"
    "  --state DIR           local state (default $XDG_DATA_HOME/picl, or PROFILE/picl\n"
    "                        with --profile)\n"
    "  --json                machine-readable output\n"
    "  --password-file F     read the password from F (first line); also PICL_PASSWORD.\n"
    "  --new-password-file F the new password; also PICL_NEW_PASSWORD.  Otherwise\n"
    "                        passwords are asked for without echo, never taken from argv.\n"
    "  --primary-password-file F  the Firefox profile's primary password (also\n"
    "                        PICL_PRIMARY_PASSWORD), when it has one\n"
    "  --strict              keep kB in memory only (class B syncs after a password entry)\n"
    "  --version, --help\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage, 3 authentication (wrong password, unverified,\n"
    "session ended, password reset on another device), 4 network or server, 5 conflict,\n"
    "forged class map or records failing their integrity check, 6 local data\n"
    "(profile locked or missing, malformed store file).\n";

int cli_exit_code(picl_status st)
{
    switch (st) {
    case PICL_OK:
        return CLI_OK;
    case PICL_ERROR_INVALID_ARGUMENT:
        return CLI_USAGE;
    case PICL_ERROR_WRONG_PASSWORD:
    case PICL_ERROR_UNVERIFIED:
    case PICL_ERROR_ACCOUNT_EXISTS:
    case PICL_ERROR_UNKNOWN_ACCOUNT:
    case PICL_ERROR_INVALID_CODE:
    case PICL_ERROR_TOKEN:
    case PICL_ERROR_WEAK_PARAMS:
    case PICL_ERROR_STATE:
    case PICL_ERROR_KEYS_CHANGED: /* a password reset elsewhere: sign in again */
        return CLI_AUTH;
    case PICL_ERROR_NETWORK:
    case PICL_ERROR_BACKOFF:
    case PICL_ERROR_SERVER:
    case PICL_ERROR_PROTOCOL:
        return CLI_NETWORK;
    case PICL_ERROR_CONFLICT:
    case PICL_ERROR_CLASSMAP:
    case PICL_ERROR_INTEGRITY:
        return CLI_CONFLICT;
    case PICL_ERROR_PROFILE_LOCKED:
    case PICL_ERROR_ENCODING:
    case PICL_ERROR_IO:
    case PICL_ERROR_NOT_FOUND:
    case PICL_ERROR_DATABASE:
    case PICL_ERROR_UNSUPPORTED:
        return CLI_LOCAL;
    default:
        return CLI_FAILURE;
    }
}

int cli_fail(const cli_opts *o, picl_service *svc, picl_status st)
{
    const char *msg = svc && *picl_service_last_error(svc) ? picl_service_last_error(svc) : picl_strerror(st);
    if (o->json) {
        json_t *j = json_pack("{s:s, s:i, s:s}", "status", "error", "code", (int)st, "message", msg);
        char *t = json_dumps(j, JSON_COMPACT);
        printf("%s\n", t ? t : "{}");
        free(t);
        json_decref(j);
    } else {
        fprintf(stderr, "picl: %s\n", msg);
    }
    return cli_exit_code(st);
}

int cli_read_secret(const char *file, const char *env, const char *prompt, char *buf, size_t cap)
{
    if (file) {
        FILE *fp = fopen(file, "r");
        if (!fp) {
            fprintf(stderr, "picl: cannot read %s: %s\n", file, strerror(errno));
            return -1;
        }
        int ok = fgets(buf, (int)cap, fp) != NULL;
        fclose(fp);
        if (!ok)
            buf[0] = 0;
        buf[strcspn(buf, "\r\n")] = 0;
        return 0;
    }
    const char *v = env ? getenv(env) : NULL;
    if (v) {
        snprintf(buf, cap, "%s", v);
        return 0;
    }
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "picl: no terminal to ask for the password: set %s or use --password-file\n",
                env ? env : "PICL_PASSWORD");
        return -1;
    }
    struct termios old, quiet;
    int have = tcgetattr(fd, &old) == 0;
    if (have) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(fd, TCSAFLUSH, &quiet);
    }
    if (write(fd, prompt, strlen(prompt)) < 0) {
        /* nothing to do: the read below still works */
    }
    ssize_t n = read(fd, buf, cap - 1);
    if (have)
        tcsetattr(fd, TCSAFLUSH, &old);
    if (write(fd, "\n", 1) < 0) {
    }
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    buf[strcspn(buf, "\r\n")] = 0;
    return 0;
}

/* ---- progress --------------------------------------------------------------- */

static void on_progress(void *ctx, const char *phase, const char *coll, int64_t done, int64_t total, const char *msg)
{
    const cli_opts *o = ctx;
    if (o->json || o->quiet)
        return;
    int tty = isatty(STDERR_FILENO);
    if (!strcmp(phase, "status") || !strcmp(phase, "account")) {
        if (*msg)
            fprintf(stderr, "%s%s%s%s\n", tty ? "\r\033[K" : "", *coll ? coll : "", *coll ? ": " : "", msg);
        return;
    }
    if (tty) {
        /* a bar per collection, redrawn in place */
        int width = 24, fill = total > 0 ? (int)(done * width / total) : (done ? width : 0);
        char bar[32];
        for (int i = 0; i < width; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[width] = 0;
        fprintf(stderr, "\r\033[K%-10s %-8s [%s] %lld%s%s", coll, phase, bar, (long long)done,
                total > 0 ? "/" : "", total > 0 ? "" : "");
        if (total > 0)
            fprintf(stderr, "%lld", (long long)total);
        fflush(stderr);
    } else if (done == total || total < 0) {
        fprintf(stderr, "picl: %s: %s %lld\n", coll, phase, (long long)done);
    }
}

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

static int cmd_account(const cli_opts *o, picl_service *svc, const char *sub)
{
    char pw[1024], pw2[1024];
    picl_status st;
    if (!strcmp(sub, "create")) {
        if (!need(o, o->server, "--server URL") || !need(o, o->email, "--email E"))
            return CLI_USAGE;
        if ((st = picl_service_set_keyserver_url(svc, o->server)) != PICL_OK)
            return cli_fail(o, svc, st);
        if (!with_password(o, "New password: ", pw, sizeof pw))
            return CLI_USAGE;
        if (!o->password_file && !getenv("PICL_PASSWORD")) {
            if (cli_read_secret(NULL, NULL, "Repeat the password: ", pw2, sizeof pw2) != 0 || strcmp(pw, pw2)) {
                fprintf(stderr, "picl: the passwords differ\n");
                return CLI_USAGE;
            }
        }
        st = picl_service_create_account(svc, o->email, pw);
        explicit_bzero(pw, sizeof pw);
        explicit_bzero(pw2, sizeof pw2);
        if (st != PICL_OK)
            return cli_fail(o, svc, st);
        return ok_line(o, "account created: a verification code was mailed; run picl account verify --code CODE");
    }
    if (!strcmp(sub, "verify")) {
        if (!need(o, o->code, "--code C"))
            return CLI_USAGE;
        st = picl_service_verify_email(svc, o->code);
        return st == PICL_OK ? ok_line(o, "email verified: now run picl login to fetch the keys") : cli_fail(o, svc, st);
    }
    if (!strcmp(sub, "status"))
        return cmd_status(o, svc);
    if (!strcmp(sub, "destroy")) {
        if (!with_password(o, "Password: ", pw, sizeof pw))
            return CLI_USAGE;
        st = picl_service_destroy_account(svc, pw);
        explicit_bzero(pw, sizeof pw);
        return st == PICL_OK ? ok_line(o, "account destroyed") : cli_fail(o, svc, st);
    }
    fprintf(stderr, "picl: unknown account command '%s' (create, verify, status, destroy)\n", sub);
    return CLI_USAGE;
}

static int cmd_login(const cli_opts *o, picl_service *svc)
{
    if (!need(o, o->email, "--email E"))
        return CLI_USAGE;
    picl_status st;
    if (o->server && (st = picl_service_set_keyserver_url(svc, o->server)) != PICL_OK)
        return cli_fail(o, svc, st);
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
    return ok_line(o, verified ? "signed in; kA and kB are on this device"
                               : "signed in, but the email is not verified: keys come after picl account verify");
}

static int cmd_password(const cli_opts *o, picl_service *svc, const char *sub)
{
    char pw[1024], npw[1024];
    picl_status st;
    if (!strcmp(sub, "change")) {
        if (!with_password(o, "Current password: ", pw, sizeof pw))
            return CLI_USAGE;
        if (cli_read_secret(o->new_password_file, "PICL_NEW_PASSWORD", "New password: ", npw, sizeof npw) != 0)
            return CLI_USAGE;
        st = picl_service_change_password(svc, pw, npw);
        explicit_bzero(pw, sizeof pw);
        explicit_bzero(npw, sizeof npw);
        return st == PICL_OK ? ok_line(o, "password changed; kB and class-B data are unchanged")
                             : cli_fail(o, svc, st);
    }
    if (!strcmp(sub, "forgot")) {
        if (!need(o, o->email, "--email E"))
            return CLI_USAGE;
        if (o->server && (st = picl_service_set_keyserver_url(svc, o->server)) != PICL_OK)
            return cli_fail(o, svc, st);
        st = picl_service_forgot_password(svc, o->email);
        return st == PICL_OK ? ok_line(o, "a reset code was mailed; run picl password reset --code CODE")
                             : cli_fail(o, svc, st);
    }
    if (!strcmp(sub, "reset")) {
        if (!need(o, o->code, "--code C"))
            return CLI_USAGE;
        if (cli_read_secret(o->new_password_file ? o->new_password_file : o->password_file, "PICL_NEW_PASSWORD",
                            "New password: ", npw, sizeof npw) != 0)
            return CLI_USAGE;
        st = picl_service_complete_password_reset(svc, o->code, npw);
        explicit_bzero(npw, sizeof npw);
        return st == PICL_OK ? ok_line(o, "password reset: class-A data is kept, class-B data is lost by design")
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
    if (!strcmp(o->args[0], "get")) {
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
        if ((st = picl_service_set_collection_class(svc, o->args[1], o->args[2])) != PICL_OK)
            return cli_fail(o, svc, st);
        char line[128];
        snprintf(line, sizeof line, "%s is now class %s", o->args[1], o->args[2]);
        return ok_line(o, line);
    }
    fprintf(stderr, "picl: usage: picl class get COLLECTION | picl class set COLLECTION A|B\n");
    return CLI_USAGE;
}

static int cmd_sync(const cli_opts *o, picl_service *svc)
{
    picl_status st;
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
    if (st != PICL_OK)
        return cli_fail(o, svc, st);
    char *summary = NULL;
    st = picl_service_sync(svc, o->collections ? o->collections : "", &summary);
    if (!o->json && !o->quiet && isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
    if (o->json && summary) {
        printf("%s\n", summary);
    } else if (summary) {
        json_t *j = json_loads(summary, 0, NULL);
        const char *c;
        json_t *v;
        json_object_foreach(json_object_get(j, "collections"), c, v) {
            if (!json_is_object(v))
                continue;
            printf("%-10s %-9s downloaded %lld, applied %lld, uploaded %lld%s\n", c,
                   json_string_value(json_object_get(v, "status")),
                   (long long)json_integer_value(json_object_get(v, "downloaded")),
                   (long long)json_integer_value(json_object_get(v, "applied")),
                   (long long)json_integer_value(json_object_get(v, "uploaded")),
                   json_integer_value(json_object_get(v, "failed")) ? " (some records failed)" : "");
            if (json_integer_value(json_object_get(v, "unreadable")) > 0)
                printf("%-10s %lld saved login(s) cannot be decrypted with this profile's key4.db: kept as they "
                       "are, not synced\n", c, (long long)json_integer_value(json_object_get(v, "unreadable")));
        }
        size_t fi;
        json_t *fr;
        json_array_foreach(json_object_get(j, "failed"), fi, fr) /* client.md 7: each one named */
            printf("integrity: %s/%s: %s (not applied)\n", json_string_value(json_object_get(fr, "collection")),
                   json_string_value(json_object_get(fr, "id")), json_string_value(json_object_get(fr, "reason")));
        if (json_is_true(json_object_get(json_object_get(j, "collections"), "keys_changed"))) {
            char *b = json_dumps(json_object_get(json_object_get(j, "collections"), "class_b"), JSON_COMPACT);
            printf("The password was reset: class-A data is kept; class-B data made under the old password is "
                   "lost by design, this device's copy was uploaded again. Class B: %s\n", b ? b : "[]");
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

static int parse(int argc, char **argv, cli_opts *o, const char **words, int *nwords)
{
    static const struct {
        const char *name;
        size_t off;
    } valued[] = {
        {"--state", offsetof(cli_opts, state)},
        {"--server", offsetof(cli_opts, server)},
        {"--email", offsetof(cli_opts, email)},
        {"--code", offsetof(cli_opts, code)},
        {"--password-file", offsetof(cli_opts, password_file)},
        {"--new-password-file", offsetof(cli_opts, new_password_file)},
        {"--primary-password-file", offsetof(cli_opts, primary_password_file)},
        {"--profile", offsetof(cli_opts, profile)},
        {"--store-dir", offsetof(cli_opts, store_dir)},
        {"--collections", offsetof(cli_opts, collections)},
        {"--data", offsetof(cli_opts, data)},
        {"--listen", offsetof(cli_opts, listen)},
    };
    *nwords = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (!strcmp(a, "--strict")) {
            o->strict = 1;
            continue;
        }
        if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o->quiet = 1;
            continue;
        }
        if (!strcmp(a, "--password") || !strncmp(a, "--password=", 11)) {
            fprintf(stderr, "picl: passwords are never taken from the command line: use PICL_PASSWORD, "
                            "--password-file or the prompt\n");
            return -1;
        }
        int matched = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
            size_t n = strlen(valued[k].name);
            if (!strncmp(a, valued[k].name, n) && (a[n] == 0 || a[n] == '=')) {
                const char *v = a[n] == '=' ? a + n + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (!v) {
                    fprintf(stderr, "picl: %s needs a value\n", valued[k].name);
                    return -1;
                }
                *(const char **)((char *)o + valued[k].off) = v;
                matched = 1;
                break;
            }
        }
        if (matched)
            continue;
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "picl: unknown option %s\n", a);
            return -1;
        }
        if (*nwords < 8)
            words[(*nwords)++] = a;
    }
    return 0;
}

static const char *default_state(const cli_opts *o, char *buf, size_t cap)
{
    if (o->state)
        return o->state;
    if (o->profile) {
        snprintf(buf, cap, "%s/picl", o->profile);
        return buf;
    }
    const char *x = getenv("XDG_DATA_HOME");
    if (x && *x) {
        snprintf(buf, cap, "%s/picl", x);
        return buf;
    }
    const char *h = getenv("HOME");
    snprintf(buf, cap, "%s/.local/share", h && *h ? h : ".");
    mkdir(buf, 0700);
    snprintf(buf, cap, "%s/.local/share/picl", h && *h ? h : ".");
    return buf;
}

int main(int argc, char **argv)
{
    cli_opts o;
    memset(&o, 0, sizeof o);
    const char *w[8];
    int nw = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(USAGE, stdout);
            return CLI_OK;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("picl 0.1.0\n");
            return CLI_OK;
        }
    }
    if (parse(argc, argv, &o, w, &nw) != 0)
        return CLI_USAGE;
    static char code[256];
    if (o.code) { /* codes pasted from a mail may carry spaces or a CR */
        size_t n = 0;
        for (const char *p = o.code; *p && n + 1 < sizeof code; p++)
            if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
                code[n++] = *p;
        code[n] = 0;
        o.code = code;
    }
    if (nw == 0) {
        fputs(USAGE, stderr);
        return CLI_USAGE;
    }
    const char *cmd = w[0];
    if (!strcmp(cmd, "help")) {
        if (nw < 2) {
            fputs(USAGE, stdout);
            return CLI_OK;
        }
        /* picl help COMMAND: that command's lines of the usage text */
        int found = 0, in = 0;
        const char *line = USAGE;
        while (*line) {
            const char *end = strchr(line, '\n');
            size_t len = end ? (size_t)(end - line) : strlen(line);
            size_t wl = strlen(w[1]);
            int starts = len > 2 + wl && !strncmp(line, "  ", 2) && !strncmp(line + 2, w[1], wl) &&
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
            fprintf(stderr, "picl: no command '%s' (see picl --help)\n", w[1]);
            return CLI_USAGE;
        }
        printf("\nSee picl(1) for details.\n");
        return CLI_OK;
    }
    if (!strcmp(cmd, "server"))
        return cli_server(&o);
    if (!strcmp(cmd, "demo"))
        return cli_demo(&o, argv[0]);
    int known = !strcmp(cmd, "account") || !strcmp(cmd, "login") || !strcmp(cmd, "logout") ||
                !strcmp(cmd, "status") || !strcmp(cmd, "password") || !strcmp(cmd, "class") || !strcmp(cmd, "sync");
    if (!known) {
        fprintf(stderr, "picl: unknown command '%s' (see picl --help)\n", cmd);
        return CLI_USAGE;
    }
    if ((!strcmp(cmd, "account") || !strcmp(cmd, "password")) && nw < 2) {
        fprintf(stderr, "picl: '%s' needs a subcommand (see picl --help)\n", cmd);
        return CLI_USAGE;
    }
    for (int i = 1; i < nw && i - 1 < 8; i++)
        o.args[o.nargs++] = (char *)w[i];
    char sbuf[4096];
    const char *state = default_state(&o, sbuf, sizeof sbuf);
    picl_service *svc = NULL;
    picl_status st = picl_service_create(state, &svc);
    if (st != PICL_OK) {
        fprintf(stderr, "picl: cannot open the local state in %s: %s\n", state, picl_strerror(st));
        return cli_exit_code(st) == CLI_USAGE ? CLI_LOCAL : cli_exit_code(st);
    }
    if (o.strict)
        picl_service_set_persist_keys(svc, 0);
    picl_service_add_observer(svc, on_progress, &o);
#ifdef PICL_TEST_HOOKS /* test builds only (Makefile.in: TEST_HOOKS): cheap stretching */
    const char *floor = getenv("PICL_TEST_STRETCH_FLOOR");
    if (floor && !strcmp(floor, "cheap"))
        picl_service_set_stretching_floor(svc, 1000, 1024, 8, 1, 1000);
#endif
    int rc;
    if (!strcmp(cmd, "account"))
        rc = cmd_account(&o, svc, w[1]);
    else if (!strcmp(cmd, "login"))
        rc = cmd_login(&o, svc);
    else if (!strcmp(cmd, "logout"))
        rc = (st = picl_service_sign_out(svc)) == PICL_OK ? ok_line(&o, "signed out") : cli_fail(&o, svc, st);
    else if (!strcmp(cmd, "status"))
        rc = cmd_status(&o, svc);
    else if (!strcmp(cmd, "password"))
        rc = cmd_password(&o, svc, w[1]);
    else if (!strcmp(cmd, "class"))
        rc = cmd_class(&o, svc);
    else
        rc = cmd_sync(&o, svc);
    picl_service_release(svc);
    return rc;
}
