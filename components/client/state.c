/* SPDX-License-Identifier: MPL-2.0 */
/* state.c -- local state file and its secrets (see state.h). */
#include "client/state.h"
#include "client/storage_client.h"
#include "crypto/codec.h"
#include "crypto/sdr.h"
#include "crypto/util.h"
#include "stores/fileutil.h"
#include "crypto/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STATE_MAX (4u * 1024u * 1024u)

picl_status picl__state_set_str(char **field, const char *value)
{
    char *c = strdup(value ? value : "");
    if (!c)
        return PICL_ERROR_NO_MEMORY;
    free(*field);
    *field = c;
    return PICL_OK;
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Decrypts an SDR field into exactly n bytes; 1 on success. */
static int sdr_field(json_t *o, const char *k, uint8_t *dst, size_t n)
{
    const char *b64 = json_string_value(json_object_get(o, k));
    if (!b64)
        return 0;
    uint8_t *buf;
    size_t len;
    if (picl__sdr_decrypt(&buf, &len, b64) != PICL_OK)
        return 0;
    int ok = len == n;
    if (ok)
        memcpy(dst, buf, n);
    picl__zfree(buf, len);
    return ok;
}

static picl_status state_new(picl_state **out, const char *dir, int persist)
{
    picl_state *st = calloc(1, sizeof *st);
    if (!st)
        return PICL_ERROR_NO_MEMORY;
    st->persist_keys = persist;
    st->collections = json_object();
    if (!st->collections || picl__state_set_str(&st->dir, dir) || picl__state_set_str(&st->keyserver, "") ||
        picl__state_set_str(&st->storage_override, "") || picl__state_set_str(&st->uid, "") ||
        picl__state_set_str(&st->email, "") || picl__state_set_str(&st->classmap_payload, "") ||
        picl__state_set_str(&st->global_sync_id, "") || picl__state_set_str(&st->forgot_email, "")) {
        picl__state_free(st);
        return PICL_ERROR_NO_MEMORY;
    }
    *out = st;
    return PICL_OK;
}

picl_status picl__state_load(picl_state **out, const char *dir, int persist_keys)
{
    *out = NULL;
    if (!dir || !*dir)
        return PICL_ERROR_INVALID_ARGUMENT;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return PICL_ERROR_IO;
    picl_state *st;
    picl_status rc = state_new(&st, dir, persist_keys);
    if (rc != PICL_OK)
        return rc;
    char path[4096];
    snprintf(path, sizeof path, "%s/state.json", dir);
    char *text;
    size_t len;
    rc = picl__read_file(path, STATE_MAX, &text, &len);
    if (rc == PICL_ERROR_NOT_FOUND) {
        *out = st;
        return PICL_OK;
    }
    if (rc != PICL_OK) {
        picl__state_free(st);
        return rc;
    }
    int oom;
    json_t *o = picl__json_loadb(text, len, 0, NULL, &oom);
    free(text);
    if (!json_is_object(o)) {
        json_decref(o);
        picl__state_free(st);
        return oom ? PICL_ERROR_NO_MEMORY : PICL_ERROR_ENCODING;
    }
    if (picl__state_set_str(&st->keyserver, jstr(o, "keyserver")) ||
        picl__state_set_str(&st->storage_override, jstr(o, "storage_override")) ||
        picl__state_set_str(&st->uid, jstr(o, "uid")) || picl__state_set_str(&st->email, jstr(o, "email")) ||
        picl__state_set_str(&st->classmap_payload, jstr(o, "classmap")) ||
        picl__state_set_str(&st->global_sync_id, jstr(o, "global_sync_id")) ||
        picl__state_set_str(&st->forgot_email, jstr(o, "forgot_email")))
        rc = PICL_ERROR_NO_MEMORY;
    st->has_forgot = sdr_field(o, "forgot", st->forgot, 32);
    st->verified = json_is_true(json_object_get(o, "verified"));
    json_t *v = json_object_get(o, "classmap_version");
    st->classmap_version =
        json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
    v = json_object_get(o, "key_epoch");
    st->key_epoch = json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
    v = json_object_get(o, "clock_offset");
    st->clock_offset = json_is_integer(v) && llabs((long long)json_integer_value(v)) <= 366LL * 86400
                           ? (int64_t)json_integer_value(v)
                           : 0;
    json_t *c = json_object_get(o, "collections");
    if (json_is_object(c))
        json_object_update(st->collections, c);
    st->has_session = sdr_field(o, "session", st->session, 32);
    uint8_t keys[64];
    if (sdr_field(o, "keys", keys, 64)) {
        memcpy(st->ka, keys, 32);
        memcpy(st->kb, keys + 32, 32);
        st->has_ka = st->has_kb = 1;
    } else if (sdr_field(o, "kA", st->ka, 32)) {
        st->has_ka = 1;
    }
    if (sdr_field(o, "pending_keys", keys, 64)) {
        memcpy(st->kft, keys, 32);
        memcpy(st->unwrap, keys + 32, 32);
        st->has_kft = 1;
    }
    picl__wipe(keys, sizeof keys);
    const char *tok = json_string_value(json_object_get(o, "storage_token"));
    if (tok) {
        uint8_t *t;
        size_t tl;
        if (picl__sdr_decrypt(&t, &tl, tok) == PICL_OK) {
            st->storage_token = json_loadb((const char *)t, tl, 0, NULL);
            picl__zfree(t, tl);
        }
    }
    json_decref(o);
    if (rc != PICL_OK) {
        picl__state_free(st);
        return rc;
    }
    *out = st;
    return PICL_OK;
}

static picl_status put_sdr(json_t *o, const char *k, const uint8_t *data, size_t n)
{
    char *b64;
    picl_status st = picl__sdr_encrypt(&b64, data, n);
    if (st != PICL_OK)
        return st;
    json_object_set_new(o, k, json_string(b64));
    free(b64);
    return PICL_OK;
}

picl_status picl__state_save(const picl_state *st)
{
    json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:b, s:O, s:I, s:s, s:s}", "version", 1, "keyserver",
                          st->keyserver, "storage_override", st->storage_override, "uid", st->uid, "email",
                          st->email, "verified", st->verified, "collections", st->collections,
                          "classmap_version", (json_int_t)st->classmap_version, "classmap",
                          st->classmap_payload, "global_sync_id", st->global_sync_id);
    if (!o)
        return PICL_ERROR_NO_MEMORY;
    picl_status rc = PICL_OK;
    if (st->key_epoch)
        json_object_set_new(o, "key_epoch", json_integer((json_int_t)st->key_epoch));
    if (st->clock_offset)
        json_object_set_new(o, "clock_offset", json_integer((json_int_t)st->clock_offset));
    if (st->has_forgot) {
        rc = put_sdr(o, "forgot", st->forgot, 32);
        json_object_set_new(o, "forgot_email", json_string(st->forgot_email));
    }
    if (rc == PICL_OK && st->has_session)
        rc = put_sdr(o, "session", st->session, 32);
    if (rc == PICL_OK && st->has_ka && st->has_kb && st->persist_keys) {
        uint8_t keys[64];
        memcpy(keys, st->ka, 32);
        memcpy(keys + 32, st->kb, 32);
        rc = put_sdr(o, "keys", keys, 64);
        picl__wipe(keys, sizeof keys);
    } else if (rc == PICL_OK && st->has_ka) {
        rc = put_sdr(o, "kA", st->ka, 32); /* strict mode: kB stays in memory */
    }
    if (rc == PICL_OK && st->has_kft && st->persist_keys) {
        uint8_t pend[64];
        memcpy(pend, st->kft, 32);
        memcpy(pend + 32, st->unwrap, 32);
        rc = put_sdr(o, "pending_keys", pend, 64);
        picl__wipe(pend, sizeof pend);
    }
    if (rc == PICL_OK && st->storage_token) {
        char *t = picl__json_dumps(st->storage_token, JSON_COMPACT);
        if (!t)
            rc = PICL_ERROR_NO_MEMORY;
        else {
            rc = put_sdr(o, "storage_token", (const uint8_t *)t, strlen(t));
            picl__zfree(t, strlen(t));
        }
    }
    char *text = rc == PICL_OK ? picl__json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (rc != PICL_OK)
        return rc;
    if (!text)
        return PICL_ERROR_NO_MEMORY;
    char path[4096];
    snprintf(path, sizeof path, "%s/state.json", st->dir);
    rc = picl__write_file_atomic(path, text, strlen(text), 0600);
    free(text);
    return rc;
}

