/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_logins_json.c -- libFuzzer target: a profile's logins.json (and the
 * store's own sync-state file) as the passwords store reads them.  A
 * scratch profile gets a key4.db and one real login at start-up; then each
 * input replaces (byte 0 even) logins.json or (odd) the state file, and the
 * store is opened, listed, asked for changes and for one id, fed one
 * incoming record, and closed.  Every answer is OK or a clean refusal with
 * a message, never a crash; a store that opened stays listable. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>

#include <jansson.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/nss.h"
#include "stores/logins.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/picl-fuzz-logins-XXXXXX";
static char json_path[128], state_path[128];
static char *good_json; /* logins.json with one real, decryptable entry */
static size_t good_len;

static const char RECORD[] =
    "[{\"id\":\"{11111111-2222-4333-8444-555555555555}\",\"hostname\":\"https://new.example.net\","
    "\"formSubmitURL\":\"https://"
    "new.example.net\",\"httpRealm\":null,\"username\":\"carol\",\"password\":\"pw\","
    "\"usernameField\":\"u\",\"passwordField\":\"p\",\"timesUsed\":3}]";

static void put(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        __builtin_trap();
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = malloc(1 << 20);
    if (!f || !buf)
        __builtin_trap();
    *n = fread(buf, 1, (1 << 20) - 1, f);
    buf[*n] = 0;
    fclose(f);
    return buf;
}

/* The state file: passwords-<first 8 bytes of SHA-256 of the profile's real
 * path, hex>.json in the state directory (logins.c). */
static void find_state(void)
{
    char real[PATH_MAX], hex[17];
    uint8_t h[32];
    if (!realpath(dir, real) || picl__sha256(h, real, strlen(real)) != PICL_OK)
        __builtin_trap();
    picl__hex_encode(hex, h, 8);
    snprintf(state_path, sizeof state_path, "%s/passwords-%s.json", dir, hex);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[256] = "";
    picl_store *s = NULL;
    if (picl__nss_acquire() != PICL_OK || !mkdtemp(dir))
        __builtin_trap();
    fz_remove_at_exit(dir);
    snprintf(json_path, sizeof json_path, "%s/logins.json", dir);
    snprintf(state_path, sizeof state_path, "%s/prefs.js", dir);
    put(state_path, "", 0); /* a Firefox profile has one */
    find_state();
    json_t *recs = json_loads(RECORD, 0, NULL);
    if (picl__logins_open(&s, dir, dir, NULL, NULL, err, sizeof err) != PICL_OK || !recs ||
        picl__store_apply(s, recs) != PICL_OK) {
        fprintf(stderr, "fuzz_logins_json: %s\n", s ? picl__store_error(s) : err);
        __builtin_trap();
    }
    json_t *changes = NULL;
    if (picl__store_changes(s, &changes) != PICL_OK || picl__store_mark_synced(s, changes) != PICL_OK)
        __builtin_trap();
    json_decref(changes);
    json_decref(recs);
    picl__store_close(s);
    good_json = slurp(json_path, &good_len);
    return 0;
}

static void status_ok(picl_status st, picl_store *s)
{
    if (st == PICL_OK)
        return;
    if (st == PICL_ERROR_NO_MEMORY || (s && !picl__store_error(s)[0]))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    picl_store *s = NULL;
    if (size < 1)
        return 0;
    if (data[0] & 1) {
        put(json_path, good_json, good_len);
        put(state_path, data + 1, size - 1);
    } else {
        put(json_path, data + 1, size - 1);
        unlink(state_path);
    }
    picl_status st = picl__logins_open(&s, dir, dir, NULL, NULL, err, sizeof err);
    if (st != PICL_OK) {
        if (s || !err[0])
            __builtin_trap();
        return 0;
    }
    json_t *all = NULL, *changes = NULL, *one = NULL;
    st = picl__store_all(s, &all);
    status_ok(st, s);
    if (st == PICL_OK && !json_is_array(all))
        __builtin_trap();
    st = picl__store_changes(s, &changes);
    status_ok(st, s);
    if (st == PICL_OK && changes) {
        st = picl__store_mark_synced(s, changes);
        status_ok(st, s);
    }
    st = picl__store_get(s, "{11111111-2222-4333-8444-555555555555}", &one);
    status_ok(st, s);
    json_t *recs = json_loads(RECORD, 0, NULL);
    if (!recs)
        __builtin_trap();
    st = picl__store_apply(s, recs);
    status_ok(st, s);
    if (st == PICL_OK) {
        /* what was applied is there */
        json_t *back = NULL;
        if (picl__store_get(s, "{11111111-2222-4333-8444-555555555555}", &back) != PICL_OK || !back ||
            strcmp(json_string_value(json_object_get(back, "password")), "pw") != 0)
            __builtin_trap();
        json_decref(back);
    }
    json_decref(recs);
    json_decref(one);
    json_decref(changes);
    json_decref(all);
    picl__store_close(s);
    return 0;
}
