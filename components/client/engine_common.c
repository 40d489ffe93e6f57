/* SPDX-License-Identifier: MPL-2.0 */
/* engine_common.c -- what the sync (engine.c) and meta/global, the class
 * map and the rebuild after a reset (engine_meta.c) both use: timestamps,
 * errors and notifications, a collection's state, and runs of records --
 * their keys, decryption, encryption and upload (see engine_int.h). */
#include "client/engine.h"
#include "client/engine_int.h"
#include "crypto/util.h"
#include "protocol/synctime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------------- */

int64_t picl__ts_parse(const char *t)
{
    int64_t c = -1;
    return t && picl__synctime_parse(t, strlen(t), &c) == PICL_OK ? c : -1;
}

void picl__ts_format(char out[24], int64_t c) { picl__synctime_format(out, c); }

picl_status picl__eng_fail(picl_engine *e, picl_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->error, sizeof e->error, fmt, ap);
    va_end(ap);
    return st;
}

void picl__eng_notify(picl_engine *e, const char *phase, const char *coll, int64_t done, int64_t total,
                      const char *msg)
{
    if (e->notify)
        e->notify(e->notify_ctx, phase, coll ? coll : "", done, total, msg ? msg : "");
}

json_t *picl__eng_coll_state(picl_engine *e, const char *c)
{
    json_t *o = json_object_get(e->st->collections, c);
    if (!o) {
        o = json_object();
        json_object_set_new(e->st->collections, c, o);
    }
    return o;
}

/* Marks a collection for a full merge: cursor back to 0, store reset at its
 * next sync.  Local data is never deleted for this. */
void picl__eng_mark_reset(picl_engine *e, const char *c)
{
    json_t *cs = picl__eng_coll_state(e, c);
    json_object_set_new(cs, "lastSync", json_string("0"));
    json_object_set_new(cs, "reset", json_true());
}

/* ---- runs of records -------------------------------------------------------- */

picl_status picl__eng_keys_for(picl_engine *e, const char *coll, const picl_class_entry *kid,
                               picl_keypair *out)
{
    if (kid->cls == 'B' && !e->st->has_kb)
        return PICL_ERROR_STATE;
    if (kid->cls == 'A' && !e->st->has_ka)
        return PICL_ERROR_STATE;
    return picl__collection_keys(out, kid->cls == 'A' ? e->st->ka : e->st->kb, coll, kid->generation);
}

/* A record refused by an integrity check (client.md 7): listed for the
 * caller and told to the observer.  The reason names the check only. */
void picl__eng_record_failure(picl_engine *e, const char *c, const char *id, picl_record_fault why)
{
    const char *reason = picl__record_fault_text(why);
    if (!e->failures)
        e->failures = json_array();
    size_t i;
    json_t *f;
    json_array_foreach (e->failures, i, f) {
        if (!strcmp(json_string_value(json_object_get(f, "collection")), c) &&
            !strcmp(json_string_value(json_object_get(f, "id")), id ? id : ""))
            return; /* seen already (a retry of the same download) */
    }
    json_array_append_new(e->failures, json_pack("{s:s, s:s, s:s}", "collection", c, "id", id ? id : "",
                                                 "reason", *reason ? reason : "hmac mismatch"));
    char msg[160];
    snprintf(msg, sizeof msg, "%.64s: %s (not applied)", id ? id : "", *reason ? reason : "hmac mismatch");
    picl__eng_notify(e, "integrity", c, 0, -1, msg);
}

/* The imported keys of a run of records, one sealer per kid met (a
 * collection holds one or two); a kid this device holds no key for is
 * remembered as such. */
#define RING_MAX 8
typedef struct keyring {
    struct {
        picl_class_entry kid;
        picl_sealer *s; /* NULL: no key in memory for this kid */
    } k[RING_MAX];
    size_t n;
} keyring;

static void ring_free(keyring *r)
{
    for (size_t i = 0; i < r->n; i++)
        picl__sealer_free(r->k[i].s);
    r->n = 0;
}

/* The sealer for kid (NULL when this device has no key for it), or
 * PICL_ERROR_NO_MEMORY.  *tmp is set when the ring is full: the caller
 * frees that sealer after the record. */
static picl_status ring_get(picl_engine *e, const char *c, keyring *r, const picl_class_entry *kid,
                            picl_sealer **out, int *tmp)
{
    *out = NULL;
    *tmp = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->k[i].kid.cls == kid->cls && r->k[i].kid.generation == kid->generation) {
            *out = r->k[i].s;
            return PICL_OK;
        }
    picl_keypair keys;
    picl_sealer *s = NULL;
    picl_status st = picl__eng_keys_for(e, c, kid, &keys);
    if (st == PICL_OK)
        st = picl__sealer_new(&s, &keys);
    picl__wipe(&keys, sizeof keys);
    if (st == PICL_ERROR_NO_MEMORY)
        return st;
    if (r->n < RING_MAX) {
        r->k[r->n].kid = *kid;
        r->k[r->n].s = s;
        r->n++;
    } else {
        *tmp = 1;
    }
    *out = s;
    return PICL_OK;
}

