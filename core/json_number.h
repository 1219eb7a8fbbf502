/* Numbers in the JSON reports (conformance and bench). */
#ifndef TRR_JSON_NUMBER_H
#define TRR_JSON_NUMBER_H

#include <cjson/cJSON.h>

/* JSON has no Inf or NaN, and cJSON would write them as null anyway: writing null on purpose keeps what null
 * means in a report (not finite) documented in one place. */
void trr_json_add_number(cJSON *obj, const char *key, double v);

#endif
