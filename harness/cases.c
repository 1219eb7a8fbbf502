/* The case list (cases.h). Sizes follow docs/ops.md, "How the suite chooses inputs": 1, 3, 17, 127, 781, 1000,
 * 1823, 4099 combined so no size is a multiple of a tile, plus a few tile-aligned matmuls and the long rows that
 * force multi-pass softmax and row_sum. The dtypes come from the op table's signatures, so a new signature is
 * tested at once.
 *
 * Cost: the suite must finish in minutes on a 2-core CPU device (PoCL, lavapipe), and the float64 reference
 * runs on that same CPU. Element-wise cases are cheap; matmul dominates, so only three large triples per
 * signature run (each in a different layout) and epilogues run on small shapes only. */
#include "cases.h"
#include "backend.h"

#include "half.h"
#include "op_table.h"

#include <stdio.h>
#include <string.h>

#define MAX_CASES 2048

typedef struct shape2 {
    int64_t rows, cols;
    int quick;
} shape2;

typedef struct shape3 {
    int64_t m, n, k;
    int quick;
} shape3;

typedef struct case_list {
    trr_case items[MAX_CASES];
    int count;
    int overflow;
} case_list;

static case_list g_all;
static case_list g_quick;
static int g_built;

static void push(case_list *l, const trr_case *c) {
    if (l->count >= MAX_CASES) {
        l->overflow = 1;
        return;
    }
    l->items[l->count++] = *c;
}

/* Element-wise ops, rgb_to_grey, softmax and row_sum: the same shape lists in each of their signatures. */
static void add_2d(case_list *l, trr_op op, const shape2 *packed, int n_packed, const shape2 *offset,
                   int n_offset, const shape2 *strided, int n_strided) {
    const trr_op_desc *d = trr_op_desc_get(op);
    for (int s = 0; s < d->n_signatures; s++) {
        trr_case c = {.op = op, .in_dtype = d->signatures[s].in, .out_dtype = d->signatures[s].out};
        const shape2 *lists[TRR_LAYOUT_COUNT] = {packed, offset, strided};
        const int counts[TRR_LAYOUT_COUNT] = {n_packed, n_offset, n_strided};
        for (int lay = 0; lay < TRR_LAYOUT_COUNT; lay++) {
            for (int i = 0; i < counts[lay]; i++) {
                c.layout = (trr_case_layout)lay;
                c.rows = lists[lay][i].rows;
                c.cols = lists[lay][i].cols;
                c.quick = lists[lay][i].quick;
                push(l, &c);
            }
        }
    }
}

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

/* The element-wise ops of ids first .. end - 1 (user ops included: core/user_op.h). */
static void add_elementwise(case_list *l, int first, int end) {
    /* rows = 1 is the flat form; 1048579 = 2^20 + 3 needs many blocks and a ragged tail. */
    static const shape2 packed[] = {{1, 0, 1},   {1, 1, 1},    {1, 3, 0},    {1, 17, 1},   {1, 127, 0},
                                    {1, 781, 0}, {1, 1000, 0}, {1, 1823, 0}, {1, 4099, 1}, {1, 1048579, 0}};
    static const shape2 offset[] = {{1, 1, 0}, {1, 17, 1}, {1, 1000, 1}, {1, 4099, 0}, {1, 1048579, 0}};
    static const shape2 strided[] = {{1, 1, 0},      {3, 17, 1},  {17, 781, 1},
                                     {127, 127, 0},  {1000, 3, 0}, {3, 4099, 0}, {1823, 1000, 0}};
    for (int op = first; op < end; op++)
        if (trr_op_desc_get((trr_op)op)->shape == TRR_SHAPE_ELEMENTWISE && op != TRR_OP_CAST)
            add_2d(l, (trr_op)op, packed, N_OF(packed), offset, N_OF(offset), strided, N_OF(strided));
}

/* cast: 25 dtype pairs, so fewer shapes than the other element-wise ops: odd lengths flat and in padded rows at odd
 * offsets, one vector of many blocks. Every input is drawn by cast_values.c: the specials (NaN, infinities, zeros,
 * subnormals), the output type's ties and the values at and past its largest finite value, among others. */
