/* SPDX-License-Identifier: MPL-2.0 */
/* account_ext.c -- picl device list|rename|remove, picl account events and picl recovery-key create|status|remove (client.md 7). */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Unix seconds as "YYYY-MM-DD HH:MM UTC". */
static void when(char *out, size_t cap, json_int_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || !gmtime_r(&tt, &tm) || !strftime(out, cap, "%Y-%m-%d %H:%M UTC", &tm))
        snprintf(out, cap, "never");
}

static int print_list(const cli_opts *o, char *text, int (*line)(json_t *item), const char *key,
                      const char *none)
{
    if (o->json) {
        printf("%s\n", text);
        picl_free(text);
        return CLI_OK;
    }
    json_t *j = json_loads(text, 0, NULL);
    picl_free(text);
    size_t i;
    json_t *item;
    json_array_foreach (json_object_get(j, key), i, item)
        line(item);
    if (!json_array_size(json_object_get(j, key)))
        printf("%s\n", none);
    json_decref(j);
    return CLI_OK;
}

static int device_line(json_t *d)
{
    char last[40];
    when(last, sizeof last, json_integer_value(json_object_get(d, "lastAccessAt")));
    const char *name = json_string_value(json_object_get(d, "name"));
    const char *type = json_string_value(json_object_get(d, "type"));
    printf("%s  %-24s %-8s last access %s%s\n", json_string_value(json_object_get(d, "id")),
           name && *name ? name : "(unnamed)", type && *type ? type : "-", last,
           json_is_true(json_object_get(d, "current")) ? "  (this device)" : "");
    return 0;
}

int cli_device(const cli_opts *o, picl_service *svc, const char *sub)
{
    picl_status st;
    char *text = NULL;
    if (!strcmp(sub, "list")) {
        if (o->nargs) {
            fprintf(stderr, "picl: unexpected argument '%s' (usage: picl device list [--json])\n",
                    o->args[0]);
            return CLI_USAGE;
        }
        if ((st = picl_service_get_devices_json(svc, &text)) != PICL_OK)
            return cli_fail(o, svc, st);
        return print_list(o, text, device_line, "devices", "no devices signed in");
    }
    if (!strcmp(sub, "rename") || !strcmp(sub, "remove")) {
        int rename = !strcmp(sub, "rename");
        if (o->nargs != 1) {
            fprintf(stderr, "picl: usage: picl device %s\n", rename ? "rename NAME" : "remove ID");
            return CLI_USAGE;
        }
        st = rename ? picl_service_rename_device(svc, o->args[0])
                    : picl_service_sign_out_device(svc, o->args[0]);
        if (st != PICL_OK)
            return cli_fail(o, svc, st);
        if (o->json)
            printf("{\"status\":\"ok\"}\n");
        else if (!o->quiet)
            printf(rename ? "this device is now called %s\n"
                          : "device %s signed out: it stops syncing at its next request\n",
                   o->args[0]);
        return CLI_OK;
    }
    fprintf(stderr, "picl: unknown device command '%s' (list, rename, remove)\n", sub);
    return CLI_USAGE;
}

static int event_line(json_t *e)
{
    char t[40];
    when(t, sizeof t, json_integer_value(json_object_get(e, "time")));
    const char *dev = json_string_value(json_object_get(e, "device"));
    const char *addr = json_string_value(json_object_get(e, "address"));
    printf("%s  %-20s%s%s%s%s\n", t, json_string_value(json_object_get(e, "type")),
           dev && *dev ? "  device " : "", dev && *dev ? dev : "", addr && *addr ? "  from " : "",
           addr && *addr ? addr : "");
    return 0;
}

int cli_account_events(const cli_opts *o, picl_service *svc)
{
    char *text = NULL;
    if (o->nargs) {
        fprintf(stderr, "picl: unexpected argument '%s' (usage: picl account events [--json])\n", o->args[0]);
        return CLI_USAGE;
    }
    picl_status st = picl_service_get_security_events_json(svc, &text);
    if (st != PICL_OK)
        return cli_fail(o, svc, st);
    return print_list(o, text, event_line, "events", "no security events");
}

int cli_recovery_key(const cli_opts *o, picl_service *svc, const char *sub)
{
    picl_status st;
    if (o->nargs) {
        fprintf(stderr, "picl: unexpected argument '%s' (usage: picl recovery-key create|status|remove)\n",
                o->args[0]);
        return CLI_USAGE;
    }
    if (!strcmp(sub, "create")) {
        char pw[1024], *key = NULL;
        if (cli_read_secret(o->password_file, "PICL_PASSWORD", "Password: ", pw, sizeof pw) != 0)
            return CLI_USAGE;
        st = picl_service_create_recovery_key(svc, pw, &key);
        explicit_bzero(pw, sizeof pw);
        if (st != PICL_OK)
            return cli_fail(o, svc, st);
        if (o->json) {
            printf("{\"status\":\"ok\",\"recoveryKey\":\"%s\"}\n", key);
        } else {
            printf("Your recovery key (shown only this once):\n\n    %s\n\n", key);
            printf("Write it down or print it and keep it somewhere safe, away from this computer\n"
                   "(not next to your password).  If you forget your password, it keeps your\n"
                   "class-B data: picl password reset --code CODE --recovery-key-file FILE.\n"
                   "Anyone holding it and your mailbox can read that data.  It works once;\n"
                   "a new key replaces this one.\n");
        }
        explicit_bzero(key, strlen(key));
        picl_free(key);
        return CLI_OK;
    }
    if (!strcmp(sub, "status")) {
        int exists = 0;
        if ((st = picl_service_get_recovery_key_exists(svc, &exists)) != PICL_OK)
            return cli_fail(o, svc, st);
        if (o->json)
            printf("{\"exists\":%s}\n", exists ? "true" : "false");
        else
            printf(exists ? "a recovery key is set: class-B data survives a forgotten password\n"
                          : "no recovery key: a forgotten password loses the class-B data "
                            "(picl recovery-key create)\n");
        return CLI_OK;
    }
    if (!strcmp(sub, "remove")) {
        if ((st = picl_service_remove_recovery_key(svc)) != PICL_OK)
            return cli_fail(o, svc, st);
        if (o->json)
            printf("{\"status\":\"ok\"}\n");
        else if (!o->quiet)
            printf("recovery key removed\n");
        return CLI_OK;
    }
    fprintf(stderr, "picl: unknown recovery-key command '%s' (create, status, remove)\n", sub);
    return CLI_USAGE;
}
