/* SPDX-License-Identifier: MPL-2.0 */
/* test_recovery_key.c -- the account recovery key (keyserver.md 9): its text form and sealing of kB, the round trip over picl server (class B survives a reset, a wrong key is refused and changes nothing, the key is single-use), and the stretch upgrade keeping kB and every class-B record. */
#include "testutil.h"
#include "testutil_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/recovery_key.h"
#include "crypto/nss.h"
#include "picl.h"

static tucli T;
#define url (T.url)
#define picl (T.picl)
#define run(out, cap, ...) tucli_run(&T, (out), (cap), "", __VA_ARGS__)

/* ---- the key's text form and recoveryData ------------------------------- */

START_TEST(test_codec)
{
    uint8_t key[32], back[32], kb[32], got[32];
    char text[PICL_RK_TEXT_LEN + 1], id[33], id2[33];
    memset(key, 0, sizeof key);
    picl__rk_format(text, key);
    ck_assert_str_eq(text, "AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA");
    memset(key, 0xff, sizeof key);
    picl__rk_format(text, key);
    /* 256 one bits, then the 4 zero bits of the last character: 10000 = Q */
    ck_assert_str_eq(text, "7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-777Q");
    ck_assert_int_eq(
        picl__rk_parse(back, "7777 7777 7777 7777 7777 7777 7777 7777 7777 7777 7777 7777 777q\n"), PICL_OK);
    ck_assert_mem_eq(back, key, 32);
    /* last 4 bits not zero, one character short, one too many, not base32 */
    ck_assert_int_eq(picl__rk_parse(back, "7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-777R"),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__rk_parse(back, "7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-777"),
                     PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(
        picl__rk_parse(back, "7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-777QA"),
        PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__rk_parse(back, "1777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-7777-777Q"),
                     PICL_ERROR_INVALID_ARGUMENT);
    static const uint8_t zero[32];
    ck_assert_mem_eq(back, zero, 32); /* zeroed on failure */
    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)(i * 37 + 11);
        kb[i] = (uint8_t)(0xa0 ^ i);
    }
    picl__rk_format(text, key);
    ck_assert_uint_eq(strlen(text), PICL_RK_TEXT_LEN);
    ck_assert_int_eq(picl__rk_parse(back, text), PICL_OK);
    ck_assert_mem_eq(back, key, 32);

    ck_assert_int_eq(picl__rk_id(id, key), PICL_OK);
    ck_assert_uint_eq(strlen(id), 32);
    ck_assert_uint_eq(strspn(id, "0123456789abcdef"), 32);
    char *data = NULL;
    ck_assert_int_eq(picl__rk_seal(&data, key, kb), PICL_OK);
    ck_assert_ptr_null(strstr(data, tu_hex(kb, 32))); /* kB never in clear */
    ck_assert_int_eq(picl__rk_open(got, key, data), PICL_OK);
    ck_assert_mem_eq(got, kb, 32);
    /* another key: another id, and the data does not open */
    back[0] ^= 1;
    ck_assert_int_eq(picl__rk_id(id2, back), PICL_OK);
    ck_assert_str_ne(id, id2);
    ck_assert_int_eq(picl__rk_open(got, back, data), PICL_ERROR_DECRYPT);
    ck_assert_mem_eq(got, zero, 32);
    /* a flipped ciphertext character: the MAC refuses it */
    char *c = strstr(data, "\"ciphertext\":\"") + 14;
    *c = *c == 'A' ? 'B' : 'A';
    ck_assert_int_eq(picl__rk_open(got, key, data), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(picl__rk_open(got, key, "{}"), PICL_ERROR_DECRYPT);
    ck_assert_int_eq(picl__rk_open(got, key, "not json"), PICL_ERROR_DECRYPT);
    free(data);
}
END_TEST

/* ---- over picl server ----------------------------------------------------- */

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

/* A status field of a state directory. */
static void status_field(const char *state, const char *key, char *out, size_t cap)
{
    char buf[4096];
    ck_assert_int_eq(run(buf, sizeof buf, "%s --state %s status --json", picl, state), 0);
    json_t *j = json_loads(buf, 0, NULL);
    ck_assert_ptr_nonnull(j);
    snprintf(out, cap, "%s", json_string_value(json_object_get(j, key)));
    json_decref(j);
}

/* An account with a verified email, signed in as s1, and one class-B
 * password synced from f1. */
static void account_with_data(const char *email)
{
    char code[128];
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD='password 1' %s --state s1 account create --server %s --email %s -q",
                         picl, url, email),
                     0);
    mail_code(email, "X-Verify-Code", code, sizeof code);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 account verify --code %s -q", picl, code), 0);
    ck_assert_int_eq(run(NULL, 0,
                         "mkdir -p f1 && echo '[{\"id\":\"abcdefghijkl\",\"hostname\":\"https://a.org\","
                         "\"password\":\"secret B\",\"timePasswordChanged\":1}]' > f1/passwords.json"),
                     0);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 sync --store-dir f1 -q", picl), 0);
    char out[64];
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 class get passwords", picl), 0);
    ck_assert_str_eq(out, "B\n");
}

