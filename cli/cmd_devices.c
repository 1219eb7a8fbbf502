/* `trireme devices`: every compiled-in backend, whether it is available (and why not), and its devices. */
#include "cli.h"

#include "json_fields.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_help(void) {
    printf("usage: trireme devices [--json]\n\n"
           "Lists every backend compiled into this build, whether its driver and a device were found (with the\n"
           "reason when not), and each device with its name, vendor, driver, memory, identity (UUID, PCI bus id)\n"
           "and capabilities. The first column is the spec that selects the device (--device, TRIREME_DEVICE).\n"
           "  --json   the same as one JSON object on stdout: {\"tool\", \"version\", \"backends\": [{name, available,\n"
           "           reason, devices: [...]}]}\n");
}

static void print_device(const trr_device_info *d) {
    printf("  %-10s %s\n", d->spec, d->name);
    printf("             vendor %s, driver %s, %s\n", d->vendor, d->driver, d->is_gpu ? "GPU" : "CPU device");
    printf("             memory %.2f GiB, shared/block %llu KiB, %d compute units, %d threads/block, "
           "subgroup %d\n",
           (double)d->global_memory / (1024.0 * 1024.0 * 1024.0),
           (unsigned long long)(d->shared_memory_per_block / 1024), d->compute_units, d->max_threads_per_block,
           d->subgroup_width);
    printf("             uuid %s, pci bus id %s\n", d->uuid[0] ? d->uuid : "(none)",
           d->pci_bus_id[0] ? d->pci_bus_id : "(none)");
    printf("             native f16: %s, matrix units: %s%s%s\n", d->native_f16 ? "yes" : "no",
           d->matrix_units ? "yes" : "no", d->capabilities[0] ? "; " : "", d->capabilities);
}

/* Every field of the device as the reports write it, plus what only this listing shows. */
static cJSON *device_json(const trr_device_info *d) {
    cJSON *o = trr_json_device(d);
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "shared_memory_per_block", (double)d->shared_memory_per_block);
    cJSON_AddNumberToObject(o, "max_threads_per_block", d->max_threads_per_block);
    return o;
}

static int list_json(int n) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return CLI_EXIT_FAILURE;
    cJSON_AddStringToObject(root, "tool", "trireme devices");
    cJSON_AddStringToObject(root, "version", TRR_VERSION_STRING);
    cJSON *arr = cJSON_AddArrayToObject(root, "backends");
    int rc = CLI_EXIT_OK;
    for (int b = 0; b < n; b++) {
        trr_backend_info bi;
        if (trr_backend_get_info(b, &bi) != TRR_OK) {
            fprintf(stderr, "trireme devices: backend %d: %s\n", b, trr_last_error(NULL));
            rc = CLI_EXIT_FAILURE;
            continue;
        }
        cJSON *be = cJSON_CreateObject();
        cJSON_AddStringToObject(be, "name", bi.name);
        cJSON_AddBoolToObject(be, "available", bi.available);
        if (bi.available) cJSON_AddNullToObject(be, "reason");
        else cJSON_AddStringToObject(be, "reason", bi.reason);
        cJSON *devs = cJSON_AddArrayToObject(be, "devices");
        for (int d = 0; bi.available && d < bi.device_count; d++) {
            trr_device_info di;
            if (trr_device_get_info(bi.name, d, &di) != TRR_OK) {
                cJSON *err = cJSON_CreateObject();
                char spec[40];
                snprintf(spec, sizeof spec, "%s:%d", bi.name, d);
                cJSON_AddStringToObject(err, "spec", spec);
                cJSON_AddStringToObject(err, "error", trr_last_error(NULL));
                cJSON_AddItemToArray(devs, err);
                continue;
            }
            cJSON_AddItemToArray(devs, device_json(&di));
        }
        cJSON_AddItemToArray(arr, be);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return CLI_EXIT_FAILURE;
    printf("%s\n", text);
    free(text);
    return rc;
}

int cmd_devices(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            print_help();
            return CLI_EXIT_OK;
        }
        if (!strcmp(argv[i], "--json")) {
            json = 1;
            continue;
        }
        return cli_usage_error("devices", "unexpected argument '%s'", argv[i]);
    }
    int n = 0;
    trr_status st = trr_backend_count(&n);
    if (st != TRR_OK) {
        fprintf(stderr, "trireme devices: %s\n", trr_last_error(NULL));
        return CLI_EXIT_FAILURE;
    }
    if (json) return list_json(n);
    int devices = 0;
    for (int b = 0; b < n; b++) {
        trr_backend_info bi;
        st = trr_backend_get_info(b, &bi);
        if (st != TRR_OK) {
            fprintf(stderr, "trireme devices: backend %d: %s\n", b, trr_last_error(NULL));
            return CLI_EXIT_FAILURE;
        }
        if (!bi.available) {
            printf("%s: unavailable: %s\n", bi.name, bi.reason);
            continue;
        }
        printf("%s: available, %d device%s\n", bi.name, bi.device_count, bi.device_count == 1 ? "" : "s");
        for (int d = 0; d < bi.device_count; d++) {
            trr_device_info di;
            if (trr_device_get_info(bi.name, d, &di) != TRR_OK) {
                printf("  %s:%d: %s\n", bi.name, d, trr_last_error(NULL));
                continue;
            }
            print_device(&di);
            devices++;
        }
    }
    if (!devices) printf("no usable device (the cpu backend should always be there: see the reasons above)\n");
    return CLI_EXIT_OK;
}
