/* SPDX-License-Identifier: MPL-2.0 */
/* prefs.c -- the prefs store: the preferences Firefox syncs by default, read
 * from and written to a profile's prefs.js as one Firefox Sync prefs record
 * (forms.h). */
#include "stores/forms.h"
#include "stores/fileutil.h"
#include "stores/profile.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFS_MAX (16u * 1024u * 1024u)
#define PREF_VALUE_MAX 4096

/* The preferences whose services.sync.prefs.sync.<name> control pref is
 * true in firefox-esr's defaults (measured in the browser: the default
 * branch "services.sync.prefs.sync."), without those naming a URL or a
 * certificate (browser.startup.homepage, browser.newtabpage.pinned,
 * security.default_personal_cert). */
static const char *const ALLOWED[] = {
    "accessibility.blockautorefresh",
    "accessibility.browsewithcaret",
    "accessibility.typeaheadfind",
    "accessibility.typeaheadfind.linksonly",
    "addons.ignoreUserEnabledChanges",
    "app.shield.optoutstudies.enabled",
    "browser.contentblocking.category",
    "browser.contentblocking.features.strict",
    "browser.crashReports.unsubmittedCheck.autoSubmit2",
    "browser.ctrlTab.sortByRecentlyUsed",
    "browser.download.useDownloadDir",
    "browser.firefox-view.feature-tour",
    "browser.formfill.enable",
    "browser.link.open_newwindow",
    "browser.menu.showViewImageInfo",
    "browser.newtabpage.activity-stream.asrouter.userprefs.cfr.addons",
    "browser.newtabpage.activity-stream.asrouter.userprefs.cfr.features",
    "browser.newtabpage.activity-stream.feeds.section.highlights",
    "browser.newtabpage.activity-stream.feeds.section.topstories",
    "browser.newtabpage.activity-stream.feeds.topsites",
    "browser.newtabpage.activity-stream.section.highlights.includeBookmarks",
    "browser.newtabpage.activity-stream.section.highlights.includeDownloads",
    "browser.newtabpage.activity-stream.section.highlights.includeVisited",
    "browser.newtabpage.activity-stream.section.highlights.rows",
    "browser.newtabpage.activity-stream.section.topstories.rows",
    "browser.newtabpage.activity-stream.showSearch",
    "browser.newtabpage.activity-stream.showSponsored",
    "browser.newtabpage.activity-stream.showSponsoredTopSites",
    "browser.newtabpage.activity-stream.topSitesRows",
    "browser.newtabpage.enabled",
    "browser.pdfjs.feature-tour",
    "browser.safebrowsing.downloads.enabled",
    "browser.safebrowsing.downloads.remote.block_potentially_unwanted",
    "browser.safebrowsing.malware.enabled",
    "browser.safebrowsing.phishing.enabled",
    "browser.search.update",
    "browser.startup.page",
    "browser.startup.upgradeDialog.enabled",
    "browser.tabs.loadInBackground",
    "browser.tabs.warnOnClose",
    "browser.tabs.warnOnOpen",
    "browser.taskbar.previews.enable",
    "browser.urlbar.maxRichResults",
    "browser.urlbar.showSearchSuggestionsFirst",
    "browser.urlbar.suggest.bookmark",
    "browser.urlbar.suggest.engines",
    "browser.urlbar.suggest.history",
    "browser.urlbar.suggest.openpage",
    "browser.urlbar.suggest.searches",
    "browser.urlbar.suggest.topsites",
    "dom.disable_open_during_load",
    "dom.disable_window_flip",
    "dom.disable_window_move_resize",
    "dom.event.contextmenu.enabled",
    "dom.security.https_only_mode",
    "dom.security.https_only_mode_ever_enabled",
    "dom.security.https_only_mode_ever_enabled_pbm",
    "dom.security.https_only_mode_pbm",
    "extensions.activeThemeID",
    "extensions.update.enabled",
    "general.autoScroll",
    "intl.accept_languages",
    "intl.regional_prefs.use_os_locales",
    "layout.spellcheckDefault",
    "media.autoplay.default",
    "media.eme.enabled",
    "media.videocontrols.picture-in-picture.video-toggle.enabled",
    "network.cookie.cookieBehavior",
    "nimbus.rollouts.enabled",
    "permissions.default.image",
    "pref.downloads.disable_button.edit_actions",
    "pref.privacy.disable_button.cookie_exceptions",
    "privacy.clearOnShutdown.cache",
    "privacy.clearOnShutdown.cookies",
    "privacy.clearOnShutdown.downloads",
    "privacy.clearOnShutdown.formdata",
    "privacy.clearOnShutdown.history",
    "privacy.clearOnShutdown.offlineApps",
    "privacy.clearOnShutdown.sessions",
    "privacy.clearOnShutdown.siteSettings",
    "privacy.clearOnShutdown_v2.browsingHistoryAndDownloads",
    "privacy.clearOnShutdown_v2.cache",
    "privacy.clearOnShutdown_v2.cookiesAndStorage",
    "privacy.clearOnShutdown_v2.downloads",
    "privacy.clearOnShutdown_v2.formdata",
    "privacy.clearOnShutdown_v2.historyFormDataAndDownloads",
    "privacy.clearOnShutdown_v2.siteSettings",
    "privacy.donottrackheader.enabled",
    "privacy.globalprivacycontrol.enabled",
    "privacy.reduceTimerPrecision",
    "privacy.resistFingerprinting.reduceTimerPrecision.jitter",
    "privacy.resistFingerprinting.reduceTimerPrecision.microseconds",
    "privacy.sanitize.sanitizeOnShutdown",
    "privacy.trackingprotection.cryptomining.enabled",
    "privacy.trackingprotection.enabled",
    "privacy.trackingprotection.fingerprinting.enabled",
    "privacy.trackingprotection.harmfuladdon.enabled",
    "privacy.trackingprotection.pbmode.enabled",
    "privacy.userContext.enabled",
    "privacy.userContext.newTabContainerOnLeftClick.enabled",
    "services.sync.syncedTabs.showRemoteIcons",
    "signon.autofillForms",
    "signon.generation.enabled",
    "signon.management.page.breach-alerts.enabled",
    "signon.rememberSignons",
    "spellchecker.dictionary",
    "ui.osk.enabled",
};

