/* SPDX-License-Identifier: MPL-2.0 */
/* service_devices.c -- the service's device methods: other devices' open
 * tabs (read from the server), sending a tab to a device, tabs received. */
#include "picl.h"
#include "service_int.h"
#include "client/engine.h"
#include "client/engine_int.h"
#include "client/records.h"
#include "client/storage_client.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/util.h"
#include "stores/devices.h"
#include "protocol/synctime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEND_ATTEMPTS 4

/* The keys of a collection per the class map; PICL_ERROR_NOT_FOUND when no
 * device has put it in the map yet. */
static picl_status coll_keys(picl_engine *e, const char *coll, picl_class_entry *entry, picl_keypair *keys)
{
    picl_class_entry dummy;
    picl_status st = picl__engine_get_class(e, coll, &dummy);
    if (st != PICL_OK)
        return st;
    const picl_class_entry *x = picl__classmap_get(&e->map, coll);
    if (!x)
        return picl__eng_fail(e, PICL_ERROR_NOT_FOUND, "no device has synced its %s yet", coll);
    *entry = *x;
    if ((x->cls == 'B' && !e->st->has_kb) || (x->cls == 'A' && !e->st->has_ka))
        return picl__eng_fail(e, PICL_ERROR_STATE, "%s is class %c: enter the password first", coll, x->cls);
    return picl__collection_keys(keys, x->cls == 'A' ? e->st->ka : e->st->kb, coll, x->generation);
}

static int64_t bso_modified(const json_t *bso)
{
    return picl__synctime_from_json(json_object_get(bso, "modified"), 0);
}

/* Every record of coll as id -> {"record", "modified" (centiseconds)}; a
 * record that fails its checks is listed in skipped, never used. */
static picl_status fetch_all(picl_engine *e, const char *coll, json_t **out, json_t *skipped)
{
    picl_class_entry entry;
    picl_keypair keys;
    json_t *bsos = NULL;
    *out = NULL;
    picl_status st = coll_keys(e, coll, &entry, &keys);
    if (st != PICL_OK)
        goto done;
    picl_stc_query q = {
        .newer = -1, .older = -1, .full = 1, .if_modified_since = -1, .if_unmodified_since = -1};
    st = picl__stc_get_all(e->stc, coll, &q, 10000, &bsos);
    if (st == PICL_ERROR_NOT_FOUND) {
        st = PICL_OK;
        bsos = json_array();
    }
    if (st != PICL_OK) {
        picl__eng_fail(e, st, "cannot read %s from the storage server", coll);
        goto done;
    }
    *out = json_object();
    size_t i;
    json_t *b;
    json_array_foreach (bsos, i, b) {
        const char *id = json_string_value(json_object_get(b, "id"));
        const char *payload = json_string_value(json_object_get(b, "payload"));
        json_t *clear = NULL;
        picl_record_fault why = PICL_RECORD_FAULT_NONE;
        if (!id)
            continue;
        if (!payload || picl__record_decrypt(&clear, coll, id, payload, &keys, &entry, 0, &why) != PICL_OK) {
            const char *r = picl__record_fault_text(why);
            json_array_append_new(skipped, json_pack("{s:s, s:s, s:s}", "collection", coll, "id", id,
                                                     "reason", *r ? r : "hmac mismatch"));
            continue;
        }
        json_object_set_new(
            *out, id, json_pack("{s:o, s:I}", "record", clear, "modified", (json_int_t)bso_modified(b)));
    }
done:
    picl__wipe(&keys, sizeof keys);
    picl__json_zdecref(bsos);
    return st;
}

/* ---- other devices' tabs -------------------------------------------------------- */

typedef struct list_args {
    const char *own;
    json_t *result;
} list_args;