struct picl_eng_decrypt_run {
    keyring ring;
    json_t *faults; /* [id, fault] pairs not yet recorded; NULL: record at once */
    picl_stc *pump; /* moves a requested next page between records, or NULL */
};

picl_eng_decrypt_run *picl__eng_decrypt_begin(int defer, picl_stc *pump)
{
    picl_eng_decrypt_run *d = calloc(1, sizeof *d);
    if (d && defer && !(d->faults = json_array())) {
        free(d);
        d = NULL;
    }
    if (d)
        d->pump = pump;
    return d;
}

void picl__eng_decrypt_end(picl_engine *e, const char *c, picl_eng_decrypt_run *d, int report)
{
    if (!d)
        return;
    size_t i;
    json_t *f;
    if (report)
        json_array_foreach (d->faults, i, f)
            picl__eng_record_failure(e, c, json_string_value(json_array_get(f, 0)),
                                     (picl_record_fault)json_integer_value(json_array_get(f, 1)));
    json_decref(d->faults);
    ring_free(&d->ring);
    free(d);
}

/* A refused record: recorded now, or kept for decrypt_end. */
static picl_status refused(picl_engine *e, const char *c, picl_eng_decrypt_run *d, const char *id,
                           picl_record_fault why)
{
    if (!d->faults) {
        picl__eng_record_failure(e, c, id, why);
        return PICL_OK;
    }
    return json_array_append_new(d->faults, json_pack("[s,i]", id ? id : "", (int)why)) == 0
               ? PICL_OK
               : PICL_ERROR_NO_MEMORY;
}

#define PUMP_EVERY 16 /* records between two moves of the next page's data */

/* One BSO (id, payload: NULL when missing) into out, or counted in *held. */
static picl_status decrypt_one(picl_engine *e, const char *c, const picl_class_entry *entry,
                               picl_eng_decrypt_run *d, const char *id, const char *payload, json_t *out,
                               int64_t *held)
{
    picl_class_entry kid;
    picl_record_fault why = PICL_RECORD_FAULT_NOT_JSON;
    json_t *clear = NULL;
    picl_envelope env;
    memset(&env, 0, sizeof env);
    picl_sealer *keys = NULL;
    int tmp = 0;
    picl_status st = PICL_OK, lst = PICL_ERROR_DECRYPT;
    if (!id || !payload)
        goto refuse;
    if ((lst = picl__record_envelope_load(payload, &env)) == PICL_ERROR_NO_MEMORY) {
        st = lst;
        goto done;
    }
    if (lst == PICL_OK && picl__record_kid_env(&env, &kid) == PICL_OK) {
        if ((st = ring_get(e, c, &d->ring, &kid, &keys, &tmp)) != PICL_OK)
            goto done;
        if (!keys && !(kid.cls == 'A' && entry->cls == 'B')) {
            (*held)++; /* locked: kB not in memory */
            goto done;
        }
    }
    /* not loaded: refused as not JSON; keys NULL: refused at the MAC */
    st = picl__record_decrypt_env(&clear, c, id, lst == PICL_OK ? &env : NULL, keys, entry, 1, &why);
    if (st == PICL_ERROR_NO_MEMORY)
        goto done;
    if (clear) {
        st = json_object_set_new(out, id, clear) == 0 ? PICL_OK : PICL_ERROR_NO_MEMORY;
        goto done;
    }
refuse:
    (*held)++;
    st = refused(e, c, d, id, why);
done:
    if (tmp)
        picl__sealer_free(keys);
    picl__record_envelope_free(&env);
    return st;
}

picl_status picl__eng_decrypt_page(picl_engine *e, const char *c, const picl_class_entry *entry,
                                   picl_eng_decrypt_run *d, json_t *bsos, json_t *out, int64_t *held)
{
    picl_status st = PICL_OK;
    size_t i;
    json_t *b;
    json_array_foreach (bsos, i, b) {
        st = decrypt_one(e, c, entry, d, json_string_value(json_object_get(b, "id")),
                         json_string_value(json_object_get(b, "payload")), out, held);
        /* read: its ciphertext goes now, so a large download does not hold
         * every payload and every cleartext at once */
        json_object_del(b, "payload");
        if (st != PICL_OK)
            break;
    }
    return st;
}

picl_status picl__eng_decrypt_views(picl_engine *e, const char *c, const picl_class_entry *entry,
                                    picl_eng_decrypt_run *d, const picl_bso_view *items, size_t n,
                                    json_t *out, int64_t *held)
{
    picl_status st = PICL_OK;
    for (size_t i = 0; i < n && st == PICL_OK; i++) {
        if (d->pump && i % PUMP_EVERY == 0)
            picl__stc_pump(d->pump);
        st = decrypt_one(e, c, entry, d, items[i].id, items[i].payload, out, held);
    }
    return st;
}

