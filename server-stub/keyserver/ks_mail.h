/* SPDX-License-Identifier: MPL-2.0 */
/* ks_mail.h -- the keyserver's mail outbox: Maildir files or SMTP via libcurl. */
#ifndef PICL_KS_MAIL_H
#define PICL_KS_MAIL_H

#include <stddef.h>

#include "picl_status.h"

/*
 * A message is RFC 5322 text with headers From, To, Subject, Date,
 * Message-ID, X-Uid and one of X-Verify-Code / X-Recovery-Code.  Without an
 * SMTP URL it is written to <maildir>/tmp/<unique>, fsync()ed and renamed
 * into <maildir>/new/ (Maildir delivery); with one it is sent through
 * libcurl.  The recipient must have no control characters (the caller
 * validated it).  PICL_ERROR_IO / PICL_ERROR_NETWORK / NO_MEMORY.
 */
typedef struct ks_mail_msg {
    const char *from;
    const char *to; /* raw bytes, NUL-terminated */
    const char *subject;
    const char *uid_hex;
    const char *code_header; /* "X-Verify-Code" or "X-Recovery-Code" */
    const char *code;
    const char *body;   /* text, lines separated by "\n" */
    const char *unique; /* a unique name part (random hex) */
} ks_mail_msg;

/* Creates maildir and its tmp/new/cur subdirectories (mode 0700). */
picl_status ks_mail_init(const char *maildir);

picl_status ks_mail_send(const char *maildir, const char *smtp_url, const ks_mail_msg *m);

/*
 * The outbox of verification mails (ks_db.h, ks_db_outbox_*): an account
 * and its mail's row are written in one transaction; the request that made
 * them delivers the mail at once and deletes the row.  ks_outbox_deliver
 * delivers what a crash (or a failed delete) left: with startup = 1 every
 * row not claimed by another keyserver within the last KS_OUTBOX_LEASE
 * seconds (called by ks_server_new, before the server answers), else the
 * rows due now (called by the periodic housekeeping, ks_sweep).  At most
 * max mails; a failed one is logged (without its code) and tried again
 * KS_OUTBOX_LEASE seconds later; a row whose account was verified meanwhile
 * goes without a mail.  Returns the first database failure, else PICL_OK
 * (a mail that failed is not an error of the call).  *sent (may be NULL):
 * the mails delivered.
 */
struct ks_server;
picl_status ks_outbox_deliver(struct ks_server *s, int startup, size_t max, size_t *sent);

/* Test builds only (PICL_TEST_HOOKS): PICL_TEST_CRASH_AT=<point> kills the
 * process (SIGKILL, nothing flushed) when it reaches that point
 * ("ks-create-committed": an account and its outbox row are committed, the
 * mail not sent; "ks-create-mailed": the mail is delivered, its row not yet
 * deleted).  Does nothing in other builds. */
void ks_crash_point(const char *point);

#endif
