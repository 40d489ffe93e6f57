/* SPDX-License-Identifier: MPL-2.0 */
/* test_devices.c -- other devices through `picl`: the clients and tabs
 * collections between two Firefox profiles made by firefox-esr (the session
 * store written by the browser's own mozLz4 writer, and by a real headless
 * browser that opened pages of a loopback server), sending a tab (received
 * exactly once, also with two syncs racing), hostile commands and a corrupt
 * session store refused with nothing changed, and the class moves. */
#include "testutil.h"
#include "testutil_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tucli T;
#define dir (T.dir)
#define url (T.url)

#define run(out, cap, ...) tucli_run(&T, (out), (cap), "export PICL_PASSWORD=password1 && ", __VA_ARGS__)
#define SESSION                                                                                              \
    "firefox-esr --xpcshell -g /usr/lib/firefox-esr -a /usr/lib/firefox-esr/browser "                        \
    "$PICL_SRCDIR/tests/xpcshell/write_session.js"

static void setup(void)
{
    tucli_start(&T);
    ck_assert_msg(run(NULL, 0, "command -v firefox-esr >/dev/null") == 0, "firefox-esr is missing");
}

static void teardown(void) { tucli_stop(&T); }

static void account(void)
{
    char code[256];
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account create --server %s --email d@x.org", url), 0);
    ck_assert_int_eq(
        run(code, sizeof code, "grep -h '^X-Verify-Code:' data/mail/new/* | tr -d '\\r' | cut -d' ' -f2"), 0);
    code[strcspn(code, "\n")] = 0;
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q account verify --code %s", code), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q login --email d@x.org"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q login --server %s --email d@x.org", url), 0);
}

/* The device id of state directory s (its devices.json). */
static void device_id(const char *s, char out[16])
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/devices.json", dir, s);
    json_t *d = json_load_file(path, 0, NULL);
    ck_assert_msg(d != NULL, "no %s", path);
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(d, "id"))), 12);
    snprintf(out, 16, "%s", json_string_value(json_object_get(d, "id")));
    json_decref(d);
}

/* The received list of state directory s. */
static json_t *received(const char *s)
{
    char out[16384];
    ck_assert_int_eq(run(out, sizeof out, "$P --state %s tabs --received --json", s), 0);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_msg(json_is_array(j), "not a list: %s", out);
    return j;
}

/* The devices s sees, as `picl tabs --json` says. */
static json_t *devices(const char *s)
{
    char out[65536];
    ck_assert_int_eq(run(out, sizeof out, "$P --state %s tabs --json", s), 0);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_msg(json_is_array(json_object_get(j, "devices")), "not a device list: %s", out);
    return j;
}

static const json_t *find_device(const json_t *j, const char *id)
{
    size_t i;
    json_t *d;
    json_array_foreach (json_object_get(j, "devices"), i, d)
        if (!strcmp(json_string_value(json_object_get(d, "id")), id))
            return d;
    return NULL;
}

