/* SPDX-License-Identifier: MPL-2.0 */
/* records.c -- collection keys, records with kid, the signed class map
 * (records.md sections 2-4; see records.h). */
#include "client/records.h"
#include "client/storage_client.h"
#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/kdf.h"
#include "crypto/util.h"
#include "protocol/stretch.h"
#include "crypto/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAYLOAD_MAX (PICL_RECORD_MAX_CIPHERTEXT * 2)

int picl__collection_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 1 || n > PICL_COLLECTION_NAME_MAX)
        return 0;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

picl_status picl__collection_keys(picl_keypair *out, const uint8_t kx[32], const char *collection,
                                  uint32_t generation)
{
    if (!picl__collection_name_ok(collection) || generation == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    char info[128];
    int n = snprintf(info, sizeof info, PICL_KW_PREFIX "collection:%s:%u", collection, generation);
    if (n < 0 || (size_t)n >= sizeof info)
        return PICL_ERROR_TOO_LARGE;
    uint8_t okm[64];
    picl_status st = picl__hkdf_sha256(okm, 64, kx, 32, NULL, 0, info, (size_t)n);
    if (st == PICL_OK) {
        memcpy(out->enc, okm, 32);
        memcpy(out->hmac, okm + 32, 32);
    }
    picl__wipe(okm, sizeof okm);
    return st;
}

picl_status picl__kid_parse(const char *kid, picl_class_entry *out)
{
    if (!kid || (kid[0] != 'A' && kid[0] != 'B') || kid[1] != ':')
        return PICL_ERROR_ENCODING;
    const char *d = kid + 2;
    size_t n = strlen(d);
    if (n < 1 || n > 10 || strspn(d, "0123456789") != n || d[0] == '0')
        return PICL_ERROR_ENCODING;
    unsigned long long g = strtoull(d, NULL, 10);
    if (g > 0x7fffffffULL)
        return PICL_ERROR_ENCODING;
    out->cls = kid[0];
    out->generation = (uint32_t)g;
    return PICL_OK;
}

void picl__kid_format(char out[16], const picl_class_entry *e)
{
    snprintf(out, 16, "%c:%u", e->cls, e->generation);
}

/* {"ciphertext":..,"IV":..,"hmac":..,"kid":..} written directly: base64,
 * lowercase hex and a kid need no JSON escaping (one pass, no JSON tree). */
static char *payload_text(const picl_sealed *s, const char *kidtxt)
{
    size_t n = strlen(s->ciphertext) + strlen(s->iv) + strlen(s->hmac) + strlen(kidtxt) + 64;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "{\"ciphertext\":\"%s\",\"IV\":\"%s\",\"hmac\":\"%s\",\"kid\":\"%s\"}",
                 s->ciphertext, s->iv, s->hmac, kidtxt);
    return out;
}

