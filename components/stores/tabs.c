/* SPDX-License-Identifier: MPL-2.0 */
/* tabs.c -- the tabs store: this device's open tabs read from the profile's
 * session store, as a Firefox Sync tabs record (devices.h). */
#include "stores/devices.h"
#include "stores/mozlz4.h"
#include "stores/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define URL_HISTORY_MAX 25

typedef struct tabs_store {
    picl_store base;
    char profile[4096];
    char dir[4096];
    picl_profile *lock; /* held while open: the session files do not change under us */
} tabs_store;

static json_t *one_tab(const json_t *tab)
{
    json_t *entries = json_object_get(tab, "entries");
    json_int_t index = json_integer_value(json_object_get(tab, "index"));
    size_t n = json_array_size(entries);
    if (!json_is_array(entries) || n == 0)
        return NULL;
    if (index < 1 || (size_t)index > n)
        index = (json_int_t)n;
    json_t *cur = json_array_get(entries, (size_t)index - 1);
    const char *url = json_string_value(json_object_get(cur, "url"));
    if (!picl__url_ok(url))
        return NULL;
    json_t *hist = json_array();
    /* the current page first, then back in history */
    for (json_int_t i = index - 1; i >= 0 && json_array_size(hist) < URL_HISTORY_MAX; i--) {
        const char *u = json_string_value(json_object_get(json_array_get(entries, (size_t)i), "url"));
        if (picl__url_ok(u))
            json_array_append_new(hist, json_string(u));
    }
    const char *title = json_string_value(json_object_get(cur, "title"));
    const char *icon = json_string_value(json_object_get(tab, "image"));
    json_int_t last = json_integer_value(json_object_get(tab, "lastAccessed"));
    if (!json_is_integer(json_object_get(tab, "lastAccessed")))
        last = (json_int_t)json_number_value(json_object_get(tab, "lastAccessed"));
    if (icon && (strlen(icon) > 2048 || strncmp(icon, "http", 4)))
        icon = ""; /* data: icons would eat the record */
    return json_pack("{s:s, s:o, s:s, s:I}", "title", title ? title : "", "urlHistory", hist, "icon",
                     icon ? icon : "", "lastUsed", (json_int_t)(last > 0 ? last / 1000 : 0));
}

static int by_last_used(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "lastUsed"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "lastUsed"));
    return x < y ? 1 : x > y ? -1 : 0;
}

picl_status picl__tabs_from_session(const char *text, size_t len, json_t **out)
{
    *out = NULL;
    json_t *s = json_loadb(text, len, 0, NULL);
    json_t *wins = json_object_get(s, "windows");
    if (!json_is_object(s) || !json_is_array(wins)) {
        json_decref(s);
        return PICL_ERROR_ENCODING;
    }
    size_t cap = 0, n = 0;
    json_t **list = NULL;
    picl_status st = PICL_OK;
    size_t i, j;
    json_t *w, *t;
    json_array_foreach (wins, i, w) {
        if (json_is_true(json_object_get(w, "isPrivate")))
            continue;
        json_array_foreach (json_object_get(w, "tabs"), j, t) {
            json_t *tab = one_tab(t);
            if (!tab)
                continue;
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 32;
                json_t **nl = realloc(list, nc * sizeof *nl);
                if (!nl) {
                    json_decref(tab);
                    st = PICL_ERROR_NO_MEMORY;
                    goto done;
                }
                list = nl;
                cap = nc;
            }
            list[n++] = tab;
        }
    }
    if (n)
        qsort(list, n, sizeof *list, by_last_used);
    json_t *a = json_array();
    /* {"id":"............","clientName":"<name up to 160>","tabs":[...]} */
    size_t used = 256;
    for (size_t k = 0; a && k < n; k++) {
        char *one = json_dumps(list[k], JSON_COMPACT);
        size_t l = one ? strlen(one) + 1 : 0;
        free(one);
        if (!l || used + l > PICL_TABS_RECORD_MAX)
            break; /* the most recently used tabs that fit */
        used += l;
        json_array_append(a, list[k]);
    }
    if (!a)
        st = PICL_ERROR_NO_MEMORY;
    *out = a;