START_TEST(test_tabs_and_send_tab)
{
    char out[16384], id1[16], id2[16];
    account();
    ck_assert_int_eq(
        run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1 && $MKP --dump $PWD/p2 $PWD/e.json >/dev/null 2>&1"), 0);
    /* the browser writes p1's session: three open tabs, one of them not a web page */
    ck_assert_int_eq(run(NULL, 0,
                         SESSION " $PWD/p1 sessionstore.jsonlz4 'https://a.example/one|Tab one' "
                                 "'about:config|Config' 'https://b.example/two|Tab two'"),
                     0);
    ck_assert_int_eq(run(out, sizeof out,
                         "PICL_DEVICE_NAME=laptop $P --state s1 sync --profile p1 "
                         "--collections clients,tabs --json"),
                     0);
    json_t *sum = json_loads(out, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(sum, "collections"), "tabs"), "uploaded")),
                     1);
    json_decref(sum);
    ck_assert_int_eq(run(NULL, 0,
                         "PICL_DEVICE_NAME=desktop $P --state s2 -q sync --profile p2 "
                         "--collections clients,tabs"),
                     0);
    device_id("s1", id1);
    device_id("s2", id2);
    ck_assert_str_ne(id1, id2);
    /* both records expire 21 days after their upload, like Firefox's; a
     * bookmark would not */
    ck_assert_int_eq(run(out, sizeof out,
                         "sqlite3 data/storage.db \"SELECT coll, expiry - modified FROM bsos WHERE "
                         "id = '%s' ORDER BY coll\"",
                         id1),
                     0);
    ck_assert_str_eq(out, "clients|181440000\ntabs|181440000\n");
    /* unchanged, they are not uploaded again ... until a week has passed */
    ck_assert_int_eq(
        run(out, sizeof out, "$P --state s1 sync --profile p1 --collections clients,tabs --json"), 0);
    sum = json_loads(out, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(sum, "collections"), "tabs"), "uploaded")),
                     0);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(sum, "collections"), "clients"), "uploaded")),
                     0);
    json_decref(sum);
    ck_assert_int_eq(run(NULL, 0,
                         "python3 -c \"import json; d = json.load(open('s1/devices.json')); "
                         "d['uploadedAt'] -= 8 * 86400; d['tabsUploadedAt'] -= 8 * 86400; "
                         "json.dump(d, open('s1/devices.json', 'w'))\""),
                     0);
    ck_assert_int_eq(
        run(out, sizeof out, "$P --state s1 sync --profile p1 --collections clients,tabs --json"), 0);
    sum = json_loads(out, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(sum, "collections"), "tabs"), "uploaded")),
                     1);
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(sum, "collections"), "clients"), "uploaded")),
                     1);
    json_decref(sum);
    /* the new collections joined the class map as class A */
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 class get tabs --json"), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"class\":\"A\""));
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 class get clients --json"), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"class\":\"A\""));

    /* profile 2's device lists profile 1's open web pages, newest first, not itself */
    json_t *j = devices("s2");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "devices")), 1);
    const json_t *d1 = find_device(j, id1);
    ck_assert_ptr_nonnull(d1);
    ck_assert_str_eq(json_string_value(json_object_get(d1, "name")), "laptop");
    json_t *tabs = json_object_get(d1, "tabs");
    ck_assert_uint_eq(json_array_size(tabs), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tabs, 0), "url")),
                     "https://b.example/two");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tabs, 0), "title")), "Tab two");
    ck_assert_str_eq(
        json_string_value(json_array_get(json_object_get(json_array_get(tabs, 0), "urlHistory"), 1)),
        "https://start.example/2");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tabs, 1), "url")),
                     "https://a.example/one");
    json_decref(j);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 tabs"), 0);
    ck_assert_ptr_nonnull(strstr(out, "laptop ("));
    ck_assert_ptr_nonnull(strstr(out, "    https://a.example/one\n"));

    /* the session changes in the browser (recovery.jsonlz4, newer): uploaded again */
    ck_assert_int_eq(run(NULL, 0,
                         "sleep 1; " SESSION " $PWD/p1 sessionstore-backups/recovery.jsonlz4 "
                         "'https://c.example/three|Three'"),
                     0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --profile p1 --collections clients,tabs"), 0);
    j = devices("s2");
    tabs = json_object_get(find_device(j, id1), "tabs");
    ck_assert_uint_eq(json_array_size(tabs), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tabs, 0), "url")),
                     "https://c.example/three");
    json_decref(j);

    /* a tab sent by name from profile 2 is received once on profile 1, with
     * two syncs of profile 1 racing for it */
    ck_assert_int_eq(
        run(out, sizeof out, "$P --state s2 send-tab laptop https://sent.example/page --title 'Sent page'"),
        0);
    ck_assert_ptr_nonnull(strstr(out, "sent to laptop"));
    ck_assert_int_eq(
        run(out, sizeof out,
            "($P --state s1 sync --profile p1 --collections clients > r1.txt 2>&1 & "
            " $P --state s1 sync --profile p1 --collections clients > r2.txt 2>&1; wait); "
            "cat r1.txt r2.txt | grep -c '^received tab: https://sent.example/page \"Sent page\"'"),
        0);
    ck_assert_int_eq(strtol(out, NULL, 10), 1);
    j = received("s1");
    ck_assert_uint_eq(json_array_size(j), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "uri")),
                     "https://sent.example/page");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "from")), id2);
    json_decref(j);
    /* the command is gone from the server: later syncs receive nothing */
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections clients"), 0);
    ck_assert_ptr_null(strstr(out, "received tab"));
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections clients"), 0);
    ck_assert_ptr_null(strstr(out, "received tab"));
    j = received("s1");
    ck_assert_uint_eq(json_array_size(j), 1);
    json_decref(j);

    /* sending to nobody, to itself, or something that is not a web page */
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 send-tab nobody https://x.example/ 2>&1"), 6);
    ck_assert_ptr_nonnull(strstr(out, "no device \"nobody\""));
    /* a device id may start with "-" (base64url): it goes after "--" */
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 send-tab -- %s https://x.example/ 2>&1", id2), 2);
    ck_assert_msg(strstr(out, "is this device") != NULL, "send-tab to itself (%s) said: %s", id2, out);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 send-tab laptop 'javascript:alert(1)' 2>&1"), 2);
    ck_assert_ptr_nonnull(strstr(out, "only http and https"));
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 send-tab laptop 2>/dev/null"), 2);
}
END_TEST

