/* SPDX-License-Identifier: MPL-2.0 */
/* storage_write.c -- the storage server's writes: the BSO input parser, PUT,
 * POST and batches (see storage_internal.h). */
#include "storage/storage_internal.h"
#include "crypto/alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_9_DIGITS INT64_C(999999999)

/* ---- the BSO parser --------------------------------------------------- */

void storage__bso_clear(sdb_bso *b)
{
    free(b->id);
    free(b->payload);
    memset(b, 0, sizeof *b);
}

void storage__bsos_free(sdb_bso *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        storage__bso_clear(&items[i]);
    free(items);
}

picl_status storage__parse_bso(json_t *obj, const storage_limits *lim, sdb_bso *out, const char **reason)
{
    memset(out, 0, sizeof *out);
    *reason = NULL;
    if (!json_is_object(obj)) {
        *reason = "not an object";
        return PICL_ERROR_ENCODING;
    }
    const char *key;
    json_t *v;
    json_object_foreach (obj, key, v) {
        if (!strcmp(key, "id")) {
            if (!json_is_string(v) || !storage__valid_id(json_string_value(v), json_string_length(v))) {
                *reason = "invalid id";
                goto bad;
            }
            if (!(out->id = strdup(json_string_value(v))))
                goto nomem;
        } else if (!strcmp(key, "sortindex")) {
            out->has_sortindex = 1;
            if (json_is_null(v)) {
                out->sortindex_null = 1;
            } else if (json_is_integer(v) && json_integer_value(v) >= -MAX_9_DIGITS &&
                       json_integer_value(v) <= MAX_9_DIGITS) {
                out->sortindex = json_integer_value(v);
            } else {
                *reason = "invalid sortindex";
                goto bad;
            }
        } else if (!strcmp(key, "payload")) {
            out->has_payload = 1;
            if (json_is_null(v))
                continue;
            if (!json_is_string(v)) {
                *reason = "invalid payload";
                goto bad;
            }
            if ((int64_t)json_string_length(v) > lim->max_record_payload_bytes) {
                *reason = "payload too large";
                goto bad;
            }
            out->payload_len = json_string_length(v);
            if (!(out->payload = malloc(out->payload_len + 1)))
                goto nomem;
            memcpy(out->payload, json_string_value(v), out->payload_len + 1);
        } else if (!strcmp(key, "ttl")) {
            out->has_ttl = 1;
            if (json_is_null(v)) {
                out->ttl_null = 1;
            } else if (json_is_integer(v) && json_integer_value(v) > 0 &&
                       json_integer_value(v) <= MAX_9_DIGITS) {
                out->ttl = json_integer_value(v);
            } else {
                *reason = "invalid ttl";
                goto bad;
            }
        } else if (!strcmp(key, "modified") || !strcmp(key, "collection")) {
            continue; /* server-set / named by the URL: ignored, as Mozilla's servers do */
        } else {
            *reason = "unknown field";
            goto bad;
        }
    }
    return PICL_OK;
nomem:
    storage__bso_clear(out);
    return PICL_ERROR_NO_MEMORY;
bad:
    storage__bso_clear(out);
    return PICL_ERROR_ENCODING;
}

/* Records item #idx as failed: under its id when it has a usable one. */
static picl_status add_failed(json_t *failed, json_t *obj, size_t idx, const char *reason)
{
    char key[80];
    json_t *id = json_is_object(obj) ? json_object_get(obj, "id") : NULL;
    if (id && json_is_string(id) && json_string_length(id) >= 1 && json_string_length(id) <= 64 &&
        strlen(json_string_value(id)) == json_string_length(id))
        snprintf(key, sizeof key, "%s", json_string_value(id));
    else
        snprintf(key, sizeof key, "#%zu", idx);
    return json_object_set_new(failed, key, json_string(reason)) ? PICL_ERROR_NO_MEMORY : PICL_OK;
}

/* Parses element idx; appends it to items or to failed. */
static picl_status take_one(json_t *obj, size_t idx, const storage_limits *lim, sdb_bso *items, size_t *n,
                            json_t *failed)
{
    const char *reason;
    picl_status st = storage__parse_bso(obj, lim, &items[*n], &reason);
    if (st == PICL_OK && !items[*n].id) {
        storage__bso_clear(&items[*n]);
        st = PICL_ERROR_ENCODING;
        reason = "missing id";
    }
    if (st == PICL_ERROR_ENCODING)
        return add_failed(failed, obj, idx, reason);
    if (st != PICL_OK)
        return st;
    /* A later copy of the same id replaces the earlier one. */
    for (size_t i = 0; i < *n; i++) {
        if (!strcmp(items[i].id, items[*n].id)) {
            storage__bso_clear(&items[i]);
            items[i] = items[*n];
            memset(&items[*n], 0, sizeof items[*n]);
            return PICL_OK;
        }
    }
    (*n)++;
    return PICL_OK;
}