static void add_cast(case_list *l) {
    static const shape2 packed[] = {{1, 1, 1}, {1, 17, 1}, {1, 4099, 0}, {1, 65539, 0}};
    static const shape2 offset[] = {{1, 1000, 0}};
    static const shape2 strided[] = {{3, 17, 1}, {17, 781, 0}};
    add_2d(l, TRR_OP_CAST, packed, N_OF(packed), offset, N_OF(offset), strided, N_OF(strided));
}

static void add_rgb(case_list *l) {
    /* H x W; 1066 x 1600 is the benchmark's small image. */
    static const shape2 packed[] = {{1, 1, 1},     {3, 17, 1},     {17, 127, 0},
                                    {127, 781, 1}, {1000, 1823, 0}, {1066, 1600, 0}};
    static const shape2 offset[] = {{3, 17, 0}, {127, 781, 0}, {1066, 1600, 0}};
    static const shape2 strided[] = {{1, 1, 0}, {17, 127, 1}, {781, 1000, 0}, {1823, 127, 0}};
    add_2d(l, TRR_OP_RGB_TO_GREY, packed, N_OF(packed), offset, N_OF(offset), strided, N_OF(strided));
}

static void add_softmax(case_list *l) {
    /* 12672 is the benchmark's longest row and 40000 is longer than any one-tile kernel holds. */
    static const shape2 packed[] = {{0, 17, 1},     {1, 1, 1},        {3, 17, 1},    {17, 127, 0},
                                    {127, 781, 0},  {1000, 1000, 0},  {1823, 3, 0},  {1, 4099, 0},
                                    {1, 12672, 1},  {17, 12672, 0},   {3, 40000, 0}};
    static const shape2 offset[] = {{3, 17, 0}, {127, 1000, 0}, {1, 12672, 0}};
    static const shape2 strided[] = {{1, 1, 0},     {17, 127, 1},   {127, 1000, 0},
                                     {1823, 17, 0}, {3, 40000, 0}};
    add_2d(l, TRR_OP_SOFTMAX, packed, N_OF(packed), offset, N_OF(offset), strided, N_OF(strided));

    /* Rows of 2^20 + 3 (docs/ops.md, "Every bound holds at every size"), and the special values at lengths within one
     * tile (17), past it (4099), past any register kernel (40000) and at 2^20 + 3, where masked stretches span
     * many workgroup-sized chunks. */
    static const shape2 huge[] = {{2, 1048579, 0}};
    add_2d(l, TRR_OP_SOFTMAX, huge, N_OF(huge), NULL, 0, NULL, 0);
    static const shape2 special_shapes[] = {{5, 17, 1}, {3, 4099, 0}, {3, 40000, 0}, {2, 1048579, 0}};
    const trr_op_desc *d = trr_op_desc_get(TRR_OP_SOFTMAX);
    for (int s = 0; s < d->n_signatures; s++) {
        trr_case c = {.op = TRR_OP_SOFTMAX, .in_dtype = d->signatures[s].in, .out_dtype = d->signatures[s].out};
        for (int i = 0; i < N_OF(special_shapes); i++) {
            for (int sp = 1; sp < TRR_SPECIAL_CONSTANT; sp++) {
                /* the longest rows only with the patterns whose masked stretches are long */
                if (special_shapes[i].cols > 100000 && sp != TRR_SPECIAL_MASK_PREFIX && sp != TRR_SPECIAL_MASK_SCATTER)
                    continue;
                c.rows = special_shapes[i].rows;
                c.cols = special_shapes[i].cols;
                c.quick = special_shapes[i].quick;
                c.special = sp;
                c.layout = sp == TRR_SPECIAL_MASK_SUFFIX ? TRR_LAYOUT_STRIDED : TRR_LAYOUT_PACKED;
                push(l, &c);
            }
        }
    }
}

