/* SPDX-License-Identifier: MPL-2.0 */
/* status.c -- picl_strerror(): the text of every picl_status (the messages of status.def). */
#include "picl.h"

static const char *const messages[PICL_STATUS_COUNT_] = {
#define PICL_STATUS_ROW(name, number, exit_code, message, comment) [PICL_##name] = message,
#include "status.def"
#undef PICL_STATUS_ROW
};

const char *picl_strerror(picl_status status)
{
    if ((unsigned)status >= PICL_STATUS_COUNT_ || !messages[status])
        return "unknown error";
    return messages[status];
}