/* Never applied whatever a control pref says: paths, servers, URLs,
 * passwords, proxies, and the control prefs themselves. */
static int denied(const char *name)
{
    static const char *const parts[] = {"path",     "dir",    "server",        "url",      "uri",
                                        "password", "proxy",  "homepage",      "endpoint", "token",
                                        "cert",     "pinned", "services.sync."};
    char low[256];
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof low)
        return 1;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    if (!strncmp(low, "browser.urlbar.", 15)) /* the address bar's own switches */
        memmove(low, low + 15, n - 15 + 1);
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(low, parts[i]))
            return 1;
    return 0;
}

int picl__prefs_allowed(const char *name)
{
    if (!name || denied(name))
        return 0;
    for (size_t i = 0; i < sizeof ALLOWED / sizeof ALLOWED[0]; i++)
        if (!strcmp(name, ALLOWED[i]))
            return 1;
    return 0;
}

/* ---- prefs.js ------------------------------------------------------------------ */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A quoted string at p ("..." or '...'); *end after it; malloc()ed UTF-8. */
static char *parse_string(const char *p, const char **end)
{
    char q = *p;
    if (q != '"' && q != '\'')
        return NULL;
    size_t cap = strlen(p) + 1, n = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    for (p++; *p && *p != q; p++) {
        unsigned c = (unsigned char)*p;
        if (c == '\\') {
            p++;
            int h1, h2;
            switch (*p) {
            case 'n':
                c = '\n';
                break;
            case 'r':
                c = '\r';
                break;
            case 't':
                c = '\t';
                break;
            case '\\':
            case '"':
            case '\'':
                c = (unsigned char)*p;
                break;
            case 'x':
                if ((h1 = hexval(p[1])) < 0 || (h2 = hexval(p[2])) < 0)
                    goto bad;
                c = (unsigned)(h1 * 16 + h2);
                p += 2;
                break;
            case 'u': {
                unsigned v = 0;
                for (int i = 1; i <= 4; i++) {
                    int h = hexval(p[i]);
                    if (h < 0)
                        goto bad;
                    v = v * 16 + (unsigned)h;
                }
                p += 4;
                if (v >= 0xd800 && v <= 0xdfff)
                    goto bad; /* surrogates: not in preferences we sync */
                if (v < 0x80) {
                    c = v;
                } else if (v < 0x800) {
                    out[n++] = (char)(0xc0 | (v >> 6));
                    c = 0x80 | (v & 0x3f);
                } else {
                    out[n++] = (char)(0xe0 | (v >> 12));
                    out[n++] = (char)(0x80 | ((v >> 6) & 0x3f));
                    c = 0x80 | (v & 0x3f);
                }
                break;
            }
            default:
                goto bad;
            }
        }
        if (c == 0)
            goto bad;
        out[n++] = (char)c;
    }
    if (*p != q)
        goto bad;
    out[n] = 0;
    *end = p + 1;
    return out;
bad:
    free(out);
    return NULL;
}

