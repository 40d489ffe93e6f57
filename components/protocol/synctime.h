/* SPDX-License-Identifier: MPL-2.0 */
/* synctime.h -- THE parser and formatter of SyncStorage timestamps
 * (seconds with two decimals on the wire, integer centiseconds inside). */
#ifndef PICL_PROTOCOL_SYNCTIME_H
#define PICL_PROTOCOL_SYNCTIME_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "picl_status.h"

/*
 * Wire form (X-Weave-Timestamp, X-Last-Modified, X-If-Modified-Since,
 * X-If-Unmodified-Since, newer=/older=, "modified" of info/collections, the
 * client's lastSync cursor; the same number grammar carries X-Weave-Backoff,
 * Retry-After, X-Weave-Records and X-Weave-Quota-Remaining):
 *
 *     1*12DIGIT [ "." 1*20DIGIT ]
 *
 * Seconds since the epoch, no sign, no exponent, no spaces.  The first two
 * decimals are the centiseconds ("7.5" = 750); further decimals are cut, not
 * rounded (a server that writes microseconds says nothing finer than what we
 * keep).  Twelve integer digits cover year 33 658; a longer number is refused
 * rather than wrapped.
 */
#define PICL_SYNCTIME_MAX_INT_DIGITS 12u
#define PICL_SYNCTIME_MAX_FRAC_DIGITS 20u
/* Bytes the formatter writes at most, NUL included ("9223372036854775.07"). */
#define PICL_SYNCTIME_BUF 24u

/* Parses len bytes of text (no NUL needed; an embedded NUL is refused) into
 * *centis.  PICL_ERROR_ENCODING when text is not of the grammar above, and
 * *centis is then left as it was.  PICL_ERROR_INVALID_ARGUMENT when text or
 * centis is NULL. */
picl_status picl__synctime_parse(const char *text, size_t len, int64_t *centis);

/* Writes centis as "<seconds>.<two decimals>" ("1234.50", "0.07") into out,
 * NUL-terminated; a negative value is written as "0.00".  Always fits. */
void picl__synctime_format(char out[PICL_SYNCTIME_BUF], int64_t centis);

/* A JSON number of seconds (a BSO's "modified", info/collections values,
 * info/configuration's server time) as centis, rounded to the nearest one;
 * dflt when v is NULL, not a number, negative, or not below 10^12 seconds
 * (the text grammar's twelve digits). */
int64_t picl__synctime_from_json(const json_t *v, int64_t dflt);

/* The same for seconds given as a double (the service API's times). */
int64_t picl__synctime_from_seconds(double seconds, int64_t dflt);

#endif
