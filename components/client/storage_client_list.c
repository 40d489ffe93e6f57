/* SPDX-License-Identifier: MPL-2.0 */
/* storage_client_list.c -- a listing page read without a tree per BSO (see
 * storage_client_list.h). */
#include "client/storage_client_list.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/synctime.h"

#define MAX_INT_DIGITS 15  /* no integer jansson could refuse as too big */
#define MAX_FRAC_DIGITS 20 /* fits the number buffer below */

void picl__bso_list_free(picl_bso_list *l)
{
    free(l->items);
    json_decref(l->tree);
    memset(l, 0, sizeof *l);
}

picl_status picl__bso_list_parse_tree(const char *body, size_t len, picl_bso_list *out)
{
    memset(out, 0, sizeof *out);
    if (!body)
        return PICL_ERROR_PROTOCOL;
    json_error_t err;
    json_t *a = json_loadb(body, len, JSON_DECODE_ANY, &err);
    if (!json_is_array(a)) {
        json_decref(a);
        return PICL_ERROR_PROTOCOL;
    }
    size_t n = json_array_size(a), i;
    out->items = malloc((n ? n : 1) * sizeof *out->items);
    if (!out->items) {
        json_decref(a);
        return PICL_ERROR_NO_MEMORY;
    }
    json_t *b;
    json_array_foreach (a, i, b) {
        out->items[i].id = json_string_value(json_object_get(b, "id"));
        out->items[i].payload = json_string_value(json_object_get(b, "payload"));
        out->items[i].modified = picl__synctime_from_json(json_object_get(b, "modified"), -1);
    }
    out->n = n;
    out->tree = a;
    return PICL_OK;
}

/* ---- the one-pass reader ---------------------------------------------------- */

typedef struct span {
    size_t off, len; /* the raw text between the quotes */
    int esc;         /* holds a backslash escape */
    int present;
} span;

typedef struct raw_bso {
    span id, payload;
    int64_t modified;
} raw_bso;