/* Issue 18's done-when: a real headless firefox-esr on profile 1 opens two
 * pages of a loopback HTTP server and its own session store writes them
 * (sessionstore-backups/recovery.jsonlz4); with the browser closed, profile 1
 * is synced and the other device lists both pages with the titles the
 * browser read from them. */
START_TEST(test_tabs_from_real_browser)
{
    char out[16384], id1[16], port[16], want[256];
    account();
    ck_assert_int_eq(
        run(NULL, 0,
            "$MKP $PWD/p1 >/dev/null 2>&1 && mkdir www && "
            "printf '<html><head><title>Page One</title></head><body>1</body></html>' > www/one.html && "
            "printf '<html><head><title>Page Two</title></head><body>2</body></html>' > www/two.html"),
        0);
    ck_assert_int_eq(
        run(port, sizeof port, "$PICL_SRCDIR/tests/xpcshell/browse.sh $PWD/p1 $PWD/www one.html two.html"),
        0);
    port[strcspn(port, "\n")] = 0;
    ck_assert_int_gt(strtol(port, NULL, 10), 0);
    ck_assert_int_eq(
        run(NULL, 0, "test -f p1/sessionstore-backups/recovery.jsonlz4 && test ! -f p1/sessionstore.jsonlz4"),
        0);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_DEVICE_NAME=laptop $P --state s1 -q sync --profile p1 --collections clients,tabs"),
        0);
    device_id("s1", id1);
    ck_assert_int_eq(run(NULL, 0, "mkdir st2 && $P --state s2 -q sync --store-dir st2 --collections clients"),
                     0);
    json_t *j = devices("s2");
    const json_t *d1 = find_device(j, id1);
    ck_assert_ptr_nonnull(d1);
    json_t *tabs = json_object_get(d1, "tabs");
    ck_assert_uint_eq(json_array_size(tabs), 2);
    int seen = 0;
    size_t i;
    json_t *t;
    json_array_foreach (tabs, i, t) {
        const char *u = json_string_value(json_object_get(t, "url"));
        const char *title = json_string_value(json_object_get(t, "title"));
        snprintf(want, sizeof want, "http://127.0.0.1:%s/one.html", port);
        if (!strcmp(u, want) && !strcmp(title, "Page One"))
            seen |= 1;
        snprintf(want, sizeof want, "http://127.0.0.1:%s/two.html", port);
        if (!strcmp(u, want) && !strcmp(title, "Page Two"))
            seen |= 2;
        ck_assert_int_gt(json_integer_value(json_object_get(t, "lastUsed")), 1600000000);
    }
    ck_assert_msg(seen == 3, "not both pages: %s", json_dumps(tabs, JSON_COMPACT));
    json_decref(j);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 tabs"), 0);
    snprintf(want, sizeof want, "  Page Two\n    http://127.0.0.1:%s/two.html\n", port);
    ck_assert_msg(strstr(out, "laptop (") && strstr(out, want), "%s", out);
}
END_TEST

/* Commands a hostile or broken device (or server) puts in this device's
 * record: refused with a reason, nothing received, nothing changed. */
