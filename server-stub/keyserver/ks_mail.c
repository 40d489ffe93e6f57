/* SPDX-License-Identifier: MPL-2.0 */
/* ks_mail.c -- the keyserver's mail: Maildir or SMTP delivery, and the
 * outbox of verification mails (see ks_mail.h). */
#include "keyserver/ks_mail.h"
#include "picl.h" /* picl_strerror */

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crypto/codec.h"
#include "crypto/util.h"
#include "http/http.h"
#include "keyserver/ks_internal.h"

static picl_status mkdir_p1(const char *path)
{
    if (mkdir(path, 0700) == 0 || errno == EEXIST)
        return PICL_OK;
    return PICL_ERROR_IO;
}

picl_status ks_mail_init(const char *maildir)
{
    char p[4096];
    picl_status rc = mkdir_p1(maildir);
    const char *sub[] = {"tmp", "new", "cur"};
    for (size_t i = 0; rc == PICL_OK && i < 3; i++) {
        if ((size_t)snprintf(p, sizeof p, "%s/%s", maildir, sub[i]) >= sizeof p)
            return PICL_ERROR_INVALID_ARGUMENT;
        rc = mkdir_p1(p);
    }
    return rc;
}

/* Renders the message (CRLF line ends) into a malloc()ed string. */
static char *render(const ks_mail_msg *m, size_t *len)
{
    srv_buf b;
    srv_buf_init(&b, 64 * 1024);
    char date[64];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm);
    srv_buf_printf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\n", m->from, m->to, m->subject, date);
    srv_buf_printf(&b, "Message-ID: <%s@picl-keyserver>\r\nMIME-Version: 1.0\r\n", m->unique);
    srv_buf_puts(&b, "Content-Type: text/plain; charset=utf-8\r\n");
    srv_buf_printf(&b, "X-Uid: %s\r\n%s: %s\r\n\r\n", m->uid_hex, m->code_header, m->code);
    for (const char *s = m->body; *s; s++) {
        if (*s == '\n')
            srv_buf_puts(&b, "\r\n");
        else
            srv_buf_append(&b, s, 1);
    }
    srv_buf_puts(&b, "\r\n");
    return srv_buf_take(&b, len);
}

static picl_status write_maildir(const char *maildir, const ks_mail_msg *m, const char *text, size_t len)
{
    char tmp[4096], dst[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/tmp/%lld.%s.picl", maildir, (long long)time(NULL), m->unique) >=
            sizeof tmp ||
        (size_t)snprintf(dst, sizeof dst, "%s/new/%lld.%s.picl", maildir, (long long)time(NULL), m->unique) >=
            sizeof dst)
        return PICL_ERROR_INVALID_ARGUMENT;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return PICL_ERROR_IO;
    size_t off = 0;
    picl_status rc = PICL_OK;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = PICL_ERROR_IO;
            break;
        }
        off += (size_t)w;
    }
    if (rc == PICL_OK && fsync(fd) != 0)
        rc = PICL_ERROR_IO;
    if (close(fd) != 0)
        rc = PICL_ERROR_IO;
    if (rc == PICL_OK && rename(tmp, dst) != 0)
        rc = PICL_ERROR_IO;
    if (rc != PICL_OK)
        unlink(tmp);
    return rc;
}

typedef struct upload {
    const char *p;
    size_t left;
} upload;

static size_t read_cb(char *out, size_t size, size_t n, void *ctx)
{
    upload *u = ctx;
    size_t want = size * n;
    if (want > u->left)
        want = u->left;
    memcpy(out, u->p, want);
    u->p += want;
    u->left -= want;
    return want;
}

static picl_status send_smtp(const char *url, const ks_mail_msg *m, const char *text, size_t len)
{
    CURL *c = curl_easy_init();
    if (!c)
        return PICL_ERROR_NO_MEMORY;
    char from[512], to[512];
    snprintf(from, sizeof from, "<%s>", m->from);
    snprintf(to, sizeof to, "<%s>", m->to);
    struct curl_slist *rcpt = curl_slist_append(NULL, to);
    upload u = {text, len};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, from);
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, &u);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    CURLcode cc = rcpt ? curl_easy_perform(c) : CURLE_OUT_OF_MEMORY;
    curl_slist_free_all(rcpt);
    curl_easy_cleanup(c);
    return cc == CURLE_OK ? PICL_OK : PICL_ERROR_NETWORK;
}

picl_status ks_mail_send(const char *maildir, const char *smtp_url, const ks_mail_msg *m)
{
    size_t len = 0;
    char *text = render(m, &len);
    if (!text)
        return PICL_ERROR_NO_MEMORY;
    picl_status rc = smtp_url ? send_smtp(smtp_url, m, text, len) : write_maildir(maildir, m, text, len);
    /* The text carries a code that grants access: wipe it. */
    picl__zfree(text, len);
    return rc;
}

/* ---- verification and reset codes ------------------------------------------ */

