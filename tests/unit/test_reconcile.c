/* SPDX-License-Identifier: MPL-2.0 */
/* test_reconcile.c -- the per-record rules of client.md section 3 step 3. */
#include "testutil.h"
#include "client/reconcile.h"

#include <string.h>

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    ck_assert_msg(j != NULL, "bad JSON in test: %s", e.text);
    return j;
}

/* Runs reconcile and checks apply/upload against expected JSON (NULL = none). */
static void expect(const char *coll, const char *local, const char *remote, const char *want_apply,
                   const char *want_upload)
{
    json_t *l = local ? J(local) : NULL, *r = remote ? J(remote) : NULL, *a, *u;
    ck_assert_int_eq(picl__reconcile(coll, l, r, &a, &u), PICL_OK);
    if (want_apply) {
        json_t *w = J(want_apply);
        ck_assert_msg(a && json_equal(a, w), "apply: got %s", a ? json_dumps(a, JSON_COMPACT) : "NULL");
        json_decref(w);
    } else {
        ck_assert_msg(a == NULL, "apply: got %s, want nothing", json_dumps(a, JSON_COMPACT));
    }
    if (want_upload) {
        json_t *w = J(want_upload);
        ck_assert_msg(u && json_equal(u, w), "upload: got %s", u ? json_dumps(u, JSON_COMPACT) : "NULL");
        json_decref(w);
    } else {
        ck_assert_msg(u == NULL, "upload: got %s, want nothing", json_dumps(u, JSON_COMPACT));
    }
    json_decref(l);
    json_decref(r);
    json_decref(a);
    json_decref(u);
}

START_TEST(test_one_side)
{
    expect("passwords", NULL, "{\"id\":\"a\",\"password\":\"x\"}", "{\"id\":\"a\",\"password\":\"x\"}", NULL);
    expect("passwords", "{\"id\":\"a\",\"password\":\"x\"}", NULL, NULL, "{\"id\":\"a\",\"password\":\"x\"}");
    expect("history", NULL, "{\"id\":\"a\",\"deleted\":true}", "{\"id\":\"a\",\"deleted\":true}", NULL);
    expect("bookmarks", "{\"id\":\"a\",\"deleted\":true}", NULL, NULL, "{\"id\":\"a\",\"deleted\":true}");
}
END_TEST

START_TEST(test_deletion_vs_edit)
{
    /* the edit survives, whichever side it is on */
    expect("bookmarks", "{\"id\":\"a\",\"deleted\":true}", "{\"id\":\"a\",\"title\":\"t\"}",
           "{\"id\":\"a\",\"title\":\"t\"}", NULL);
    expect("bookmarks", "{\"id\":\"a\",\"title\":\"t\"}", "{\"id\":\"a\",\"deleted\":true}", NULL,
           "{\"id\":\"a\",\"title\":\"t\"}");
    expect("passwords", "{\"id\":\"a\",\"deleted\":true}", "{\"id\":\"a\",\"deleted\":true}", NULL, NULL);
    expect("passwords", "{\"id\":\"a\",\"p\":1}", "{\"id\":\"a\",\"p\":1}", NULL, NULL);
}
END_TEST

START_TEST(test_passwords_later_change_wins)
{
    expect("passwords", "{\"id\":\"a\",\"password\":\"new\",\"timePasswordChanged\":2000}",
           "{\"id\":\"a\",\"password\":\"old\",\"timePasswordChanged\":1000}", NULL,
           "{\"id\":\"a\",\"password\":\"new\",\"timePasswordChanged\":2000}");
    expect("passwords", "{\"id\":\"a\",\"password\":\"old\",\"timePasswordChanged\":1000}",
           "{\"id\":\"a\",\"password\":\"new\",\"timePasswordChanged\":2000}",
           "{\"id\":\"a\",\"password\":\"new\",\"timePasswordChanged\":2000}", NULL);
    /* a tie goes to the server's copy so that all devices agree */
    expect("passwords", "{\"id\":\"a\",\"password\":\"l\",\"timePasswordChanged\":5}",
           "{\"id\":\"a\",\"password\":\"r\",\"timePasswordChanged\":5}",
           "{\"id\":\"a\",\"password\":\"r\",\"timePasswordChanged\":5}", NULL);
}
END_TEST

