/* SPDX-License-Identifier: MPL-2.0 */
/* cli.h -- shared pieces of the picl command: options, output, exit codes. */
#ifndef PICL_CLI_H
#define PICL_CLI_H

#include <stdio.h>
#include "picl.h"

/* Exit codes (documented in picl --help and picl.1). */
enum {
    CLI_OK = 0,
    CLI_FAILURE = 1,  /* anything not below */
    CLI_USAGE = 2,    /* bad command line */
    CLI_AUTH = 3,     /* wrong password, unverified, bad code, session ended */
    CLI_NETWORK = 4,  /* server unreachable, asked to back off, server error */
    CLI_CONFLICT = 5, /* concurrent change, forged/replayed class map */
    CLI_LOCAL = 6     /* local data: profile locked or missing, malformed store */
};

typedef struct cli_opts {
    const char *state;         /* --state DIR */
    const char *server;        /* --server URL */
    const char *email;         /* --email E */
    const char *code;          /* --code C */
    const char *password_file; /* --password-file F */
    const char *new_password_file;
    const char *primary_password_file; /* --primary-password-file F */
    const char *profile;               /* --profile DIR */
    const char *store_dir;             /* --store-dir DIR */
    const char *collections;           /* --collections a,b */
    const char *data;                  /* --data DIR (server) */
    const char *listen;                /* --listen HOST:PORT (server) */
    const char *restore_days;          /* --restore-days N (server): earlier versions kept N days, 0 = off */
    const char *nonce_cache;           /* --nonce-cache N (server): Hawk nonces the storage server holds */
    const char *title;                 /* --title T (send-tab) */
    int received;                      /* --received (tabs) */
    int resend;                        /* --resend (account verify): mail the code again */
    int json;                          /* --json */
    int strict;                        /* --strict: keep kB in memory only */
    int quiet;
    const char *as_of;             /* --as-of TIME (restore) */
    int yes;                       /* --yes: answer the question (restore) */
    int allow_mass_delete;         /* --allow-mass-delete (sync) */
    const char *recovery_key_file; /* --recovery-key-file F (password reset) */
    char *args[8];                 /* positional arguments after the command words */
    int nargs;
} cli_opts;

/* Exit code for a status (common.c). */
int cli_exit_code(picl_status st);

/* Prints "picl: <message>" for a failed call (or JSON with --json) and
 * returns the exit code. */
int cli_fail(const cli_opts *o, picl_service *svc, picl_status st);

/* Reads a secret: from `file` (first line), else the environment variable,
 * else a no-echo prompt on the terminal (whose echo comes back also when
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT ends the process at the prompt).  Never from
 * argv. */
int cli_read_secret(const char *file, const char *env, const char *prompt, char *buf, size_t cap);

/* The progress of a long call (common.c): cli_on_progress is the service's
 * observer (ctx = the cli_opts); between cli_progress_start and
 * cli_progress_stop a terminal shows one bar, redrawn in place. */
void cli_on_progress(void *ctx, const char *phase, const char *coll, int64_t done, int64_t total,
                     const char *msg);
void cli_progress_start(const cli_opts *o);
void cli_progress_stop(void);

int cli_server(const cli_opts *o);
/* picl tabs [--received], picl send-tab DEVICE URL [--title T] (devices.c) */
int cli_tabs(const cli_opts *o, picl_service *svc);
int cli_send_tab(const cli_opts *o, picl_service *svc);
/* After a sync: the "received" and "rejected" of its summary (j, a parsed
 * summary), one line each. */
struct json_t;
void cli_print_received(struct json_t *j);
int cli_demo(const cli_opts *o, const char *self);
/* picl restore COLLECTION --as-of TIME [--yes] (restore.c) */
int cli_restore(const cli_opts *o, picl_service *svc);

/* picl device list|rename NAME|remove ID, picl account events, picl
 * recovery-key create|status|remove (account_ext.c) */
int cli_device(const cli_opts *o, picl_service *svc, const char *sub);
int cli_account_events(const cli_opts *o, picl_service *svc);
int cli_recovery_key(const cli_opts *o, picl_service *svc, const char *sub);

#endif
