/* SPDX-License-Identifier: MPL-2.0 */
/* storage_client_list.h -- a page of a full BSO listing (storage.md: a JSON
 * array of BSO objects) read into (id, modified, payload) without a JSON
 * tree per BSO.  Internal to the storage client. */
#ifndef PICL_CLIENT_STORAGE_CLIENT_LIST_H
#define PICL_CLIENT_STORAGE_CLIENT_LIST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "picl.h"

/* What the client reads of one BSO: exactly what the jansson tree gives
 * (json_string_value of "id" and "payload": NULL when missing or not a
 * string; "modified" through picl__synctime_from_json, -1 when missing or
 * not a number).  The strings are borrowed from the list. */
typedef struct picl_bso_view {
    const char *id;
    const char *payload;
    int64_t modified;
} picl_bso_view;

typedef struct picl_bso_list {
    picl_bso_view *items;
    size_t n;
    json_t *tree; /* the jansson tree the strings point into, or NULL (they
                     point into the body the list was read from) */
} picl_bso_list;

/*
 * Reads body[0..len) (len > 0) as a JSON array.  The usual page -- an array
 * of objects with the members id, modified, payload, sortindex, ttl (each
 * at most once), strings without \u escapes or bytes outside printable
 * ASCII, numbers without sign or exponent -- is read in one pass; its
 * strings are unescaped in place in body, which must outlive the list.
 * Anything else is parsed by jansson (JSON_DECODE_ANY, as
 * picl__stc_parse_json) and read from the tree, so the outcome is the same
 * as the tree's for every input: PICL_ERROR_PROTOCOL when the text is not
 * JSON or not an array, PICL_ERROR_NO_MEMORY.  body NULL: PICL_ERROR_PROTOCOL.
 */
picl_status picl__bso_list_parse(char *body, size_t len, picl_bso_list *out);
/* The same always through the jansson tree (tests and fuzzing compare the
 * two; body is not changed). */
picl_status picl__bso_list_parse_tree(const char *body, size_t len, picl_bso_list *out);
void picl__bso_list_free(picl_bso_list *l);

#endif