START_TEST(test_hostile_commands)
{
    char out[16384], id1[16];
    account();
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, "PICL_DEVICE_NAME=laptop $P --state s1 -q sync --profile p1"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --profile p1 --collections clients"), 0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --store-dir st2 --collections clients"), 0);
    device_id("s1", id1);
    ck_assert_int_eq(run(NULL, 0, "$MKP --dump $PWD/p1 $PWD/before.json >/dev/null 2>&1"), 0);
    static const struct {
        const char *cmd, *reason;
    } bad[] = {
        {"{\"command\":\"wipeEngine\",\"args\":[\"history\"],\"flowID\":\"f1\"}",
         "unknown command \"wipeEngine\""},
        {"{\"command\":\"resetAll\",\"args\":[],\"flowID\":\"f2\"}", "unknown command \"resetAll\""},
        {"{\"command\":\"displayURI\",\"args\":[\"javascript:alert(1)\",\"x\",\"t\"],\"flowID\":\"f3\"}",
         "not an http(s) URL"},
        {"{\"command\":\"displayURI\",\"args\":[\"file:///etc/passwd\",\"x\",\"t\"],\"flowID\":\"f4\"}",
         "not an http(s) URL"},
        {"{\"command\":\"displayURI\",\"args\":[1,2],\"flowID\":\"f5\"}", "not a string"},
        {"[\"displayURI\"]", "not {command, args}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(
            run(NULL, 0, "PICL_TEST_SEND_COMMAND='%s' $P --state s2 -q send-tab laptop https://x.example/",
                bad[i].cmd),
            0);
        ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections clients"), 0);
        ck_assert_msg(strstr(out, bad[i].reason) && strstr(out, "refused command: "), "%s: %s", bad[i].cmd,
                      out);
        ck_assert_ptr_null(strstr(out, "received tab"));
        /* handled once: the next sync says nothing */
        ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections clients"), 0);
        ck_assert_ptr_null(strstr(out, "refused command"));
    }
    json_t *j = received("s1");
    ck_assert_uint_eq(json_array_size(j), 0);
    json_decref(j);
    /* history and the rest of the profile as they were */
    ck_assert_int_eq(
        run(NULL, 0, "$MKP --dump $PWD/p1 $PWD/after.json >/dev/null 2>&1 && cmp -s before.json after.json"),
        0);

    /* a command whose record was tampered with on the server: the MAC fails,
     * the sync says so (exit 5), the command is not received */
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q send-tab laptop https://tampered.example/"), 0);
    ck_assert_int_eq(run(NULL, 0,
                         "sqlite3 data/storage.db \"UPDATE bsos SET payload = replace(payload, "
                         "'\\\"ciphertext\\\":\\\"', '\\\"ciphertext\\\":\\\"AAAA') WHERE coll = 'clients' "
                         "AND id = '%s'\"",
                         id1),
                     0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections clients 2>&1"), 5);
    ck_assert_ptr_nonnull(strstr(out, "integrity: clients/"));
    ck_assert_ptr_null(strstr(out, "tampered.example"));
    j = received("s1");
    ck_assert_uint_eq(json_array_size(j), 0);
    json_decref(j);
    /* and the sender sees the damage too: nothing is sent over a record it cannot verify */
    ck_assert_int_eq(run(out, sizeof out, "$P --state s2 send-tab -- %s https://y.example/ 2>&1", id1), 5);
    ck_assert_ptr_nonnull(strstr(out, "integrity"));
}
END_TEST

/* A corrupt session store is a clear error and nothing is uploaded; the
 * tabs and clients collections move to class B and back. */