/* One user_pref line: name and value; 0 = not a user_pref line, -1 = malformed. */
static int parse_line(const char *line, char **name, json_t **value)
{
    const char *p = skip_ws(line), *e;
    *name = NULL;
    *value = NULL;
    if (strncmp(p, "user_pref", 9))
        return 0;
    p = skip_ws(p + 9);
    if (*p++ != '(')
        return -1;
    p = skip_ws(p);
    if (!(*name = parse_string(p, &e)))
        return -1;
    p = skip_ws(e);
    if (*p++ != ',')
        goto bad;
    p = skip_ws(p);
    if (*p == '"' || *p == '\'') {
        char *s = parse_string(p, &e);
        if (!s)
            goto bad;
        *value = json_string(s);
        free(s);
        p = e;
    } else if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
        *value = json_boolean(*p == 't');
        p += *p == 't' ? 4 : 5;
    } else {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p)
            goto bad;
        *value = json_integer(v);
        p = end;
    }
    p = skip_ws(p);
    if (*p++ != ')' || *(p = skip_ws(p)) != ';' || !*value)
        goto bad;
    return 1;
bad:
    free(*name);
    *name = NULL;
    json_decref(*value);
    *value = NULL;
    return -1;
}

picl_status picl__prefs_parse(const char *text, json_t **out)
{
    *out = json_object();
    if (!*out)
        return PICL_ERROR_NO_MEMORY;
    const char *line = text;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char *copy = strndup(line, len);
        if (!copy) {
            json_decref(*out);
            *out = NULL;
            return PICL_ERROR_NO_MEMORY;
        }
        char *name;
        json_t *value;
        int r = parse_line(copy, &name, &value);
        free(copy);
        if (r < 0) {
            json_decref(*out);
            *out = NULL;
            return PICL_ERROR_ENCODING;
        }
        if (r > 0) {
            json_object_set_new(*out, name, value);
            free(name);
        }
        line += len + (nl ? 1 : 0);
    }
    return PICL_OK;
}

/* Firefox's way of writing a string value: \\ \" \n \r escaped, the rest
 * as is; malloc()ed. */
static char *escape(const char *s)
{
    char *out = malloc(strlen(s) * 2 + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = s; *p; p++) {
        if (*p == '\\' || *p == '"' || *p == '\n' || *p == '\r') {
            *o++ = '\\';
            *o++ = *p == '\n' ? 'n' : *p == '\r' ? 'r' : *p;
        } else {
            *o++ = *p;
        }
    }
    *o = 0;
    return out;
}

/* user_pref("name", value); */
static char *pref_line(const char *name, const json_t *v)
{
    char *en = escape(name), *ev = json_is_string(v) ? escape(json_string_value(v)) : NULL, *out = NULL;
    if (!en || (json_is_string(v) && !ev))
        goto done;
    if (json_is_string(v)) {
        if (asprintf(&out, "user_pref(\"%s\", \"%s\");", en, ev) < 0)
            out = NULL;
    } else if (json_is_boolean(v)) {
        if (asprintf(&out, "user_pref(\"%s\", %s);", en, json_is_true(v) ? "true" : "false") < 0)
            out = NULL;
    } else if (asprintf(&out, "user_pref(\"%s\", %lld);", en, (long long)json_integer_value(v)) < 0) {
        out = NULL;
    }
done:
    free(en);
    free(ev);
    return out;
}

/* ---- the store -------------------------------------------------------------------- */

typedef struct prefs_store {
    picl_store base;
    picl_profile *profile;
    char path[4096];   /* prefs.js */
    char synced[4096]; /* STATE/prefs-synced.json */
    json_t *refused;
    int kept_local; /* apply() kept a local change over an unchanged server copy */
} prefs_store;

