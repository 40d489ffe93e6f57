/* SPDX-License-Identifier: MPL-2.0 */
/* devices.c -- picl tabs and picl send-tab: other devices' open tabs, tabs
 * sent between devices, and what a sync received. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_print_received(json_t *j)
{
    size_t i;
    json_t *r;
    json_array_foreach (json_object_get(j, "received"), i, r) {
        const char *title = json_string_value(json_object_get(r, "title"));
        printf("received tab: %s%s%s%s (from %s)\n", json_string_value(json_object_get(r, "uri")),
               title && *title ? " \"" : "", title ? title : "", title && *title ? "\"" : "",
               json_string_value(json_object_get(r, "from")));
    }
    json_array_foreach (json_object_get(j, "rejected"), i, r)
        printf("refused command: %s\n", json_string_value(json_object_get(r, "reason")));
    json_array_foreach (json_object_get(j, "refused"), i, r)
        printf("refused pref: %s: %s\n", json_string_value(json_object_get(r, "name")),
               json_string_value(json_object_get(r, "reason")));
    json_array_foreach (json_object_get(j, "skipped"), i,
                        r) /* default collections the profile has nothing for */
        printf("skipped %s: %s\n", json_string_value(json_object_get(r, "collection")),
               json_string_value(json_object_get(r, "reason")));
}

int cli_tabs(const cli_opts *o, picl_service *svc)
{
    char *text = NULL;
    if (o->nargs > 0) {
        fprintf(stderr, "picl: unexpected argument '%s' (usage: picl tabs [--received])\n", o->args[0]);
        return CLI_USAGE;
    }
    picl_status st = o->received ? picl_service_get_received_tabs_json(svc, &text)
                                 : picl_service_get_remote_tabs_json(svc, &text);
    if (st != PICL_OK)
        return cli_fail(o, svc, st);
    if (o->json) {
        printf("%s\n", text);
        picl_free(text);
        return CLI_OK;
    }
    json_t *j = json_loads(text, 0, NULL);
    picl_free(text);
    size_t i, k;
    json_t *d, *t;
    if (o->received) {
        json_array_foreach (j, i, t) {
            const char *title = json_string_value(json_object_get(t, "title"));
            printf("%s%s%s%s (from %s)\n", json_string_value(json_object_get(t, "uri")),
                   title && *title ? " \"" : "", title ? title : "", title && *title ? "\"" : "",
                   json_string_value(json_object_get(t, "from")));
        }
        if (!json_array_size(j))
            printf("no tabs received\n");
        json_decref(j);
        return CLI_OK;
    }
    json_array_foreach (json_object_get(j, "devices"), i, d) {
        printf("%s (%s, last seen %s)\n", json_string_value(json_object_get(d, "name")),
               json_string_value(json_object_get(d, "id")),
               json_string_value(json_object_get(d, "lastSeen")));
        json_array_foreach (json_object_get(d, "tabs"), k, t)
            printf("  %s\n    %s\n", json_string_value(json_object_get(t, "title")),
                   json_string_value(json_object_get(t, "url")));
    }
    if (!json_array_size(json_object_get(j, "devices")))
        printf("no other devices\n");
    json_array_foreach (json_object_get(j, "skipped"), i, d)
        fprintf(stderr, "picl: skipped %s/%s: %s\n", json_string_value(json_object_get(d, "collection")),
                json_string_value(json_object_get(d, "id")), json_string_value(json_object_get(d, "reason")));
    json_decref(j);
    return CLI_OK;
}

int cli_send_tab(const cli_opts *o, picl_service *svc)
{
    if (o->nargs != 2) {
        fprintf(stderr, "picl: usage: picl send-tab DEVICE URL [--title T]\n");
        return CLI_USAGE;
    }
    picl_status st = picl_service_send_tab(svc, o->args[0], o->args[1], o->title ? o->title : "");
    if (st != PICL_OK)
        return cli_fail(o, svc, st);
    if (o->json)
        printf("{\"status\":\"ok\"}\n");
    else if (!o->quiet)
        printf("sent to %s: %s\n", o->args[0], o->args[1]);
    return CLI_OK;
}