static void add_row_sum(case_list *l) {
    /* N = 0 is an empty reduction: y = 0. 9000 and 20000 columns put f32 and f16/bf16 rows in 32-64 KiB, the band
     * where the CUDA heuristic takes another block shape. */
    static const shape2 packed[] = {{5, 0, 1},      {1, 1, 1},      {3, 17, 1},     {17, 4099, 1},  {127, 781, 0},
                                    {1823, 127, 0}, {1000, 1000, 0}, {4099, 3, 0},  {1, 65536, 1},
                                    {3, 65536, 0},  {2, 1048579, 0}, {3, 40000, 0},  {5, 9000, 0},
                                    {3, 20000, 0}};
    static const shape2 offset[] = {{3, 17, 0}, {127, 1000, 0}, {1, 65536, 0}, {2, 1048579, 0}};
    static const shape2 strided[] = {{3, 0, 0}, {1, 1, 0}, {17, 127, 1}, {127, 4099, 0}, {1823, 17, 0}, {3, 65536, 0}};
    add_2d(l, TRR_OP_ROW_SUM, packed, N_OF(packed), offset, N_OF(offset), strided, N_OF(strided));
}

/* Same-sign rows (issue #41): one long row of 0.1f and, for row_sum, one of positive values. A plain f32 running
 * sum per invocation drifts on them by up to one rounding per addition, where random signs would cancel; 2^22
 * terms over a few hundred invocations is thousands of additions each. One row per case keeps the cost down. */
static void add_same_sign_rows(case_list *l) {
    static const trr_op ops[] = {TRR_OP_ROW_SUM, TRR_OP_SOFTMAX};
    for (int o = 0; o < N_OF(ops); o++) {
        const trr_op_desc *d = trr_op_desc_get(ops[o]);
        for (int s = 0; s < d->n_signatures; s++) {
            trr_case c = {.op = ops[o], .in_dtype = d->signatures[s].in, .out_dtype = d->signatures[s].out};
            c.rows = 1, c.cols = 4194304;
            for (int sp = TRR_SPECIAL_CONSTANT; sp <= TRR_SPECIAL_POSITIVE; sp++) {
                /* softmax's inputs are positive */
                if (d->shape == TRR_SHAPE_ROWS && sp == TRR_SPECIAL_POSITIVE) continue;
                c.special = sp;
                push(l, &c);
            }
        }
    }
}