static const picl_store_ops prefs_ops;

static picl_status read_prefs(prefs_store *p, char **text, json_t **prefs)
{
    size_t len;
    *prefs = NULL;
    picl_status st = picl__read_file(p->path, PREFS_MAX, text, &len);
    if (st == PICL_ERROR_NOT_FOUND) {
        *text = strdup("");
        st = *text ? PICL_OK : PICL_ERROR_NO_MEMORY;
    }
    if (st != PICL_OK)
        return picl__store_fail(&p->base, st, "cannot read %s", p->path);
    if ((st = picl__prefs_parse(*text, prefs)) != PICL_OK) {
        free(*text);
        *text = NULL;
        return picl__store_fail(&p->base, st, "%s has a user_pref line that does not parse: nothing synced",
                                p->path);
    }
    return PICL_OK;
}

/* The names synced: the allow-list, plus what the user's own control prefs
 * add (services.sync.prefs.sync.X = true) or take away (= false), never a
 * denied name. */
static int synced_name(const json_t *prefs, const char *name)
{
    char ctl[300];
    snprintf(ctl, sizeof ctl, "services.sync.prefs.sync.%s", name);
    json_t *c = json_object_get(prefs, ctl);
    if (json_is_false(c))
        return 0;
    return picl__prefs_allowed(name) || (json_is_true(c) && !denied(name));
}

static picl_status build_record(prefs_store *p, json_t **rec)
{
    char *text = NULL;
    json_t *prefs = NULL;
    *rec = NULL;
    picl_status st = read_prefs(p, &text, &prefs);
    free(text);
    if (st != PICL_OK)
        return st;
    json_t *value = json_object();
    for (size_t i = 0; i < sizeof ALLOWED / sizeof ALLOWED[0]; i++)
        if (synced_name(prefs, ALLOWED[i]))
            json_object_set(value, ALLOWED[i],
                            json_object_get(prefs, ALLOWED[i]) ? json_object_get(prefs, ALLOWED[i])
                                                               : json_null());
    const char *k;
    json_t *v;
    json_object_foreach (prefs, k, v) {
        if (!strncmp(k, "services.sync.prefs.sync.", 25) && json_is_true(v) && synced_name(prefs, k + 25) &&
            !json_object_get(value, k + 25))
            json_object_set(value, k + 25,
                            json_object_get(prefs, k + 25) ? json_object_get(prefs, k + 25) : json_null());
    }
    json_decref(prefs);
    *rec = json_pack("{s:s, s:o}", "id", PICL_PREFS_ID, "value", value);
    return *rec ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status last_synced(prefs_store *p, char **text)
{
    size_t len;
    picl_status st = picl__read_file(p->synced, PREFS_MAX, text, &len);
    if (st == PICL_ERROR_NOT_FOUND) {
        *text = strdup("");
        return *text ? PICL_OK : PICL_ERROR_NO_MEMORY;
    }
    return st == PICL_OK ? st : picl__store_fail(&p->base, st, "cannot read %s", p->synced);
}

static picl_status save_synced(prefs_store *p, const json_t *rec)
{
    char *text = rec ? json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS) : strdup("");
    if (!text)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = picl__write_file_atomic(p->synced, text, strlen(text), 0600);
    free(text);
    return st == PICL_OK ? st : picl__store_fail(&p->base, st, "cannot write %s", p->synced);
}

static picl_status pf_all(picl_store *s, json_t **out)
{
    json_t *rec;
    picl_status st = build_record((prefs_store *)s, &rec);
    *out = st == PICL_OK ? json_pack("[o]", rec) : NULL;
    return st;
}

