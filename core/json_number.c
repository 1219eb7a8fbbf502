/* Numbers in the JSON reports (json_number.h). */
#include "json_number.h"

#include <math.h>

void trr_json_add_number(cJSON *obj, const char *key, double v) {
    if (isfinite(v))
        cJSON_AddNumberToObject(obj, key, v);
    else
        cJSON_AddNullToObject(obj, key);
}
