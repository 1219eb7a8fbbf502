/* Named op parameters: the definition lists them, trr_op_run checks names and values against it, defaults fill
 * what is left out, the parser takes the CLI's text, and a named epilogue computes what trr_matmul's does. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "cli_child.h"
#include "test_support.h"

static trr_context *ctx;
static trr_buffer *buf;

static void setup(void) {
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, 4096, &buf), TRR_OK);
}
static void teardown(void) {
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}
TestSuite(op_params, .init = setup, .fini = teardown);

static void expect_error(trr_status st, trr_status want, const char *text) {
    cr_assert_eq(st, want, "status %s, want %s: %s", trr_status_name(st), trr_status_name(want), trr_last_error(ctx));
    cr_assert(strstr(trr_last_error(ctx), text), "'%s' does not say '%s'", trr_last_error(ctx), text);
}

Test(op_params, matmul_declares_its_parameters) {
    trr_op_info info;
    cr_assert_eq(trr_op_get_info(TRR_OP_MATMUL, &info), TRR_OK);
    cr_assert_eq(info.n_params, 5);
    const char *names[5] = {"epilogue", "alpha", "allow_tf32", "scale_a", "scale_b"};
    const trr_param_type types[5] = {TRR_PARAM_ENUM, TRR_PARAM_F32, TRR_PARAM_BOOL, TRR_PARAM_F32, TRR_PARAM_F32};
    for (int i = 0; i < 5; i++) {
        trr_param_info p;
        cr_assert_eq(trr_op_get_param(TRR_OP_MATMUL, i, &p), TRR_OK);
        cr_expect_str_eq(p.name, names[i]);
        cr_expect_eq(p.type, types[i]);
        cr_expect(p.doc && *p.doc);
    }
    trr_param_info p;
    cr_expect_eq(trr_op_get_param(TRR_OP_MATMUL, 5, &p), TRR_ERR_INVALID_ARGUMENT);
    cr_expect_eq(trr_op_get_param(TRR_OP_MATMUL, 3, &p), TRR_OK);
    cr_expect_eq(p.default_value, 1.0); /* scale_a */
    cr_expect_eq(trr_op_get_param(TRR_OP_MATMUL, 1, &p), TRR_OK);
    cr_expect_eq(p.default_value, (double)TRR_LEAKY_RELU_DEFAULT_ALPHA);
    cr_assert_eq(trr_op_get_info(TRR_OP_SOFTMAX, &info), TRR_OK);
    cr_expect_eq(info.n_params, 0);
    cr_expect_eq(trr_op_get_param(TRR_OP_SOFTMAX, 0, &p), TRR_ERR_INVALID_ARGUMENT);
}

/* Every bad class: unknown name, a name the op lacks, a value outside its type, a repeated name, a bad count. */
Test(op_params, bad_parameters_are_argument_errors) {
    trr_tensor a, b, c, x, y;
    cr_assert_eq(trr_tensor_2d(buf, 0, TRR_F32, 4, 4, 0, &a), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 64, TRR_F32, 4, 4, 0, &b), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 128, TRR_F32, 4, 4, 0, &c), TRR_OK);
    x = a, y = c;
    const trr_tensor *mm[] = {&a, &b, &c}, *sm[] = {&x, &y};
    trr_op_params p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(trr_op_params_set(&p, "eps", 1e-5), TRR_OK);
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, mm, &p), TRR_ERR_INVALID_ARGUMENT,
                 "matmul has no parameter 'eps' (its parameters: epilogue, alpha, allow_tf32, scale_a, scale_b)");
    memset(&p, 0, sizeof p);
    trr_op_params_set(&p, "epilogue", 1);
    expect_error(trr_op_run(ctx, TRR_OP_SOFTMAX, sm, &p), TRR_ERR_INVALID_ARGUMENT,
                 "softmax has no parameter 'epilogue' (its parameters: none)");
    memset(&p, 0, sizeof p);
    trr_op_params_set(&p, "epilogue", TRR_EPI_COUNT);
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, mm, &p), TRR_ERR_INVALID_ARGUMENT, "not one of its choices");
    memset(&p, 0, sizeof p);
    trr_op_params_set(&p, "epilogue", 1.5);
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, mm, &p), TRR_ERR_INVALID_ARGUMENT, "not one of its choices");
    memset(&p, 0, sizeof p);
    trr_op_params_set(&p, "allow_tf32", 2);
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, mm, &p), TRR_ERR_INVALID_ARGUMENT, "is a bool");
    memset(&p, 0, sizeof p);
    trr_op_params_set(&p, "alpha", NAN);
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, mm, &p), TRR_ERR_INVALID_ARGUMENT, "not a finite f32");
    memset(&p, 0, sizeof p);
    trr_op_params_set(&p, "alpha", 1e39);
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, mm, &p), TRR_ERR_INVALID_ARGUMENT, "not a finite f32");
    trr_op_params twice = {2, {{"alpha", 0.5}, {"alpha", 0.25}}};
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, mm, &twice), TRR_ERR_INVALID_ARGUMENT, "'alpha' given twice");
    trr_op_params unnamed = {1, {{NULL, 0.5}}};
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, mm, &unnamed), TRR_ERR_INVALID_ARGUMENT, "has no name");
    trr_op_params count = {TRR_MAX_OP_PARAMS + 1, {{NULL, 0}}};
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, mm, &count), TRR_ERR_INVALID_ARGUMENT, "outside [0, 8]");
    /* set: replaces a name already there, refuses past the room */
    memset(&p, 0, sizeof p);
    cr_assert_eq(trr_op_params_set(&p, "alpha", 0.5), TRR_OK);
    cr_assert_eq(trr_op_params_set(&p, "alpha", 0.25), TRR_OK);
    cr_expect_eq(p.count, 1);
    cr_expect_eq(p.values[0].value, 0.25);
    static const char *many[TRR_MAX_OP_PARAMS] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    memset(&p, 0, sizeof p);
    for (int i = 0; i < TRR_MAX_OP_PARAMS; i++) cr_assert_eq(trr_op_params_set(&p, many[i], i), TRR_OK);
    cr_expect_eq(trr_op_params_set(&p, "i", 0), TRR_ERR_INVALID_ARGUMENT);
}

