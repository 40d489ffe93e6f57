/* SPDX-License-Identifier: MPL-2.0 */
/* clients.c -- the device file and the clients store: this device's Firefox
 * Sync clients record and the commands other devices put in it (devices.h). */
#include "stores/devices.h"
#include "stores/fileutil.h"
#include "crypto/codec.h"
#include "crypto/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define DEVICES_MAX (8u * 1024u * 1024u)
#define KEEP_HANDLED 1000

static picl_status dev_path(char *buf, size_t n, const char *dir, const char *name)
{
    int w = snprintf(buf, n, "%s/%s", dir, name);
    return (w < 0 || (size_t)w >= n) ? PICL_ERROR_TOO_LARGE : PICL_OK;
}

picl_status picl__devices_lock(const char *state_dir, int *fd)
{
    char path[4096];
    *fd = -1;
    if (dev_path(path, sizeof path, state_dir, "devices.lock") != PICL_OK)
        return PICL_ERROR_TOO_LARGE;
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0)
        return PICL_ERROR_IO;
    while (flock(f, LOCK_EX) != 0) {
        if (errno != EINTR) {
            close(f);
            return PICL_ERROR_IO;
        }
    }
    *fd = f;
    return PICL_OK;
}

void picl__devices_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* drops the flock */
}

picl_status picl__devices_save(const char *state_dir, const json_t *d)
{
    char path[4096];
    if (dev_path(path, sizeof path, state_dir, "devices.json") != PICL_OK)
        return PICL_ERROR_TOO_LARGE;
    char *text = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = picl__write_file_atomic(path, text, strlen(text), 0600);
    free(text);
    return st;
}

static void default_name(char *out, size_t n)
{
    const char *env = getenv("PICL_DEVICE_NAME");
    char host[256] = "";
    if (env && *env && strlen(env) < 128) {
        snprintf(out, n, "%s", env);
        return;
    }
    if (gethostname(host, sizeof host - 1) != 0 || !*host)
        snprintf(host, sizeof host, "%s", "localhost");
    snprintf(out, n, "PiCL on %.100s", host);
}

/* Reads the device file (the lock held by the caller); a missing one is made. */
picl_status picl__devices_read(const char *state_dir, json_t **out, char *err, size_t errlen)
{
    char path[4096];
    char *text = NULL;
    size_t len = 0;
    json_t *d = NULL;
    picl_status st = dev_path(path, sizeof path, state_dir, "devices.json");
    *out = NULL;
    if (st != PICL_OK)
        goto done;
    st = picl__read_file(path, DEVICES_MAX, &text, &len);
    if (st == PICL_OK) {
        d = json_loadb(text, len, 0, NULL);
        if (!json_is_object(d) || !json_is_string(json_object_get(d, "id")) ||
            strlen(json_string_value(json_object_get(d, "id"))) != 12) {
            snprintf(err, errlen, "%s is not a device file (remove it to start over)", path);
            st = PICL_ERROR_ENCODING;
            goto done;
        }
    } else if (st == PICL_ERROR_NOT_FOUND) {
        uint8_t raw[9];
        char id[16], name[160];
        if ((st = picl__random_bytes(raw, sizeof raw)) != PICL_OK)
            goto done;
        picl__base64url_encode(id, raw, sizeof raw, 0);
        default_name(name, sizeof name);
        d = json_pack("{s:s, s:s, s:s, s:s, s:[], s:[]}", "id", id, "name", name, "uploaded", "",
                      "tabsUploaded", "", "handled", "received");
        if (!d) {
            st = PICL_ERROR_NO_MEMORY;
            goto done;
        }
        if ((st = picl__devices_save(state_dir, d)) != PICL_OK) {
            snprintf(err, errlen, "cannot write %s", path);
            goto done;
        }
    } else {
        snprintf(err, errlen, "cannot read %s", path);
        goto done;
    }
    static const char *const arrays[] = {"handled", "received"};
    for (size_t i = 0; i < 2; i++)
        if (!json_is_array(json_object_get(d, arrays[i])))
            json_object_set_new(d, arrays[i], json_array());
    static const char *const strings[] = {"name", "uploaded", "tabsUploaded"};
    for (size_t i = 0; i < 3; i++)
        if (!json_is_string(json_object_get(d, strings[i])))
            json_object_set_new(d, strings[i], json_string(""));
    *out = d;
    d = NULL;
done:
    free(text);
    json_decref(d);
    return st;
}