static void add_matmul(case_list *l) {
    /* Run in every signature, transposition and layout: mixed odd triples, a matrix-vector product, long dot
     * products, and two tile-aligned sizes. The long-K case has 17 outputs, not 1: docs/ops.md's Frobenius bound on a
     * single output is that output's relative error, and a random dot product of 4099 terms cancels enough that
     * correct f32 accumulation exceeds 1e-5 on a few percent of seeds (measured: 2-4%); over 17 outputs the
     * worst of 300 seeds was 3e-6. */
    static const shape3 small[] = {{1, 1, 1, 1},      {1, 781, 3, 0},     {3, 17, 1823, 0}, {17, 3, 127, 1},
                                   {127, 1000, 17, 1}, {781, 1, 1000, 0}, {1, 17, 4099, 0},  {128, 128, 128, 0},
                                   {256, 64, 512, 0}};
    /* Large triples, each in one (transposition, layout) slot so each signature sees them once or twice. */
    static const struct {
        shape3 s;
        int ta, tb;
        trr_case_layout layout;
    } large[] = {{{1823, 127, 781, 0}, 0, 0, TRR_LAYOUT_PACKED},
                 {{1823, 127, 781, 0}, 1, 1, TRR_LAYOUT_STRIDED},
                 {{1000, 1823, 127, 0}, 0, 1, TRR_LAYOUT_PACKED},
                 {{4099, 17, 1000, 0}, 1, 0, TRR_LAYOUT_STRIDED},
                 /* Packed with N and K multiples of 8: the strides the tensor-core kernels (mma.sync, wgmma)
                  * take, with an edge in every dimension of their tiles (776 = 3 x 256 + 8, 520 = 8 x 64 + 8). */
                 {{1001, 776, 520, 0}, 0, 0, TRR_LAYOUT_PACKED},
                 {{1001, 776, 520, 0}, 0, 1, TRR_LAYOUT_PACKED},
                 /* A stored [K][M] with M a multiple of 8 too, so the tensor-core kernels' interior tiles take
                  * their aligned copy path with A transposed, under both B layouts. */
                 {{1000, 776, 520, 0}, 1, 0, TRR_LAYOUT_PACKED},
                 {{1000, 776, 520, 0}, 1, 1, TRR_LAYOUT_PACKED},
                 /* Few rows, a long K: a grid of output tiles too small for a GPU's SMs, which the CUDA heuristic
                  * splits over K (f32 partials summed in order: inside the launch on mma's few-row tiles, which
                  * 40 rows take, by a second pass after wgmma); with N = 1030 the partials' rows are not whole
                  * 16-byte units, so a forced wgmma split's stores take the register path. */
                 {{40, 1032, 4104, 0}, 0, 0, TRR_LAYOUT_PACKED},
                 {{40, 1030, 4104, 0}, 0, 1, TRR_LAYOUT_PACKED},
                 /* More 128 x 128 tiles than two waves of 132 SMs (17 x 16 = 272) with a part wave and a K of 3
                  * K tiles, the last part-filled (136 = 2 x 64 + 8): CUDA's stream-K schedule (variant streamk)
                  * runs whole tiles, then pieces cut at any K tile of a tile that M and N do not fill, handed
                  * between blocks (1001 x 776 x 520 above is all pieces, a tile's 9 K tiles over two blocks). */
                 {{2100, 1960, 136, 0}, 0, 1, TRR_LAYOUT_PACKED}};
    /* Epilogues act on the accumulator, so small shapes exercise them fully. */
    static const shape3 epi_shapes[] = {{17, 3, 127, 1}, {127, 1000, 17, 0}, {128, 128, 128, 0}};
    static const struct {
        trr_epilogue e;
        float alpha;
    } epis[] = {{TRR_EPI_RELU, 0.0f},
                {TRR_EPI_LEAKY_RELU, TRR_LEAKY_RELU_DEFAULT_ALPHA},
                {TRR_EPI_LEAKY_RELU, 0.25f},
                {TRR_EPI_GELU, 0.0f}};

    const trr_op_desc *d = trr_op_desc_get(TRR_OP_MATMUL);
    for (int s = 0; s < d->n_signatures; s++) {
        if (trr_dtype_is_f8(d->signatures[s].in)) continue; /* add_matmul_f8: nine signatures, fewer cases */
        trr_case c = {.op = TRR_OP_MATMUL, .in_dtype = d->signatures[s].in, .out_dtype = d->signatures[s].out};
        c.epilogue = TRR_EPI_NONE;
        c.m = 0, c.n = 17, c.k = 3, c.quick = 1; /* empty: must write nothing */
        push(l, &c);
        /* K = 0: an empty reduction, C = act(0) = 0, also through padded rows of C */
        c.m = 17, c.n = 3, c.k = 0;
        push(l, &c);
        c.layout = TRR_LAYOUT_STRIDED, c.quick = 0;
        push(l, &c);
        c.layout = TRR_LAYOUT_PACKED;
        for (int lay = TRR_LAYOUT_PACKED; lay <= TRR_LAYOUT_STRIDED; lay += TRR_LAYOUT_STRIDED) {
            for (int t = 0; t < 4; t++) {
                c.layout = (trr_case_layout)lay;
                c.trans_a = t & 1;
                c.trans_b = (t >> 1) & 1;
                for (int i = 0; i < N_OF(small); i++) {
                    c.m = small[i].m, c.n = small[i].n, c.k = small[i].k;
                    c.quick = small[i].quick;
                    push(l, &c);
                }
                for (int i = 0; i < N_OF(large); i++) {
                    if (large[i].ta != c.trans_a || large[i].tb != c.trans_b || large[i].layout != c.layout)
                        continue;
                    c.m = large[i].s.m, c.n = large[i].s.n, c.k = large[i].s.k;
                    c.quick = 0;
                    push(l, &c);
                }
            }
        }
        /* K past 2^16 and past 2^17 (docs/ops.md, "Every bound holds at every size"), on a small output */
        static const int64_t long_k[] = {70000, 131075};
        for (int i = 0; i < N_OF(long_k); i++) {
            c.m = 3, c.n = 17, c.k = long_k[i];
            c.layout = TRR_LAYOUT_PACKED;
            c.trans_a = 0;
            c.trans_b = i; /* B as [N,K] too, the layout the fast kernels read along K */
            c.quick = 0;
            push(l, &c);
        }
        for (int e = 0; e < N_OF(epis); e++) {
            for (int i = 0; i < N_OF(epi_shapes); i++) {
                for (int v = 0; v < 2; v++) {
                    c.epilogue = epis[e].e;
                    c.alpha = epis[e].alpha;
                    c.m = epi_shapes[i].m, c.n = epi_shapes[i].n, c.k = epi_shapes[i].k;
                    c.layout = v ? TRR_LAYOUT_STRIDED : TRR_LAYOUT_PACKED;
                    c.trans_a = 0;
                    c.trans_b = v; /* the B-as-[N,K] layout is the one fast kernels prefer */
                    c.quick = epi_shapes[i].quick && v == 0;
                    push(l, &c);
                }
            }
        }
    }
}