int storage__scan_json(const uint8_t *body, size_t len, int newlines, int64_t *records, int64_t *values)
{
    int64_t depth = 0, nrec = 0, nval = 0;
    int line_has = 0, top_array = -1; /* -1 nothing yet, 1 a list, 0 another value */
    for (size_t i = 0; i < len; i++) {
        uint8_t ch = body[i];
        if (ch == '\n' && newlines) {
            /* each line is a document of its own */
            nrec += line_has;
            line_has = 0;
            depth = 0;
            continue;
        }
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
            continue;
        line_has = 1; /* a line with anything but white space is a record */
        if (ch == ',' || ch == ':')
            continue;
        if (ch == ']' || ch == '}') {
            depth -= depth > 0;
            continue;
        }
        /* a value starts here */
        nval++;
        if (depth == 0 && top_array < 0)
            top_array = ch == '[';
        else if (depth == 1 && top_array == 1 && !newlines)
            nrec++;
        if (ch == '[' || ch == '{') {
            depth++;
        } else if (ch == '"') {
            /* to the closing quote; a raw newline cannot be inside a JSON
             * string, so in newlines mode it ends the (broken) line here */
            for (i++; i < len && body[i] != '"'; i++) {
                if (newlines && body[i] == '\n')
                    break;
                if (body[i] == '\\' && i + 1 < len && !(newlines && body[i + 1] == '\n'))
                    i++;
            }
            if (newlines && i < len && body[i] == '\n')
                i--;
        } else {
            while (i + 1 < len && !strchr(" \t\r\n,:[]{}\"", body[i + 1]))
                i++;
        }
    }
    if (newlines)
        nrec += line_has;
    *records = nrec;
    *values = nval;
    return top_array;
}

/* ---- the fast path of a JSON list ------------------------------------ */

/*
 * A JSON list of flat BSO objects -- ASCII strings with only the
 * one-character escapes, plain integers, null, each key once, every record
 * one that storage__parse_bso takes -- is parsed here in one pass, without
 * building a JSON tree (jansson spent about 140 instructions per body byte
 * on it, more than half of a POST).  Anything else, and any record that
 * would be refused, is left to the jansson path below, which then parses
 * the whole body as before: every refusal, every `failed` reason and every
 * accepted value still comes from storage__parse_bso.  Returns 1 with
 * items (owning their strings, like the other path's), 0 (nothing kept)
 * for the jansson path, -1 out of memory.
 */
typedef struct fastp {
    const uint8_t *s;
    size_t i, len;
} fastp;

static void fp_ws(fastp *f)
{
    while (f->i < f->len &&
           (f->s[f->i] == ' ' || f->s[f->i] == '\t' || f->s[f->i] == '\n' || f->s[f->i] == '\r'))
        f->i++;
}

static int fp_escape(uint8_t c, char *out)
{
    switch (c) {
    case '"':
        *out = '"';
        return 1;
    case '\\':
        *out = '\\';
        return 1;
    case '/':
        *out = '/';
        return 1;
    case 'b':
        *out = '\b';
        return 1;
    case 'f':
        *out = '\f';
        return 1;
    case 'n':
        *out = '\n';
        return 1;
    case 'r':
        *out = '\r';
        return 1;
    case 't':
        *out = '\t';
        return 1;
    default:
        return 0; /* \u and anything else: the jansson path */
    }
}

/* The string at f->i (its opening quote) into a malloc()ed copy (out NULL:
 * checked and skipped).  1, 0 (not for the fast path), -1 (memory). */
