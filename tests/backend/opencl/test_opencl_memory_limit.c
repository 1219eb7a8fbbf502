/* Device memory limits: an allocation past what the device holds is refused with TRR_ERR_OUT_OF_MEMORY and a
 * message, before a driver gets to fail on first use (PoCL asserts there, ending the process). */
#include "test_support.h"
#include "trireme.h"

#include <criterion/criterion.h>
#include <string.h>

Test(device_memory, opencl_refuses_buffers_past_the_device_memory) {
    trr_context *ctx = open_device_or_skip("opencl:0", "opencl");
    trr_device_info info;
    cr_assert_eq(trr_context_device(ctx, &info), TRR_OK);
    cr_assert_gt(info.global_memory, 0);
    /* buffers of a fifth of the memory (under PoCL's largest allocation; never touched, so nothing is really
     * allocated): the fifth cannot fit */
    const size_t chunk = (size_t)(info.global_memory / 5) + 1;
    trr_buffer *bufs[6] = {0};
    int refused = -1;
    for (int i = 0; i < 6; i++) {
        trr_status st = trr_buffer_create(ctx, chunk, &bufs[i]);
        if (st != TRR_OK) {
            cr_assert_eq(st, TRR_ERR_OUT_OF_MEMORY, "%s", trr_last_error(ctx));
            cr_assert(strstr(trr_last_error(ctx), "bytes"), "%s", trr_last_error(ctx));
            refused = i;
            break;
        }
    }
    cr_assert(refused >= 1 && refused <= 4, "the device's %llu bytes were over-committed (refused at %d)",
              (unsigned long long)info.global_memory, refused);
    /* freeing makes room again */
    for (int i = 0; i < 6; i++)
        if (bufs[i]) trr_buffer_destroy(bufs[i]), bufs[i] = NULL;
    trr_buffer *small = NULL;
    cr_assert_eq(trr_buffer_create(ctx, 1 << 20, &small), TRR_OK, "%s", trr_last_error(ctx));
    trr_buffer_destroy(small);
    trr_context_destroy(ctx);
}
