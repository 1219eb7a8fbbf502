/* An op a backend has no kernel for is TRR_ERR_UNSUPPORTED with the reason, decided from its definition (its shape
 * rule, kernel stem and name) in the backend's supports, and nothing is written: never another op's kernel. The
 * tests present each backend with such ops by replacing a definition (trr_op_desc_replace), and check how a
 * kernel source is found to provide an entry (core/kernel_find.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "kernel_find.h"
#include "op_table.h"
#include "test_support.h"

/* A context on backend's first device; NULL (the test skipped) where the backend is not compiled in or has none. */
static trr_context *open_backend(const char *backend) {
    int n = 0, found = 0;
    trr_backend_info bi = {0};
    cr_assert_eq(trr_backend_count(&n), TRR_OK);
    for (int b = 0; b < n && !found; b++) {
        cr_assert_eq(trr_backend_get_info(b, &bi), TRR_OK);
        found = !strcmp(bi.name, backend);
    }
    if (!found) skip_not_compiled_in(backend);
    char spec[40];
    snprintf(spec, sizeof spec, "%s:0", backend);
    return open_device_or_skip(spec, backend);
}

/* Runs op (replaced by *fake) on 1 x 64 f32 operands and expects UNSUPPORTED naming what, with z untouched. */
static void expect_unsupported(const char *backend, trr_op op, const trr_op_desc *fake, const char *what) {
    trr_context *ctx = open_backend(backend);
    const int64_t n = 64;
    trr_buffer *buf = NULL;
    cr_assert_eq(trr_buffer_create(ctx, 3 * (size_t)n * 4, &buf), TRR_OK);
    float host[3 * 64];
    for (int i = 0; i < 3 * n; i++) host[i] = (float)i;
    cr_assert_eq(trr_buffer_write(ctx, buf, 0, host, sizeof host), TRR_OK);
    trr_tensor x, y, z;
    cr_assert_eq(trr_tensor_2d(buf, 0, TRR_F32, 1, n, 0, &x), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, (size_t)n * 4, TRR_F32, 1, n, 0, &y), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 2 * (size_t)n * 4, TRR_F32, 1, n, 0, &z), TRR_OK);
    const trr_tensor *two[] = {&x, &y, &z}, *one[] = {&x, &z};
    trr_op_desc_replace(op, fake);
    const trr_status st = trr_op_run(ctx, op, fake->n_inputs == 2 ? two : one, NULL);
    trr_op_desc_replace(op, NULL);
    cr_expect_eq(st, TRR_ERR_UNSUPPORTED, "%s: status %s: %s", backend, trr_status_name(st), trr_last_error(ctx));
    cr_expect(strstr(trr_last_error(ctx), what) != NULL, "%s: '%s' does not name '%s'", backend,
              trr_last_error(ctx), what);
    float after[64];
    cr_assert_eq(trr_buffer_read(ctx, buf, 2 * (size_t)n * 4, after, sizeof after), TRR_OK);
    cr_expect_eq(memcmp(after, host + 2 * n, sizeof after), 0, "%s wrote the output of an op it refused", backend);
    /* the real definition runs again */
    cr_expect_eq(trr_op_run(ctx, op, op == TRR_OP_ADD ? two : one, NULL), TRR_OK, "%s", trr_last_error(ctx));
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

/* add's definition under a name no kernel has: an element-wise op none of the backends provides */
static void unknown_elementwise(const char *backend) {
    trr_op_desc fake = *trr_op_desc_get(TRR_OP_ADD);
    fake.name = "no_such_op";
    expect_unsupported(backend, TRR_OP_ADD, &fake, "no_such_op");
}

/* softmax's definition with a kernel stem no backend has */
static void unknown_stem(const char *backend) {
    trr_op_desc fake = *trr_op_desc_get(TRR_OP_SOFTMAX);
    fake.kernel = "no_such_stem";
    expect_unsupported(backend, TRR_OP_SOFTMAX, &fake, "no_such_stem");
}

Test(op_unknown_to_backend, cpu_elementwise) { unknown_elementwise("cpu"); }
Test(op_unknown_to_backend, cpu_stem) { unknown_stem("cpu"); }
Test(op_unknown_to_backend, opencl_elementwise) { unknown_elementwise("opencl"); }
Test(op_unknown_to_backend, opencl_stem) { unknown_stem("opencl"); }
Test(op_unknown_to_backend, vulkan_elementwise) { unknown_elementwise("vulkan"); }
Test(op_unknown_to_backend, vulkan_stem) { unknown_stem("vulkan"); }
Test(op_unknown_to_backend, cuda_elementwise) { unknown_elementwise("cuda"); }
Test(op_unknown_to_backend, cuda_stem) { unknown_stem("cuda"); }

Test(op_unknown_to_backend, a_source_provides_its_kernels_and_selected_entries) {
    const char *src = "/* relu( is only named here */\n"
                      "// gelu(x) too\n"
                      "#if defined(ENTRY_add)\n"
                      "#endif\n"
                      "__kernel void rms_norm (int n) {}\n";
    const char *near = "x = ENTRY_addx; y = my_silu(a); z = silu_f(a);\n";
    cr_expect(trr_kernel_text_provides(src, "add"));
    cr_expect(trr_kernel_text_provides(src, "rms_norm"));
    cr_expect_not(trr_kernel_text_provides(src, "relu"), "a comment provides nothing");
    cr_expect_not(trr_kernel_text_provides(src, "gelu"), "a line comment provides nothing");
    cr_expect_not(trr_kernel_text_provides(src, ""));
    cr_expect(trr_kernel_text_provides(near, "addx"));
    cr_expect_not(trr_kernel_text_provides(near, "add"), "part of another identifier is not the entry");
    cr_expect_not(trr_kernel_text_provides(near, "silu"), "part of another identifier is not the entry");
}