START_TEST(test_corrupt_session_and_class_moves)
{
    char out[16384], id1[16];
    account();
    ck_assert_int_eq(run(NULL, 0, "$MKP $PWD/p1 >/dev/null 2>&1"), 0);
    ck_assert_int_eq(run(NULL, 0, SESSION " $PWD/p1 sessionstore.jsonlz4 'https://a.example/one|One'"), 0);
    ck_assert_int_eq(
        run(NULL, 0, "PICL_DEVICE_NAME=laptop $P --state s1 -q sync --profile p1 --collections clients,tabs"),
        0);
    device_id("s1", id1);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --store-dir st2 --collections clients"), 0);
    /* the browser's file with its LZ4 block cut short, then a wrong magic */
    ck_assert_int_eq(run(NULL, 0,
                         "cp p1/sessionstore.jsonlz4 good.jsonlz4 && sleep 1 && "
                         "head -c 40 good.jsonlz4 > p1/sessionstore.jsonlz4"),
                     0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections clients,tabs 2>&1"),
                     6);
    ck_assert_ptr_nonnull(strstr(out, "sessionstore.jsonlz4 is corrupt"));
    ck_assert_int_eq(run(NULL, 0, "(printf 'mozLz41\\0'; tail -c +9 good.jsonlz4) > p1/sessionstore.jsonlz4"),
                     0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections tabs 2>&1"), 6);
    ck_assert_ptr_nonnull(strstr(out, "is corrupt"));
    ck_assert_int_eq(run(NULL, 0,
                         "cmp -s good.jsonlz4 good.jsonlz4 && test $(wc -c < p1/sessionstore.jsonlz4) = "
                         "$(wc -c < good.jsonlz4)"),
                     0); /* left as found */
    /* the other device still sees the last good upload */
    json_t *j = devices("s2");
    json_t *tabs = json_object_get(find_device(j, id1), "tabs");
    ck_assert_uint_eq(json_array_size(tabs), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tabs, 0), "url")),
                     "https://a.example/one");
    json_decref(j);

    /* class B and back, for both collections; the other device follows */
    ck_assert_int_eq(run(NULL, 0, "cp good.jsonlz4 p1/sessionstore.jsonlz4"), 0);
    for (int round = 0; round < 2; round++) {
        const char *cls = round == 0 ? "B" : "A";
        ck_assert_int_eq(run(NULL, 0,
                             "$P --state s1 -q class set tabs %s && $P --state s1 -q class set clients %s",
                             cls, cls),
                         0);
        ck_assert_int_eq(run(out, sizeof out, "$P --state s2 class get tabs --json"), 0);
        ck_assert_msg(strstr(out, cls) != NULL, "%s", out);
        ck_assert_int_eq(run(NULL, 0, "$P --state s1 -q sync --profile p1 --collections clients,tabs"), 0);
        j = devices("s2");
        tabs = json_object_get(find_device(j, id1), "tabs");
        ck_assert_msg(json_array_size(tabs) == 1, "round %d: no tabs", round);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tabs, 0), "url")),
                         "https://a.example/one");
        json_decref(j);
        ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q send-tab laptop https://moved%d.example/", round), 0);
        ck_assert_int_eq(run(out, sizeof out, "$P --state s1 sync --profile p1 --collections clients"), 0);
        ck_assert_msg(strstr(out, "received tab: https://moved") != NULL, "round %d: %s", round, out);
    }
}
END_TEST

/* Another device's tabs record over the limit (a store directory uploads
 * what it is given): skipped with a report, the device still listed. */
START_TEST(test_oversized_tabs_record)
{
    char out[16384], id2[16];
    account();
    ck_assert_int_eq(run(NULL, 0,
                         "mkdir st2 && PICL_DEVICE_NAME=big $P --state s2 -q sync --store-dir st2 "
                         "--collections clients"),
                     0);
    device_id("s2", id2);
    ck_assert_int_eq(run(NULL, 0,
                         "python3 -c \"import json; json.dump([{'id': '%s', 'clientName': 'big', 'tabs': "
                         "[{'title': 'x' * 1000, 'urlHistory': ['https://big.example/%%d' %% i], 'icon': '', "
                         "'lastUsed': i} for i in range(190)]}], open('st2/tabs.json', 'w'))\"",
                         id2),
                     0);
    ck_assert_int_eq(run(NULL, 0, "$P --state s2 -q sync --store-dir st2 --collections clients,tabs"), 0);
    ck_assert_int_eq(run(NULL, 0, "mkdir st1 && $P --state s1 -q sync --store-dir st1 --collections clients"),
                     0);
    ck_assert_int_eq(run(out, sizeof out, "$P --state s1 tabs 2>&1"), 0);
    char want[128];
    snprintf(want, sizeof want, "picl: skipped tabs/%s: tabs record of ", id2);
    ck_assert_msg(strstr(out, want) != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "(over 184320): skipped"));
    ck_assert_ptr_nonnull(strstr(out, "big ("));
    ck_assert_ptr_null(strstr(out, "big.example"));
    json_t *j = devices("s1");
    const json_t *d = find_device(j, id2);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(json_array_size(json_object_get(d, "tabs")), 0);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "skipped")), 1);
    json_decref(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("devices");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_tabs_and_send_tab);
    tcase_add_test(tc, test_tabs_from_real_browser);
    tcase_add_test(tc, test_hostile_commands);
    tcase_add_test(tc, test_corrupt_session_and_class_moves);
    tcase_add_test(tc, test_oversized_tabs_record);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