Test(op_params, parse_takes_names_bools_and_numbers) {
    trr_op_params p;
    cr_assert_eq(trr_op_params_parse(TRR_OP_MATMUL, "epilogue=leaky_relu,alpha=0.2,allow_tf32=true", &p), TRR_OK,
                 "%s", trr_last_error(NULL));
    cr_assert_eq(p.count, 3);
    cr_expect_str_eq(p.values[0].name, "epilogue");
    cr_expect_eq(p.values[0].value, (double)TRR_EPI_LEAKY_RELU);
    cr_expect_eq(p.values[1].value, 0.2);
    cr_expect_eq(p.values[2].value, 1.0);
    cr_assert_eq(trr_op_params_parse(TRR_OP_MATMUL, "epilogue=3,allow_tf32=0", &p), TRR_OK);
    cr_expect_eq(p.values[0].value, 3.0);
    cr_assert_eq(trr_op_params_parse(TRR_OP_MATMUL, "", &p), TRR_OK);
    cr_expect_eq(p.count, 0);
    const char *bad[] = {"eps=1e-6", "epilogue=swish", "alpha=", "alpha", "alpha=0.1x", "allow_tf32=yes",
                         "alpha=inf", "epilogue=relu,,alpha=1", "alpha=1e400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(trr_op_params_parse(TRR_OP_MATMUL, bad[i], &p), TRR_ERR_INVALID_ARGUMENT, "'%s' accepted", bad[i]);
    cr_expect(strstr(trr_last_error(NULL), "matmul") != NULL, "%s", trr_last_error(NULL));
}

/* Named parameters and trr_matmul's arguments reach the kernel alike; left out, each takes its default. */
Test(op_params, named_epilogue_computes_as_trr_matmul) {
    enum { N = 8 };
    float host[N * N];
    for (int i = 0; i < N * N; i++) host[i] = (float)((i * 7) % 13) - 6.0f;
    cr_assert_eq(trr_buffer_write(ctx, buf, 0, host, sizeof host), TRR_OK);
    trr_tensor a, b, c1, c2;
    cr_assert_eq(trr_tensor_2d(buf, 0, TRR_F32, N, N, 0, &a), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 0, TRR_F32, N, N, 0, &b), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 1024, TRR_F32, N, N, 0, &c1), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 2048, TRR_F32, N, N, 0, &c2), TRR_OK);
    const trr_tensor *ops[] = {&a, &b, &c2};
    float r1[N * N], r2[N * N];
    /* the default slope: leaky_relu named without alpha equals trr_matmul with TRR_LEAKY_RELU_DEFAULT_ALPHA */
    cr_assert_eq(trr_matmul(ctx, &a, &b, &c1, TRR_EPI_LEAKY_RELU, TRR_LEAKY_RELU_DEFAULT_ALPHA, 0), TRR_OK);
    trr_op_params p;
    cr_assert_eq(trr_op_params_parse(TRR_OP_MATMUL, "epilogue=leaky_relu", &p), TRR_OK);
    cr_assert_eq(trr_op_run(ctx, TRR_OP_MATMUL, ops, &p), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_read(ctx, buf, 1024, r1, sizeof r1), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, buf, 2048, r2, sizeof r2), TRR_OK);
    int negative = 0;
    for (int i = 0; i < N * N; i++) {
        cr_assert(r1[i] == r2[i], "element %d: %g vs %g", i, (double)r1[i], (double)r2[i]);
        negative += r1[i] < 0;
    }
    cr_assert_gt(negative, 0, "no negative output: the slope was not exercised");
    /* another slope, named */
    cr_assert_eq(trr_matmul(ctx, &a, &b, &c1, TRR_EPI_LEAKY_RELU, 0.5f, 0), TRR_OK);
    cr_assert_eq(trr_op_params_parse(TRR_OP_MATMUL, "epilogue=leaky_relu,alpha=0.5", &p), TRR_OK);
    cr_assert_eq(trr_op_run(ctx, TRR_OP_MATMUL, ops, &p), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, buf, 1024, r1, sizeof r1), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, buf, 2048, r2, sizeof r2), TRR_OK);
    for (int i = 0; i < N * N; i++) cr_assert(r1[i] == r2[i], "element %d: %g vs %g", i, (double)r1[i], (double)r2[i]);
    /* NULL params: every default (no epilogue) */
    cr_assert_eq(trr_matmul(ctx, &a, &b, &c1, TRR_EPI_NONE, 0.0f, 0), TRR_OK);
    cr_assert_eq(trr_op_run(ctx, TRR_OP_MATMUL, ops, NULL), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, buf, 1024, r1, sizeof r1), TRR_OK);
    cr_assert_eq(trr_buffer_read(ctx, buf, 2048, r2, sizeof r2), TRR_OK);
    for (int i = 0; i < N * N; i++) cr_assert(r1[i] == r2[i], "element %d: %g vs %g", i, (double)r1[i], (double)r2[i]);
}

