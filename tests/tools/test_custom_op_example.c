/* examples/custom_op: the swiglu library through the CLI, as docs/custom-ops.md runs it: its conformance on the
 * CPU, OpenCL and Vulkan (PoCL and lavapipe in CI; a device that is absent is a skip with the reason), and for
 * swiglu and the row op add_rms_norm one short bench and one short tune each (its tile candidates, nothing
 * written). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <string.h>

#include "cli_child.h"
#include "test_support.h"

#ifndef TRR_SWIGLU_LIB
#error "TRR_SWIGLU_LIB must name examples/custom_op's libswiglu.so"
#endif

static void conformance_on(const char *spec) {
    trr_context_destroy(open_device_or_skip(spec, NULL)); /* skips, or fails where required, with the reason */
    const char *args[] = {"conformance", "--ops-lib", TRR_SWIGLU_LIB, "--ops", "swiglu,silu_user,add_rms_norm",
                          "--device", spec, "--quick", NULL};
    cli_child *r = cli_child_run(args);
    CLI_EXPECT(r, 0);
    cr_expect(strstr(r->out, "swiglu f32->f32") && strstr(r->out, "silu_user f32->f32") &&
                  strstr(r->out, "add_rms_norm f32->f32") && strstr(r->out, " 0 failed, 0 unsupported"),
              "%s", r->out);
}

Test(custom_op_example, swiglu_conformance_cpu) { conformance_on("cpu"); }
Test(custom_op_example, swiglu_conformance_opencl) { conformance_on("opencl:0"); }
Test(custom_op_example, swiglu_conformance_vulkan) { conformance_on("vulkan:0"); }

Test(custom_op_example, swiglu_bench_cpu) {
    const char *args[] = {"bench", "--ops-lib", TRR_SWIGLU_LIB, "swiglu", "--device", "cpu", "--sizes", "2^16",
                          "--reps", "5", NULL};
    cli_child *r = cli_child_run(args);
    CLI_EXPECT(r, 0);
    cr_expect(strstr(r->out, "swiglu_f32") && strstr(r->out, "GB/s"), "%s", r->out);
}

Test(custom_op_example, swiglu_tune_cpu) {
    const char *args[] = {"tune", "--ops-lib", TRR_SWIGLU_LIB, "swiglu", "--device", "cpu", "--shapes", "4096",
                          "--reps", "5", "--no-write", NULL};
    cli_child *r = cli_child_run(args);
    CLI_EXPECT(r, 0);
    cr_expect(strstr(r->out, "swiglu f32->f32") && strstr(r->out, "16 timed"), "%s", r->out);
}

/* the row op: rows of 256 at M = 4096, each row's outputs checked against the reference */
Test(custom_op_example, add_rms_norm_bench_cpu) {
    const char *args[] = {"bench", "--ops-lib", TRR_SWIGLU_LIB, "add_rms_norm", "--device", "cpu", "--sizes", "256",
                          "--reps", "5", NULL};
    cli_child *r = cli_child_run(args);
    CLI_EXPECT(r, 0);
    cr_expect(strstr(r->out, "add_rms_norm_f32 4096x256") && strstr(r->out, "GB/s") && strstr(r->out, " 0 failed"),
              "%s", r->out);
}

Test(custom_op_example, add_rms_norm_tune_cpu) {
    const char *args[] = {"tune", "--ops-lib", TRR_SWIGLU_LIB, "add_rms_norm", "--device", "cpu", "--shapes", "64x256",
                          "--reps", "5", "--no-write", NULL};
    cli_child *r = cli_child_run(args);
    CLI_EXPECT(r, 0);
    cr_expect(strstr(r->out, "add_rms_norm f32->f32") && strstr(r->out, "4 timed") && strstr(r->out, "0 failed"),
              "%s", r->out);
}

/* A library that is not there, and --ops naming an op no library defined, are usage errors. */
Test(custom_op_example, a_missing_library_is_a_usage_error) {
    const char *missing[] = {"conformance", "--ops-lib", "/nonexistent/libnothing.so", "--device", "cpu", NULL};
    cli_child *r = cli_child_run(missing);
    CLI_EXPECT(r, 2);
    cr_expect(strstr(r->err, "libnothing.so"), "%s", r->err);
    const char *unknown[] = {"conformance", "--ops", "swiglu", "--device", "cpu", NULL};
    r = cli_child_run(unknown);
    CLI_EXPECT(r, 2);
    cr_expect(strstr(r->err, "'swiglu' is not an op"), "%s", r->err);
}
