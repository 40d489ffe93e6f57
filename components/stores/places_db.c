/* SPDX-License-Identifier: MPL-2.0 */
/* places_db.c -- places.sqlite: closing the store, the SQLite helpers and the pages Firefox
 * expects, shared by the bookmarks, history and tag code (see places_int.h). */
#include "stores/places_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/codec.h"
#include "crypto/hash.h"
#include "crypto/nss.h"

/* ---- close ---------------------------------------------------------------- */

/* Here, not in places.c, so that the ops tables of places_bookmarks.c and
 * places_history.c name no function of the file that names them. */
void picl__places_close(picl_store *s)
{
    places *p = (places *)s;
    if (!p)
        return;
    for (size_t i = 0; i < p->ncache; i++)
        sqlite3_finalize(p->cache[i].st);
    p->ncache = 0;
    if (p->db)
        sqlite3_close_v2(p->db);
    picl__profile_close(p->profile);
    json_decref(p->reported);
    if (p->nss)
        picl__nss_release();
    free(p);
}

/* ---- SQLite helpers ------------------------------------------------------ */

picl_status picl__places_dberr(places *p, const char *what)
{
    return picl__store_fail(&p->base, PICL_ERROR_DATABASE, "places.sqlite: %s: %s", what,
                            sqlite3_errmsg(p->db));
}

picl_status picl__places_exec(places *p, const char *sql)
{
    return sqlite3_exec(p->db, sql, NULL, NULL, NULL) == SQLITE_OK ? PICL_OK : picl__places_dberr(p, "exec");
}

picl_status picl__places_prep(places *p, sqlite3_stmt **st, const char *sql)
{
    return sqlite3_prepare_v2(p->db, sql, -1, st, NULL) == SQLITE_OK ? PICL_OK
                                                                     : picl__places_dberr(p, "prepare");
}

picl_status picl__places_done(places *p, sqlite3_stmt *st)
{
    int r = sqlite3_step(st);
    sqlite3_reset(st);
    return r == SQLITE_DONE ? PICL_OK : picl__places_dberr(p, "step");
}

picl_status picl__places_cached(places *p, sqlite3_stmt **st, const char *sql)
{
    *st = NULL;
    for (size_t i = 0; i < p->ncache; i++)
        if (p->cache[i].sql == sql || !strcmp(p->cache[i].sql, sql)) {
            *st = p->cache[i].st;
            return PICL_OK;
        }
    picl_status rc = picl__places_prep(p, st, sql);
    if (rc == PICL_OK && p->ncache < PLACES_STMT_CACHE) {
        p->cache[p->ncache].sql = sqlite3_sql(*st); /* owned by the statement: outlives the caller's text */
        p->cache[p->ncache].st = *st;
        p->ncache++;
    }
    return rc;
}

void picl__places_release(places *p, sqlite3_stmt *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < p->ncache; i++)
        if (p->cache[i].st == st) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            return;
        }
    sqlite3_finalize(st);
}

picl_status picl__places_begin(places *p) { return picl__places_exec(p, "BEGIN IMMEDIATE"); }