typedef struct cursor {
    const char *s;
    size_t i, n;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->i < c->n &&
           (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\n' || c->s[c->i] == '\r'))
        c->i++;
}

/* A string at c->i (its opening quote) of printable ASCII with the simple
 * escapes only; 0 for anything else. */
static int scan_string(cursor *c, span *sp)
{
    if (c->i >= c->n || c->s[c->i] != '"')
        return 0;
    size_t j = c->i + 1;
    sp->off = j;
    sp->esc = 0;
    while (j < c->n && c->s[j] != '"') {
        unsigned char ch = (unsigned char)c->s[j];
        if (ch < 0x20 || ch > 0x7e)
            return 0;
        if (ch == '\\') {
            if (j + 1 >= c->n || !strchr("\"\\/bfnrt", c->s[j + 1]) || !c->s[j + 1])
                return 0; /* \u and anything odd: the tree decides */
            sp->esc = 1;
            j += 2;
            continue;
        }
        j++;
    }
    if (j >= c->n)
        return 0;
    sp->len = j - sp->off;
    sp->present = 1;
    c->i = j + 1;
    return 1;
}

/* A number without sign or exponent, as jansson reads it, into *seconds;
 * 0 for anything else. */
static int scan_number(cursor *c, double *seconds)
{
    size_t j = c->i, from = j, digits = 0, frac = 0;
    while (j < c->n && c->s[j] >= '0' && c->s[j] <= '9')
        j++, digits++;
    if (!digits || digits > MAX_INT_DIGITS || (digits > 1 && c->s[from] == '0'))
        return 0;
    int real = 0;
    if (j < c->n && c->s[j] == '.') {
        real = 1;
        j++;
        while (j < c->n && c->s[j] >= '0' && c->s[j] <= '9')
            j++, frac++;
        if (!frac || frac > MAX_FRAC_DIGITS)
            return 0;
    }
    if (j < c->n && (c->s[j] == 'e' || c->s[j] == 'E' || c->s[j] == '-' || c->s[j] == '+'))
        return 0;
    char buf[MAX_INT_DIGITS + MAX_FRAC_DIGITS + 4];
    memcpy(buf, c->s + from, j - from);
    buf[j - from] = 0;
    /* an integer is a json_integer (its double value), a real a strtod
     * with the locale's decimal point in place of '.', as jansson does */
    if (real) {
        const char *point = localeconv()->decimal_point;
        char *dot = strchr(buf, '.');
        if (dot && point && *point && *point != '.')
            *dot = *point;
    }
    *seconds = real ? strtod(buf, NULL) : (double)strtoll(buf, NULL, 10);
    c->i = j;
    return 1;
}

enum { M_ID, M_MODIFIED, M_PAYLOAD, M_SORTINDEX, M_TTL, M_N };
static const char *const MEMBERS[M_N] = {"id", "modified", "payload", "sortindex", "ttl"};

/* One BSO object at c->i; 0 when it is not the usual shape. */
static int scan_bso(cursor *c, raw_bso *b)
{
    memset(b, 0, sizeof *b);
    b->modified = -1;
    if (c->i >= c->n || c->s[c->i] != '{')
        return 0;
    c->i++;
    skip_ws(c);
    if (c->i < c->n && c->s[c->i] == '}') {
        c->i++;
        return 1;
    }
    unsigned seen = 0;
    for (;;) {
        span key;
        if (!scan_string(c, &key) || key.esc)
            return 0;
        int m;
        for (m = 0; m < M_N; m++)
            if (strlen(MEMBERS[m]) == key.len && !memcmp(MEMBERS[m], c->s + key.off, key.len))
                break;
        if (m == M_N || (seen & (1u << m)))
            return 0; /* another member, or one twice */
        seen |= 1u << m;
        skip_ws(c);
        if (c->i >= c->n || c->s[c->i] != ':')
            return 0;
        c->i++;
        skip_ws(c);
        double d;
        if (m == M_ID || m == M_PAYLOAD) {
            if (!scan_string(c, m == M_ID ? &b->id : &b->payload))
                return 0;
        } else {
            if (!scan_number(c, &d))
                return 0;
            if (m == M_MODIFIED)
                b->modified = picl__synctime_from_seconds(d, -1);
        }
        skip_ws(c);
        if (c->i < c->n && c->s[c->i] == ',') {
            c->i++;
            skip_ws(c);
            continue;
        }
        if (c->i < c->n && c->s[c->i] == '}') {
            c->i++;
            return 1;
        }
        return 0;
    }
}

/* The raw text of sp, unescaped in place and NUL-terminated (over the
 * closing quote at the latest). */
static const char *settle(char *body, const span *sp)
{
    if (!sp->present)
        return NULL;
    char *s = body + sp->off;
    size_t w = 0;
    if (!sp->esc) {
        w = sp->len;
    } else {
        for (size_t r = 0; r < sp->len; r++) {
            char ch = s[r];
            if (ch == '\\') {
                char e = s[++r];
                ch = e == 'b'   ? '\b'
                     : e == 'f' ? '\f'
                     : e == 'n' ? '\n'
                     : e == 'r' ? '\r'
                     : e == 't' ? '\t'
                                : e;
            }
            s[w++] = ch;
        }
    }
    s[w] = 0;
    return s;
}

/* 1: read (out filled); 0: not the usual shape (nothing changed);
 * -1: no memory. */
static int parse_fast(char *body, size_t len, picl_bso_list *out)
{
    cursor c = {body, 0, len};
    raw_bso *raw = NULL;
    size_t n = 0, cap = 0;
    int r = 0;
    skip_ws(&c);
    if (c.i >= c.n || c.s[c.i] != '[')
        return 0;
    c.i++;
    skip_ws(&c);
    if (c.i < c.n && c.s[c.i] == ']') {
        c.i++;
    } else {
        for (;;) {
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                raw_bso *nr = realloc(raw, ncap * sizeof *nr);
                if (!nr) {
                    r = -1;
                    goto done;
                }
                raw = nr;
                cap = ncap;
            }
            if (!scan_bso(&c, &raw[n]))
                goto done;
            n++;
            skip_ws(&c);
            if (c.i < c.n && c.s[c.i] == ',') {
                c.i++;
                skip_ws(&c);
                continue;
            }
            if (c.i < c.n && c.s[c.i] == ']') {
                c.i++;
                break;
            }
            goto done;
        }
    }
    skip_ws(&c);
    if (c.i != c.n)
        goto done;
    out->items = malloc((n ? n : 1) * sizeof *out->items);
    if (!out->items) {
        r = -1;
        goto done;
    }
    /* the whole text is the usual shape: only now is body changed */
    for (size_t k = 0; k < n; k++) {
        out->items[k].id = settle(body, &raw[k].id);
        out->items[k].payload = settle(body, &raw[k].payload);
        out->items[k].modified = raw[k].modified;
    }
    out->n = n;
    r = 1;
done:
    free(raw);
    return r;
}

picl_status picl__bso_list_parse(char *body, size_t len, picl_bso_list *out)
{
    memset(out, 0, sizeof *out);
    if (!body)
        return PICL_ERROR_PROTOCOL;
    int r = parse_fast(body, len, out);
    if (r < 0)
        return PICL_ERROR_NO_MEMORY;
    return r ? PICL_OK : picl__bso_list_parse_tree(body, len, out);
}
