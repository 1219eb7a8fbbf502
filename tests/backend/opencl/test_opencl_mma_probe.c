/* The OpenCL tensor-core matmul (variant mma, kernels/opencl/matmul_mma.cl) is chosen by a compile-and-run
 * probe, not by the device's name. Where the probe fails (PoCL: its compiler refuses inline PTX) the device
 * says why, matmul keeps the portable kernel, and a forced mma variant is refused with UNSUPPORTED and the
 * reason; where it passes (NVIDIA) the forced variant passes every f16, bf16 and 8-bit float conformance case
 * and refuses f32.
 * Runs on opencl:0; skipped without an OpenCL device unless TRIREME_REQUIRE_BACKENDS names opencl. */
#include "conformance.h"
#include "half.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static trr_context *open_opencl(void) { return open_device_or_skip("opencl:0", "opencl"); }

/* A matmul of random values (A of dtype ad, B of bd) into a poisoned C of 16-bit dtype cd, with whatever config
 * is in force. */
static trr_status small_matmul(trr_context *ctx, trr_dtype ad, trr_dtype bd, trr_dtype cd, int64_t m, int64_t n,
                               int64_t k, trr_buffer **out_buf, trr_tensor *out_c) {
    const size_t esz = ad == TRR_F16 ? 2 : 1; /* f16, or 8-bit floats on both sides */
    size_t abytes = (size_t)(m * k) * esz, bbytes = (size_t)(k * n) * esz, cbytes = (size_t)(m * n) * 2;
    trr_buffer *buf = NULL;
    cr_assert_eq(trr_buffer_create(ctx, abytes + bbytes + cbytes, &buf), TRR_OK, "%s", trr_last_error(ctx));
    uint8_t *host = malloc(abytes + bbytes);
    cr_assert_not_null(host);
    srand((unsigned)time(NULL));
    for (size_t i = 0; i < (abytes + bbytes) / esz; i++) {
        if (esz == 2) { /* halves in [-2, 2): sign, exponent 14..15, random mantissa */
            const uint16_t h =
                (uint16_t)((rand() & 1 ? 0x8000 : 0) | (rand() & 1 ? 0x3800 : 0x3c00) | (rand() & 0x3ff));
            memcpy(host + 2 * i, &h, 2);
        } else { /* one exponent bit clear: neither format's NaN nor e5m2's infinities */
            host[i] = (uint8_t)(rand() & 0xf7);
        }
    }
    cr_assert_eq(trr_buffer_write(ctx, buf, 0, host, abytes + bbytes), TRR_OK);
    free(host);
    cr_assert_eq(trr_buffer_fill(ctx, buf, abytes + bbytes, cbytes, 0x7e), TRR_OK); /* NaN poison */
    trr_tensor a, b;
    trr_tensor_2d(buf, 0, ad, m, k, 0, &a);
    trr_tensor_2d(buf, abytes, bd, k, n, 0, &b);
    trr_tensor_2d(buf, abytes + bbytes, cd, m, n, 0, out_c);
    *out_buf = buf;
    return trr_matmul(ctx, &a, &b, out_c, TRR_EPI_NONE, 0.0f, 0);
}

static trr_status f16_matmul(trr_context *ctx, int64_t m, int64_t n, int64_t k, trr_buffer **out_buf,
                             trr_tensor *out_c) {
    return small_matmul(ctx, TRR_F16, TRR_F16, TRR_F16, m, n, k, out_buf, out_c);
}

/* The variant a call without a config ran on, and that every output of it was written (no poison left). */
static trr_variant ran_on(trr_context *ctx, trr_buffer *buf, int64_t m, int64_t n, size_t c_at) {
    trr_config last;
    trr_config_last(ctx, &last);
    uint16_t *out = malloc((size_t)(m * n) * 2);
    cr_assert_not_null(out);
    cr_assert_eq(trr_buffer_read(ctx, buf, c_at, out, (size_t)(m * n) * 2), TRR_OK);
    for (int64_t i = 0; i < m * n; i++) cr_assert_neq(out[i], 0x7e7e, "C[%lld] not written", (long long)i);
    free(out);
    return (trr_variant)last.variant;
}