void picl__state_drop_kft(picl_state *st)
{
    picl__wipe(st->kft, sizeof st->kft);
    picl__wipe(st->unwrap, sizeof st->unwrap);
    st->has_kft = 0;
}

void picl__state_sign_out(picl_state *st)
{
    picl__state_drop_kft(st);
    picl__wipe(st->session, sizeof st->session);
    picl__wipe(st->ka, sizeof st->ka);
    picl__wipe(st->kb, sizeof st->kb);
    st->has_session = st->has_ka = st->has_kb = 0;
    st->verified = 0;
    picl__json_zdecref(st->storage_token);
    st->storage_token = NULL;
    json_object_clear(st->collections);
    st->classmap_version = 0;
    st->key_epoch = 0;
    picl__state_set_str(&st->uid, "");
    picl__state_set_str(&st->email, "");
    picl__state_set_str(&st->classmap_payload, "");
    picl__state_set_str(&st->global_sync_id, "");
}

void picl__state_free(picl_state *st)
{
    if (!st)
        return;
    picl__state_sign_out(st);
    picl__wipe(st->forgot, sizeof st->forgot);
    free(st->forgot_email);
    json_decref(st->collections);
    free(st->dir);
    free(st->keyserver);
    free(st->storage_override);
    free(st->uid);
    free(st->email);
    free(st->classmap_payload);
    free(st->global_sync_id);
    free(st);
}

const char *picl__state_last_sync(const picl_state *st, const char *collection)
{
    const char *s =
        json_string_value(json_object_get(json_object_get(st->collections, collection), "lastSync"));
    return s ? s : "0";
}

picl_status picl__state_set_last_sync(picl_state *st, const char *collection, const char *ts)
{
    json_t *c = json_object_get(st->collections, collection);
    if (!c) {
        c = json_object();
        if (!c || json_object_set_new(st->collections, collection, c))
            return PICL_ERROR_NO_MEMORY;
    }
    return json_object_set_new(c, "lastSync", json_string(ts ? ts : "0")) ? PICL_ERROR_NO_MEMORY : PICL_OK;
}