picl_status picl__devices_load(const char *state_dir, json_t **out, char *err, size_t errlen)
{
    int fd;
    *out = NULL;
    picl_status st = picl__devices_lock(state_dir, &fd);
    if (st != PICL_OK) {
        snprintf(err, errlen, "cannot lock the device file in %s", state_dir);
        return st;
    }
    st = picl__devices_read(state_dir, out, err, errlen);
    picl__devices_unlock(fd);
    return st;
}

/* ---- commands ------------------------------------------------------------------ */

int picl__url_ok(const char *url)
{
    if (!url)
        return 0;
    size_t n = strlen(url);
    if (n == 0 || n > PICL_URL_MAX)
        return 0;
    if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
        return 0;
    const char *host = url + (url[4] == 's' ? 8 : 7);
    if (!*host || *host == '/')
        return 0;
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        if (*p <= 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

picl_status picl__clients_check_command(const json_t *cmd, char *why, size_t n)
{
    const char *name = json_string_value(json_object_get(cmd, "command"));
    json_t *args = json_object_get(cmd, "args");
    if (!json_is_object(cmd) || !name) {
        snprintf(why, n, "a command that is not {command, args}");
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    if (strcmp(name, "displayURI")) {
        snprintf(why, n, "unknown command \"%.40s\" ignored", name);
        return PICL_ERROR_UNSUPPORTED;
    }
    if (!json_is_array(args) || json_array_size(args) < 2 || json_array_size(args) > 3) {
        snprintf(why, n, "displayURI without its arguments [uri, sender, title]");
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < json_array_size(args); i++)
        if (!json_is_string(json_array_get(args, i)) ||
            json_string_length(json_array_get(args, i)) > PICL_URL_MAX) {
            snprintf(why, n, "displayURI with an argument that is not a string");
            return PICL_ERROR_INVALID_ARGUMENT;
        }
    json_t *flow = json_object_get(cmd, "flowID");
    if (flow && (!json_is_string(flow) || json_string_length(flow) == 0 || json_string_length(flow) > 64)) {
        snprintf(why, n, "displayURI with a malformed flowID");
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    if (!picl__url_ok(json_string_value(json_array_get(args, 0)))) {
        snprintf(why, n, "displayURI of something that is not an http(s) URL");
        return PICL_ERROR_INVALID_ARGUMENT;
    }
    return PICL_OK;
}

/* ---- the store ------------------------------------------------------------------ */

typedef struct clients_store {
    picl_store base;
    char dir[4096];
    json_t *received; /* this run */
    json_t *rejected; /* this run */
    int pending;
} clients_store;

static const picl_store_ops clients_ops;

static json_t *own_record(const json_t *d)
{
    return json_pack("{s:O, s:O, s:s, s:s, s:[s], s:s, s:[]}", "id", json_object_get(d, "id"), "name",
                     json_object_get(d, "name"), "type", "desktop", "version", "picl", "protocols", "1.5",
                     "os", "Linux", "commands");
}

static picl_status load(clients_store *c, json_t **d)
{
    char err[256] = "";
    picl_status st = picl__devices_load(c->dir, d, err, sizeof err);
    return st == PICL_OK ? st
                         : picl__store_fail(&c->base, st, "%s", *err ? err : "cannot read the device file");
}

static picl_status cl_all(picl_store *s, json_t **out)
{
    json_t *d;
    picl_status st = load((clients_store *)s, &d);
    if (st != PICL_OK)
        return st;
    *out = json_pack("[o]", own_record(d));
    json_decref(d);
    return *out ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status cl_changes(picl_store *s, json_t **out)
{
    json_t *d;
    picl_status st = load((clients_store *)s, &d);
    if (st != PICL_OK)
        return st;
    json_t *own = own_record(d);
    char *text = json_dumps(own, JSON_COMPACT | JSON_SORT_KEYS);
    *out = json_array();
    json_int_t at = json_integer_value(json_object_get(d, "uploadedAt"));
    if (text && (strcmp(text, json_string_value(json_object_get(d, "uploaded"))) ||
                 (json_int_t)time(NULL) - at > PICL_DEVICE_REFRESH_S))
        json_array_append(*out, own);
    free(text);
    json_decref(own);
    json_decref(d);
    return *out ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

static picl_status cl_get(picl_store *s, const char *id, json_t **out)
{
    json_t *d;
    *out = NULL;
    picl_status st = load((clients_store *)s, &d);
    if (st != PICL_OK)
        return st;
    if (!strcmp(id, json_string_value(json_object_get(d, "id"))))
        *out = own_record(d);
    json_decref(d);
    return PICL_OK;
}

static int seen_flow(const json_t *handled, const char *flow)
{
    size_t i;
    json_t *v;
    json_array_foreach (handled, i, v)
        if (!strcmp(json_string_value(v) ? json_string_value(v) : "", flow))
            return 1;
    return 0;
}

static void trim(json_t *a)
{
    while (json_array_size(a) > KEEP_HANDLED)
        json_array_remove(a, 0);
}

/* The commands of this device's own record, under the lock: each handled
 * once (by flowID, or the command's text when it has none). */
static picl_status handle_commands(clients_store *c, json_t *d, const json_t *rec, int *changed)
{
    json_t *cmds = json_object_get(rec, "commands");
    size_t i;
    json_t *cmd;
    if (!cmds)
        return PICL_OK;
    if (!json_is_array(cmds)) {
        json_array_append_new(c->rejected, json_pack("{s:s, s:s}", "command", "", "reason",
                                                     "\"commands\" is not an array: ignored"));
        c->pending = 1;
        return PICL_OK;
    }
    json_array_foreach (cmds, i, cmd) {
        char why[160] = "";
        char *text = json_dumps(cmd, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
            return PICL_ERROR_NO_MEMORY;
        const char *flow = json_string_value(json_object_get(cmd, "flowID"));
        char key[80];
        if (flow && json_string_length(json_object_get(cmd, "flowID")) <= 64)
            snprintf(key, sizeof key, "%s", flow);
        else { /* no flowID: the command's own text names it */
            uint8_t h[32];
            if (picl__sha256(h, text, strlen(text)) != PICL_OK) {
                free(text);
                return PICL_ERROR_CRYPTO;
            }
            char hex[65];
            picl__hex_encode(hex, h, sizeof h);
            snprintf(key, sizeof key, "sha256:%.32s", hex);
        }
        c->pending = 1; /* whatever it was, it goes away from the server */
        if (seen_flow(json_object_get(d, "handled"), key)) {
            free(text);
            continue;
        }
        json_array_append_new(json_object_get(d, "handled"), json_string(key));
        *changed = 1;
        if (picl__clients_check_command(cmd, why, sizeof why) != PICL_OK) {
            json_t *name = json_object_get(cmd, "command");
            json_array_append_new(c->rejected, json_pack("{s:s, s:s}", "command",
                                                         json_is_string(name) ? json_string_value(name) : "",
                                                         "reason", why));
            free(text);
            continue;
        }
        free(text);
        json_t *args = json_object_get(cmd, "args");
        json_t *got =
            json_pack("{s:s, s:O, s:s, s:O, s:s, s:I}", "flowID", key, "uri", json_array_get(args, 0),
                      "title", json_array_size(args) > 2 ? json_string_value(json_array_get(args, 2)) : "",
                      "from", json_array_get(args, 1), "fromName", "", "at", (json_int_t)time(NULL));
        if (!got)
            return PICL_ERROR_NO_MEMORY;
        json_array_append(json_object_get(d, "received"), got);
        json_array_append_new(c->received, got);
    }
    trim(json_object_get(d, "handled"));
    trim(json_object_get(d, "received"));
    return PICL_OK;
}

static picl_status cl_apply(picl_store *s, const json_t *records)
{
    clients_store *c = (clients_store *)s;
    char err[256] = "";
    int fd = -1, changed = 0;
    json_t *d = NULL;
    picl_status st = picl__devices_lock(c->dir, &fd);
    if (st != PICL_OK)
        return picl__store_fail(s, st, "cannot lock the device file");
    if ((st = picl__devices_read(c->dir, &d, err, sizeof err)) != PICL_OK) {
        picl__store_fail(s, st, "%s", err);
        goto done;
    }
    const char *own = json_string_value(json_object_get(d, "id"));
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        if (!id || strcmp(id, own))
            continue; /* another device: read from the server when listed */
        if (json_is_true(json_object_get(r, "deleted"))) {
            c->pending = 1; /* our record was deleted: upload it again */
            continue;
        }
        if ((st = handle_commands(c, d, r, &changed)) != PICL_OK)
            goto done;
    }
    if (c->pending) { /* the server's copy differs from ours: upload ours again */
        json_object_set_new(d, "uploaded", json_string(""));
        changed = 1;
    }
    if (changed && (st = picl__devices_save(c->dir, d)) != PICL_OK)
        picl__store_fail(s, st, "cannot write the device file");
done:
    json_decref(d);
    picl__devices_unlock(fd);
    return st;
}

static picl_status cl_mark_synced(picl_store *s, const json_t *records)
{
    clients_store *c = (clients_store *)s;
    char err[256] = "";
    int fd = -1;
    json_t *d = NULL;
    picl_status st = picl__devices_lock(c->dir, &fd);
    if (st != PICL_OK)
        return picl__store_fail(s, st, "cannot lock the device file");
    if ((st = picl__devices_read(c->dir, &d, err, sizeof err)) != PICL_OK) {
        picl__store_fail(s, st, "%s", err);
        goto done;
    }
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        if (!json_equal(json_object_get(r, "id"), json_object_get(d, "id")))
            continue;
        char *text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text) {
            st = PICL_ERROR_NO_MEMORY;
            goto done;
        }
        json_object_set_new(d, "uploaded", json_string(text));
        json_object_set_new(d, "uploadedAt", json_integer((json_int_t)time(NULL)));
        free(text);
        c->pending = 0;
        if ((st = picl__devices_save(c->dir, d)) != PICL_OK)
            picl__store_fail(s, st, "cannot write the device file");
    }
done:
    json_decref(d);
    picl__devices_unlock(fd);
    return st;
}

static picl_status cl_reset(picl_store *s)
{
    clients_store *c = (clients_store *)s;
    char err[256] = "";
    int fd = -1;
    json_t *d = NULL;
    picl_status st = picl__devices_lock(c->dir, &fd);
    if (st != PICL_OK)
        return picl__store_fail(s, st, "cannot lock the device file");
    if ((st = picl__devices_read(c->dir, &d, err, sizeof err)) == PICL_OK) {
        json_object_set_new(d, "uploaded", json_string(""));
        st = picl__devices_save(c->dir, d);
    }
    if (st != PICL_OK)
        picl__store_fail(s, st, "%s", *err ? err : "cannot write the device file");
    json_decref(d);
    picl__devices_unlock(fd);
    return st;
}

static picl_status cl_wipe(picl_store *s) { return cl_reset(s); /* nothing of other devices is kept */ }

static void cl_close(picl_store *s)
{
    clients_store *c = (clients_store *)s;
    json_decref(c->received);
    json_decref(c->rejected);
    free(c);
}

static const picl_store_ops clients_ops = {
    .changes = cl_changes,
    .all = cl_all,
    .get = cl_get,
    .apply = cl_apply,
    .mark_synced = cl_mark_synced,
    .reset = cl_reset,
    .wipe = cl_wipe,
    .close = cl_close,
};

picl_status picl__clients_open(picl_store **out, const char *state_dir, char *err, size_t errlen)
{
    *out = NULL;
    if (!state_dir || strlen(state_dir) >= 4000)
        return PICL_ERROR_INVALID_ARGUMENT;
    json_t *d = NULL;
    picl_status st = picl__devices_load(state_dir, &d, err, errlen); /* makes the id now */
    json_decref(d);
    if (st != PICL_OK)
        return st;
    clients_store *c = calloc(1, sizeof *c);
    if (!c)
        return PICL_ERROR_NO_MEMORY;
    c->base.ops = &clients_ops;
    snprintf(c->base.collection, sizeof c->base.collection, "%s", "clients");
    snprintf(c->dir, sizeof c->dir, "%s", state_dir);
    c->received = json_array();
    c->rejected = json_array();
    if (!c->received || !c->rejected) {
        cl_close(&c->base);
        return PICL_ERROR_NO_MEMORY;
    }
    *out = &c->base;
    return PICL_OK;
}

json_t *picl__clients_report(picl_store *s)
{
    if (!s || s->ops != &clients_ops)
        return NULL;
    clients_store *c = (clients_store *)s;
    return json_pack("{s:O, s:O}", "received", c->received, "rejected", c->rejected);
}

int picl__clients_pending(picl_store *s)
{
    return s && s->ops == &clients_ops && ((clients_store *)s)->pending;
}
