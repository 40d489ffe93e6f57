/* SPDX-License-Identifier: MPL-2.0 */
/* test_keyserver_mail.c -- the keyserver's outbox: RFC 5322 files delivered
 * into the Maildir (tmp/ then new/), the same message through SMTP
 * (libcurl) to a minimal SMTP server run by the test, and the outbox rows
 * of verification mails (written with the account, delivered by the
 * request, at start-up and by the periodic housekeeping). */
#include "testutil.h"
#include "testutil_ks.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client/account.h"
#include "client/keyserver_client.h"
#include "crypto/codec.h"
#include "keyserver/ks_internal.h"
#include "keyserver/ks_mail.h"

static char *read_only_file(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    char *text = NULL;
    *count = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        (*count)++;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        free(text);
        text = calloc(1, 16384);
        size_t n = fread(text, 1, 16383, f);
        text[n] = 0;
        fclose(f);
    }
    closedir(d);
    return text;
}

START_TEST(maildir_message)
{
    tu_nss_setup();
    tuks_srv srv;
    tuks_start(&srv, NULL);
    char uid[33];
    tuks_account(&srv, "carol@example.org", "pw", 0, uid);
    char dir[512];
    int n;
    snprintf(dir, sizeof dir, "%s/mail/tmp", srv.dir);
    free(read_only_file(dir, &n));
    ck_assert_int_eq(n, 0); /* delivered: nothing left in tmp/ */
    snprintf(dir, sizeof dir, "%s/mail/new", srv.dir);
    char *m = read_only_file(dir, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_ptr_nonnull(strstr(m, "\r\nTo: carol@example.org\r\n"));
    ck_assert_ptr_nonnull(strstr(m, "\r\nSubject: "));
    char want[64];
    snprintf(want, sizeof want, "\r\nX-Uid: %s\r\n", uid);
    ck_assert_ptr_nonnull(strstr(m, want));
    char *code = strstr(m, "\r\nX-Verify-Code: ");
    ck_assert_ptr_nonnull(code);
    code += 17;
    ck_assert_uint_eq(strspn(code, "0123456789abcdef"), 64);
    ck_assert(code[64] == '\r');
    ck_assert_ptr_nonnull(strstr(m, "\r\n\r\n")); /* headers, blank line, body */
    ck_assert_ptr_null(strstr(m, "X-Recovery-Code"));
    /* every line ends in CRLF */
    for (char *p = strchr(m, '\n'); p; p = strchr(p + 1, '\n'))
        ck_assert(p > m && p[-1] == '\r');
    free(m);
    tuks_stop(&srv);
    tu_nss_teardown();
}
END_TEST

/* ---- a minimal SMTP server (one message) -------------------------------- */

typedef struct smtp {
    int lfd;
    unsigned port;
    char rcpt[256];
    char data[16384];
    pthread_t th;
} smtp;

static int get_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        char c;
        if (recv(fd, &c, 1, 0) != 1)
            return -1;
        buf[n++] = c;
        if (c == '\n')
            break;
    }
    buf[n] = 0;
    return (int)n;
}

static void say(int fd, const char *s) { ck_assert_int_eq(send(fd, s, strlen(s), 0), (ssize_t)strlen(s)); }

static void *smtp_run(void *p)
{
    smtp *s = p;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    char line[1024];
    say(fd, "220 test ESMTP\r\n");
    while (get_line(fd, line, sizeof line) > 0) {
        if (!strncasecmp(line, "EHLO", 4) || !strncasecmp(line, "HELO", 4))
            say(fd, "250 test\r\n");
        else if (!strncasecmp(line, "MAIL FROM:", 10))
            say(fd, "250 ok\r\n");
        else if (!strncasecmp(line, "RCPT TO:", 8)) {
            snprintf(s->rcpt, sizeof s->rcpt, "%.200s", line + 8);
            say(fd, "250 ok\r\n");
        } else if (!strncasecmp(line, "DATA", 4)) {
            say(fd, "354 go\r\n");
            while (get_line(fd, line, sizeof line) > 0 && strcmp(line, ".\r\n"))
                tu_append(s->data, sizeof s->data, line);
            say(fd, "250 queued\r\n");
        } else if (!strncasecmp(line, "QUIT", 4)) {
            say(fd, "221 bye\r\n");
            break;
        } else {
            say(fd, "250 ok\r\n");
        }
    }
    close(fd);
    return NULL;
}