static int fp_string(fastp *f, char **out, size_t *outlen)
{
    if (f->i >= f->len || f->s[f->i] != '"')
        return 0;
    size_t start = ++f->i, n = 0;
    char ch;
    for (;; n++) {
        if (f->i >= f->len)
            return 0;
        uint8_t c = f->s[f->i];
        if (c == '"')
            break;
        if (c < 0x20 || c >= 0x80)
            return 0; /* control characters (refused) and UTF-8 (checked by jansson) */
        if (c == '\\') {
            if (f->i + 1 >= f->len || !fp_escape(f->s[f->i + 1], &ch))
                return 0;
            f->i++;
        }
        f->i++;
    }
    size_t end = f->i++;
    if (outlen)
        *outlen = n;
    if (!out)
        return 1;
    char *o = malloc(n + 1);
    if (!o)
        return -1;
    size_t k = 0;
    for (size_t j = start; j < end; j++) {
        if (f->s[j] == '\\')
            fp_escape(f->s[++j], &o[k++]);
        else
            o[k++] = (char)f->s[j];
    }
    o[k] = 0;
    *out = o;
    return 1;
}

/* An integer of at most 15 digits, no leading zero, no fraction or
 * exponent: 1 and *v, else 0. */
static int fp_int(fastp *f, int64_t *v)
{
    size_t i = f->i;
    int neg = i < f->len && f->s[i] == '-';
    i += neg;
    size_t d0 = i;
    int64_t x = 0;
    while (i < f->len && f->s[i] >= '0' && f->s[i] <= '9' && i - d0 < 16)
        x = x * 10 + (f->s[i++] - '0');
    size_t nd = i - d0;
    if (!nd || nd > 15 || (f->s[d0] == '0' && nd > 1) ||
        (i < f->len &&
         (f->s[i] == '.' || f->s[i] == 'e' || f->s[i] == 'E' || (f->s[i] >= '0' && f->s[i] <= '9'))))
        return 0;
    *v = neg ? -x : x;
    f->i = i;
    return 1;
}

static int fp_null(fastp *f)
{
    if (f->len - f->i < 4 || memcmp(f->s + f->i, "null", 4))
        return 0;
    f->i += 4;
    return 1;
}

enum { FK_ID = 1, FK_PAYLOAD = 2, FK_SORTINDEX = 4, FK_TTL = 8, FK_MODIFIED = 16, FK_COLLECTION = 32 };

/* The key at f->i: its FK_ bit, 0 for any other (or escaped) key. */
static unsigned fp_key(fastp *f)
{
    static const struct {
        const char *name;
        unsigned bit;
    } keys[] = {{"id", FK_ID},   {"payload", FK_PAYLOAD},   {"sortindex", FK_SORTINDEX},
                {"ttl", FK_TTL}, {"modified", FK_MODIFIED}, {"collection", FK_COLLECTION}};
    size_t start = f->i + 1, n;
    if (fp_string(f, NULL, &n) != 1 || f->i - start != n + 1)
        return 0; /* not a string, or escaped */
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (strlen(keys[k].name) == n && !memcmp(f->s + start, keys[k].name, n))
            return keys[k].bit;
    return 0;
}

/* One object into *b: 1, 0 (the jansson path; b cleared), -1 (memory). */
static int fp_object(fastp *f, const storage_limits *lim, sdb_bso *b)
{
    memset(b, 0, sizeof *b);
    unsigned seen = 0;
    int r = 0;
    if (f->i >= f->len || f->s[f->i] != '{')
        return 0;
    f->i++;
    for (;;) {
        fp_ws(f);
        unsigned k = fp_key(f);
        if (!k || (seen & k))
            goto out; /* unknown, escaped or repeated key */
        seen |= k;
        fp_ws(f);
        if (f->i >= f->len || f->s[f->i] != ':')
            goto out;
        f->i++;
        fp_ws(f);
        int64_t v;
        if (k == FK_ID) {
            size_t n;
            if ((r = fp_string(f, &b->id, &n)) != 1 || !storage__valid_id(b->id, n))
                goto out;
        } else if (k == FK_PAYLOAD) {
            b->has_payload = 1;
            if (!fp_null(f) && ((r = fp_string(f, &b->payload, &b->payload_len)) != 1 ||
                                (int64_t)b->payload_len > lim->max_record_payload_bytes))
                goto out;
        } else if (k == FK_SORTINDEX) {
            b->has_sortindex = 1;
            if (fp_null(f))
                b->sortindex_null = 1;
            else if (fp_int(f, &v) && v >= -MAX_9_DIGITS && v <= MAX_9_DIGITS)
                b->sortindex = v;
            else
                goto out;
        } else if (k == FK_TTL) {
            b->has_ttl = 1;
            if (fp_null(f))
                b->ttl_null = 1;
            else if (fp_int(f, &v) && v > 0 && v <= MAX_9_DIGITS)
                b->ttl = v;
            else
                goto out;
        } else if (!fp_null(f) && !fp_int(f, &v) && fp_string(f, NULL, NULL) != 1) {
            goto out; /* modified, collection: ignored, of a simple type here */
        }
        r = 0;
        fp_ws(f);
        if (f->i < f->len && f->s[f->i] == ',') {
            f->i++;
            continue;
        }
        if (f->i < f->len && f->s[f->i] == '}') {
            f->i++;
            break;
        }
        goto out;
    }
    if (b->id)
        return 1;
out:
    storage__bso_clear(b);
    return r < 0 ? -1 : 0;
}

