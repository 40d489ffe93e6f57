/* SPDX-License-Identifier: MPL-2.0 */
/* devices.h -- this device among the others: the clients store (its own
 * Firefox Sync clients record, commands sent to it), the tabs store (its open
 * tabs), and the checks both apply to records of other devices. */
#ifndef PICL_STORES_DEVICES_H
#define PICL_STORES_DEVICES_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "picl.h"
#include "stores/store.h"

/* A device not seen for this long is hidden (Firefox's 21 days). */
#define PICL_DEVICE_STALE_S (21 * 86400)
/* The largest cleartext tabs record uploaded or accepted (bytes of compact
 * JSON): the encrypted BSO stays under the servers' 256 KiB payload limit. */
#define PICL_TABS_RECORD_MAX (180u * 1024u)
/* A device's own clients and tabs records are uploaded again after this
 * long even unchanged (their server copies expire after 21 days). */
#define PICL_DEVICE_REFRESH_S (7 * 86400)
/* The longest URL sent or accepted in a command or a tab. */
#define PICL_URL_MAX 8192

/*
 * The device file STATE_DIR/devices.json, shared by every process of one
 * state directory under an flock() on STATE_DIR/devices.lock:
 *   {"id": this device's id (12 base64url chars, made once),
 *    "name": its name (PICL_DEVICE_NAME when first made, else "PiCL on <host>"),
 *    "uploaded": the own clients record as last uploaded (canonical JSON), "",
 *    "tabsUploaded": the own tabs record as last uploaded, "",
 *    "uploadedAt", "tabsUploadedAt": when (Unix seconds; a week later they
 *                 are uploaded again, see PICL_DEVICE_REFRESH_S),
 *    "handled": [flowID, ...] commands already handled (the newest 1000),
 *    "received": [{"flowID","uri","title","from","fromName","at"}] tabs
 *                 received (the newest 1000)}
 * The id and name are fixed at creation; the rest is changed only under the
 * lock by a read-modify-write, so two syncs racing handle a command once.
 */

/* Loads (creating it when missing) the device file; *out a new reference. */
picl_status picl__devices_load(const char *state_dir, json_t **out, char *err, size_t errlen);

/* The lock around a read-modify-write of the device file: *fd >= 0 holds
 * it (blocking flock); unlock closes it.  save writes it atomically (0600). */
picl_status picl__devices_lock(const char *state_dir, int *fd);
void picl__devices_unlock(int fd);
picl_status picl__devices_save(const char *state_dir, const json_t *devices);
/* As picl__devices_load, with the lock already held by the caller. */
picl_status picl__devices_read(const char *state_dir, json_t **out, char *err, size_t errlen);

/* ---- the clients store ------------------------------------------------------
 * changes()/all() give this device's record {id, name, type: "desktop",
 * version, protocols: ["1.5"], os, commands: []} (changes() only when it
 * differs from what was last uploaded).  apply() looks at this device's own
 * record as it comes back from the server: each command in it is checked
 * (picl__clients_check_command), a displayURI seen for the first time is
 * added to "received", anything else is refused with a reason and never
 * acted on; then the own record must go up again without the commands
 * (picl__clients_pending()).  Records of other devices are not kept (the
 * device list is read from the server when asked for).  Nothing in the
 * profile is touched. */
picl_status picl__clients_open(picl_store **out, const char *state_dir, char *err, size_t errlen);

/* For a clients store, what its apply() did since it was opened:
 * {"received": [...], "rejected": [{"command","reason"}]} (new reference);
 * NULL for any other store. */
json_t *picl__clients_report(picl_store *s);

/* 1 when the clients store handled commands and its own record must be
 * uploaded again (the caller syncs the collection once more). */
int picl__clients_pending(picl_store *s);

/* Checks one command object of a clients record: only {"command":
 * "displayURI", "args": [uri, senderId, title], "flowID"?} with an http(s)
 * URI of at most PICL_URL_MAX bytes and string args is accepted.
 * PICL_OK, or PICL_ERROR_UNSUPPORTED (an unknown command) /
 * PICL_ERROR_INVALID_ARGUMENT (malformed) with a reason in why. */
picl_status picl__clients_check_command(const json_t *cmd, char *why, size_t n);

/* 1 when url is http:// or https://, at most PICL_URL_MAX bytes, without
 * control characters or spaces. */
int picl__url_ok(const char *url);

/* ---- the tabs store ---------------------------------------------------------
 * The own record {id, clientName, tabs: [{title, urlHistory, icon,
 * lastUsed}]} built from the profile's session store
 * (sessionstore-backups/recovery.jsonlz4, else sessionstore.jsonlz4, both
 * mozLz4); the tabs most recently used first, as many as fit in
 * PICL_TABS_RECORD_MAX.  A session file that is corrupt is an error naming
 * it (PICL_ERROR_ENCODING), nothing is uploaded.  Records of other devices
 * are not kept; apply() changes nothing. */
picl_status picl__tabs_open(picl_store **out, const char *profile_dir, const char *state_dir, char *err,
                            size_t errlen);

/* The open tabs of a session (the decompressed JSON text of a session
 * file): [{title, urlHistory, icon, lastUsed}] most recent first, only
 * http(s) pages, trimmed so {id, clientName, tabs} stays within
 * PICL_TABS_RECORD_MAX.  PICL_ERROR_ENCODING when it is not a session. */
picl_status picl__tabs_from_session(const char *json_text, size_t len, json_t **tabs);

/* Checks a tabs record of another device: object, string id, tabs an array
 * of objects with a urlHistory of strings, compact size <= PICL_TABS_RECORD_MAX.
 * PICL_OK or PICL_ERROR_TOO_LARGE / PICL_ERROR_INVALID_ARGUMENT with why. */
picl_status picl__tabs_check_record(const json_t *rec, char *why, size_t n);

#endif