static picl_status list_tabs(service *s, picl_engine *e, void *arg)
{
    (void)s;
    list_args *a = arg;
    json_t *clients = NULL, *tabs = NULL, *devices = json_array(), *skipped = json_array();
    picl_status st = fetch_all(e, "clients", &clients, skipped);
    if (st == PICL_ERROR_NOT_FOUND) { /* nobody synced clients yet: no devices */
        st = PICL_OK;
        clients = json_object();
    }
    if (st == PICL_OK) {
        st = fetch_all(e, "tabs", &tabs, skipped);
        if (st == PICL_ERROR_NOT_FOUND) {
            st = PICL_OK;
            tabs = json_object();
        }
    }
    if (st != PICL_OK)
        goto done;
    int64_t now = (int64_t)time(NULL) * 100 + picl__stc_clock_offset(e->stc);
    const char *id;
    json_t *c;
    json_object_foreach (clients, id, c) {
        json_t *rec = json_object_get(c, "record");
        int64_t seen = json_integer_value(json_object_get(c, "modified"));
        if (!strcmp(id, a->own) || json_is_true(json_object_get(rec, "deleted")))
            continue;
        if (now - seen > (int64_t)PICL_DEVICE_STALE_S * 100)
            continue; /* not seen for 21 days: hidden */
        json_t *list = json_array();
        json_t *t = json_object_get(json_object_get(tabs, id), "record");
        char why[128] = "";
        if (t && picl__tabs_check_record(t, why, sizeof why) != PICL_OK) {
            json_array_append_new(
                skipped, json_pack("{s:s, s:s, s:s}", "collection", "tabs", "id", id, "reason", why));
            t = NULL;
        }
        size_t i;
        json_t *tab;
        json_array_foreach (json_object_get(t, "tabs"), i, tab) {
            const char *url = json_string_value(json_array_get(json_object_get(tab, "urlHistory"), 0));
            if (!picl__url_ok(url))
                continue;
            const char *title = json_string_value(json_object_get(tab, "title"));
            const char *icon = json_string_value(json_object_get(tab, "icon"));
            json_array_append_new(
                list, json_pack("{s:s, s:s, s:O, s:s, s:I}", "title", title ? title : "", "url", url,
                                "urlHistory", json_object_get(tab, "urlHistory"), "icon", icon ? icon : "",
                                "lastUsed", json_integer_value(json_object_get(tab, "lastUsed"))));
        }
        const char *name = json_string_value(json_object_get(rec, "name"));
        const char *type = json_string_value(json_object_get(rec, "type"));
        char ts[24];
        picl__ts_format(ts, seen);
        json_array_append_new(devices,
                              json_pack("{s:s, s:s, s:s, s:s, s:o}", "id", id, "name", name ? name : "",
                                        "type", type ? type : "", "lastSeen", ts, "tabs", list));
    }
    a->result = json_pack("{s:O, s:O}", "devices", devices, "skipped", skipped);
    if (!a->result)
        st = PICL_ERROR_NO_MEMORY;
done:
    picl__json_zdecref(clients);
    picl__json_zdecref(tabs);
    json_decref(devices);
    json_decref(skipped);
    return st;
}

static picl_status own_id(service *s, char out[16])
{
    char err[256] = "";
    json_t *d = NULL;
    picl_status st = picl__devices_load(s->st->dir, &d, err, sizeof err);
    if (st != PICL_OK)
        return picl__svc_done(s, st, "%s", err);
    snprintf(out, 16, "%s", json_string_value(json_object_get(d, "id")));
    json_decref(d);
    return PICL_OK;
}

picl_status picl__svc_remote_tabs(picl_service *self, char **json)
{
    service *s = SVC(self);
    char own[16];
    if (!json)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "no output");
    *json = NULL;
    picl_status st = own_id(s, own);
    if (st != PICL_OK)
        return st;
    list_args a = {own, NULL};
    st = picl__svc_with_engine(s, list_tabs, &a);
    if (st != PICL_OK) {
        json_decref(a.result);
        return st;
    }
    *json = json_dumps(a.result, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(a.result);
    return *json ? picl__svc_done(s, PICL_OK, NULL) : PICL_ERROR_NO_MEMORY;
}

/* ---- sending a tab ----------------------------------------------------------------- */

typedef struct send_args {
    const char *own, *device, *url, *title;
    char target[64];
} send_args;

/* The id of the device named by its id or its name (not stale, not us). */
static picl_status resolve(picl_engine *e, send_args *a)
{
    json_t *clients = NULL, *skipped = json_array();
    picl_status st = fetch_all(e, "clients", &clients, skipped);
    if (st == PICL_ERROR_NOT_FOUND)
        st = picl__eng_fail(e, st, "no device %s: no device has synced yet", a->device);
    size_t i;
    json_t *f;
    json_array_foreach (skipped, i, f) {
        if (st == PICL_OK && !strcmp(json_string_value(json_object_get(f, "id")), a->device))
            st = picl__eng_fail(e, PICL_ERROR_INTEGRITY,
                                "the clients record of %s failed its integrity check (%s): "
                                "nothing sent",
                                a->device, json_string_value(json_object_get(f, "reason")));
    }
    json_decref(skipped);
    if (st != PICL_OK) {
        picl__json_zdecref(clients);
        return st;
    }
    int64_t now = (int64_t)time(NULL) * 100 + picl__stc_clock_offset(e->stc);
    int found = 0;
    const char *id;
    json_t *c;
    json_object_foreach (clients, id, c) {
        json_t *rec = json_object_get(c, "record");
        const char *name = json_string_value(json_object_get(rec, "name"));
        if (json_is_true(json_object_get(rec, "deleted")) ||
            now - json_integer_value(json_object_get(c, "modified")) > (int64_t)PICL_DEVICE_STALE_S * 100)
            continue;
        if (!strcmp(id, a->device) || (name && !strcmp(name, a->device))) {
            if (found && strcmp(a->target, id)) {
                picl__json_zdecref(clients);
                return picl__eng_fail(e, PICL_ERROR_INVALID_ARGUMENT,
                                      "two devices are called \"%s\": name one by its id (picl tabs --json)",
                                      a->device);
            }
            snprintf(a->target, sizeof a->target, "%s", id);
            found = 1;
        }
    }
    picl__json_zdecref(clients);
    if (!found)
        return picl__eng_fail(e, PICL_ERROR_NOT_FOUND, "no device \"%s\" (seen in the last 21 days)",
                              a->device);
    if (!strcmp(a->target, a->own))
        return picl__eng_fail(e, PICL_ERROR_INVALID_ARGUMENT, "\"%s\" is this device", a->device);
    return PICL_OK;
}