static int fast_list(const uint8_t *body, size_t len, const storage_limits *lim, sdb_bso **items, size_t *n)
{
    fastp f = {body, 0, len};
    sdb_bso *arr = NULL;
    size_t k = 0, cap = 0;
    int r = 0;
    fp_ws(&f);
    if (f.i >= f.len || f.s[f.i] != '[')
        return 0;
    f.i++;
    fp_ws(&f);
    if (f.i < f.len && f.s[f.i] == ']') {
        f.i++;
        goto end;
    }
    for (;;) {
        if (k == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            sdb_bso *na = realloc(arr, ncap * sizeof *na);
            if (!na) {
                r = -1;
                goto fail;
            }
            arr = na;
            cap = ncap;
        }
        fp_ws(&f);
        if ((r = fp_object(&f, lim, &arr[k])) != 1)
            goto fail;
        /* a later copy of the same id replaces the earlier one (take_one) */
        size_t j = 0;
        while (j < k && strcmp(arr[j].id, arr[k].id))
            j++;
        if (j < k) {
            storage__bso_clear(&arr[j]);
            arr[j] = arr[k];
            memset(&arr[k], 0, sizeof arr[k]);
        } else {
            k++;
        }
        r = 0;
        fp_ws(&f);
        if (f.i < f.len && f.s[f.i] == ',') {
            f.i++;
            continue;
        }
        if (f.i < f.len && f.s[f.i] == ']') {
            f.i++;
            break;
        }
        goto fail;
    }
end:
    fp_ws(&f);
    if (f.i != f.len)
        goto fail; /* something after the list: the jansson path refuses it */
    if (!arr && !(arr = calloc(1, sizeof *arr))) {
        r = -1;
        goto fail;
    }
    *items = arr;
    *n = k;
    return 1;
fail:
    storage__bsos_free(arr, k);
    return r;
}

picl_status storage__parse_bsos(const uint8_t *body, size_t len, int newlines, const storage_limits *lim,
                                sdb_bso **items, size_t *n, json_t *failed)
{
    if (!newlines) {
        int r = fast_list(body, len, lim, items, n);
        if (r != 0)
            return r > 0 ? PICL_OK : PICL_ERROR_NO_MEMORY;
    }
    return storage__parse_bsos_json(body, len, newlines, lim, items, n, failed);
}

picl_status storage__parse_bsos_json(const uint8_t *body, size_t len, int newlines, const storage_limits *lim,
                                     sdb_bso **items, size_t *n, json_t *failed)
{
    *items = NULL;
    *n = 0;
    picl_status st = PICL_OK;
    json_t *doc = NULL;
    size_t count;
    if (newlines) {
        int64_t lines = 0, values = 0;
        storage__scan_json(body, len, 1, &lines, &values);
        count = (size_t)lines;
    } else {
        json_error_t err;
        doc = json_loadb((const char *)body, len, JSON_DECODE_ANY, &err);
        if (!doc || !json_is_array(doc)) {
            st = doc ? PICL_ERROR_INVALID_ARGUMENT : PICL_ERROR_ENCODING;
            json_decref(doc);
            return st;
        }
        count = json_array_size(doc);
    }
    sdb_bso *arr = calloc(count ? count : 1, sizeof *arr);
    if (!arr) {
        json_decref(doc);
        return PICL_ERROR_NO_MEMORY;
    }
    size_t k = 0;
    if (newlines) {
        size_t start = 0, idx = 0;
        for (size_t i = 0; i <= len && st == PICL_OK; i++) {
            if (i < len && body[i] != '\n')
                continue;
            size_t l = i - start;
            const char *line = (const char *)body + start;
            start = i + 1;
            while (l && (line[l - 1] == '\r' || line[l - 1] == ' ' || line[l - 1] == '\t'))
                l--;
            if (!l)
                continue; /* blank lines (e.g. the final newline) are not records */
            json_error_t err;
            json_t *obj = json_loadb(line, l, 0, &err);
            if (!obj)
                st = add_failed(failed, NULL, idx, "invalid json");
            else
                st = take_one(obj, idx, lim, arr, &k, failed);
            json_decref(obj);
            idx++;
        }
    } else {
        for (size_t i = 0; i < count && st == PICL_OK; i++)
            st = take_one(json_array_get(doc, i), i, lim, arr, &k, failed);
    }
    json_decref(doc);
    if (st != PICL_OK) {
        storage__bsos_free(arr, k);
        return st;
    }
    *items = arr;
    *n = k;
    return PICL_OK;
}

