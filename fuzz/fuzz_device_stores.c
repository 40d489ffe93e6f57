/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_device_stores.c -- libFuzzer target: incoming records (a JSON array
 * from the server) applied to the stores fuzz_store_records leaves out:
 * clients (this device's record coming back, with commands), tabs, forms
 * (a scratch formhistory.sqlite), prefs (a scratch prefs.js) and the
 * store-dir file store.  Byte 0 picks the store, the rest is the array.
 * For clients and tabs, each element also goes through the checks applied
 * to other devices' records (picl__clients_check_command on its commands,
 * picl__tabs_check_record).  Every answer must be OK or a clean refusal,
 * and the store must stay readable afterwards. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "crypto/nss.h"
#include "stores/devices.h"
#include "stores/forms.h"
#include "stores/store.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* moz_formhistory as Firefox creates it (the columns the store uses). */
static const char FORMS_SCHEMA[] =
    "CREATE TABLE moz_formhistory (id INTEGER PRIMARY KEY, fieldname TEXT NOT NULL, value TEXT NOT NULL,"
    " timesUsed INTEGER, firstUsed INTEGER, lastUsed INTEGER, guid TEXT);"
    "CREATE TABLE moz_deleted_formhistory (id INTEGER PRIMARY KEY, timeDeleted INTEGER, guid TEXT);"
    "CREATE INDEX moz_formhistory_index ON moz_formhistory (fieldname);"
    "CREATE INDEX moz_formhistory_guid_index ON moz_formhistory (guid);"
    "INSERT INTO moz_formhistory (fieldname, value, timesUsed, firstUsed, lastUsed, guid)"
    " VALUES ('q', 'picl', 1, 1, 1, 'AAAAAAAAAAAA');"
    "PRAGMA user_version = 5;";

static const char PREFS_JS[] = "// Mozilla User Preferences\n"
                               "user_pref(\"browser.tabs.warnOnClose\", true);\n"
                               "user_pref(\"browser.download.dir\", \"/home/x/Downloads\");\n"
                               "user_pref(\"layout.spellcheckDefault\", 2);\n";

enum { S_CLIENTS, S_TABS, S_FORMS, S_PREFS, S_FILE, S_COUNT };
static picl_store *stores[S_COUNT];

/* base/name, made; a profile gets the times.json Firefox writes first. */
static void mk(const char *base, const char *name, char *out, size_t cap, int profile)
{
    char t[256];
    snprintf(out, cap, "%s/%s", base, name);
    if (mkdir(out, 0700) != 0)
        __builtin_trap();
    snprintf(t, sizeof t, "%s/times.json", out);
    FILE *f = profile ? fopen(t, "w") : NULL;
    if (profile && (!f || fputs("{\"created\":1700000000000}", f) < 0 || fclose(f) != 0))
        __builtin_trap();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static char dir[64];
    char state[128], forms[128], prefs[128], tabs[128], files[128], path[256], err[256];
    snprintf(dir, sizeof dir, "%s/picl-fuzz-dev-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (picl__nss_acquire() != PICL_OK || !mkdtemp(dir))
        __builtin_trap();
    fz_remove_at_exit(dir);
    mk(dir, "state", state, sizeof state, 0);
    mk(dir, "forms", forms, sizeof forms, 1);
    mk(dir, "prefs", prefs, sizeof prefs, 1);
    mk(dir, "tabs", tabs, sizeof tabs, 1);
    mk(dir, "files", files, sizeof files, 0);
    sqlite3 *db = NULL;
    snprintf(path, sizeof path, "%s/formhistory.sqlite", forms);
    if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_exec(db, FORMS_SCHEMA, NULL, NULL, NULL) != SQLITE_OK)
        __builtin_trap();
    sqlite3_close(db);
    snprintf(path, sizeof path, "%s/prefs.js", prefs);
    FILE *f = fopen(path, "w");
    if (!f || fputs(PREFS_JS, f) < 0 || fclose(f) != 0)
        __builtin_trap();
    if (picl__clients_open(&stores[S_CLIENTS], state, err, sizeof err) != PICL_OK ||
        picl__tabs_open(&stores[S_TABS], tabs, state, err, sizeof err) != PICL_OK ||
        picl__forms_open(&stores[S_FORMS], forms, state, err, sizeof err) != PICL_OK ||
        picl__prefs_open(&stores[S_PREFS], prefs, state, err, sizeof err) != PICL_OK ||
        picl__filestore_open(&stores[S_FILE], files, "fuzz") != PICL_OK) {
        fprintf(stderr, "fuzz_device_stores: %s\n", err);
        __builtin_trap();
    }
    return 0;
}

/* The checks other devices' records go through. */
static void check_elements(unsigned which, const json_t *records)
{
    size_t i;
    json_t *r;
    char why[256];
    json_array_foreach (records, i, r) {
        if (which == S_TABS) {
            picl_status st = picl__tabs_check_record(r, why, sizeof why);
            if (st != PICL_OK && st != PICL_ERROR_TOO_LARGE && st != PICL_ERROR_INVALID_ARGUMENT)
                __builtin_trap();
            continue;
        }
        size_t j;
        json_t *cmd;
        json_t *cmds = json_object_get(r, "commands");
        json_array_foreach (cmds, j, cmd) {
            why[0] = 0;
            picl_status st = picl__clients_check_command(cmd, why, sizeof why);
            if (st != PICL_OK &&
                ((st != PICL_ERROR_UNSUPPORTED && st != PICL_ERROR_INVALID_ARGUMENT) || !why[0]))
                __builtin_trap();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned which = data[0] % S_COUNT;
    json_t *records = json_loadb((const char *)data + 1, size - 1, 0, NULL);
    if (!records)
        return 0;
    if (which == S_CLIENTS || which == S_TABS)
        check_elements(which, records);
    picl_status st = picl__store_apply(stores[which], records);
    if (st != PICL_OK && st != PICL_ERROR_ENCODING && st != PICL_ERROR_INVALID_ARGUMENT &&
        st != PICL_ERROR_CONFLICT && st != PICL_ERROR_TOO_LARGE && st != PICL_ERROR_UNSUPPORTED)
        __builtin_trap();
    json_t *all = NULL;
    if (picl__store_all(stores[which], &all) != PICL_OK || !json_is_array(all))
        __builtin_trap();
    /* the file store keeps what it is given: bounded for the long runs */
    if (which == S_FILE && json_array_size(all) > 200 && picl__store_wipe(stores[which]) != PICL_OK)
        __builtin_trap();
    json_decref(all);
    json_decref(records);
    return 0;
}