picl_status picl__record_encrypt_with(char **payload, const char *collection, const json_t *cleartext,
                                      picl_sealer *keys, const picl_class_entry *kid)
{
    *payload = NULL;
    const char *id = json_string_value(json_object_get(cleartext, "id"));
    if (!json_is_object(cleartext) || !id || !*id || strchr(id, '\n') ||
        !picl__collection_name_ok(collection) || (kid->cls != 'A' && kid->cls != 'B') || kid->generation == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    char *clear = picl__json_dumps(cleartext, JSON_COMPACT);
    if (!clear)
        return PICL_ERROR_NO_MEMORY;
    size_t clen = strlen(clear);
    char kidtxt[16];
    picl__kid_format(kidtxt, kid);
    picl_mac_context ctx;
    picl__record_v2_context(&ctx, collection, id, kidtxt);
    picl_sealed s;
    picl_status st = picl__record_seal_with(&s, keys, &ctx, NULL, (const uint8_t *)clear, clen);
    picl__zfree(clear, clen);
    if (st != PICL_OK)
        return st;
    *payload = payload_text(&s, kidtxt);
    picl__sealed_free(&s);
    return *payload ? PICL_OK : PICL_ERROR_NO_MEMORY;
}

picl_status picl__record_encrypt(char **payload, const char *collection, const json_t *cleartext,
                                 const picl_keypair *keys, const picl_class_entry *kid)
{
    *payload = NULL;
    picl_sealer *k = NULL;
    picl_status st = picl__sealer_new(&k, keys);
    if (st == PICL_OK)
        st = picl__record_encrypt_with(payload, collection, cleartext, k, kid);
    picl__sealer_free(k);
    return st;
}

const char *picl__record_fault_text(picl_record_fault f)
{
    switch (f) {
    case PICL_RECORD_FAULT_KID:
        return "wrong kid";
    case PICL_RECORD_FAULT_HMAC:
        return "hmac mismatch";
    case PICL_RECORD_FAULT_NOT_JSON:
        return "not JSON";
    case PICL_RECORD_FAULT_ID:
        return "id mismatch";
    default:
        return "";
    }
}

/* *oom is set when the text could not be parsed for want of memory (that
 * is not a malformed payload: the caller says NO_MEMORY, not DECRYPT). */
static json_t *load_payload_oom(const char *payload, int *oom)
{
    *oom = 0;
    if (!payload || strlen(payload) > PAYLOAD_MAX)
        return NULL;
    json_t *o = picl__json_loadb(payload, strlen(payload), JSON_REJECT_DUPLICATES, NULL, oom);
    if (o && !json_is_object(o)) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

picl_status picl__record_payload_load(const char *payload, json_t **obj)
{
    int oom;
    *obj = load_payload_oom(payload, &oom);
    if (!*obj)
        return oom ? PICL_ERROR_NO_MEMORY : PICL_ERROR_DECRYPT;
    return PICL_OK;
}

picl_status picl__record_kid_obj(const json_t *payload, picl_class_entry *kid)
{
    return picl__kid_parse(json_string_value(json_object_get(payload, "kid")), kid) == PICL_OK
               ? PICL_OK
               : PICL_ERROR_DECRYPT;
}

picl_status picl__record_kid(const char *payload, picl_class_entry *kid)
{
    json_t *o = NULL;
    picl_status st = picl__record_payload_load(payload, &o);
    if (st == PICL_OK)
        st = picl__record_kid_obj(o, kid);
    json_decref(o);
    return st;
}

/* ---- the envelope's four texts ------------------------------------------- */

void picl__record_envelope_free(picl_envelope *env)
{
    free(env->buf);
    memset(env, 0, sizeof *env);
}

static const char *const ENV_KEYS[4] = {"ciphertext", "IV", "hmac", "kid"};

static const char **env_slot(picl_envelope *env, size_t k)
{
    const char **slots[4] = {&env->ciphertext, &env->iv, &env->hmac, &env->kid};
    return slots[k];
}

/* The four fields of a payload object (a missing or non-string one NULL),
 * copied into env->buf. */
static picl_status envelope_from_obj(const json_t *o, picl_envelope *env)
{
    memset(env, 0, sizeof *env);
    const char *v[4];
    size_t total = 0;
    for (size_t k = 0; k < 4; k++) {
        v[k] = json_string_value(json_object_get(o, ENV_KEYS[k]));
        total += v[k] ? strlen(v[k]) + 1 : 0;
    }
    if (!(env->buf = malloc(total ? total : 1)))
        return PICL_ERROR_NO_MEMORY;
    char *w = env->buf;
    for (size_t k = 0; k < 4; k++) {
        if (!v[k])
            continue;
        size_t l = strlen(v[k]);
        memcpy(w, v[k], l + 1);
        *env_slot(env, k) = w;
        w += l + 1;
    }
    return PICL_OK;
}

picl_status picl__record_envelope_load_tree(const char *payload, picl_envelope *env)
{
    memset(env, 0, sizeof *env);
    json_t *o = NULL;
    picl_status st = picl__record_payload_load(payload, &o);
    if (st == PICL_OK)
        st = envelope_from_obj(o, env);
    json_decref(o);
    if (st != PICL_OK)
        picl__record_envelope_free(env);
    return st;
}

static int json_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* A JSON string of printable ASCII without escapes at p[*i] (its opening
 * quote); its text into *s, *len; *i after the closing quote.  0 for
 * anything else (the tree parser decides about it). */
static int plain_string(const char *p, size_t n, size_t *i, const char **s, size_t *len)
{
    if (*i >= n || p[*i] != '"')
        return 0;
    size_t j = *i + 1, from = j;
    while (j < n && p[j] != '"') {
        unsigned char ch = (unsigned char)p[j];
        if (ch < 0x20 || ch > 0x7e || ch == '\\')
            return 0;
        j++;
    }
    if (j >= n)
        return 0;
    *s = p + from;
    *len = j - from;
    *i = j + 1;
    return 1;
}

/* The common payload in one pass: an object of at most the four fields,
 * each once, as plain strings.  1: env filled; 0: not that shape (the
 * caller parses it as a tree, which accepts or refuses it as before);
 * -1: no memory. */
static int envelope_fast(const char *p, size_t n, picl_envelope *env)
{
    memset(env, 0, sizeof *env);
    size_t i = 0;
    while (i < n && json_ws(p[i]))
        i++;
    if (i >= n || p[i++] != '{')
        return 0;
    if (!(env->buf = malloc(n + 1)))
        return -1;
    char *w = env->buf;
    int seen = 0, ok = 0;
    while (i < n && json_ws(p[i]))
        i++;
    if (i < n && p[i] == '}') {
        i++;
        ok = 1;
    }
    while (!ok) {
        const char *ks, *vs;
        size_t kl, vl, k;
        if (!plain_string(p, n, &i, &ks, &kl))
            break;
        for (k = 0; k < 4; k++)
            if (strlen(ENV_KEYS[k]) == kl && !memcmp(ENV_KEYS[k], ks, kl))
                break;
        if (k == 4 || (seen & (1 << k)))
            break; /* another member, or one twice */
        seen |= 1 << k;
        while (i < n && json_ws(p[i]))
            i++;
        if (i >= n || p[i++] != ':')
            break;
        while (i < n && json_ws(p[i]))
            i++;
        if (!plain_string(p, n, &i, &vs, &vl))
            break;
        memcpy(w, vs, vl);
        w[vl] = 0;
        *env_slot(env, k) = w;
        w += vl + 1;
        while (i < n && json_ws(p[i]))
            i++;
        if (i < n && p[i] == ',') {
            i++;
            while (i < n && json_ws(p[i]))
                i++;
            continue;
        }
        if (i < n && p[i] == '}') {
            i++;
            ok = 1;
        }
        break;
    }
    while (ok && i < n && json_ws(p[i]))
        i++;
    if (!ok || i != n) {
        picl__record_envelope_free(env);
        return 0;
    }
    return 1;
}

picl_status picl__record_envelope_load(const char *payload, picl_envelope *env)
{
    memset(env, 0, sizeof *env);
    if (!payload || strlen(payload) > PAYLOAD_MAX)
        return PICL_ERROR_DECRYPT;
    int r = envelope_fast(payload, strlen(payload), env);
    if (r < 0)
        return PICL_ERROR_NO_MEMORY;
    return r ? PICL_OK : picl__record_envelope_load_tree(payload, env);
}

picl_status picl__record_kid_env(const picl_envelope *env, picl_class_entry *kid)
{
    return picl__kid_parse(env->kid, kid) == PICL_OK ? PICL_OK : PICL_ERROR_DECRYPT;
}

picl_status picl__record_decrypt_env(json_t **clear, const char *collection, const char *bso_id,
                                     const picl_envelope *env, picl_sealer *keys,
                                     const picl_class_entry *expect, int allow_other,
                                     picl_record_fault *fault)
{
    *clear = NULL;
    picl_status st = PICL_ERROR_DECRYPT;
    picl_record_fault why = PICL_RECORD_FAULT_NOT_JSON;
    uint8_t *pt = NULL;
    size_t ptlen = 0;
    int oom;
    json_t *c = NULL;
    picl_class_entry kid;
    if (!env || !bso_id || !collection)
        goto done;
    /* 1. the kid against the class map */
    why = PICL_RECORD_FAULT_KID;
    const char *kidtxt = env->kid;
    if (picl__kid_parse(kidtxt, &kid) != PICL_OK)
        goto done;
    /* never read data under a weaker class than the map says: a server
     * cannot downgrade a class-B collection to kA by relabelling */
    if (kid.cls == 'A' && expect->cls == 'B')
        goto done;
    if (!allow_other && (kid.cls != expect->cls || kid.generation != expect->generation))
        goto done;
    /* 2. the v2 MAC (constant time, over collection, id, kid, IV,
     * ciphertext as received), then decryption; no keys: no MAC can verify */
    why = PICL_RECORD_FAULT_HMAC;
    if (!keys)
        goto done;
    picl_mac_context ctx;
    picl__record_v2_context(&ctx, collection, bso_id, kidtxt);
    picl_status ost = picl__record_open_with(&pt, &ptlen, keys, &ctx, env->ciphertext, env->iv, env->hmac);
    if (ost == PICL_ERROR_NO_MEMORY) {
        st = ost;
        goto done;
    }
    if (ost != PICL_OK)
        goto done;
    /* 3. the cleartext must be an object naming this very BSO */
    why = PICL_RECORD_FAULT_NOT_JSON;
    c = picl__json_loadb((const char *)pt, ptlen, JSON_REJECT_DUPLICATES, NULL, &oom);
    if (oom)
        st = PICL_ERROR_NO_MEMORY;
    if (!json_is_object(c))
        goto done;
    why = PICL_RECORD_FAULT_ID;
    if (!json_is_string(json_object_get(c, "id")) ||
        strcmp(json_string_value(json_object_get(c, "id")), bso_id) != 0)
        goto done;
    *clear = c;
    c = NULL;
    why = PICL_RECORD_FAULT_NONE;
    st = PICL_OK;
done:
    if (pt)
        picl__zfree(pt, ptlen);
    picl__json_zdecref(c);
    if (fault)
        *fault = st == PICL_OK ? PICL_RECORD_FAULT_NONE : why;
    return st;
}

picl_status picl__record_decrypt_obj(json_t **clear, const char *collection, const char *bso_id,
                                     const json_t *o, picl_sealer *keys, const picl_class_entry *expect,
                                     int allow_other, picl_record_fault *fault)
{
    picl_envelope env;
    memset(&env, 0, sizeof env);
    if (json_is_object(o) && envelope_from_obj(o, &env) != PICL_OK) {
        *clear = NULL;
        if (fault)
            *fault = PICL_RECORD_FAULT_NOT_JSON;
        return PICL_ERROR_NO_MEMORY;
    }
    picl_status st = picl__record_decrypt_env(clear, collection, bso_id, json_is_object(o) ? &env : NULL,
                                              keys, expect, allow_other, fault);
    picl__record_envelope_free(&env);
    return st;
}

picl_status picl__record_decrypt(json_t **clear, const char *collection, const char *bso_id,
                                 const char *payload, const picl_keypair *keys,
                                 const picl_class_entry *expect, int allow_other, picl_record_fault *fault)
{
    *clear = NULL;
    json_t *o = NULL;
    picl_sealer *k = NULL;
    picl_status st = picl__record_payload_load(payload, &o);
    if (st != PICL_OK) {
        if (fault)
            *fault = PICL_RECORD_FAULT_NOT_JSON;
        goto done;
    }
    st = picl__sealer_new(&k, keys);
    if (st == PICL_ERROR_NO_MEMORY) {
        if (fault)
            *fault = PICL_RECORD_FAULT_HMAC;
        goto done;
    }
    /* keys PK11 would not take open nothing: the MAC check refuses */
    st = picl__record_decrypt_obj(clear, collection, bso_id, o, st == PICL_OK ? k : NULL, expect, allow_other,
                                  fault);
done:
    picl__sealer_free(k);
    json_decref(o);
    return st;
}

/* ---- class map ------------------------------------------------------------ */

picl_status picl__key_fingerprint(char out[33], const uint8_t key[32])
{
    uint8_t h[32];
    picl_status st = picl__sha256(h, key, 32);
    if (st == PICL_OK)
        picl__hex_encode(out, h, 16);
    return st;
}

const picl_class_entry *picl__classmap_get(const picl_classmap *m, const char *collection)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->items[i].name, collection))
            return &m->items[i].e;
    return NULL;
}