/* Batched matmul (docs/ops.md, "matmul"): odd batch counts over odd shapes, a batch of one, broadcast A or B (a 2-D
 * operand when packed, batch stride 0 otherwise), padded batch strides (strided), transposed operands, an
 * epilogue, K = 0 per batch, tile-aligned batches and shared inputs in the layouts the tensor-core kernels take.
 * Small matrices: the batch, not the matrix, is the point. */
static void add_batched_matmul(case_list *l) {
    static const struct {
        int64_t batch, m, n, k;
        int ta, tb, bca, bcb;
        trr_case_layout layout;
        trr_epilogue e;
        int quick;
    } rows[] = {
        {1, 17, 3, 127, 0, 0, 0, 0, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 1},
        {3, 17, 33, 19, 0, 0, 0, 0, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 1},
        {3, 17, 33, 19, 1, 1, 0, 0, TRR_LAYOUT_STRIDED, TRR_EPI_NONE, 1},
        {5, 31, 17, 65, 0, 1, 0, 0, TRR_LAYOUT_OFFSET, TRR_EPI_NONE, 0},
        {5, 31, 17, 65, 0, 0, 1, 0, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 1},
        {5, 31, 17, 65, 1, 0, 1, 0, TRR_LAYOUT_STRIDED, TRR_EPI_NONE, 0},
        {7, 13, 40, 27, 0, 1, 0, 1, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0},
        {7, 13, 40, 27, 0, 1, 0, 1, TRR_LAYOUT_STRIDED, TRR_EPI_NONE, 1},
        {3, 9, 11, 7, 1, 1, 1, 1, TRR_LAYOUT_STRIDED, TRR_EPI_NONE, 0},
        {3, 127, 65, 33, 0, 1, 0, 0, TRR_LAYOUT_STRIDED, TRR_EPI_GELU, 0},
        {3, 17, 3, 0, 0, 0, 0, 0, TRR_LAYOUT_STRIDED, TRR_EPI_NONE, 0},
        {4, 128, 128, 128, 0, 1, 0, 0, TRR_LAYOUT_PACKED, TRR_EPI_RELU, 0},
        {2, 1001, 776, 520, 0, 1, 0, 0, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0},
        /* shared inputs on the tensor-core paths (packed, leading dimensions and batch strides multiples of 8) */
        {3, 100, 136, 72, 0, 1, 0, 1, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0},
        {5, 64, 256, 64, 0, 0, 1, 0, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0},
    };
    const trr_op_desc *d = trr_op_desc_get(TRR_OP_MATMUL);
    for (int s = 0; s < d->n_signatures; s++) {
        if (trr_dtype_is_f8(d->signatures[s].in)) continue; /* add_matmul_f8 has a batched case of its own */
        for (int i = 0; i < N_OF(rows); i++) {
            trr_case c = {.op = TRR_OP_MATMUL, .in_dtype = d->signatures[s].in, .out_dtype = d->signatures[s].out};
            c.batch = rows[i].batch;
            c.m = rows[i].m, c.n = rows[i].n, c.k = rows[i].k;
            c.trans_a = rows[i].ta, c.trans_b = rows[i].tb;
            c.bcast_a = rows[i].bca, c.bcast_b = rows[i].bcb;
            c.layout = rows[i].layout;
            c.epilogue = rows[i].e;
            c.quick = rows[i].quick;
            push(l, &c);
        }
    }
}