START_TEST(smtp_delivery)
{
    tu_nss_setup();
    smtp s;
    memset(&s, 0, sizeof s);
    s.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(s.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(s.lfd, 1), 0);
    socklen_t len = sizeof sa;
    getsockname(s.lfd, (struct sockaddr *)&sa, &len);
    s.port = ntohs(sa.sin_port);
    ck_assert_int_eq(pthread_create(&s.th, NULL, smtp_run, &s), 0);

    char url[64];
    snprintf(url, sizeof url, "smtp://127.0.0.1:%u", s.port);
    ks_config cfg = {.smtp_url = url};
    tuks_srv srv;
    tuks_start(&srv, &cfg);
    char uid[33];
    tuks_account(&srv, "dave@example.org", "pw", 0, uid);
    pthread_join(s.th, NULL);
    close(s.lfd);
    ck_assert_ptr_nonnull(strstr(s.rcpt, "<dave@example.org>"));
    ck_assert_ptr_nonnull(strstr(s.data, "X-Verify-Code: "));
    char want[64];
    snprintf(want, sizeof want, "X-Uid: %s\r\n", uid);
    ck_assert_ptr_nonnull(strstr(s.data, want));
    ck_assert_int_eq(tuks_mail_count(&srv), 0); /* nothing went to the Maildir */
    tuks_stop(&srv);
    tu_nss_teardown();
}
END_TEST

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[8192];

static void log_hook(void *ctx, const char *line)
{
    pthread_mutex_lock(&log_mu);
    tu_append(log_text, sizeof log_text - 1, line); /* room for the newline */
    tu_append(log_text, sizeof log_text, "\n");
    pthread_mutex_unlock(&log_mu);
}

START_TEST(smtp_unreachable_is_an_error_not_an_account)
{
    tu_nss_setup();
    ks_config cfg = {.smtp_url = "smtp://127.0.0.1:1", .log = log_hook};
    tuks_srv srv;
    tuks_start(&srv, &cfg);
    picl_ks_client *c;
    ck_assert_int_eq(picl__ksc_new(&c, srv.base), PICL_OK);
    char uid[33];
    ck_assert_int_eq(picl__account_create(c, "erin@example.org", 16, "pw", 2, tuks_params(), uid),
                     PICL_ERROR_SERVER);
    ck_assert_int_eq(picl__ksc_last(c)->errnum, 999);
    /* nothing left for a later delivery either: no row, no account */
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM outbox"), 0);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM accounts"), 0);
    picl_ksc_auth_start st;
    ck_assert_int_eq(picl__ksc_auth_start(c, "erin@example.org", 16, &st), PICL_ERROR_UNKNOWN_ACCOUNT);
    picl__ksc_free(c);
    /* the log says where the 500 came from; the answer did not.  The glue
     * logs a request once its answer is sent: give the last one 3 s. */
    for (int i = 0; i < 300; i++) {
        pthread_mutex_lock(&log_mu);
        int seen = strstr(log_text, " POST /v1/auth/start 400 ") != NULL;
        pthread_mutex_unlock(&log_mu);
        if (seen)
            break;
        usleep(10000);
    }
    pthread_mutex_lock(&log_mu);
    ck_assert_ptr_nonnull(strstr(log_text, " ERROR keyserver: POST /v1/account/create 500: internal "
                                           "error in h_account_create:"));
    ck_assert_ptr_nonnull(strstr(log_text, " INFO 127.0.0.1 POST /v1/auth/start 400 "));
    pthread_mutex_unlock(&log_mu);
    tuks_stop(&srv);
    tu_nss_teardown();
}
END_TEST

/* ---- the outbox rows ------------------------------------------------------ */

static int64_t fake_now;
static int64_t clock_hook(void *ctx) { return fake_now; }

/* An unverified account committed with its outbox row but never mailed:
 * what a crash between the commit and the mail leaves.  Its id. */
static int64_t committed_unmailed(const tuks_srv *srv, const char *email, uint8_t fill)
{
    ks_account a;
    memset(&a, 0, sizeof a);
    snprintf(a.email, sizeof a.email, "%s", email);
    a.email_len = strlen(email);
    memset(a.uid, fill, sizeof a.uid);
    memset(a.verify_code, fill ^ 0x5a, sizeof a.verify_code);
    memset(a.ka, 1, sizeof a.ka);
    memset(a.wrap_kb, 2, sizeof a.wrap_kb);
    memset(a.verifier, 3, sizeof a.verifier);
    a.params = *tuks_params();
    a.created = fake_now;
    ck_assert_int_eq(ks_db_account_create(srv->ks->db, &a), PICL_OK);
    return a.id;
}

static long long outbox_rows(const tuks_srv *srv, int64_t account)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM outbox WHERE account = %lld", (long long)account);
    return tuks_db_int(srv, sql);
}

