/* SPDX-License-Identifier: MPL-2.0 */
/* test_account_devices.c -- the account's devices and sessions over picl server (keyserver.md 9): each device names itself, picl device list/rename/remove, a removed device is refused and stops syncing, the security events in order, and the endpoints' refusals. */
#include "testutil.h"
#include "testutil_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tucli T;
#define url (T.url)
#define picl (T.picl)
#define run(out, cap, ...) tucli_run(&T, (out), (cap), "", __VA_ARGS__)

static void setup(void) { tucli_start(&T); }

static void teardown(void) { tucli_stop(&T); }

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

static json_t *devices(const char *state)
{
    char out[8192];
    ck_assert_int_eq(run(out, sizeof out, "%s --state %s device list --json", picl, state), 0);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_msg(j != NULL, "device list --json printed %s", out);
    ck_assert(json_is_array(json_object_get(j, "devices")));
    return j;
}

/* The entry of the device list whose "current" is `current` (the first). */
static json_t *entry(json_t *list, int current)
{
    size_t i;
    json_t *d;
    json_array_foreach (json_object_get(list, "devices"), i, d)
        if (json_is_true(json_object_get(d, "current")) == current)
            return d;
    return NULL;
}

START_TEST(test_devices_and_events)
{
    char out[8192], code[128], host[256] = "", s2id[64];
    gethostname(host, sizeof host - 1);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_PASSWORD='password 1' %s --state s1 account create --server %s --email d@x.org -q",
            picl, url),
        0);
    mail_code("d@x.org", "X-Verify-Code", code, sizeof code);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 account verify --code %s -q", picl, code), 0);
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD='password 1' %s --state s2 login --server %s --email d@x.org -q",
                         picl, url),
                     0);
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_PASSWORD=wrong %s --state s3 login --server %s --email d@x.org 2>/dev/null",
                         picl, url),
                     3);

    /* each device named itself at sign-in: the host name, type cli */
    json_t *l = devices("s1");
    ck_assert_uint_eq(json_array_size(json_object_get(l, "devices")), 2);
    json_t *me = entry(l, 1), *other = entry(l, 0);
    ck_assert_ptr_nonnull(me);
    ck_assert_ptr_nonnull(other);
    ck_assert_str_eq(json_string_value(json_object_get(me, "name")), host);
    ck_assert_str_eq(json_string_value(json_object_get(me, "type")), "cli");
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(me, "id"))), 32);
    ck_assert_str_ne(json_string_value(json_object_get(me, "id")),
                     json_string_value(json_object_get(other, "id")));
    ck_assert_int_ge(json_integer_value(json_object_get(me, "lastAccessAt")),
                     json_integer_value(json_object_get(me, "createdAt")));
    ck_assert_int_gt(json_integer_value(json_object_get(me, "createdAt")), 1700000000);
    snprintf(s2id, sizeof s2id, "%s", json_string_value(json_object_get(other, "id")));
    json_decref(l);

    /* rename: the other device sees the new name, and this one is still current */
    ck_assert_int_eq(run(out, sizeof out, "%s --state s2 device rename 'work laptop'", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "work laptop"));
    l = devices("s1");
    other = entry(l, 0);
    ck_assert_str_eq(json_string_value(json_object_get(other, "name")), "work laptop");
    ck_assert_str_eq(json_string_value(json_object_get(other, "id")), s2id);
    json_decref(l);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 device list", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "work laptop"));
    ck_assert_ptr_nonnull(strstr(out, "(this device)"));
    /* a name too long, an id that is no id, an id of no device: refused, nothing changed */
    ck_assert_int_eq(run(NULL, 0, "%s --state s2 device rename %065d 2>/dev/null", picl, 0), 2);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 device remove nothex 2>/dev/null", picl), 2);
    ck_assert_int_eq(
        run(out, sizeof out, "%s --state s1 device remove 0123456789abcdef0123456789abcdef 2>&1", picl), 2);
    ck_assert_ptr_nonnull(strstr(out, "no device"));
    l = devices("s1");
    ck_assert_uint_eq(json_array_size(json_object_get(l, "devices")), 2);
    json_decref(l);

    /* s2 syncs a record; then s1 signs s2 out */
    ck_assert_int_eq(run(NULL, 0,
                         "mkdir f1 f2 && echo '[{\"id\":\"abcdefghijkl\",\"hostname\":\"https://a.org\","
                         "\"password\":\"pw\",\"timePasswordChanged\":1}]' > f2/passwords.json"),
                     0);
    ck_assert_int_eq(run(NULL, 0, "%s --state s2 sync --store-dir f2 -q", picl), 0);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 device remove %s", picl, s2id), 0);
    ck_assert_ptr_nonnull(strstr(out, "signed out"));
    l = devices("s1");
    ck_assert_uint_eq(json_array_size(json_object_get(l, "devices")), 1);
    ck_assert(json_is_true(json_object_get(entry(l, 1), "current")));
    json_decref(l);
    /* the removed device is told so at its next request and syncs nothing */
    ck_assert_int_eq(run(out, sizeof out, "%s --state s2 device list 2>&1", picl), 3);
    ck_assert_msg(strstr(out, "signed out") != NULL, "%s", out);
    ck_assert_int_eq(run(NULL, 0,
                         "echo '[{\"id\":\"abcdefghijkl\",\"hostname\":\"https://a.org\","
                         "\"password\":\"changed\",\"timePasswordChanged\":2}]' > f2/passwords.json"),
                     0);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s2 sync --store-dir f2 2>&1", picl), 3);
    ck_assert_msg(strstr(out, "sign in again") != NULL, "%s", out);
    ck_assert_int_eq(run(NULL, 0, "%s --state s1 sync --store-dir f1 -q", picl), 0);
    ck_assert_int_eq(run(out, sizeof out, "cat f1/passwords.json"), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"pw\""));
    ck_assert_ptr_null(strstr(out, "changed"));
    /* signing in again makes it a device again */
    ck_assert_int_eq(run(NULL, 0, "PICL_PASSWORD='password 1' %s --state s2 login --email d@x.org -q", picl),
                     0);
    l = devices("s2");
    ck_assert_uint_eq(json_array_size(json_object_get(l, "devices")), 2);
    ck_assert_str_ne(json_string_value(json_object_get(entry(l, 1), "id")), s2id);
    json_decref(l);

    /* the security events, newest first, with device names and addresses */
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 account events --json", picl), 0);
    json_t *ev = json_loads(out, 0, NULL);
    ck_assert_ptr_nonnull(ev);
    char types[1024] = "";
    size_t i;
    json_t *e;
    int64_t last = INT64_MAX;
    json_array_foreach (json_object_get(ev, "events"), i, e) {
        tu_append(types, sizeof types, json_string_value(json_object_get(e, "type")));
        tu_append(types, sizeof types, " ");
        int64_t t = json_integer_value(json_object_get(e, "time"));
        ck_assert_int_le(t, last);
        last = t;
        const char *type = json_string_value(json_object_get(e, "type"));
        if (!strcmp(type, "login.failed") || !strcmp(type, "login"))
            ck_assert_str_eq(json_string_value(json_object_get(e, "address")), "127.0.0.1");
        if (!strcmp(type, "device.destroyed"))
            ck_assert_str_eq(json_string_value(json_object_get(e, "device")), "work laptop");
    }
    ck_assert_str_eq(types,
                     "login device.destroyed classmap.changed login.failed login account.verified login "
                     "account.created ");
    json_decref(ev);
    ck_assert_int_eq(run(out, sizeof out, "%s --state s1 account events", picl), 0);
    ck_assert_ptr_nonnull(strstr(out, "device.destroyed"));
    ck_assert_ptr_nonnull(strstr(out, "device work laptop"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("devices");
    TCase *tc = tcase_create("devices");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_devices_and_events);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
