/* SPDX-License-Identifier: MPL-2.0 */
/* fuzz_storage_bsos.c -- libFuzzer target: the storage server's BSO input
 * parsers called directly (no HTTP): storage__scan_json (the limit
 * pre-count) and storage__parse_bsos on a JSON list and on a newlines body,
 * plus storage__parse_bso on a single object (the PUT body).  A refusal is
 * ENCODING or INVALID_ARGUMENT with nothing returned; what is accepted has a
 * valid id, no more records than the pre-count saw, and fields in range;
 * every refused record is named in `failed`. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "storage/storage_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static const storage_limits LIM = {
    .max_request_bytes = 2 * 1024 * 1024 + 4096,
    .max_post_records = 100,
    .max_post_bytes = 2 * 1024 * 1024,
    .max_total_records = 10000,
    .max_total_bytes = 100 * 1024 * 1024,
    .max_record_payload_bytes = 256,
};

static void check_item(const sdb_bso *b)
{
    if (!b->id || !storage__valid_id(b->id, strlen(b->id)))
        __builtin_trap();
    if (b->payload && (int64_t)b->payload_len > LIM.max_record_payload_bytes)
        __builtin_trap();
    if (b->has_ttl && !b->ttl_null && (b->ttl < 1 || b->ttl > 999999999))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    const uint8_t *body = data + 1;
    size_t len = size - 1;

    if (mode == 2) {
        /* a PUT body: one object */
        json_error_t err;
        json_t *o = json_loadb((const char *)body, len, 0, &err);
        if (!o)
            return 0;
        sdb_bso b;
        const char *reason = NULL;
        memset(&b, 0x5a, sizeof b);
        picl_status st = storage__parse_bso(o, &LIM, &b, &reason);
        if (st == PICL_OK) {
            if (b.id)
                check_item(&b);
            storage__bso_clear(&b);
        } else if (st != PICL_ERROR_ENCODING || !reason) {
            __builtin_trap();
        }
        json_decref(o);
        return 0;
    }

    int newlines = mode == 1;
    int64_t records = -1, values = -1;
    int kind = storage__scan_json(body, len, newlines, &records, &values);
    if (kind < -1 || kind > 1 || records < 0 || values < 0)
        __builtin_trap();
    json_t *failed = json_object();
    sdb_bso *items = (sdb_bso *)1;
    size_t n = 99;
    picl_status st = storage__parse_bsos(body, len, newlines, &LIM, &items, &n, failed);
    if (st == PICL_OK) {
        /* the limits are checked on the pre-count: it may not undercount */
        if ((int64_t)n > records || (int64_t)json_object_size(failed) > records)
            __builtin_trap();
        for (size_t i = 0; i < n; i++) {
            check_item(&items[i]);
            for (size_t j = 0; j < i; j++)
                if (!strcmp(items[i].id, items[j].id))
                    __builtin_trap(); /* a repeated id replaces the earlier copy */
        }
        storage__bsos_free(items, n);
    } else if ((st != PICL_ERROR_ENCODING && st != PICL_ERROR_INVALID_ARGUMENT) || items != NULL || n != 0 ||
               (newlines && st != PICL_OK)) {
        __builtin_trap();
    }
    json_decref(failed);
    return 0;
}