picl_status ks_send_code(ks_server *s, const ks_account *a, int recovery, const char *code)
{
    char uid[2 * KS_UID_BYTES + 1], unique[33];
    uint8_t u[16];
    picl__hex_encode(uid, a->uid, KS_UID_BYTES);
    picl_status rc = picl__random_bytes(u, sizeof u);
    if (rc != PICL_OK)
        return rc;
    picl__hex_encode(unique, u, sizeof u);
    char body[1024];
    if (recovery)
        snprintf(body, sizeof body,
                 "Someone asked to reset the password of your PiCL account.\n"
                 "Your reset code is %s (valid 15 minutes, 3 tries).\n"
                 "Resetting keeps your class-A data; class-B data is lost by design.\n",
                 code);
    else
        snprintf(body, sizeof body,
                 "Welcome to PiCL.\nVerify your email with:\n\n  picl account verify --code %s\n"
                 "\n"
                 "IMPORTANT: if you did not create this PiCL account yourself, do NOT\n"
                 "enter this code and do not pass it on to anyone.  Someone else chose\n"
                 "its password: entering the code would give them the data you later\n"
                 "sync into it.  Ignore this mail and the account is deleted within\n"
                 "48 hours; you can then create your own.\n",
                 code);
    ks_mail_msg m = {
        .from = s->mail_from,
        .to = a->email,
        .subject = recovery ? "Your PiCL password reset code" : "Verify your PiCL account",
        .uid_hex = uid,
        .code_header = recovery ? "X-Recovery-Code" : "X-Verify-Code",
        .code = code,
        .body = body,
        .unique = unique,
    };
    /* no Maildir (PostgreSQL without --data) and no SMTP: nowhere to send */
    rc = s->maildir || s->smtp_url ? ks_mail_send(s->maildir, s->smtp_url, &m) : PICL_ERROR_IO;
    picl__wipe(body, sizeof body);
    return rc;
}

/* ---- the outbox of verification mails ------------------------------------ */

void ks_crash_point(const char *point)
{
#ifdef PICL_TEST_HOOKS /* test builds only (Makefile.in: TEST_HOOKS) */
    const char *t = getenv("PICL_TEST_CRASH_AT");
    if (t && !strcmp(t, point))
        raise(SIGKILL);
#else
    (void)point;
#endif
}

static void outbox_log(ks_server *s, int64_t account, const char *what, picl_status rc)
{
    if (!s->log)
        return;
    char line[256];
    snprintf(line, sizeof line, "keyserver: outbox: verification mail of account %" PRId64 " %s: %s", account,
             what, picl_strerror(rc));
    srvlog(s->log, s->hook_ctx, SRVLOG_WARN, "%s", line);
}

/* Delivers the mail of one claimed row: 1 when a mail went out. */
static int outbox_one(ks_server *s, int64_t id, picl_status *db_rc)
{
    ks_account *a = calloc(1, sizeof *a);
    char code[65];
    int sent = 0;
    memset(code, 0, sizeof code);
    picl_status rc = a ? ks_db_account_by_id(s->db, id, a) : PICL_ERROR_NO_MEMORY;
    if (rc == PICL_ERROR_NOT_FOUND || (rc == PICL_OK && a->verified)) {
        /* gone or verified meanwhile (a resent code): no mail needed */
        rc = ks_db_outbox_done(s->db, id);
        goto done;
    }
    if (rc != PICL_OK)
        goto done;
    picl__hex_encode(code, a->verify_code, 32);
    picl_status mrc = ks_send_code(s, a, 0, code);
    if (mrc != PICL_OK) {
        outbox_log(s, id, "not delivered, tried again later", mrc);
        goto done;
    }
    sent = 1;
    rc = ks_db_outbox_done(s->db, id); /* if this fails: sent again later */
done:
    if (rc != PICL_OK && *db_rc == PICL_OK)
        *db_rc = rc;
    picl__wipe(code, sizeof code);
    if (a)
        picl__zfree(a, sizeof *a);
    return sent;
}

picl_status ks_outbox_deliver(ks_server *s, int startup, size_t max, size_t *sent)
{
    int64_t now = ks_now(s);
    /* at start-up, also the rows of the requests a crash cut short (due
     * KS_OUTBOX_LEASE after their creation) */
    int64_t due = startup ? now + KS_OUTBOX_LEASE : now;
    int64_t until = due + KS_OUTBOX_LEASE; /* > due: a claimed row is not claimed again here */
    picl_status rc = PICL_OK;
    size_t done = 0, count = 0;
    int64_t ids[16];
    while (rc == PICL_OK && done < max) {
        size_t n = 0, cap = max - done < 16 ? max - done : 16;
        rc = ks_db_outbox_claim(s->db, due, until, ids, cap, &n);
        for (size_t i = 0; rc == PICL_OK && i < n; i++)
            count += (size_t)outbox_one(s, ids[i], &rc);
        done += n;
        if (n < cap)
            break;
    }
    if (sent)
        *sent = count;
    return rc;
}