/* The passwords another device gets from the server: fresh state sN and directory fN. */
static void fresh_device_has_secret(const char *state, const char *pw)
{
    char out[4096];
    ck_assert_int_eq(
        run(NULL, 0,
            "rm -rf %s f_%s && mkdir f_%s && PICL_PASSWORD='%s' %s --state %s login --email u@x.org -q"
            " --server %s",
            state, state, state, pw, picl, state, url),
        0);
    ck_assert_int_eq(run(out, sizeof out, "%s --state %s sync --store-dir f_%s --collections passwords 2>&1",
                         picl, state, state),
                     0);
    ck_assert_int_eq(run(out, sizeof out, "cat f_%s/passwords.json", state), 0);
    ck_assert_msg(strstr(out, "secret B") != NULL, "class-B record not readable: %s", out);
}

static int events_json(const char *state, char *types, size_t cap)
{
    char out[16384];
    int rc = run(out, sizeof out, "%s --state %s account events --json", picl, state);
    types[0] = 0;
    json_t *j = json_loads(out, 0, NULL);
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(j, "events"), i, e) {
        tu_append(types, cap, json_string_value(json_object_get(e, "type")));
        tu_append(types, cap, " ");
    }
    json_decref(j);
    return rc;
}

START_TEST(test_round_trip)
{
    char out[8192], code[128], key[128], fpa[64], fpb[64], fpa2[64], fpb2[64], types[4096];
    account_with_data("u@x.org");
    status_field("s1", "kB_fp", fpb, sizeof fpb);
    status_field("s1", "kA_fp", fpa, sizeof fpa);

    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 recovery-key status --json", picl), 0);
    ck_assert_str_eq(out, "{\"exists\":false}\n");
    /* a wrong password makes no key */
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD=wrong %s --state s1 recovery-key create 2>/dev/null", picl),
                     3);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 recovery-key status --json", picl), 0);
    ck_assert_str_eq(out, "{\"exists\":false}\n");
    ck_assert_int_eq(
        run(out, sizeof out, "PICL_PASSWORD='password 1' %s --state s1 recovery-key create", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "shown only this once"));
    ck_assert_int_eq(
        run(out, sizeof out, "PICL_PASSWORD='password 1' %s --state s1 recovery-key create --json", picl), 0);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    snprintf(key, sizeof key, "%s", json_string_value(json_object_get(j, "recoveryKey")));
    json_decref(j);
    ck_assert_uint_eq(strlen(key), 64);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 recovery-key status", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "a recovery key is set"));
    /* the server holds neither the key nor kB in any form it could use */
    ck_assert_int_eq(run(out, sizeof out,
                         "sqlite3 data/keyserver.db 'SELECT count(*), length(key_id) FROM recovery_keys'"),
                     0);
    ck_assert_str_eq(out, "1|32\n");

    /* the first key was replaced by the second: it is refused */
    ck_assert_int_eq(run(NULL, 0, "%s --state s2 password forgot --server %s --email u@x.org -q", picl, url),
                     0);
    mail_code("u@x.org", "X-Recovery-Code", code, sizeof code);
    ck_assert_int_eq(
        run(NULL, 0, "echo AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA > wrong.key"), 0);
    ck_assert_int_eq(run(out, sizeof out,
                         "PICL_NEW_PASSWORD='password 2' %s --state s2 password reset --code %s "
                         "--recovery-key-file wrong.key 2>&1",
                         picl, code),
                     3);
    ck_assert_msg(strstr(out, "recovery key is wrong") != NULL, "%s", out);
    /* nothing changed: the old password still signs in, same keys */
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD='password 1' %s --state s1 login --email u@x.org -q", picl),
                     0);
    status_field("s1", "kB_fp", fpb2, sizeof fpb2);
    ck_assert_str_eq(fpb, fpb2);
    /* not a key at all: a usage error before anything is sent */
    ck_assert_int_eq(
        run(NULL, 0,
            "echo 'my key' > bad.key && PICL_NEW_PASSWORD='password 2' %s --state s2 password reset "
            "--code 12345678 --recovery-key-file bad.key 2>/dev/null",
            picl),
        2);

    /* the right key: class B survives */
    ck_assert_int_eq(run(NULL, 0, "%s --state s2 password forgot --server %s --email u@x.org -q", picl, url),
                     0);
    mail_code("u@x.org", "X-Recovery-Code", code, sizeof code);
    ck_assert_int_eq(run(NULL, 0, "echo '%s' > right.key", key), 0);
    ck_assert_int_eq(run(out, sizeof out,
                         "PICL_NEW_PASSWORD='password 2' %s --state s2 password reset --code %s "
                         "--recovery-key-file right.key",
                         picl, code),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "make a new one"));
    status_field("s2", "kB_fp", fpb2, sizeof fpb2);
    status_field("s2", "kA_fp", fpa2, sizeof fpa2);
    ck_assert_str_eq(fpb, fpb2);
    ck_assert_str_eq(fpa, fpa2);
    ck_assert_int_eq(run(out, sizeof out, "sqlite3 data/keyserver.db 'SELECT epoch FROM accounts'"), 0);
    ck_assert_str_eq(out, "1\n"); /* kB kept: the key epoch too */
    /* the old password is gone, the class-B record still decrypts elsewhere */
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD='password 1' %s --state s3 login --server %s --email u@x.org 2>/dev/null",
            picl, url),
        3);
    fresh_device_has_secret("s4", "password 2");
    /* single-use */
    ck_assert_int_eq(run(out, sizeof out, "%s --state s2 recovery-key status --json", picl), 0);
    ck_assert_str_eq(out, "{\"exists\":false}\n");
    ck_assert_int_eq(run(NULL, 0, "%s --state s2 password forgot --server %s --email u@x.org -q", picl, url),
                     0);
    mail_code("u@x.org", "X-Recovery-Code", code, sizeof code);
    ck_assert_int_eq(run(out, sizeof out,
                         "PICL_NEW_PASSWORD='password 3' %s --state s2 password reset --code %s "
                         "--recovery-key-file right.key 2>&1",
                         picl, code),
                     3);
    ck_assert_msg(strstr(out, "recovery key is wrong") != NULL, "%s", out);
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD='password 2' %s --state s2 login --email u@x.org -q", picl),
                     0);

    /* the security events, newest first */
    ck_assert_int_eq(events_json("s2", types, sizeof types), 0);
    ck_assert_str_eq(types,
                     "login login login.failed login recoveryKey.used password.reset login "
                     "recoveryKey.created login recoveryKey.created login login.failed classmap.changed "
                     "account.verified login account.created ");

    /* remove */
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD='password 2' %s --state s2 recovery-key create -q >/dev/null", picl), 0);
    ck_assert_int_eq(run(NULL, 0, "%s --state s2 recovery-key remove", picl), 0);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s2 recovery-key status --json", picl), 0);
    ck_assert_str_eq(out, "{\"exists\":false}\n");
}
END_TEST