picl_status picl__places_end(places *p, picl_status rc)
{
    if (rc == PICL_OK) {
        if (sqlite3_exec(p->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK) {
            picl__places_idle(p);
            return PICL_OK;
        }
        rc = picl__places_dberr(p, "commit");
    }
    sqlite3_exec(p->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_exec(p->db, "DELETE FROM temp.picl_touched", NULL, NULL, NULL);
    picl__places_idle(p);
    return rc;
}

void picl__places_idle(places *p) { sqlite3_db_release_memory(p->db); }

int64_t picl__places_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Runs sql with parameters bound by `types` ('i' int64, 'n' int64 with 0 as
 * NULL, 't' text or NULL);
 * when out is given, *out = the first column of the first row (0 if none). */
static picl_status vq(places *p, int64_t *out, const char *sql, const char *types, va_list ap)
{
    sqlite3_stmt *st = NULL;
    picl_status rc = picl__places_cached(p, &st, sql);
    if (rc != PICL_OK)
        return rc;
    /* a bind that fails (SQLITE_TRANSIENT copies the text: out of memory)
     * would leave the parameter NULL and write a row without it */
    int b = SQLITE_OK;
    for (int i = 0; types[i]; i++) {
        if (types[i] == 'i') {
            int64_t v = va_arg(ap, int64_t);
            if (b == SQLITE_OK)
                b = sqlite3_bind_int64(st, i + 1, v);
        } else if (types[i] == 'n') {
            int64_t v = va_arg(ap, int64_t);
            if (b == SQLITE_OK)
                b = v ? sqlite3_bind_int64(st, i + 1, v) : sqlite3_bind_null(st, i + 1);
        } else {
            const char *s = va_arg(ap, const char *);
            if (b == SQLITE_OK)
                b = s ? sqlite3_bind_text(st, i + 1, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i + 1);
        }
    }
    if (b != SQLITE_OK) {
        picl__places_release(p, st);
        return picl__store_fail(&p->base, b == SQLITE_NOMEM ? PICL_ERROR_NO_MEMORY : PICL_ERROR_DATABASE,
                                "places.sqlite: %s", sqlite3_errstr(b));
    }
    int r = sqlite3_step(st);
    if (out)
        *out = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        rc = picl__store_fail(&p->base, PICL_ERROR_DATABASE, "places.sqlite: %s", sqlite3_errmsg(p->db));
    picl__places_release(p, st);
    return rc;
}

picl_status picl__places_q(places *p, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    picl_status rc = vq(p, NULL, sql, types, ap);
    va_end(ap);
    return rc;
}

picl_status picl__places_q1(places *p, int64_t *out, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    picl_status rc = vq(p, out, sql, types, ap);
    va_end(ap);
    return rc;
}

/* ---- GUIDs, URLs, url_hash ---------------------------------------------- */

picl_status picl__places_new_guid(places *p, char out[PLACES_GUID_LEN + 1])
{
    uint8_t raw[9];
    picl_status rc = picl__random_bytes(raw, sizeof raw);
    if (rc != PICL_OK)
        return picl__store_fail(&p->base, rc, "no random bytes for a GUID");
    picl__base64url_encode(out, raw, sizeof raw, 0);
    out[PLACES_GUID_LEN] = '\0';
    return PICL_OK;
}

int picl__places_valid_guid(const char *s)
{
    if (!s || strlen(s) != PLACES_GUID_LEN)
        return 0;
    for (const char *c = s; *c; c++) {
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' ||
              *c == '_'))
            return 0;
    }
    return 1;
}