/* 8-bit float products (docs/ops.md, matmul): nine signatures, so a short list each. A row-major with B stored
 * [N,K] is the layout the tensor-core kernels take (K-major on both sides, leading dimensions multiples of 16 where
 * packed); the others run on the portable paths or are unsupported with the reason. The per-tensor scales are
 * exercised with an epilogue after them (the scales act on the accumulator first). The larger products, edges in
 * every dimension of the tensor-core tiles (128 x 128 and 128 x 256), run for two signatures. */
static void add_matmul_f8(case_list *l) {
    static const struct {
        int64_t batch, m, n, k;
        int ta, tb;
        trr_case_layout layout;
        trr_epilogue e;
        double scale_a, scale_b; /* 0: the default (1) */
        int quick, large;
    } rows[] = {
        {0, 1, 1, 1, 0, 1, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0, 0, 1, 0},
        {0, 17, 3, 127, 0, 0, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0, 0, 0, 0},
        {0, 127, 1000, 17, 1, 1, TRR_LAYOUT_STRIDED, TRR_EPI_NONE, 0, 0, 0, 0},
        {0, 64, 144, 160, 0, 1, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0.5, 3.0, 1, 0},
        {0, 33, 40, 96, 0, 1, TRR_LAYOUT_OFFSET, TRR_EPI_GELU, 0.125, 0.75, 0, 0},
        {0, 17, 3, 0, 0, 1, TRR_LAYOUT_STRIDED, TRR_EPI_NONE, 0, 0, 0, 0},
        {3, 31, 48, 64, 0, 1, TRR_LAYOUT_PACKED, TRR_EPI_RELU, 2.0, 0.25, 0, 0},
        {0, 1, 17, 4099, 0, 1, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0, 0, 0, 1},
        {0, 1001, 776, 528, 0, 1, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0, 0, 0, 1},
        /* N past a 256-wide tile by more than half of one (its second 128-column half partly outside), an odd
         * count of 128-row tiles (a cluster's second block past M), K past a whole number of 128-deep tiles */
        {0, 300, 456, 1040, 0, 1, TRR_LAYOUT_PACKED, TRR_EPI_NONE, 0.5, 2.0, 0, 1},
    };
    const trr_op_desc *d = trr_op_desc_get(TRR_OP_MATMUL);
    for (int s = 0; s < d->n_signatures; s++) {
        const trr_op_signature *sig = &d->signatures[s];
        if (!trr_dtype_is_f8(sig->in)) continue;
        /* the larger products for e4m3 x e4m3 -> bf16 (the benchmark's) and e5m2 x e4m3 -> f32 */
        const int large = (!sig->mixed && sig->out == TRR_BF16) || (sig->mixed && sig->in == TRR_F8E5M2 && sig->out == TRR_F32);
        for (int i = 0; i < N_OF(rows); i++) {
            if (rows[i].large && !large) continue;
            trr_case c = {.op = TRR_OP_MATMUL, .in_dtype = sig->in, .out_dtype = sig->out, .mixed = sig->mixed,
                          .in2_dtype = sig->in2};
            c.batch = rows[i].batch;
            c.m = rows[i].m, c.n = rows[i].n, c.k = rows[i].k;
            c.trans_a = rows[i].ta, c.trans_b = rows[i].tb;
            c.layout = rows[i].layout;
            c.epilogue = rows[i].e;
            c.quick = rows[i].quick;
            if (rows[i].scale_a) trr_op_params_set(&c.params, "scale_a", rows[i].scale_a);
            if (rows[i].scale_b) trr_op_params_set(&c.params, "scale_b", rows[i].scale_b);
            push(l, &c);
        }
    }
}

/* ops the list covers: the built-ins, then the user ops defined when it was last asked for */
static int g_ops;