static picl_status pf_changes(picl_store *s, json_t **out)
{
    prefs_store *p = (prefs_store *)s;
    json_t *rec;
    char *was = NULL;
    *out = NULL;
    picl_status st = build_record(p, &rec);
    if (st != PICL_OK)
        return st;
    if ((st = last_synced(p, &was)) != PICL_OK) {
        json_decref(rec);
        return st;
    }
    char *now = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
    *out = json_array();
    if (now && strcmp(now, was))
        json_array_append(*out, rec);
    free(now);
    free(was);
    json_decref(rec);
    return *out ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status pf_get(picl_store *s, const char *id, json_t **out)
{
    *out = NULL;
    if (strcmp(id, PICL_PREFS_ID))
        return PICL_OK;
    return build_record((prefs_store *)s, out);
}

static int is_prefs_id(const json_t *r)
{
    const char *id = json_string_value(json_object_get(r, "id"));
    return id && !strcmp(id, PICL_PREFS_ID);
}

static void refuse(prefs_store *p, const char *name, const char *why)
{
    json_array_append_new(p->refused, json_pack("{s:s, s:s}", "name", name, "reason", why));
}

/* prefs.js with the given names set (value) or removed (null): each line
 * of one of them replaced in place (the first) or dropped, new ones at the
 * end; every other line byte for byte as it was. */
static picl_status rewrite(prefs_store *p, const char *text, const json_t *set)
{
    size_t cap = strlen(text) + 1024, n = 0;
    char *out = malloc(cap);
    json_t *done = json_object();
    picl_status st = PICL_OK;
    if (!out || !done) {
        st = PICL_ERROR_NO_MEMORY;
        goto fin;
    }
    const char *line = text;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char *copy = strndup(line, len), *name = NULL, *repl = NULL;
        json_t *value = NULL;
        if (!copy) {
            st = PICL_ERROR_NO_MEMORY;
            goto fin;
        }
        int r = parse_line(copy, &name, &value);
        free(copy);
        json_decref(value);
        const char *piece = line;
        size_t plen = len;
        if (r > 0 && json_object_get(set, name)) {
            json_t *v = json_object_get(set, name);
            if (!json_object_get(done, name) && !json_is_null(v))
                repl = pref_line(name, v);
            json_object_set_new(done, name, json_true());
            piece = repl;
            plen = repl ? strlen(repl) : 0;
        }
        free(name);
        if (piece) {
            if (n + plen + 2 > cap) {
                cap = (n + plen + 2) * 2;
                char *nb = realloc(out, cap);
                if (!nb) {
                    free(repl);
                    st = PICL_ERROR_NO_MEMORY;
                    goto fin;
                }
                out = nb;
            }
            memcpy(out + n, piece, plen);
            n += plen;
            out[n++] = '\n';
        }
        free(repl);
        line += len + (nl ? 1 : 0);
    }
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)set, k, v) {
        if (json_object_get(done, k) || json_is_null(v))
            continue;
        char *l = pref_line(k, v);
        if (!l) {
            st = PICL_ERROR_NO_MEMORY;
            goto fin;
        }
        size_t plen = strlen(l);
        if (n + plen + 2 > cap) {
            cap = (n + plen + 2) * 2;
            char *nb = realloc(out, cap);
            if (!nb) {
                free(l);
                st = PICL_ERROR_NO_MEMORY;
                goto fin;
            }
            out = nb;
        }
        memcpy(out + n, l, plen);
        n += plen;
        out[n++] = '\n';
        free(l);
    }
    st = picl__write_file_atomic(p->path, out, n, 0600);
    if (st != PICL_OK)
        picl__store_fail(&p->base, st, "cannot write %s", p->path);
fin:
    free(out);
    json_decref(done);
    return st;
}

