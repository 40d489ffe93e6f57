/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_local_files.c -- libFuzzer target: the files picl reads from disk
 * that fuzz_logins_json leaves out.  Byte 0 picks what the rest is:
 *   0  the state file (STATE/state.json), loaded with kB persisted or not
 *      (byte 1 bit 0); what loads must save and load again;
 *   1  the device file (STATE/devices.json) of the clients and tabs stores;
 *   2  a profile's prefs.js text (picl__prefs_parse);
 *   3  a mozLz4 file (the session store), decoded and, when it decodes,
 *      read as a session (picl__tabs_from_session);
 *   4  a session store's JSON text (picl__tabs_from_session);
 *   5  a store-dir collection file (DIR/fuzz.json), and
 *   6  its record of what was last synced (DIR/.picl-fuzz.synced), both
 *      read through the file store (all, changes).
 * Every answer must be OK or a clean refusal, never a crash; what a parser
 * accepts has the shape its header promises. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "client/state.h"
#include "crypto/nss.h"
#include "stores/devices.h"
#include "stores/forms.h"
#include "stores/mozlz4.h"
#include "stores/store.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char state_dir[128], files_dir[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static char dir[64];
    snprintf(dir, sizeof dir, "%s/picl-fuzz-files-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir))
        __builtin_trap();
    fz_remove_at_exit(dir);
    snprintf(state_dir, sizeof state_dir, "%s/state", dir);
    snprintf(files_dir, sizeof files_dir, "%s/files", dir);
    if (mkdir(state_dir, 0700) != 0 || mkdir(files_dir, 0700) != 0)
        __builtin_trap();
    /* the state file's secrets go through SDR with the state directory's
     * key database, as the picl command does */
    if (picl__nss_acquire_dir(state_dir) != PICL_OK)
        __builtin_trap();
    return 0;
}

static void put(const char *dir, const char *name, const uint8_t *d, size_t n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f) != 0)
        __builtin_trap();
}

static void state_file(const uint8_t *d, size_t n, int persist)
{
    put(state_dir, "state.json", d, n);
    picl_state *st = NULL;
    picl_status rc = picl__state_load(&st, state_dir, persist);
    if (rc != PICL_OK) {
        if (st || (rc != PICL_ERROR_ENCODING && rc != PICL_ERROR_TOO_LARGE && rc != PICL_ERROR_IO &&
                   rc != PICL_ERROR_INVALID_ARGUMENT))
            __builtin_trap();
        return;
    }
    if (!st->keyserver || !st->uid || !st->email || !json_is_object(st->collections))
        __builtin_trap();
    /* what loaded saves, and loads again */
    if (picl__state_save(st) != PICL_OK)
        __builtin_trap();
    picl__state_free(st);
    st = NULL;
    if (picl__state_load(&st, state_dir, persist) != PICL_OK)
        __builtin_trap();
    picl__state_free(st);
}

static void session(const char *text, size_t n)
{
    json_t *tabs = (json_t *)1;
    picl_status rc = picl__tabs_from_session(text, n, &tabs);
    if (rc == PICL_OK) {
        if (!json_is_array(tabs))
            __builtin_trap();
        json_decref(tabs);
    } else if (rc != PICL_ERROR_ENCODING && rc != PICL_ERROR_NO_MEMORY) {
        __builtin_trap();
    }
}

static void file_store(void)
{
    picl_store *s = NULL;
    picl_status rc = picl__filestore_open(&s, files_dir, "fuzz");
    if (rc != PICL_OK) {
        if (s || (rc != PICL_ERROR_ENCODING && rc != PICL_ERROR_TOO_LARGE))
            __builtin_trap();
        return;
    }
    json_t *all = NULL, *changes = NULL;
    rc = picl__store_all(s, &all);
    if (rc == PICL_OK && !json_is_array(all))
        __builtin_trap();
    if (rc != PICL_OK && rc != PICL_ERROR_ENCODING && rc != PICL_ERROR_TOO_LARGE)
        __builtin_trap();
    json_decref(all);
    rc = s->ops->changes(s, &changes);
    if (rc == PICL_OK && !json_is_array(changes))
        __builtin_trap();
    if (rc != PICL_OK && rc != PICL_ERROR_ENCODING && rc != PICL_ERROR_TOO_LARGE)
        __builtin_trap();
    json_decref(changes);
    picl__store_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned which = data[0] % 7;
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    switch (which) {
    case 0:
        state_file(d + 1, n - 1, d[0] & 1);
        break;
    case 1: {
        put(state_dir, "devices.json", d, n);
        json_t *dev = NULL;
        char err[256] = "";
        picl_status rc = picl__devices_load(state_dir, &dev, err, sizeof err);
        if (rc == PICL_OK && !json_is_object(dev))
            __builtin_trap();
        if (rc != PICL_OK && (dev || !err[0]))
            __builtin_trap();
        json_decref(dev);
        break;
    }
    case 2: {
        char *text = malloc(n + 1);
        if (!text)
            __builtin_trap();
        memcpy(text, d, n);
        text[n] = 0;
        json_t *prefs = (json_t *)1;
        picl_status rc = picl__prefs_parse(text, &prefs);
        if (rc == PICL_OK && !json_is_object(prefs))
            __builtin_trap();
        if (rc != PICL_OK && rc != PICL_ERROR_ENCODING && rc != PICL_ERROR_NO_MEMORY)
            __builtin_trap();
        if (rc == PICL_OK)
            json_decref(prefs);
        free(text);
        break;
    }
    case 3: {
        char *out = (char *)1;
        size_t outlen = 0;
        picl_status rc = picl__mozlz4_decode(d, n, &out, &outlen);
        if (rc != PICL_OK) {
            if (out ||
                (rc != PICL_ERROR_ENCODING && rc != PICL_ERROR_TOO_LARGE && rc != PICL_ERROR_NO_MEMORY))
                __builtin_trap();
            break;
        }
        if (out[outlen] != 0)
            __builtin_trap();
        session(out, outlen);
        free(out);
        break;
    }
    case 4:
        session((const char *)d, n);
        break;
    case 5:
        put(files_dir, "fuzz.json", d, n);
        file_store();
        break;
    default:
        put(files_dir, ".picl-fuzz.synced", d, n);
        put(files_dir, "fuzz.json", (const uint8_t *)"[{\"id\":\"a\",\"v\":1},{\"id\":\"b\"}]", 30);
        file_store();
        break;
    }
    return 0;
}