static picl_status send_tab(service *s, picl_engine *e, void *arg)
{
    (void)s;
    send_args *a = arg;
    picl_class_entry entry;
    picl_keypair keys;
    picl_status st = resolve(e, a);
    if (st != PICL_OK)
        return st;
    if ((st = coll_keys(e, "clients", &entry, &keys)) != PICL_OK)
        return st;
    uint8_t raw[16];
    char flow[40];
    if ((st = picl__random_bytes(raw, sizeof raw)) != PICL_OK)
        goto done;
    picl__hex_encode(flow, raw, sizeof raw);
    for (int attempt = 0; attempt < SEND_ATTEMPTS; attempt++) {
        json_t *bso = NULL, *rec = NULL;
        char *payload = NULL;
        picl_record_fault why = PICL_RECORD_FAULT_NONE;
        st = picl__stc_get_item(e->stc, "clients", a->target, &bso);
        if (st != PICL_OK) {
            picl__eng_fail(e, st, "cannot read the clients record of %s", a->target);
            goto done;
        }
        const char *p = json_string_value(json_object_get(bso, "payload"));
        if (!p || picl__record_decrypt(&rec, "clients", a->target, p, &keys, &entry, 0, &why) != PICL_OK) {
            json_decref(bso);
            st = picl__eng_fail(e, PICL_ERROR_INTEGRITY,
                                "the clients record of %s failed its integrity check (%s): "
                                "nothing sent",
                                a->target, picl__record_fault_text(why));
            goto done;
        }
        json_t *cmds = json_object_get(rec, "commands");
        if (!json_is_array(cmds)) {
            json_object_set_new(rec, "commands", json_array());
            cmds = json_object_get(rec, "commands");
        }
        json_t *cmd = json_pack("{s:s, s:[s, s, s], s:s}", "command", "displayURI", "args", a->url, a->own,
                                a->title ? a->title : "", "flowID", flow);
#ifdef PICL_TEST_HOOKS /* test builds only: a hostile device's command, as given */
        const char *raw_cmd = getenv("PICL_TEST_SEND_COMMAND");
        if (raw_cmd && *raw_cmd) {
            json_decref(cmd);
            cmd = json_loads(raw_cmd, 0, NULL);
        }
#endif
        json_array_append_new(cmds, cmd);
        st = picl__record_encrypt(&payload, "clients", rec, &keys, &entry);
        picl__json_zdecref(rec);
        if (st != PICL_OK) {
            json_decref(bso);
            goto done;
        }
        json_t *put = json_pack("{s:s}", "payload", payload);
        free(payload);
        /* only over the version we read: a command added or handled meanwhile is not lost */
        st = put ? picl__stc_put(e->stc, "clients", a->target, put, bso_modified(bso), NULL)
                 : PICL_ERROR_NO_MEMORY;
        json_decref(put);
        json_decref(bso);
        if (st != PICL_ERROR_CONFLICT)
            break;
    }
    if (st == PICL_ERROR_CONFLICT)
        picl__eng_fail(e, st, "the clients record of %s kept changing: try again", a->target);
    else if (st != PICL_OK)
        picl__eng_fail(e, st, "cannot write the clients record of %s", a->target);
done:
    picl__wipe(&keys, sizeof keys);
    return st;
}

picl_status picl__svc_send_tab(picl_service *self, const char *device, const char *url, const char *title)
{
    service *s = SVC(self);
    char own[16];
    if (!device || !*device)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "say which device");
    if (!picl__url_ok(url))
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "only http and https URLs can be sent");
    if (title && strlen(title) > PICL_URL_MAX)
        return picl__svc_done(s, PICL_ERROR_TOO_LARGE, "the title is too long");
    picl_status st = own_id(s, own);
    if (st != PICL_OK)
        return st;
    send_args a = {own, device, url, title, ""};
    st = picl__svc_with_engine(s, send_tab, &a);
    return st == PICL_OK ? picl__svc_done(s, st, NULL) : st;
}

picl_status picl__svc_received_tabs(picl_service *self, char **json)
{
    service *s = SVC(self);
    char err[256] = "";
    json_t *d = NULL;
    if (!json)
        return picl__svc_done(s, PICL_ERROR_INVALID_ARGUMENT, "no output");
    *json = NULL;
    picl_status st = picl__devices_load(s->st->dir, &d, err, sizeof err);
    if (st != PICL_OK)
        return picl__svc_done(s, st, "%s", err);
    *json = json_dumps(json_object_get(d, "received"), JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(d);
    return *json ? picl__svc_done(s, PICL_OK, NULL) : PICL_ERROR_NO_MEMORY;
}