/* Decrypts BSOs into id -> cleartext.  *held counts the records not read
 * (the cursor stays so they are fetched again); those that failed an
 * integrity check are also listed in e->failures.  A record under a key
 * this device does not hold in memory (class B in strict mode) is held, not
 * a failure.  Each payload is parsed once, each key imported once. */
picl_status picl__eng_decrypt_all(picl_engine *e, const char *c, const picl_class_entry *entry, json_t *bsos,
                                  json_t *out, int64_t *held)
{
    picl_eng_decrypt_run *d = picl__eng_decrypt_begin(0, NULL);
    if (!d)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = picl__eng_decrypt_page(e, c, entry, d, bsos, out, held);
    picl__eng_decrypt_end(e, c, d, 1);
    return st;
}

picl_status picl__eng_encrypt_bsos(picl_engine *e, const char *c, const picl_class_entry *entry,
                                   json_t *records, json_t **bsos)
{
    picl_keypair keys;
    picl_sealer *k = NULL;
    picl_status st = picl__eng_keys_for(e, c, entry, &keys);
    if (st == PICL_OK)
        st = picl__sealer_new(&k, &keys); /* imported once for the whole run */
    picl__wipe(&keys, sizeof keys);
    if (st != PICL_OK)
        return st;
    json_t *out = json_array();
    size_t i;
    json_t *r;
    json_array_foreach (records, i, r) {
        char *payload;
        st = picl__record_encrypt_with(&payload, c, r, k, entry);
        if (st != PICL_OK)
            break;
        json_t *bso = json_object();
        if (!bso || json_object_set(bso, "id", json_object_get(r, "id")) ||
            json_object_set_new_nocheck(bso, "payload", json_stringn_nocheck(payload, strlen(payload)))) {
            json_decref(bso);
            bso = NULL;
        }
        free(payload);
        /* a device's own records expire on the server when it stops syncing */
        if (bso && (!strcmp(c, "tabs") || !strcmp(c, "clients")))
            json_object_set_new(bso, "ttl", json_integer(PICL_DEVICE_RECORD_TTL_S));
        if (!bso || json_array_append_new(out, bso)) {
            st = PICL_ERROR_NO_MEMORY;
            break;
        }
    }
    picl__sealer_free(k);
    if (st != PICL_OK) {
        json_decref(out);
        return st;
    }
    *bsos = out;
    return PICL_OK;
}

/* Uploads bsos, in one atomic batch when the server's limits allow it, else
 * in as few batches as they allow, each conditional on the one before, so a
 * concurrent writer still makes the whole upload fail with a conflict.  The
 * results are merged into *out (modified = the last commit's timestamp). */
picl_status picl__eng_post_all(picl_engine *e, const char *c, json_t *bsos, int64_t ius,
                               picl_stc_post_result *out)
{
    memset(out, 0, sizeof *out);
    picl_stc_limits lim;
    picl_status st = picl__stc_limits(e->stc, &lim);
    if (st != PICL_OK)
        return st;
    size_t n = json_array_size(bsos),
           per = (size_t)(lim.max_total_records > 0 ? lim.max_total_records : 10000);
    int64_t byte_cap = lim.max_total_bytes > 0 ? lim.max_total_bytes * 9 / 10 : INT64_MAX;
    out->success = json_array();
    out->failed = json_object();
    for (size_t from = 0; from < n;) {
        json_t *part = json_array();
        int64_t bytes = 0;
        size_t to = from;
        while (to < n && to - from < per) {
            json_t *b = json_array_get(bsos, to);
            int64_t len = (int64_t)strlen(json_string_value(json_object_get(b, "payload")));
            if (to > from && bytes + len > byte_cap)
                break;
            bytes += len;
            json_array_append(part, b);
            to++;
        }
        picl_stc_post_result pr = {0};
        st = picl__stc_post(e->stc, c, part, ius, &pr);
        json_decref(part);
        if (st != PICL_OK) {
            picl__stc_post_result_clear(&pr);
            break;
        }
        json_array_extend(out->success, pr.success);
        json_object_update(out->failed, pr.failed);
        out->modified = pr.modified;
        if (to < n) /* progress between the parts of a large upload */
            picl__eng_notify(e, "upload", c, (int64_t)to, (int64_t)n, NULL);
        ius = pr.modified; /* the next part only if nobody wrote in between */
        picl__stc_post_result_clear(&pr);
        from = to;
    }
    if (st != PICL_OK)
        picl__stc_post_result_clear(out);
    return st;
}

picl_status picl__eng_upload_limits(picl_engine *e, picl_stc_limits *lim, size_t *per)
{
    picl_status st = picl__stc_limits(e->stc, lim);
    *per = st == PICL_OK && lim->max_total_records > 0 ? (size_t)lim->max_total_records : 10000;
    return st;
}