/* An account stretched with the cheap test floor; a client configured for
 * stronger stretching signs in: the account is re-stretched, kB and the
 * class-B record are kept. */
START_TEST(test_stretch_upgrade)
{
    char out[4096], fp1[64], fp2[64], dir[128];
    account_with_data("u@x.org");
    status_field("s1", "kB_fp", fp1, sizeof fp1);
    ck_assert_int_eq(run(out, sizeof out,
                         "sqlite3 data/keyserver.db 'SELECT pbkdf2_rounds_1, scrypt_n, pbkdf2_rounds_2 "
                         "FROM accounts'"),
                     0);
    ck_assert_str_eq(out, "1000|1024|1000\n");

    snprintf(dir, sizeof dir, "%s/s_up", T.dir);
    picl_service *svc = NULL;
    ck_assert_int_eq(picl_service_create(dir, &svc), PICL_OK);
    ck_assert_int_eq(picl_service_set_keyserver_url(svc, url), PICL_OK);
    ck_assert_int_eq(picl_service_set_stretching_floor(svc, 1000, 1024, 8, 1, 1000), PICL_OK);
    /* below the floor: refused */
    ck_assert_int_eq(picl_service_set_stretching(svc, 500, 1024, 8, 1, 1000), PICL_ERROR_WEAK_PARAMS);
    ck_assert_int_eq(picl_service_set_stretching(svc, 2000, 2048, 8, 1, 2000), PICL_OK);
    ck_assert_int_eq(picl_service_sign_in(svc, "u@x.org", "password 1"), PICL_OK);
    char *status = NULL;
    ck_assert_int_eq(picl_service_get_status_json(svc, &status), PICL_OK);
    json_t *j = json_loads(status, 0, NULL);
    snprintf(fp2, sizeof fp2, "%s", json_string_value(json_object_get(j, "kB_fp")));
    json_decref(j);
    picl_free(status);
    ck_assert_str_eq(fp1, fp2);
    picl_service_release(svc);
    ck_assert_int_eq(run(out, sizeof out,
                         "sqlite3 data/keyserver.db 'SELECT pbkdf2_rounds_1, scrypt_n, pbkdf2_rounds_2, "
                         "epoch FROM accounts'"),
                     0);
    ck_assert_str_eq(out, "2000|2048|2000|1\n");
    /* the same password, another device: every class-B record still decrypts */
    fresh_device_has_secret("s5", "password 1");
    status_field("s5", "kB_fp", fp2, sizeof fp2);
    ck_assert_str_eq(fp1, fp2);
    /* the first device's session ended with the re-wrap: it signs in again
     * with the same password and goes on with the same kB */
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD='password 1' %s --state s1 login --email u@x.org -q", picl),
                     0);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 sync --store-dir f1 -q", picl), 0);
    status_field("s1", "kB_fp", fp2, sizeof fp2);
    ck_assert_str_eq(fp1, fp2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("recovery_key");
    TCase *codec = tcase_create("codec");
    tcase_add_checked_fixture(codec, tu_nss_setup, tu_nss_teardown);
    tcase_add_test(codec, test_codec);
    suite_add_tcase(s, codec);
    TCase *tc = tcase_create("server");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_stretch_upgrade);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
