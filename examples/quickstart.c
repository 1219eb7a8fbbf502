/* C = gelu(A·B) on the device TRIREME_DEVICE names (else the best one), checked against the host. */
#include <trireme.h>

#include <math.h>
#include <stdio.h>

#define CHECK(call)                                                                                            \
    do {                                                                                                       \
        if ((call) != TRR_OK) {                                                                                \
            fprintf(stderr, "%s: %s\n", #call, trr_last_error(ctx));                                           \
            return 1;                                                                                          \
        }                                                                                                      \
    } while (0)

enum { M = 256, N = 192, K = 128 };
static float a[M * K], b[K * N], c[M * N];

static double gelu(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x))); }

int main(void) {
    for (int i = 0; i < M * K; i++) a[i] = (float)(i % 17 - 8) / 16.0f;
    for (int i = 0; i < K * N; i++) b[i] = (float)(i % 13 - 6) / 16.0f;

    trr_context *ctx = NULL;
    CHECK(trr_context_create(NULL, &ctx)); /* NULL: $TRIREME_DEVICE, else "auto" */
    trr_buffer *da, *db, *dc;
    CHECK(trr_buffer_create(ctx, sizeof a, &da));
    CHECK(trr_buffer_create(ctx, sizeof b, &db));
    CHECK(trr_buffer_create(ctx, sizeof c, &dc));
    CHECK(trr_buffer_write(ctx, da, 0, a, sizeof a));
    CHECK(trr_buffer_write(ctx, db, 0, b, sizeof b));

    trr_tensor ta, tb, tc; /* views: buffer, byte offset, dtype, rows, cols, row stride (0: packed) */
    CHECK(trr_tensor_2d(da, 0, TRR_F32, M, K, 0, &ta));
    CHECK(trr_tensor_2d(db, 0, TRR_F32, K, N, 0, &tb));
    CHECK(trr_tensor_2d(dc, 0, TRR_F32, M, N, 0, &tc));
    CHECK(trr_matmul(ctx, &ta, &tb, &tc, TRR_EPI_GELU, 0.0f, 0)); /* queued */
    CHECK(trr_synchronize(ctx));
    CHECK(trr_buffer_read(ctx, dc, 0, c, sizeof c));

    double worst = 0.0; /* largest error, relative to 1 + |expected| */
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double dot = 0.0;
            for (int k = 0; k < K; k++) dot += (double)a[i * K + k] * b[k * N + j];
            double err = fabs(c[i * N + j] - gelu(dot)) / (1.0 + fabs(gelu(dot)));
            if (err > worst) worst = err;
        }
    trr_device_info dev;
    CHECK(trr_context_device(ctx, &dev));
    int ok = worst < 1e-4;
    printf("%s (%s): gelu(A*B) %dx%dx%d f32, C[0][0] = %.6f, max error %.1e: %s\n", dev.spec, dev.name, M, N, K,
           c[0], worst, ok ? "ok" : "MISMATCH");

    trr_buffer_destroy(da);
    trr_buffer_destroy(db);
    trr_buffer_destroy(dc);
    trr_context_destroy(ctx);
    return ok ? 0 : 1;
}