done:
    for (size_t k = 0; k < n; k++)
        json_decref(list[k]);
    free(list);
    json_decref(s);
    return st;
}

picl_status picl__tabs_check_record(const json_t *rec, char *why, size_t n)
{
    if (!json_is_object(rec) || !json_is_string(json_object_get(rec, "id"))) {
        snprintf(why, n, "not a tabs record");
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    char *text = json_dumps(rec, JSON_COMPACT);
    size_t len = text ? strlen(text) : 0;
    free(text);
    if (!len || len > PICL_TABS_RECORD_MAX) {
        snprintf(why, n, "tabs record of %zu bytes (over %u): skipped", len, PICL_TABS_RECORD_MAX);
        return PICL_ERROR_TOO_LARGE;
    }
    json_t *tabs = json_object_get(rec, "tabs");
    size_t i, j;
    json_t *t, *u;
    if (!json_is_array(tabs)) {
        snprintf(why, n, "tabs record without a list of tabs");
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    json_array_foreach (tabs, i, t) {
        json_t *h = json_object_get(t, "urlHistory");
        if (!json_is_object(t) || !json_is_array(h) || json_array_size(h) == 0) {
            snprintf(why, n, "tabs record with a malformed tab");
            return PICL_ERROR_INVALID_ARGUMENT;
        }
        json_array_foreach (h, j, u)
            if (!json_is_string(u)) {
                snprintf(why, n, "tabs record with a malformed tab");
                return PICL_ERROR_INVALID_ARGUMENT;
            }
    }
    return PICL_OK;
}

/* The session as Firefox last wrote it: recovery.jsonlz4 while it runs (or
 * after a crash), sessionstore.jsonlz4 after a clean quit; the newer wins. */
static picl_status read_session(tabs_store *t, json_t **tabs)
{
    static const char *const names[] = {"sessionstore.jsonlz4", "sessionstore-backups/recovery.jsonlz4"};
    char path[4200], best[4200] = "";
    struct timespec newest = {0, 0};
    for (size_t i = 0; i < 2; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", t->profile, names[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            (!*best || st.st_mtim.tv_sec > newest.tv_sec ||
             (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec > newest.tv_nsec))) {
            newest = st.st_mtim;
            snprintf(best, sizeof best, "%s", path);
        }
    }
    *tabs = NULL;
    if (!*best) { /* no session yet: no open tabs */
        *tabs = json_array();
        return *tabs ? PICL_OK : PICL_ERROR_NO_MEMORY;
    }
    char *text = NULL;
    size_t len = 0;
    picl_status st = picl__mozlz4_read_file(best, &text, &len);
    if (st == PICL_OK)
        st = picl__tabs_from_session(text, len, tabs);
    free(text);
    if (st == PICL_ERROR_ENCODING || st == PICL_ERROR_TOO_LARGE)
        return picl__store_fail(&t->base, st, "%s is corrupt (not a mozLz4 session store): no tabs uploaded",
                                best);
    if (st != PICL_OK)
        return picl__store_fail(&t->base, st, "cannot read %s", best);
    return PICL_OK;
}

