/* `trireme devices`: every compiled-in backend, whether it is available (and why not), and its devices. */
#include "cli.h"

#include <stdio.h>

static void print_help(void) {
    printf("usage: trireme devices\n\n"
           "Lists every backend compiled into this build, whether its driver and a device were found (with the\n"
           "reason when not), and each device with its name, vendor, driver, memory and capabilities. The\n"
           "first column is the spec that selects the device (--device, TRIREME_DEVICE).\n");
}

static void print_device(const trr_device_info *d) {
    printf("  %-10s %s\n", d->spec, d->name);
    printf("             vendor %s, driver %s, %s\n", d->vendor, d->driver, d->is_gpu ? "GPU" : "CPU device");
    printf("             memory %.2f GiB, shared/block %llu KiB, %d compute units, %d threads/block, "
           "subgroup %d\n",
           (double)d->global_memory / (1024.0 * 1024.0 * 1024.0),
           (unsigned long long)(d->shared_memory_per_block / 1024), d->compute_units, d->max_threads_per_block,
           d->subgroup_width);
    printf("             native f16: %s, matrix units: %s%s%s\n", d->native_f16 ? "yes" : "no",
           d->matrix_units ? "yes" : "no", d->capabilities[0] ? "; " : "", d->capabilities);
}

int cmd_devices(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            print_help();
            return CLI_EXIT_OK;
        }
        return cli_usage_error("devices", "unexpected argument '%s'", argv[i]);
    }
    int n = 0;
    trr_status st = trr_backend_count(&n);
    if (st != TRR_OK) {
        fprintf(stderr, "trireme devices: %s\n", trr_last_error(NULL));
        return CLI_EXIT_FAILURE;
    }
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
