/* ks_mail.h -- the keyserver's mail outbox: Maildir files or SMTP via libcurl. */
#ifndef PICL_KS_MAIL_H
#define PICL_KS_MAIL_H

#include <stddef.h>

#include "picl.h"

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
    const char *to;          /* raw bytes, NUL-terminated */
    const char *subject;
    const char *uid_hex;
    const char *code_header; /* "X-Verify-Code" or "X-Recovery-Code" */
    const char *code;
    const char *body;        /* text, lines separated by "\n" */
    const char *unique;      /* a unique name part (random hex) */
} ks_mail_msg;

/* Creates maildir and its tmp/new/cur subdirectories (mode 0700). */
picl_status ks_mail_init(const char *maildir);

picl_status ks_mail_send(const char *maildir, const char *smtp_url, const ks_mail_msg *m);

#endif
