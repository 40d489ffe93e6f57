/* SPDX-License-Identifier: MPL-2.0 */
/* test_store_devices.c -- the parsers behind the clients, tabs and prefs
 * stores, in process: mozLz4 (round trip, every kind of damage), session
 * store to tabs (order, filtering, trimming to the record limit), tabs
 * records of other devices (oversized, malformed), clients commands, the
 * prefs allow-list and prefs.js parsing. */
#include "testutil.h"
#include "stores/devices.h"
#include "stores/forms.h"
#include "stores/mozlz4.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_mozlz4)
{
    const char *text =
        "{\"windows\":[{\"tabs\":[]}],\"padding\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}";
    uint8_t *enc;
    size_t enclen, outlen;
    char *out;
    ck_assert_int_eq(picl__mozlz4_encode(text, strlen(text), &enc, &enclen), PICL_OK);
    ck_assert_mem_eq(enc, "mozLz40\0", 8);
    ck_assert_uint_eq(enc[8] | enc[9] << 8 | enc[10] << 16 | (uint32_t)enc[11] << 24, strlen(text));
    ck_assert_int_eq(picl__mozlz4_decode(enc, enclen, &out, &outlen), PICL_OK);
    ck_assert_uint_eq(outlen, strlen(text));
    ck_assert_str_eq(out, text);
    free(out);
    /* a wrong magic, a cut header, a cut block, a size that lies, a huge size */
    enc[6] = '1';
    ck_assert_int_eq(picl__mozlz4_decode(enc, enclen, &out, &outlen), PICL_ERROR_ENCODING);
    ck_assert_ptr_null(out);
    enc[6] = '0';
    ck_assert_int_eq(picl__mozlz4_decode(enc, 11, &out, &outlen), PICL_ERROR_ENCODING);
    ck_assert_int_eq(picl__mozlz4_decode(enc, enclen - 3, &out, &outlen), PICL_ERROR_ENCODING);
    enc[8]++;
    ck_assert_int_eq(picl__mozlz4_decode(enc, enclen, &out, &outlen), PICL_ERROR_ENCODING);
    enc[8]--;
    enc[11] = 0x7f;
    ck_assert_int_eq(picl__mozlz4_decode(enc, enclen, &out, &outlen), PICL_ERROR_TOO_LARGE);
    ck_assert_ptr_null(out);
    free(enc);
}
END_TEST

