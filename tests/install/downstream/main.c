/* A program outside the project, built against an installed Trireme: a CPU context, one add, the result. */
#include <stdio.h>
#include <trireme.h>

#define CHECK(call)                                                                                            \
    do {                                                                                                       \
        trr_status st_ = (call);                                                                               \
        if (st_ != TRR_OK) {                                                                                   \
            fprintf(stderr, "downstream: %s failed: %s\n", #call, trr_last_error(ctx));                        \
            return 1;                                                                                          \
        }                                                                                                      \
    } while (0)

int main(void) {
    trr_context *ctx = NULL;
    CHECK(trr_context_create("cpu", &ctx));
    enum { N = 37 };
    float x[N], y[N], z[N];
    for (int i = 0; i < N; i++) {
        x[i] = 0.25f * (float)i - 3.0f;
        y[i] = 1.0f / (float)(i + 1);
        z[i] = -1.0f;
    }
    trr_buffer *bx = NULL, *by = NULL, *bz = NULL;
    CHECK(trr_buffer_create(ctx, sizeof x, &bx));
    CHECK(trr_buffer_create(ctx, sizeof y, &by));
    CHECK(trr_buffer_create(ctx, sizeof z, &bz));
    CHECK(trr_buffer_write(ctx, bx, 0, x, sizeof x));
    CHECK(trr_buffer_write(ctx, by, 0, y, sizeof y));
    trr_tensor tx, ty, tz;
    CHECK(trr_tensor_1d(bx, 0, TRR_F32, N, &tx));
    CHECK(trr_tensor_1d(by, 0, TRR_F32, N, &ty));
    CHECK(trr_tensor_1d(bz, 0, TRR_F32, N, &tz));
    CHECK(trr_add(ctx, &tx, &ty, &tz));
    CHECK(trr_buffer_read(ctx, bz, 0, z, sizeof z));
    for (int i = 0; i < N; i++)
        if (z[i] != x[i] + y[i]) {
            fprintf(stderr, "downstream: z[%d] = %g, expected %g\n", i, (double)z[i], (double)(x[i] + y[i]));
            return 1;
        }
    trr_buffer_destroy(bx);
    trr_buffer_destroy(by);
    trr_buffer_destroy(bz);
    trr_context_destroy(ctx);
    printf("downstream: trireme %s, add of %d elements correct\n", TRR_VERSION_STRING, N);
    return 0;
}