/* The CLI takes the same parameters by name and says which ones an op has when a name is wrong. */
Test(op_params, cli_run_takes_named_parameters) {
    const char *ok[] = {"run", "matmul", "--m", "33", "--n", "17", "--k", "9", "--device", "cpu",
                        "--param", "epilogue=leaky_relu", "--param", "alpha=0.25", NULL};
    cli_child *r = cli_child_run(ok);
    cr_assert_eq(r->status, 0, "stdout: %s\nstderr: %s", r->out, r->err);
    cr_expect(strstr(r->out, "check: passed") != NULL, "%s", r->out);
    const char *bad[] = {"run", "matmul", "--m", "8", "--n", "8", "--k", "8", "--device", "cpu",
                         "--param", "eps=1e-6", NULL};
    r = cli_child_run(bad);
    cr_assert_eq(r->status, 2, "stdout: %s\nstderr: %s", r->out, r->err);
    cr_expect(strstr(r->err, "matmul has no parameter 'eps' (its parameters: epilogue, alpha, allow_tf32, scale_a, scale_b)") != NULL,
              "%s", r->err);
    const char *enum_bad[] = {"run", "matmul", "--m", "8", "--n", "8", "--k", "8", "--device", "cpu",
                              "--param", "epilogue=swish", NULL};
    r = cli_child_run(enum_bad);
    cr_assert_eq(r->status, 2, "stdout: %s\nstderr: %s", r->out, r->err);
    cr_expect(strstr(r->err, "none,relu,leaky_relu,gelu") != NULL, "%s", r->err);
}

/* scale_a and scale_b scale 8-bit float inputs; any other dtype takes only their default, 1. An 8-bit float
 * product takes them, and the mixed pairs its signatures list (e5m2 x e4m3), not others (e5m2 x e5m2). */
Test(op_params, scales_are_for_8bit_floats) {
    trr_tensor a, b, c, a8, b8, b5, c16;
    cr_assert_eq(trr_tensor_2d(buf, 0, TRR_F32, 4, 4, 0, &a), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 64, TRR_F32, 4, 4, 0, &b), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 128, TRR_F32, 4, 4, 0, &c), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 256, TRR_F8E4M3, 4, 4, 0, &a8), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 272, TRR_F8E4M3, 4, 4, 0, &b8), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 288, TRR_F8E5M2, 4, 4, 0, &b5), TRR_OK);
    cr_assert_eq(trr_tensor_2d(buf, 320, TRR_F16, 4, 4, 0, &c16), TRR_OK);
    trr_op_params p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(trr_op_params_set(&p, "scale_a", 2.0), TRR_OK);
    const trr_tensor *f32_ops[] = {&a, &b, &c};
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, f32_ops, &p), TRR_ERR_INVALID_ARGUMENT,
                 "scale_a and scale_b scale 8-bit float inputs; f32 inputs take only 1");
    const trr_tensor *f8_ops[] = {&a8, &b8, &c16};
    cr_assert_eq(trr_op_run(ctx, TRR_OP_MATMUL, f8_ops, &p), TRR_OK, "%s", trr_last_error(ctx));
    const trr_tensor *mixed_ops[] = {&b5, &b8, &c16};
    cr_assert_eq(trr_op_run(ctx, TRR_OP_MATMUL, mixed_ops, &p), TRR_OK, "%s", trr_last_error(ctx));
    const trr_tensor *e5_ops[] = {&b5, &b5, &c16};
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, e5_ops, NULL), TRR_ERR_DTYPE, "matmul does not take f8e5m2 -> f16");
    const trr_tensor *bad_mix[] = {&a8, &b, &c16};
    expect_error(trr_op_run(ctx, TRR_OP_MATMUL, bad_mix, NULL), TRR_ERR_DTYPE, "inputs disagree (A is f8e4m3, B is f32)");
}
