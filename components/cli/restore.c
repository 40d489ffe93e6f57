/* SPDX-License-Identifier: MPL-2.0 */
/* restore.c -- picl restore COLLECTION --as-of TIME [--yes]: bring a collection back to how it was (the storage server's picl_restore_days extension). */
#include "cli.h"
#include "protocol/synctime.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* TIME: Unix seconds (with decimals), or ISO 8601 UTC "YYYY-MM-DDTHH:MM[:SS][Z]".
 * -1 when it is neither. */
static double parse_time(const char *t)
{
    if (isdigit((unsigned char)t[0]) && !strchr(t, '-') && !strchr(t, ':')) {
        int64_t c; /* THE grammar of SyncStorage times (protocol/synctime.h) */
        return picl__synctime_parse(t, strlen(t), &c) == PICL_OK ? (double)c / 100.0 : -1;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int y, mo, d, h, mi, s = 0, n = 0;
    if (sscanf(t, "%4d-%2d-%2d%*[T ]%2d:%2d%n", &y, &mo, &d, &h, &mi, &n) != 5 || !n)
        return -1;
    const char *rest = t + n;
    if (*rest == ':') {
        int m = 0;
        if (sscanf(rest, ":%2d%n", &s, &m) != 1)
            return -1;
        rest += m;
    }
    if (*rest == 'Z')
        rest++;
    if (*rest || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    time_t v = timegm(&tm);
    return v < 0 ? -1 : (double)v;
}

int cli_restore(const cli_opts *o, picl_service *svc)
{
    if (o->nargs != 1 || !o->as_of) {
        fprintf(stderr, "picl: usage: picl restore COLLECTION --as-of TIME [--yes] "
                        "(--profile DIR | --store-dir DIR)\n");
        return CLI_USAGE;
    }
    double t = parse_time(o->as_of);
    if (t < 0) {
        fprintf(stderr,
                "picl: --as-of wants a time in ISO 8601 UTC (2026-12-03T18:00:00Z) or Unix seconds, not %s\n",
                o->as_of);
        return CLI_USAGE;
    }
    if (!o->profile == !o->store_dir) {
        fprintf(
            stderr,
            "picl: say where this device keeps the data: --profile FIREFOX_PROFILE_DIR or --store-dir DIR\n");
        return CLI_USAGE;
    }
    const char *coll = o->args[0];
    picl_status st = o->profile ? picl_service_use_profile(svc, o->profile)
                                : picl_service_use_store_dir(svc, o->store_dir);
    char *plan = NULL;
    if (st == PICL_OK)
        st = picl_service_restore_collection(svc, coll, t, 0, &plan);
    if (st == PICL_ERROR_UNSUPPORTED && !o->json) {
        /* no earlier versions on this server, or not that far back: exit 1 */
        fprintf(stderr, "picl: %s\n", picl_service_last_error(svc));
        return CLI_FAILURE;
    }
    if (st != PICL_OK)
        return cli_fail(o, svc, st);
    json_t *j = json_loads(plan, 0, NULL);
    picl_free(plan);
    plan = NULL;
    size_t nr = json_array_size(json_object_get(j, "restore")),
           nd = json_array_size(json_object_get(j, "delete"));
    json_int_t unreadable = json_integer_value(json_object_get(j, "unreadable"));
    if (!o->json) {
        printf("%s as of %s: %zu record(s) to bring back, %zu record(s) made since to delete\n", coll,
               o->as_of, nr, nd);
        if (unreadable)
            printf("%lld record(s) could not be read and are left as they are\n", (long long)unreadable);
    }
    int rc = CLI_OK;
    if (nr + nd == 0) {
        if (o->json) {
            char *txt = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
            printf("%s\n", txt ? txt : "{}");
            free(txt);
        } else {
            printf("nothing to restore\n");
        }
        goto out;
    }
    if (!o->yes) {
        char line[16] = "";
        fprintf(stderr, "Restore %s on every device? [y/N] ", coll);
        if (!fgets(line, sizeof line, stdin) || (line[0] != 'y' && line[0] != 'Y')) {
            fprintf(stderr, "picl: nothing was changed\n");
            rc = CLI_FAILURE;
            goto out;
        }
    }
    st = picl_service_restore_collection(svc, coll, t, 1, &plan);
    if (st != PICL_OK) {
        rc = cli_fail(o, svc, st);
        goto out;
    }
    if (o->json)
        printf("%s\n", plan);
    else
        printf("%s restored: %zu brought back, %zu deleted; other devices follow at their next sync\n", coll,
               nr, nd);
out:
    picl_free(plan);
    json_decref(j);
    return rc;
}