/* ---- shared write steps ----------------------------------------------- */

/* Content-Type of a BSO body: 0 JSON, 1 newlines, -1 unsupported. */
static int body_kind(const srv_http_request *req, int allow_newlines)
{
    const char *ct = srv_http_header(req, "Content-Type");
    if (!ct)
        return 0;
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    if ((n == 16 && !strncasecmp(ct, "application/json", n)) ||
        (n == 10 && !strncasecmp(ct, "text/plain", n)))
        return 0;
    if (allow_newlines && n == 20 && !strncasecmp(ct, "application/newlines", n))
        return 1;
    return -1;
}

/* Checks the quota after the writes of the open transaction; 1 = fine. */
static int quota_ok(sreq *r, sdb_conn *c, picl_status *st, int64_t *usage)
{
    *usage = 0;
    if (!r->s->quota_kb)
        return 1;
    *st = sdb_usage(c, r->uid, r->now, usage);
    if (*st == PICL_OK && *usage > r->s->quota_kb * 1024) {
        /* PiCL undo: the oldest kept versions give way before a write is refused */
        *st = sdb_history_evict(c, r->uid, *usage - r->s->quota_kb * 1024);
        if (*st == PICL_OK)
            *st = sdb_usage(c, r->uid, r->now, usage);
    }
    return *st != PICL_OK || *usage <= r->s->quota_kb * 1024;
}

/* ---- PUT -------------------------------------------------------------- */

void storage__put_item(sreq *r, const char *coll, const char *id)
{
    sdb_bso b;
    memset(&b, 0, sizeof b);
    sdb_conn *c = NULL;
    picl_status st = PICL_OK;
    if (body_kind(r->req, 0) != 0) {
        storage__error(r->resp, 415, 0);
        return;
    }
    /* A BSO is a handful of values: more cannot be one, and is refused
     * before the parser builds them (memory stays a small multiple of the
     * body). */
    int64_t nrec = 0, nval = 0;
    storage__scan_json(r->req->body, r->req->body_len, 0, &nrec, &nval);
    if (nval > STORAGE_MAX_BSO_VALUES) {
        storage__error(r->resp, 400, 8);
        return;
    }
    json_error_t err;
    json_t *doc = json_loadb((const char *)r->req->body, r->req->body_len, JSON_DECODE_ANY, &err);
    if (!doc || !json_is_object(doc)) {
        /* not JSON at all: 6; JSON but not a BSO (a string, a number...): 8 */
        storage__error(r->resp, 400, doc ? 8 : 6);
        json_decref(doc);
        return;
    }
    const char *reason;
    st = storage__parse_bso(doc, &r->s->lim, &b, &reason);
    json_decref(doc);
    if (st == PICL_ERROR_ENCODING) {
        storage__error(r->resp, 400, reason && !strcmp(reason, "payload too large") ? 17 : 8);
        return;
    }
    if (st != PICL_OK) {
        storage__error(r->resp, 500, 0);
        return;
    }
    if (b.id && strcmp(b.id, id)) {
        storage__bso_clear(&b);
        storage__error(r->resp, 400, 8);
        return;
    }
    free(b.id);
    if (!(b.id = strdup(id))) {
        storage__bso_clear(&b);
        storage__error(r->resp, 500, 0);
        return;
    }
    int64_t umod = 0, m = 0, t, usage = 0;
    if ((st = sdb_acquire(r->s->db, &c)) != PICL_OK || (st = sdb_begin_write(c, r->uid, &umod)) != PICL_OK)
        goto done;
    t = umod + 1 > r->now ? umod + 1 : r->now;
    st = sdb_item_modified(c, r->uid, coll, id, r->now, &m);
    if (st == PICL_ERROR_NOT_FOUND)
        st = PICL_OK, m = 0;
    if (st != PICL_OK)
        goto done;
    if (r->has_ius && m > r->ius) {
        sdb_rollback(c);
        storage__error(r->resp, 412, 0);
        storage__set_modified(r, m, umod > r->now ? umod : r->now);
        goto done;
    }
    if ((st = sdb_upsert(c, r->uid, coll, &b, t, r->now)) != PICL_OK ||
        (st = sdb_touch(c, r->uid, coll, t)) != PICL_OK)
        goto done;
    if (!quota_ok(r, c, &st, &usage)) {
        sdb_rollback(c);
        storage__error(r->resp, 400, 14);
        goto done;
    }
    if (st != PICL_OK || (st = sdb_commit(c)) != PICL_OK)
        goto done;
    char ts[32];
    picl__synctime_format(ts, t);
    srv_http_respond(r->resp, 200, "application/json", ts, strlen(ts));
    storage__set_modified(r, t, t);
    storage__set_quota_header(r, usage);
done:
    if (st != PICL_OK)
        storage__db_error(r, st);
    storage__bso_clear(&b);
    sdb_release(r->s->db, c);
}