static picl_status pf_apply(picl_store *s, const json_t *records)
{
    prefs_store *p = (prefs_store *)s;
    char *text = NULL, *base = NULL;
    json_t *prefs = NULL, *set = json_object(), *rec = NULL;
    picl_status st = read_prefs(p, &text, &prefs);
    if (st != PICL_OK)
        goto done;
    size_t i;
    json_t *r;
    if ((st = last_synced(p, &base)) != PICL_OK)
        goto done;
    json_array_foreach (records, i, r) {
        if (!is_prefs_id(r) || json_is_true(json_object_get(r, "deleted")))
            continue;
        char *in = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
        int unchanged = in && !strcmp(in, base);
        free(in);
        if (unchanged) { /* the server holds what was last synced (a class move, a
                          * re-download): local changes stay, and go up next time */
            p->kept_local = 1;
            continue;
        }
        json_t *value = json_object_get(r, "value");
        if (!json_is_object(value)) {
            refuse(p, "", "a prefs record without a value object: ignored");
            continue;
        }
        const char *k;
        json_t *v;
        json_object_foreach (value, k, v) {
            if (!synced_name(prefs, k)) {
                refuse(p, k, "not a preference Firefox syncs (not on the allow-list): not applied");
                continue;
            }
            if (!json_is_null(v) && !json_is_boolean(v) && !json_is_integer(v) && !json_is_string(v)) {
                refuse(p, k, "a value that is not a boolean, an integer or a string: not applied");
                continue;
            }
            if (json_is_string(v) && (json_string_length(v) > PREF_VALUE_MAX ||
                                      strlen(json_string_value(v)) != json_string_length(v))) {
                refuse(p, k, "a string value too long or with a NUL: not applied");
                continue;
            }
            json_t *cur = json_object_get(prefs, k);
            if (cur && !json_is_null(v) && json_typeof(cur) != json_typeof(v) &&
                !(json_is_boolean(cur) && json_is_boolean(v))) {
                refuse(p, k, "a value of another type than the local one: not applied");
                continue;
            }
            if (json_is_null(v) ? cur != NULL : !json_equal(cur, v))
                json_object_set(set, k, v);
        }
    }
    if (json_object_size(set) && (st = rewrite(p, text, set)) != PICL_OK)
        goto done;
    /* the server's record is what was synced: what differs locally (a
     * local change the incoming record won over, a refused value) is a
     * local change, uploaded at the next sync */
    json_array_foreach (records, i, r) {
        if (is_prefs_id(r) && !json_is_true(json_object_get(r, "deleted")))
            st = save_synced(p, r);
    }
done:
    free(base);
    free(text);
    json_decref(prefs);
    json_decref(set);
    json_decref(rec);
    return st;
}

/* Only a record still equal to prefs.js is marked: one an incoming record
 * won over in this sync (apply() saved that one) is not. */
static picl_status pf_mark_synced(picl_store *s, const json_t *records)
{
    size_t i;
    json_t *r;
    if (((prefs_store *)s)->kept_local)
        return PICL_OK; /* not uploaded yet: still a local change */
    json_array_foreach (records, i, r) {
        if (!is_prefs_id(r))
            continue;
        json_t *now = NULL;
        picl_status st = build_record((prefs_store *)s, &now);
        int same = st == PICL_OK && json_equal(now, r);
        json_decref(now);
        if (st != PICL_OK)
            return st;
        return same ? save_synced((prefs_store *)s, r) : PICL_OK;
    }
    return PICL_OK;
}

static picl_status pf_reset(picl_store *s) { return save_synced((prefs_store *)s, NULL); }

static void pf_close(picl_store *s)
{
    prefs_store *p = (prefs_store *)s;
    picl__profile_close(p->profile);
    json_decref(p->refused);
    free(p);
}

static const picl_store_ops prefs_ops = {
    .changes = pf_changes,
    .all = pf_all,
    .get = pf_get,
    .apply = pf_apply,
    .mark_synced = pf_mark_synced,
    .reset = pf_reset,
    .wipe = pf_reset,
    .close = pf_close,
};

picl_status picl__prefs_open(picl_store **out, const char *profile_dir, const char *state_dir, char *err,
                             size_t errlen)
{
    *out = NULL;
    if (!profile_dir || !state_dir || strlen(state_dir) >= 4000)
        return PICL_ERROR_INVALID_ARGUMENT;
    prefs_store *p = calloc(1, sizeof *p);
    if (!p)
        return PICL_ERROR_NO_MEMORY;
    p->base.ops = &prefs_ops;
    snprintf(p->base.collection, sizeof p->base.collection, "%s", "prefs");
    snprintf(p->synced, sizeof p->synced, "%s/prefs-synced.json", state_dir);
    p->refused = json_array();
    picl_status rc =
        p->refused ? picl__profile_open(profile_dir, &p->profile, err, errlen) : PICL_ERROR_NO_MEMORY;
    if (rc == PICL_OK)
        rc = picl__profile_path(p->profile, "prefs.js", p->path, sizeof p->path);
    if (rc != PICL_OK) {
        pf_close(&p->base);
        return rc;
    }
    *out = &p->base;
    return PICL_OK;
}

json_t *picl__prefs_refused(picl_store *s)
{
    if (!s || s->ops != &prefs_ops)
        return NULL;
    return json_incref(((prefs_store *)s)->refused);
}
