/* JSON of the runtime's structs (json_fields.h). */
#include "json_fields.h"

#include "config_fields.h"

#include <math.h>
#include <string.h>

void trr_json_add_number(cJSON *obj, const char *key, double v) {
    if (isfinite(v))
        cJSON_AddNumberToObject(obj, key, v);
    else
        cJSON_AddNullToObject(obj, key);
}

cJSON *trr_json_device(const trr_device_info *d) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "spec", d->spec);
    cJSON_AddStringToObject(o, "backend", d->backend);
    trr_json_add_number(o, "index", d->index);
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "vendor", d->vendor);
    cJSON_AddStringToObject(o, "driver", d->driver);
    cJSON_AddBoolToObject(o, "is_gpu", d->is_gpu);
    trr_json_add_number(o, "global_memory", (double)d->global_memory);
    trr_json_add_number(o, "compute_units", d->compute_units);
    trr_json_add_number(o, "subgroup_width", d->subgroup_width);
    cJSON_AddBoolToObject(o, "native_f16", d->native_f16);
    cJSON_AddBoolToObject(o, "matrix_units", d->matrix_units);
    cJSON_AddStringToObject(o, "capabilities", d->capabilities);
    /* "" is not an identity: absent identities are null */
    if (d->uuid[0]) cJSON_AddStringToObject(o, "uuid", d->uuid);
    else cJSON_AddNullToObject(o, "uuid");
    if (d->pci_bus_id[0]) cJSON_AddStringToObject(o, "pci_bus_id", d->pci_bus_id);
    else cJSON_AddNullToObject(o, "pci_bus_id");
    return o;
}

cJSON *trr_json_config(const trr_config *c) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < TRR_CONFIG_FIELD_COUNT; i++) {
        const char *name = trr_config_fields[i].name;
        int v = trr_config_get(c, i);
        const char *variant = NULL;
        int ok = i == TRR_CONFIG_FIELD_VARIANT && trr_variant_name((trr_variant)v, &variant) == TRR_OK
                     ? cJSON_AddStringToObject(o, name, variant) != NULL
                     : cJSON_AddNumberToObject(o, name, v) != NULL;
        if (!ok) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

void trr_json_read_config(const cJSON *o, trr_config *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; cJSON_IsObject(o) && i < TRR_CONFIG_FIELD_COUNT; i++) {
        const cJSON *v = cJSON_GetObjectItem(o, trr_config_fields[i].name);
        trr_variant variant;
        if (cJSON_IsNumber(v)) trr_config_set(out, i, (int)v->valuedouble);
        else if (i == TRR_CONFIG_FIELD_VARIANT && cJSON_IsString(v) &&
                 trr_variant_from_name(v->valuestring, &variant) == TRR_OK)
            trr_config_set(out, i, (int)variant);
    }
}