/* ---- POST ------------------------------------------------------------- */

/* Parses an X-Weave-* count header: -1 absent, -2 malformed, else the value. */
static int64_t count_header(const srv_http_request *req, const char *name)
{
    const char *v = srv_http_header(req, name);
    if (!v)
        return -1;
    size_t n = strlen(v);
    if (!n || n > 15 || strspn(v, "0123456789") != n)
        return -2;
    return strtoll(v, NULL, 10);
}

/* Renders {"modified":T,"success":[..],"failed":{..}} or the 202 form. */
static char *render_post(const char *batch, int64_t t, const sdb_bso *ok, size_t nok, json_t *failed,
                         size_t *len)
{
    srv_buf b;
    srv_buf_init(&b, 0);
    if (batch) {
        srv_buf_puts(&b, "{\"batch\":");
        srv_buf_json_string(&b, batch, strlen(batch));
    } else {
        char ts[32];
        picl__synctime_format(ts, t);
        srv_buf_printf(&b, "{\"modified\":%s", ts);
    }
    srv_buf_puts(&b, ",\"success\":[");
    for (size_t i = 0; i < nok; i++) {
        if (i)
            srv_buf_puts(&b, ",");
        srv_buf_json_string(&b, ok[i].id, strlen(ok[i].id));
    }
    srv_buf_puts(&b, "],\"failed\":");
    char *f = picl__json_dumps(failed, JSON_COMPACT | JSON_SORT_KEYS);
    if (!f)
        b.failed = 1;
    else
        srv_buf_puts(&b, f);
    free(f);
    srv_buf_puts(&b, "}");
    return srv_buf_take(&b, len);
}

/* What one POST carries through its steps. */
typedef struct post_ctx {
    sreq *r;
    const char *coll;
    sdb_bso *items;
    size_t n;
    json_t *failed;
    char *batch, *commit;
    int new_batch;
    char batch_id[SDB_BATCH_ID_LEN + 1];
    int64_t bytes, cmod, t, wts, usage;
    sdb_conn *c;
} post_ctx;

/* Step 1: the batch / commit parameters and the announced sizes.  1 to go
 * on, 0 when answered. */