static trr_status build(void) {
    add_elementwise(&g_all, 0, TRR_OP_COUNT);
    g_ops = TRR_OP_COUNT;
    add_cast(&g_all);
    add_rgb(&g_all);
    add_softmax(&g_all);
    add_row_sum(&g_all);
    add_same_sign_rows(&g_all);
    add_matmul(&g_all);
    add_batched_matmul(&g_all);
    add_matmul_f8(&g_all);
    if (!trr_cases_add_norms(g_all.items, &g_all.count, MAX_CASES)) g_all.overflow = 1; /* cases_norm.c */
    if (!trr_cases_add_attention(g_all.items, &g_all.count, MAX_CASES)) g_all.overflow = 1; /* cases_attention.c */
    if (g_all.overflow) return trr_error(NULL, TRR_ERR_INTERNAL, "case list: more cases than the list holds");
    for (int i = 0; i < g_all.count; i++)
        if (g_all.items[i].quick) push(&g_quick, &g_all.items[i]);
    g_built = 1;
    return TRR_OK;
}

trr_status trr_cases_get(int quick_only, const trr_case **out_cases, int *out_count) {
    if (!out_cases || !out_count)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_cases_get: out_cases or out_count is NULL");
    if (!g_built) {
        memset(&g_all, 0, sizeof g_all);
        memset(&g_quick, 0, sizeof g_quick);
        trr_status st = build();
        if (st != TRR_OK) return st;
    }
    /* user ops defined since: their cases, appended */
    int ops = TRR_OP_COUNT;
    trr_op_count(&ops);
    if (ops > g_ops) {
        const int from = g_all.count;
        add_elementwise(&g_all, g_ops, ops);
        for (int op = g_ops; op < ops; op++) /* row ops: the row norms' cases (cases_norm.c) */
            if (trr_op_desc_get((trr_op)op)->shape == TRR_SHAPE_ROW_NORM &&
                !trr_cases_add_row_norm((trr_op)op, g_all.items, &g_all.count, MAX_CASES))
                g_all.overflow = 1;
        if (g_all.overflow) return trr_error(NULL, TRR_ERR_INTERNAL, "case list: more cases than the list holds");
        for (int i = from; i < g_all.count; i++)
            if (g_all.items[i].quick) push(&g_quick, &g_all.items[i]);
        g_ops = ops;
    }
    const case_list *l = quick_only ? &g_quick : &g_all;
    *out_cases = l->items;
    *out_count = l->count;
    return TRR_OK;
}

const char *trr_case_special_name(int special) {
    switch (special) {
    case TRR_SPECIAL_NONE: return "";
    case TRR_SPECIAL_MASK_PREFIX: return "mask-prefix";
    case TRR_SPECIAL_MASK_SUFFIX: return "mask-suffix";
    case TRR_SPECIAL_MASK_SCATTER: return "mask-scatter";
    case TRR_SPECIAL_ROW_ALL_MASKED: return "row-masked";
    case TRR_SPECIAL_ONE_NAN: return "one-nan";
    case TRR_SPECIAL_CONSTANT: return "constant";
    case TRR_SPECIAL_POSITIVE: return "positive";
    case TRR_SPECIAL_CONST_ROWS: return "const-rows";
    case TRR_SPECIAL_ZERO_ROWS: return "zero-rows";
    case TRR_SPECIAL_LARGE_LOGITS: return "large-logits";
    default: return "?";
    }
}

const char *trr_case_layout_name(trr_case_layout layout) {
    switch (layout) {
    case TRR_LAYOUT_PACKED: return "packed";
    case TRR_LAYOUT_OFFSET: return "offset";
    case TRR_LAYOUT_STRIDED: return "strided";
    default: return "?";
    }
}

trr_dtype trr_case_dtype(const trr_case *c, int slot) {
    if (slot == TRR_SLOT_Z) return c->out_dtype;
    return c->mixed && slot == TRR_SLOT_Y ? c->in2_dtype : c->in_dtype;
}

void trr_case_dtypes_name(const trr_case *c, char *out, size_t cap) {
    const char *din = "?", *din2 = "?", *dout = "?";
    trr_dtype_name(c->in_dtype, &din);
    trr_dtype_name(c->in2_dtype, &din2);
    trr_dtype_name(c->out_dtype, &dout);
    if (c->mixed) snprintf(out, cap, "%sx%s->%s", din, din2, dout);
    else snprintf(out, cap, "%s->%s", din, dout);
}