picl_status picl__classmap_set(picl_classmap *m, const char *collection, const picl_class_entry *e)
{
    if (!picl__collection_name_ok(collection) || (e->cls != 'A' && e->cls != 'B') || e->generation == 0)
        return PICL_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->items[i].name, collection)) {
            m->items[i].e = *e;
            return PICL_OK;
        }
    if (m->n >= sizeof m->items / sizeof m->items[0])
        return PICL_ERROR_TOO_LARGE;
    snprintf(m->items[m->n].name, sizeof m->items[m->n].name, "%s", collection);
    m->items[m->n].e = *e;
    m->n++;
    return PICL_OK;
}

picl_status picl__classmap_defaults(picl_classmap *m, const uint8_t kb[32])
{
    memset(m, 0, sizeof *m);
    m->version = 1;
    m->epoch = 1;
    picl_status st = picl__key_fingerprint(m->kb_fp, kb);
    static const picl_classmap_item defs[] = {
        {"bookmarks", {'A', 1}}, {"history", {'A', 1}}, {"passwords", {'B', 1}}};
    for (size_t i = 0; st == PICL_OK && i < 3; i++)
        st = picl__classmap_set(m, defs[i].name, &defs[i].e);
    return st;
}

/* NULL when out of memory: never a map with a collection left out. */
char picl__classmap_default_class(const char *c)
{
    static const char *const class_a[] = {"bookmarks", "history", "tabs", "forms", "prefs", "clients"};
    for (size_t i = 0; c && i < sizeof class_a / sizeof class_a[0]; i++)
        if (!strcmp(c, class_a[i]))
            return 'A';
    return 'B';
}

