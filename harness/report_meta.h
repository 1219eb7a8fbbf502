/* What every JSON report says about itself: the tool, its version, the command line, the host, the commit the
 * tool was built from, the date, and the devices' identities. Shared by the bench and conformance reports. */
#ifndef TRR_REPORT_META_H
#define TRR_REPORT_META_H

#include "trireme.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define TRR_COMMAND_LINE_MAX 1024

/* argv joined by spaces after prog ("trireme bench"), each argument with shell metacharacters single-quoted, so
 * the line can be pasted back into a shell; cut (with "...") at cap. */
void trr_report_command_line(const char *prog, int argc, char *const *argv, char *out, size_t cap);
/* Now, UTC, ISO 8601 ("2026-11-23T01:02:03Z"). */
void trr_report_date_now(char *out, size_t cap);
/* `git describe --always --dirty` of the source tree at build time; "" when not built from a git checkout. */
const char *trr_build_commit(void);
/* Adds "tool", "version", "command_line", "host", "commit" (null when unknown), "date" and "device_uuids" (one
 * per device, null where the device has none) to obj. */
void trr_report_add_meta(cJSON *obj, const char *tool, const char *command_line, const char *date,
                         const trr_device_info *const *devices, int n_devices);

#endif
