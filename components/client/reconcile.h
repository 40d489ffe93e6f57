/* SPDX-License-Identifier: MPL-2.0 */
/* reconcile.h -- step 3 of the sync algorithm (client.md section 3): what to
 * do with one record id given its local change and its incoming version. */
#ifndef PICL_CLIENT_RECONCILE_H
#define PICL_CLIENT_RECONCILE_H

#include <jansson.h>
#include "picl.h"

#define PICL_HISTORY_MAX_VISITS 20

/*
 * local:  the local record or tombstone changed since the last sync, or NULL
 *         when the id did not change locally;
 * remote: the incoming record or tombstone, or NULL when the server has no
 *         newer version.
 * On return *apply is what to write to the local store (NULL: nothing) and
 * *upload what to send to the server (NULL: nothing); both new references.
 *
 * Rules (one side changed: that side wins):
 *   - deletion on one side, edit on the other: the edited record is kept;
 *     both deleted: nothing to do;
 *   - passwords: the later timePasswordChanged wins (tie: the remote one);
 *   - history: the union of visits, deduplicated by (date, type), newest 20,
 *     with the title of the side that has the newest visit;
 *   - bookmarks: the remote item's fields, children of a folder from both
 *     sides (remote order first, then local-only ids), tags united;
 *   - any other collection: the remote record wins.
 * The result of a merge is applied locally when it differs from the local
 * record and uploaded when it differs from the remote one, so both sides end
 * equal.  Records must be JSON objects with a string "id" (else
 * PICL_ERROR_INVALID_ARGUMENT).
 */
picl_status picl__reconcile(const char *collection, const json_t *local, const json_t *remote, json_t **apply,
                            json_t **upload);

/* 1 when r is a tombstone {"id", "deleted": true}. */
int picl__is_tombstone(const json_t *r);

/* Bookmark roots as Sync ids (never uploaded as children of "places"). */
int picl__bookmark_is_root(const char *id);

#endif