static json_t *classmap_json(const picl_classmap *m)
{
    json_t *cols = json_object();
    for (size_t i = 0; cols && i < m->n; i++) {
        char cls[2] = {m->items[i].e.cls, 0};
        if (json_object_set_new(cols, m->items[i].name,
                                json_pack("{s:s, s:I}", "class", cls, "generation",
                                          (json_int_t)m->items[i].e.generation)) != 0) {
            json_decref(cols);
            return NULL;
        }
    }
    if (!cols)
        return NULL;
    return json_pack("{s:I, s:I, s:s, s:o}", "version", (json_int_t)m->version, "epoch", (json_int_t)m->epoch,
                     "kB", m->kb_fp, "collections", cols);
}

static picl_status classmap_mac(char out[65], const json_t *obj, const uint8_t kb[32])
{
    uint8_t key[32], mac[32];
    char *canon = picl__json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    if (!canon)
        return PICL_ERROR_NO_MEMORY;
    picl_status st = picl__hkdf_sha256(key, 32, kb, 32, NULL, 0, PICL_KW_PREFIX "classmap",
                                       strlen(PICL_KW_PREFIX "classmap"));
    if (st == PICL_OK)
        st = picl__hmac_sha256(mac, key, 32, canon, strlen(canon));
    if (st == PICL_OK)
        picl__hex_encode(out, mac, 32);
    picl__wipe(key, sizeof key);
    picl__wipe(mac, sizeof mac);
    free(canon);
    return st;
}