void trr_case_dims(const trr_case *c, int64_t out_dims[3]) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    if (d && d->shape == TRR_SHAPE_ATTENTION) {
        out_dims[0] = c->attn.sq, out_dims[1] = c->attn.d, out_dims[2] = c->attn.skv;
        return;
    }
    const int mm = d && d->shape == TRR_SHAPE_MATMUL;
    out_dims[0] = mm ? c->m : c->rows;
    out_dims[1] = mm ? c->n : c->cols;
    out_dims[2] = mm ? c->k : 1;
}

int64_t trr_case_batch(const trr_case *c) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    if (d && d->shape == TRR_SHAPE_ATTENTION) return c->attn.b * c->attn.hq;
    return d && d->shape == TRR_SHAPE_MATMUL && c->batch > 1 ? c->batch : 1;
}

void trr_case_out_shape(const trr_case *c, int64_t *out_rows, int64_t *out_cols) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    int64_t dims[3];
    trr_case_dims(c, dims);
    *out_rows = dims[0] * trr_case_batch(c);
    *out_cols = d && d->shape == TRR_SHAPE_ROW_REDUCE ? 1 : dims[1];
}

double trr_case_flops(const trr_case *c) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    int64_t dims[3];
    trr_case_dims(c, dims);
    const double flops = (d ? d->flops_per_point : 1) * (double)trr_case_batch(c) * (double)dims[0] *
                         (double)dims[1] * (double)dims[2];
    if (d && d->shape == TRR_SHAPE_ATTENTION && trr_case_causal(c)) return flops / 2;
    return flops;
}

void trr_case_describe(const trr_case *c, char *out, size_t cap) {
    const char *op = "?", *epi = "?";
    char dts[48];
    if (cap == 0) return;
    trr_op_name(c->op, &op);
    trr_case_dtypes_name(c, dts, sizeof dts);
    const trr_op_desc *d = trr_op_desc_get(c->op);
    if (d && d->shape == TRR_SHAPE_ATTENTION) {
        trr_case_describe_attention(c, out, cap); /* cases_attention.c */
        return;
    }
    if (d && d->shape == TRR_SHAPE_MATMUL) {
        char e[40] = "";
        trr_epilogue_name(c->epilogue, &epi);
        if (c->epilogue == TRR_EPI_LEAKY_RELU)
            snprintf(e, sizeof e, " %s(%g)", epi, (double)c->alpha);
        else if (c->epilogue != TRR_EPI_NONE)
            snprintf(e, sizeof e, " %s", epi);
        char b[48] = "";
        if (c->batch > 0)
            snprintf(b, sizeof b, "%lldx", (long long)c->batch);
        int at = snprintf(out, cap, "%s %s %s%lldx%lldx%lld%s%s%s%s %s%s", op, dts, b, (long long)c->m,
                          (long long)c->n, (long long)c->k, c->trans_a ? " tA" : "", c->trans_b ? " tB" : "",
                          c->bcast_a ? " bcastA" : "", c->bcast_b ? " bcastB" : "", trr_case_layout_name(c->layout), e);
        /* its named parameters beyond the epilogue's (the 8-bit floats' scales) */
        for (int i = 0; i < c->params.count && at > 0 && (size_t)at < cap; i++)
            at += snprintf(out + at, cap - (size_t)at, " %s=%g", c->params.values[i].name, c->params.values[i].value);
    } else if (c->rows == 1 && d && d->shape == TRR_SHAPE_ELEMENTWISE) {
        snprintf(out, cap, "%s %s n=%lld %s", op, dts, (long long)c->cols, trr_case_layout_name(c->layout));
    } else {
        int at = snprintf(out, cap, "%s %s %lldx%lld %s%s%s", op, dts, (long long)c->rows,
                          (long long)c->cols, trr_case_layout_name(c->layout), c->special ? " " : "",
                          trr_case_special_name(c->special));
        /* the case's named parameters, so cases differing only there have their own names (and inputs) */
        for (int i = 0; i < c->params.count && at > 0 && (size_t)at < cap; i++)
            at += snprintf(out + at, cap - (size_t)at, " %s=%g", c->params.values[i].name, c->params.values[i].value);
    }
}