START_TEST(test_tabs_from_session)
{
    const char *s =
        "{\"windows\":[{\"tabs\":["
        "{\"entries\":[{\"url\":\"https://a.example/\",\"title\":\"A\"},"
        "{\"url\":\"https://a.example/2\",\"title\":\"A2\"}],\"index\":2,\"lastAccessed\":5000},"
        "{\"entries\":[{\"url\":\"about:config\",\"title\":\"C\"}],\"index\":1,\"lastAccessed\":9000},"
        "{\"entries\":[{\"url\":\"https://b.example/\",\"title\":\"B\"}],\"index\":1,\"lastAccessed\":7000,"
        "\"image\":\"data:image/png;base64,AAAA\"}]},"
        "{\"isPrivate\":true,\"tabs\":[{\"entries\":[{\"url\":\"https://private.example/"
        "\"}],\"index\":1}]}]}";
    json_t *tabs;
    ck_assert_int_eq(picl__tabs_from_session(s, strlen(s), &tabs), PICL_OK);
    ck_assert_uint_eq(json_array_size(tabs), 2); /* about: and the private window left out */
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tabs, 0), "title")),
                     "B"); /* newest first */
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(tabs, 0), "icon")),
                     ""); /* no data: icons */
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(tabs, 0), "lastUsed")), 7);
    json_t *h = json_object_get(json_array_get(tabs, 1), "urlHistory");
    ck_assert_uint_eq(json_array_size(h), 2);
    ck_assert_str_eq(json_string_value(json_array_get(h, 0)), "https://a.example/2"); /* current page first */
    ck_assert_str_eq(json_string_value(json_array_get(h, 1)), "https://a.example/");
    json_decref(tabs);
    /* not a session */
    ck_assert_int_eq(picl__tabs_from_session("[1,2]", 5, &tabs), PICL_ERROR_ENCODING);
    ck_assert_int_eq(picl__tabs_from_session("{\"windows\":", 11, &tabs), PICL_ERROR_ENCODING);

    /* 3000 tabs with long titles: the most recent ones that fit */
    size_t cap = 3000 * 400 + 100, n = 0;
    char *big = malloc(cap);
    n += (size_t)snprintf(big + n, cap - n, "{\"windows\":[{\"tabs\":[");
    for (int i = 0; i < 3000; i++)
        n += (size_t)snprintf(
            big + n, cap - n,
            "%s{\"entries\":[{\"url\":\"https://t.example/%d\",\"title\":\"%0200d\"}],\"index\":1,"
            "\"lastAccessed\":%d}",
            i ? "," : "", i, i, 1000 * (i + 1));
    n += (size_t)snprintf(big + n, cap - n, "]}]}");
    ck_assert_int_eq(picl__tabs_from_session(big, n, &tabs), PICL_OK);
    free(big);
    ck_assert_uint_gt(json_array_size(tabs), 100);
    ck_assert_uint_lt(json_array_size(tabs), 3000);
    ck_assert_str_eq(
        json_string_value(json_array_get(json_object_get(json_array_get(tabs, 0), "urlHistory"), 0)),
        "https://t.example/2999");
    json_t *rec = json_pack("{s:s, s:s, s:o}", "id", "abcdefghijkl", "clientName", "a device", "tabs", tabs);
    char *dump = json_dumps(rec, JSON_COMPACT);
    ck_assert_uint_le(strlen(dump), PICL_TABS_RECORD_MAX);
    free(dump);
    char why[128];
    ck_assert_int_eq(picl__tabs_check_record(rec, why, sizeof why), PICL_OK);
    /* one more tab and another device's record is over the limit: skipped */
    json_array_append_new(json_object_get(rec, "tabs"),
                          json_pack("{s:s, s:[s], s:s, s:i}", "title", "x", "urlHistory",
                                    "https://x.example/", "icon", "", "lastUsed", 1));
    char filler[4097];
    memset(filler, 'p', 4096);
    filler[4096] = 0;
    for (int i = 0; i < 3; i++)
        json_array_append_new(json_object_get(rec, "tabs"),
                              json_pack("{s:s, s:[s], s:s, s:i}", "title", filler, "urlHistory",
                                        "https://y.example/", "icon", "", "lastUsed", 1));
    ck_assert_int_eq(picl__tabs_check_record(rec, why, sizeof why), PICL_ERROR_TOO_LARGE);
    ck_assert_ptr_nonnull(strstr(why, "skipped"));
    json_decref(rec);
    /* malformed records */
    json_t *bad = json_pack("{s:s, s:[{s:i}]}", "id", "x", "tabs", "urlHistory", 3);
    ck_assert_int_eq(picl__tabs_check_record(bad, why, sizeof why), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(bad);
    bad = json_pack("{s:s, s:s}", "id", "x", "tabs", "none");
    ck_assert_int_eq(picl__tabs_check_record(bad, why, sizeof why), PICL_ERROR_INVALID_ARGUMENT);
    json_decref(bad);
}
END_TEST

