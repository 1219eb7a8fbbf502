/* Split-K forced on OpenCL (core/matmul_split.h; backend_opencl/matmul.c runs the K slices as a batch of the call's
 * kernel, their f32 products in the device's scratch, and matmul_split.cl adds them with the epilogue and the
 * output's rounding): every case of the quick subset passes with 2, 3 and 7 slices (K's rest in a shorter slice of
 * its own, batches matrix by matrix) on the SIMT kernel, and on the tensor-core kernels where the device runs them
 * (else refused with a reason). More slices than a call may have: refused with the reason. Runs on opencl:0;
 * skipped without an OpenCL device unless TRIREME_REQUIRE_BACKENDS names opencl. */
#include "conformance.h"
#include "forced_conformance.h"
#include "matmul_split.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

Test(opencl_matmul_split, forced_slices_pass_the_quick_subset, .timeout = 600) {
    trr_context *ctx = open_device_or_skip("opencl:0", "opencl");
    const trr_variant vs[] = {TRR_VARIANT_SIMT, TRR_VARIANT_MMA, TRR_VARIANT_WGMMA};
    run_forced_splits(ctx, vs, 3);

    trr_tensor a, b, c;
    trr_buffer *buf = forced_matmul_operands(ctx, TRR_F32, 64, 64, 64, &a, &b, &c);
    const trr_config too_many = {.variant = TRR_VARIANT_SIMT, .split_k = TRR_MATMUL_MAX_SPLIT + 1};
    expect_forced_matmul_refused(ctx, &too_many, &a, &b, &c, "split_k must be 1 to 32");
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}