Test(opencl_mma, probe_decides_and_forced_variant_is_refused_or_passes) {
    trr_context *ctx = open_opencl();
    trr_device_info info;
    cr_assert_eq(trr_device_get_info("opencl", 0, &info), TRR_OK, "%s", trr_last_error(NULL));
    const char *says = strstr(info.capabilities, "tensor cores");
    cr_assert_not_null(says, "opencl:0 does not say whether it has tensor cores: %s", info.capabilities);

    const trr_config forced = {.variant = TRR_VARIANT_MMA};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, &forced), TRR_OK);
    if (!info.matrix_units) {
        /* "tensor cores unavailable: <reason>" with a reason */
        cr_assert(strncmp(says, "tensor cores unavailable: ", 26) == 0 && strlen(says) > 26, "%s", says);
        for (int f8 = 0; f8 < 2; f8++) {
            trr_buffer *buf = NULL;
            trr_tensor c;
            trr_status st = f8 ? small_matmul(ctx, TRR_F8E4M3, TRR_F8E5M2, TRR_BF16, 40, 24, 32, &buf, &c)
                               : f16_matmul(ctx, 40, 24, 32, &buf, &c);
            cr_assert_eq(st, TRR_ERR_UNSUPPORTED, "forced mma gave %d: %s", (int)st, trr_last_error(ctx));
            const char *why = trr_last_error(ctx);
            cr_assert(strstr(why, "variant mma") && strstr(why, "unavailable") && strstr(why, info.name), "%s",
                      why);
            trr_buffer_destroy(buf);
        }
    } else {
        trr_conf_options opt = {.seed = (uint64_t)time(NULL), .op_mask = 1u << TRR_OP_MATMUL};
        trr_conf_report *rep = NULL;
        cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
        int ran = 0, ran_f8 = 0;
        for (int i = 0; i < rep->n_results; i++) {
            const trr_conf_result *r = &rep->results[i];
            cr_expect_neq(r->outcome, TRR_CONF_FAIL, "%s (seed %llu): %s", r->name, (unsigned long long)opt.seed,
                          r->message);
            const int empty = r->tcase.m == 0 || r->tcase.n == 0 || r->tcase.k == 0;
            if (r->tcase.in_dtype == TRR_F32 && !empty)
                cr_expect_eq(r->outcome, TRR_CONF_UNSUPPORTED, "mma ran f32 case %s", r->name);
            /* every layout of the 8-bit floats runs here (they are widened to f16 before ldmatrix) */
            if (trr_dtype_is_f8(r->tcase.in_dtype) && !empty)
                cr_expect_eq(r->outcome, TRR_CONF_PASS, "mma did not run 8-bit float case %s", r->name);
            if (r->outcome == TRR_CONF_PASS && r->tcase.in_dtype != TRR_F32) ran++;
            if (r->outcome == TRR_CONF_PASS && trr_dtype_is_f8(r->tcase.in_dtype)) ran_f8++;
        }
        cr_assert_gt(ran, 0, "no f16/bf16 matmul case ran on the mma kernel");
        cr_assert_gt(ran_f8, 0, "no 8-bit float matmul case ran on the mma kernel");
        trr_conformance_free(rep);
    }

    /* without the override the call runs, on whichever kernel the probe allows, and says which; the 8-bit floats
     * alike */
    cr_assert_eq(trr_config_override(ctx, TRR_OP_MATMUL, NULL), TRR_OK);
    const trr_variant want = info.matrix_units ? TRR_VARIANT_MMA : TRR_VARIANT_SIMT;
    trr_buffer *buf = NULL;
    trr_tensor c;
    cr_assert_eq(f16_matmul(ctx, 40, 24, 32, &buf, &c), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(ran_on(ctx, buf, 40, 24, (size_t)(40 * 32 + 32 * 24) * 2), want);
    trr_buffer_destroy(buf);
    cr_assert_eq(small_matmul(ctx, TRR_F8E5M2, TRR_F8E4M3, TRR_BF16, 40, 24, 32, &buf, &c), TRR_OK, "%s",
                 trr_last_error(ctx));
    cr_assert_eq(ran_on(ctx, buf, 40, 24, (size_t)(40 * 32 + 32 * 24)), want);
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}