picl_status picl__classmap_sign(char **payload, picl_classmap *m, const uint8_t kb[32])
{
    *payload = NULL;
    if (m->version < 1 || m->epoch < 1)
        return PICL_ERROR_INVALID_ARGUMENT;
    picl_status st = picl__key_fingerprint(m->kb_fp, kb);
    if (st != PICL_OK)
        return st;
    json_t *o = classmap_json(m);
    if (!o)
        return PICL_ERROR_NO_MEMORY;
    char mac[65];
    st = classmap_mac(mac, o, kb);
    if (st == PICL_OK && json_object_set_new(o, "hmac", json_string(mac)) != 0)
        st = PICL_ERROR_NO_MEMORY;
    if (st == PICL_OK) {
        *payload = picl__json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        if (!*payload)
            st = PICL_ERROR_NO_MEMORY;
        else
            memcpy(m->hmac, mac, sizeof m->hmac);
    }
    json_decref(o);
    return st;
}

/* The structural part of a map: version, epoch, kB hint, collections, and
 * the hmac text when present. */
static picl_status parse_collections(picl_classmap *m, json_t *o)
{
    json_t *ver = json_object_get(o, "version"), *ep = json_object_get(o, "epoch"),
           *fp = json_object_get(o, "kB");
    json_t *cols = json_object_get(o, "collections"), *mac = json_object_get(o, "hmac");
    if (!json_is_integer(ver) || json_integer_value(ver) < 1 || !json_is_integer(ep) ||
        json_integer_value(ep) < 1 || !json_is_string(fp) || strlen(json_string_value(fp)) != 32 ||
        !json_is_object(cols))
        return PICL_ERROR_CLASSMAP;
    m->version = (uint64_t)json_integer_value(ver);
    m->epoch = (uint64_t)json_integer_value(ep);
    snprintf(m->kb_fp, sizeof m->kb_fp, "%s", json_string_value(fp));
    if (json_is_string(mac) && strlen(json_string_value(mac)) == 64)
        snprintf(m->hmac, sizeof m->hmac, "%s", json_string_value(mac));
    const char *name;
    json_t *e;
    json_object_foreach (cols, name, e) {
        const char *cls = json_string_value(json_object_get(e, "class"));
        json_t *gen = json_object_get(e, "generation");
        if (!cls || (strcmp(cls, "A") && strcmp(cls, "B")) || !json_is_integer(gen) ||
            json_integer_value(gen) < 1 || json_integer_value(gen) > 0x7fffffff || json_object_size(e) != 2)
            return PICL_ERROR_CLASSMAP;
        picl_class_entry ce = {cls[0], (uint32_t)json_integer_value(gen)};
        if (picl__classmap_set(m, name, &ce) != PICL_OK)
            return PICL_ERROR_CLASSMAP;
    }
    return PICL_OK;
}