START_TEST(outbox_delivers_what_a_request_did_not)
{
    tu_nss_setup();
    fake_now = (int64_t)time(NULL);
    ks_config cfg = {.now = clock_hook};
    tuks_srv srv;
    tuks_start(&srv, &cfg);
    /* the route mails at once and leaves no row */
    tuks_account(&srv, "olga@example.org", "pw", 0, NULL);
    ck_assert_int_eq(tuks_mail_count(&srv), 1);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT count(*) FROM outbox"), 0);
    /* the account and its row are one transaction: both are there */
    int64_t pia = committed_unmailed(&srv, "pia@example.org", 0x11);
    ck_assert_int_eq(outbox_rows(&srv, pia), 1);
    size_t sent = 99;
    /* within its lease the row is its request's: the housekeeping waits */
    ck_assert_int_eq(ks_outbox_deliver(srv.ks, 0, 8, &sent), PICL_OK);
    ck_assert_uint_eq(sent, 0);
    ck_assert_int_eq(tuks_mail_count(&srv), 1);
    /* past it, the next request's housekeeping (ks_sweep) delivers it */
    fake_now += KS_OUTBOX_LEASE + 1;
    tuks_account(&srv, "rolf@example.org", "pw", 0, NULL);
    char code[128], want[65];
    uint8_t vc[32];
    memset(vc, 0x11 ^ 0x5a, sizeof vc);
    picl__hex_encode(want, vc, sizeof vc);
    ck_assert(tuks_take_mail(&srv, "pia@example.org", "X-Verify-Code", code, sizeof code));
    ck_assert_str_eq(code, want);
    ck_assert_int_eq(outbox_rows(&srv, pia), 0);
    ck_assert_int_eq(ks_outbox_deliver(srv.ks, 0, 8, &sent), PICL_OK);
    ck_assert_uint_eq(sent, 0); /* delivered once: the row is gone */
    /* start-up does not wait for the lease (the request that held it died) */
    int64_t quinn = committed_unmailed(&srv, "quinn@example.org", 0x22);
    ck_assert_int_eq(ks_outbox_deliver(srv.ks, 1, 1000, &sent), PICL_OK);
    ck_assert_uint_eq(sent, 1);
    ck_assert(tuks_take_mail(&srv, "quinn@example.org", "X-Verify-Code", code, sizeof code));
    ck_assert_int_eq(outbox_rows(&srv, quinn), 0);
    /* verified meanwhile (a resent code): the row goes, no mail */
    int64_t rita = committed_unmailed(&srv, "rita@example.org", 0x33);
    ck_assert_int_eq(ks_db_account_set_verified(srv.ks->db, rita), PICL_OK);
    ck_assert_int_eq(ks_outbox_deliver(srv.ks, 1, 1000, &sent), PICL_OK);
    ck_assert_uint_eq(sent, 0);
    ck_assert_int_eq(outbox_rows(&srv, rita), 0);
    ck_assert(!tuks_take_mail(&srv, "rita@example.org", "X-Verify-Code", code, sizeof code));
    /* an account swept unverified takes its row with it */
    int64_t sven = committed_unmailed(&srv, "sven@example.org", 0x44);
    ck_assert_int_eq(ks_db_account_delete(srv.ks->db, sven), PICL_OK);
    ck_assert_int_eq(outbox_rows(&srv, sven), 0);
    tuks_stop(&srv);
    tu_nss_teardown();
}
END_TEST

START_TEST(outbox_keeps_what_it_cannot_deliver)
{
    tu_nss_setup();
    fake_now = (int64_t)time(NULL);
    pthread_mutex_lock(&log_mu);
    log_text[0] = 0;
    pthread_mutex_unlock(&log_mu);
    ks_config cfg = {.smtp_url = "smtp://127.0.0.1:1", .log = log_hook, .now = clock_hook};
    tuks_srv srv;
    tuks_start(&srv, &cfg);
    int64_t tom = committed_unmailed(&srv, "tom@example.org", 0x55);
    size_t sent = 99;
    ck_assert_int_eq(ks_outbox_deliver(srv.ks, 1, 1000, &sent), PICL_OK);
    ck_assert_uint_eq(sent, 0);
    /* kept, tried once, not again before its lease is over */
    ck_assert_int_eq(outbox_rows(&srv, tom), 1);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT max(tries) FROM outbox"), 1);
    ck_assert_int_eq(ks_outbox_deliver(srv.ks, 0, 8, &sent), PICL_OK);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT max(tries) FROM outbox"), 1);
    fake_now += 2 * KS_OUTBOX_LEASE + 1;
    ck_assert_int_eq(ks_outbox_deliver(srv.ks, 0, 8, &sent), PICL_OK);
    ck_assert_int_eq(tuks_db_int(&srv, "SELECT max(tries) FROM outbox"), 2);
    /* the operator is told which account waits, never its code */
    char want[128], code[65];
    uint8_t vc[32];
    memset(vc, 0x55 ^ 0x5a, sizeof vc);
    picl__hex_encode(code, vc, sizeof vc);
    snprintf(want, sizeof want, "verification mail of account %lld not delivered", (long long)tom);
    pthread_mutex_lock(&log_mu);
    ck_assert_ptr_nonnull(strstr(log_text, want));
    ck_assert_ptr_null(strstr(log_text, code));
    pthread_mutex_unlock(&log_mu);
    tuks_stop(&srv);
    tu_nss_teardown();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("keyserver_mail");
    TCase *tc = tcase_create("outbox");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, maildir_message);
    tcase_add_test(tc, smtp_delivery);
    tcase_add_test(tc, smtp_unreachable_is_an_error_not_an_account);
    tcase_add_test(tc, outbox_delivers_what_a_request_did_not);
    tcase_add_test(tc, outbox_keeps_what_it_cannot_deliver);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
