/* Device selection: "auto" moves on when the GPU it would choose fails to open, and says so. */
#include "backend.h"
#include "registry.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static trr_status failing_open(trr_context *ctx, int index, void **out_dev) {
    (void)index, (void)out_dev;
    return trr_error(ctx, TRR_ERR_DEVICE, "the driver said no (simulated)");
}

Test(context, auto_moves_on_when_a_gpu_fails_to_open) {
    trr_backend broken = trr_backend_cpu; /* a GPU the registry listed whose open fails */
    broken.name = "cpu";
    broken.open = failing_open;
    trr_device_ref order[2] = {{.backend = &broken, .index = 0}, {.backend = &trr_backend_cpu, .index = 0}};
    snprintf(order[0].name, sizeof order[0].name, "Broken GPU");
    snprintf(order[1].name, sizeof order[1].name, "the CPU");
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_open_first(order, 2, "", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    cr_assert_eq(ctx->backend, &trr_backend_cpu);
    const char *sel = NULL;
    cr_assert_eq(trr_context_selection(ctx, &sel), TRR_OK);
    cr_assert(strstr(sel, "cpu:0 failed to open"), "%s", sel);
    cr_assert(strstr(sel, "simulated"), "the reason is kept: %s", sel);
    /* the context works */
    trr_buffer *b = NULL;
    cr_assert_eq(trr_buffer_create(ctx, 64, &b), TRR_OK);
    trr_buffer_destroy(b);
    trr_context_destroy(ctx);
}

Test(context, auto_reports_the_last_failure_when_nothing_opens) {
    trr_backend broken = trr_backend_cpu;
    broken.open = failing_open;
    trr_device_ref order[1] = {{.backend = &broken, .index = 0}};
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_open_first(order, 1, "", &ctx), TRR_ERR_DEVICE);
    cr_assert_null(ctx);
    cr_assert(strstr(trr_last_error(NULL), "simulated"), "%s", trr_last_error(NULL));
}

Test(context, auto_without_a_failure_names_its_choice) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("auto", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    const char *sel = NULL;
    cr_assert_eq(trr_context_selection(ctx, &sel), TRR_OK);
    cr_assert(strncmp(sel, "auto: chose ", 12) == 0, "%s", sel);
    cr_assert_null(strstr(sel, "failed"), "%s", sel);
    trr_context_destroy(ctx);
}