picl_status picl__classmap_parse_trusted(picl_classmap *m, const char *payload)
{
    memset(m, 0, sizeof *m);
    int oom;
    json_t *o = load_payload_oom(payload, &oom);
    picl_status st = o ? parse_collections(m, o) : oom ? PICL_ERROR_NO_MEMORY : PICL_ERROR_CLASSMAP;
    if (st != PICL_OK)
        memset(m, 0, sizeof *m);
    json_decref(o);
    return st;
}

picl_status picl__classmap_verify(picl_classmap *m, const char *payload, const uint8_t kb[32])
{
    memset(m, 0, sizeof *m);
    picl_status st = PICL_ERROR_CLASSMAP;
    int oom;
    json_t *o = load_payload_oom(payload, &oom), *unsigned_obj = NULL;
    if (!o && oom)
        st = PICL_ERROR_NO_MEMORY;
    if (!o || json_object_size(o) != 5)
        goto done;
    json_t *mac = json_object_get(o, "hmac");
    if (!json_is_string(mac) || strlen(json_string_value(mac)) != 64)
        goto done;
    /* 1. the HMAC under our kB, before anything in the map is looked at */
    unsigned_obj = json_deep_copy(o);
    if (!unsigned_obj) {
        st = PICL_ERROR_NO_MEMORY;
        goto done;
    }
    json_object_del(unsigned_obj, "hmac");
    uint8_t want[32], got[32];
    char gothex[65];
    picl_status mst = classmap_mac(gothex, unsigned_obj, kb);
    if (mst != PICL_OK) {
        st = mst;
        goto done;
    }
    if (picl__hex_decode_exact(want, 32, json_string_value(mac)) != PICL_OK ||
        picl__hex_decode_exact(got, 32, gothex) != PICL_OK || !picl__memeq_ct(want, got, 32))
        goto done;
    /* 2. only a genuine map is parsed */
    if (parse_collections(m, o) != PICL_OK)
        goto done;
    snprintf(m->hmac, sizeof m->hmac, "%s", gothex);
    st = PICL_OK;
done:
    if (st != PICL_OK && st != PICL_ERROR_NO_MEMORY)
        st = PICL_ERROR_CLASSMAP;
    if (st != PICL_OK)
        memset(m, 0, sizeof *m);
    json_decref(unsigned_obj);
    json_decref(o);
    return st;
}