int picl__places_valid_url(const char *s)
{
    if (!s)
        return 0;
    size_t n = strlen(s);
    if (n < 2 || n > PLACES_MAX_URL)
        return 0;
    /* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
    size_t i = 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return 0;
    while (s[i] && s[i] != ':') {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
              c == '-' || c == '.'))
            return 0;
        i++;
    }
    if (s[i] != ':' || i > 32)
        return 0;
    for (; i < n; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == ' ')
            return 0;
    }
    return 1;
}

/* mozilla::HashString over bytes: h = GOLDEN * (rotl5(h) ^ b). */
static uint32_t hash_string(const unsigned char *b, size_t n)
{
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = 0x9E3779B9u * (((h << 5) | (h >> 27)) ^ b[i]);
    return h;
}

uint64_t picl__places_url_hash(const char *url, size_t len)
{
    const unsigned char *u = (const unsigned char *)url;
    size_t lim = len < 50 ? len : 50;
    for (size_t i = 0; i < lim; i++) {
        if (u[i] == ':')
            return ((uint64_t)(hash_string(u, i) & 0xFFFF) << 32) + hash_string(u, len);
    }
    return hash_string(u, len);
}

/* Splits url into Places' origin prefix ("https://", "place:") and host[:port]
 * (no userinfo), as get_prefix()/get_host_and_port() do. */
static void split_origin(const char *url, size_t *prefix_len, const char **host, size_t *host_len)
{
    const char *colon = strchr(url, ':');
    size_t pl = colon ? (size_t)(colon - url) + 1 : 0;
    if (colon && colon[1] == '/' && colon[2] == '/')
        pl += 2;
    const char *h = url + pl;
    size_t hl = strcspn(h, "/?#");
    const char *at = memchr(h, '@', hl);
    if (at) {
        hl -= (size_t)(at + 1 - h);
        h = at + 1;
    }
    *prefix_len = pl;
    *host = h;
    *host_len = hl;
}

/* rev_host: the lowercased host without port, reversed, plus "." */
static char *rev_host(const char *host, size_t hl)
{
    size_t n = hl;
    if (n && host[0] == '[') { /* IPv6 literal: keep whole */
        const char *e = memchr(host, ']', hl);
        n = e ? (size_t)(e - host) + 1 : hl;
    } else {
        const char *c = memchr(host, ':', hl);
        if (c)
            n = (size_t)(c - host);
    }
    char *r = malloc(n + 2);
    if (!r)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = host[n - 1 - i];
        r[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
    }
    r[n] = '.';
    r[n + 1] = '\0';
    return r;
}

picl_status picl__places_touch(places *p, int64_t place_id)
{
    sqlite3_stmt *st = NULL;
    picl_status rc =
        picl__places_cached(p, &st, "INSERT OR IGNORE INTO temp.picl_touched(place_id) VALUES (?)");
    if (rc == PICL_OK) {
        sqlite3_bind_int64(st, 1, place_id);
        rc = picl__places_done(p, st);
    }
    picl__places_release(p, st);
    return rc;
}

/* The moz_origins id for url, inserted (frecency -1, recalc) when new, else
 * marked for frecency recalculation.  A lookup, then a one-row UPDATE or
 * INSERT: the single upsert (ON CONFLICT DO UPDATE ... RETURNING) it
 * replaces made SQLite keep a statement journal, a copy of each page it
 * changed in a temporary file, for every page written (issue 15). */
static picl_status origin_id(places *p, const char *url, int64_t *id)
{
    size_t pl, hl;
    const char *host;
    split_origin(url, &pl, &host, &hl);
    sqlite3_stmt *st = NULL;
    picl_status rc = picl__places_cached(
        p, &st, "SELECT id, recalc_frecency FROM moz_origins WHERE prefix = ?1 AND host = ?2");
    if (rc != PICL_OK)
        goto done;
    int r = sqlite3_bind_text(st, 1, url, (int)pl, SQLITE_STATIC);
    if (r == SQLITE_OK)
        r = sqlite3_bind_text(st, 2, host, (int)hl, SQLITE_STATIC);
    if (r == SQLITE_OK)
        r = sqlite3_step(st);
    if (r != SQLITE_ROW && r != SQLITE_DONE) {
        rc = picl__places_dberr(p, "origin");
        goto done;
    }
    int64_t found = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    int marked = r == SQLITE_ROW && sqlite3_column_int64(st, 1) == 1;
    picl__places_release(p, st);
    st = NULL;
    if (found && marked) { /* recalc_frecency = 1 already */
        *id = found;
        goto done;
    }
    if (found) {
        if ((rc = picl__places_cached(p, &st, "UPDATE moz_origins SET recalc_frecency = 1 WHERE id = ?")) !=
            PICL_OK)
            goto done;
        sqlite3_bind_int64(st, 1, found);
        if ((rc = picl__places_done(p, st)) == PICL_OK)
            *id = found;
        goto done;
    }
    if ((rc = picl__places_cached(p, &st,
                                  "INSERT INTO moz_origins(prefix, host, frecency, recalc_frecency, "
                                  "recalc_alt_frecency) VALUES (?1, ?2, -1, 1, 1)")) != PICL_OK)
        goto done;
    sqlite3_bind_text(st, 1, url, (int)pl, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, host, (int)hl, SQLITE_STATIC);
    if ((rc = picl__places_done(p, st)) == PICL_OK)
        *id = sqlite3_last_insert_rowid(p->db);
done:
    picl__places_release(p, st);
    return rc;
}

picl_status picl__places_page(places *p, const char *url, const char *guid, int64_t *id)
{
    size_t len = strlen(url);
    uint64_t h = picl__places_url_hash(url, len);
    sqlite3_stmt *st = NULL;
    char *rh = NULL;
    picl_status rc = picl__places_cached(p, &st, "SELECT id FROM moz_places WHERE url_hash = ? AND url = ?");
    if (rc != PICL_OK)
        return rc;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)h);
    sqlite3_bind_text(st, 2, url, (int)len, SQLITE_STATIC);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        goto done;
    }
    if (r != SQLITE_DONE) {
        rc = picl__places_dberr(p, "page lookup");
        goto done;
    }
    picl__places_release(p, st);
    st = NULL;
    char fresh[PLACES_GUID_LEN + 1];
    if (!guid) {
        if ((rc = picl__places_new_guid(p, fresh)) != PICL_OK)
            goto done;
        guid = fresh;
    }
    int64_t oid = 0;
    if ((rc = origin_id(p, url, &oid)) != PICL_OK)
        goto done;
    size_t pl, hl;
    const char *host;
    split_origin(url, &pl, &host, &hl);
    if (!(rh = rev_host(host, hl))) {
        rc = picl__store_fail(&p->base, PICL_ERROR_NO_MEMORY, "out of memory");
        goto done;
    }
    rc = picl__places_cached(
        p, &st,
        "INSERT INTO moz_places(url, rev_host, hidden, typed, frecency, guid, foreign_count, url_hash, "
        "origin_id, recalc_frecency, recalc_alt_frecency) VALUES (?, ?, 0, 0, -1, ?, 0, ?, ?, 1, 1)");
    if (rc != PICL_OK)
        goto done;
    sqlite3_bind_text(st, 1, url, (int)len, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, rh, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, guid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)h);
    sqlite3_bind_int64(st, 5, oid);
    if ((rc = picl__places_done(p, st)) != PICL_OK)
        goto done;
    *id = sqlite3_last_insert_rowid(p->db);
