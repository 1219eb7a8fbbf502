/* The runtime's own structs and numbers as JSON, one way for every report and file that writes them
 * (conformance and bench reports, the tuning database). */
#ifndef TRR_JSON_FIELDS_H
#define TRR_JSON_FIELDS_H

#include "trireme.h"

#include <cjson/cJSON.h>

/* JSON has no Inf or NaN, and cJSON would write them as null anyway: writing null on purpose keeps what null
 * means in a report (not finite) documented in one place. */
void trr_json_add_number(cJSON *obj, const char *key, double v);

/* New objects (NULL when cJSON runs out of memory). */
cJSON *trr_json_device(const trr_device_info *d);
/* Every field of config_fields.h's table by its name; the variant by name ("auto", "wgmma", ...). */
cJSON *trr_json_config(const trr_config *c);
/* The reverse, for reports read back: fields absent or not numbers (a variant not a known name) read as 0. */
void trr_json_read_config(const cJSON *o, trr_config *out);

#endif