/* The length of s[0..n) as a JSON string's contents (jansson's escapes:
 * \\ \" \b \f \n \r \t, other control characters as \\u00XX). */
static size_t json_escaped_len(const char *s, size_t n)
{
    size_t l = n;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\' || ch == '\b' || ch == '\f' || ch == '\n' || ch == '\r' || ch == '\t')
            l += 1;
        else if (ch < 0x20)
            l += 5;
    }
    return l;
}

/* 1 for the bytes a JSON string must escape ('"', '\\', below 0x20). */
static int json_must_escape(unsigned char ch) { return ch == '"' || ch == '\\' || ch < 0x20; }

static char *json_escape_to(char *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    *o++ = '"';
    for (size_t i = 0; i < n;) {
        size_t run = i;
        while (run < n && !json_must_escape((unsigned char)s[run]))
            run++;
        memcpy(o, s + i, run - i); /* the plain run copied at once */
        o += run - i;
        if ((i = run) >= n)
            break;
        unsigned char ch = (unsigned char)s[i++];
        const char *e = ch == '"'    ? "\\\""
                        : ch == '\\' ? "\\\\"
                        : ch == '\b' ? "\\b"
                        : ch == '\f' ? "\\f"
                        : ch == '\n' ? "\\n"
                        : ch == '\r' ? "\\r"
                        : ch == '\t' ? "\\t"
                                     : NULL;
        if (e) {
            *o++ = e[0];
            *o++ = e[1];
        } else {
            memcpy(o, "\\u00", 4);
            o[4] = hex[ch >> 4];
            o[5] = hex[ch & 15];
            o += 6;
        }
    }
    *o++ = '"';
    return o;
}

char *picl__record_bso_text(const char *id, const char *payload, size_t plen, int64_t ttl)
{
    size_t il = strlen(id);
    char ttls[32] = "";
    if (ttl >= 0)
        snprintf(ttls, sizeof ttls, ",\"ttl\":%lld", (long long)ttl);
    size_t n = sizeof "{\"id\":,\"payload\":}" + 4 + json_escaped_len(id, il) +
               json_escaped_len(payload, plen) + strlen(ttls);
    char *t = malloc(n), *o = t;
    if (!t)
        return NULL;
    memcpy(o, "{\"id\":", 6);
    o = json_escape_to(o + 6, id, il);
    memcpy(o, ",\"payload\":", 11);
    o = json_escape_to(o + 11, payload, plen);
    size_t tl = strlen(ttls);
    memcpy(o, ttls, tl);
    o += tl;
    *o++ = '}';
    *o = 0;
    return t;
}