START_TEST(test_commands)
{
    char why[160];
    static const struct {
        const char *cmd;
        picl_status want;
    } cases[] = {
        {"{\"command\":\"displayURI\",\"args\":[\"https://a.example/\",\"dev\",\"T\"],\"flowID\":\"f\"}",
         PICL_OK},
        {"{\"command\":\"displayURI\",\"args\":[\"http://a.example/x?y#z\",\"dev\"]}", PICL_OK},
        {"{\"command\":\"wipeEngine\",\"args\":[\"history\"]}", PICL_ERROR_UNSUPPORTED},
        {"{\"command\":\"resetAll\",\"args\":[]}", PICL_ERROR_UNSUPPORTED},
        {"{\"command\":\"logout\",\"args\":[]}", PICL_ERROR_UNSUPPORTED},
        {"{\"command\":\"displayURI\",\"args\":[\"javascript:alert(1)\",\"d\",\"t\"]}",
         PICL_ERROR_INVALID_ARGUMENT},
        {"{\"command\":\"displayURI\",\"args\":[\"data:text/html,x\",\"d\",\"t\"]}",
         PICL_ERROR_INVALID_ARGUMENT},
        {"{\"command\":\"displayURI\",\"args\":[\"https://\",\"d\",\"t\"]}", PICL_ERROR_INVALID_ARGUMENT},
        {"{\"command\":\"displayURI\",\"args\":[\"https://a b/\",\"d\",\"t\"]}", PICL_ERROR_INVALID_ARGUMENT},
        {"{\"command\":\"displayURI\",\"args\":[\"https://a.example/\"]}", PICL_ERROR_INVALID_ARGUMENT},
        {"{\"command\":\"displayURI\",\"args\":[\"https://a.example/\",5]}", PICL_ERROR_INVALID_ARGUMENT},
        {"{\"command\":\"displayURI\",\"args\":[\"https://a.example/\",\"d\"],\"flowID\":7}",
         PICL_ERROR_INVALID_ARGUMENT},
        {"{\"args\":[]}", PICL_ERROR_INVALID_ARGUMENT},
        {"[]", PICL_ERROR_INVALID_ARGUMENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *c = json_loads(cases[i].cmd, 0, NULL);
        ck_assert_ptr_nonnull(c);
        why[0] = 0;
        ck_assert_msg(picl__clients_check_command(c, why, sizeof why) == cases[i].want, "%s: %s",
                      cases[i].cmd, why);
        ck_assert_int_eq(cases[i].want == PICL_OK, why[0] == 0);
        json_decref(c);
    }
    /* a URL just over the limit */
    char *u = malloc(PICL_URL_MAX + 2);
    memcpy(u, "https://a.example/", 18);
    memset(u + 18, 'x', PICL_URL_MAX - 18 + 1);
    u[PICL_URL_MAX + 1] = 0;
    ck_assert_int_eq(picl__url_ok(u), 0);
    u[PICL_URL_MAX] = 0;
    ck_assert_int_eq(picl__url_ok(u), 1);
    free(u);
}
END_TEST

START_TEST(test_prefs_allow_list_and_parse)
{
    static const char *const yes[] = {"browser.tabs.warnOnClose", "layout.spellcheckDefault",
                                      "intl.accept_languages", "browser.urlbar.suggest.history",
                                      "privacy.donottrackheader.enabled"};
    static const char *const no[] = {
        "browser.startup.homepage", "browser.download.dir", "network.proxy.http",
        "services.sync.prefs.sync.browser.download.dir", "browser.newtabpage.pinned",
        "security.default_personal_cert", "signon.management.page.breach-alerts.url", "app.update.url",
        "unknown.pref", "",
        /* a password, a server, a path: never, whatever the name */
        "signon.masterPasswordReprompt.timeout_ms", "network.proxy.autoconfig_url",
        "browser.cache.disk.parent_directory", "services.sync.username"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        ck_assert_msg(picl__prefs_allowed(yes[i]), "%s refused", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        ck_assert_msg(!picl__prefs_allowed(no[i]), "%s allowed", no[i]);
    const char *js = "// Mozilla User Preferences\n\n"
                     "user_pref(\"a.bool\", true);\n"
                     "user_pref(\"a.int\", -42);\n"
                     "user_pref(\"a.str\", \"x \\\"q\\\" \\\\ \\n \\u00e9\\x41\");\n"
                     "  user_pref ( 'b.single' , 'y' ) ;\n"
                     "pref(\"not.user\", 1);\n";
    json_t *p;
    ck_assert_int_eq(picl__prefs_parse(js, &p), PICL_OK);
    ck_assert_uint_eq(json_object_size(p), 4);
    ck_assert(json_is_true(json_object_get(p, "a.bool")));
    ck_assert_int_eq(json_integer_value(json_object_get(p, "a.int")), -42);
    ck_assert_str_eq(json_string_value(json_object_get(p, "a.str")), "x \"q\" \\ \n \xc3\xa9"
                                                                     "A");
    ck_assert_str_eq(json_string_value(json_object_get(p, "b.single")), "y");
    json_decref(p);
    static const char *const broken[] = {"user_pref(\"a\", );\n", "user_pref(\"a\" true);\n",
                                         "user_pref(\"a\", \"unterminated);\n",
                                         "user_pref(\"a\", \"\\q\");\n", "user_pref(\"a\", true)\n"};
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        ck_assert_int_eq(picl__prefs_parse(broken[i], &p), PICL_ERROR_ENCODING);
        ck_assert_ptr_null(p);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("store_devices");
    TCase *tc = tcase_create("parsers");
    tcase_add_test(tc, test_mozlz4);
    tcase_add_test(tc, test_tabs_from_session);
    tcase_add_test(tc, test_commands);
    tcase_add_test(tc, test_prefs_allow_list_and_parse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