static picl_status own_record(tabs_store *t, json_t **rec, json_t **dev)
{
    char err[256] = "";
    json_t *tabs = NULL, *d = NULL;
    *rec = NULL;
    picl_status st = picl__devices_load(t->dir, &d, err, sizeof err);
    if (st != PICL_OK)
        return picl__store_fail(&t->base, st, "%s", err);
    if ((st = read_session(t, &tabs)) != PICL_OK) {
        json_decref(d);
        return st;
    }
    *rec = json_pack("{s:O, s:O, s:o}", "id", json_object_get(d, "id"), "clientName",
                     json_object_get(d, "name"), "tabs", tabs);
    if (dev)
        *dev = d;
    else
        json_decref(d);
    return *rec ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status tb_all(picl_store *s, json_t **out)
{
    json_t *rec;
    picl_status st = own_record((tabs_store *)s, &rec, NULL);
    if (st != PICL_OK)
        return st;
    *out = json_pack("[o]", rec);
    return *out ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status tb_changes(picl_store *s, json_t **out)
{
    json_t *rec, *d;
    picl_status st = own_record((tabs_store *)s, &rec, &d);
    if (st != PICL_OK)
        return st;
    char *text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
    *out = json_array();
    json_int_t at = json_integer_value(json_object_get(d, "tabsUploadedAt"));
    if (text && (strcmp(text, json_string_value(json_object_get(d, "tabsUploaded"))) ||
                 (json_int_t)time(NULL) - at > PICL_DEVICE_REFRESH_S))
        json_array_append(*out, rec);
    free(text);
    json_decref(rec);
    json_decref(d);
    return *out ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status tb_get(picl_store *s, const char *id, json_t **out)
{
    json_t *rec;
    *out = NULL;
    picl_status st = own_record((tabs_store *)s, &rec, NULL);
    if (st != PICL_OK)
        return st;
    if (!strcmp(id, json_string_value(json_object_get(rec, "id"))))
        *out = rec;
    else
        json_decref(rec);
    return PICL_OK;
}

static picl_status tb_apply(picl_store *s, const json_t *records)
{
    (void)s;
    (void)records; /* other devices' tabs are read from the server when listed */
    return PICL_OK;
}

static picl_status set_uploaded(tabs_store *t, const char *text)
{
    char err[256] = "";
    int fd = -1;
    json_t *d = NULL;
    picl_status st = picl__devices_lock(t->dir, &fd);
    if (st != PICL_OK)
        return picl__store_fail(&t->base, st, "cannot lock the device file");
    if ((st = picl__devices_read(t->dir, &d, err, sizeof err)) == PICL_OK) {
        json_object_set_new(d, "tabsUploaded", json_string(text));
        json_object_set_new(d, "tabsUploadedAt", json_integer(*text ? (json_int_t)time(NULL) : 0));
        st = picl__devices_save(t->dir, d);
    }
    json_decref(d);
    picl__devices_unlock(fd);
    return st == PICL_OK ? st
                         : picl__store_fail(&t->base, st, "%s", *err ? err : "cannot write the device file");
}

static picl_status tb_mark_synced(picl_store *s, const json_t *records)
{
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        if (json_is_true(json_object_get(r, "deleted")))
            continue;
        char *text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
            return PICL_ERROR_NO_MEMORY;
        picl_status st = set_uploaded((tabs_store *)s, text);
        free(text);
        if (st != PICL_OK)
            return st;
    }
    return PICL_OK;
}

static picl_status tb_reset(picl_store *s) { return set_uploaded((tabs_store *)s, ""); }

static void tb_close(picl_store *s)
{
    tabs_store *t = (tabs_store *)s;
    picl__profile_close(t->lock);
    free(t);
}

static const picl_store_ops tabs_ops = {
    .changes = tb_changes,
    .all = tb_all,
    .get = tb_get,
    .apply = tb_apply,
    .mark_synced = tb_mark_synced,
    .reset = tb_reset,
    .wipe = tb_reset,
    .close = tb_close,
};

picl_status picl__tabs_open(picl_store **out, const char *profile_dir, const char *state_dir, char *err,
                            size_t errlen)
{
    *out = NULL;
    if (!profile_dir || !state_dir || strlen(profile_dir) >= 4000 || strlen(state_dir) >= 4000)
        return PICL_ERROR_INVALID_ARGUMENT;
    tabs_store *t = calloc(1, sizeof *t);
    if (!t)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = picl__profile_open(profile_dir, &t->lock, err, errlen);
    if (st != PICL_OK) {
        free(t);
        return st;
    }
    t->base.ops = &tabs_ops;
    snprintf(t->base.collection, sizeof t->base.collection, "%s", "tabs");
    snprintf(t->profile, sizeof t->profile, "%s", profile_dir);
    snprintf(t->dir, sizeof t->dir, "%s", state_dir);
    *out = &t->base;
    return PICL_OK;
}