/* An f16 attention (B 1, Hq 2, Hkv 1, Sq 20, Skv 37, D 64, packed) of random values into a poisoned o. */
static trr_status f16_attention(trr_context *ctx, trr_buffer **out_buf) {
    const int64_t qshape[4] = {1, 2, 20, 64}, kvshape[4] = {1, 1, 37, 64};
    const size_t qbytes = 2 * 20 * 64 * 2, kvbytes = 37 * 64 * 2;
    trr_buffer *buf = NULL;
    cr_assert_eq(trr_buffer_create(ctx, 2 * qbytes + 2 * kvbytes, &buf), TRR_OK, "%s", trr_last_error(ctx));
    uint16_t *host = malloc(qbytes + 2 * kvbytes);
    cr_assert_not_null(host);
    srand((unsigned)time(NULL));
    for (size_t i = 0; i < (qbytes + 2 * kvbytes) / 2; i++)
        host[i] = (uint16_t)((rand() & 1 ? 0x8000 : 0) | (rand() & 1 ? 0x3800 : 0x3c00) | (rand() & 0x3ff));
    cr_assert_eq(trr_buffer_write(ctx, buf, 0, host, qbytes + 2 * kvbytes), TRR_OK);
    free(host);
    cr_assert_eq(trr_buffer_fill(ctx, buf, qbytes + 2 * kvbytes, qbytes, 0x7e), TRR_OK); /* NaN poison */
    trr_tensor q, k, v, o;
    cr_assert_eq(trr_tensor_nd(buf, 0, TRR_F16, 4, qshape, NULL, &q), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, qbytes, TRR_F16, 4, kvshape, NULL, &k), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, qbytes + kvbytes, TRR_F16, 4, kvshape, NULL, &v), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, qbytes + 2 * kvbytes, TRR_F16, 4, qshape, NULL, &o), TRR_OK);
    *out_buf = buf;
    return trr_attention(ctx, &q, &k, &v, &o, NULL, 0.0f, 1);
}

/* Attention's mma variant (kernels/opencl/attention_mma.cl) rides on the same probe: where it fails a forced mma
 * variant is refused with the reason; where it passes the forced variant passes every attention case it takes
 * (f16/bf16 at D 64 and 128) and refuses f32. Without the override the call runs on the kernel the probe allows. */
Test(opencl_mma, attention_forced_variant_is_refused_or_passes) {
    trr_context *ctx = open_opencl();
    trr_device_info info;
    cr_assert_eq(trr_device_get_info("opencl", 0, &info), TRR_OK, "%s", trr_last_error(NULL));
    const trr_config forced = {.variant = TRR_VARIANT_MMA};
    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, &forced), TRR_OK);
    if (!info.matrix_units) {
        trr_buffer *buf = NULL;
        trr_status st = f16_attention(ctx, &buf);
        cr_assert_eq(st, TRR_ERR_UNSUPPORTED, "forced mma gave %d: %s", (int)st, trr_last_error(ctx));
        const char *why = trr_last_error(ctx);
        cr_assert(strstr(why, "variant mma") && strstr(why, "unavailable") && strstr(why, info.name), "%s", why);
        trr_buffer_destroy(buf);
    } else {
        trr_conf_options opt = {.seed = (uint64_t)time(NULL), .op_mask = 1u << TRR_OP_ATTENTION};
        trr_conf_report *rep = NULL;
        cr_assert_eq(trr_conformance_run(ctx, &opt, &rep), TRR_OK, "%s", trr_last_error(ctx));
        int ran = 0;
        for (int i = 0; i < rep->n_results; i++) {
            const trr_conf_result *r = &rep->results[i];
            cr_expect_neq(r->outcome, TRR_CONF_FAIL, "%s (seed %llu): %s", r->name, (unsigned long long)opt.seed,
                          r->message);
            if (r->tcase.in_dtype == TRR_F32)
                cr_expect_eq(r->outcome, TRR_CONF_UNSUPPORTED, "mma ran f32 case %s", r->name);
            if (r->outcome == TRR_CONF_PASS && r->tcase.in_dtype != TRR_F32) ran++;
        }
        cr_assert_gt(ran, 0, "no f16/bf16 attention case ran on the mma kernel");
        trr_conformance_free(rep);
    }

    cr_assert_eq(trr_config_override(ctx, TRR_OP_ATTENTION, NULL), TRR_OK);
    trr_buffer *buf = NULL;
    cr_assert_eq(f16_attention(ctx, &buf), TRR_OK, "%s", trr_last_error(ctx));
    trr_config last;
    trr_config_last(ctx, &last);
    cr_assert_eq(last.variant, info.matrix_units ? TRR_VARIANT_MMA : TRR_VARIANT_SIMT);
    uint16_t out[2 * 20 * 64];
    cr_assert_eq(trr_buffer_read(ctx, buf, (size_t)(2 * 20 * 64 + 2 * 37 * 64) * 2, out, sizeof out), TRR_OK);
    for (int i = 0; i < 2 * 20 * 64; i++) cr_assert_neq(out[i], 0x7e7e, "o[%d] not written", i);
    trr_buffer_destroy(buf);
    trr_context_destroy(ctx);
}