done:
    picl__places_release(p, st);
    free(rh);
    if (rc == PICL_OK)
        rc = picl__places_touch(p, *id);
    return rc;
}

picl_status picl__places_fix_touched(places *p)
{
    picl_status rc = picl__places_exec(
        p,
        "UPDATE moz_places SET "
        " visit_count = (SELECT count(*) FROM moz_historyvisits v WHERE v.place_id = moz_places.id"
        "                AND v.visit_type NOT IN (0, 4, 7, 8, 9)),"
        " last_visit_date = (SELECT max(visit_date) FROM moz_historyvisits v WHERE v.place_id = "
        "moz_places.id),"
        " foreign_count = (SELECT count(*) FROM moz_bookmarks b WHERE b.fk = moz_places.id)"
        "               + (SELECT count(*) FROM moz_keywords k WHERE k.place_id = moz_places.id),"
        " typed = CASE WHEN EXISTS (SELECT 1 FROM moz_historyvisits v WHERE v.place_id = moz_places.id"
        "                           AND v.visit_type = 2) THEN 1 ELSE typed END,"
        " recalc_frecency = 1, recalc_alt_frecency = 1 "
        "WHERE id IN (SELECT place_id FROM temp.picl_touched);"
        "UPDATE moz_origins SET recalc_frecency = 1, recalc_alt_frecency = 1 "
        "WHERE id IN (SELECT origin_id FROM moz_places WHERE id IN (SELECT place_id FROM temp.picl_touched));"
        /* pages nothing points at any more go, as Places' expiration removes them */
        "DELETE FROM temp.picl_touched WHERE place_id NOT IN (SELECT id FROM moz_places WHERE foreign_count "
        "= 0"
        "  AND last_visit_date IS NULL);"
        "DELETE FROM moz_places_extra WHERE place_id IN (SELECT place_id FROM temp.picl_touched);"
        "DELETE FROM moz_annos WHERE place_id IN (SELECT place_id FROM temp.picl_touched);"
        "DELETE FROM moz_inputhistory WHERE place_id IN (SELECT place_id FROM temp.picl_touched);"
        "DELETE FROM moz_places_metadata WHERE place_id IN (SELECT place_id FROM temp.picl_touched)"
        "  OR referrer_place_id IN (SELECT place_id FROM temp.picl_touched);"
        "DELETE FROM moz_places WHERE id IN (SELECT place_id FROM temp.picl_touched);"
        "DELETE FROM moz_origins WHERE NOT EXISTS (SELECT 1 FROM moz_places WHERE origin_id = "
        "moz_origins.id);"
        "DELETE FROM temp.picl_touched;");
    return rc;
}