static int post_params(post_ctx *p)
{
    sreq *r = p->r;
    const storage_limits *lim = &r->s->lim;
    picl_status bq = srv_http_query(r->req, "batch", &p->batch);
    picl_status cq = srv_http_query(r->req, "commit", &p->commit);
    const char *batch = p->batch, *commit = p->commit;
    if ((bq != PICL_OK && bq != PICL_ERROR_NOT_FOUND) || (cq != PICL_OK && cq != PICL_ERROR_NOT_FOUND) ||
        (batch && !batch[0]) || (commit && strcmp(commit, "true")) || (commit && !batch)) {
        storage__error(r->resp, 400, 1);
        return 0;
    }
    p->new_batch = batch && !strcmp(batch, "true");
    if (batch && !p->new_batch &&
        (strlen(batch) != SDB_BATCH_ID_LEN ||
         strspn(batch, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") !=
             SDB_BATCH_ID_LEN)) {
        storage__error(r->resp, 400, 1);
        return 0;
    }
    int64_t hr = count_header(r->req, "X-Weave-Records");
    int64_t hb = count_header(r->req, "X-Weave-Bytes");
    int64_t htr = count_header(r->req, "X-Weave-Total-Records");
    int64_t htb = count_header(r->req, "X-Weave-Total-Bytes");
    if (hr == -2 || hb == -2 || htr == -2 || htb == -2 || (!batch && (htr != -1 || htb != -1))) {
        storage__error(r->resp, 400, 1);
        return 0;
    }
    if (hr > lim->max_post_records || hb > lim->max_post_bytes || htr > lim->max_total_records ||
        htb > lim->max_total_bytes) {
        storage__error(r->resp, 400, 17);
        return 0;
    }
    return 1;
}

/* Step 2: the body, counted before it is parsed, so that a request never
 * costs more memory than a small multiple of its size (storage.md 5), then
 * parsed into items and failed.  1 to go on, 0 when answered (*st set when
 * the answer is a failure of the server). */
static int post_body(post_ctx *p, int kind, picl_status *st)
{
    sreq *r = p->r;
    const storage_limits *lim = &r->s->lim;
    int64_t nrec = 0, nval = 0;
    storage__scan_json(r->req->body, r->req->body_len, kind == 1, &nrec, &nval);
    if (nrec > lim->max_post_records || nval > (lim->max_post_records + 1) * STORAGE_MAX_BSO_VALUES) {
        storage__error(r->resp, 400, 17);
        return 0;
    }
    *st = storage__parse_bsos(r->req->body, r->req->body_len, kind == 1, lim, &p->items, &p->n, p->failed);
    if (*st == PICL_ERROR_ENCODING || *st == PICL_ERROR_INVALID_ARGUMENT) {
        /* not JSON at all: 6; JSON but not a list of BSOs: 8 */
        storage__error(r->resp, 400, *st == PICL_ERROR_ENCODING ? 6 : 8);
        *st = PICL_OK;
        return 0;
    }
    if (*st != PICL_OK) {
        storage__error(r->resp, 500, 0);
        return 0;
    }
    for (size_t i = 0; i < p->n; i++)
        p->bytes += (int64_t)p->items[i].payload_len;
    if ((int64_t)(p->n + json_object_size(p->failed)) > lim->max_post_records ||
        p->bytes > lim->max_post_bytes) {
        storage__error(r->resp, 400, 17);
        return 0;
    }
    return 1;
}

/* Step 3: the user's write lock, the new timestamp, and
 * X-If-Unmodified-Since against the collection.  1 to go on. */
static int post_begin(post_ctx *p, picl_status *st)
{
    sreq *r = p->r;
    int64_t umod = 0;
    if ((*st = sdb_acquire(r->s->db, &p->c)) != PICL_OK ||
        (*st = sdb_begin_write(p->c, r->uid, &umod)) != PICL_OK)
        return 0;
    p->t = umod + 1 > r->now ? umod + 1 : r->now;
    p->wts = umod > r->now ? umod : r->now;
    *st = sdb_coll_modified(p->c, r->uid, p->coll, &p->cmod);
    if (*st == PICL_ERROR_NOT_FOUND)
        *st = PICL_OK, p->cmod = 0;
    if (*st != PICL_OK)
        return 0;
    if (r->has_ius && p->cmod > r->ius) {
        sdb_rollback(p->c);
        storage__error(r->resp, 412, 0);
        storage__set_modified(r, p->cmod, p->wts);
        return 0;
    }
    return 1;
}

/* Step 4a: a batch is opened or added to (the open batch's size checked),
 * and answered 202; or, with commit, applied.  1 to go on to the commit. */
static int post_batch(post_ctx *p, picl_status *st)
{
    sreq *r = p->r;
    const storage_limits *lim = &r->s->lim;
    int64_t brec = 0, bbytes = 0;
    if (p->new_batch) {
        int64_t open = 0;
        if ((*st = sdb_batch_count(p->c, r->uid, r->now, &open)) != PICL_OK)
            return 0;
        if (open >= r->s->max_open_batches) {
            sdb_rollback(p->c);
            storage__error(r->resp, 400, 17);
            return 0;
        }
        *st = sdb_batch_create(p->c, r->uid, p->coll, r->now + r->s->batch_ttl_s * 100, p->batch_id);
    } else {
        snprintf(p->batch_id, sizeof p->batch_id, "%s", p->batch);
        *st = sdb_batch_check(p->c, p->batch_id, r->uid, p->coll, r->now, &brec, &bbytes);
        if (*st == PICL_ERROR_NOT_FOUND) {
            *st = PICL_OK;
            sdb_rollback(p->c);
            storage__error(r->resp, 400, 1);
            return 0;
        }
    }
    for (size_t i = 0; i < p->n && *st == PICL_OK; i++)
        *st = sdb_batch_add(p->c, p->batch_id, &p->items[i]);
    if (*st == PICL_OK && !p->new_batch)
        *st = sdb_batch_check(p->c, p->batch_id, r->uid, p->coll, r->now, &brec, &bbytes);
    else if (*st == PICL_OK)
        brec = (int64_t)p->n, bbytes = p->bytes;
    if (*st != PICL_OK)
        return 0;
    if (brec > lim->max_total_records || bbytes > lim->max_total_bytes) {
        sdb_rollback(p->c);
        storage__error(r->resp, 400, 17);
        return 0;
    }
    if (p->commit)
        return (*st = sdb_batch_apply(p->c, p->batch_id, r->uid, p->coll, p->t, r->now)) == PICL_OK &&
               (*st = sdb_touch(p->c, r->uid, p->coll, p->t)) == PICL_OK;
    /* what an open batch holds counts toward the quota */
    if (!quota_ok(r, p->c, st, &p->usage)) {
        sdb_rollback(p->c);
        storage__error(r->resp, 400, 14);
        return 0;
    }
    if (*st != PICL_OK || (*st = sdb_commit(p->c)) != PICL_OK)
        return 0;
    size_t len;
    char *body = render_post(p->batch_id, 0, p->items, p->n, p->failed, &len);
    if (!body) {
        storage__error(r->resp, 500, 0);
        return 0;
    }
    srv_http_respond_owned(r->resp, 202, "application/json", body, len);
    storage__set_modified(r, p->cmod, p->wts);
    storage__set_quota_header(r, p->usage);
    return 0;
}

/* Step 4b: the items written at once.  1 to go on. */
static int post_direct(post_ctx *p, picl_status *st)
{
    sdb_upserter u;
    *st = sdb_upserter_init(p->c, &u);
    for (size_t i = 0; i < p->n && *st == PICL_OK; i++)
        *st = sdb_upserter_run(&u, p->r->uid, p->coll, &p->items[i], p->t, p->r->now);
    if (*st == PICL_OK)
        *st = sdb_upserter_flush(&u);
    sdb_upserter_done(&u);
    if (*st == PICL_OK)
        *st = sdb_touch(p->c, p->r->uid, p->coll, p->t);
    return *st == PICL_OK;
}

/* Step 5: the quota, the commit, the answer. */
static void post_finish(post_ctx *p, picl_status *st)
{
    sreq *r = p->r;
    if (sdb_in_tx(p->c)) {
        if (!quota_ok(r, p->c, st, &p->usage)) {
            sdb_rollback(p->c);
            storage__error(r->resp, 400, 14);
            return;
        }
        if (*st != PICL_OK || (*st = sdb_commit(p->c)) != PICL_OK)
            return;
    }
    size_t len;
    char *body = render_post(NULL, p->t, p->items, p->n, p->failed, &len);
    if (!body) {
        storage__error(r->resp, 500, 0);
        return;
    }
    srv_http_respond_owned(r->resp, 200, "application/json", body, len);
    storage__set_modified(r, p->t, p->t > p->wts ? p->t : p->wts);
    storage__set_quota_header(r, p->usage);
}

void storage__post_coll(sreq *r, const char *coll)
{
    post_ctx p;
    memset(&p, 0, sizeof p);
    p.r = r;
    p.coll = coll;
    picl_status st = PICL_OK;
    if (!(p.failed = json_object())) {
        storage__error(r->resp, 500, 0);
        return;
    }
    int kind = body_kind(r->req, 1);
    if (kind < 0) {
        storage__error(r->resp, 415, 0);
        goto out;
    }
    if (!post_params(&p) || !post_body(&p, kind, &st) || !post_begin(&p, &st))
        goto out;
    if (p.batch) {
        if (!post_batch(&p, &st))
            goto out;
    } else if (p.n) {
        if (!post_direct(&p, &st))
            goto out;
    } else {
        /* Nothing to write: answer the current state, change nothing. */
        sdb_rollback(p.c);
        p.t = p.cmod;
    }
    post_finish(&p, &st);
out:
    if (st != PICL_OK)
        storage__db_error(r, st);
    sdb_release(r->s->db, p.c);
    storage__bsos_free(p.items, p.n);
    json_decref(p.failed);
    free(p.batch);
    free(p.commit);
}