START_TEST(test_history_union)
{
    expect(
        "history",
        "{\"id\":\"h\",\"histUri\":\"https://a/\",\"title\":\"local "
        "newer\",\"visits\":[{\"date\":300,\"type\":1},{\"date\":100,\"type\":1}]}",
        "{\"id\":\"h\",\"histUri\":\"https://a/"
        "\",\"title\":\"remote\",\"visits\":[{\"date\":200,\"type\":2},{\"date\":100,\"type\":1}]}",
        "{\"id\":\"h\",\"histUri\":\"https://a/\",\"title\":\"local "
        "newer\",\"visits\":[{\"date\":300,\"type\":1},{\"date\":200,\"type\":2},{\"date\":100,\"type\":1}]}",
        "{\"id\":\"h\",\"histUri\":\"https://a/\",\"title\":\"local "
        "newer\",\"visits\":[{\"date\":300,\"type\":1},{\"date\":200,\"type\":2},{\"date\":100,\"type\":1}]"
        "}");
    /* same date, different type: two visits */
    expect("history", "{\"id\":\"h\",\"visits\":[{\"date\":100,\"type\":1}]}",
           "{\"id\":\"h\",\"visits\":[{\"date\":100,\"type\":5}]}",
           "{\"id\":\"h\",\"visits\":[{\"date\":100,\"type\":1},{\"date\":100,\"type\":5}]}",
           "{\"id\":\"h\",\"visits\":[{\"date\":100,\"type\":1},{\"date\":100,\"type\":5}]}");
    /* only the newest 20 are kept */
    char l[4096], r[4096], want[4096];
    size_t lo = 0, ro = 0, wo = 0;
    lo += (size_t)snprintf(l + lo, sizeof l - lo, "{\"id\":\"h\",\"visits\":[");
    ro += (size_t)snprintf(r + ro, sizeof r - ro, "{\"id\":\"h\",\"visits\":[");
    for (int i = 0; i < 15; i++) {
        lo +=
            (size_t)snprintf(l + lo, sizeof l - lo, "%s{\"date\":%d,\"type\":1}", i ? "," : "", 1000 + 2 * i);
        ro +=
            (size_t)snprintf(r + ro, sizeof r - ro, "%s{\"date\":%d,\"type\":1}", i ? "," : "", 1001 + 2 * i);
    }
    snprintf(l + lo, sizeof l - lo, "]}");
    snprintf(r + ro, sizeof r - ro, "]}");
    wo += (size_t)snprintf(want + wo, sizeof want - wo, "{\"id\":\"h\",\"visits\":[");
    for (int i = 0; i < 20; i++)
        wo += (size_t)snprintf(want + wo, sizeof want - wo, "%s{\"date\":%d,\"type\":1}", i ? "," : "",
                               1029 - i);
    snprintf(want + wo, sizeof want - wo, "]}");
    expect("history", l, r, want, want);
}
END_TEST

START_TEST(test_bookmarks_structural)
{
    /* both sides added children to the same folder: both kept, remote first */
    expect("bookmarks",
           "{\"id\":\"f\",\"type\":\"folder\",\"title\":\"F\",\"children\":[\"a\",\"l1\",\"b\"]}",
           "{\"id\":\"f\",\"type\":\"folder\",\"title\":\"F\",\"children\":[\"r1\",\"a\",\"b\"]}",
           "{\"id\":\"f\",\"type\":\"folder\",\"title\":\"F\",\"children\":[\"r1\",\"a\",\"b\",\"l1\"]}",
           "{\"id\":\"f\",\"type\":\"folder\",\"title\":\"F\",\"children\":[\"r1\",\"a\",\"b\",\"l1\"]}");
    /* tags united; scalar fields from the server */
    expect("bookmarks", "{\"id\":\"b\",\"type\":\"bookmark\",\"title\":\"L\",\"tags\":[\"x\"]}",
           "{\"id\":\"b\",\"type\":\"bookmark\",\"title\":\"R\",\"tags\":[\"y\"]}",
           "{\"id\":\"b\",\"type\":\"bookmark\",\"title\":\"R\",\"tags\":[\"y\",\"x\"]}",
           "{\"id\":\"b\",\"type\":\"bookmark\",\"title\":\"R\",\"tags\":[\"y\",\"x\"]}");
    /* other collections: the server copy */
    expect("tabs", "{\"id\":\"t\",\"v\":1}", "{\"id\":\"t\",\"v\":2}", "{\"id\":\"t\",\"v\":2}", NULL);
}
END_TEST

START_TEST(test_bad_input)
{
    json_t *a, *u, *noid = J("{\"x\":1}"), *arr = J("[]"), *x = J("{\"id\":\"x\"}"), *y = J("{\"id\":\"y\"}");
    ck_assert_int_eq(picl__reconcile("bookmarks", noid, NULL, &a, &u), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__reconcile("bookmarks", NULL, arr, &a, &u), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(picl__reconcile("bookmarks", x, y, &a, &u), PICL_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(a);
    ck_assert_ptr_null(u);
    ck_assert_int_eq(picl__reconcile("bookmarks", NULL, NULL, &a, &u), PICL_OK);
    ck_assert(picl__bookmark_is_root("menu") && !picl__bookmark_is_root("menu________"));
    json_decref(noid);
    json_decref(arr);
    json_decref(x);
    json_decref(y);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reconcile");
    TCase *tc = tcase_create("reconcile");
    tcase_add_test(tc, test_one_side);
    tcase_add_test(tc, test_deletion_vs_edit);
    tcase_add_test(tc, test_passwords_later_change_wins);
    tcase_add_test(tc, test_history_union);
    tcase_add_test(tc, test_bookmarks_structural);
    tcase_add_test(tc, test_bad_input);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
